package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// celLimit is CEL's limit on an expression in kube-apiserver (code points); etcdLimit is the
// largest object etcd stores by default.
const (
	celLimit  = 100_000
	etcdLimit = 1_500_000
)

// TestAdversarialLimits: whatever the SidecarSets (huge selectors, 20,000 values, thousands that
// accept any value of one key with names chosen to share a bucket, many that may share pods), every
// object the plan writes stays within CEL's expression limit and etcd's object limit, and every
// policy compiles in kube-apiserver's CEL environment; what does not fit is served by the webhook
// with a stated reason.
func TestAdversarialLimits(t *testing.T) {
	container := func(ss *v1alpha1.SidecarSet, name string) {
		ss.Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: name, Image: "busybox"}}}
	}
	for _, tc := range []struct {
		name string
		sets func() []*v1alpha1.SidecarSet
	}{
		{"20,000 values", func() []*v1alpha1.SidecarSet {
			ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "huge"}}
			ss.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: manyValues(20000)}}}
			container(ss, "c")
			return []*v1alpha1.SidecarSet{ss}
		}},
		{"huge selectors", func() []*v1alpha1.SidecarSet {
			var out []*v1alpha1.SidecarSet
			for i := 0; i < 40; i++ {
				ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%03d", i)}}
				labels := map[string]string{"app": fmt.Sprintf("v%d", i)}
				var exprs []metav1.LabelSelectorRequirement
				for k := 0; k < 30; k++ {
					labels[fmt.Sprintf("k%02d-%s", k, strings.Repeat("x", 40))] = strings.Repeat("y", 60)
					exprs = append(exprs, metav1.LabelSelectorRequirement{Key: fmt.Sprintf("e%02d", k), Operator: metav1.LabelSelectorOpNotIn, Values: manyValues(20)})
				}
				ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels, MatchExpressions: exprs}
				container(ss, fmt.Sprintf("c%d", i))
				out = append(out, ss)
			}
			return out
		}},
		{"names chosen to share a bucket", func() []*v1alpha1.SidecarSet {
			var out []*v1alpha1.SidecarSet
			for i := 0; len(out) < 600; i++ {
				name := fmt.Sprintf("pile-%s-%d", strings.Repeat("n", 48), i)
				if hashOf(name)%buckets(600, perBucket) != 0 {
					continue // the attacker keeps the names of one bucket only
				}
				ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
				ss.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "app", Operator: metav1.LabelSelectorOpExists}}}
				ss.Spec.Namespace = name // each its own namespace: they share no pod
				container(ss, name)
				out = append(out, ss)
			}
			return out
		}},
		{"many that may share pods", func() []*v1alpha1.SidecarSet {
			var out []*v1alpha1.SidecarSet
			for i := 0; i < 200; i++ {
				ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("near-%03d", i)}}
				ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{fmt.Sprintf("key-%d", i): "on"}}
				container(ss, fmt.Sprintf("c%d", i))
				out = append(out, ss)
			}
			return out
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sets := tc.sets()
			for _, ss := range sets {
				prepare(t, ss)
			}
			plan, err := PlanPolicies(PlanInput{SidecarSets: sets, ExcludedNamespaces: []string{"sidecarset-system"}, Now: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range plan.Policies {
				data, _ := json.Marshal(p)
				if len(data) > etcdLimit {
					t.Errorf("policy %s: %d bytes, more than etcd stores", p.Name, len(data))
				}
				var exprs []string
				for _, v := range p.Spec.Variables {
					exprs = append(exprs, v.Expression)
				}
				for _, c := range p.Spec.MatchConditions {
					exprs = append(exprs, c.Expression)
				}
				for _, m := range p.Spec.Mutations {
					exprs = append(exprs, m.JSONPatch.Expression)
				}
				for _, e := range exprs {
					if n := utf8.RuneCountInString(e); n > celLimit {
						t.Errorf("policy %s: an expression of %d code points", p.Name, n)
					}
				}
				compilePolicy(t, p)
			}
			for _, m := range plan.WebhookMatches {
				if n := utf8.RuneCountInString(m.Condition); n > celLimit {
					t.Errorf("webhook condition of %d code points", n)
				}
			}
			reasons := map[string]int{}
			for _, r := range plan.Results {
				if r.Path == apps.PathWebhook {
					if r.Reason == "" || r.Message == "" {
						t.Errorf("a SidecarSet goes to the webhook without a stated reason: %+v", r)
					}
					reasons[r.Reason]++
				}
			}
			t.Logf("%d SidecarSets, %d policies; webhook: %v", len(sets), len(plan.Policies), reasons)
		})
	}
}
