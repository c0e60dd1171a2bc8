package rollout

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// uninjected edits a pod of newPod into one admitted without the SidecarSet.
func uninjected(p *corev1.Pod) {
	delete(p.Annotations, sidecar.InjectedListAnnotation)
	delete(p.Annotations, sidecar.HashAnnotation)
	delete(p.Annotations, sidecar.HashWithoutImageAnnotation)
	p.Spec.Containers = p.Spec.Containers[:1]
}

func ownedBy(kind string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: "owner", UID: "owner-uid", Controller: ptr.To(true)}}
	}
}

// clusterSets has the cluster SidecarSet mesh, whose sidecar is named like the one of the
// helpers' SidecarSet.
func clusterSets(name string) *v1alpha1.SidecarSet {
	if name != "mesh" {
		return nil
	}
	return newSidecarSet("cluster:1", "c1", "nc1", func(ss *v1alpha1.SidecarSet) { ss.Name = "mesh" })
}

func TestExplainMissed(t *testing.T) {
	ss := newSidecarSet("sidecar:v1", "h1", "nh1", func(ss *v1alpha1.SidecarSet) { ss.CreationTimestamp = metav1.NewTime(t0) })
	at := func(d time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(d)) }
	}
	inNamespace := func(ns string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Namespace = ns } }
	excluded := func(ns string) bool { return ns == "kruise-system" }
	// A NamespacedSidecarSet whose sidecar a cluster SidecarSet's of the same name took the place
	// of (the cluster one wins at injection).
	tenant := newSidecarSet("sidecar:v1", "h1", "nh1", func(ss *v1alpha1.SidecarSet) {
		ss.Name, ss.CreationTimestamp = "team-a.logs", metav1.NewTime(t0)
	})
	carries := func(set string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sidecar", Image: "cluster:1"})
			p.Annotations[sidecar.InjectedListAnnotation] = set
			p.Annotations[sidecar.HashAnnotation] = `{"` + set + `":{"hash":"c1","sidecarSetName":"` + set + `","sidecarList":["sidecar"]}}`
		}
	}
	for _, tc := range []struct {
		name string
		ss   *v1alpha1.SidecarSet
		pod  *corev1.Pod
		want string
	}{
		{"shadowed by a cluster SidecarSet", tenant, newPod("p", tenant, uninjected, at(time.Minute), carries("mesh")), ReasonShadowed},
		{"a namespaced one does not shadow", tenant, newPod("p", tenant, uninjected, at(time.Minute), carries("team-a.other")), ReasonAdmittedWithout},
		{"a cluster SidecarSet is never shadowed", ss, newPod("p", ss, uninjected, at(time.Minute), carries("mesh")), ReasonAdmittedWithout},
		{"created before", ss, newPod("p", ss, uninjected, at(-time.Minute)), ReasonCreatedBefore},
		{"created in the same second", ss, newPod("p", ss, uninjected, at(0)), ReasonCreatedWith},
		{"created after", ss, newPod("p", ss, uninjected, at(time.Minute)), ReasonAdmittedWithout},
		{"excluded namespace, created after", ss, newPod("p", ss, uninjected, at(time.Minute), inNamespace("kruise-system")), ReasonNamespaceExcluded},
		{"excluded namespace, created before", ss, newPod("p", ss, uninjected, at(-time.Minute), inNamespace("kruise-system")), ReasonNamespaceExcluded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ExplainMissed(tc.ss, []*Pod{NewPod(tc.pod)}, excluded, clusterSets)
			if len(got) != 1 || got[0].Reason != tc.want || got[0].Message == "" {
				t.Errorf("ExplainMissed = %+v, want reason %s with a message", got, tc.want)
			}
		})
	}
}

func TestDescribeMissed(t *testing.T) {
	ss := newSidecarSet("sidecar:v1", "h1", "nh1")
	var missed []Missed
	for i, r := range []string{ReasonCreatedBefore, ReasonNamespaceExcluded, ReasonCreatedBefore} {
		missed = append(missed, Missed{Pod: NewPod(newPod(fmt.Sprint("p", i), ss)), Reason: r})
	}
	want := "3 pods the SidecarSet selects run without its sidecars: 2 CreatedBeforeSidecarSet, 1 NamespaceExcluded"
	if got := DescribeMissed(missed); got != want {
		t.Errorf("DescribeMissed = %q, want %q", got, want)
	}
}

