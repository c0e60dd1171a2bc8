package podcache

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/inplace"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/inplace/inplacetest"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

func TestCachePodKeepsWhatPlanningReads(t *testing.T) {
	ss := inplacetest.SidecarSet(t, inplacetest.Doc, nil)
	pod := inplacetest.InjectedPod(t, ss)
	pod.Status.Conditions = append(pod.Status.Conditions,
		corev1.PodCondition{Type: sidecar.UpgradableCondition, Status: corev1.ConditionFalse,
			Reason: sidecar.NotUpgradableReason, Message: `{"ss":false}`},
		corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, Message: "dropped"})
	obj, err := Transform(pod)
	if err != nil {
		t.Fatal(err)
	}
	cached := obj.(*rollout.Pod)
	if again, _ := Transform(cached); again != obj {
		t.Error("Transform must pass its own output unchanged")
	}
	cond, changed := inplace.UpgradableCondition(cached.Upgradable(), "ss", false, inplacetest.T0)
	if changed || cond.Message != `{"ss":false}` {
		t.Errorf("the SidecarSetUpgradable message must be cached: %v %s", changed, cond.Message)
	}
	v2 := inplacetest.SidecarSet(t, inplacetest.Doc, func(ss *v1alpha1.SidecarSet) { ss.Spec.Containers[0].Image = "log:2" })
	for _, s := range []*v1alpha1.SidecarSet{ss, v2} {
		res := rollout.Plan(s, []*rollout.Pod{cached})
		if res.Counts.Matched != 1 || len(res.Pods) != 1 {
			t.Fatalf("plan of %s on the cached pod: %+v", s.Spec.Containers[0].Image, res.Counts)
		}
	}
	if res := rollout.Plan(v2, []*rollout.Pod{cached}); len(res.Upgrade) != 1 || res.Counts.Updated != 0 {
		t.Errorf("the cached pod must be upgradable to v2: %+v %+v", res.Counts, res.Pods[0])
	}
}
