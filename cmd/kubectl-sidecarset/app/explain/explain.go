// Package explain is `kubectl sidecarset explain`: for every SidecarSet and NamespacedSidecarSet,
// whether a pod is injected and why, as the explain core (pkg/explain) says.
package explain

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/cli"
	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/manifest"
	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/source"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	explaincore "github.com/sidecarset/apiserver/pkg/explain"
)

type explainFlags struct {
	file, selector, sidecarSets, namespaceLabels string
	webhookConfiguration                         string
	excludedNamespaces                           []string
}

// NewCommand returns `kubectl sidecarset explain`.
func NewCommand(o *cli.Options) *cobra.Command {
	f := &explainFlags{}
	cmd := &cobra.Command{
		Use:   "explain (POD | -f FILE | -l SELECTOR)",
		Short: "Say, for every SidecarSet and NamespacedSidecarSet, whether a pod is injected and why",
		Long: `For every SidecarSet and NamespacedSidecarSet: whether the pod is (or, for a manifest, would be)
injected, and why not (the label or expression that did not match, the namespace, paused
injection, a namespace the admission configuration excludes), the admission path that serves it
(policy or webhook, from its Injected condition), the revision chosen and why, and the parts
skipped (a missing transferEnv source, ...). An existing pod that a SidecarSet selects but does not
carry is reported with the reason the /rollout view names for it (CreatedBeforeSidecarSet,
CreatedWithSidecarSet, AdmittedWithoutSidecars, ShadowedByClusterSidecarSet). Manifests (-f) are explained as pods about to be created;
with --sidecarsets no cluster is used. A NamespacedSidecarSet NAME of namespace NS is reported as
"NamespacedSidecarSet NS/NAME" (in -o yaml|json, as the SidecarSet NS.NAME it takes part as).`,
		Example: `  kubectl sidecarset explain web-0 -n shop
  kubectl sidecarset explain -l app=web -n shop -o yaml
  kubectl sidecarset explain -f deployment.yaml --sidecarsets sidecarsets.yaml --excluded-namespaces kube-system`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completePods(o),
		RunE:              func(cmd *cobra.Command, args []string) error { return runExplain(cmd.Context(), o, f, args) },
	}
	cmd.Flags().StringVarP(&f.file, "filename", "f", "", "Pod or workload manifests to explain as pods about to be created")
	cmd.Flags().StringVarP(&f.selector, "selector", "l", "", "explain the pods of the namespace that this label selector selects")
	cmd.Flags().StringVar(&f.sidecarSets, "sidecarsets", "", "with -f: SidecarSet, NamespacedSidecarSet (and SidecarSetRevision) manifests; no cluster is used")
	cmd.Flags().StringVar(&f.namespaceLabels, "namespace-labels", "", "labels of the namespace, k=v,...")
	cmd.Flags().StringVar(&f.webhookConfiguration, "webhook-configuration", "sidecarset-injector",
		"the MutatingWebhookConfiguration of injection, whose namespaceSelectors decide the excluded namespaces")
	cmd.Flags().StringSliceVar(&f.excludedNamespaces, "excluded-namespaces", nil, "namespaces the admission configuration excludes from injection")
	return cmd
}

