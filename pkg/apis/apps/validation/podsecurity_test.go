package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// TestPodSecurityViolations: sidecars that break the Pod Security Standard "baseline" (a privileged
// container, an added capability, a host port, a hostPath volume) warn the SidecarSet's author
// that its pods are refused where baseline is enforced, naming the check; ordinary sidecars do not.
func TestPodSecurityViolations(t *testing.T) {
	sidecar := func(mutate func(*apps.SidecarSet)) *apps.SidecarSet {
		ss := &apps.SidecarSet{Spec: apps.SidecarSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Containers: []apps.SidecarContainer{{Container: corev1.Container{Name: "log", Image: "busybox"}}}}}
		mutate(ss)
		return ss
	}
	for _, tc := range []struct {
		name string
		ss   *apps.SidecarSet
		want string // "" for no warning
	}{
		{"ordinary", sidecar(func(*apps.SidecarSet) {}), ""},
		{"privileged", sidecar(func(ss *apps.SidecarSet) {
			ss.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		}), "privileged"},
		{"added capability", sidecar(func(ss *apps.SidecarSet) {
			ss.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}
		}), "capabilities"},
		{"host port", sidecar(func(ss *apps.SidecarSet) {
			ss.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 9100, HostPort: 9100}}
		}), "hostPort"},
		{"hostPath volume", sidecar(func(ss *apps.SidecarSet) {
			ss.Spec.Volumes = []corev1.Volume{{Name: "logs", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}}}
		}), "hostPath"},
		{"native sidecar, privileged", sidecar(func(ss *apps.SidecarSet) {
			ss.Spec.InitContainers = []apps.SidecarContainer{{Container: corev1.Container{Name: "net", Image: "busybox",
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}}
		}), "privileged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if v := PodSecurityViolations(tc.ss); len(v) > 0 {
				got = PodSecurityMessage(v, []string{"shop"})
			}
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) || (tc.want != "" && (!strings.Contains(got, "baseline") || !strings.Contains(got, "shop"))) {
				t.Errorf("warnings %q, want one naming %q", got, tc.want)
			}
		})
	}
}

// TestEnforcesBaseline: namespaces enforcing baseline or restricted refuse baseline violations.
func TestEnforcesBaseline(t *testing.T) {
	for level, want := range map[string]bool{"baseline": true, "restricted": true, "privileged": false, "": false, "bogus": false} {
		if got := EnforcesBaseline(map[string]string{"pod-security.kubernetes.io/enforce": level}); got != want {
			t.Errorf("enforce %q: %v, want %v", level, got, want)
		}
	}
}
