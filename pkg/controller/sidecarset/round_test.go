package sidecarset

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/revision"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/backoff"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/condition"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/history"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/inplace/inplacetest"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// TestRound: a round of a SidecarSet with a new image records its revision, upgrades one pod of
// two (maxUnavailable 1), leaves its first SidecarSetUpgradable verdict to a quiet rollout (no
// status patch: TestUpgradableWaitsForQuiet), and writes the status once, with what the round
// did.
func TestRound(t *testing.T) {
	old, ss := newImage(t)
	h := newHarness(t, old, ss)
	after, err := h.round()
	if err != nil {
		t.Fatal(err)
	}
	if after != 3*time.Second {
		t.Errorf("the round asks to look again after %v, want 3s (one pod left, and its upgrade state once the rollout is quiet)", after)
	}
	latest, err := revision.Name(ss.Name, revision.Snapshot(ss), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.Get(context.Background(), latest); err != nil {
		t.Errorf("revision %s: %v", latest, err)
	}
	upgraded := 0
	for _, name := range []string{"a", "b"} {
		if inplacetest.Images(h.pod(name))["log"] == "log:2" {
			upgraded++
		}
	}
	if upgraded != 1 || h.podUpgrades() != 1 || count(h.kube, "patch", "pods", "status") != 0 {
		t.Errorf("upgraded %d pods with %d spec patches and %d status patches, want 1, 1 and 0", upgraded, h.podUpgrades(), count(h.kube, "patch", "pods", "status"))
	}
	if h.statusWrites() != 1 {
		t.Fatalf("%d status writes, want 1", h.statusWrites())
	}
	// The upgraded pod is not ready until its kubelet restarts the container.
	want := v1alpha1.SidecarSetStatus{ObservedGeneration: 2, MatchedPods: 2, UpdatedPods: 1, ReadyPods: 1,
		LatestRevision: latest, CollisionCount: ptr.To[int32](0)}
	if diff := cmp.Diff(want, h.stored().Status, cmpopts.IgnoreFields(v1alpha1.SidecarSetStatus{}, "Conditions")); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	conds := h.stored().Status.Conditions
	if !meta.IsStatusConditionFalse(conds, condition.Ready) || meta.FindStatusCondition(conds, condition.Progressing).Reason != condition.ReasonRollingOut {
		t.Errorf("conditions mid-rollout: %+v; want Ready False and Progressing %s", conds, condition.ReasonRollingOut)
	}

	// Nothing changed since: the next round, once the caches show the writes, writes nothing.
	h.sync()
	if _, err := h.round(); err != nil {
		t.Fatal(err)
	}
	if h.statusWrites() != 1 || h.podUpgrades() != 1 {
		t.Errorf("an unchanged round wrote: %d status writes, %d pod upgrades in all", h.statusWrites(), h.podUpgrades())
	}
}

// TestRoundStatusConflict: a status write that conflicts (the cache lags behind the stored
// SidecarSet) re-reads the SidecarSet and writes again.
func TestRoundStatusConflict(t *testing.T) {
	old, ss := newImage(t)
	h := newHarness(t, old, ss)
	conflicts := 1
	h.own.PrependReactor("update", "sidecarsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" || conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: v1alpha1.GroupName, Resource: "sidecarsets"}, ss.Name, errors.New("stale"))
	})
	if _, err := h.round(); err != nil {
		t.Fatal(err)
	}
	if got := h.statusWrites(); got != 2 {
		t.Errorf("%d status writes, want 2 (a conflict, then the write)", got)
	}
	if got := count(h.own, "get", "sidecarsets", ""); got != 1 {
		t.Errorf("%d reads of the SidecarSet, want 1 after the conflict", got)
	}
	if st := h.stored().Status; st.MatchedPods != 2 || st.UpdatedPods != 1 || st.LatestRevision == "" {
		t.Errorf("status after the conflict: %+v", st)
	}
}

