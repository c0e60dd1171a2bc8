package policy

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// This file evaluates compiled policies offline with kube-apiserver's own MutatingAdmissionPolicy
// machinery (k8s.io/apiserver's CEL compiler, match conditions and JSONPatch patcher), the pieces
// its dispatcher calls for each policy. The end-to-end tests run the same policies in a real
// kube-apiserver; this makes a corpus of thousands of cases cheap.

var podGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
var podGVK = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}

var evalScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// compiledPolicy is one policy ready to run.
type compiledPolicy struct {
	policy   *admissionregistrationv1.MutatingAdmissionPolicy
	compiler *plugincel.CompositedCompiler
	matcher  matchconditions.Matcher
	patchers []patch.Patcher
}

// compilePolicy compiles p as kube-apiserver does, failing the test on any compilation error. It
// compiles in the environment kube-apiserver validates new policies with
// (environment.NewExpressions), which at the pinned k8s.io/apiserver declares the same functions
// as the one it runs stored policies with (StoredExpressions; TestEnvironmentsAgree fails when
// they part): the corpora compile thousands of policies, and compiling each once halves their
// time. The end-to-end policy differential runs the policies in a real kube-apiserver.
func compilePolicy(t testing.TB, p *admissionregistrationv1.MutatingAdmissionPolicy) *compiledPolicy {
	t.Helper()
	cp, errs := compileIn(p, environment.NewExpressions)
	if len(errs) > 0 {
		t.Fatalf("policy %s does not compile: %v", p.Name, errs)
	}
	return cp
}

// TestEnvironmentsAgree: kube-apiserver's two CEL environments declare the same functions and
// overloads, so that compilePolicy may compile in one of them only.
func TestEnvironmentsAgree(t *testing.T) {
	set := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	overloads := func(mode environment.Type) map[string]bool {
		env, err := set.Env(mode)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for name, fn := range env.Functions() {
			for _, o := range fn.OverloadDecls() {
				out[name+"/"+o.ID()] = true
			}
		}
		return out
	}
	fresh, stored := overloads(environment.NewExpressions), overloads(environment.StoredExpressions)
	if len(fresh) == 0 {
		t.Fatal("no function declared")
	}
	if diff := cmp.Diff(fresh, stored); diff != "" {
		t.Fatalf("the environments differ (-NewExpressions +StoredExpressions): compile corpora in both again:\n%s", diff)
	}
}

func compileIn(p *admissionregistrationv1.MutatingAdmissionPolicy, mode environment.Type) (*compiledPolicy, []error) {
	opts := plugincel.OptionalVariableDeclarations{}
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return nil, []error{err}
	}
	vars := make([]plugincel.NamedExpressionAccessor, len(p.Spec.Variables))
	for i, v := range p.Spec.Variables {
		vars[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	compiler.CompileAndStoreVariables(vars, opts, mode)
	var errs []error
	conds := make([]plugincel.ExpressionAccessor, len(p.Spec.MatchConditions))
	for i := range p.Spec.MatchConditions {
		conds[i] = (*matchconditions.MatchCondition)(&p.Spec.MatchConditions[i])
	}
	condEval := compiler.CompileCondition(conds, opts, mode)
	errs = append(errs, condEval.CompilationErrors()...)
	// kube-apiserver validates match conditions without the policy's variables.
	plain := plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	for _, c := range conds {
		if r := plain.CompileCELExpression(c, opts, mode); r.Error != nil {
			errs = append(errs, r.Error)
		}
	}
	cp := &compiledPolicy{policy: p, compiler: compiler}
	if len(conds) > 0 { // as kube-apiserver: no matcher, no conversion of the pod for it
		cp.matcher = matchconditions.NewMatcher(condEval, p.Spec.FailurePolicy, "policy", "mutate", p.Name)
	}
	patchOpts := opts
	patchOpts.HasPatchTypes = true
	for _, m := range p.Spec.Mutations {
		ev := compiler.CompileMutatingEvaluator(&patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}, patchOpts, mode)
		errs = append(errs, ev.CompilationErrors()...)
		cp.patchers = append(cp.patchers, patch.NewJSONPatcher(ev))
	}
	return cp, errs
}

// selects reports whether the policy's match constraints select a pod in namespace ns.
func (cp *compiledPolicy) selects(t testing.TB, pod *corev1.Pod, ns *corev1.Namespace) bool {
	t.Helper()
	mc := cp.policy.Spec.MatchConstraints
	for _, s := range []struct {
		sel *metav1.LabelSelector
		set map[string]string
	}{{mc.ObjectSelector, pod.Labels}, {mc.NamespaceSelector, ns.Labels}} {
		if s.sel == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(s.sel)
		if err != nil {
			t.Fatalf("policy %s: selector: %v", cp.policy.Name, err)
		}
		if !sel.Matches(labels.Set(s.set)) {
			return false
		}
	}
	return true
}

// run applies the policy to pod as the dispatcher does and returns the result (pod itself when
// the policy does not apply).
func (cp *compiledPolicy) run(ctx context.Context, pod *corev1.Pod, ns *corev1.Namespace) (*corev1.Pod, error) {
	ctx = cp.compiler.CreateContext(ctx)
	attrs := admission.NewAttributesRecord(pod, nil, podGVK, pod.Namespace, pod.Name, podGVR, "", admission.Create, &metav1.CreateOptions{}, false, nil)
	va := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: podGVK, VersionedObject: pod}
	if cp.matcher != nil {
		if r := cp.matcher.Match(ctx, va, nil, nil); r.Error != nil {
			return nil, fmt.Errorf("match conditions: %w", r.Error)
		} else if !r.Matches {
			return pod, nil
		}
	}
	out := runtime.Object(pod)
	for _, p := range cp.patchers {
		va.VersionedObject = out
		req := patch.Request{MatchedResource: podGVR, VersionedAttributes: va, ObjectInterfaces: admission.NewObjectInterfacesFromScheme(evalScheme), Namespace: ns}
		var err error
		if out, err = p.Patch(ctx, req, celconfig.RuntimeCELCostBudget); err != nil {
			return nil, err
		}
	}
	return out.(*corev1.Pod), nil
}

// runAll applies the policies selecting the pod in the given order, as one admission pass.
func runAll(t testing.TB, policies []*compiledPolicy, order []int, pod *corev1.Pod, ns *corev1.Namespace) *corev1.Pod {
	t.Helper()
	for _, i := range order {
		cp := policies[i]
		if !cp.selects(t, pod, ns) {
			continue
		}
		out, err := cp.run(context.Background(), pod, ns)
		if err != nil {
			t.Fatalf("policy %s: %v\nexpression:\n%s", cp.policy.Name, err, cp.policy.Spec.Mutations[0].JSONPatch.Expression)
		}
		pod = out
	}
	return pod
}
