package namespacedsidecarset

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/stored"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/registry/apps/sidecarset"
)

func newNamespaced() *apps.NamespacedSidecarSet {
	n := &apps.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "logs", Generation: 3}}
	n.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
	n.Spec.Containers = []apps.SidecarContainer{{Container: corev1.Container{Name: "c", Image: "img:1"}}}
	return n
}

// TestPrepareForCreate: a NamespacedSidecarSet is prepared as a SidecarSet of the same spec is:
// no status, generation 1, the hashes of its spec stamped over whatever the user wrote.
func TestPrepareForCreate(t *testing.T) {
	n := newNamespaced()
	n.Status = apps.SidecarSetStatus{MatchedPods: 4, LatestRevision: "r"}
	n.Labels = map[string]string{"a": "b"}
	n.Annotations = map[string]string{v1alpha1.SidecarSetHashAnnotation: "pinned", "keep": "me"}
	ss := &apps.SidecarSet{ObjectMeta: *n.ObjectMeta.DeepCopy(), Spec: *n.Spec.DeepCopy(), Status: *n.Status.DeepCopy()}
	ss.Namespace = ""

	NewStrategy(runtime.NewScheme()).PrepareForCreate(context.Background(), n)
	sidecarset.NewStrategy(runtime.NewScheme()).PrepareForCreate(context.Background(), ss)

	h, err := stored.Hashes(&n.Spec)
	if err != nil {
		t.Fatal(err)
	}
	wantAnnotations := map[string]string{"keep": "me",
		v1alpha1.SidecarSetHashAnnotation: h.WithImage, v1alpha1.SidecarSetHashWithoutImageAnnotation: h.WithoutImage}
	if diff := cmp.Diff(wantAnnotations, n.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if n.Generation != 1 {
		t.Errorf("generation = %d, want 1", n.Generation)
	}
	// The written status is dropped; the condition the server stores until the controller has
	// observed the object stands in its place.
	if len(n.Status.Conditions) != 1 || n.Status.Conditions[0].Type != "Reconciling" || n.Status.MatchedPods != 0 || n.Status.ObservedGeneration != 0 {
		t.Errorf("status not reset: %+v", n.Status)
	}
	// The same as the SidecarSet strategy makes of the same object, but for the namespace.
	got := &apps.SidecarSet{ObjectMeta: n.ObjectMeta, Spec: n.Spec, Status: n.Status}
	got.Namespace = ""
	if diff := cmp.Diff(ss, got); diff != "" {
		t.Errorf("NamespacedSidecarSet prepared unlike a SidecarSet (-sidecarset +namespaced):\n%s", diff)
	}
	if n.Namespace != "team-a" || n.Name != "logs" {
		t.Errorf("prepared %s/%s, want team-a/logs", n.Namespace, n.Name)
	}
}

func TestPrepareForUpdate(t *testing.T) {
	tests := []struct {
		name           string
		change         func(*apps.NamespacedSidecarSet)
		wantGeneration int64
		wantRehash     bool
	}{
		{name: "metadata only", change: func(n *apps.NamespacedSidecarSet) { n.Labels = map[string]string{"a": "b"} }, wantGeneration: 3},
		{name: "image", change: func(n *apps.NamespacedSidecarSet) { n.Spec.Containers[0].Image = "img:2" }, wantGeneration: 4, wantRehash: true},
		{name: "selector", change: func(n *apps.NamespacedSidecarSet) {
			n.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "y"}}
		}, wantGeneration: 4},
		{name: "custom version label", change: func(n *apps.NamespacedSidecarSet) {
			n.Labels = map[string]string{v1alpha1.SidecarSetCustomVersionLabel: "v2"}
		}, wantGeneration: 4},
		{name: "status is ignored", change: func(n *apps.NamespacedSidecarSet) { n.Status.MatchedPods = 9 }, wantGeneration: 3},
		{name: "pinned hash is restamped", change: func(n *apps.NamespacedSidecarSet) {
			n.Annotations[v1alpha1.SidecarSetHashAnnotation] = "pinned"
		}, wantGeneration: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStrategy(runtime.NewScheme())
			old := newNamespaced()
			s.PrepareForCreate(context.Background(), old)
			old.Generation = 3
			old.Status = apps.SidecarSetStatus{ReadyPods: 2, ObservedGeneration: 3}
			n := old.DeepCopy()
			tc.change(n)
			s.PrepareForUpdate(context.Background(), n, old)
			if n.Generation != tc.wantGeneration {
				t.Errorf("generation = %d, want %d", n.Generation, tc.wantGeneration)
			}
			if diff := cmp.Diff(old.Status, n.Status); diff != "" {
				t.Errorf("status changed through the main resource (-old +new):\n%s", diff)
			}
			h, err := stored.Hashes(&n.Spec)
			if err != nil {
				t.Fatal(err)
			}
			if got := n.Annotations[v1alpha1.SidecarSetHashAnnotation]; got != h.WithImage {
				t.Errorf("hash annotation %q, want %q", got, h.WithImage)
			}
			if rehashed := n.Annotations[v1alpha1.SidecarSetHashAnnotation] != old.Annotations[v1alpha1.SidecarSetHashAnnotation]; rehashed != tc.wantRehash {
				t.Errorf("hash changed: %v, want %v", rehashed, tc.wantRehash)
			}
		})
	}
}