// TestRoundEventsFollowStatus: a round records its events only once its status is written, and
// none when the status write fails.
func TestRoundEventsFollowStatus(t *testing.T) {
	for _, statusFails := range []bool{false, true} {
		old, ss := newImage(t)
		h := newHarness(t, old, ss)
		h.kube.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewBadRequest("refused") // an event: SidecarSetPodWriteFailed
		})
		recordedBefore := -1
		h.own.PrependReactor("update", "sidecarsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetSubresource() != "status" {
				return false, nil, nil
			}
			recordedBefore = len(h.events.Events)
			if statusFails {
				return true, nil, apierrors.NewBadRequest("status refused")
			}
			return false, nil, nil
		})
		_, err := h.round()
		if (err != nil) != statusFails {
			t.Fatalf("status fails %v: round error %v", statusFails, err)
		}
		if recordedBefore != 0 {
			t.Errorf("status fails %v: %d events recorded before the status write, want 0", statusFails, recordedBefore)
		}
		events := h.drain()
		if statusFails && len(events) != 0 {
			t.Errorf("a round whose status write failed recorded %q", events)
		}
		failed, created := 0, 0
		for _, e := range events {
			if strings.Contains(e, "SidecarSetPodWriteFailed") {
				failed++
			}
			if strings.Contains(e, "RevisionCreated") {
				created++
			}
		}
		if !statusFails && (len(events) != 2 || failed != 1 || created != 1) {
			t.Errorf("events %q, want one SidecarSetPodWriteFailed and one RevisionCreated", events)
		}
	}
}

// TestRoundRevisionNameCollision: a revision of another spec already holding the name of the
// current spec's revision is a collision: the round records the revision under the next name and
// counts the collision. The same spec under that name is the controller's own write that the
// cache does not show yet: no collision.
func TestRoundRevisionNameCollision(t *testing.T) {
	for _, tc := range []struct {
		name           string
		sameSpec       bool
		wantCollisions int32
	}{
		{"another spec", false, 1},
		{"the same spec, not cached yet", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, ss := newImage(t)
			h := newHarness(t, old, ss)
			taken, err := revision.Name(ss.Name, revision.Snapshot(ss), 0)
			if err != nil {
				t.Fatal(err)
			}
			squatter := history.NewRevision(old, taken, 7)
			squatter.Labels = nil // not one of this SidecarSet's revisions: the cache does not list it
			if tc.sameSpec {
				squatter = history.NewRevision(h.ss, taken, 1)
			}
			if err := h.store.Create(context.Background(), squatter); err != nil {
				t.Fatal(err)
			}
			if _, err := h.round(); err != nil {
				t.Fatal(err)
			}
			want, err := revision.Name(ss.Name, revision.Snapshot(ss), tc.wantCollisions)
			if err != nil {
				t.Fatal(err)
			}
			st := h.stored().Status
			if st.LatestRevision != want || st.CollisionCount == nil || *st.CollisionCount != tc.wantCollisions {
				t.Errorf("latest revision %s, collisions %v; want %s, %d", st.LatestRevision, st.CollisionCount, want, tc.wantCollisions)
			}
			if r, err := h.store.Get(context.Background(), want); err != nil || r.SidecarSetName != ss.Name {
				t.Errorf("revision %s: %v, %v", want, r, err)
			}
		})
	}
}

