package policy

import (
	"fmt"
	"hash/fnv"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sidecarset/apiserver/pkg/admission/policy/neighbour"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// Grouping: the SidecarSets whose selectors require the same label key (see representative) share
// group policies. kube-apiserver parses the objectSelector and namespaceSelector of every stored
// policy again on every admission request, validating each key and value (about 0.3 µs a value,
// 1.5 µs a policy), and converts the pod for CEL once for every policy whose objectSelector
// selects it (about 0.2 ms). So a pod should meet as few policies as the SidecarSets that select it
// need, and the stored selectors must stay small whatever the number of SidecarSets:
//
//   - a SidecarSet whose selector names the values of its key (matchLabels, In) joins a value
//     group: the SidecarSets of its first value share a bucket, buckets hold about valuesPerBucket
//     values, by a hash of the value, and the policy's objectSelector lists the values its members
//     select, so a pod meets only the policy of its own value;
//   - kube-apiserver pays for every listed value on every request, so at most maxNativeValues
//     values are listed in all: the values most SidecarSets select first, then those a policy
//     already injects (so that a new SidecarSet does not move others), then by key and value.
//     The SidecarSets of the other values are served by the injection webhook, whose selectors
//     kube-apiserver parses once (reason apps.ReasonSelectorBudget): for them a policy would cost every
//     request in the cluster more than the webhook costs their pods;
//   - a SidecarSet that accepts any value of its key (Exists, NotIn) joins a key group, spread over
//     buckets of about perBucket SidecarSets by a hash of its name, whose objectSelector asks for
//     the key alone.
//
// The assignment reads only the stored SidecarSets' selectors (whatever path serves each), so it
// is known without compiling, and a change rewrites one bucket unless the number of buckets of its
// key changes.

// perBucket is the number of SidecarSets a key group's bucket holds on average.
const perBucket = 32

// valuesPerBucket is the number of values a value group's bucket lists on average.
const valuesPerBucket = 16

// maxNativeValues is the most label values the objectSelectors of all group policies list together.
const maxNativeValues = 128

// groupKey is the label key every pod ss selects has, "" when its selector requires none.
func groupKey(ss *v1alpha1.SidecarSet) string {
	k, _ := apps.RequiredLabel(ss.Spec.Selector)
	return k
}

// assignment is the group policy of each stored SidecarSet, as decided by assign.
type assignment struct {
	policy map[string]string // SidecarSet name -> policy name
	over   map[string]bool   // SidecarSets whose value is beyond maxNativeValues
}

// policyFor returns the group policy of ss, or "" when its value is beyond the budget.
func (a *assignment) policyFor(ss *v1alpha1.SidecarSet) string { return a.policy[ss.Name] }

// valueGroup is the SidecarSets of one key that select a value first (NamespacedSidecarSets of
// one namespace apart from the others).
type valueGroup struct {
	key, value string
	tenant     string // the namespace of its NamespacedSidecarSets, "" for cluster SidecarSets
	sets       []*v1alpha1.SidecarSet
	values     map[string]bool // every value the sets select
	incumbent  bool            // a policy injects one of the sets now
	granted    bool            // one of the sets is granted the policy path (see Requests)
}

// groupClass tells apart, in policy names and bucket counts, the groups of cluster SidecarSets
// ("") and of NamespacedSidecarSets ("n"): they never share a group policy, so that tenants never
// take a cluster SidecarSet's room in one.
func groupClass(ss *v1alpha1.SidecarSet) string {
	if neighbour.TenantNamespace(ss) != "" {
		return "n"
	}
	return ""
}

// assign decides the group policy of every SidecarSet among sets (all stored ones); incumbent
// are the SidecarSets a policy injects now, granted those granted the policy path.
func assign(sets []*v1alpha1.SidecarSet, incumbent, granted map[string]bool) *assignment {
	a := &assignment{policy: map[string]string{}, over: map[string]bool{}}
	anyCounts := map[[2]string]int{}
	groups := map[[3]string]*valueGroup{}
	for _, ss := range sets {
		k, vs := apps.RequiredLabel(ss.Spec.Selector)
		if vs == nil {
			anyCounts[[2]string{groupClass(ss), k}]++
			continue
		}
		first := slices.Min(vs)
		id := [3]string{neighbour.TenantNamespace(ss), k, first}
		g := groups[id]
		if g == nil {
			g = &valueGroup{key: k, value: first, tenant: id[0], values: map[string]bool{}}
			groups[id] = g
		}
		g.sets = append(g.sets, ss)
		g.incumbent = g.incumbent || incumbent[ss.Name]
		g.granted = g.granted || granted[ss.Name]
		for _, v := range vs {
			g.values[v] = true
		}
	}
	for _, ss := range sets {
		if k, vs := apps.RequiredLabel(ss.Spec.Selector); vs == nil {
			c := groupClass(ss)
			a.policy[ss.Name] = fmt.Sprintf("%s%s-%s%d", apps.PolicyNamePrefix, keyPart(k), c, hashOf(ss.Name)%buckets(anyCounts[[2]string{c, k}], perBucket))
		}
	}
	listed, native := 0, map[[2]string]int{}
	var admitted []*valueGroup
	for _, g := range rank(groups) {
		if listed+len(g.values) > maxNativeValues {
			for _, ss := range g.sets {
				a.over[ss.Name] = true
			}
			continue
		}
		listed += len(g.values)
		native[[2]string{g.class(), g.key}]++
		admitted = append(admitted, g)
	}
	for _, g := range admitted {
		c := g.class()
		name := fmt.Sprintf("%s%s-%sv%d", apps.PolicyNamePrefix, keyPart(g.key), c, hashOf(g.value)%buckets(native[[2]string{c, g.key}], valuesPerBucket))
		for _, ss := range g.sets {
			a.policy[ss.Name] = name
		}
	}
	return a
}

func (g *valueGroup) class() string {
	if g.tenant != "" {
		return "n"
	}
	return ""
}

// rank orders the value groups for the value budget: those of cluster SidecarSets first (those
// with a granted SidecarSet, then the most SidecarSets first, then those a policy injects now,
// then by key and value), then those of
// NamespacedSidecarSets in turns, each namespace's first group before any namespace's second, so
// that no namespace takes the budget of the cluster SidecarSets or of another namespace.
func rank(groups map[[3]string]*valueGroup) []*valueGroup {
	ranked := make([]*valueGroup, 0, len(groups))
	for _, g := range groups {
		ranked = append(ranked, g)
	}
	sort.Slice(ranked, func(i, j int) bool {
		x, y := ranked[i], ranked[j]
		if x.granted != y.granted {
			return x.granted
		}
		if len(x.sets) != len(y.sets) {
			return len(x.sets) > len(y.sets)
		}
		if x.incumbent != y.incumbent {
			return x.incumbent
		}
		return x.key < y.key || (x.key == y.key && x.value < y.value)
	})
	turn, seen := make(map[*valueGroup]int, len(ranked)), map[string]int{}
	for _, g := range ranked {
		if g.tenant != "" {
			seen[g.tenant]++
			turn[g] = seen[g.tenant]
		}
	}
	sort.SliceStable(ranked, func(i, j int) bool {
		x, y := ranked[i], ranked[j]
		if turn[x] != turn[y] {
			return turn[x] < turn[y]
		}
		return x.tenant < y.tenant && turn[x] > 0
	})
	return ranked
}

func hashOf(s string) int {
	h := fnv.New32a()
	h.Write([]byte(s))
	return int(h.Sum32())
}

// buckets is the number of buckets for n items: a power of two, about per each.
func buckets(n, per int) int {
	b := 1
	for b*per < n {
		b *= 2
	}
	return b
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9.-]+`)

// keyPart renders a label key in a policy name: as it is when it is a valid name part, else
// sanitized with a hash of the key.
func keyPart(key string) string {
	if key == "" {
		return "any"
	}
	safe := strings.Trim(unsafeChars.ReplaceAllString(strings.ToLower(strings.ReplaceAll(key, "/", ".")), "-"), ".-")
	if safe == key && len(key) <= 200 && len(validation.IsDNS1123Subdomain(key)) == 0 {
		return key
	}
	if len(safe) > 60 {
		safe = strings.Trim(safe[:60], ".-")
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	return fmt.Sprintf("%s-%08x", safe, h.Sum32())
}

// keyValues returns the values of the group key one of sets requires, sorted and without
// duplicates, or nil when one of them accepts any value of the key (or no key at all). A value
// group lists at most maxNativeValues (see assign).
func keyValues(key string, sets []*v1alpha1.SidecarSet) []string {
	seen := map[string]bool{}
	for _, ss := range sets {
		k, values := apps.RequiredLabel(ss.Spec.Selector)
		if k != key || values == nil {
			return nil
		}
		for _, v := range values {
			seen[v] = true
		}
	}
	return append([]string{}, slices.Sorted(maps.Keys(seen))...) // not nil, which means any value
}

// exactSelector reports whether every pod the group's objectSelector (key, values) selects is one
// a member's selector selects too, whatever its namespace: each member selects by that key alone,
// with one of values (or any value, when values is nil and every member accepts any).
func exactSelector(key string, values []string, sets []*v1alpha1.SidecarSet) bool {
	for _, ss := range sets {
		sel := ss.Spec.Selector
		if sel == nil || ss.Spec.Namespace != "" || ss.Spec.NamespaceSelector != nil || len(sel.MatchLabels)+len(sel.MatchExpressions) != 1 {
			return false
		}
		k, vs := apps.RequiredLabel(sel)
		if k != key || (vs == nil) != (values == nil) {
			return false
		}
		if vs == nil && sel.MatchExpressions[0].Operator != metav1.LabelSelectorOpExists {
			return false
		}
	}
	return true
}
