package pull

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/inplace/inplacetest"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
	"github.com/sidecarset/apiserver/pkg/predownload"
)

// TestRound: a round of a SidecarSet with pre-download at parallelism 1 over three pods
// to upgrade, on nodes n1 (which lists the new image), n2 and n3. The pod on n1 is PreDownloaded;
// a pull pod starts for n2, the first other pod in order; both the n2 and n3 pods are held.
// The next round, n2's pull pod has ended: it is deleted, n2's pod is PreDownloaded, n3's pull
// starts. A third round, n3's pull failed: deleted, a PreDownloadFailed event, nothing held.
func TestRound(t *testing.T) {
	ctx := context.Background()
	old := inplacetest.SidecarSet(t, inplacetest.Doc, nil)
	ss := inplacetest.SidecarSet(t, inplacetest.Doc, func(ss *v1alpha1.SidecarSet) {
		ss.Spec.Containers[0].Image = "log:2"
		ss.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
	})
	ss.Annotations[predownload.ParallelismAnnotation] = "1" // after the fixture stamps its annotations
	var upcoming []*rollout.Pod
	for _, node := range []string{"n1", "n2", "n3"} {
		p := inplacetest.InjectedPod(t, old)
		p.Name, p.UID, p.Spec.NodeName = "p"+node, types.UID("uid-"+node), node
		upcoming = append(upcoming, rollout.NewPod(p))
	}
	n1 := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"docker.io/library/log:2"}}}}}
	kube := fake.NewClientset()
	clk := clocktesting.NewFakeClock(inplacetest.T0)
	d, err := New(kube, "sidecarset-system", clk)
	if err != nil {
		t.Fatal(err)
	}
	node, _ := nodeImagesOnly(n1)
	if err := d.nodes.GetStore().Add(node); err != nil {
		t.Fatal(err)
	}
	plan := &rollout.Result{Upcoming: upcoming, Counts: rollout.Counts{Matched: 3}}

	sync := func() { // the informer's store follows the cluster
		t.Helper()
		list, err := kube.CoreV1().Pods("sidecarset-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var objs []interface{}
		for i := range list.Items {
			if p := &list.Items[i]; p.CreationTimestamp.IsZero() { // as kube-apiserver stamps it
				p.CreationTimestamp = metav1.NewTime(clk.Now())
				if _, err := kube.CoreV1().Pods(p.Namespace).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			objs = append(objs, &list.Items[i])
		}
		if err := d.pulls.GetStore().Replace(objs, ""); err != nil {
			t.Fatal(err)
		}
	}
	round := func() ([]string, map[types.UID]bool) {
		t.Helper()
		sync()
		opts := rollout.Options{}
		events, _ := d.Round(ctx, ss, plan, &opts)
		var reasons []string
		for _, e := range events {
			reasons = append(reasons, e.Reason)
		}
		sync()
		return reasons, opts.PreDownloading
	}
	pullNodes := func() []string {
		var out []string
		for _, obj := range d.pulls.GetStore().List() {
			p := obj.(*corev1.Pod)
			out = append(out, p.Spec.NodeName+" "+p.Spec.Containers[0].Image+" "+p.Spec.ImagePullSecrets[0].Name)
		}
		sort.Strings(out)
		return out
	}
	setPhase := func(phase corev1.PodPhase, st *corev1.ContainerStatus) {
		for _, obj := range d.pulls.GetStore().List() {
			p := obj.(*corev1.Pod).DeepCopy()
			p.Status.Phase = phase
			if st != nil {
				p.Status.ContainerStatuses = []corev1.ContainerStatus{*st}
			}
			if _, err := kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}

	events, held := round()
	if diff := cmp.Diff([]string{"n2 log:2 regcred"}, pullNodes()); diff != "" {
		t.Errorf("round 1 pull pods (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[types.UID]bool{"uid-n2": true, "uid-n3": true}, held); diff != "" || len(events) > 0 {
		t.Errorf("round 1 held (-want +got):\n%s\nevents %v", diff, events)
	}

	setPhase(corev1.PodFailed, &corev1.ContainerStatus{Name: "pull", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 128, Reason: "StartError"}}})
	clk.Step(time.Second)
	events, held = round()
	if diff := cmp.Diff([]string{"n3 log:2 regcred"}, pullNodes()); diff != "" {
		t.Errorf("round 2 pull pods (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[types.UID]bool{"uid-n3": true}, held); diff != "" || len(events) > 0 {
		t.Errorf("round 2 held (-want +got):\n%s\nevents %v", diff, events)
	}

	setPhase(corev1.PodPending, &corev1.ContainerStatus{Name: "pull", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}})
	events, held = round()
	if diff := cmp.Diff([]string{ReasonPreDownloadFailed}, events); diff != "" || len(held) > 0 {
		t.Errorf("round 3 events (-want +got):\n%s\nheld %v", diff, held)
	}
	if got := pullNodes(); len(got) > 0 {
		t.Errorf("round 3 left pull pods %v", got)
	}
	if got := d.states[ss.Name]; got["uid-n1"] != predownload.Downloaded || got["uid-n2"] != predownload.Downloaded || got["uid-n3"] != "" {
		t.Errorf("states %v, want n1 and n2 PreDownloaded, n3 none", got)
	}

	// The annotation removed: nothing is held, nothing remembered.
	delete(ss.Annotations, predownload.ParallelismAnnotation)
	if _, held = round(); len(held) > 0 || d.ended[ss.Name] != nil {
		t.Errorf("without the annotation: held %v, remembered %v", held, d.ended[ss.Name])
	}
}