// TestRoundHoldsThePodsItWrote: after a pod write, the next rounds send nothing to that pod until
// the pod cache shows the write, and count it against maxUnavailable (1 here: the other pod waits
// too): a write that succeeded, one whose outcome is unknown (a timeout) and the server applied,
// and one the server never applied (held until expectationTTL). A write the server refused is
// expected by no one and holds no place: the next round upgrades the other pod, and the refused
// one waits out its backoff (TestRefusedUpgradeWaitsItsBackoff).
func TestRoundHoldsThePodsItWrote(t *testing.T) {
	timeout := apierrors.NewTimeoutError("the request timed out", 1)
	for _, tc := range []struct {
		name string
		// write answers the first pod patch: apply it or not, then fail with err or not.
		apply bool
		err   error
		// hold says whether the next round holds the pod back.
		hold bool
	}{
		{name: "written", apply: true, hold: true},
		{name: "ambiguous, applied", apply: true, err: timeout, hold: true},
		{name: "ambiguous, not applied", err: timeout, hold: true},
		{name: "connection lost, not applied", err: errors.New("connection reset by peer"), hold: true},
		{name: "client deadline, applied", apply: true, err: fmt.Errorf("patch: %w", context.DeadlineExceeded), hold: true},
		{name: "term ended, not applied", err: context.Canceled, hold: true},
		{name: "refused", err: apierrors.NewBadRequest("refused"), hold: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, ss := newImage(t)
			h := newHarness(t, old, ss)
			first := true
			h.kube.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() != "" || !first {
					return false, nil, nil
				}
				first = false
				if tc.apply {
					if _, _, err := h.patchPod(a); err != nil {
						t.Fatal(err)
					}
				}
				if tc.err != nil {
					return true, nil, tc.err
				}
				return h.patchPod(a)
			})
			if _, err := h.round(); err != nil {
				t.Fatal(err)
			}
			upgrades := h.podUpgrades()
			if _, err := h.round(); err != nil { // the pod cache has not changed
				t.Fatal(err)
			}
			if held := h.podUpgrades() == upgrades; held != tc.hold {
				t.Fatalf("the next round held the pod: %v (%d pod patches), want %v", held, h.podUpgrades()-upgrades, tc.hold)
			}
			if !tc.hold {
				if patched := h.podUpgrades() - upgrades; patched != 1 || h.pod("b").Spec.Containers[0].Image == h.pod("a").Spec.Containers[0].Image {
					t.Errorf("after a refused write the next round sent %d pod upgrades, want the other pod's", patched)
				}
				return
			}
			if tc.apply {
				h.sync() // the cache shows the write
				if _, err := h.round(); err != nil {
					t.Fatal(err)
				}
				if got := h.stored().Status.UpdatedPods; got != 1 {
					t.Errorf("once the cache shows the write, updatedPods %d, want 1", got)
				}
				return
			}
			h.clock.Step(expectationTTL + time.Second) // the cache never will show it
			if _, err := h.round(); err != nil {
				t.Fatal(err)
			}
			if h.podUpgrades() != upgrades+1 {
				t.Errorf("once the wait expired, the round sent %d pod patches, want the upgrade again", h.podUpgrades()-upgrades)
			}
		})
	}
}

// TestRoundHoldsOnlyThePodItWrote: a pod whose write the cache does not show holds its own place
// of maxUnavailable (2 here), and the round goes on with the other pods: one unknown outcome does
// not freeze the SidecarSet.
func TestRoundHoldsOnlyThePodItWrote(t *testing.T) {
	old, ss := newImage(t)
	ss.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	ss.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(1)) // the first round takes a alone
	h := newHarness(t, old, ss)
	patched := map[string]int{}
	h.kube.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "" {
			return false, nil, nil
		}
		name := a.(k8stesting.PatchAction).GetName()
		if !strings.Contains(string(a.(k8stesting.PatchAction).GetPatch()), `"spec"`) {
			return false, nil, nil // an upgrade-state write
		}
		patched[name]++
		if name == "a" {
			return true, nil, apierrors.NewTimeoutError("the request timed out", 1) // never applied
		}
		return h.patchPod(a)
	})
	if _, err := h.round(); err != nil {
		t.Fatal(err)
	}
	stored := h.stored()
	stored.Spec.UpdateStrategy.Partition = nil
	if _, err := h.own.AppsV1alpha1().SidecarSets().Update(context.Background(), stored, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.sync()
	if _, err := h.round(); err != nil {
		t.Fatal(err)
	}
	if patched["a"] != 1 || patched["b"] != 1 {
		t.Errorf("pod patches %v: want a once (held after its unknown outcome) and b upgraded meanwhile", patched)
	}
}

