package sidecar

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

func TestIsNativeSidecar(t *testing.T) {
	always, onFailure := corev1.ContainerRestartPolicyAlways, corev1.ContainerRestartPolicy("OnFailure")
	for _, tc := range []struct {
		policy *corev1.ContainerRestartPolicy
		want   bool
	}{{nil, false}, {&always, true}, {&onFailure, false}} {
		if got := IsNativeSidecar(&corev1.Container{RestartPolicy: tc.policy}); got != tc.want {
			t.Errorf("IsNativeSidecar(%v) = %v, want %v", tc.policy, got, tc.want)
		}
	}
}

func TestPodContainerNames(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	hot := v1alpha1.SidecarContainerUpgradeStrategy{UpgradeType: v1alpha1.SidecarContainerHotUpgrade}
	tests := []struct {
		name string
		sc   v1alpha1.SidecarContainer
		init bool
		want []string
	}{
		{name: "cold", sc: v1alpha1.SidecarContainer{Container: corev1.Container{Name: "x"}}, want: []string{"x"}},
		{name: "hot", sc: v1alpha1.SidecarContainer{Container: corev1.Container{Name: "x"}, UpgradeStrategy: hot}, want: []string{"x-1", "x-2"}},
		{name: "hot plain init", sc: v1alpha1.SidecarContainer{Container: corev1.Container{Name: "x"}, UpgradeStrategy: hot}, init: true, want: []string{"x"}},
		{name: "hot native init", sc: v1alpha1.SidecarContainer{Container: corev1.Container{Name: "x", RestartPolicy: &always}, UpgradeStrategy: hot}, init: true, want: []string{"x-1", "x-2"}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, PodContainerNames(&tc.sc, tc.init)); diff != "" {
			t.Errorf("%s: PodContainerNames (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestIsTwinName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{{"x-1", true}, {"x-2", true}, {"x", false}, {"x-3", false}, {"x-1-1", false}, {"y-1", false}, {"xx-1", false}} {
		if got := IsTwinName(tc.name, "x"); got != tc.want {
			t.Errorf("IsTwinName(%q, x) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRunningContainers(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	containers := []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "b"}}, {Container: corev1.Container{Name: "a"}}}
	inits := []v1alpha1.SidecarContainer{
		{Container: corev1.Container{Name: "plain"}},
		{Container: corev1.Container{Name: "native", RestartPolicy: &always}},
	}
	var got []string
	for sc := range RunningContainers(containers, inits) {
		got = append(got, sc.Name)
	}
	if diff := cmp.Diff([]string{"b", "a", "native"}, got); diff != "" {
		t.Errorf("RunningContainers (-want +got):\n%s", diff)
	}
	for sc := range RunningContainers(containers, inits) {
		sc.Image = "changed" // the pointers are into the slices
		break
	}
	if containers[0].Image != "changed" {
		t.Error("RunningContainers must yield pointers into the given slices")
	}
}

func TestIsInjected(t *testing.T) {
	for _, tc := range []struct {
		env  []corev1.EnvVar
		want bool
	}{
		{nil, false},
		{[]corev1.EnvVar{{Name: InjectedEnv, Value: "true"}}, true},
		{[]corev1.EnvVar{{Name: InjectedEnv, Value: "false"}, {Name: InjectedEnv, Value: "true"}}, false},
	} {
		if got := IsInjected(&corev1.Container{Env: tc.env}); got != tc.want {
			t.Errorf("IsInjected(%v) = %v, want %v", tc.env, got, tc.want)
		}
	}
}

// hotPod returns a pod freshly injected with hot-upgrade sidecar sc, as Render produces it.
func hotPod(t *testing.T, sc *v1alpha1.SidecarContainer) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	r := Render(sc, p, RenderOptions{})
	p.Spec.Containers = append(r.Containers, corev1.Container{Name: "app", Image: "app:1"})
	p.Annotations = map[string]string{WorkingHotUpgradeContainerAnnotation: RenderWorkingContainers(map[string]string{sc.Name: r.Working})}
	for k, v := range r.Annotations {
		p.Annotations[k] = v
	}
	return p
}

type twinState struct {
	Images      map[string]string
	Working     string
	Annotations map[string]string
}

func stateOf(p *corev1.Pod) twinState {
	s := twinState{Images: map[string]string{}, Annotations: map[string]string{}}
	for _, c := range p.Spec.Containers {
		s.Images[c.Name] = c.Image
	}
	s.Working = WorkingContainers(p.Annotations)["envoy"]
	for k, v := range p.Annotations {
		if k != WorkingHotUpgradeContainerAnnotation {
			s.Annotations[k] = v
		}
	}
	return s
}

// TestHotUpgradeStateMachine walks OpenKruise's hot upgrade: upgrade the idle (empty) twin,
// reset the old one, upgrade again (roles swap), reset again.
func TestHotUpgradeStateMachine(t *testing.T) {
	sc := sidecarContainer(t, `
name: envoy
image: envoy:1
upgradeStrategy: {upgradeType: HotUpgrade, hotUpgradeEmptyImage: empty:1}`)
	p := hotPod(t, sc)
	ready := func(string) bool { return true }
	ann := func(v1, alt1, v2, alt2 string) map[string]string {
		return map[string]string{
			"version.sidecarset.kruise.io/envoy-1": v1, "versionalt.sidecarset.kruise.io/envoy-1": alt1,
			"version.sidecarset.kruise.io/envoy-2": v2, "versionalt.sidecarset.kruise.io/envoy-2": alt2,
		}
	}
	steps := []struct {
		name        string
		do          func() string
		wantChanged string
		want        twinState
	}{
		{
			name: "same image: no change", wantChanged: "",
			do:   func() string { return UpgradeContainer(p, sc, "100", ready) },
			want: twinState{Images: map[string]string{"envoy-1": "envoy:1", "envoy-2": "empty:1", "app": "app:1"}, Working: "envoy-1", Annotations: ann("1", "0", "0", "1")},
		},
		{
			name: "upgrade goes to the empty twin", wantChanged: "envoy-2",
			do:   func() string { sc.Image = "envoy:2"; return UpgradeContainer(p, sc, "200", ready) },
			want: twinState{Images: map[string]string{"envoy-1": "envoy:1", "envoy-2": "envoy:2", "app": "app:1"}, Working: "envoy-2", Annotations: ann("1", "200", "200", "1")},
		},
		{
			name: "reset empties the old twin", wantChanged: "envoy-1",
			do:   func() string { return ResetIdleTwin(p, sc) },
			want: twinState{Images: map[string]string{"envoy-1": "empty:1", "envoy-2": "envoy:2", "app": "app:1"}, Working: "envoy-2", Annotations: ann("0", "200", "200", "0")},
		},
		{
			name: "reset again: nothing to do", wantChanged: "",
			do:   func() string { return ResetIdleTwin(p, sc) },
			want: twinState{Images: map[string]string{"envoy-1": "empty:1", "envoy-2": "envoy:2", "app": "app:1"}, Working: "envoy-2", Annotations: ann("0", "200", "200", "0")},
		},
		{
			name: "next upgrade swaps roles", wantChanged: "envoy-1",
			do:   func() string { sc.Image = "envoy:3"; return UpgradeContainer(p, sc, "300", ready) },
			want: twinState{Images: map[string]string{"envoy-1": "envoy:3", "envoy-2": "envoy:2", "app": "app:1"}, Working: "envoy-1", Annotations: ann("300", "200", "200", "300")},
		},
		{
			name: "reset", wantChanged: "envoy-2",
			do:   func() string { return ResetIdleTwin(p, sc) },
			want: twinState{Images: map[string]string{"envoy-1": "envoy:3", "envoy-2": "empty:1", "app": "app:1"}, Working: "envoy-1", Annotations: ann("300", "0", "0", "300")},
		},
	}
	for _, s := range steps {
		if got := s.do(); got != s.wantChanged {
			t.Errorf("%s: changed = %q, want %q", s.name, got, s.wantChanged)
		}
		if diff := cmp.Diff(s.want, stateOf(p)); diff != "" {
			t.Errorf("%s: state (-want +got):\n%s", s.name, diff)
		}
	}
}

func TestHotUpgradeTarget(t *testing.T) {
	sc := sidecarContainer(t, `
name: envoy
image: envoy:3
upgradeStrategy: {upgradeType: HotUpgrade, hotUpgradeEmptyImage: empty:1}`)
	both := func(working string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{WorkingHotUpgradeContainerAnnotation: `{"envoy":"` + working + `"}`}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "envoy-1", Image: "envoy:1"}, {Name: "envoy-2", Image: "envoy:2"}}},
		}
	}
	tests := []struct {
		name        string
		pod         *corev1.Pod
		ready       map[string]bool
		wantTarget  string
		wantOther   string
		wantChanged string
	}{
		{name: "only envoy-1 ready: upgrade envoy-2", pod: both("envoy-1"), ready: map[string]bool{"envoy-1": true}, wantTarget: "envoy-2", wantOther: "envoy-1", wantChanged: "envoy-2"},
		{name: "only envoy-2 ready: upgrade envoy-1", pod: both("envoy-1"), ready: map[string]bool{"envoy-2": true}, wantTarget: "envoy-1", wantOther: "envoy-2", wantChanged: "envoy-1"},
		{name: "both ready: the idle twin", pod: both("envoy-2"), ready: map[string]bool{"envoy-1": true, "envoy-2": true}, wantTarget: "envoy-1", wantOther: "envoy-2", wantChanged: "envoy-1"},
		{name: "none ready: the idle twin", pod: both("envoy-1"), ready: map[string]bool{}, wantTarget: "envoy-2", wantOther: "envoy-1", wantChanged: "envoy-2"},
		{name: "no working annotation: envoy-2 counts as working", pod: &corev1.Pod{Spec: both("").Spec}, ready: map[string]bool{}, wantTarget: "envoy-1", wantOther: "envoy-2", wantChanged: "envoy-1"},
		{name: "twins missing", pod: &corev1.Pod{}, ready: map[string]bool{}, wantTarget: "envoy-1", wantOther: "envoy-2", wantChanged: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ready := func(c string) bool { return tc.ready[c] }
			target, other := HotUpgradeTarget(sc, tc.pod, ready)
			if target != tc.wantTarget || other != tc.wantOther {
				t.Errorf("HotUpgradeTarget = %s, %s; want %s, %s", target, other, tc.wantTarget, tc.wantOther)
			}
			if got := UpgradeContainer(tc.pod, sc, "9", ready); got != tc.wantChanged {
				t.Errorf("UpgradeContainer = %q, want %q", got, tc.wantChanged)
			}
		})
	}
}

