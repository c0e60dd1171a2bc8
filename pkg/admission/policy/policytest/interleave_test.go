package policytest

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// selects reports whether ss selects pod, read with apimachinery's selectors alone.
func selects(t *testing.T, g *Corpus, ss *v1alpha1.SidecarSet, pod *corev1.Pod) bool {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(ss.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	if !sel.Matches(labels.Set(pod.Labels)) {
		return false
	}
	if ss.Spec.Namespace != "" {
		return ss.Spec.Namespace == pod.Namespace
	}
	if ss.Spec.NamespaceSelector == nil {
		return true
	}
	ns, err := metav1.LabelSelectorAsSelector(ss.Spec.NamespaceSelector)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if g.Namespace(i).Name == pod.Namespace {
			return ns.Matches(labels.Set(g.Namespace(i).Labels))
		}
	}
	t.Fatalf("pod %s in namespace %s, not the corpus's", pod.Name, pod.Namespace)
	return false
}

func TestInterleaved(t *testing.T) {
	pauses := []time.Duration{0, time.Second}
	if diff := cmp.Diff(New(3).Interleaved(40, "iw", pauses), New(3).Interleaved(40, "iw", pauses)); diff != "" {
		t.Fatalf("two sequences of one seed differ (-first +second):\n%s", diff)
	}
	for seed := uint64(0); seed < 20; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			g := New(seed)
			live := map[string]*v1alpha1.SidecarSet{}
			ops := map[Op]int{}
			quiet := 0
			for i, st := range g.Interleaved(40, "iw", pauses) {
				ops[st.Op]++
				if st.Quiet {
					quiet++
					if i < 20 || (st.Op != OpDelete && st.Op != OpSelector) {
						t.Errorf("step %d (%s) is quiet: want the first delete or selector change of the second half", i, st.Op)
					}
				}
				if st.Op == OpUncanary || st.Op == OpDelete {
					if live[st.Set.Name] == nil {
						t.Fatalf("step %d: %s of %s, which is not live", i, st.Op, st.Set.Name)
					}
					delete(live, st.Set.Name)
				} else {
					if (st.Previous == nil) != (live[st.Set.Name] == nil) {
						t.Fatalf("step %d: %s of %s: previous %v, live %v", i, st.Op, st.Set.Name, st.Previous != nil, live[st.Set.Name] != nil)
					}
					live[st.Set.Name] = st.Set
				}
				if len(live) > maxLive {
					t.Fatalf("step %d: %d SidecarSets live", i, len(live))
				}
				if base, ok := apps.CanaryBase(st.Set.Annotations); ok && st.Op == OpCanary && live[base] == nil {
					t.Fatalf("step %d: canary %s of %s, which is not live", i, st.Set.Name, base)
				}
				for k := 0; k < 3; k++ {
					if !selects(t, g, st.Set, st.Pods[k]) {
						t.Errorf("step %d: %s does not select pod %d, labels %v in %s", i, st.Set.Name, k, st.Pods[k].Labels, st.Pods[k].Namespace)
					}
				}
				none := st.Pods[len(st.Pods)-1]
				for _, ss := range live {
					if selects(t, g, ss, none) {
						t.Errorf("step %d: %s selects the last pod, labels %v", i, ss.Name, none.Labels)
					}
				}
			}
			if quiet != 1 {
				t.Errorf("%d quiet steps, want 1", quiet)
			}
			for _, op := range []Op{OpCreate, OpImage, OpSelector, OpDelete} {
				if ops[op] == 0 {
					t.Errorf("no %s in 40 steps: %v", op, ops)
				}
			}
		})
	}
}
