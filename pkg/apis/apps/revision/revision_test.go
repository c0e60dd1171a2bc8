package revision

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

func containers(images ...string) []v1alpha1.SidecarContainer {
	var out []v1alpha1.SidecarContainer
	for _, image := range images {
		out = append(out, v1alpha1.SidecarContainer{Container: corev1.Container{Name: "c", Image: image}})
	}
	return out
}

func TestSnapshot(t *testing.T) {
	volumes := []corev1.Volume{{Name: "v"}}
	secrets := []corev1.LocalObjectReference{{Name: "registry"}}
	patch := []v1alpha1.SidecarSetPatchPodMetadata{{Annotations: map[string]string{"a": "b"}}}
	tests := []struct {
		name string
		spec v1alpha1.SidecarSetSpec
		want v1alpha1.SidecarSetRevisionSpec
	}{
		{"empty spec", v1alpha1.SidecarSetSpec{}, v1alpha1.SidecarSetRevisionSpec{}},
		{"the five recorded fields", v1alpha1.SidecarSetSpec{
			InitContainers: containers("init:1"), Containers: containers("img:1"), Volumes: volumes,
			ImagePullSecrets: secrets, PatchPodMetadata: patch,
		}, v1alpha1.SidecarSetRevisionSpec{
			InitContainers: containers("init:1"), Containers: containers("img:1"), Volumes: volumes,
			ImagePullSecrets: secrets, PatchPodMetadata: patch,
		}},
		{"selector, namespace and strategies are not recorded", v1alpha1.SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}, Namespace: "ns",
			Containers: containers("img:1"),
		}, v1alpha1.SidecarSetRevisionSpec{Containers: containers("img:1")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ss := &v1alpha1.SidecarSet{Spec: tc.spec}
			got := Snapshot(ss)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Snapshot (-want +got):\n%s", diff)
			}
			if len(got.Containers) > 0 {
				got.Containers[0].Image = "changed"
				if ss.Spec.Containers[0].Image == "changed" {
					t.Error("the snapshot shares its containers with the SidecarSet")
				}
			}
		})
	}
}

// The data and names of ControllerRevisions as OpenKruise writes them, computed with OpenKruise's
// v1beta1 SidecarSet types and its getPatch and HashControllerRevision (collision count 0) for
// the defaulted SidecarSets they record.
const (
	openKruiseData136  = `{"spec":{"$patch":"replace","containers":[{"command":["sleep","999d"],"image":"busybox:1.36","imagePullPolicy":"IfNotPresent","name":"sidecar1","podInjectPolicy":"BeforeAppContainer","resources":{},"shareVolumePolicy":{"type":"disabled"},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","upgradeStrategy":{"upgradeType":"ColdUpgrade"}}],"imagePullSecrets":null,"initContainers":null,"patchPodMetadata":null,"volumes":null}}`
	openKruiseDataRich = `{"spec":{"$patch":"replace","containers":[{"env":[{"name":"LOG_LEVEL","value":"info"}],"image":"fluentd:v1.16","imagePullPolicy":"IfNotPresent","name":"fluentd","podInjectPolicy":"AfterAppContainer","ports":[{"containerPort":24224,"protocol":"TCP"}],"resources":{"limits":{"cpu":"500m","memory":"256Mi"},"requests":{"cpu":"100m","memory":"64Mi"}},"shareVolumePolicy":{"type":"enabled"},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","transferEnv":[{"envName":"TZ","sourceContainerName":"app"}],"upgradeStrategy":{"upgradeType":"ColdUpgrade"},"volumeMounts":[{"mountPath":"/var/log","name":"varlog"}]}],"imagePullSecrets":[{"name":"registry"}],"initContainers":[{"image":"agent:2","imagePullPolicy":"IfNotPresent","name":"agent-init","podInjectPolicy":"AfterAppContainer","resources":{},"restartPolicy":"Always","shareVolumePolicy":{"type":"disabled"},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","upgradeStrategy":{"upgradeType":"ColdUpgrade"}}],"patchPodMetadata":[{"annotations":{"oom-score":"100"},"patchPolicy":"Retain"}],"volumes":[{"emptyDir":{},"name":"varlog"},{"configMap":{"defaultMode":420,"name":"fluentd-conf"},"name":"conf"}]}}`
)

