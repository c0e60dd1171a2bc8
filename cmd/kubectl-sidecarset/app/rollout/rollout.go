// Package rollout is `kubectl sidecarset rollout`: status, pause, resume, undo, history and
// preview of the rollout of a SidecarSet or NamespacedSidecarSet, through its /rollout and
// /revisions subresources. The verdict on a rollout is the server's; the commands print it.
package rollout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/cli"
	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/manifest"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// targetUse is how the rollout commands name their object.
const targetUse = "(NAME | sidecarset/NAME | namespacedsidecarset/NAME)"

// NewCommand returns `kubectl sidecarset rollout` and its subcommands.
func NewCommand(o *cli.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout (status|pause|resume|undo|history|preview) " + targetUse,
		Short: "Drive the rollout of a SidecarSet or NamespacedSidecarSet through its /rollout and /revisions subresources",
		Long: `Drive the rollout of a SidecarSet (NAME or sidecarset/NAME) or of a NamespacedSidecarSet
(namespacedsidecarset/NAME, in the namespace of -n, else of the kubeconfig context) through its
/rollout and /revisions subresources. A kind may also be written in the plural or with its group
(sidecarsets.apps.kruise.io/NAME). Summaries and revision names are printed as the server gives
them: a NamespacedSidecarSet NAME of namespace NS takes part in injection as the SidecarSet NS.NAME.`,
		Example: `  kubectl sidecarset rollout status logging
  kubectl sidecarset rollout pause namespacedsidecarset/log-agent -n shop`,
	}
	cmd.AddCommand(newStatusCommand(o), newActionCommand(o, "pause", v1alpha1.RolloutActionPause, "paused"),
		newActionCommand(o, "resume", v1alpha1.RolloutActionResume, "resumed"), newUndoCommand(o), newHistoryCommand(o), newPreviewCommand(o))
	return cmd
}

// rolloutTarget is the object a rollout command drives: a SidecarSet, or a NamespacedSidecarSet of
// the command's namespace.
type rolloutTarget struct {
	namespaced      bool
	namespace, name string
}

// parseTarget reads NAME (a SidecarSet) or KIND/NAME, KIND as kubectl takes it: sidecarset or
// namespacedsidecarset, singular or plural, with or without the group.
func parseTarget(arg string) (rolloutTarget, error) {
	kind, name, found := strings.Cut(arg, "/")
	if !found {
		kind, name = "sidecarset", arg
	}
	t := rolloutTarget{name: name}
	switch strings.TrimSuffix(strings.ToLower(kind), "."+v1alpha1.GroupName) {
	case "sidecarset", "sidecarsets":
	case "namespacedsidecarset", "namespacedsidecarsets":
		t.namespaced = true
	default:
		return t, fmt.Errorf("%q: unknown kind %q: want NAME, sidecarset/NAME or namespacedsidecarset/NAME", arg, kind)
	}
	if name == "" || strings.Contains(name, "/") {
		return t, fmt.Errorf("%q: want NAME, sidecarset/NAME or namespacedsidecarset/NAME", arg)
	}
	return t, nil
}

// kind is the target's kind.
func (t rolloutTarget) kind() string {
	if t.namespaced {
		return "NamespacedSidecarSet"
	}
	return "SidecarSet"
}

// String names the target in messages: SidecarSet "NAME" or namespacedsidecarset/NAME.
func (t rolloutTarget) String() string {
	if t.namespaced {
		return "namespacedsidecarset/" + t.name
	}
	return fmt.Sprintf("SidecarSet %q", t.name)
}

// qualified names the target as kubectl's rollout actions report theirs: kind.group/NAME.
func (t rolloutTarget) qualified() string {
	return strings.ToLower(t.kind()) + "." + v1alpha1.GroupName + "/" + t.name
}

// args are the arguments of a command that names the target again.
func (t rolloutTarget) args() string {
	if t.namespaced {
		return "namespacedsidecarset/" + t.name + " -n " + t.namespace
	}
	return t.name
}

