package injection

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

func TestMissed(t *testing.T) {
	at := func(hhmmss string) time.Time {
		ts, err := time.Parse(time.RFC3339, "2026-07-01T"+hhmmss+"Z")
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	withProxy := func(name string) *v1alpha1.SidecarSet {
		ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(at("12:00:00"))}}
		ss.Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "proxy", Image: "busybox"}}}
		return ss
	}
	// A NamespacedSidecarSet, and a cluster SidecarSet injected into the pods that collides with it.
	ss, mesh := withProxy("shop.proxy"), withProxy("mesh")
	cluster := func(name string) *v1alpha1.SidecarSet {
		if name == mesh.Name {
			return mesh
		}
		return nil
	}
	for _, tc := range []struct {
		name string
		in   MissedInput
		want string
	}{
		{"excluded first", MissedInput{Excluded: true, Created: at("11:00:00"), Injected: []string{"mesh"}}, "NamespaceExcluded"},
		{"an earlier second", MissedInput{Created: at("11:59:59")}, "CreatedBeforeSidecarSet"},
		{"the same second", MissedInput{Created: at("12:00:00")}, "CreatedWithSidecarSet"},
		{"later, shadowed", MissedInput{Created: at("12:00:01"), Injected: []string{"mesh"}}, "ShadowedByClusterSidecarSet"},
		{"earlier, shadowed: created before wins", MissedInput{Created: at("11:00:00"), Injected: []string{"mesh"}}, "CreatedBeforeSidecarSet"},
		{"later, the colliding SidecarSet gone", MissedInput{Created: at("12:00:01"), Injected: []string{"gone"}}, "AdmittedWithoutSidecars"},
		{"later", MissedInput{Created: at("12:00:01")}, "AdmittedWithoutSidecars"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.SidecarSet, tc.in.Namespace, tc.in.Cluster = ss, "shop", cluster
			if got, msg := Missed(tc.in); got != tc.want || msg == "" {
				t.Errorf("Missed = %s %q, want %s with a message", got, msg, tc.want)
			}
		})
	}
}

func TestShadowing(t *testing.T) {
	set := func(name, container string) *v1alpha1.SidecarSet {
		ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
		ss.Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: container, Image: "busybox"}}}
		return ss
	}
	sets := map[string]*v1alpha1.SidecarSet{"mesh": set("mesh", "proxy"), "logs": set("logs", "agent"), "shop.other": set("shop.other", "proxy")}
	lookup := func(name string) *v1alpha1.SidecarSet { return sets[name] }
	tenant := set("shop.proxy", "proxy")
	for _, tc := range []struct {
		name     string
		ss       *v1alpha1.SidecarSet
		injected []string
		want     string
	}{
		{"a cluster SidecarSet with the container's name", tenant, []string{"logs", "mesh"}, "mesh"},
		{"no colliding one", tenant, []string{"logs"}, ""},
		{"a NamespacedSidecarSet never shadows", tenant, []string{"shop.other"}, ""},
		{"one gone", tenant, []string{"gone"}, ""},
		{"a cluster SidecarSet is never shadowed", set("proxy", "proxy"), []string{"mesh"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Shadowing(tc.ss, tc.injected, lookup); got != tc.want {
				t.Errorf("Shadowing = %q, want %q", got, tc.want)
			}
		})
	}
}
