package sidecarset

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/backoff"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/condition"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/inplace/inplacetest"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

// addMissedPod adds a pod the SidecarSet selects, created before it, without its sidecars; owned
// by a ReplicaSet or bare.
func (h *harness) addMissedPod(name string, owned bool) {
	h.t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), ResourceVersion: "30",
		Labels: map[string]string{"app": "web"}, CreationTimestamp: metav1.NewTime(t0.Add(-2 * time.Hour))},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	if owned {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs", Controller: ptr.To(true)}}
	}
	if err := h.kube.Tracker().Add(p); err != nil {
		h.t.Fatal(err)
	}
}

// addReplacement adds a ready pod injected from ss that ReplicaSet "web" created.
func (h *harness) addReplacement(name string, ss *v1alpha1.SidecarSet) {
	h.t.Helper()
	p := inplacetest.InjectedPod(h.t, ss)
	p.Name, p.UID, p.ResourceVersion = name, types.UID("uid-"+name), "40"
	p.CreationTimestamp = metav1.NewTime(t0)
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs", Controller: ptr.To(true)}}
	if err := h.kube.Tracker().Add(p); err != nil {
		h.t.Fatal(err)
	}
}

// newRepairHarness returns a harness whose SidecarSet repairs pods that missed its injection at
// maxUnavailable 1, with two such pods, c and d, owned by ReplicaSet "web".
func newRepairHarness(t *testing.T) (*v1alpha1.SidecarSet, *harness) {
	t.Helper()
	old, _ := newImage(t)
	ss := old.DeepCopy()
	ss.Annotations[rollout.RepairAnnotation] = "true"
	ss.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	h := newHarness(t, old, ss)
	h.addMissedPod("c", true)
	h.addMissedPod("d", true)
	return old, h
}

// onEviction answers each eviction with answer(pod name): nil evicts (deletes) the pod, an error
// refuses the eviction with it.
func (h *harness) onEviction(answer func(name string) error) {
	h.kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		name := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction).Name
		if err := answer(name); err != nil {
			return true, nil, err
		}
		return true, nil, h.kube.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "default", name)
	})
}

// TestRoundRepairsMissedPods: pods created before the SidecarSet are counted in the status and a
// condition; with the repair annotation, the owned ones are evicted one at a time within
// maxUnavailable (1): each only once the cache shows the previous one gone and its ReplicaSet
// replaced it with a ready pod. The bare one never.
func TestRoundRepairsMissedPods(t *testing.T) {
	old, h := newRepairHarness(t)
	h.addMissedPod("e", false)
	var evicted []string
	h.onEviction(func(name string) error {
		evicted = append(evicted, name)
		return nil
	})
	h.sync()

	roundAndCheck := func(wantEvicted []string) {
		t.Helper()
		if _, err := h.round(); err != nil {
			t.Fatal(err)
		}
		if strings.Join(evicted, ",") != strings.Join(wantEvicted, ",") {
			t.Fatalf("evicted %v, want %v", evicted, wantEvicted)
		}
	}
	roundAndCheck([]string{"c"})
	st := h.stored().Status
	cond := meta.FindStatusCondition(st.Conditions, condition.PodsNotInjected)
	if st.NotInjectedPods != 3 || cond == nil || cond.Status != metav1.ConditionTrue ||
		!strings.Contains(cond.Message, "3 pods the SidecarSet selects run without its sidecars: 3 CreatedBeforeSidecarSet") {
		t.Errorf("status: notInjectedPods %d, condition %+v", st.NotInjectedPods, cond)
	}
	if events := strings.Join(h.drain(), "\n"); !strings.Contains(events, "EvictedNotInjected") || strings.Contains(events, " NotInjected ") {
		t.Errorf("events %q: want one EvictedNotInjected and no NotInjected (the pods were created before the SidecarSet)", events)
	}
	roundAndCheck([]string{"c"}) // the cache still shows c: wait
	h.sync()
	roundAndCheck([]string{"c"}) // c is gone but its ReplicaSet has not replaced it yet
	h.addReplacement("c2", old)
	h.sync()
	roundAndCheck([]string{"c", "d"})
	h.addReplacement("d2", old)
	h.sync()
	roundAndCheck([]string{"c", "d"}) // e is bare
	if st := h.stored().Status; st.NotInjectedPods != 1 {
		t.Errorf("notInjectedPods %d, want 1 (the bare pod)", st.NotInjectedPods)
	}
}

// TestMissedConditionClears: the condition turns False once no pod misses the injection, and a
// SidecarSet that never missed one has none.
func TestMissedConditionClears(t *testing.T) {
	now := metav1.NewTime(t0)
	st := &v1alpha1.SidecarSetStatus{}
	condition.SetMissed(st, nil, 1, now)
	if len(st.Conditions) != 0 {
		t.Fatalf("conditions %+v without any missed pod", st.Conditions)
	}
	condition.SetMissed(st, []rollout.Missed{{Pod: &rollout.Pod{Name: "p"}, Reason: rollout.ReasonCreatedBefore}}, 1, now)
	condition.SetMissed(st, nil, 2, now)
	if c := meta.FindStatusCondition(st.Conditions, condition.PodsNotInjected); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "AllInjected" {
		t.Errorf("condition %+v, want False/AllInjected", c)
	}
}