// rolloutAPI is the /rollout and /revisions subresources of a SidecarSet or NamespacedSidecarSet.
type rolloutAPI interface {
	GetRollout(ctx context.Context, name string, opts metav1.GetOptions) (*v1alpha1.SidecarSetRollout, error)
	Rollout(ctx context.Context, name string, r *v1alpha1.SidecarSetRollout, opts metav1.CreateOptions) (*v1alpha1.SidecarSetRollout, error)
	GetRevisions(ctx context.Context, name string, opts metav1.GetOptions) (*v1alpha1.SidecarSetRevisionList, error)
}

// connect builds the client of t's subresources; a NamespacedSidecarSet is of the command's
// namespace (-n, else the kubeconfig context's).
func connect(o *cli.Options, t *rolloutTarget) (rolloutAPI, error) {
	c, err := o.NewClients()
	if err != nil {
		return nil, err
	}
	if !t.namespaced {
		return c.SidecarSet.AppsV1alpha1().SidecarSets(), nil
	}
	t.namespace = c.Namespace
	return c.SidecarSet.AppsV1alpha1().NamespacedSidecarSets(t.namespace), nil
}

// target parses arg and connects to its subresources.
func target(o *cli.Options, arg string) (rolloutTarget, rolloutAPI, error) {
	t, err := parseTarget(arg)
	if err != nil {
		return t, nil, err
	}
	api, err := connect(o, &t)
	return t, api, err
}

