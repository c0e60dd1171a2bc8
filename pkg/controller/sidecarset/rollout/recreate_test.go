package rollout

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestPlanRecreate plans pods injected from v1 under v2, whose sidecar env changed (no in-place
// upgrade can apply it), with and without apps.kruise.io/recreate-not-upgradable.
func TestPlanRecreate(t *testing.T) {
	v1 := newSidecarSet("sidecar:1", "h1", "n1")
	cases := []struct {
		name     string
		edit     func(*v1alpha1.SidecarSet)
		bare     bool
		inFlight int
		want     []string // pods evicted this round
	}{
		{name: "not asked", edit: func(ss *v1alpha1.SidecarSet) { delete(ss.Annotations, RecreateAnnotation) }},
		{name: "one at a time", want: []string{"p0"}},
		{name: "maxUnavailable 2", edit: func(ss *v1alpha1.SidecarSet) { ss.Spec.UpdateStrategy.MaxUnavailable = intOrStr("2") }, want: []string{"p0", "p1"}},
		{name: "an eviction in flight", inFlight: 1},
		{name: "paused", edit: func(ss *v1alpha1.SidecarSet) { ss.Spec.UpdateStrategy.Paused = true }},
		{name: "partition keeps 2 of 3", edit: func(ss *v1alpha1.SidecarSet) {
			ss.Spec.UpdateStrategy.MaxUnavailable = intOrStr("3")
			ss.Spec.UpdateStrategy.Partition = intOrStr("2")
		}, want: []string{"p0"}},
		{name: "bare pods never", bare: true},
		{name: "priority first", edit: func(ss *v1alpha1.SidecarSet) {
			ss.Spec.UpdateStrategy.PriorityStrategy = &v1alpha1.UpdatePriorityStrategy{OrderPriority: []v1alpha1.UpdatePriorityOrderTerm{{OrderedKey: "order"}}}
		}, want: []string{"p2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v2 := withVersion(v1, "sidecar:1", "h2", "n2")
			v2.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "LEVEL", Value: "debug"}}
			v2.Spec.UpdateStrategy.MaxUnavailable = intOrStr("1")
			v2.Annotations[RecreateAnnotation] = "true"
			if tc.edit != nil {
				tc.edit(v2)
			}
			var pods []*Pod
			for i, name := range []string{"p0", "p1", "p2"} {
				opts := []func(*corev1.Pod){labelled("order", []string{"1", "2", "3"}[i])}
				if !tc.bare {
					opts = append(opts, ownedBy("ReplicaSet"))
				}
				pods = append(pods, NewPod(newPod(name, v1, opts...)))
			}
			res := PlanWith(v2, pods, Options{InFlightEvictions: tc.inFlight})
			var got []string
			for _, p := range res.Recreate {
				got = append(got, p.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("recreated (-want +got):\n%s", diff)
			}
			for _, pp := range res.Pods {
				recreating := pp.Reason == ReasonRecreating
				if recreating != slices.Contains(got, pp.Pod.Name) {
					t.Errorf("pod %s: state %s/%s", pp.Pod.Name, pp.State, pp.Reason)
				}
				if pp.Message == "" {
					t.Errorf("pod %s: no message", pp.Pod.Name)
				}
			}
			if len(res.Upgrade) != 0 {
				t.Errorf("%d pods upgraded in place", len(res.Upgrade))
			}
		})
	}
}
