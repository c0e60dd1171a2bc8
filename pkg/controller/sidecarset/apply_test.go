package sidecarset

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/inplace/inplacetest"
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
	c := &Controller{kube: kube, clock: clk, recorder: events, expect: newExpectations(clk), metrics: newProgress(clk)}
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
	c.record(c.reportFailures(ss, failed))
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
// maxUnavailable (here 0). A pod kube-apiserver shows ready by the time of the write (its kubelet's
// update not yet in the cache) is left alone: upgrading it would make a ready pod unavailable
// beyond the budget. A pod still not ready is upgraded.
func TestUpgradeReadsReadinessAgain(t *testing.T) {
	old := inplacetest.SidecarSet(t, inplacetest.Doc, nil)
	ss := inplacetest.SidecarSet(t, inplacetest.Doc, func(ss *v1alpha1.SidecarSet) {
		ss.Spec.Containers[0].Image = "log:2"
		zero := intstr.FromInt32(0)
		ss.Spec.UpdateStrategy.MaxUnavailable = &zero
	})
	pod := func(name string, ready bool) *corev1.Pod {
		p := inplacetest.InjectedPod(t, old)
		p.Name, p.UID = name, types.UID("uid-"+name)
		if !ready {
			p.Status.Conditions[0].Status = corev1.ConditionFalse
		}
		return p
	}
	kube := fake.NewClientset(pod("late", true), pod("still", false))
	plan := rollout.Plan(ss, []*rollout.Pod{rollout.NewPod(pod("late", false)), rollout.NewPod(pod("still", false))})
	if len(plan.Upgrade) != 2 || len(plan.Unbudgeted) != 2 {
		t.Fatalf("plan upgrades %d pods, %d of them without the budget; want 2 and 2", len(plan.Upgrade), len(plan.Unbudgeted))
	}
	clk := clocktesting.NewFakeClock(t0)
	c := &Controller{kube: kube, clock: clk, recorder: record.NewFakeRecorder(10), expect: newExpectations(clk), metrics: newProgress(clk)}
	out := c.apply(context.Background(), ss, plan)
	if len(out.failed) != 0 {
		t.Fatalf("failures: %v", out.failed)
	}
	if len(out.written) != 1 || out.written[0].Name != "still" {
		t.Fatalf("written %d pods, want only still", len(out.written))
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