func TestUpgradeContainerCold(t *testing.T) {
	sc := &v1alpha1.SidecarContainer{Container: corev1.Container{Name: "log", Image: "log:2"}}
	always := corev1.ContainerRestartPolicyAlways
	p := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "native", Image: "n:1", RestartPolicy: &always}},
		Containers:     []corev1.Container{{Name: "app", Image: "app:1"}, {Name: "log", Image: "log:1", Env: []corev1.EnvVar{{Name: "K", Value: "pod-specific"}}}},
	}}
	if got := UpgradeContainer(p, sc, "1", nil); got != "log" {
		t.Fatalf("UpgradeContainer = %q, want log", got)
	}
	want := []corev1.Container{{Name: "app", Image: "app:1"}, {Name: "log", Image: "log:2", Env: []corev1.EnvVar{{Name: "K", Value: "pod-specific"}}}}
	if diff := cmp.Diff(want, p.Spec.Containers); diff != "" {
		t.Errorf("containers (-want +got):\n%s", diff)
	}
	if got := UpgradeContainer(p, sc, "1", nil); got != "" {
		t.Errorf("second UpgradeContainer = %q, want no change", got)
	}
	native := &v1alpha1.SidecarContainer{Container: corev1.Container{Name: "native", Image: "n:2", RestartPolicy: &always}}
	if got := UpgradeContainer(p, native, "1", nil); got != "native" || p.Spec.InitContainers[0].Image != "n:2" {
		t.Errorf("native sidecar upgrade = %q, image %s", got, p.Spec.InitContainers[0].Image)
	}
	if got := UpgradeContainer(p, &v1alpha1.SidecarContainer{Container: corev1.Container{Name: "absent"}}, "1", nil); got != "" {
		t.Errorf("upgrade of a missing container = %q", got)
	}
	if p.Annotations != nil {
		t.Errorf("cold upgrade wrote annotations %v", p.Annotations)
	}
}
