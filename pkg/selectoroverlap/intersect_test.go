package selectoroverlap

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	klabels "k8s.io/apimachinery/pkg/labels"
)

func req(k string, op metav1.LabelSelectorOperator, vs ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: k, Operator: op, Values: vs}
}

func TestIntersect(t *testing.T) {
	in, notIn, exists, absent := metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn, metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist
	cases := []struct {
		name    string
		a, b    *metav1.LabelSelector
		want    bool
		witness map[string]string // a label set both select, when want
	}{
		{"nil selectors", nil, nil, true, map[string]string{}},
		{"same label", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, true, map[string]string{"app": "web"}},
		{"different values", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, false, nil},
		{"different keys", &metav1.LabelSelector{MatchLabels: map[string]string{"a": "h"}}, &metav1.LabelSelector{MatchLabels: map[string]string{"b": "i"}}, true, map[string]string{"a": "h", "b": "i"}},
		{"exists on another key (Overlap says disjoint)", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{req("tier", exists)}}, true, map[string]string{"app": "web", "tier": "x"}},
		{"in against in", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{req("app", in, "web", "db")}},
			&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{req("app", in, "db", "cache")}}, true, map[string]string{"app": "db"}},
		{"in excluded by notin", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{req("app", in, "web")}},
			&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{req("app", notIn, "web")}}, false, nil},
		{"exists against absent", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{req("canary", exists)}},
			&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{req("canary", absent)}}, false, nil},
		{"label against absent", &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}},
			&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{req("canary", absent)}}, false, nil},
		{"notin against absent", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{req("app", notIn, "x")}},
			&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{req("app", absent)}}, true, map[string]string{}},
		{"in lists sharing a value neither excludes", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{req("app", in, "a", "b", "c"), req("app", notIn, "a")}},
			&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{req("app", in, "a", "c"), req("app", notIn, "b")}}, true, map[string]string{"app": "c"}},
		{"in lists whose shared values are excluded by one or the other", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{req("app", in, "a", "b", "c"), req("app", notIn, "a")}},
			&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{req("app", in, "a", "b"), req("app", notIn, "b")}}, false, nil},
		{"label excluded by the other", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{req("app", notIn, "web", "db")}}, false, nil},
		{"a selector contradicting itself", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{req("x", exists), req("x", absent)}},
			&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, false, nil},
		{"exists on both, notin on one", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{req("x", exists)}},
			&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{req("x", exists), req("x", notIn, "a")}}, true, map[string]string{"x": "b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Intersect(tc.a, tc.b); got != tc.want {
				t.Fatalf("Intersect = %v, want %v", got, tc.want)
			}
			if got := Intersect(tc.b, tc.a); got != tc.want {
				t.Fatalf("Intersect (swapped) = %v, want %v", got, tc.want)
			}
			ra, rb := Gather(tc.a), Gather(tc.b)
			if got := ra.Intersects(rb); got != tc.want {
				t.Fatalf("Gather(a).Intersects(Gather(b)) = %v, want %v", got, tc.want)
			}
			if got := rb.Intersects(ra); got != tc.want {
				t.Fatalf("Gather(b).Intersects(Gather(a)) = %v, want %v", got, tc.want)
			}
			if !tc.want {
				return
			}
			for _, s := range []*metav1.LabelSelector{tc.a, tc.b} {
				if s == nil {
					continue
				}
				sel, err := metav1.LabelSelectorAsSelector(s)
				if err != nil {
					t.Fatal(err)
				}
				if !sel.Matches(klabels.Set(tc.witness)) {
					t.Fatalf("witness %v not selected by %v", tc.witness, s)
				}
			}
		})
	}
}
