package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/sidecarset/apiserver/pkg/admission/policy/policytest"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// benchSets returns n SidecarSets selecting distinct label values, one container each.
func benchSets(b *testing.B, n int) []*v1alpha1.SidecarSet {
	out := make([]*v1alpha1.SidecarSet, n)
	for i := range out {
		ss := &v1alpha1.SidecarSet{}
		ss.Name = fmt.Sprintf("bench-%04d", i)
		ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprint(i % 50), "tier": fmt.Sprint(i)}}
		ss.Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: fmt.Sprintf("c-%d", i), Image: "busybox",
			Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}}}
		out[i] = prepare(b, ss)
	}
	return out
}

// BenchmarkPlanPolicies1000 plans 1,000 stored SidecarSets, as the controller does on every
// change: benchSets ("fifty": 50 values of app, each with another label) and every shape of the
// injection benchmarks.
func BenchmarkPlanPolicies1000(b *testing.B) {
	shapes := map[string][]*v1alpha1.SidecarSet{"fifty": benchSets(b, 1000)}
	for _, shape := range policytest.Shapes {
		sets := policytest.BenchSidecarSets(shape, 1000)
		for _, ss := range sets {
			prepare(b, ss)
		}
		shapes[shape] = sets
	}
	now := time.Now()
	for _, name := range slices.Sorted(maps.Keys(shapes)) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := PlanPolicies(PlanInput{SidecarSets: shapes[name], Now: now}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGroupPolicy runs, in kube-apiserver's evaluator, the group policy that injects 5 of
// 1,000 stored SidecarSets into a pod ("five"), and the same policy on a pod none of its members
// selects ("none": its match conditions turn it away).
func BenchmarkGroupPolicy(b *testing.B) {
	sets := policytest.BenchSidecarSets(policytest.ShapeOneKey, 1000)
	for _, ss := range sets {
		prepare(b, ss)
	}
	plan, err := PlanPolicies(PlanInput{SidecarSets: sets, Now: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	var cp *compiledPolicy
	for _, p := range plan.Policies {
		if Members(p)["bench-0000"] { // the group of the five
			cp = compilePolicy(b, p)
			b.Logf("policy %s: %d members, %d mutations", p.Name, len(Members(p)), len(p.Spec.Mutations))
		}
	}
	if cp == nil {
		b.Fatalf("no policy injects bench-0000 among %d", len(plan.Policies))
	}
	b.Logf("%d policies for %d SidecarSets", len(plan.Policies), len(sets))
	ns := namespace("bench", nil)
	for _, tc := range []struct {
		name       string
		label      string
		containers int
	}{{"five", "five", 6}, {"none", "none", 1}} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "bench", Labels: map[string]string{"bench": tc.label}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				out, err := cp.run(context.Background(), pod.DeepCopy(), ns)
				if err != nil {
					b.Fatal(err)
				}
				if len(out.Spec.Containers) != tc.containers {
					b.Fatalf("%d containers, want %d", len(out.Spec.Containers), tc.containers)
				}
			}
		})
	}
}

// BenchmarkPlanAfterCreate plans 1,000 and 10,000 stored SidecarSets of each benchmark shape with
// the memo of the previous plan after one more SidecarSet was created a second later, as the
// controller does on a write. Between two creates the SidecarSet is deleted again (not timed).
func BenchmarkPlanAfterCreate(b *testing.B) {
	for _, shape := range policytest.Shapes {
		for _, n := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("%s/%d", shape, n), func(b *testing.B) {
				sets := policytest.BenchSidecarSets(shape, n+2)
				for i, ss := range sets {
					ss.UID, ss.ResourceVersion, ss.Generation = types.UID(ss.Name), fmt.Sprint(i+1), 1
					prepare(b, ss)
				}
				now, memo := time.Now(), &Memo{}
				plan := func(sets []*v1alpha1.SidecarSet) {
					now = now.Add(time.Second)
					if _, err := PlanPolicies(PlanInput{SidecarSets: sets, Now: now, Memo: memo}); err != nil {
						b.Fatal(err)
					}
				}
				plan(sets[:n])
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					plan(sets[:n+1])
					b.StopTimer()
					plan(sets[:n])
					b.StartTimer()
				}
			})
		}
	}
}

