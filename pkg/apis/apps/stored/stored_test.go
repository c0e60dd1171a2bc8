package stored

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// OpenKruise's hashes of the defaulted manual example (pkg/apis/apps/hash's golden values).
const (
	manualHash        = "4zbdc2xzc8w7c4x2c6984266bc9d7zf87x946v7xdfv988f6c6fc9b7dz47w8zd5"
	manualHashNoImage = "wcv47954b7xv5w4fbw682bbf78cw2449448vbf4fvvwv77947bc7fcv7fw89f98x"
)

// manual is OpenKruise's manual example as written, not defaulted.
func manual() *v1alpha1.SidecarSet {
	ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "s"}}
	ss.Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{
		Name: "sidecar1", Image: "centos:6.7", Command: []string{"sleep", "999d"},
		VolumeMounts: []corev1.VolumeMount{{Name: "log-volume", MountPath: "/var/log"}},
	}}}
	return ss
}

// internalManual is the manual example as the registry gets it: decoded (defaulted), internal.
func internalManual(t *testing.T) *apps.SidecarSet {
	t.Helper()
	wire := manual()
	v1alpha1.SetObjectDefaults_SidecarSet(wire)
	out := &apps.SidecarSet{}
	if err := v1alpha1.Convert_v1alpha1_SidecarSet_To_apps_SidecarSet(wire, out, nil); err != nil {
		t.Fatal(err)
	}
	return out
}

func hashes(withImage, withoutImage string) map[string]string {
	return map[string]string{v1alpha1.SidecarSetHashAnnotation: withImage, v1alpha1.SidecarSetHashWithoutImageAnnotation: withoutImage}
}

func TestSidecarSet(t *testing.T) {
	tests := []struct {
		name            string
		change          func(*v1alpha1.SidecarSet)
		wantAnnotations map[string]string
		wantGeneration  int64
		wantLatest      string
	}{
		{"hashes stamped", nil, hashes(manualHash, manualHashNoImage), 0, ""},
		{"pinned hashes overwritten, other annotations kept", func(ss *v1alpha1.SidecarSet) {
			ss.Annotations = map[string]string{v1alpha1.SidecarSetHashAnnotation: "pinned", "team": "a"}
		}, map[string]string{v1alpha1.SidecarSetHashAnnotation: manualHash, v1alpha1.SidecarSetHashWithoutImageAnnotation: manualHashNoImage, "team": "a"}, 0, ""},
		{"status and generation read back are kept", func(ss *v1alpha1.SidecarSet) {
			ss.Generation, ss.Status.LatestRevision = 4, "s-abc"
		}, hashes(manualHash, manualHashNoImage), 4, "s-abc"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := manual()
			if tc.change != nil {
				tc.change(in)
			}
			before := in.DeepCopy()
			got, err := SidecarSet(in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before, in); diff != "" {
				t.Errorf("input changed (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAnnotations, got.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if got.Generation != tc.wantGeneration || got.Status.LatestRevision != tc.wantLatest {
				t.Errorf("generation %d, latest revision %q; want %d, %q", got.Generation, got.Status.LatestRevision, tc.wantGeneration, tc.wantLatest)
			}
			c := got.Spec.Containers[0]
			if c.ImagePullPolicy != corev1.PullIfNotPresent || c.PodInjectPolicy != v1alpha1.BeforeAppContainerType ||
				!cmp.Equal(got.Spec.RevisionHistoryLimit, ptr.To[int32](10)) {
				t.Errorf("not defaulted: pull policy %q, inject policy %q, history limit %v", c.ImagePullPolicy, c.PodInjectPolicy, got.Spec.RevisionHistoryLimit)
			}
		})
	}
}

func TestRevision(t *testing.T) {
	r := &v1alpha1.SidecarSetRevision{ObjectMeta: metav1.ObjectMeta{Name: "s-1"}}
	r.Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{
		Name: "c", Image: "img:1", Ports: []corev1.ContainerPort{{ContainerPort: 80}},
	}}}
	got := Revision(r)
	if r.Spec.Containers[0].Ports[0].Protocol != "" {
		t.Error("input defaulted in place")
	}
	// A revision's snapshot has the generated defaults only; the SidecarSet's were applied before
	// it was recorded.
	want := []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
	if diff := cmp.Diff(want, got.Spec.Containers[0].Ports); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
	if got.Spec.Containers[0].ImagePullPolicy != "" {
		t.Errorf("pull policy %q, want none", got.Spec.Containers[0].ImagePullPolicy)
	}
}

func TestCreate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*apps.SidecarSet)
	}{
		{"new", nil},
		{"status, generation and pinned hashes written by the user", func(ss *apps.SidecarSet) {
			ss.Generation, ss.Status.MatchedPods, ss.Status.LatestRevision = 7, 3, "s-abc"
			ss.Annotations = hashes("pinned", "pinned")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ss := internalManual(t)
			if tc.change != nil {
				tc.change(ss)
			}
			Create(ss)
			if diff := cmp.Diff(hashes(manualHash, manualHashNoImage), ss.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			// The user's status is dropped; the server's says the controller has not observed it.
			notObserved := apps.SidecarSetStatus{Conditions: []metav1.Condition{{Type: "Reconciling", Status: metav1.ConditionTrue,
				Reason: "NotObserved", Message: "the controller has not observed this SidecarSet yet", LastTransitionTime: ss.CreationTimestamp}}}
			if diff := cmp.Diff(notObserved, ss.Status); diff != "" || ss.Generation != 1 {
				t.Errorf("generation %d, status (-want +got):\n%s", ss.Generation, diff)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	tests := []struct {
		name           string
		change         func(*apps.SidecarSet)
		wantGeneration int64
	}{
		{"unchanged keeps the generation", nil, 5},
		{"metadata only keeps the generation", func(ss *apps.SidecarSet) { ss.Labels = map[string]string{"team": "a"} }, 5},
		{"spec change bumps it", func(ss *apps.SidecarSet) { ss.Spec.Containers[0].Image = "centos:7" }, 6},
		{"custom version change bumps it", func(ss *apps.SidecarSet) {
			ss.Labels = map[string]string{v1alpha1.SidecarSetCustomVersionLabel: "v2"}
		}, 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := internalManual(t)
			old.Generation, old.Status.LatestRevision = 5, "s-abc"
			ss := old.DeepCopy()
			ss.Status = apps.SidecarSetStatus{MatchedPods: 9}
			ss.Annotations = hashes("pinned", "pinned")
			if tc.change != nil {
				tc.change(ss)
			}
			Update(ss, old)
			if ss.Generation != tc.wantGeneration {
				t.Errorf("generation %d, want %d", ss.Generation, tc.wantGeneration)
			}
			if diff := cmp.Diff(old.Status, ss.Status); diff != "" {
				t.Errorf("status (-stored +got):\n%s", diff)
			}
			if ss.Annotations[v1alpha1.SidecarSetHashAnnotation] == "pinned" || ss.Annotations[v1alpha1.SidecarSetHashWithoutImageAnnotation] == "pinned" {
				t.Errorf("hashes not restamped: %v", ss.Annotations)
			}
		})
	}
}