func newStatusCommand(o *cli.Options) *cobra.Command {
	var timeout time.Duration
	var watch bool
	cmd := &cobra.Command{
		Use:   "status " + targetUse,
		Short: "Follow a rollout until every pod runs the current spec",
		Long: `Follow the rollout of a SidecarSet or NamespacedSidecarSet until it is done: every pod it upgrades
runs the current spec and is available (pods kept by partition, outside updateStrategy.selector or
not upgradable in place do not hold it up). It watches the object and prints the server's verdict,
its rollout conditions (Progressing, Ready, Stalled), at every change, and returns as soon as Ready
is True for the current generation. Exits 1 when the rollout stalls (a pod fails to run its new
sidecar image) or is paused, and when --timeout passes, as kubectl rollout status does.`,
		Example: `  kubectl sidecarset rollout status logging --timeout 5m
  kubectl sidecarset rollout status namespacedsidecarset/log-agent -n shop
  kubectl sidecarset rollout status logging --watch=false`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTargets(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStatus(cmd.Context(), o, args[0], watch, timeout)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "how long to wait before giving up (0: forever)")
	cmd.Flags().BoolVarP(&watch, "watch", "w", true, "follow the rollout until it is done; false prints the status once")
	return cmd
}

// progress is the outcome of one look at a rollout.
type progress struct {
	line    string
	done    bool
	stalled string // why the rollout cannot progress; "" when it can
}

// observed is what rollout status reads of a SidecarSet or NamespacedSidecarSet.
type observed struct {
	generation int64
	status     v1alpha1.SidecarSetStatus
}

// assess reads the server's verdict on a rollout from the object's rollout conditions: the
// progress line (Progressing's message), whether it is done (Ready True at the current
// generation), and why it cannot go on (Stalled True; Progressing False for Paused, with the
// command that resumes it). Conditions of an older generation are not a verdict yet.
func assess(t rolloutTarget, obj observed) progress {
	conds := obj.status.Conditions
	prog := meta.FindStatusCondition(conds, v1alpha1.SidecarSetProgressing)
	if obj.status.ObservedGeneration < obj.generation || prog == nil || prog.ObservedGeneration < obj.generation {
		return progress{line: fmt.Sprintf("Waiting for the server to observe generation %d of %s", obj.generation, t)}
	}
	pr := progress{line: prog.Message}
	if pr.line == "" {
		pr.line = fmt.Sprintf("%s rollout: %s", t, prog.Reason)
	}
	ready := meta.FindStatusCondition(conds, v1alpha1.SidecarSetReady)
	stalled := meta.FindStatusCondition(conds, rolloutStalled)
	switch {
	case stalled != nil && stalled.Status == metav1.ConditionTrue && stalled.ObservedGeneration >= obj.generation:
		pr.stalled = stalled.Message
	case ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration >= obj.generation:
		pr.done = true
	case prog.Status == metav1.ConditionFalse && prog.Reason == reasonPaused:
		pr.stalled = "the rollout is paused (kubectl sidecarset rollout resume " + t.args() + ")"
	case ready != nil && ready.Reason == reasonInjectionNotReady && ready.Message != "":
		// The pods may all be updated while new pods may still miss the current sidecars (its
		// injection moved between policies or to the webhook, a neighbour's change included).
		pr.line += "; " + ready.Message
	}
	return pr
}

// errStalled is returned when a rollout makes no progress; it exits with cli.ExitError.
var errStalled = errors.New("rollout stalled")

// The Stalled condition, the Paused reason of Progressing and the InjectionNotReady reason of
// Ready, as the server's controller writes them (kstatus' conventions).
const (
	rolloutStalled          = v1alpha1.SidecarSetStalled
	reasonPaused            = v1alpha1.ReasonRolloutPaused
	reasonInjectionNotReady = v1alpha1.ReasonInjectionNotReady
)

// statusWatch is the list and watch of the one object rollout status follows.
func statusWatch(o *cli.Options, t *rolloutTarget) (listWatch, error) {
	c, err := o.NewClients()
	if err != nil {
		return listWatch{}, err
	}
	if !t.namespaced {
		return listWatchNamed[*v1alpha1.SidecarSetList](c.SidecarSet.AppsV1alpha1().SidecarSets(), t.name), nil
	}
	t.namespace = c.Namespace
	return listWatchNamed[*v1alpha1.NamespacedSidecarSetList](c.SidecarSet.AppsV1alpha1().NamespacedSidecarSets(t.namespace), t.name), nil
}

// listerWatcher is a typed client's List and Watch.
type listerWatcher[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// listWatchNamed lists and watches the one object of api named name.
func listWatchNamed[L runtime.Object](api listerWatcher[L], name string) listWatch {
	byName := fields.OneTermEqualSelector("metadata.name", name).String()
	return listWatch{&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = byName
			return api.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = byName
			return api.Watch(ctx, opts)
		},
	}}
}

// listWatch lists, then watches from the list's resourceVersion: one object needs no streaming
// list (sendInitialEvents), which not every server and no fake clientset serves.
type listWatch struct{ *cache.ListWatch }

// IsWatchListSemanticsUnSupported tells the reflector to list, then watch.
func (listWatch) IsWatchListSemanticsUnSupported() bool { return true }

// observe reads an event's object when it is the target.
func observe(t rolloutTarget, obj runtime.Object) (observed, bool) {
	switch o := obj.(type) {
	case *v1alpha1.SidecarSet:
		return observed{o.Generation, o.Status}, !t.namespaced && o.Name == t.name
	case *v1alpha1.NamespacedSidecarSet:
		return observed{o.Generation, o.Status}, t.namespaced && o.Name == t.name && o.Namespace == t.namespace
	}
	return observed{}, false
}