// TestSyncPollsUntilInjectionReady: while the SidecarSet's injection is not in place, the status
// does not report its generation as observed and the round looks again after injectionPoll.
func TestSyncPollsUntilInjectionReady(t *testing.T) {
	old, ss := newImage(t)
	h := newHarness(t, old, ss)
	ready := false
	h.c.injectionReady = func(*v1alpha1.SidecarSet) bool { return ready }
	after, err := h.round()
	if err != nil || after != injectionPoll {
		t.Fatalf("not ready: after %v, %v; want %v", after, err, injectionPoll)
	}
	if got := h.stored().Status.ObservedGeneration; got != 0 {
		t.Errorf("observedGeneration %d before injection is ready", got)
	}
	ready = true
	h.sync()
	if after, err := h.round(); err != nil || after == injectionPoll {
		t.Fatalf("ready: after %v, %v", after, err)
	}
	if got := h.stored().Status.ObservedGeneration; got != 2 {
		t.Errorf("observedGeneration %d once injection is ready, want 2", got)
	}
}

// TestSyncInjectionPollsGrow: while the SidecarSet's injection stays not ready, each look waits
// twice as long as the one before, up to maxInjectionPoll (the policy controller's OnChange is
// what brings it back in time); once ready, a later wait starts from a second again.
func TestSyncInjectionPollsGrow(t *testing.T) {
	old, ss := newImage(t)
	h := newHarness(t, old, ss)
	for _, name := range []string{"a", "b"} { // no pod: nothing else to come back for
		if err := h.kube.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ready := false
	h.c.injectionReady = func(*v1alpha1.SidecarSet) bool { return ready }
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second} {
		h.sync()
		if after, err := h.round(); err != nil || after != want {
			t.Fatalf("look %d while not ready: after %v, %v; want %v", i+1, after, err, want)
		}
	}
	ready = true
	h.sync()
	if after, err := h.round(); err != nil || after == 8*time.Second {
		t.Fatalf("ready: after %v, %v", after, err)
	}
	ready = false
	h.sync()
	if after, err := h.round(); err != nil || after != time.Second {
		t.Fatalf("not ready again: after %v, %v; want 1s", after, err)
	}
	h.c.planned = func() bool { return false } // a new term, before its first plan
	h.sync()
	if after, err := h.round(); err != nil || after != 0 {
		t.Fatalf("not ready before the term's first plan (which names it): after %v, %v; want no look again", after, err)
	}
}

// TestSyncInjectionReadyDuringRound: injection that becomes ready during a round, after the round
// decided the status without the generation, brings the SidecarSet back: nothing else would.
func TestSyncInjectionReadyDuringRound(t *testing.T) {
	old, ss := newImage(t)
	h := newHarness(t, old, ss)
	ready := false
	h.c.injectionReady = func(*v1alpha1.SidecarSet) bool { return ready }
	h.own.PrependReactor("update", "sidecarsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			ready = true // the policy controller applies the injection objects meanwhile
		}
		return false, nil, nil
	})
	after, err := h.round()
	if err != nil || after != injectionPoll {
		t.Fatalf("ready during the round: after %v, %v; want %v", after, err, injectionPoll)
	}
	h.sync()
	if _, err := h.round(); err != nil {
		t.Fatal(err)
	}
	if got := h.stored().Status.ObservedGeneration; got != 2 {
		t.Errorf("observedGeneration %d once injection is ready, want 2", got)
	}
}

// TestRoundStorageUnavailable: a status write that fails because the SidecarSet storage does not
// answer does not stop the rollout: the round still upgrades pods, records no event and asks to
// look again soon, as a successful round would, instead of failing into the growing backoff.
// Other status errors still fail the round.
func TestRoundStorageUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		wantErr bool
	}{
		{"service unavailable", apierrors.NewServiceUnavailable("the SidecarSet storage (etcd) is unavailable"), false},
		{"server timeout", apierrors.NewServerTimeout(schema.GroupResource{Group: v1alpha1.GroupName, Resource: "sidecarsets"}, "update", 1), false},
		{"deadline", context.DeadlineExceeded, false},
		{"bad request", apierrors.NewBadRequest("status refused"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, ss := newImage(t)
			h := newHarness(t, old, ss)
			h.own.PrependReactor("update", "sidecarsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
				return a.GetSubresource() == "status", nil, tc.err
			})
			after, err := h.round()
			if (err != nil) != tc.wantErr {
				t.Fatalf("round error %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && after != podsPeriod {
				t.Errorf("look again after %v, want %v", after, podsPeriod)
			}
			if h.podUpgrades() != 1 {
				t.Errorf("%d pods upgraded, want 1", h.podUpgrades())
			}
			if events := h.drain(); len(events) != 0 {
				t.Errorf("events without a status: %q", events)
			}
		})
	}
}