// BenchmarkPlanFromNothing plans 10,000 and 50,000 stored SidecarSets of each benchmark shape
// with an empty memo, as a new leader does first: cluster SidecarSets, and as many
// NamespacedSidecarSets 200 to a namespace.
func BenchmarkPlanFromNothing(b *testing.B) {
	for _, n := range []int{10000, 50000} {
		for _, shape := range policytest.Shapes {
			for _, kind := range []string{"cluster", "namespaced"} {
				b.Run(fmt.Sprintf("%s/%s/%d", shape, kind, n), func(b *testing.B) {
					sets := fromNothingSets(b, shape, kind, n)
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						if _, err := PlanPolicies(PlanInput{SidecarSets: sets, Now: time.Now(), Memo: &Memo{}}); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// fromNothingSets returns n stored SidecarSets of shape, of kind cluster or namespaced (200 to a
// namespace).
func fromNothingSets(b *testing.B, shape, kind string, n int) []*v1alpha1.SidecarSet {
	sets := policytest.BenchSidecarSets(shape, n)
	for i, ss := range sets {
		if kind == "namespaced" {
			ns := &v1alpha1.NamespacedSidecarSet{ObjectMeta: ss.ObjectMeta, Spec: ss.Spec}
			ns.Namespace, ns.Spec.Namespace, ns.Spec.NamespaceSelector = fmt.Sprintf("ns-%03d", i/200), "", nil
			ss = ns.AsSidecarSet()
			sets[i] = ss
		}
		ss.UID, ss.ResourceVersion, ss.Generation = types.UID(ss.Name), fmt.Sprint(i+1), 1
		prepare(b, ss)
	}
	return sets
}

// BenchmarkPlanWithTenants plans 1,000 cluster SidecarSets (the manual's one-key shape and the
// mixed one) beside 0, 1,000 and 5,000 NamespacedSidecarSets spread over 50 namespaces, each
// namespace's selecting its own app values (a tenant's usual shape), as the controller does on
// every change: the planner's cost as tenants are added.
func BenchmarkPlanWithTenants(b *testing.B) {
	now := time.Now()
	for _, shape := range []string{policytest.ShapeOneKey, policytest.ShapeMixed} {
		cluster := policytest.BenchSidecarSets(shape, 1000)
		for _, ss := range cluster {
			prepare(b, ss)
		}
		for _, tenants := range []int{0, 1000, 5000} {
			sets := append(append([]*v1alpha1.SidecarSet{}, cluster...), benchTenants(b, tenants, 50)...)
			b.Run(fmt.Sprintf("%s/tenants=%d", shape, tenants), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if _, err := PlanPolicies(PlanInput{SidecarSets: sets, Now: now}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// benchTenants returns n NamespacedSidecarSets, as the SidecarSets they take part as, spread over
// namespaces: each selects app=<its index> in its namespace with one container.
func benchTenants(b *testing.B, n, namespaces int) []*v1alpha1.SidecarSet {
	out := make([]*v1alpha1.SidecarSet, n)
	for i := range out {
		nss := &v1alpha1.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("agent-%04d", i),
			Namespace: fmt.Sprintf("team-%02d", i%namespaces)}}
		nss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("t%d", i)}}
		nss.Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: fmt.Sprintf("agent-%d", i), Image: "busybox"}}}
		out[i] = prepare(b, nss.AsSidecarSet())
	}
	return out
}

// BenchmarkPolicyCompile compiles, as kube-apiserver does when it admits a policy, the largest
// group policy planned for 1,000 SidecarSets of each benchmark shape and for the policy
// differential's corpus (1,256 SidecarSets with several sidecars, probes and volumes each): what
// kube-apiserver spends on one write, with its size and members. Policies are sized by this cost
// (celpatch.MaxPolicySize and its bound on each piece).
func BenchmarkPolicyCompile(b *testing.B) {
	shapes := map[string][]*v1alpha1.SidecarSet{}
	for _, shape := range policytest.Shapes {
		shapes[shape] = policytest.BenchSidecarSets(shape, 1000)
	}
	g := policytest.New(7)
	g.Namespaces, g.CaseLabel = [2]string{"policy-ns0", "policy-ns1"}, "policy-case" // as TestPolicyDifferential
	for i := 0; i < 500; i++ {
		shapes["corpus"] = append(shapes["corpus"], g.Next(i).Sets...)
	}
	for _, name := range slices.Sorted(maps.Keys(shapes)) {
		for _, ss := range shapes[name] {
			prepare(b, ss)
		}
		plan, err := PlanPolicies(PlanInput{SidecarSets: shapes[name], Now: time.Now()})
		if err != nil {
			b.Fatal(err)
		}
		var largest *admissionregistrationv1.MutatingAdmissionPolicy
		for _, p := range plan.Policies {
			if largest == nil || policySize(p) > policySize(largest) {
				largest = p
			}
		}
		b.Run(name, func(b *testing.B) {
			if largest == nil {
				b.Skipf("no SidecarSet of shape %s is served by a policy", name)
			}
			var recs map[string]record
			if err := json.Unmarshal([]byte(largest.Annotations[apps.SidecarSetsAnnotation]), &recs); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(policySize(largest)), "chars")
			b.ReportMetric(float64(len(recs)), "members")
			b.ReportMetric(float64(len(plan.Policies)), "policies")
			for i := 0; i < b.N; i++ {
				if _, errs := compileIn(largest, environment.NewExpressions); len(errs) > 0 {
					b.Fatal(errs)
				}
			}
		})
	}
}

// policySize is the number of characters of CEL in p.
func policySize(p *admissionregistrationv1.MutatingAdmissionPolicy) int {
	n := 0
	for _, v := range p.Spec.Variables {
		n += len(v.Expression)
	}
	for _, c := range p.Spec.MatchConditions {
		n += len(c.Expression)
	}
	for _, m := range p.Spec.Mutations {
		n += len(m.JSONPatch.Expression)
	}
	return n
}

// BenchmarkOutage measures what survives a server outage in policy mode: for every shape of the
// injection benchmarks at 100 and 1,000 SidecarSets, alone ("platform=none"), then beside a
// platform-wide SidecarSet (Exists on a label every pod then carries) that does not ask for a
// policy ("not-asking") and that does ("asking"), the latter with 15 app SidecarSets asking too
// ("asking+15"), one pod per SidecarSet (labelled and placed so
// that it selects it) is admitted with the planned policies alone. A pod the planned webhooks
// receive is refused (failurePolicy Fail); the others are injected in full (the injector's pod)
// or admitted without some sidecars. The shares are reported as full-%, refused-% and without-%
// (the time is the plan's and the pods').
func BenchmarkOutage(b *testing.B) {
	for _, shape := range policytest.Shapes {
		for _, n := range []int{100, 1000} {
			for _, platform := range []string{"none", "not-asking", "asking", "asking+15"} {
				b.Run(fmt.Sprintf("%s/%d/platform=%s", shape, n, platform), func(b *testing.B) {
					sets := policytest.BenchSidecarSets(shape, n)
					if platform == "asking+15" {
						// The operator also marks 15 app SidecarSets (the limit is 16 with the agent).
						for _, ss := range sets[5:20] {
							ss.Annotations = map[string]string{apps.InjectionPathAnnotation: apps.InjectionPathPolicy}
						}
					}
					if platform != "none" {
						sets = append(sets, platformSidecarSet(platform != "not-asking"))
					}
					for i, ss := range sets {
						ss.UID, ss.ResourceVersion, ss.Generation = types.UID(ss.Name), fmt.Sprint(i+1), 1
						prepare(b, ss)
					}
					var got outageShares
					for range b.N {
						got = outage(b, PlanInput{SidecarSets: sets, Now: testStamp, MaxPolicyRequests: 16}, sets[:n], platform != "none")
					}
					total := float64(got.full + got.refused + got.without)
					b.ReportMetric(100*float64(got.full)/total, "full-%")
					b.ReportMetric(100*float64(got.refused)/total, "refused-%")
					b.ReportMetric(100*float64(got.without)/total, "without-%")
				})
			}
		}
	}
}

// platformSidecarSet selects every pod with the label platform-logs, asking for a policy or not.
func platformSidecarSet(asks bool) *v1alpha1.SidecarSet {
	ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "platform-logs", Annotations: map[string]string{}}}
	ss.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "platform-logs", Operator: metav1.LabelSelectorOpExists}}}
	ss.Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "platform-logs", Image: "busybox:1.36"}}}
	if asks {
		ss.Annotations[apps.InjectionPathAnnotation] = apps.InjectionPathPolicy
	}
	return ss
}

