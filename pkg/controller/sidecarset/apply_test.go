package sidecarset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/event"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/inplace/inplacetest"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/metric"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

// TestApplySkipsAFailingPod: a pod whose status patch fails (marking it not upgradable) and a pod
// whose update fails are skipped and reported; the other pod of the round is still upgraded.
func TestApplySkipsAFailingPod(t *testing.T) {
	old := inplacetest.SidecarSet(t, inplacetest.Doc, nil)
	ss := inplacetest.SidecarSet(t, inplacetest.Doc, func(ss *v1alpha1.SidecarSet) { ss.Spec.Containers[0].Image = "log:2" })
	pod := func(name string) *corev1.Pod {
		p := inplacetest.InjectedPod(t, old)
		p.Name, p.UID = name, types.UID("uid-"+name)
		return p
	}
	stuck, broken, good := pod("stuck"), pod("broken"), pod("good")
	kube := fake.NewClientset(stuck, broken, good)
	kube.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch p := a.(k8stesting.PatchAction); {
		case p.GetName() == "stuck" && p.GetSubresource() == "status":
			return true, nil, errors.New("status patch refused")
		case p.GetName() == "broken" && p.GetSubresource() == "":
			return true, nil, errors.New("patch refused")
		}
		return false, nil, nil
	})
	events := record.NewFakeRecorder(10)
	clk := clocktesting.NewFakeClock(t0)
	c := &Controller{kube: kube, clock: clk, recorder: events, expect: newExpectations(clk), metrics: metric.New(clk)}
	plan := &rollout.Result{
		NotUpgradable: []*rollout.Pod{rollout.NewPod(stuck)},
		Upgrade:       []*rollout.Pod{rollout.NewPod(broken), rollout.NewPod(good)},
	}
	out := c.apply(context.Background(), ss, plan)
	written, failed := out.written, out.failed
	if len(written) != 1 || written[0].Name != "good" {
		t.Fatalf("written %d pods, want only good", len(written))
	}
	if inplacetest.Images(written[0])["log"] != "log:2" {
		t.Errorf("good was not upgraded: %v", inplacetest.Images(written[0]))
	}
	got := map[string]string{}
	for _, f := range failed {
		got[f.pod.Name] = f.action
	}
	if got["stuck"] != actionMarkNotUpgradable || got["broken"] != actionUpgrade || len(got) != 2 {
		t.Fatalf("failures %v", got)
	}
	event.Record(c.recorder, c.reportFailures(ss, failed))
	for range 2 {
		if e := <-events.Events; !strings.Contains(e, "SidecarSetPodWriteFailed") {
			t.Errorf("event %q", e)
		}
	}
}

// TestOwnedPatch: the patch carries the changed image and the resourceVersion read, and not the
// fields nothing changed.
func TestOwnedPatch(t *testing.T) {
	ss := inplacetest.SidecarSet(t, inplacetest.Doc, nil)
	before := inplacetest.InjectedPod(t, ss)
	before.ResourceVersion = "42"
	after := before.DeepCopy()
	after.Spec.Containers[1].Image = "log:2"
	patch, err := ownedPatch(before, after)
	if err != nil {
		t.Fatal(err)
	}
	got := string(patch)
	for _, want := range []string{`"resourceVersion":"42"`, `"image":"log:2"`} {
		if !strings.Contains(got, want) {
			t.Errorf("patch %s lacks %s", got, want)
		}
	}
	for _, unwanted := range []string{`"app:1"`, `"nodeName"`, `"status"`} {
		if strings.Contains(got, unwanted) {
			t.Errorf("patch %s carries %s, which did not change", got, unwanted)
		}
	}
}

// TestUpgradeReadsReadinessAgain: the plan takes pods the cache shows not ready without
// maxUnavailable (here 0). A pod that became ready after the round's read of it is left to a
// later round: its first read (from kube-apiserver's watch cache) still shows it not ready, its
// patch conflicts, and the read after the conflict shows it ready. A pod still not ready is
// upgraded. With a resize planned, the resize is left too.
func TestUpgradeReadsReadinessAgain(t *testing.T) {
	for _, resize := range []bool{false, true} {
		t.Run(fmt.Sprintf("resize %v", resize), func(t *testing.T) { testUpgradeReadsReadinessAgain(t, resize) })
	}
}

