package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// TestValidateRevisionCreate: a revision a client imports has a number of 1 or more and a
// snapshot that passes the rules of a SidecarSet's volumes, containers and patchPodMetadata, with
// the revision's field paths.
func TestValidateRevisionCreate(t *testing.T) {
	valid := func() *apps.SidecarSetRevision {
		return &apps.SidecarSetRevision{ObjectMeta: metav1.ObjectMeta{Name: "s-1"}, SidecarSetName: "s", Revision: 1, Spec: apps.SidecarSetRevisionSpec{
			Containers: []apps.SidecarContainer{{Container: corev1.Container{Name: "c", Image: "img:1",
				ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				VolumeMounts: []corev1.VolumeMount{{Name: "logs", MountPath: "/logs"}}},
				PodInjectPolicy: apps.BeforeAppContainerType, UpgradeStrategy: apps.SidecarContainerUpgradeStrategy{UpgradeType: apps.SidecarContainerColdUpgrade},
				ShareVolumePolicy: apps.ShareVolumePolicy{Type: apps.ShareVolumePolicyDisabled}}},
			Volumes: []corev1.Volume{{Name: "logs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		}}
	}
	for _, tc := range []struct {
		name   string
		change func(*apps.SidecarSetRevision)
		want   []string // field paths, in order; none for a valid revision
	}{
		{"valid", func(*apps.SidecarSetRevision) {}, nil},
		{"number 0", func(r *apps.SidecarSetRevision) { r.Revision = 0 }, []string{"revision"}},
		{"a NamespacedSidecarSet's engine name", func(r *apps.SidecarSetRevision) {
			r.SidecarSetName, r.Name = "team-a.s", "team-a.s-1"
		}, []string{"sidecarSetName"}},
		{"a name of another SidecarSet", func(r *apps.SidecarSetRevision) { r.Name = "other-1" }, []string{"metadata.name"}},
		{"the bare prefix", func(r *apps.SidecarSetRevision) { r.Name = "s-" }, []string{"metadata.name"}},
		{"a long SidecarSet name cut as OpenKruise cuts it", func(r *apps.SidecarSetRevision) {
			r.SidecarSetName = strings.Repeat("a", 240)
			r.Name = strings.Repeat("a", 223) + "-1"
		}, nil},
		{"OpenKruise's label naming another SidecarSet", func(r *apps.SidecarSetRevision) {
			r.Labels = map[string]string{OpenKruiseSidecarSetNameLabel: "other"}
		}, []string{"metadata.labels[kruise.io/sidecarset-name]"}},
		{"OpenKruise's label naming it", func(r *apps.SidecarSetRevision) {
			r.Labels = map[string]string{OpenKruiseSidecarSetNameLabel: "s"}
		}, nil},
		{"nothing injected", func(r *apps.SidecarSetRevision) { r.Spec.Containers = nil; r.Spec.Volumes = nil }, []string{"spec.containers"}},
		{"a volume without a source", func(r *apps.SidecarSetRevision) { r.Spec.Volumes[0].EmptyDir = nil }, []string{"spec.volumes[0]", "spec.containers[0].volumeMounts[0].name"}},
		{"a patch without a policy", func(r *apps.SidecarSetRevision) {
			r.Spec.PatchPodMetadata = []apps.SidecarSetPatchPodMetadata{{Annotations: map[string]string{"a": "b"}}}
		}, []string{"spec.patchPodMetadata[0].patchPolicy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := valid()
			tc.change(r)
			errs := ValidateRevisionCreate(r)
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("errors at %v, want %v: %v", got, tc.want, errs)
			}
		})
	}
}
