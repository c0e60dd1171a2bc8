package app

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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

func newRolloutCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout (status|pause|resume|undo|history|preview) NAME",
		Short: "Drive the rollout of a SidecarSet through its /rollout and /revisions subresources",
	}
	cmd.AddCommand(newStatusCommand(o), newActionCommand(o, "pause", v1alpha1.RolloutActionPause, "paused"),
		newActionCommand(o, "resume", v1alpha1.RolloutActionResume, "resumed"), newUndoCommand(o), newHistoryCommand(o), newPreviewCommand(o))
	return cmd
}

func newStatusCommand(o *options) *cobra.Command {
	var timeout, interval time.Duration
	var watch bool
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Follow a rollout until every pod runs the current spec",
		Long: `Follow the rollout of a SidecarSet with a progress line until it is done: every pod it upgrades
runs the current spec and is available (pods kept by partition, outside updateStrategy.selector or
not upgradable in place do not hold it up). Exits non-zero when the rollout stalls (a pod fails to
run its new sidecar image, or the rollout is paused) or when --timeout passes.`,
		Example: `  kubectl sidecarset rollout status logging --timeout 5m`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.runStatus(cmd.Context(), args[0], watch, timeout, interval)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "how long to wait before giving up (0: forever)")
	cmd.Flags().BoolVarP(&watch, "watch", "w", true, "follow the rollout until it is done; false prints the status once")
	cmd.Flags().DurationVar(&interval, "interval", 2*time.Second, "how often to poll the rollout")
	return cmd
}

// progress is the outcome of one look at a rollout view.
type progress struct {
	line    string
	done    bool
	stalled string // why the rollout cannot progress; "" when it can
}

// assess reads the server's verdict on a rollout from its view: the progress line, whether it is
// done, and why it cannot go on (a paused rollout gets the command that resumes it).
func assess(name string, r *v1alpha1.SidecarSetRollout) progress {
	st := r.Status
	pr := progress{line: st.Summary, done: st.Phase == v1alpha1.RolloutDone, stalled: st.Message}
	if pr.line == "" {
		pr.line = fmt.Sprintf("SidecarSet %q rollout: no progress reported yet", name)
	}
	switch st.Phase {
	case v1alpha1.RolloutPaused:
		pr.stalled += " (kubectl sidecarset rollout resume " + name + ")"
	case v1alpha1.RolloutStalled:
		if pr.stalled == "" {
			pr.stalled = "the rollout is stalled"
		}
	}
	return pr
}

func (o *options) runStatus(ctx context.Context, name string, watch bool, timeout, interval time.Duration) error {
	c, err := o.newClients()
	if err != nil {
		return err
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	last := ""
	for {
		r, err := c.sidecarSet.AppsV1alpha1().SidecarSets().GetRollout(ctx, name, metav1.GetOptions{})
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("timed out waiting for the rollout of SidecarSet %q", name)
			}
			return err
		}
		pr := assess(name, r)
		if pr.line != last {
			fmt.Fprintln(o.out, pr.line)
			last = pr.line
		}
		switch {
		case pr.done:
			fmt.Fprintf(o.out, "SidecarSet %q successfully rolled out\n", name)
			return nil
		case pr.stalled != "":
			return fmt.Errorf("%w: SidecarSet %q: %s", errStalled, name, pr.stalled)
		case !watch:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for the rollout of SidecarSet %q: %s", name, last)
		case <-time.After(interval):
		}
	}
}

func newActionCommand(o *options, use string, action v1alpha1.RolloutAction, done string) *cobra.Command {
	return &cobra.Command{
		Use:   use + " NAME",
		Short: fmt.Sprintf("%s the rollout of a SidecarSet (updateStrategy.paused)", strings.ToUpper(use[:1])+use[1:]),
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.act(cmd.Context(), args[0], v1alpha1.SidecarSetRolloutSpec{Action: action}, done)
		},
	}
}