// TestRolloutConditions: Ready is True only once the generation is observed and the rollout is
// done; Progressing says whether the rollout goes on by itself, and why not.
func TestRolloutConditions(t *testing.T) {
	done := rollout.Progress{Total: 2, Updated: 2}
	for _, tc := range []struct {
		name                     string
		p                        rollout.Progress
		observed                 bool
		ready                    metav1.ConditionStatus
		readyReason, progressing string
	}{
		{"done", done, true, metav1.ConditionTrue, condition.ReasonRolloutComplete, condition.ReasonRolloutComplete},
		{"done, injection not in place", done, false, metav1.ConditionFalse, condition.ReasonInjectionNotReady, condition.ReasonRolloutComplete},
		{"rolling out", rollout.Progress{Total: 2, Updated: 1, Waiting: 1}, true, metav1.ConditionFalse, condition.ReasonRollingOut, condition.ReasonRollingOut},
		{"paused", rollout.Progress{Total: 2, Waiting: 2, Paused: true}, true, metav1.ConditionFalse, condition.ReasonRolloutPaused, condition.ReasonRolloutPaused},
		{"failed", rollout.Progress{Total: 1, Failed: []string{"ns/p: ImagePullBackOff"}}, true, metav1.ConditionFalse, condition.ReasonPodsFailed, condition.ReasonPodsFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &v1alpha1.SidecarSetStatus{}
			isReady, _ := condition.SetRollout(st, tc.p, tc.observed, "ss", 3, metav1.Now())
			r, p := meta.FindStatusCondition(st.Conditions, condition.Ready), meta.FindStatusCondition(st.Conditions, condition.Progressing)
			if r.Status != tc.ready || r.Reason != tc.readyReason || p.Reason != tc.progressing || isReady != (tc.ready == metav1.ConditionTrue) || r.ObservedGeneration != 3 {
				t.Errorf("Ready %s/%s (returned %v), Progressing %s; want Ready %s/%s, Progressing %s", r.Status, r.Reason, isReady, p.Reason, tc.ready, tc.readyReason, tc.progressing)
			}
		})
	}
}

// TestRoundPauseEvents: a rollout that becomes paused records Paused, and Resumed once it goes on.
func TestRoundPauseEvents(t *testing.T) {
	for _, tc := range []struct {
		name      string
		was       string // the stored Progressing reason
		paused    bool
		want, not string
	}{
		{"paused", condition.ReasonRollingOut, true, "Paused", "Resumed"},
		{"resumed", condition.ReasonRolloutPaused, false, "Resumed", "Paused"},
		{"still paused", condition.ReasonRolloutPaused, true, "", "Resumed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, ss := newImage(t)
			ss.Spec.UpdateStrategy.Paused = tc.paused
			ss.Status.Conditions = []metav1.Condition{{Type: condition.Progressing, Status: metav1.ConditionTrue, Reason: tc.was, LastTransitionTime: metav1.Now()}}
			h := newHarness(t, old, ss)
			if _, err := h.round(); err != nil {
				t.Fatal(err)
			}
			events := strings.Join(h.drain(), "\n")
			if (tc.want != "" && !strings.Contains(events, "Normal "+tc.want+" ")) || strings.Contains(events, "Normal "+tc.not+" ") {
				t.Errorf("events %q; want %q, not %q", events, tc.want, tc.not)
			}
		})
	}
}