// runStatus watches the target (an informer's list and watch of that one object, as kubectl
// rollout status does) until its rollout is done, stalls, or the timeout passes; with watch false
// it prints the current verdict once.
func runStatus(ctx context.Context, o *cli.Options, arg string, watching bool, timeout time.Duration) error {
	t, err := parseTarget(arg)
	if err != nil {
		return err
	}
	lw, err := statusWatch(o, &t)
	if err != nil {
		return err
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	// One list first, as kubectl rollout status gets its object: a missing object or a forbidden
	// read is an error at once, not a reflector retrying for ever.
	if _, err := lw.ListWithContextFunc(ctx, metav1.ListOptions{}); err != nil {
		return err
	}
	var prototype runtime.Object = &v1alpha1.SidecarSet{}
	if t.namespaced {
		prototype = &v1alpha1.NamespacedSidecarSet{}
	}
	last := ""
	precondition := func(store cache.Store) (bool, error) {
		if len(store.List()) == 0 {
			return true, apierrors.NewNotFound(schema.GroupResource{Group: v1alpha1.GroupName, Resource: strings.ToLower(t.kind()) + "s"}, t.name)
		}
		return false, nil
	}
	_, err = watchtools.UntilWithSync(ctx, lw, prototype, precondition, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return false, fmt.Errorf("%s was deleted", t)
		}
		obj, ok := observe(t, ev.Object)
		if !ok {
			return false, nil
		}
		pr := assess(t, obj)
		if pr.line != last {
			fmt.Fprintln(o.Out, pr.line)
			last = pr.line
		}
		switch {
		case pr.done:
			fmt.Fprintf(o.Out, "%s successfully rolled out\n", t)
			return true, nil
		case pr.stalled != "":
			return false, fmt.Errorf("%w: %s: %s", errStalled, t, pr.stalled)
		}
		return !watching, nil
	})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("timed out waiting for the rollout of %s: %s", t, last)
	}
	return err
}

func newActionCommand(o *cli.Options, use string, action v1alpha1.RolloutAction, done string) *cobra.Command {
	return &cobra.Command{
		Use:               use + " " + targetUse,
		Short:             fmt.Sprintf("%s the rollout of a SidecarSet or NamespacedSidecarSet (updateStrategy.paused)", strings.ToUpper(use[:1])+use[1:]),
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTargets(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, api, err := target(o, args[0])
			if err != nil {
				return err
			}
			return act(cmd.Context(), o, t, api, v1alpha1.SidecarSetRolloutSpec{Action: action}, done)
		},
	}
}