// act posts a rollout action and reports it.
func (o *options) act(ctx context.Context, name string, spec v1alpha1.SidecarSetRolloutSpec, done string) error {
	c, err := o.newClients()
	if err != nil {
		return err
	}
	r, err := c.sidecarSet.AppsV1alpha1().SidecarSets().Rollout(ctx, name, &v1alpha1.SidecarSetRollout{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	if o.output != "" {
		return o.print(r, nil)
	}
	_, err = fmt.Fprintf(o.out, "sidecarset.apps.kruise.io/%s %s\n", name, done)
	return err
}

func newUndoCommand(o *options) *cobra.Command {
	var to int64
	cmd := &cobra.Command{
		Use:     "undo NAME [--to-revision N]",
		Short:   "Roll a SidecarSet back to a revision (the previous one by default)",
		Example: "  kubectl sidecarset rollout undo logging --to-revision 2",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.newClients()
			if err != nil {
				return err
			}
			revs, err := c.sidecarSet.AppsV1alpha1().SidecarSets().GetRevisions(cmd.Context(), args[0], metav1.GetOptions{})
			if err != nil {
				return err
			}
			rev, err := undoTarget(revs.Items, to)
			if err != nil {
				return fmt.Errorf("SidecarSet %q: %w", args[0], err)
			}
			return o.act(cmd.Context(), args[0], v1alpha1.SidecarSetRolloutSpec{Action: v1alpha1.RolloutActionRollback, RevisionName: rev.Name},
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

func newHistoryCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "history NAME",
		Short: "List the revisions of a SidecarSet, newest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.checkOutput(); err != nil {
				return err
			}
			c, err := o.newClients()
			if err != nil {
				return err
			}
			revs, err := c.sidecarSet.AppsV1alpha1().SidecarSets().GetRevisions(cmd.Context(), args[0], metav1.GetOptions{})
			if err != nil {
				return err
			}
			return o.print(revs, func(w io.Writer) error { return printHistory(w, revs.Items) })
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

func newPreviewCommand(o *options) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "preview NAME -f NEW.yaml",
		Short: "Show which pods a proposed spec would upgrade, in which batches, and which it could not",
		Long: `Ask the server to plan a rollout of the SidecarSet in NEW.yaml over the current pods, with the
planner the controller runs (POST sidecarsets/NAME/rollout, action Preview; nothing is written):
the pods it would upgrade in place in order and by batch (assuming each batch becomes available
before the next), those it would hold (partition, updateStrategy.selector, paused), and those it
could not upgrade in place (a change other than an image).`,
		Example: "  kubectl sidecarset rollout preview logging -f logging-v2.yaml",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.runPreview(cmd.Context(), args[0], file)
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "the proposed SidecarSet")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func (o *options) runPreview(ctx context.Context, name, file string) error {
	if err := o.checkOutput(); err != nil {
		return err
	}
	objs, err := o.readFile(file)
	if err != nil {
		return err
	}
	if len(objs) != 1 || objs[0].GetKind() != "SidecarSet" {
		return fmt.Errorf("%s: want one SidecarSet", file)
	}
	proposed := &v1alpha1.SidecarSet{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(objs[0].Object, proposed, true); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if proposed.Name != "" && proposed.Name != name {
		return fmt.Errorf("%s names SidecarSet %q, not %q", file, proposed.Name, name)
	}
	c, err := o.newClients()
	if err != nil {
		return err
	}
	req := &v1alpha1.SidecarSetRollout{Spec: v1alpha1.SidecarSetRolloutSpec{Action: v1alpha1.RolloutActionPreview, Proposed: &proposed.Spec}}
	r, err := c.sidecarSet.AppsV1alpha1().SidecarSets().Rollout(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	return o.print(r, func(w io.Writer) error { return printPreview(w, name, r) })
}

// printPreview lists the batches, then the pods not upgraded and why.
func printPreview(w io.Writer, name string, r *v1alpha1.SidecarSetRollout) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Preview of SidecarSet %q: maxUnavailable %d, partition %d\n", name, r.Status.MaxUnavailable, r.Status.Partition)
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
