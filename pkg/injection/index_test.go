package injection

import (
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

func indexSet(t testing.TB, name, spec string) *v1alpha1.SidecarSet {
	t.Helper()
	return mustSidecarSet(t, "metadata: {name: "+name+"}\nspec:\n"+spec+"\n  containers: [{name: c-"+name+", image: x}]")
}

func candidateNames(sets []*v1alpha1.SidecarSet) []string {
	out := []string{}
	for _, s := range sets {
		out = append(out, s.Name)
	}
	return out
}

func TestIndexCandidates(t *testing.T) {
	idx := NewIndex()
	for _, s := range []*v1alpha1.SidecarSet{
		indexSet(t, "labels", "  selector: {matchLabels: {app: web, tier: front}}"),
		indexSet(t, "in", "  selector: {matchExpressions: [{key: app, operator: In, values: [web, api, web]}]}"),
		indexSet(t, "exists", "  selector: {matchExpressions: [{key: app, operator: Exists}]}"),
		indexSet(t, "other-app", "  selector: {matchLabels: {app: db}}"),
		indexSet(t, "ns-field", "  namespace: team-a\n  selector: {matchLabels: {app: web}}"),
		indexSet(t, "ns-label", "  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: team-b}}\n  selector: {matchLabels: {app: web}}"),
		indexSet(t, "ns-in", "  namespaceSelector: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: In, values: [team-a, team-b]}]}\n  selector: {matchExpressions: [{key: app, operator: Exists}]}"),
		indexSet(t, "ns-env", "  namespaceSelector: {matchLabels: {env: prod}}\n  selector: {matchLabels: {app: web}}"),
	} {
		idx.Add(s)
	}
	tests := []struct {
		ns     string
		labels map[string]string
		want   []string
	}{
		{ns: "default", labels: map[string]string{"app": "web", "tier": "front"}, want: []string{"exists", "in", "labels", "ns-env"}},
		{ns: "", labels: map[string]string{"app": "api"}, want: []string{"exists", "in"}},
		// "labels" is filed under app=web only: a candidate, which the matcher rejects.
		{ns: "team-a", labels: map[string]string{"app": "web"}, want: []string{"exists", "in", "labels", "ns-env", "ns-field", "ns-in"}},
		{ns: "team-b", labels: map[string]string{"app": "db"}, want: []string{"exists", "ns-in", "other-app"}},
		{ns: "team-c", labels: nil, want: []string{"exists"}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%v", tc.ns, tc.labels), func(t *testing.T) {
			if diff := cmp.Diff(tc.want, candidateNames(idx.Candidates(tc.ns, tc.labels))); diff != "" {
				t.Errorf("Candidates (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIndexUpdateDelete(t *testing.T) {
	idx := NewIndex()
	idx.Add(indexSet(t, "s", "  selector: {matchLabels: {app: web}}"))
	idx.Update(indexSet(t, "s", "  namespace: ns1\n  selector: {matchLabels: {app: api}}"))
	if got := candidateNames(idx.Candidates("default", map[string]string{"app": "web"})); len(got) != 0 {
		t.Errorf("old keys still indexed: %v", got)
	}
	if got := candidateNames(idx.Candidates("ns1", map[string]string{"app": "api"})); !cmp.Equal(got, []string{"s"}) {
		t.Errorf("new keys not indexed: %v", got)
	}
	if idx.Len() != 1 {
		t.Errorf("Len = %d, want 1", idx.Len())
	}
	idx.Delete(indexSet(t, "s", "  selector: {matchLabels: {x: y}}"))
	if idx.Len() != 0 || len(idx.byNS) != 0 || len(idx.all.byLabel) != 0 {
		t.Errorf("index not empty after delete: %d, %v", idx.Len(), idx.byNS)
	}
	idx.Delete(nil)
	idx.Add(nil)
	var zero Index
	zero.Add(indexSet(t, "z", "  selector: {matchLabels: {app: web}}"))
	if got := candidateNames(zero.Candidates("x", map[string]string{"app": "web"})); !cmp.Equal(got, []string{"z"}) {
		t.Errorf("zero Index: %v", got)
	}
}

// TestIndexNeverMissesAMatch checks, over the conformance SidecarSets and pods, that every
// SidecarSet the matcher accepts is a candidate.
func TestIndexNeverMissesAMatch(t *testing.T) {
	scenarios := loadScenarios(t)
	idx := NewIndex()
	var all []*v1alpha1.SidecarSet
	for _, sc := range scenarios {
		for _, s := range sc.sidecarSets {
			idx.Add(s)
			all = append(all, s)
		}
	}
	for _, sc := range scenarios {
		for _, ns := range []string{sc.namespace, "default", "inj-43-elsewhere"} {
			labels := map[string]string{"kubernetes.io/metadata.name": ns}
			cands := map[string]bool{}
			for _, c := range idx.Candidates(ns, sc.pod.Labels) {
				cands[c.Name] = true
			}
			for _, s := range all {
				reason, err := match(s, ns, labels, sc.pod.Labels)
				if err == nil && reason == "" && !cands[s.Name] {
					t.Errorf("%s in %s: matching SidecarSet %s is not a candidate", sc.name, ns, s.Name)
				}
			}
		}
	}
}

func TestIndexConcurrent(t *testing.T) {
	idx := NewIndex()
	sets := make([][]*v1alpha1.SidecarSet, 4)
	for w := range sets {
		for i := 0; i < 30; i++ {
			sets[w] = append(sets[w], indexSet(t, fmt.Sprintf("s-%d-%d", w, i%10), fmt.Sprintf("  selector: {matchLabels: {app: a%d}}", i%3)))
		}
	}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(2)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				s := sets[w][i%30]
				idx.Add(s)
				if i%4 == 0 {
					idx.Delete(s)
				}
			}
		}(w)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				for _, c := range idx.Candidates("default", map[string]string{"app": fmt.Sprintf("a%d", i%3)}) {
					if c == nil {
						t.Error("nil candidate")
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestIndexAvoidsHotSpots: SidecarSets sharing a common label are filed under their specific one.
func TestIndexAvoidsHotSpots(t *testing.T) {
	idx := NewIndex()
	for i := 0; i < 100; i++ {
		idx.Add(indexSet(t, fmt.Sprintf("s-%03d", i), fmt.Sprintf("  selector: {matchLabels: {inject: \"true\", zz: z-%d}}", i)))
	}
	got := candidateNames(idx.Candidates("default", map[string]string{"inject": "true", "zz": "z-50"}))
	if len(got) > 2 || !cmp.Equal(got[len(got)-1], "s-050") {
		t.Errorf("Candidates = %v, want s-050 and at most one other", got)
	}
}
