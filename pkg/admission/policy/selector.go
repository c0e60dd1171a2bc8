package policy

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// Grouping: the SidecarSets whose selectors require the same label key (see representative) share
// group policies, spread over buckets by a hash of their names so that a change rewrites one
// bucket; the number of buckets follows the number of SidecarSets with that key (all stored ones,
// whatever path serves them, so that it is known without compiling).
//
// kube-apiserver parses the objectSelector and namespaceSelector of every stored policy again on
// every pod create, validating each key and value (1 to 2 µs each), so the policies are few and
// their selectors small: that is what a pod nothing selects pays.

// perBucket is the number of SidecarSets a bucket holds on average.
const perBucket = 32

// maxSelectorValues is the most values a group's objectSelector lists; a group whose members
// require more values of the key selects pods that have the key at all.
const maxSelectorValues = 8

// groupKey is the label key every pod ss selects has, "" when its selector requires none.
func groupKey(ss *v1alpha1.SidecarSet) string {
	k, _ := representative(ss.Spec.Selector)
	return k
}

// keyCounts counts the SidecarSets of each group key.
func keyCounts(sets []*v1alpha1.SidecarSet) map[string]int {
	out := map[string]int{}
	for _, ss := range sets {
		out[groupKey(ss)]++
	}
	return out
}

// buckets is the number of buckets for n SidecarSets: a power of two, about perBucket each.
func buckets(n int) int {
	b := 1
	for b*perBucket < n {
		b *= 2
	}
	return b
}

// policyName is the name of the group policy (and binding) of SidecarSet name among counts.
func policyName(ss *v1alpha1.SidecarSet, counts map[string]int) string {
	key := groupKey(ss)
	h := fnv.New32a()
	h.Write([]byte(ss.Name))
	return fmt.Sprintf("%s%s-%d", NamePrefix, keyPart(key), int(h.Sum32())%buckets(counts[key]))
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
// duplicates, or nil when one of them accepts any value of the key (or no key at all) or there are
// more than maxSelectorValues.
func keyValues(key string, sets []*v1alpha1.SidecarSet) []string {
	seen := map[string]bool{}
	for _, ss := range sets {
		k, values := representative(ss.Spec.Selector)
		if k != key || values == nil {
			return nil
		}
		for _, v := range values {
			seen[v] = true
		}
	}
	if len(seen) > maxSelectorValues {
		return nil
	}
	return sortedKeys(seen)
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
		k, vs := representative(sel)
		if k != key || (vs == nil) != (values == nil) {
			return false
		}
		if vs == nil && sel.MatchExpressions[0].Operator != metav1.LabelSelectorOpExists {
			return false
		}
	}
	return true
}

// matchConstraints selects pod CREATEs that have the group's key, with one of values when given,
// natively in kube-apiserver (a pod none of the members could select never reaches CEL); the
// excluded namespaces (a match condition) and the members' selectors (variables.m) are CEL. The
// namespaceSelector is empty: a non-empty one costs every pod create its parsing, and the
// namespace's labels.
//
// Every field kube-apiserver would default is set, so that a stored policy equals the compiled one.
func matchConstraints(key string, values []string) *admissionregistrationv1.MatchResources {
	equivalent := admissionregistrationv1.Equivalent
	scope := admissionregistrationv1.AllScopes
	objects := &metav1.LabelSelector{}
	switch {
	case key != "" && len(values) > 0:
		objects.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpIn, Values: values}}
	case key != "":
		objects.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpExists}}
	}
	return &admissionregistrationv1.MatchResources{
		ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
			RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{
					APIGroups:   []string{""},
					APIVersions: []string{"v1"},
					Resources:   []string{"pods"},
					Scope:       &scope,
				},
			},
		}},
		ObjectSelector:    objects,
		NamespaceSelector: &metav1.LabelSelector{},
		MatchPolicy:       &equivalent,
	}
}
