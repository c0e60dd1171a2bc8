package injection

import (
	"slices"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// Index finds the candidate SidecarSets of a pod without scanning the SidecarSets that cannot
// match it. It is a pure in-memory structure, safe for concurrent use.
//
// Each SidecarSet is filed under two keys:
//   - namespaces: spec.namespace; else the namespaceSelector's kubernetes.io/metadata.name
//     matchLabels value or In values; else "every namespace";
//   - one requirement of its pod selector: a matchLabels key=value, or the values of an In
//     expression (one entry per value), whichever has the fewest SidecarSets filed under it when
//     the SidecarSet is added (a common label such as inject=true does not become a hot spot);
//     SidecarSets with neither (Exists-only, NotIn-only, empty or nil selectors) go to a
//     per-namespace-key scan bucket.
//
// Candidates(ns, labels) looks up the buckets of ns and of "every namespace" under each of the
// pod's key=value labels, plus the scan buckets: its cost grows with the pod's labels and the
// candidates found, not with the SidecarSets that cannot match. Both keys are necessary
// conditions of a match, so no matching SidecarSet is missed; candidates still go through the
// full matcher in Inject. Stored SidecarSets are shared, not copied: callers must not modify them
// (informer objects are immutable by convention).
type Index struct {
	mu     sync.RWMutex
	byName map[string]*indexEntry
	byNS   map[string]*bucket // by namespace name
	all    bucket             // SidecarSets for every namespace
}

type indexEntry struct {
	ss         *v1alpha1.SidecarSet
	namespaces []string // nil: every namespace
	labels     []labelKV
}

type labelKV struct{ key, value string }

// bucket holds the SidecarSets of one namespace key, by selector key=value, plus the scan set.
type bucket struct {
	byLabel map[labelKV]map[string]*v1alpha1.SidecarSet
	scan    map[string]*v1alpha1.SidecarSet
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{byName: map[string]*indexEntry{}, byNS: map[string]*bucket{}}
}

// Add stores ss, replacing any SidecarSet of the same name.
func (x *Index) Add(ss *v1alpha1.SidecarSet) {
	if ss == nil {
		return
	}
	e := &indexEntry{ss: ss, namespaces: namespaceKeys(ss)}
	options := labelOptions(ss.Spec.Selector)
	x.mu.Lock()
	defer x.mu.Unlock()
	x.lazyInit()
	if old := x.byName[ss.Name]; old != nil {
		x.remove(old)
	}
	e.labels = x.cheapest(options, e.namespaces)
	x.byName[ss.Name] = e
	if e.namespaces == nil {
		x.all.insert(e)
		return
	}
	for _, ns := range e.namespaces {
		b := x.byNS[ns]
		if b == nil {
			b = &bucket{}
			x.byNS[ns] = b
		}
		b.insert(e)
	}
}

// Update stores the new version of a SidecarSet; it is Add.
func (x *Index) Update(ss *v1alpha1.SidecarSet) { x.Add(ss) }

// Delete removes the SidecarSet named like ss, if stored.
func (x *Index) Delete(ss *v1alpha1.SidecarSet) {
	if ss == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.lazyInit()
	if old := x.byName[ss.Name]; old != nil {
		x.remove(old)
	}
}

// Len returns the number of stored SidecarSets.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.byName)
}