// act posts a rollout action and reports it.
func act(ctx context.Context, o *cli.Options, t rolloutTarget, api rolloutAPI, spec v1alpha1.SidecarSetRolloutSpec, done string) error {
	r, err := api.Rollout(ctx, t.name, &v1alpha1.SidecarSetRollout{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	switch o.Output {
	case "":
		_, err = fmt.Fprintf(o.Out, "%s %s\n", t.qualified(), done)
	case "name": // the object acted on, as kubectl rollout pause -o name prints it
		_, err = fmt.Fprintln(o.Out, t.qualified())
	default:
		err = o.Print(r, nil)
	}
	return err
}

func newUndoCommand(o *cli.Options) *cobra.Command {
	var to int64
	cmd := &cobra.Command{
		Use:   "undo " + targetUse + " [--to-revision N]",
		Short: "Roll a SidecarSet or NamespacedSidecarSet back to a revision (the previous one by default)",
		Example: `  kubectl sidecarset rollout undo logging --to-revision 2
  kubectl sidecarset rollout undo namespacedsidecarset/log-agent -n shop`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTargets(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, api, err := target(o, args[0])
			if err != nil {
				return err
			}
			revs, err := api.GetRevisions(cmd.Context(), t.name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			rev, err := undoTarget(revs.Items, to)
			if err != nil {
				return fmt.Errorf("%s: %w", t, err)
			}
			return act(cmd.Context(), o, t, api, v1alpha1.SidecarSetRolloutSpec{Action: v1alpha1.RolloutActionRollback, RevisionName: rev.Name},
				fmt.Sprintf("rolled back to revision %d (%s)", rev.Revision, rev.Name))
		},
	}
	cmd.Flags().Int64Var(&to, "to-revision", 0, "the revision number to roll back to (0: the previous one)")
	return cmd
}

// undoTarget picks the revision to roll back to among revs (newest first, as /revisions lists
// them): number to, or the one before the newest.
func undoTarget(revs []v1alpha1.SidecarSetRevision, to int64) (*v1alpha1.SidecarSetRevision, error) {
	if to == 0 {
		if len(revs) < 2 {
			return nil, errors.New("no previous revision")
		}
		return &revs[1], nil
	}
	for i := range revs {
		if revs[i].Revision == to {
			return &revs[i], nil
		}
	}
	return nil, fmt.Errorf("no revision %d", to)
}

func newHistoryCommand(o *cli.Options) *cobra.Command {
	return &cobra.Command{
		Use:               "history " + targetUse,
		Short:             "List the revisions of a SidecarSet or NamespacedSidecarSet, newest first",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTargets(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.CheckOutput(); err != nil {
				return err
			}
			t, api, err := target(o, args[0])
			if err != nil {
				return err
			}
			revs, err := api.GetRevisions(cmd.Context(), t.name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			return o.Print(revs, func(w io.Writer) error { return printHistory(w, revs.Items) })
		},
	}
}

func printHistory(w io.Writer, revs []v1alpha1.SidecarSetRevision) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tNAME\tCUSTOM-VERSION\tIMAGES\tCREATED")
	for _, r := range revs {
		var images []string
		for _, c := range r.Spec.InitContainers {
			images = append(images, c.Name+"="+c.Image)
		}
		for _, c := range r.Spec.Containers {
			images = append(images, c.Name+"="+c.Image)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", r.Revision, r.Name, orDash(r.Labels[v1alpha1.SidecarSetCustomVersionLabel]),
			strings.Join(images, ","), r.CreationTimestamp.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newPreviewCommand(o *cli.Options) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "preview " + targetUse + " -f NEW.yaml",
		Short: "Show which pods a proposed spec would upgrade, in which batches, and which it could not",
		Long: `Ask the server to plan a rollout of the SidecarSet (or NamespacedSidecarSet) in NEW.yaml over the
current pods, with the planner the controller runs (POST sidecarsets/NAME/rollout or
namespacedsidecarsets/NAME/rollout, action Preview; nothing is written): the pods it would upgrade
in place in order and by batch (assuming each batch becomes available before the next), those it
would hold (partition, updateStrategy.selector, paused), and those it could not upgrade in place
(a change other than an image). NEW.yaml holds one object of the kind named.`,
		Example: `  kubectl sidecarset rollout preview logging -f logging-v2.yaml
  kubectl sidecarset rollout preview namespacedsidecarset/log-agent -n shop -f log-agent-v2.yaml`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTargets(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPreview(cmd.Context(), o, args[0], file)
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "the proposed SidecarSet or NamespacedSidecarSet")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func runPreview(ctx context.Context, o *cli.Options, arg, file string) error {
	if err := o.CheckOutput(); err != nil {
		return err
	}
	t, err := parseTarget(arg)
	if err != nil {
		return err
	}
	objs, err := manifest.ReadFile(o.In, file)
	if err != nil {
		return err
	}
	if len(objs) != 1 || objs[0].GetKind() != t.kind() {
		return fmt.Errorf("%s: want one %s", file, t.kind())
	}
	proposed, err := decodeProposed(objs[0], t)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if proposed.Name != "" && proposed.Name != t.name {
		return fmt.Errorf("%s names %s %q, not %q", file, t.kind(), proposed.Name, t.name)
	}
	api, err := connect(o, &t)
	if err != nil {
		return err
	}
	if t.namespaced && proposed.Namespace != "" && proposed.Namespace != t.namespace {
		return fmt.Errorf("%s is of namespace %q, not %q", file, proposed.Namespace, t.namespace)
	}
	req := &v1alpha1.SidecarSetRollout{Spec: v1alpha1.SidecarSetRolloutSpec{Action: v1alpha1.RolloutActionPreview, Proposed: &proposed.Spec}}
	r, err := api.Rollout(ctx, t.name, req, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	return o.Print(r, func(w io.Writer) error { return printPreview(w, t, r) })
}

// printPreview lists the batches, then the pods not upgraded and why.
func printPreview(w io.Writer, t rolloutTarget, r *v1alpha1.SidecarSetRollout) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Preview of %s: maxUnavailable %d, partition %d\n", t, r.Status.MaxUnavailable, r.Status.Partition)
	batches := map[int32][]string{}
	var last int32
	var others []string
	for _, p := range r.Status.Pods {
		if p.Batch > 0 {
			batches[p.Batch] = append(batches[p.Batch], p.Namespace+"/"+p.Name)
			last = max(last, p.Batch)
			continue
		}
		others = append(others, fmt.Sprintf("  %s/%s: %s %s", p.Namespace, p.Name, p.State, p.Reason))
	}
	for n := int32(1); n <= last; n++ {
		fmt.Fprintf(&b, "batch %s: %s\n", strconv.Itoa(int(n)), strings.Join(batches[n], " "))
	}
	if last == 0 {
		b.WriteString("no pod would be upgraded in place\n")
	}
	if len(others) > 0 {
		b.WriteString("not upgraded:\n" + strings.Join(others, "\n") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// decodeProposed decodes the proposed SidecarSet or NamespacedSidecarSet of a preview, of any
// served version; a NamespacedSidecarSet is returned as a SidecarSet of the same metadata and spec.
func decodeProposed(obj *unstructured.Unstructured, t rolloutTarget) (*v1alpha1.SidecarSet, error) {
	d := manifest.NewDecoder()
	if !t.namespaced {
		ss := &v1alpha1.SidecarSet{}
		return ss, d.Decode(obj, ss)
	}
	n := &v1alpha1.NamespacedSidecarSet{}
	if err := d.Decode(obj, n); err != nil {
		return nil, err
	}
	return &v1alpha1.SidecarSet{ObjectMeta: n.ObjectMeta, Spec: n.Spec}, nil
}

// completeTargets completes the argument of the rollout commands: SidecarSet names, and
// namespacedsidecarset/NAME for the NamespacedSidecarSets of the command's namespace (sidecarset/NAME
// once that prefix is typed).
func completeTargets(o *cli.Options) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := o.NewClients()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		kind, _, qualified := strings.Cut(toComplete, "/")
		sidecarSets, namespaced := true, true
		prefix, namespacedPrefix := "", "namespacedsidecarset/"
		if qualified {
			t, err := parseTarget(kind + "/x")
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			sidecarSets, namespaced = !t.namespaced, t.namespaced
			prefix, namespacedPrefix = kind+"/", kind+"/"
		}
		var names []string
		if sidecarSets {
			names = append(names, sidecarSetNames(cmd.Context(), c, prefix)...)
		}
		if namespaced {
			names = append(names, namespacedNames(cmd.Context(), c, namespacedPrefix)...)
		}
		return cli.WithPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// sidecarSetNames are the names of the SidecarSets after prefix; none when they cannot be listed.
func sidecarSetNames(ctx context.Context, c *cli.Clients, prefix string) []string {
	var names []string
	if list, err := c.SidecarSet.AppsV1alpha1().SidecarSets().List(ctx, metav1.ListOptions{}); err == nil {
		for _, ss := range list.Items {
			names = append(names, prefix+ss.Name)
		}
	}
	return names
}

// namespacedNames are the names of the NamespacedSidecarSets of the command's namespace after
// prefix; none when they cannot be listed.
func namespacedNames(ctx context.Context, c *cli.Clients, prefix string) []string {
	var names []string
	if list, err := c.SidecarSet.AppsV1alpha1().NamespacedSidecarSets(c.Namespace).List(ctx, metav1.ListOptions{}); err == nil {
		for _, n := range list.Items {
			names = append(names, prefix+n.Name)
		}
	}
	return names
}