func testUpgradeReadsReadinessAgain(t *testing.T, resize bool) {
	requests := func(cpu string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
	old := inplacetest.SidecarSet(t, inplacetest.Doc, func(ss *v1alpha1.SidecarSet) { ss.Spec.Containers[0].Resources.Requests = requests("100m") })
	ss := inplacetest.SidecarSet(t, inplacetest.Doc, func(ss *v1alpha1.SidecarSet) {
		ss.Spec.Containers[0].Image = "log:2"
		ss.Spec.Containers[0].Resources.Requests = requests("100m")
		zero := intstr.FromInt32(0)
		ss.Spec.UpdateStrategy.MaxUnavailable = &zero
	})
	pod := func(name, rv string, ready bool) *corev1.Pod {
		p := inplacetest.InjectedPod(t, old)
		p.Name, p.UID, p.ResourceVersion = name, types.UID("uid-"+name), rv
		if !ready {
			p.Status.Conditions[0].Status = corev1.ConditionFalse
		}
		return p
	}
	stale := pod("late", "1", false)
	kube := fake.NewClientset(pod("late", "2", true), pod("still", "1", false))
	reads := 0
	kube.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.GetAction).GetName() != "late" {
			return false, nil, nil
		}
		reads++
		if reads == 1 {
			return true, stale.DeepCopy(), nil
		}
		return false, nil, nil
	})
	var resizes []string
	kube.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		if p.GetName() == "late" && strings.Contains(string(p.GetPatch()), `"resourceVersion":"1"`) {
			return true, nil, apierrors.NewConflict(corev1.Resource("pods"), "late", errors.New("resourceVersion 1 is not 2"))
		}
		if p.GetSubresource() == "resize" {
			resizes = append(resizes, p.GetName())
		}
		return false, nil, nil
	})
	plan := rollout.Plan(ss, []*rollout.Pod{rollout.NewPod(stale), rollout.NewPod(pod("still", "1", false))})
	if len(plan.Upgrade) != 2 || len(plan.Unbudgeted) != 2 {
		t.Fatalf("plan upgrades %d pods, %d of them without the budget; want 2 and 2", len(plan.Upgrade), len(plan.Unbudgeted))
	}
	if resize { // the plan's resize, without the revision history the planner reads to allow it
		ss.Spec.Containers[0].Resources.Requests = requests("200m")
		plan.Resize = map[*rollout.Pod]bool{plan.Upgrade[0]: true, plan.Upgrade[1]: true}
	}
	clk := clocktesting.NewFakeClock(t0)
	c := &Controller{kube: kube, clock: clk, recorder: record.NewFakeRecorder(10), expect: newExpectations(clk), metrics: metric.New(clk)}
	out := c.apply(context.Background(), ss, plan)
	if len(out.failed) != 0 {
		for _, f := range out.failed {
			t.Errorf("%s: %s: %v", f.pod.Name, f.action, f.err)
		}
		t.FailNow()
	}
	if len(out.written) != 1 || out.written[0].Name != "still" {
		t.Fatalf("written %v, want only still", podNames(out.written))
	}
	if len(out.left) != 1 || out.left[0].Name != "late" {
		t.Fatalf("left %d pods, want late", len(out.left))
	}
	if reads != 2 {
		t.Errorf("late was read %d times, want 2 (the stale read, and the read after the conflict)", reads)
	}
	if want := map[bool][]string{true: {"still"}}[resize]; !slices.Equal(resizes, want) {
		t.Errorf("resized %v, want %v", resizes, want)
	}
	for name, want := range map[string]string{"late": "log:1", "still": "log:2"} {
		p, err := kube.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := inplacetest.Images(p)["log"]; got != want {
			t.Errorf("pod %s runs %s, want %s", name, got, want)
		}
	}
}

func podNames(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}
