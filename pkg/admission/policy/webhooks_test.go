package policy

import (
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/sidecarset/apiserver/pkg/admission/policy/policytest"
	"github.com/sidecarset/apiserver/pkg/admission/policy/webhookconfig"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// webhooksCalled returns how many of the webhooks of matches call the server for pod, as
// kube-apiserver decides.
func webhooksCalled(t testing.TB, matches []webhookconfig.WebhookMatch, pod *corev1.Pod) int {
	t.Helper()
	called := 0
	for _, m := range matches {
		if policytest.WebhookCalls(t, m.ObjectSelector, m.Condition, pod) {
			called++
		}
	}
	return called
}

func selecting(t testing.TB, name, selector, container string) *v1alpha1.SidecarSet {
	return mustSidecarSet(t, fmt.Sprintf("metadata: {name: %s}\nspec:\n  selector: %s\n  containers: [{name: %s, image: busybox}]\n", name, selector, container))
}

// TestWebhookOfAKeyMostlyOnTheWebhook: when most values of a label key are served by the webhook
// (10,000 one-key SidecarSets, the group policies holding the first 128 values), the webhook of
// the key still spares the server the pods of the policy-path values: its match condition
// names the few values the webhook does not serve rather than the many it does, which would be
// too large a condition (the webhook would then receive every pod with the key).
func TestWebhookOfAKeyMostlyOnTheWebhook(t *testing.T) {
	sets := policytest.BenchSidecarSets("onekey", 10000)
	for _, ss := range sets { // as the server stores them
		ss.Status.LatestRevision = ss.Name + "-1"
		ss.Annotations = map[string]string{sidecar.HashAnnotation: "h-" + ss.Name, sidecar.HashWithoutImageAnnotation: "w-" + ss.Name}
	}
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	first, err := PlanPolicies(PlanInput{SidecarSets: sets, Now: now, Grace: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	compiled, bound, loaded := map[string]*admissionregistrationv1.MutatingAdmissionPolicy{}, map[string]bool{}, map[string]time.Time{}
	for _, p := range first.Policies {
		compiled[p.Name], bound[p.Name], loaded[p.Name] = p, true, now
	}
	later := now.Add(time.Minute) // the policies loaded, their grace period over
	p, err := PlanPolicies(PlanInput{SidecarSets: sets, Now: later, Grace: 10 * time.Second, Compiled: compiled, Bound: bound, Loaded: loaded})
	if err != nil {
		t.Fatal(err)
	}
	policyValue, webhookValue := "", ""
	for _, ss := range sets[5:] {
		v := ss.Spec.Selector.MatchLabels["bench"]
		switch p.Results[ss.Name].Path {
		case apps.PathPolicy:
			policyValue = v
		case apps.PathWebhook:
			webhookValue = v
		}
	}
	if policyValue == "" || webhookValue == "" {
		t.Fatalf("the shape has no value on one of the paths (policy %q, webhook %q)", policyValue, webhookValue)
	}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want int
	}{
		{policytest.LabelledPod(map[string]string{"bench": "five"}), 0},
		{policytest.LabelledPod(map[string]string{"bench": policyValue}), 0},
		{policytest.LabelledPod(map[string]string{"bench": "five"}, "five-0"), 1}, // declares a policy-path sidecar: the injector replaces it
		{policytest.LabelledPod(map[string]string{"bench": webhookValue}), 1},
		{policytest.LabelledPod(map[string]string{"other": "x"}), 0},
	} {
		if got := webhooksCalled(t, p.WebhookMatches, tc.pod); got != tc.want {
			t.Errorf("pod %v with containers %d: %d webhooks call the server, want %d", tc.pod.Labels, len(tc.pod.Spec.Containers), got, tc.want)
		}
	}
}
