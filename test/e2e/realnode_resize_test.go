package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// cpuMem is requests cpu/memory then limits cpu/memory.
func cpuMem(reqCPU, reqMem, limCPU, limMem string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(reqCPU), corev1.ResourceMemory: resource.MustParse(reqMem)},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(limCPU), corev1.ResourceMemory: resource.MustParse(limMem)},
	}
}

// reports says whether a container status reports exactly the cpu and memory of want (values, not
// spellings).
func reports(st *corev1.ContainerStatus, want corev1.ResourceRequirements) bool {
	if st == nil || st.Resources == nil {
		return false
	}
	for _, x := range []struct{ want, got corev1.ResourceList }{{want.Requests, st.Resources.Requests}, {want.Limits, st.Resources.Limits}} {
		for name, q := range x.want {
			got, ok := x.got[name]
			if !ok || got.Cmp(q) != 0 {
				return false
			}
		}
	}
	return true
}

// resourcesPatch sets the resources of sidecar1 and of the native sidecar agent.
func resourcesPatch(r corev1.ResourceRequirements) string {
	res := fmt.Sprintf(`{"requests":{"cpu":%q,"memory":%q},"limits":{"cpu":%q,"memory":%q}}`,
		r.Requests.Cpu().String(), r.Requests.Memory().String(), r.Limits.Cpu().String(), r.Limits.Memory().String())
	return fmt.Sprintf(`{"spec":{"containers":[{"name":"sidecar1","resources":%s}],"initContainers":[{"name":"agent","resources":%s}]}}`, res, res)
}

// TestRealNodeResize: a change of the cpu and memory of a sidecar and of a native sidecar reaches
// three running pods through
// the pod resize subresource, one pod at a time (maxUnavailable 1), without restarting the
// application or the sidecar (resizePolicy NotRequired); the pods' status resources show the new
// values. Then resources no node can fit: kube-apiserver refuses the first pod's resize, the
// rollout stalls there with that reason (the pod holds the budget), and a rollback through
// /rollout recovers.
func TestRealNodeResize(t *testing.T) {
	parallelTest(t, fixtureRealNode)
	requireRealNode(t, false)
	ctx := context.Background()
	const n = 3
	before, after := cpuMem("50m", "32Mi", "100m", "64Mi"), cpuMem("100m", "48Mi", "200m", "96Mi")
	sc := realSidecar("sidecar1", "v1", 8081)
	sc.Resources = before
	sc.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
		{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.NotRequired}}
	native := realSidecar("agent", "v1", 8082)
	native.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	native.Resources, native.ResizePolicy = before, sc.ResizePolicy
	ss := &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "rn-resize"},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rn-resize"}},
			UpdateStrategy: v1alpha1.SidecarSetUpdateStrategy{Type: v1alpha1.RollingUpdateSidecarSetStrategyType, MaxUnavailable: ptr.To(intstr.FromInt32(1))},
			Containers:     []v1alpha1.SidecarContainer{sc},
			InitContainers: []v1alpha1.SidecarContainer{native},
		},
	}
	var pods []*corev1.Pod
	for i := 0; i < n; i++ {
		p := realPod(fmt.Sprintf("rn-resize-%d", i), "rn-resize")
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}}
		pods = append(pods, p)
	}
	started := map[string]map[string]string{} // pod -> container -> containerID
	for _, p := range setupRealNode(t, ss, pods...) {
		started[p.Name] = map[string]string{}
		for _, c := range []string{"app", "sidecar1", "agent"} {
			started[p.Name][c] = sidecar.ContainerStatus(p, c).ContainerID
		}
	}
	good := waitSettled(t, "rn-resize").Status.LatestRevision

	// Every pod state, in order: a pod is being resized while its sidecar1 spec asks what its
	// status does not report yet.
	resizing := func(p *corev1.Pod) bool {
		return !reports(sidecar.ContainerStatus(p, "sidecar1"), sidecar.FindPodContainer(p, "sidecar1").Resources) ||
			!reports(sidecar.ContainerStatus(p, "agent"), sidecar.FindPodContainer(p, "agent").Resources)
	}
	stop := watchCounts(t, "app=rn-resize", resizing)
	patchImage(t, "rn-resize", resourcesPatch(after))
	start := time.Now()
	waitRevisionDone(t, "rn-resize", good, n)
	t.Logf("resize of %d pods at maxUnavailable 1 on the real kubelet: %v", n, time.Since(start).Round(100*time.Millisecond))
	if seen := stop(); seen.max > 1 {
		t.Errorf("%d pods were resized at once (%s), maxUnavailable is 1", seen.max, seen.maxAt)
	} else if seen.max == 0 {
		t.Error("no pod was seen resizing")
	}
	for _, p := range listRealPods(t, "rn-resize") {
		for _, c := range []string{"sidecar1", "agent"} {
			if st := sidecar.ContainerStatus(p, c); !reports(st, after) {
				t.Errorf("pod %s %s status resources %+v, want %+v", p.Name, c, st.Resources, after)
			}
		}
		for _, c := range []string{"app", "sidecar1", "agent"} {
			st := sidecar.ContainerStatus(p, c)
			if st.ContainerID != started[p.Name][c] || st.RestartCount != 0 {
				t.Errorf("pod %s container %s restarted (restartCount %d, containerID %s, was %s)", p.Name, c, st.RestartCount, st.ContainerID, started[p.Name][c])
			}
		}
	}

	// Infeasible: more cpu than the node has.
	resized := waitSettled(t, "rn-resize").Status.LatestRevision
	waitUpgradeStates(t, "rn-resize", map[string]int{"Updated/": n})
	patchImage(t, "rn-resize", resourcesPatch(cpuMem("100", "48Mi", "100", "96Mi")))
	stalled := v1alpha1.SidecarSetStatus{MatchedPods: n, UpdatedPods: 0, ReadyPods: n, UpdatedReadyPods: 0}
	waitStatus(t, "rn-resize", stalled)
	consistently(t, "the infeasible resize stalled", time.Second, 5*time.Second, statusIs(sidecars, "rn-resize", stalled))
	view, err := sidecars.AppsV1alpha1().SidecarSets().GetRollout(ctx, "rn-resize", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]int{}
	for _, p := range view.Status.Pods {
		states[string(p.State)+"/"+p.Reason]++
		if p.Reason == "ResizeInfeasible" && !strings.Contains(p.Message, "cpu") {
			t.Errorf("pod %s: message %q does not say why", p.Name, p.Message)
		}
	}
	// kube-apiserver refuses each pod's resize, which leaves the pod running unchanged: a refused
	// pod holds no place of maxUnavailable, so every pod is tried, and each says why.
	if want := map[string]int{"Failed/ResizeInfeasible": n}; fmt.Sprint(states) != fmt.Sprint(want) {
		t.Errorf("rollout view: states %v, want %v", states, want)
	}
	waitUpgradeStates(t, "rn-resize", map[string]int{"Failed/ResizeInfeasible": n})
	if _, err := sidecars.AppsV1alpha1().SidecarSets().Rollout(ctx, "rn-resize", &v1alpha1.SidecarSetRollout{
		Spec: v1alpha1.SidecarSetRolloutSpec{Action: v1alpha1.RolloutActionRollback, RevisionName: resized}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("rollback to %s: %v", resized, err)
	}
	waitStatus(t, "rn-resize", v1alpha1.SidecarSetStatus{MatchedPods: n, UpdatedPods: n, ReadyPods: n, UpdatedReadyPods: n})
	for _, p := range listRealPods(t, "rn-resize") {
		if st := sidecar.ContainerStatus(p, "sidecar1"); !reports(st, after) || st.RestartCount != 0 {
			t.Errorf("pod %s sidecar1 after the rollback: resources %+v, restartCount %d", p.Name, st.Resources, st.RestartCount)
		}
	}
}