// TestRoundAdoptsImportedRevisions: revisions created without a controller before their SidecarSet
// (kubectl sidecarset migrate imports OpenKruise's history under OpenKruise's names) become its
// history: the one recording the current spec is the latest, nothing new is recorded, and the
// SidecarSet becomes the controller of each.
func TestRoundAdoptsImportedRevisions(t *testing.T) {
	old, ss := newImage(t)
	h := newHarness(t, old, ss)
	imported := func(from *v1alpha1.SidecarSet, name string, n int64) {
		r := history.NewRevision(from, name, n)
		r.OwnerReferences = nil
		if err := h.store.Create(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	imported(old, "okv1", 1)
	imported(h.ss, "okv2", 2)
	h.sync()
	if _, err := h.round(); err != nil {
		t.Fatal(err)
	}
	if st := h.stored().Status; st.LatestRevision != "okv2" {
		t.Errorf("latest revision %q, want the imported okv2", st.LatestRevision)
	}
	revs := h.store.list()
	if len(revs) != 2 {
		t.Errorf("%d revisions, want the 2 imported only", len(revs))
	}
	for _, r := range revs {
		if owner := metav1.GetControllerOf(r); owner == nil || owner.UID != h.ss.UID {
			t.Errorf("revision %s (number %d): controller %+v, want the SidecarSet", r.Name, r.Revision, owner)
		}
	}
	for _, e := range h.drain() {
		if strings.Contains(e, "RevisionCreated") || strings.Contains(e, "RolledBack") {
			t.Errorf("event %q: the imported history should be taken as it is", e)
		}
	}
}

// TestRoundKeepsRevisionsImportedAhead: a round of a SidecarSet that does not exist (yet, or not
// in the cache yet) deletes the revisions a deleted SidecarSet controlled, not those imported
// ahead of it.
func TestRoundKeepsRevisionsImportedAhead(t *testing.T) {
	old, ss := newImage(t)
	h := newHarness(t, old, ss)
	later := old.DeepCopy()
	later.Name, later.UID = "later", "deleted-uid"
	owned, importedRev := history.NewRevision(later, "later-1", 1), history.NewRevision(later, "later-2", 2)
	importedRev.OwnerReferences = nil
	for _, r := range []*v1alpha1.SidecarSetRevision{owned, importedRev} {
		if err := h.store.Create(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	h.sync()
	if _, err := h.c.sync(context.Background(), "later"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.Get(context.Background(), "later-1"); !apierrors.IsNotFound(err) {
		t.Errorf("the revision of the deleted SidecarSet: %v, want it deleted", err)
	}
	if _, err := h.store.Get(context.Background(), "later-2"); err != nil {
		t.Errorf("the revision imported ahead of its SidecarSet: %v, want it kept", err)
	}
}

// TestRoundReadsNotReadyPodsAgain: pod b, the newer, became ready, and the cache does not show it
// yet. The plan from the cache would upgrade b for free (not ready) and a against maxUnavailable 1;
// the round reads b again, plans again, and upgrades b alone: the newer of two ready pods goes
// first, and one pod at a time.
func TestRoundReadsNotReadyPodsAgain(t *testing.T) {
	old, ss := newImage(t)
	h := newHarness(t, old, ss)
	update := func(name string, edit func(*corev1.Pod)) {
		p := h.pod(name)
		edit(p)
		if err := h.kube.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), p, p.Namespace); err != nil {
			t.Fatal(err)
		}
	}
	update("a", func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(-2 * time.Hour)) })
	update("b", func(p *corev1.Pod) {
		p.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour))
		p.Status.Conditions[0].Status = corev1.ConditionFalse
	})
	h.sync()
	update("b", func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionTrue; p.ResourceVersion = "50" })
	if _, err := h.round(); err != nil {
		t.Fatal(err)
	}
	images := map[string]string{}
	for _, name := range []string{"a", "b"} {
		images[name] = inplacetest.Images(h.pod(name))["log"]
	}
	if want := map[string]string{"a": "log:1", "b": "log:2"}; !cmp.Equal(images, want) || h.podUpgrades() != 1 {
		t.Errorf("images %v after %d pod upgrades, want %v after 1", images, h.podUpgrades(), want)
	}
}

