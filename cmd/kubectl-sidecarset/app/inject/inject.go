// Package inject is `kubectl sidecarset inject`: pods, or the pod templates of workloads, rendered
// with their sidecars by the injector the server runs at admission (pkg/injection).
package inject

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/cli"
	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/manifest"
	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/source"
	"github.com/sidecarset/apiserver/pkg/injection"
)

type injectFlags struct {
	file, sidecarSets, namespaceLabels string
}

// NewCommand returns `kubectl sidecarset inject`.
func NewCommand(o *cli.Options) *cobra.Command {
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
		RunE: func(cmd *cobra.Command, _ []string) error { return runInject(cmd.Context(), o, f) },
	}
	cmd.Flags().StringVarP(&f.file, "filename", "f", "", "the Pod or workload manifests (- for stdin)")
	cmd.Flags().StringVar(&f.sidecarSets, "sidecarsets", "", "SidecarSet, NamespacedSidecarSet (and SidecarSetRevision) manifests; no cluster is used")
	cmd.Flags().StringVar(&f.namespaceLabels, "namespace-labels", "", "labels of the namespace, k=v,... (with --sidecarsets)")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func runInject(ctx context.Context, o *cli.Options, f *injectFlags) error {
	if err := o.CheckOutput(); err != nil {
		return err
	}
	objs, err := manifest.ReadFile(o.In, f.file)
	if err != nil {
		return err
	}
	src, defaultNS, err := source.Read(ctx, o, f.sidecarSets, f.namespaceLabels)
	if err != nil {
		return err
	}
	out, warnings, err := injectObjects(objs, src, defaultNS, o.Now(), o.Rand)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintln(o.ErrOut, "Warning:", w)
	}
	return o.PrintObjects(out)
}

// injectObjects injects every object's pod and returns the objects with their injected pods.
func injectObjects(objs []*unstructured.Unstructured, src *source.Injection, defaultNS string, now time.Time, rnd func() float64) ([]*unstructured.Unstructured, []injection.Warning, error) {
	var warnings []injection.Warning
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		pod, err := manifest.PodOf(obj)
		if err != nil {
			return nil, nil, err
		}
		ns := pod.Namespace
		if ns == "" {
			ns = defaultNS
		}
		labels, err := src.NamespaceLabels(ns)
		if err != nil {
			return nil, nil, err
		}
		res, err := injection.Inject(injection.Input{Pod: pod, Namespace: ns, NamespaceLabels: labels,
			SidecarSets: src.SidecarSets, Revisions: src.Revisions, Now: now, Rand: rnd})
		if err != nil {
			return nil, nil, fmt.Errorf("%s %q: %w", obj.GetKind(), obj.GetName(), err)
		}
		warnings = append(warnings, res.Warnings...)
		obj = obj.DeepCopy()
		if err := manifest.SetPod(obj, res.Pod); err != nil {
			return nil, nil, err
		}
		out = append(out, obj)
	}
	return out, warnings, nil
}
