package policy

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidecarset/apiserver/pkg/admission/policy/celpatch"
	"github.com/sidecarset/apiserver/pkg/admission/policy/policytest"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestMemo: a plan made with the memo of the previous plans equals the plan made from nothing,
// after each write of a sequence (create, spec change, status write, canary, delete), on every
// benchmark shape.
func TestMemo(t *testing.T) {
	for _, shape := range policytest.Shapes {
		t.Run(shape, func(t *testing.T) {
			rv := 0
			stored := func(ss *v1alpha1.SidecarSet) *v1alpha1.SidecarSet {
				rv++
				ss.ResourceVersion = fmt.Sprint(rv)
				if ss.UID == "" {
					ss.UID = types.UID("uid-" + ss.Name)
				}
				return prepare(t, ss)
			}
			sets := map[string]*v1alpha1.SidecarSet{}
			for _, ss := range policytest.BenchSidecarSets(shape, 120) {
				ss.Generation = 1
				sets[ss.Name] = stored(ss)
			}
			now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
			memo := &Memo{}
			check := func(step string) Plan {
				t.Helper()
				list := make([]*v1alpha1.SidecarSet, 0, len(sets))
				for _, name := range slices.Sorted(maps.Keys(sets)) {
					list = append(list, sets[name])
				}
				in := PlanInput{SidecarSets: list, Now: now, ExcludedNamespaces: []string{"sidecarset-system"}}
				want, err := PlanPolicies(in)
				if err != nil {
					t.Fatal(err)
				}
				in.Memo = memo
				got, err := PlanPolicies(in)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("%s: the memoized plan differs (-fresh +memo):\n%s", step, diff)
				}
				return got
			}
			check("first plan")
			check("again")
			before := maps.Clone(memo.members)
			now = now.Add(time.Second) // a SidecarSet no policy records is stamped with the plan's time
			check("a second later")
			for name, e := range memo.members {
				if b, ok := before[name]; ok && b.member != nil && compiledAgain(b.member, e.member) {
					t.Errorf("a second later: %s was compiled again (only its hash entries changed)", name)
				}
			}
			add := policytest.BenchSidecarSets(shape, 200)[150]
			add.Name, add.Generation = "added", 1
			sets["added"] = stored(add)
			check("create")
			changed := sets["bench-0007"].DeepCopy()
			changed.Generation++
			changed.Spec.Containers[0].Image = "busybox:2"
			changed.Spec.Containers[0].PodInjectPolicy = v1alpha1.BeforeAppContainerType
			sets[changed.Name] = stored(changed)
			check("spec change")
			renamed := sets["bench-0001"].DeepCopy()
			renamed.Generation++
			renamed.Spec.Containers[0].Name = "renamed"
			sets[renamed.Name] = stored(renamed)
			check("a neighbour's sidecar renamed") // its neighbours' policies name it
			now = now.Add(time.Minute)
			check("a minute later")
			widened := sets["bench-0003"].DeepCopy()
			widened.Generation++
			widened.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "bench", Operator: metav1.LabelSelectorOpExists}}}
			sets[widened.Name] = stored(widened)
			check("selector widened")
			status := sets["bench-0001"].DeepCopy()
			status.Status.LatestRevision = "bench-0001-abc"
			sets[status.Name] = stored(status)
			check("status write")
			canary := sets["bench-0010"].DeepCopy()
			canary.Annotations[apps.SidecarSetCanaryAnnotation], canary.Annotations[apps.SidecarSetBaseAnnotation] = "true", "bench-0011"
			sets[canary.Name] = stored(canary)
			check("canary")
			delete(sets, "bench-0002")
			delete(sets, "bench-0011")
			check("deletes")
			sets["bench-0002"] = stored(&v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "bench-0002", Generation: 1},
				Spec: v1alpha1.SidecarSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"bench": "five"}},
					Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "five-2", Image: "other"}}}}})
			check("re-created")
			// Past the value budget, then back within it a minute later: the SidecarSets the
			// webhook served enter policies with the stamp of the plan that places them (the
			// memo renders their hash entries only then).
			more := policytest.BenchSidecarSets(shape, 200)
			for i := 160; i < 180; i++ {
				more[i].Generation = 1
				sets[more[i].Name] = stored(more[i])
			}
			over := check("past the value budget")
			now = now.Add(time.Minute)
			for i := 20; i < 40; i++ {
				delete(sets, fmt.Sprintf("bench-%04d", i))
			}
			within := check("back within the value budget")
			if shape == policytest.ShapeOneKey {
				entered := 0
				for name, r := range over.Results {
					if r.Reason == apps.ReasonSelectorBudget && within.Results[name].Path == apps.PathPolicy {
						entered++
					}
				}
				if entered == 0 {
					t.Error("no SidecarSet over the value budget entered a policy once back within it")
				}
			}
		})
	}
}

// compiledAgain reports whether after is a new compilation rather than before with its hash
// entries rendered again: a compilation gathers its deferral names anew (every member of the
// benchmarks' shapes has some), a copy shares them.
func compiledAgain(before, after *celpatch.Member) bool {
	b, _ := before.DeferNames()
	a, _ := after.DeferNames()
	return unsafe.SliceData(b) != unsafe.SliceData(a)
}
