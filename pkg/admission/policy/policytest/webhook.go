package policytest

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"
)

var (
	podGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	podGVK = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
)

// WebhookCalls reports whether a webhook selecting pods by objectSelector (nil: every pod) and
// the match condition condition ("": none) calls the server for pod, as kube-apiserver decides:
// the objectSelector natively, then the match condition with its CEL machinery, compiled as it
// validates webhooks.
func WebhookCalls(t testing.TB, objectSelector *metav1.LabelSelector, condition string, pod *corev1.Pod) bool {
	t.Helper()
	sel := labels.Everything()
	if objectSelector != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(objectSelector); err != nil {
			t.Fatalf("objectSelector: %v", err)
		}
	}
	if !sel.Matches(labels.Set(pod.Labels)) {
		return false
	}
	return condition == "" || ConditionHolds(t, condition, pod)
}

// ConditionHolds evaluates the match condition expr on the create of pod as kube-apiserver does,
// failing the test when it does not compile or fails.
func ConditionHolds(t testing.TB, expr string, pod *corev1.Pod) bool {
	t.Helper()
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	cond := compiler.CompileCondition([]plugincel.ExpressionAccessor{&matchconditions.MatchCondition{Name: "c", Expression: expr}},
		plugincel.OptionalVariableDeclarations{}, environment.NewExpressions)
	if errs := cond.CompilationErrors(); len(errs) > 0 {
		t.Fatalf("condition does not compile: %v\n%s", errs, expr)
	}
	fail := admissionregistrationv1.Fail
	attrs := admission.NewAttributesRecord(pod, nil, podGVK, pod.Namespace, pod.Name, podGVR, "", admission.Create, &metav1.CreateOptions{}, false, nil)
	va := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: podGVK, VersionedObject: pod}
	r := matchconditions.NewMatcher(cond, &fail, "webhook", "mutate", "w").Match(compiler.CreateContext(context.Background()), va, nil, nil)
	if r.Error != nil {
		t.Fatalf("condition: %v", r.Error)
	}
	return r.Matches
}

// LabelledPod is a pod of namespace default with labels l and an app container, then containers
// of the names given.
func LabelledPod(l map[string]string, containers ...string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Labels: l}}
	for _, c := range append([]string{"app"}, containers...) {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: "nginx"})
	}
	return pod
}