// Candidates returns, sorted by name, the stored SidecarSets that may select a pod with these
// labels in namespace ("" means "default").
func (x *Index) Candidates(namespace string, podLabels map[string]string) []*v1alpha1.SidecarSet {
	if namespace == "" {
		namespace = "default"
	}
	x.mu.RLock()
	out := make([]*v1alpha1.SidecarSet, 0, 8)
	out = x.all.collect(out, podLabels)
	if b := x.byNS[namespace]; b != nil {
		out = b.collect(out, podLabels)
	}
	x.mu.RUnlock()
	slices.SortFunc(out, func(a, b *v1alpha1.SidecarSet) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (x *Index) lazyInit() {
	if x.byName == nil {
		x.byName, x.byNS = map[string]*indexEntry{}, map[string]*bucket{}
	}
}

func (x *Index) remove(e *indexEntry) {
	delete(x.byName, e.ss.Name)
	if e.namespaces == nil {
		x.all.delete(e)
		return
	}
	for _, ns := range e.namespaces {
		if b := x.byNS[ns]; b != nil {
			b.delete(e)
			if len(b.byLabel) == 0 && len(b.scan) == 0 {
				delete(x.byNS, ns)
			}
		}
	}
}

func (b *bucket) insert(e *indexEntry) {
	if e.labels == nil {
		if b.scan == nil {
			b.scan = map[string]*v1alpha1.SidecarSet{}
		}
		b.scan[e.ss.Name] = e.ss
		return
	}
	if b.byLabel == nil {
		b.byLabel = map[labelKV]map[string]*v1alpha1.SidecarSet{}
	}
	for _, kv := range e.labels {
		m := b.byLabel[kv]
		if m == nil {
			m = map[string]*v1alpha1.SidecarSet{}
			b.byLabel[kv] = m
		}
		m[e.ss.Name] = e.ss
	}
}

func (b *bucket) delete(e *indexEntry) {
	if e.labels == nil {
		delete(b.scan, e.ss.Name)
		return
	}
	for _, kv := range e.labels {
		if m := b.byLabel[kv]; m != nil {
			delete(m, e.ss.Name)
			if len(m) == 0 {
				delete(b.byLabel, kv)
			}
		}
	}
}

// collect appends the bucket's SidecarSets filed under one of the pod's labels, and its scan set.
// A SidecarSet is filed under a single selector key, and a pod has one value per key, so nothing
// is appended twice.
func (b *bucket) collect(out []*v1alpha1.SidecarSet, podLabels map[string]string) []*v1alpha1.SidecarSet {
	if len(b.byLabel) > 0 {
		for k, v := range podLabels {
			for _, ss := range b.byLabel[labelKV{k, v}] {
				out = append(out, ss)
			}
		}
	}
	for _, ss := range b.scan {
		out = append(out, ss)
	}
	return out
}

// namespaceKeys returns the namespaces ss is restricted to, nil for every namespace.
func namespaceKeys(ss *v1alpha1.SidecarSet) []string {
	sel := apps.NamespaceSelector(ss.Spec.Namespace, ss.Spec.NamespaceSelector)
	if sel == nil {
		return nil
	}
	if v, ok := sel.MatchLabels[corev1.LabelMetadataName]; ok {
		return []string{v}
	}
	for _, r := range sel.MatchExpressions {
		if r.Key == corev1.LabelMetadataName && r.Operator == metav1.LabelSelectorOpIn && len(r.Values) > 0 {
			return dedupe(r.Values)
		}
	}
	return nil
}

// labelOptions returns the selector requirements a SidecarSet can be filed under, each as the
// key=value pairs one of which a selected pod must carry: every matchLabels pair, and every In
// expression (its values). None means the scan bucket.
func labelOptions(sel *metav1.LabelSelector) [][]labelKV {
	if sel == nil {
		return nil
	}
	options := make([][]labelKV, 0, len(sel.MatchLabels)+len(sel.MatchExpressions))
	for k, v := range sel.MatchLabels {
		options = append(options, []labelKV{{k, v}})
	}
	for _, r := range sel.MatchExpressions {
		if r.Operator == metav1.LabelSelectorOpIn && len(r.Values) > 0 {
			values := dedupe(r.Values)
			kvs := make([]labelKV, len(values))
			for i, v := range values {
				kvs[i] = labelKV{r.Key, v}
			}
			options = append(options, kvs)
		}
	}
	return options
}

// cheapest picks, among the options, the one whose buckets (in the given namespace keys) hold the
// fewest SidecarSets now, so that SidecarSets sharing a common label (say inject=true) spread
// over their more specific ones. Ties go to the option whose first pair sorts first, so the
// choice is deterministic for a given index content. Any option is correct: each is necessary
// for a match.
func (x *Index) cheapest(options [][]labelKV, namespaces []string) []labelKV {
	var best []labelKV
	bestCost := 0
	for _, o := range options {
		cost := 0
		for _, kv := range o {
			if namespaces == nil {
				cost += len(x.all.byLabel[kv])
			}
			for _, ns := range namespaces {
				if b := x.byNS[ns]; b != nil {
					cost += len(b.byLabel[kv])
				}
			}
		}
		if best == nil || cost < bestCost || (cost == bestCost && less(o[0], best[0])) {
			best, bestCost = o, cost
		}
	}
	return best
}

func less(a, b labelKV) bool {
	return a.key < b.key || (a.key == b.key && a.value < b.value)
}

func dedupe(values []string) []string {
	out := append([]string(nil), values...)
	sort.Strings(out)
	j := 0
	for i, v := range out {
		if i == 0 || v != out[j-1] {
			out[j] = v
			j++
		}
	}
	return out[:j]
}
