package rollout

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

func resources(reqCPU, reqMem, limCPU, limMem string) corev1.ResourceRequirements {
	list := func(cpu, mem string) corev1.ResourceList {
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		if len(l) == 0 {
			return nil
		}
		return l
	}
	return corev1.ResourceRequirements{Requests: list(reqCPU, reqMem), Limits: list(limCPU, limMem)}
}

func withResources(r corev1.ResourceRequirements) func(*v1alpha1.SidecarSet) {
	return func(ss *v1alpha1.SidecarSet) { ss.Spec.Containers[0].Resources = r }
}

// TestPlanResize plans pods injected from v1 (sidecar at 100m/32Mi, limits 200m/64Mi) under v2,
// whose sidecar differs in resources (and image) only.
func TestPlanResize(t *testing.T) {
	v1Res := resources("100m", "32Mi", "200m", "64Mi")
	v1 := newSidecarSet("sidecar:1", "h1", "n1", withResources(v1Res))
	resizable := Options{ResizableRevisions: map[string]bool{v1.Status.LatestRevision: true}}
	cases := []struct {
		name          string
		v2            corev1.ResourceRequirements
		image         string
		opts          Options
		wantState     v1alpha1.PodRolloutState
		wantWhy       string
		resize        bool
		guaranteedApp bool
		noStatus      bool // the kubelet reports no container resources
	}{
		{"resources, the cluster resizes", resources("150m", "48Mi", "300m", "96Mi"), "sidecar:1", resizable, v1alpha1.PodRolloutUpgrading, ReasonSelected, true, false, false},
		{"image and resources", resources("150m", "48Mi", "300m", "96Mi"), "sidecar:2", resizable, v1alpha1.PodRolloutUpgrading, ReasonSelected, true, false, false},
		{"another revision", resources("150m", "48Mi", "300m", "96Mi"), "sidecar:1", Options{ResizableRevisions: map[string]bool{"ss-other": true}}, v1alpha1.PodRolloutNotUpgradable, ReasonImmutableField, false, false, false},
		{"no options: as before", resources("150m", "48Mi", "300m", "96Mi"), "sidecar:1", Options{}, v1alpha1.PodRolloutNotUpgradable, ReasonImmutableField, false, false, false},
		{"the cluster cannot resize", resources("150m", "48Mi", "300m", "96Mi"), "sidecar:1",
			Options{ResizableRevisions: resizable.ResizableRevisions, ResizeUnsupported: "no pods/resize"}, v1alpha1.PodRolloutNotUpgradable, ReasonResizeUnsupported, false, false, false},
		{"a limit removed", resources("150m", "48Mi", "300m", ""), "sidecar:1", resizable, v1alpha1.PodRolloutNotUpgradable, ReasonResizeRefused, false, false, false},
		{"QoS class changes", resources("300m", "96Mi", "300m", "96Mi"), "sidecar:1", resizable, v1alpha1.PodRolloutNotUpgradable, ReasonResizeRefused, false, true, false},
		{"the node cannot resize", resources("150m", "48Mi", "300m", "96Mi"), "sidecar:1", resizable, v1alpha1.PodRolloutNotUpgradable, ReasonResizeUnsupported, false, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			app := resources("1", "1Gi", "", "") // Burstable, as the sidecar
			if tc.guaranteedApp {
				app = resources("1", "1Gi", "1", "1Gi")
			}
			pod := NewPod(newPod("p", v1, func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources = app
				for i := range p.Status.ContainerStatuses {
					if st := &p.Status.ContainerStatuses[i]; tc.noStatus {
						st.Resources = nil
					} else if st.Name == "app" {
						st.Resources = app.DeepCopy()
					}
				}
			}))
			v2 := withVersion(v1, tc.image, "h2", "n2")
			v2.Spec.Containers[0].Resources = tc.v2
			res := PlanWith(v2, []*Pod{pod}, tc.opts)
			got := res.Pods[0]
			if got.State != tc.wantState || got.Reason != tc.wantWhy {
				t.Fatalf("state %s/%s (%s), want %s/%s", got.State, got.Reason, got.Message, tc.wantState, tc.wantWhy)
			}
			if res.Resize[pod] != tc.resize {
				t.Errorf("resize %v, want %v", res.Resize[pod], tc.resize)
			}
			if got.State == v1alpha1.PodRolloutNotUpgradable && got.Message == "" {
				t.Error("a pod that is not upgradable says why")
			}
		})
	}
}