// TestStatusStrategy: namespacedsidecarsets/status writes the status only.
func TestStatusStrategy(t *testing.T) {
	old := newNamespaced()
	old.Labels = map[string]string{"a": "b"}
	old.Annotations = map[string]string{"x": "y"}
	n := old.DeepCopy()
	n.Spec.Containers[0].Image = "img:2"
	n.Labels = map[string]string{"a": "c"}
	n.Annotations = nil
	n.Status = apps.SidecarSetStatus{MatchedPods: 5, ObservedGeneration: 3}
	NewStatusStrategy(NewStrategy(runtime.NewScheme())).PrepareForUpdate(context.Background(), n, old)
	want := old.DeepCopy()
	want.Status = apps.SidecarSetStatus{MatchedPods: 5, ObservedGeneration: 3}
	if diff := cmp.Diff(want, n); diff != "" {
		t.Errorf("status update (-want +got):\n%s", diff)
	}
	if _, ok := NewStatusStrategy(NewStrategy(runtime.NewScheme())).GetResetFields()["apps.kruise.io/v1alpha1"]; !ok {
		t.Error("the status subresource resets no field of v1alpha1")
	}
}

// TestValidateRoutes: the strategies validate with the NamespacedSidecarSet rules.
func TestValidateRoutes(t *testing.T) {
	s := NewStrategy(runtime.NewScheme())
	if !s.NamespaceScoped() {
		t.Error("NamespacedSidecarSets are not namespaced")
	}
	valid := newNamespaced()
	valid.Spec.UpdateStrategy.Type = apps.RollingUpdateSidecarSetStrategyType
	valid.Spec.Containers[0].PodInjectPolicy = apps.BeforeAppContainerType
	valid.Spec.Containers[0].UpgradeStrategy.UpgradeType = apps.SidecarContainerColdUpgrade
	valid.Spec.Containers[0].ShareVolumePolicy.Type = apps.ShareVolumePolicyDisabled
	valid.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
	valid.Spec.Containers[0].TerminationMessagePath = corev1.TerminationMessagePathDefault
	valid.Spec.Containers[0].TerminationMessagePolicy = corev1.TerminationMessageReadFile
	if errs := s.Validate(context.Background(), valid); len(errs) != 0 {
		t.Fatalf("valid NamespacedSidecarSet refused: %v", errs)
	}
	withNamespace := valid.DeepCopy()
	withNamespace.Spec.Namespace = "team-b"
	renamed := valid.DeepCopy()
	renamed.Spec.Containers[0].Name = "d"
	negative := valid.DeepCopy()
	negative.Status.MatchedPods = -1
	for _, tc := range []struct {
		name string
		errs field.ErrorList
		want []string
	}{
		{"create with spec.namespace", s.Validate(context.Background(), withNamespace), []string{"spec.namespace"}},
		{"update with spec.namespace", s.ValidateUpdate(context.Background(), withNamespace, valid), []string{"spec.namespace"}},
		{"update renaming a container", s.ValidateUpdate(context.Background(), renamed, valid), []string{"spec.containers[0].name"}},
		{"status update", NewStatusStrategy(s).ValidateUpdate(context.Background(), negative, valid), []string{"status.matchedPods"}},
	} {
		var got []string
		for _, e := range tc.errs {
			got = append(got, e.Field)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: error fields (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestGetAttrs(t *testing.T) {
	n := newNamespaced()
	n.Labels = map[string]string{"app": "logs"}
	ls, fs, err := GetAttrs(n)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fields.Set{"metadata.name": "logs", "metadata.namespace": "team-a"}, fs); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(labels.Set{"app": "logs"}, ls); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if _, _, err := GetAttrs(&apps.SidecarSet{}); err == nil {
		t.Error("GetAttrs of a SidecarSet: no error")
	}
	sel, err := fields.ParseSelector("metadata.namespace=team-a")
	if err != nil {
		t.Fatal(err)
	}
	pred := Match(labels.Everything(), sel)
	if ok, err := pred.Matches(n); err != nil || !ok {
		t.Errorf("metadata.namespace=team-a does not select team-a/logs: %v, %v", ok, err)
	}
}

// TestTable: kubectl get namespacedsidecarsets prints the SidecarSet columns.
func TestTable(t *testing.T) {
	n := newNamespaced()
	n.ResourceVersion = "7"
	n.Spec.UpdateStrategy.Paused = true
	n.Status = apps.SidecarSetStatus{MatchedPods: 3, UpdatedPods: 2, ReadyPods: 1, UpdatedReadyPods: 1, LatestRevision: "team-a.logs-abc",
		Conditions: []metav1.Condition{{Type: "Injected", Status: metav1.ConditionTrue, Reason: "Policy"}}}
	wantCells := []interface{}{"logs", int64(3), int64(2), int64(1), "<unknown>", int64(1), "team-a.logs-abc", true, "Policy"}
	for _, obj := range []runtime.Object{n, &apps.NamespacedSidecarSetList{Items: []apps.NamespacedSidecarSet{*n}}} {
		table, err := sidecarset.TableConvertor{}.ConvertToTable(context.Background(), obj, nil)
		if err != nil {
			t.Fatalf("%T: %v", obj, err)
		}
		if len(table.Rows) != 1 {
			t.Fatalf("%T: %d rows, want 1", obj, len(table.Rows))
		}
		if diff := cmp.Diff(wantCells, table.Rows[0].Cells); diff != "" {
			t.Errorf("%T: cells (-want +got):\n%s", obj, diff)
		}
		if len(table.ColumnDefinitions) != len(wantCells) {
			t.Errorf("%T: %d columns, want %d", obj, len(table.ColumnDefinitions), len(wantCells))
		}
	}
}