func runExplain(ctx context.Context, o *cli.Options, f *explainFlags, args []string) error {
	if err := o.CheckOutput(); err != nil {
		return err
	}
	n := len(args)
	if f.file != "" {
		n++
	}
	if f.selector != "" {
		n++
	}
	if n != 1 {
		return fmt.Errorf("name exactly one of POD, -f FILE or -l SELECTOR")
	}
	if f.sidecarSets != "" && f.file == "" {
		return fmt.Errorf("--sidecarsets needs -f: an existing pod is read from the cluster")
	}
	pods, created, err := explainedPods(ctx, o, f, args)
	if err != nil {
		return err
	}
	src, defaultNS, err := source.Read(ctx, o, f.sidecarSets, f.namespaceLabels)
	if err != nil {
		return err
	}
	admission := explaincore.Admission{ExcludedNamespaces: f.excludedNamespaces}
	if f.sidecarSets == "" {
		if admission.NamespaceSelectors, err = webhookSelectors(ctx, o, f.webhookConfiguration); err != nil {
			return err
		}
	}
	reports, err := explainPods(pods, created, src, admission, defaultNS, o.Now(), o.Rand)
	if err != nil {
		return err
	}
	if len(reports) == 1 {
		return o.Print(reports[0], func(w io.Writer) error { return printReport(w, &reports[0]) })
	}
	return o.Print(reports, func(w io.Writer) error {
		for i := range reports {
			if err := printReport(w, &reports[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// explainPods explains each pod against the sources.
func explainPods(pods []*corev1.Pod, created bool, src *source.Injection, admission explaincore.Admission, defaultNS string, now time.Time, rnd func() float64) ([]explaincore.Report, error) {
	var reports []explaincore.Report
	for _, pod := range pods {
		ns := pod.Namespace
		if ns == "" {
			ns = defaultNS
		}
		labels, err := src.NamespaceLabels(ns)
		if err != nil {
			return nil, err
		}
		rep, err := explaincore.Explain(explaincore.Input{Pod: pod, Namespace: ns, NamespaceLabels: labels, SidecarSets: src.SidecarSets,
			Revisions: src.Revisions, Admission: admission, Created: created, Now: now, Rand: rnd})
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: %w", ns, pod.Name, err)
		}
		if rep.Name == "" {
			rep.Name = pod.GenerateName
		}
		reports = append(reports, rep)
	}
	return reports, nil
}

// explainedPods returns the pods to explain, and whether they exist.
func explainedPods(ctx context.Context, o *cli.Options, f *explainFlags, args []string) ([]*corev1.Pod, bool, error) {
	if f.file != "" {
		objs, err := manifest.ReadFile(o.In, f.file)
		if err != nil {
			return nil, false, err
		}
		var pods []*corev1.Pod
		for _, obj := range objs {
			pod, err := manifest.PodOf(obj)
			if err != nil {
				return nil, false, err
			}
			pods = append(pods, pod)
		}
		return pods, false, nil
	}
	c, err := o.NewClients()
	if err != nil {
		return nil, false, err
	}
	pods := c.Kube.CoreV1().Pods(c.Namespace)
	if len(args) == 1 {
		pod, err := pods.Get(ctx, args[0], metav1.GetOptions{})
		if err != nil {
			return nil, false, err
		}
		return []*corev1.Pod{pod}, true, nil
	}
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: f.selector})
	if err != nil {
		return nil, false, err
	}
	if len(list.Items) == 0 {
		return nil, false, fmt.Errorf("no pod in namespace %q matches %q", c.Namespace, f.selector)
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, true, nil
}

// webhookSelectors reads the namespaceSelectors of the injection webhooks; nil (nothing excluded
// by them) when the configuration is absent or not readable.
func webhookSelectors(ctx context.Context, o *cli.Options, name string) ([]*metav1.LabelSelector, error) {
	if name == "" {
		return nil, nil
	}
	c, err := o.NewClients()
	if err != nil {
		return nil, err
	}
	cfg, err := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		fmt.Fprintf(o.ErrOut, "Warning: cannot read MutatingWebhookConfiguration %q (%v); excluded namespaces are not checked\n", name, err)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := []*metav1.LabelSelector{}
	for i := range cfg.Webhooks {
		sel := cfg.Webhooks[i].NamespaceSelector
		if sel == nil {
			sel = &metav1.LabelSelector{}
		}
		out = append(out, sel)
	}
	return out, nil
}

// printReport writes a report for people.
func printReport(w io.Writer, rep *explaincore.Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Pod %s/%s\n", rep.Namespace, rep.Name)
	if rep.NamespaceExcluded {
		fmt.Fprintf(&b, "  namespace %q is excluded from injection by the admission configuration\n", rep.Namespace)
	}
	if len(rep.SidecarSets) == 0 {
		b.WriteString("  no SidecarSet\n")
	}
	for _, e := range rep.SidecarSets {
		state := "not injected"
		if e.Injected {
			state = "injected"
		}
		fmt.Fprintf(&b, "  %s: %s (%s)", setLabel(e.SidecarSet), state, e.Reason)
		if e.Message != "" {
			fmt.Fprintf(&b, ": %s", e.Message)
		}
		b.WriteString("\n")
		if e.Injected {
			fmt.Fprintf(&b, "    revision: %s (%s)\n", orNone(e.Revision), e.RevisionMessage)
		}
		if e.Path != "" {
			fmt.Fprintf(&b, "    path: %s (%s)\n", e.Path, e.PathMessage)
		}
		for _, s := range e.Skipped {
			fmt.Fprintf(&b, "    skipped %s: %s\n", s.Field, s.Message)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// setLabel names a SidecarSet for people: "SidecarSet NAME", or "NamespacedSidecarSet NS/NAME"
// for the SidecarSet NS.NAME a NamespacedSidecarSet takes part as.
func setLabel(name string) string {
	if ns, local, ok := v1alpha1.SplitNamespacedName(name); ok {
		return "NamespacedSidecarSet " + ns + "/" + local
	}
	return "SidecarSet " + name
}

func orNone(s string) string {
	if s == "" {
		return "not recorded yet"
	}
	return s
}

// completePods completes explain's argument: the pods of the command's namespace.
func completePods(o *cli.Options) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := o.NewClients()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		list, err := c.Kube.CoreV1().Pods(c.Namespace).List(cmd.Context(), metav1.ListOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names := make([]string, 0, len(list.Items))
		for _, p := range list.Items {
			names = append(names, p.Name)
		}
		return cli.WithPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}
