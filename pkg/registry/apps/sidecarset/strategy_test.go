package sidecarset

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/stored"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

func newSidecarSet() *apps.SidecarSet {
	ss := &apps.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "s", Generation: 3}}
	ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
	ss.Spec.Containers = []apps.SidecarContainer{{Container: corev1.Container{Name: "c", Image: "img:1"}}}
	return ss
}

func TestPrepareForCreate(t *testing.T) {
	s := NewStrategy(runtime.NewScheme())
	ss := newSidecarSet()
	ss.Status.MatchedPods = 4
	ss.Annotations = map[string]string{v1alpha1.SidecarSetHashAnnotation: "pinned"}
	s.PrepareForCreate(context.Background(), ss)
	if ss.Generation != 1 || ss.Status.MatchedPods != 0 {
		t.Errorf("generation %d status %+v", ss.Generation, ss.Status)
	}
	h, _ := stored.Hashes(&ss.Spec)
	if ss.Annotations[v1alpha1.SidecarSetHashAnnotation] != h.WithImage || ss.Annotations[v1alpha1.SidecarSetHashWithoutImageAnnotation] != h.WithoutImage {
		t.Errorf("hash annotations not stamped: %v", ss.Annotations)
	}
}

func TestPrepareForUpdate(t *testing.T) {
	tests := []struct {
		name           string
		change         func(*apps.SidecarSet)
		wantGeneration int64
	}{
		{"metadata only", func(ss *apps.SidecarSet) { ss.Labels = map[string]string{"a": "b"} }, 3},
		{"spec", func(ss *apps.SidecarSet) { ss.Spec.Containers[0].Image = "img:2" }, 4},
		{"custom version label", func(ss *apps.SidecarSet) {
			ss.Labels = map[string]string{v1alpha1.SidecarSetCustomVersionLabel: "v2"}
		}, 4},
		{"status is ignored", func(ss *apps.SidecarSet) { ss.Status.MatchedPods = 9 }, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := newSidecarSet()
			old.Status.ReadyPods = 2
			ss := old.DeepCopy()
			tc.change(ss)
			NewStrategy(runtime.NewScheme()).PrepareForUpdate(context.Background(), ss, old)
			if ss.Generation != tc.wantGeneration {
				t.Errorf("generation = %d, want %d", ss.Generation, tc.wantGeneration)
			}
			if !apiequality.Semantic.DeepEqual(ss.Status, old.Status) {
				t.Errorf("status changed through the main resource: %+v", ss.Status)
			}
		})
	}
}

func TestStatusStrategyKeepsSpec(t *testing.T) {
	old := newSidecarSet()
	ss := old.DeepCopy()
	ss.Spec.Containers[0].Image = "img:2"
	ss.Labels = map[string]string{"a": "b"}
	ss.Status.MatchedPods = 5
	NewStatusStrategy(NewStrategy(runtime.NewScheme())).PrepareForUpdate(context.Background(), ss, old)
	if ss.Spec.Containers[0].Image != "img:1" || ss.Labels != nil || ss.Status.MatchedPods != 5 {
		t.Errorf("status update leaked spec or lost status: %+v", ss)
	}
}

func TestGetAttrs(t *testing.T) {
	ss := newSidecarSet()
	ss.Spec.Namespace = "ns1"
	_, fs, err := GetAttrs(ss)
	if err != nil || fs["metadata.name"] != "s" || fs["spec.namespace"] != "ns1" {
		t.Errorf("fields %v err %v", fs, err)
	}
}

// TestSelectorWarnings: a SidecarSet whose selector requires no label is told that every pod
// create calls the injection webhook; any selector that requires a label is not.
func TestSelectorWarnings(t *testing.T) {
	for _, tc := range []struct {
		name string
		sel  *metav1.LabelSelector
		warn bool
	}{
		{"matchLabels", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, false},
		{"Exists", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}}, false},
		{"NotIn only", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"db"}}}}, true},
		{"DoesNotExist only", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "legacy", Operator: metav1.LabelSelectorOpDoesNotExist}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := &apps.SidecarSet{Spec: apps.SidecarSetSpec{Selector: tc.sel}}
			s := Strategy{}
			for _, ws := range [][]string{s.WarningsOnCreate(context.Background(), ss), s.WarningsOnUpdate(context.Background(), ss, ss)} {
				if got := len(ws) > 0 && strings.Contains(ws[0], "every pod create"); got != tc.warn {
					t.Errorf("warnings %v, want a warning: %v", ws, tc.warn)
				}
			}
		})
	}
}