// TestRepairs: only with the annotation, injection ready and the rollout not paused; never bare
// pods or pods of excluded namespaces; in name order; at most maxUnavailable (resolved against
// every selected pod) less the pods unavailable, terminating or upgraded this round.
func TestRepairs(t *testing.T) {
	base := func(edit ...func(*v1alpha1.SidecarSet)) *v1alpha1.SidecarSet {
		return newSidecarSet("sidecar:v1", "h1", "nh1", append([]func(*v1alpha1.SidecarSet){func(ss *v1alpha1.SidecarSet) {
			ss.CreationTimestamp = metav1.NewTime(t0.Add(time.Hour))
			ss.Annotations[RepairAnnotation] = "true"
			ss.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("50%"))
		}}, edit...)...)
	}
	missedPods := func(ss *v1alpha1.SidecarSet, names ...string) []*corev1.Pod {
		var out []*corev1.Pod
		for _, n := range names {
			out = append(out, newPod(n, ss, uninjected, ownedBy("ReplicaSet")))
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		ss    *v1alpha1.SidecarSet
		pods  func(ss *v1alpha1.SidecarSet) []*corev1.Pod
		ready bool
		want  []string
	}{
		{"budget: 50% of 4 selected", base(), func(ss *v1alpha1.SidecarSet) []*corev1.Pod { return missedPods(ss, "d", "c", "b", "a") }, true,
			[]string{"a", "b"}},
		{"no annotation", base(func(ss *v1alpha1.SidecarSet) { delete(ss.Annotations, RepairAnnotation) }),
			func(ss *v1alpha1.SidecarSet) []*corev1.Pod { return missedPods(ss, "a", "b") }, true, nil},
		{"injection not ready", base(), func(ss *v1alpha1.SidecarSet) []*corev1.Pod { return missedPods(ss, "a", "b") }, false, nil},
		{"rollout paused", base(func(ss *v1alpha1.SidecarSet) { ss.Spec.UpdateStrategy.Paused = true }),
			func(ss *v1alpha1.SidecarSet) []*corev1.Pod { return missedPods(ss, "a", "b") }, true, nil},
		{"bare pods and excluded namespaces are left alone", base(func(ss *v1alpha1.SidecarSet) {
			ss.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(10))
		}), func(ss *v1alpha1.SidecarSet) []*corev1.Pod {
			return append(missedPods(ss, "c"), newPod("a", ss, uninjected),
				newPod("b", ss, uninjected, ownedBy("ReplicaSet"), func(p *corev1.Pod) { p.Namespace = "kruise-system" }))
		}, true, []string{"c"}},
		{"terminating and unavailable pods use the budget", base(), func(ss *v1alpha1.SidecarSet) []*corev1.Pod {
			now := metav1.NewTime(t0)
			return append(missedPods(ss, "a", "b", "c"),
				newPod("x-terminating", ss, uninjected, ownedBy("ReplicaSet"), func(p *corev1.Pod) { p.DeletionTimestamp = &now }),
				newPod("y-new", ss, func(p *corev1.Pod) { p.Status.Conditions = nil }),
				newPod("z-ok", ss))
		}, true, []string{"a"}}, // 50% of 6 = 3, less 1 terminating, 1 injected not ready
		{"pods a cluster SidecarSet shadows are left alone (they would come back the same)", base(func(ss *v1alpha1.SidecarSet) {
			ss.Name = "team-a.logs"
			ss.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(10))
		}), func(ss *v1alpha1.SidecarSet) []*corev1.Pod {
			return append(missedPods(ss, "a"), newPod("b", ss, uninjected, ownedBy("ReplicaSet"), func(p *corev1.Pod) {
				p.CreationTimestamp = metav1.NewTime(t0.Add(2 * time.Hour)) // after the SidecarSet
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sidecar", Image: "cluster:1"})
				p.Annotations[sidecar.InjectedListAnnotation] = "mesh"
				p.Annotations[sidecar.HashAnnotation] = `{"mesh":{"hash":"c1","sidecarSetName":"mesh","sidecarList":["sidecar"]}}`
			}))
		}, true, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pods []*Pod
			for _, p := range tc.pods(tc.ss) {
				pods = append(pods, NewPod(p))
			}
			plan := Plan(tc.ss, pods)
			excluded := func(ns string) bool { return ns == "kruise-system" }
			got := Repairs(RepairInput{SidecarSet: tc.ss, Plan: plan, Missed: ExplainMissed(tc.ss, plan.NotInjected, excluded, clusterSets), InjectionReady: tc.ready})
			var names []string
			for _, p := range got {
				names = append(names, p.Name)
			}
			if diff := cmp.Diff(tc.want, names); diff != "" {
				t.Errorf("evicted (-want +got):\n%s", diff)
			}
		})
	}
}

// TestInFlight: an eviction holds the budget until its owner has as many active pods as before,
// all ready, or until the TTL passes.
func TestInFlight(t *testing.T) {
	ss := newSidecarSet("sidecar:v1", "h1", "nh1")
	owned := func(name string, edit ...func(*corev1.Pod)) *Pod {
		return NewPod(newPod(name, ss, append([]func(*corev1.Pod){ownedBy("ReplicaSet")}, edit...)...))
	}
	notReady := func(p *corev1.Pod) { p.Status.Conditions = nil }
	now := metav1.NewTime(t0)
	terminating := func(p *corev1.Pod) { p.DeletionTimestamp = &now }
	a, b := owned("a"), owned("b")
	e := NewEviction(a, []*Pod{a, b}, t0)
	if e.Want != 2 || e.Owner != "owner-uid" {
		t.Fatalf("NewEviction = %+v, want 2 pods of owner-uid", e)
	}
	for _, tc := range []struct {
		name     string
		pods     []*Pod
		after    time.Duration
		inFlight bool
	}{
		{"evicted pod terminating", []*Pod{owned("a", terminating), b}, time.Second, true},
		{"evicted pod gone, not replaced", []*Pod{b}, time.Second, true},
		{"replacement not ready", []*Pod{b, owned("c", notReady)}, time.Second, true},
		{"replaced and ready", []*Pod{b, owned("c")}, time.Second, false},
		{"not replaced past the TTL", []*Pod{b}, time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := InFlight([]Eviction{e}, tc.pods, t0.Add(tc.after), 10*time.Minute)
			if (len(got) == 1) != tc.inFlight {
				t.Errorf("in flight: %v, want %v", len(got) == 1, tc.inFlight)
			}
		})
	}
}