// TestPlanResizeProgress plans a pod whose sidecar spec already asks the new resources, as the
// kubelet reports the resize.
func TestPlanResizeProgress(t *testing.T) {
	newRes := resources("150m", "48Mi", "300m", "96Mi")
	oldRes := resources("100m", "32Mi", "200m", "64Mi")
	ss := newSidecarSet("sidecar:1", "h2", "n2", withResources(newRes))
	cond := func(kind corev1.PodConditionType, reason, msg string) corev1.PodCondition {
		return corev1.PodCondition{Type: kind, Status: corev1.ConditionTrue, Reason: reason, Message: msg}
	}
	cases := []struct {
		name       string
		status     *corev1.ResourceRequirements
		conditions []corev1.PodCondition
		want       v1alpha1.PodRolloutState
		why        string
		available  bool
	}{
		{"status reports the new resources", &newRes, nil, v1alpha1.PodRolloutUpdated, "", true},
		{"kubelet reports no resources", nil, nil, v1alpha1.PodRolloutUpdated, "", true},
		{"not applied yet", &oldRes, nil, v1alpha1.PodRolloutUpgrading, ReasonResizing, false},
		{"in progress", &oldRes, []corev1.PodCondition{cond(corev1.PodResizeInProgress, "", "")}, v1alpha1.PodRolloutUpgrading, ReasonResizing, false},
		{"deferred", &oldRes, []corev1.PodCondition{cond(corev1.PodResizePending, corev1.PodReasonDeferred, "Node didn't have enough resource: cpu")}, v1alpha1.PodRolloutUpgrading, ReasonResizeDeferred, false},
		{"infeasible", &oldRes, []corev1.PodCondition{cond(corev1.PodResizePending, corev1.PodReasonInfeasible, "Node didn't have enough capacity: cpu, requested: 100000, capacity: 2000")}, v1alpha1.PodRolloutFailed, ReasonResizeInfeasible, false},
		{"failed", &oldRes, []corev1.PodCondition{cond(corev1.PodResizeInProgress, corev1.PodReasonError, "boom")}, v1alpha1.PodRolloutFailed, ReasonResizeError, false},
		{"the app's own resize is not the rollout's", &newRes, []corev1.PodCondition{cond(corev1.PodResizePending, corev1.PodReasonDeferred, "")}, v1alpha1.PodRolloutUpdated, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := NewPod(newPod("p", ss, func(p *corev1.Pod) {
				for i := range p.Status.ContainerStatuses {
					if st := &p.Status.ContainerStatuses[i]; st.Name == "sidecar" {
						st.Resources = tc.status.DeepCopy()
					}
				}
				p.Status.Conditions = append(p.Status.Conditions, tc.conditions...)
			}))
			res := PlanWith(ss, []*Pod{pod}, Options{})
			got := res.Pods[0]
			if diff := cmp.Diff([]string{string(tc.want), tc.why}, []string{string(got.State), got.Reason}); diff != "" {
				t.Fatalf("state (-want +got):\n%s (message %q)", diff, got.Message)
			}
			if avail := res.Unavailable == 0; avail != tc.available {
				t.Errorf("available %v, want %v", avail, tc.available)
			}
			if len(tc.conditions) > 0 && tc.conditions[0].Message != "" && !tc.available && !strings.Contains(got.Message, tc.conditions[0].Message) {
				t.Errorf("message %q does not carry the kubelet's %q", got.Message, tc.conditions[0].Message)
			}
		})
	}
}

// TestPlanResizeRefused: a pod whose resize kube-apiserver refused lately fails with its message
// and holds no place of maxUnavailable (it runs on unchanged; a namespace's quota may be what
// refused it): the next pod is upgraded.
func TestPlanResizeRefused(t *testing.T) {
	v1 := newSidecarSet("sidecar:1", "h1", "n1", withResources(resources("100m", "32Mi", "200m", "64Mi")))
	v2 := withVersion(v1, "sidecar:1", "h2", "n2")
	v2.Spec.Containers[0].Resources = resources("100", "32Mi", "100", "64Mi")
	v2.Spec.UpdateStrategy.MaxUnavailable = intOrStr("1")
	var pods []*Pod
	for _, name := range []string{"a", "b", "c"} {
		pods = append(pods, NewPod(newPod(name, v1, func(p *corev1.Pod) { p.Spec.Containers[0].Resources = resources("1", "1Gi", "", "") })))
	}
	opts := Options{ResizableRevisions: map[string]bool{v1.Status.LatestRevision: true},
		ResizeRefused: map[types.UID]string{pods[0].UID: "node didn't have enough allocatable resources: cpu"}}
	res := PlanWith(v2, pods, opts)
	states := map[string]string{}
	for _, pp := range res.Pods {
		states[pp.Pod.Name] = string(pp.State) + "/" + pp.Reason
	}
	want := map[string]string{"a": "Failed/" + ReasonResizeInfeasible, "b": "Upgrading/" + ReasonSelected, "c": "Waiting/" + ReasonMaxUnavailable}
	if diff := cmp.Diff(want, states); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	if len(res.Upgrade) != 1 || res.Unavailable != 0 {
		t.Errorf("upgrade %d pods, %d unavailable; want 1 and none", len(res.Upgrade), res.Unavailable)
	}
	if !strings.Contains(res.Pods[0].Message, "allocatable") {
		t.Errorf("message %q does not carry kube-apiserver's", res.Pods[0].Message)
	}
}
