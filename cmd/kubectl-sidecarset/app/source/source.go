// Package source reads what injection reads, for inject and explain: the SidecarSets (and the
// NamespacedSidecarSets as the SidecarSets they take part as), their revisions and the labels of
// namespaces, from files (no cluster) or from the cluster.
package source

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/cli"
	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/manifest"
	"github.com/sidecarset/apiserver/pkg/apis/apps/stored"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	listers "github.com/sidecarset/apiserver/pkg/generated/listers/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/injection"
	"github.com/sidecarset/apiserver/pkg/injection/revision"
)

// Injection is the SidecarSets, revisions and namespace labels injection reads: from a file (no
// cluster) or from the cluster. NamespacedSidecarSets are among the SidecarSets as the SidecarSets
// they take part as (v1alpha1.NamespacedSidecarSet.AsSidecarSet), as in the server.
type Injection struct {
	SidecarSets []*v1alpha1.SidecarSet
	Revisions   injection.RevisionSource
	// NamespaceLabels returns the labels of a namespace.
	NamespaceLabels func(ns string) (map[string]string, error)
	// Warnings say what could not be read.
	Warnings []string
}

// Read reads the SidecarSets from a file (then no cluster is used) or from the cluster, and
// returns the default namespace of pods.
func Read(ctx context.Context, o *cli.Options, file, nsLabels string) (*Injection, string, error) {
	labels, err := parseLabels(nsLabels)
	if err != nil {
		return nil, "", err
	}
	if file != "" {
		objs, err := manifest.ReadFile(o.In, file)
		if err != nil {
			return nil, "", err
		}
		src, err := offlineSources(objs, o.OfflineNamespace())
		if err != nil {
			return nil, "", err
		}
		src.NamespaceLabels = func(string) (map[string]string, error) { return labels, nil }
		return src, o.OfflineNamespace(), nil
	}
	c, err := o.NewClients()
	if err != nil {
		return nil, "", err
	}
	src, err := clusterSources(ctx, c)
	if err != nil {
		return nil, "", err
	}
	for _, w := range src.Warnings {
		fmt.Fprintln(o.ErrOut, "Warning:", w)
	}
	if nsLabels != "" {
		src.NamespaceLabels = func(string) (map[string]string, error) { return labels, nil }
	}
	return src, c.Namespace, nil
}

// offlineSources decodes SidecarSets, NamespacedSidecarSets (of namespace ns when they name none)
// and SidecarSetRevisions as the server stores them (package stored): defaulted, the SidecarSets
// with their hashes stamped.
func offlineSources(objs []*unstructured.Unstructured, ns string) (*Injection, error) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	src := &Injection{}
	d := manifest.NewDecoder()
	for _, obj := range objs {
		switch obj.GetKind() {
		case "SidecarSet":
			ss := &v1alpha1.SidecarSet{}
			if err := d.Decode(obj, ss); err != nil {
				return nil, err
			}
			held, err := storedSidecarSet(ss)
			if err != nil {
				return nil, err
			}
			src.SidecarSets = append(src.SidecarSets, held)
		case "NamespacedSidecarSet":
			ss, err := offlineNamespaced(d, obj, ns)
			if err != nil {
				return nil, err
			}
			src.SidecarSets = append(src.SidecarSets, ss)
		case "SidecarSetRevision":
			rev := &v1alpha1.SidecarSetRevision{}
			if err := d.Decode(obj, rev); err != nil {
				return nil, err
			}
			if err := indexer.Add(stored.Revision(rev)); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("--sidecarsets: %s %q is not a SidecarSet, NamespacedSidecarSet or SidecarSetRevision", obj.GetKind(), obj.GetName())
		}
	}
	src.Revisions = revision.Lister{Revisions: listers.NewSidecarSetRevisionLister(indexer)}
	return src, nil
}

// offlineNamespaced decodes a NamespacedSidecarSet, of namespace ns when it names none, as the
// SidecarSet it takes part as, as the server stores it. Both kinds default alike.
func offlineNamespaced(d *manifest.Decoder, obj *unstructured.Unstructured, ns string) (*v1alpha1.SidecarSet, error) {
	n := &v1alpha1.NamespacedSidecarSet{}
	if err := d.Decode(obj, n); err != nil {
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
func clusterSources(ctx context.Context, c *cli.Clients) (*Injection, error) {
	list, err := c.SidecarSet.AppsV1alpha1().SidecarSets().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing SidecarSets: %w", err)
	}
	src := &Injection{}
	for i := range list.Items {
		src.SidecarSets = append(src.SidecarSets, &list.Items[i])
	}
	namespaced, err := clusterNamespaced(ctx, c)
	switch {
	case apierrors.IsForbidden(err):
		src.Warnings = append(src.Warnings, "NamespacedSidecarSets are left out: "+err.Error())
	case err != nil:
		return nil, err
	}
	src.SidecarSets = append(src.SidecarSets, namespaced...)
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if revs, err := c.SidecarSet.AppsV1alpha1().SidecarSetRevisions().List(ctx, metav1.ListOptions{}); err == nil {
		for i := range revs.Items {
			_ = indexer.Add(&revs.Items[i])
		}
	} else if !apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("listing SidecarSetRevisions: %w", err)
	}
	src.Revisions = revision.Lister{Revisions: listers.NewSidecarSetRevisionLister(indexer)}
	src.NamespaceLabels = func(name string) (map[string]string, error) {
		ns, err := c.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
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
func clusterNamespaced(ctx context.Context, c *cli.Clients) ([]*v1alpha1.SidecarSet, error) {
	api := c.SidecarSet.AppsV1alpha1()
	list, err := api.NamespacedSidecarSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		list, err = api.NamespacedSidecarSets(c.Namespace).List(ctx, metav1.ListOptions{})
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