// TestRevisionNameMatchesOpenKruise: the data a revision's name hashes is byte for byte the data of
// OpenKruise's ControllerRevision of the same spec, so the server names a spec's revision as
// OpenKruise does.
func TestRevisionNameMatchesOpenKruise(t *testing.T) {
	tests := []struct {
		name, sidecarSet, data, want string
	}{
		{"one container", "migrate", openKruiseData136, "migrate-cf96db497"},
		{"every recorded field, quantities, a native sidecar", "logging", openKruiseDataRich, "logging-66977dc954"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var doc struct {
				Spec v1alpha1.SidecarSetRevisionSpec `json:"spec"`
			}
			if err := json.Unmarshal([]byte(tc.data), &doc); err != nil {
				t.Fatal(err)
			}
			got, err := data(doc.Spec)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.data, string(got)); diff != "" {
				t.Errorf("revision data (-OpenKruise's +ours):\n%s", diff)
			}
			if got, err := Name(tc.sidecarSet, doc.Spec, 0); err != nil || got != tc.want {
				t.Errorf("Name = %s, %v; OpenKruise names it %s", got, err, tc.want)
			}
		})
	}
}

func TestNameChangesWithCollisionCount(t *testing.T) {
	spec := v1alpha1.SidecarSetRevisionSpec{Containers: containers("img:1")}
	a, errA := Name("s", spec, 0)
	b, errB := Name("s", spec, 1)
	if errA != nil || errB != nil || a == b {
		t.Errorf("Name with collision count 0 = %s, %v; 1 = %s, %v; want two different names", a, errA, b, errB)
	}
}

func TestNameTruncatesLongSidecarSetNames(t *testing.T) {
	spec := v1alpha1.SidecarSetRevisionSpec{Containers: containers("img:1")}
	tests := []struct {
		name, sidecarSet, wantPrefix string
	}{
		{"short name kept", "logging", "logging-"},
		{"223 characters kept", strings.Repeat("a", 223), strings.Repeat("a", 223) + "-"},
		{"253 characters cut to 223", strings.Repeat("b", 253), strings.Repeat("b", 223) + "-"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Name(tc.sidecarSet, spec, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(got, tc.wantPrefix) || strings.Contains(got[len(tc.wantPrefix):], "-") || len(got) > 253 {
				t.Errorf("Name = %s, want %s followed by the hash, at most 253 characters", got, tc.wantPrefix)
			}
		})
	}
}

func TestFind(t *testing.T) {
	rev := func(name string, n int64, image string) *v1alpha1.SidecarSetRevision {
		r := &v1alpha1.SidecarSetRevision{ObjectMeta: metav1.ObjectMeta{Name: name}, Revision: n}
		r.Spec.Containers = containers(image)
		return r
	}
	withCPU := func(r *v1alpha1.SidecarSetRevision, cpu string) *v1alpha1.SidecarSetRevision {
		r.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		return r
	}
	spec := func(image string) v1alpha1.SidecarSetRevisionSpec {
		return v1alpha1.SidecarSetRevisionSpec{Containers: containers(image)}
	}
	tests := []struct {
		name string
		revs []*v1alpha1.SidecarSetRevision
		spec v1alpha1.SidecarSetRevisionSpec
		want string // name of the revision found, "" for none
	}{
		{"no revisions", nil, spec("img:1"), ""},
		{"none records the spec", []*v1alpha1.SidecarSetRevision{rev("s-1", 1, "img:1")}, spec("img:2"), ""},
		{"the one recording it", []*v1alpha1.SidecarSetRevision{rev("s-1", 1, "img:1"), rev("s-2", 2, "img:2")}, spec("img:1"), "s-1"},
		{"found whatever its name", []*v1alpha1.SidecarSetRevision{rev("kruise-abc", 4, "img:1")}, spec("img:1"), "kruise-abc"},
		{"the highest-numbered of two, in any order",
			[]*v1alpha1.SidecarSetRevision{rev("s-3", 3, "img:1"), rev("s-1", 1, "img:1"), rev("s-2", 2, "img:2")}, spec("img:1"), "s-3"},
		{"the later of two of one number",
			[]*v1alpha1.SidecarSetRevision{rev("a", 2, "img:1"), rev("b", 2, "img:1")}, spec("img:1"), "b"},
		{"semantic equality: 1 and 1000m CPU are one quantity",
			[]*v1alpha1.SidecarSetRevision{withCPU(rev("s-1", 1, "img:1"), "1")},
			withCPU(rev("", 0, "img:1"), "1000m").Spec, "s-1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if r := Find(tc.revs, tc.spec); r != nil {
				got = r.Name
			}
			if got != tc.want {
				t.Errorf("Find = %q, want %q", got, tc.want)
			}
		})
	}
}
