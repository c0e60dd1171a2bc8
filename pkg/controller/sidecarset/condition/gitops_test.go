package condition

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
	"github.com/sidecarset/apiserver/test/gitops"
)

// TestAssessRollout: Stalled is True exactly when the rollout's phase is Stalled (pods fail to run
// the new sidecar, paused or not), and Ready is then False; a paused, waiting or held rollout is
// not stalled.
func TestAssessRollout(t *testing.T) {
	failed := []string{"ns/p: ImagePullBackOff Back-off pulling image"}
	type want struct {
		Ready, Progressing, Stalled metav1.ConditionStatus
		Reason                      string // of Progressing and Stalled
	}
	for _, tc := range []struct {
		name string
		p    rollout.Progress
		want want
	}{
		{"done", rollout.Progress{Total: 2, Updated: 2}, want{"True", "False", "False", ReasonRolloutComplete}},
		{"done, held and not upgradable pods", rollout.Progress{Total: 4, Updated: 1, Held: 2, NotUpgradable: 1}, want{"True", "False", "False", ReasonRolloutComplete}},
		{"done, pods not injected", rollout.Progress{Total: 2, Updated: 1, NotInjected: 1}, want{"True", "False", "False", ReasonRolloutComplete}},
		{"rolling out", rollout.Progress{Total: 2, Updated: 1, Upgrading: 1}, want{"False", "True", "False", ReasonRollingOut}},
		{"waiting on unavailable updated pods", rollout.Progress{Total: 3, Updated: 1, Unavailable: 1, Waiting: 2}, want{"False", "True", "False", ReasonRollingOut}},
		{"paused", rollout.Progress{Total: 2, Updated: 1, Waiting: 1, Paused: true}, want{"False", "False", "False", ReasonRolloutPaused}},
		{"paused once done", rollout.Progress{Total: 2, Updated: 2, Paused: true}, want{"True", "False", "False", ReasonRolloutComplete}},
		{"pods failed", rollout.Progress{Total: 2, Updated: 1, Failed: failed}, want{"False", "False", "True", ReasonPodsFailed}},
		{"pods failed, paused", rollout.Progress{Total: 2, Waiting: 1, Failed: failed, Paused: true}, want{"False", "False", "True", ReasonPodsFailed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := assessRollout(tc.p, true, "ss", 3)
			got := want{c.ready.Status, c.progressing.Status, c.stalled.Status, c.stalled.Reason}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if c.progressing.Reason != c.stalled.Reason || c.stalled.ObservedGeneration != 3 || c.stalled.Type != Stalled {
				t.Errorf("Stalled %+v, Progressing %+v", c.stalled, c.progressing)
			}
			if c.stalled.Status == metav1.ConditionTrue && !strings.Contains(c.stalled.Message, "ns/p: ImagePullBackOff") {
				t.Errorf("Stalled message %q does not name the failed pod", c.stalled.Message)
			}
		})
	}
}

// TestStalledRecorded: Stalled is absent on a SidecarSet whose rollout never stalled, True while
// it is, False once it ends; its transition time moves only with its status.
func TestStalledRecorded(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	failed := rollout.Progress{Total: 1, Failed: []string{"ns/p: CrashLoopBackOff"}}
	var st v1alpha1.SidecarSetStatus
	for i, step := range []struct {
		p     rollout.Progress
		want  metav1.ConditionStatus // "" for no condition
		since int                    // the step of the last transition
	}{
		{rollout.Progress{Total: 1, Updated: 1}, "", 0},
		{rollout.Progress{Total: 1, Upgrading: 1}, "", 0},
		{failed, metav1.ConditionTrue, 2},
		{failed, metav1.ConditionTrue, 2},
		{rollout.Progress{Total: 1, Upgrading: 1}, metav1.ConditionFalse, 4},
		{rollout.Progress{Total: 1, Updated: 1}, metav1.ConditionFalse, 4},
	} {
		now := metav1.NewTime(t0.Add(time.Duration(i) * time.Minute))
		SetRollout(&st, step.p, true, "ss", 1, now)
		c := meta.FindStatusCondition(st.Conditions, Stalled)
		switch {
		case step.want == "" && c != nil:
			t.Errorf("step %d: %+v, want no Stalled condition", i, c)
		case step.want != "" && (c == nil || c.Status != step.want):
			t.Errorf("step %d: %+v, want Stalled %s", i, c, step.want)
		case c != nil && !c.LastTransitionTime.Time.Equal(t0.Add(time.Duration(step.since)*time.Minute)):
			t.Errorf("step %d: transition at %v, want step %d", i, c.LastTransitionTime, step.since)
		}
	}
}

