package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/sidecarset/apiserver/pkg/apis/apps/stored"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	listers "github.com/sidecarset/apiserver/pkg/generated/listers/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/injection"
	"github.com/sidecarset/apiserver/pkg/injection/revision"
)

// sources are the SidecarSets, revisions and namespace labels injection reads: from a file (no
// cluster) or from the cluster. NamespacedSidecarSets are among the SidecarSets as the SidecarSets
// they take part as (v1alpha1.NamespacedSidecarSet.AsSidecarSet), as in the server.
type sources struct {
	sidecarSets []*v1alpha1.SidecarSet
	revisions   injection.RevisionSource
	// nsLabels returns the labels of a namespace.
	nsLabels func(ns string) (map[string]string, error)
	// warnings say what could not be read.
	warnings []string
}

type injectFlags struct {
	file, sidecarSets, namespaceLabels string
}

func newInjectCommand(o *options) *cobra.Command {
	f := &injectFlags{}
	cmd := &cobra.Command{
		Use:   "inject -f FILE [--sidecarsets FILE] [--namespace-labels k=v,...]",
		Short: "Render pods, or the pod templates of workloads, with their sidecars",
		Long: `Render a Pod, or the pod template of a Deployment, StatefulSet, DaemonSet, ReplicaSet, Job or
CronJob, with the sidecars of the SidecarSets and NamespacedSidecarSets that select it, through the
injector the server runs at admission. With --sidecarsets (SidecarSets, NamespacedSidecarSets, and
the SidecarSetRevisions that injectionStrategy.revision names) no cluster is needed; namespace
labels then come from --namespace-labels, and a NamespacedSidecarSet without a namespace is of the
namespace of -n. Without it, the SidecarSets, NamespacedSidecarSets, revisions and namespace labels
are read from the cluster. Skipped parts (a missing transferEnv source, ...) are printed as warnings
on stderr.`,
		Example: `  kubectl sidecarset inject -f deployment.yaml --sidecarsets sidecarsets.yaml
  kubectl sidecarset inject -f pod.yaml -n shop | kubectl apply -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.runInject(cmd.Context(), f) },
	}
	cmd.Flags().StringVarP(&f.file, "filename", "f", "", "the Pod or workload manifests (- for stdin)")
	cmd.Flags().StringVar(&f.sidecarSets, "sidecarsets", "", "SidecarSet, NamespacedSidecarSet (and SidecarSetRevision) manifests; no cluster is used")
	cmd.Flags().StringVar(&f.namespaceLabels, "namespace-labels", "", "labels of the namespace, k=v,... (with --sidecarsets)")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func (o *options) runInject(ctx context.Context, f *injectFlags) error {
	if err := o.checkOutput(); err != nil {
		return err
	}
	objs, err := o.readFile(f.file)
	if err != nil {
		return err
	}
	src, defaultNS, err := o.sources(ctx, f.sidecarSets, f.namespaceLabels)
	if err != nil {
		return err
	}
	out, warnings, err := injectObjects(objs, src, defaultNS, o.now(), o.rand)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintln(o.ErrOut, "Warning:", w)
	}
	return o.printObjects(out)
}

// injectObjects injects every object's pod and returns the objects with their injected pods.
func injectObjects(objs []*unstructured.Unstructured, src *sources, defaultNS string, now time.Time, rnd func() float64) ([]*unstructured.Unstructured, []injection.Warning, error) {
	var warnings []injection.Warning
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		pod, err := podOf(obj)
		if err != nil {
			return nil, nil, err
		}
		ns := pod.Namespace
		if ns == "" {
			ns = defaultNS
		}
		labels, err := src.nsLabels(ns)
		if err != nil {
			return nil, nil, err
		}
		res, err := injection.Inject(injection.Input{Pod: pod, Namespace: ns, NamespaceLabels: labels,
			SidecarSets: src.sidecarSets, Revisions: src.revisions, Now: now, Rand: rnd})
		if err != nil {
			return nil, nil, fmt.Errorf("%s %q: %w", obj.GetKind(), obj.GetName(), err)
		}
		warnings = append(warnings, res.Warnings...)
		obj = obj.DeepCopy()
		if err := setPod(obj, res.Pod); err != nil {
			return nil, nil, err
		}
		out = append(out, obj)
	}
	return out, warnings, nil
}

// readFile reads the objects of a file, or of stdin for "-".
func (o *options) readFile(name string) ([]*unstructured.Unstructured, error) {
	var r io.Reader = o.In
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	objs, err := readDocuments(r)
	if err == nil && len(objs) == 0 {
		err = fmt.Errorf("%s: no object", name)
	}
	return objs, err
}

// sources reads the SidecarSets from a file (then no cluster is used) or from the cluster, and
// returns the default namespace of pods.
func (o *options) sources(ctx context.Context, file, nsLabels string) (*sources, string, error) {
	labels, err := parseLabels(nsLabels)
	if err != nil {
		return nil, "", err
	}
	if file != "" {
		objs, err := o.readFile(file)
		if err != nil {
			return nil, "", err
		}
		src, err := offlineSources(objs, o.offlineNamespace())
		if err != nil {
			return nil, "", err
		}
		src.nsLabels = func(string) (map[string]string, error) { return labels, nil }
		return src, o.offlineNamespace(), nil
	}
	c, err := o.newClients()
	if err != nil {
		return nil, "", err
	}
	src, err := clusterSources(ctx, c)
	if err != nil {
		return nil, "", err
	}
	for _, w := range src.warnings {
		fmt.Fprintln(o.ErrOut, "Warning:", w)
	}
	if nsLabels != "" {
		src.nsLabels = func(string) (map[string]string, error) { return labels, nil }
	}
	return src, c.namespace, nil
}

// offlineSources decodes SidecarSets, NamespacedSidecarSets (of namespace ns when they name none)
// and SidecarSetRevisions as the server stores them (package stored): defaulted, the SidecarSets
// with their hashes stamped.
func offlineSources(objs []*unstructured.Unstructured, ns string) (*sources, error) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	src := &sources{}
	d := newAPIDecoder()
	for _, obj := range objs {
		switch obj.GetKind() {
		case "SidecarSet":
			ss := &v1alpha1.SidecarSet{}
			if err := d.decode(obj, ss); err != nil {
				return nil, err
			}
			held, err := storedSidecarSet(ss)
			if err != nil {
				return nil, err
			}
			src.sidecarSets = append(src.sidecarSets, held)
		case "NamespacedSidecarSet":
			ss, err := offlineNamespaced(d, obj, ns)
			if err != nil {
				return nil, err
			}
			src.sidecarSets = append(src.sidecarSets, ss)
		case "SidecarSetRevision":
			rev := &v1alpha1.SidecarSetRevision{}
			if err := d.decode(obj, rev); err != nil {
				return nil, err
			}
			if err := indexer.Add(stored.Revision(rev)); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("--sidecarsets: %s %q is not a SidecarSet, NamespacedSidecarSet or SidecarSetRevision", obj.GetKind(), obj.GetName())
		}
	}
	src.revisions = revision.Lister{Revisions: listers.NewSidecarSetRevisionLister(indexer)}
	return src, nil
}

// offlineNamespaced decodes a NamespacedSidecarSet, of namespace ns when it names none, as the
// SidecarSet it takes part as, as the server stores it. Both kinds default alike.
func offlineNamespaced(d *apiDecoder, obj *unstructured.Unstructured, ns string) (*v1alpha1.SidecarSet, error) {
	n := &v1alpha1.NamespacedSidecarSet{}
	if err := d.decode(obj, n); err != nil {
		return nil, err
	}
	if n.Namespace == "" {
		n.Namespace = ns
	}
	return storedSidecarSet(n.AsSidecarSet())
}

// storedSidecarSet is ss as the server stores it (stored.SidecarSet), its errors naming it.
func storedSidecarSet(ss *v1alpha1.SidecarSet) (*v1alpha1.SidecarSet, error) {
	held, err := stored.SidecarSet(ss)
	if err != nil {
		return nil, fmt.Errorf("SidecarSet %q: %w", ss.Name, err)
	}
	return held, nil
}

// clusterSources lists the SidecarSets, the NamespacedSidecarSets and their revisions, and reads
// namespaces on demand.
func clusterSources(ctx context.Context, c *clients) (*sources, error) {
	list, err := c.sidecarSet.AppsV1alpha1().SidecarSets().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing SidecarSets: %w", err)
	}
	src := &sources{}
	for i := range list.Items {
		src.sidecarSets = append(src.sidecarSets, &list.Items[i])
	}
	namespaced, err := clusterNamespaced(ctx, c)
	switch {
	case apierrors.IsForbidden(err):
		src.warnings = append(src.warnings, "NamespacedSidecarSets are left out: "+err.Error())
	case err != nil:
		return nil, err
	}
	src.sidecarSets = append(src.sidecarSets, namespaced...)
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if revs, err := c.sidecarSet.AppsV1alpha1().SidecarSetRevisions().List(ctx, metav1.ListOptions{}); err == nil {
		for i := range revs.Items {
			_ = indexer.Add(&revs.Items[i])
		}
	} else if !apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("listing SidecarSetRevisions: %w", err)
	}
	src.revisions = revision.Lister{Revisions: listers.NewSidecarSetRevisionLister(indexer)}
	src.nsLabels = func(name string) (map[string]string, error) {
		ns, err := c.kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			return ns.Labels, nil
		case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
			return nil, nil // namespaceSelectors see only kubernetes.io/metadata.name
		}
		return nil, err
	}
	return src, nil
}

// clusterNamespaced lists the NamespacedSidecarSets as the SidecarSets they take part as: of every
// namespace, or of the command's namespace when only that one may be listed (a Forbidden error
// when neither may be); none when the server serves no NamespacedSidecarSet.
func clusterNamespaced(ctx context.Context, c *clients) ([]*v1alpha1.SidecarSet, error) {
	api := c.sidecarSet.AppsV1alpha1()
	list, err := api.NamespacedSidecarSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		list, err = api.NamespacedSidecarSets(c.namespace).List(ctx, metav1.ListOptions{})
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("listing NamespacedSidecarSets: %w", err)
	}
	out := make([]*v1alpha1.SidecarSet, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, list.Items[i].AsSidecarSet())
	}
	return out, nil
}

// parseLabels parses --namespace-labels, k=v,k2=v2, as kubectl parses a label set.
func parseLabels(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	set, err := labels.ConvertSelectorToLabelsMap(s)
	if err != nil {
		return nil, fmt.Errorf("--namespace-labels: %w", err)
	}
	return set, nil
}