// TestRoundUpgradesABoundedBatch: a plan that takes more pods than maxUpgradesPerRound (here
// every pod, at maxUnavailable 100%) is written a batch at a time, the SidecarSet coming back at
// once for the rest: other SidecarSets' rounds get the shared workers and request rate between
// its batches.
func TestRoundUpgradesABoundedBatch(t *testing.T) {
	old, ss := newImage(t)
	ss.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
	h := newHarness(t, old, ss)
	const n = maxUpgradesPerRound + 40 // with a and b
	for i := range n - 2 {
		p := inplacetest.InjectedPod(t, old)
		p.Name, p.UID, p.ResourceVersion = fmt.Sprintf("p-%03d", i), types.UID(fmt.Sprintf("uid-p-%03d", i)), "20"
		if err := h.kube.Tracker().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	h.sync()
	after, err := h.round()
	if err != nil {
		t.Fatal(err)
	}
	if got := h.podUpgrades(); got != maxUpgradesPerRound || after > 10*time.Millisecond {
		t.Fatalf("first round: %d pod upgrades, next round after %v; want %d and at once", got, after, maxUpgradesPerRound)
	}
	h.sync()
	if _, err := h.round(); err != nil {
		t.Fatal(err)
	}
	if got := h.podUpgrades(); got != n {
		t.Errorf("after the second round: %d pod upgrades, want all %d", got, n)
	}
}

// TestRefusedUpgradeWaitsItsBackoff: a pod whose upgrade kube-apiserver refuses (an admission
// policy, a quota) is left to its backoff, holding no place of maxUnavailable (1): rounds go on
// without it, its plan says why, and once the backoff has passed it is tried again.
func TestRefusedUpgradeWaitsItsBackoff(t *testing.T) {
	old, ss := newImage(t)
	h := newHarness(t, old, ss)
	tries := 0
	h.kube.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "" || a.(k8stesting.PatchAction).GetName() != "a" ||
			!strings.Contains(string(a.(k8stesting.PatchAction).GetPatch()), `"spec"`) {
			return false, nil, nil
		}
		tries++
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "a", errors.New("an admission policy refuses it"))
	})
	for range 3 {
		if _, err := h.round(); err != nil {
			t.Fatal(err)
		}
		h.sync()
	}
	if tries != 1 {
		t.Errorf("the refused pod was tried %d times within its backoff, want once", tries)
	}
	if img := h.pod("b").Spec.Containers[0].Image; img == h.pod("a").Spec.Containers[0].Image {
		t.Errorf("the other pod was not upgraded past the refused one (image %s)", img)
	}
	// b restarts for ever in this fake (no kubelet): a second place lets a be tried again.
	stored := h.stored()
	stored.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	if _, err := h.own.AppsV1alpha1().SidecarSets().Update(context.Background(), stored, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.sync()
	h.clock.Step(backoff.Initial + time.Second)
	if _, err := h.round(); err != nil {
		t.Fatal(err)
	}
	if tries != 2 {
		t.Errorf("once its backoff passed, the refused pod was tried %d times, want twice", tries)
	}
}

// TestUpgradeMarksOnlyPodsNotReadyBefore: the notReadyBefore mark says how the pod stood before
// its upgrade. A ready pod whose hot-upgrade sidecar is upgraded (its idle twin takes the new
// image, which a plan reads as not ready for the sidecars) is not marked: it holds its place.
func TestUpgradeMarksOnlyPodsNotReadyBefore(t *testing.T) {
	old, _ := newImage(t)
	ss := inplacetest.SidecarSet(t, inplacetest.Doc, func(ss *v1alpha1.SidecarSet) { ss.Spec.Containers[1].Image = "proxy:2" })
	h := newHarness(t, old, ss)
	if _, err := h.round(); err != nil {
		t.Fatal(err)
	}
	upgraded := 0
	for _, name := range []string{"a", "b"} {
		p := h.pod(name)
		st, ok := sidecar.UpgradeStates(p.Annotations[sidecar.UpgradeStateAnnotation])["ss"]
		if !ok || st.State != string(v1alpha1.PodRolloutUpgrading) {
			continue
		}
		upgraded++
		if st.NotReadyBefore {
			t.Errorf("pod %s, ready before its hot upgrade, is marked notReadyBefore: %+v", name, st)
		}
	}
	if upgraded == 0 {
		t.Fatal("no pod was upgraded")
	}
}