// TestGitOpsReadsConditions: what the controller writes in each state of a rollout is read by
// kstatus (Flux) and by the shipped Argo CD health script as it should be, for both kinds.
func TestGitOpsReadsConditions(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("../../../..", gitops.ScriptPath))
	if err != nil {
		t.Fatal(err)
	}
	failed := []string{"ns/p: ImagePullBackOff"}
	policy := &v1alpha1.RolloutInjection{Path: string(apps.PathPolicy), Reason: apps.ReasonCompiled, Policy: "sidecarsets-x"}
	paused := &v1alpha1.RolloutInjection{Path: string(apps.PathNone), Reason: apps.ReasonInjectionPaused, Message: "injectionStrategy.paused is set"}
	for _, tc := range []struct {
		name      string
		p         rollout.Progress
		observed  bool
		injection *v1alpha1.RolloutInjection
		spec      func(*v1alpha1.SidecarSetSpec)
		argo      string
		kstatus   status.Status
	}{
		{"settled", rollout.Progress{Total: 2, Updated: 2}, true, policy, nil, gitops.Healthy, status.CurrentStatus},
		{"injection not in place", rollout.Progress{Total: 2, Updated: 2}, false, policy, nil, gitops.Progressing, status.InProgressStatus},
		{"rolling out", rollout.Progress{Total: 2, Updated: 1, Upgrading: 1}, true, policy, nil, gitops.Progressing, status.InProgressStatus},
		{"paused", rollout.Progress{Total: 2, Updated: 1, Waiting: 1, Paused: true}, true, policy,
			func(s *v1alpha1.SidecarSetSpec) { s.UpdateStrategy.Paused = true }, gitops.Suspended, status.InProgressStatus},
		{"stalled", rollout.Progress{Total: 2, Updated: 1, Failed: failed}, true, policy, nil, gitops.Degraded, status.FailedStatus},
		{"stalled and paused", rollout.Progress{Total: 2, Failed: failed, Waiting: 1, Paused: true}, true, policy,
			func(s *v1alpha1.SidecarSetSpec) { s.UpdateStrategy.Paused = true }, gitops.Degraded, status.FailedStatus},
		{"injection paused", rollout.Progress{Total: 2, Updated: 2}, true, paused,
			func(s *v1alpha1.SidecarSetSpec) { s.InjectionStrategy.Paused = true }, gitops.Suspended, status.CurrentStatus},
	} {
		for _, kind := range []string{"SidecarSet", "NamespacedSidecarSet"} {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "ss", Generation: 2}}
				ss.Status.ObservedGeneration = 1
				if tc.spec != nil {
					tc.spec(&ss.Spec)
				}
				now := metav1.Now()
				if tc.observed {
					ss.Status.ObservedGeneration = 2
					SetInjection(&ss.Status, tc.injection, 2, now)
				}
				SetRollout(&ss.Status, tc.p, tc.observed, ss.Name, 2, now)
				got, err := gitops.Evaluate(string(script), asObject(t, ss, kind))
				if err != nil {
					t.Fatal(err)
				}
				if got.ArgoCD.Status != tc.argo || got.Kstatus != tc.kstatus {
					t.Errorf("Argo CD %+v, kstatus %s (%s); want %s, %s\nconditions: %s", got.ArgoCD, got.Kstatus, got.KstatusMessage,
						tc.argo, tc.kstatus, cmp.Diff(nil, ss.Status.Conditions, cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime")))
				}
			})
		}
	}
}

// asObject is ss as the server returns it, as the kind given.
func asObject(t *testing.T, ss *v1alpha1.SidecarSet, kind string) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ss)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(v1alpha1.SchemeGroupVersion.String())
	u.SetKind(kind)
	if kind == "NamespacedSidecarSet" {
		u.SetNamespace("team-a")
	}
	return u
}
