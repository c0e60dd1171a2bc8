package apps

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRequiredLabel(t *testing.T) {
	in := metav1.LabelSelectorRequirement{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}
	exists := metav1.LabelSelectorRequirement{Key: "canary", Operator: metav1.LabelSelectorOpExists}
	notIn := metav1.LabelSelectorRequirement{Key: "x", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"y"}}
	absent := metav1.LabelSelectorRequirement{Key: "z", Operator: metav1.LabelSelectorOpDoesNotExist}
	for _, tc := range []struct {
		name   string
		sel    *metav1.LabelSelector
		key    string
		values []string
	}{
		{"nil", nil, "", nil},
		{"matchLabels: the first key in order", &metav1.LabelSelector{MatchLabels: map[string]string{"b": "2", "a": "1"}, MatchExpressions: []metav1.LabelSelectorRequirement{in}}, "a", []string{"1"}},
		{"In wins over an earlier Exists", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{exists, in}}, "tier", []string{"a", "b"}},
		{"the first Exists", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{notIn, exists, {Key: "later", Operator: metav1.LabelSelectorOpExists}}}, "canary", nil},
		{"NotIn and DoesNotExist require no label", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{notIn, absent}}, "", nil},
	} {
		key, values := RequiredLabel(tc.sel)
		if key != tc.key || !slices.Equal(values, tc.values) {
			t.Errorf("%s: got %q %v, want %q %v", tc.name, key, values, tc.key, tc.values)
		}
	}
}

func TestWideningMessage(t *testing.T) {
	for _, tc := range []struct {
		w    Widening
		want []string
	}{
		{Widening{Reason: WideningSelectorRequiresNoLabel, CallsServer: true}, []string{"requires no label", "calls this server"}},
		{Widening{Reason: WideningTooManyLabelKeys}, []string{"more than 16 label keys", "checked against their match condition"}},
		{Widening{Reason: WideningMatchConditionTooLarge, CallsServer: true}, []string{"expression size", "while it is down"}},
	} {
		got := tc.w.Message()
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%+v: %q lacks %q", tc.w, got, w)
			}
		}
	}
}

func TestIntakeScopes(t *testing.T) {
	app := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	tier := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}}
	keyless := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"db"}}}}
	for _, tc := range []struct {
		name      string
		namespace string
		sels      []*metav1.LabelSelector
		want      []string
	}{
		{"a NamespacedSidecarSet: its namespace", "team-a", []*metav1.LabelSelector{keyless}, []string{"team-a"}},
		{"a key", "", []*metav1.LabelSelector{app}, []string{"label:app"}},
		{"the same key twice", "", []*metav1.LabelSelector{app, app}, []string{"label:app"}},
		{"a key changed", "", []*metav1.LabelSelector{tier, app}, []string{"label:tier", "label:app"}},
		{"a version requiring no label: every pod", "", []*metav1.LabelSelector{app, keyless}, []string{""}},
		{"no selector: every pod", "", []*metav1.LabelSelector{nil}, []string{""}},
		{"no version: every pod", "", nil, []string{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IntakeScopes(tc.namespace, tc.sels...); !slices.Equal(got, tc.want) {
				t.Errorf("IntakeScopes = %q, want %q", got, tc.want)
			}
		})
	}
}
