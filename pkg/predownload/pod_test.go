package predownload

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestObserve(t *testing.T) {
	cfg := Config{Parallelism: 1, Timeout: time.Minute}
	k := Key{Node: "n1", Image: img}
	base := NewPod("sidecarset-system", "mesh", k, nil, cfg)
	base.CreationTimestamp = metav1.NewTime(t0)
	with := func(phase corev1.PodPhase, st *corev1.ContainerStatus) *corev1.Pod {
		p := base.DeepCopy()
		p.Status.Phase = phase
		if st != nil {
			st.Name = ContainerName
			p.Status.ContainerStatuses = []corev1.ContainerStatus{*st}
		}
		return p
	}
	waiting := func(reason string) *corev1.ContainerStatus {
		return &corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "m"}}}
	}
	pulled := Pull{Key: k, Name: base.Name, Created: t0, Phase: Pulled}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want Pull
	}{
		{"pending, no status", with(corev1.PodPending, nil), Pull{Key: k, Name: base.Name, Created: t0, Phase: Pulling}},
		{"creating", with(corev1.PodPending, waiting("ContainerCreating")), Pull{Key: k, Name: base.Name, Created: t0, Phase: Pulling}},
		{"start failed: the image is there", with(corev1.PodFailed, &corev1.ContainerStatus{State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 128, Reason: "StartError"}}}), pulled},
		{"create failed after the pull", with(corev1.PodPending, waiting("CreateContainerError")), pulled},
		{"image ID reported", with(corev1.PodPending, &corev1.ContainerStatus{ImageID: "sha256:abc"}), pulled},
		{"succeeded (a fake kubelet)", with(corev1.PodSucceeded, nil), pulled},
		{"pull back-off", with(corev1.PodPending, waiting("ImagePullBackOff")),
			Pull{Key: k, Name: base.Name, Created: t0, Phase: Failed, Message: "ImagePullBackOff: m"}},
		{"deadline exceeded", func() *corev1.Pod {
			p := with(corev1.PodFailed, nil)
			p.Status.Reason, p.Status.Message = "DeadlineExceeded", "too long"
			return p
		}(), Pull{Key: k, Name: base.Name, Created: t0, Phase: Failed, Message: "DeadlineExceeded: too long"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ss, ok := Observe(tt.pod)
			if !ok || ss != "mesh" {
				t.Fatalf("Observe: not a pull pod of mesh (%v, %q)", ok, ss)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Observe (-want +got):\n%s", diff)
			}
		})
	}
	other := base.DeepCopy()
	other.Labels = map[string]string{"app": "x"}
	if _, _, ok := Observe(other); ok {
		t.Errorf("Observe took a pod without the label for a pull pod")
	}
}

func TestNewPod(t *testing.T) {
	p := NewPod("ns", "mesh", Key{Node: "n1", Image: img}, []corev1.LocalObjectReference{{Name: "regcred"}}, Config{Timeout: 90 * time.Second})
	c := p.Spec.Containers[0]
	got := []any{p.Namespace, p.Labels, p.Spec.NodeName, *p.Spec.ActiveDeadlineSeconds, p.Spec.RestartPolicy, c.Image, c.ImagePullPolicy, p.Spec.ImagePullSecrets}
	want := []any{"ns", map[string]string{Label: "true"}, "n1", int64(90), corev1.RestartPolicyNever, img, corev1.PullIfNotPresent,
		[]corev1.LocalObjectReference{{Name: "regcred"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NewPod (-want +got):\n%s", diff)
	}
	if PodName("mesh", Key{"n1", img}) == PodName("mesh", Key{"n2", img}) || PodName("a", Key{"n1", img}) == PodName("b", Key{"n1", img}) {
		t.Errorf("PodName: two pulls share a name")
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                 "docker.io/library/busybox:latest",
		"busybox:1.36":            "docker.io/library/busybox:1.36",
		"127.0.0.1:5000/big:v1":   "127.0.0.1:5000/big:v1",
		"docker.io/library/nginx": "docker.io/library/nginx:latest",
		"Not A Reference":         "Not A Reference",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}