// waitRevisionDone waits until the SidecarSet's latest revision is not old and its n pods are
// updated and ready at the observed generation.
func waitRevisionDone(t *testing.T, name, old string, n int32) {
	t.Helper()
	eventually(t, "the rollout of "+name, rolloutTimeout, func(ctx context.Context) (bool, string) {
		cur, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		s := cur.Status
		return s.LatestRevision != old && s.ObservedGeneration == cur.Generation && s.UpdatedReadyPods == n && s.UpdatedPods == n && s.ReadyPods == n,
			fmt.Sprintf("generation %d, status %+v", cur.Generation, s)
	})
}

// counts are the most and the fewest pods a watch saw in a state at once, with their names.
type counts struct {
	max, min     int
	maxAt, minAt string
}

// watchCounts watches the real node's pods selected by selector and records how many were in
// state at once, at most and at least, from each pod event on; stop ends the watch and returns
// them.
func watchCounts(t *testing.T, selector string, state func(*corev1.Pod) bool) (stop func() counts) {
	t.Helper()
	ctx := context.Background()
	list, err := kube.CoreV1().Pods(realNodeNamespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	w, err := kube.CoreV1().Pods(realNodeNamespace).Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := counts{min: len(list.Items) + 1}
	done := make(chan struct{})
	go func() {
		defer close(done)
		pods := map[string]*corev1.Pod{}
		for i := range list.Items {
			pods[list.Items[i].Name] = &list.Items[i]
		}
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if ev.Type == watch.Deleted {
				delete(pods, p.Name)
			} else {
				pods[p.Name] = p
			}
			var names []string
			for _, q := range pods {
				if state(q) {
					names = append(names, q.Name)
				}
			}
			mu.Lock()
			if len(names) > seen.max {
				seen.max, seen.maxAt = len(names), strings.Join(names, ",")
			}
			if len(names) < seen.min {
				seen.min, seen.minAt = len(names), strings.Join(names, ",")
			}
			mu.Unlock()
		}
	}()
	return func() counts {
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// waitUpgradeStates waits until the pods labelled app=<name> on the real node carry, in their
// upgrade-state annotation, SidecarSet name's states (state/reason) in the given numbers.
func waitUpgradeStates(t *testing.T, name string, want map[string]int) {
	t.Helper()
	eventually(t, "the upgrade states of "+name+"'s pods", time.Minute, func(ctx context.Context) (bool, string) {
		got := map[string]int{}
		for _, p := range listRealPods(t, name) {
			st := sidecar.UpgradeStates(p.Annotations[sidecar.UpgradeStateAnnotation])[name]
			got[st.State+"/"+st.Reason]++
		}
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprintf("states %v, want %v", got, want)
	})
}