// TestEvictionRefusalsDoNotFreeze: an eviction kube-apiserver refuses (500 for a pod under two
// PodDisruptionBudgets, 429 for one its budget protects now) holds no place of maxUnavailable (1
// here) and freezes nothing: the next round evicts the next pod, and the refused one is tried
// again only after its backoff, whoever leads then.
func TestEvictionRefusalsDoNotFreeze(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refusal error
	}{
		{"two budgets", apierrors.NewInternalError(errors.New("this pod has more than one PodDisruptionBudget, which the eviction subresource does not support"))},
		{"budget exhausted", apierrors.NewTooManyRequests("cannot evict pod as it would violate the pod's disruption budget", 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, h := newRepairHarness(t)
			var tried []string
			h.onEviction(func(name string) error {
				tried = append(tried, name)
				if name == "c" {
					return tc.refusal
				}
				return nil
			})
			h.sync()
			for range 2 {
				if _, err := h.round(); err != nil {
					t.Fatal(err)
				}
			}
			if got := strings.Join(tried, ","); got != "c,d" {
				t.Fatalf("evictions tried %s, want c (refused) then d", got)
			}
			// d's replacement is ready and a new leader takes over: c's backoff, in the status,
			// still holds.
			h.addReplacement("d2", old)
			h.sync()
			h.newTerm()
			if _, err := h.round(); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(tried, ","); got != "c,d" {
				t.Fatalf("evictions tried %s: a new leader tried c again within its backoff", got)
			}
			h.clock.Step(backoff.Initial + time.Second)
			h.sync()
			if _, err := h.round(); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(tried, ","); got != "c,d,c" {
				t.Errorf("evictions tried %s, want c again once its backoff passed", got)
			}
		})
	}
}

// TestEvictionForbiddenIsReported: when the server's ClusterRole lacks pods/eviction (the chart's
// rbac.evictions=false), a SidecarSet that asks for repairs gets a Warning event
// EvictionForbidden saying why, each pod gets SidecarSetPodWriteFailed, the round succeeds and the
// refused pod waits for its backoff: no failing loop.
func TestEvictionForbiddenIsReported(t *testing.T) {
	old, _ := newImage(t)
	ss := old.DeepCopy()
	ss.Annotations[rollout.RepairAnnotation] = "true"
	ss.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	h := newHarness(t, old, ss)
	h.addMissedPod("c", true)
	tries := 0
	h.onEviction(func(string) error {
		tries++
		return apierrors.NewForbidden(corev1.Resource("pods/eviction"), "c",
			errors.New(`User "system:serviceaccount:sidecarset-system:sidecarset-apiserver" cannot create resource "pods/eviction"`))
	})
	h.sync()
	for range 2 {
		if _, err := h.round(); err != nil {
			t.Fatalf("a forbidden eviction fails the round: %v", err)
		}
	}
	if tries != 1 {
		t.Errorf("evictions tried %d times, want once until the backoff passes", tries)
	}
	var reasons []string
	for len(h.events.Events) > 0 {
		e := <-h.events.Events
		if strings.Contains(e, ReasonEvictionForbidden) && !strings.Contains(e, "rbac.evictions") {
			t.Errorf("event %q does not say how to allow evictions", e)
		}
		reasons = append(reasons, strings.Fields(e)[1])
	}
	if !slices.Contains(reasons, ReasonEvictionForbidden) || !slices.Contains(reasons, "SidecarSetPodWriteFailed") {
		t.Errorf("event reasons %v, want EvictionForbidden and SidecarSetPodWriteFailed", reasons)
	}
}

// TestNewTermCountsRecordedEvictions: pod c is evicted for its repair and its ReplicaSet has not
// replaced it yet when a new leader takes over. The eviction is in the status, so the new leader
// counts it against maxUnavailable (1) and evicts d only once c's replacement is ready; it then
// drops the settled eviction from the status.
func TestNewTermCountsRecordedEvictions(t *testing.T) {
	old, h := newRepairHarness(t)
	var evicted []string
	h.onEviction(func(name string) error {
		evicted = append(evicted, name)
		return nil
	})
	h.sync()
	round := func(want ...string) {
		t.Helper()
		if _, err := h.round(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(evicted, want) {
			t.Fatalf("evicted %v, want %v", evicted, want)
		}
	}
	round("c")
	want := []v1alpha1.InFlightEviction{{Namespace: "default", Name: "c", OwnerUID: "rs", OwnerPods: 2, Time: metav1.NewTime(t0)}}
	if diff := cmp.Diff(want, h.stored().Status.InFlightEvictions); diff != "" {
		t.Fatalf("status.inFlightEvictions (-want +got):\n%s", diff)
	}
	h.sync() // c is gone; its ReplicaSet has not replaced it yet
	h.newTerm()
	h.clock.Step(time.Minute)
	round("c")
	h.addReplacement("c2", old)
	h.sync()
	round("c", "d")
	h.addReplacement("d2", old)
	h.sync()
	h.clock.Step(time.Minute)
	h.newTerm()
	round("c", "d")
	if got := h.stored().Status.InFlightEvictions; len(got) != 0 {
		t.Errorf("status.inFlightEvictions %+v once both replacements are ready, want none", got)
	}
}