type outageShares struct{ full, refused, without int }

// outage plans in, then admits one pod for each of selecting with the server down (carrying the
// platform label when platform).
func outage(b *testing.B, in PlanInput, selecting []*v1alpha1.SidecarSet, platform bool) outageShares {
	plan, err := PlanPolicies(in)
	if err != nil {
		b.Fatal(err)
	}
	var policies []*compiledPolicy
	for _, p := range plan.Policies {
		policies = append(policies, compilePolicy(b, p))
	}
	var out outageShares
	for _, ss := range selecting {
		pod, ns := podSelectedBy(ss)
		if platform {
			pod.Labels["platform-logs"] = "on"
		}
		if serverCalls(b, plan, pod, ns) > 0 {
			out.refused++
			continue
		}
		got := runAll(b, policies, identity(len(policies)), pod, ns)
		if cmp.Equal(normalize(webhookPod(b, in.SidecarSets, pod, ns)), normalize(got)) {
			out.full++
		} else {
			out.without++
		}
	}
	return out
}

// podSelectedBy returns a pod, and its namespace, that ss selects: the labels its selector
// requires (the first value of an In, "x" for Exists), in spec.namespace or in a namespace with
// the labels its namespaceSelector requires.
func podSelectedBy(ss *v1alpha1.SidecarSet) (*corev1.Pod, *corev1.Namespace) {
	l := map[string]string{}
	for k, v := range ss.Spec.Selector.MatchLabels {
		l[k] = v
	}
	for _, r := range ss.Spec.Selector.MatchExpressions {
		switch r.Operator {
		case metav1.LabelSelectorOpIn:
			l[r.Key] = r.Values[0]
		case metav1.LabelSelectorOpExists:
			l[r.Key] = "x"
		}
	}
	nsName, nsLabels := "apps", map[string]string{}
	if ss.Spec.Namespace != "" {
		nsName = ss.Spec.Namespace
	}
	if sel := ss.Spec.NamespaceSelector; sel != nil {
		for k, v := range sel.MatchLabels {
			nsLabels[k] = v
		}
	}
	pod := policytest.LabelledPod(l)
	pod.Namespace = nsName
	return pod, namespace(nsName, nsLabels)
}
