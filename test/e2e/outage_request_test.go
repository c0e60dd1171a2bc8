package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestPolicyServedThroughOutage is the platform team's case: a log agent selecting every pod with
// a common label (Exists) beside more app SidecarSets than a policy places sidecars among. It is
// served by the webhook (ManyNeighbours), so with the server stopped a pod it selects is refused.
// Once it asks for a policy (kubectl annotate ... apps.kruise.io/injection-path=Policy; another
// value is refused with its field path), a policy serves it, and with the server stopped the same
// pod is created with its app's sidecar and the agent, as with the server up. Serial: it stops
// the server and deletes every SidecarSet (the webhook must select no pod by label).
func TestPolicyServedThroughOutage(t *testing.T) {
	serialOnly(t, "stopping the server")
	deleteAllSidecarSets(t)
	ctx := context.Background()
	ns := fmt.Sprintf("e2e-survive-%d", time.Now().UnixNano()%1e6)
	setNamespace(t, ns, nil)
	const appSets = 34 // more neighbours than a policy places sidecars among (32)
	for i := range appSets {
		if err := createSidecarSet(ctx, surviveSidecarSet(fmt.Sprintf("survive-app-%02d", i),
			metav1.LabelSelector{MatchLabels: map[string]string{"survive-app": fmt.Sprintf("a-%02d", i)}}, fmt.Sprintf("helper-%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	const agent = "survive-log-agent"
	if err := createSidecarSet(ctx, surviveSidecarSet(agent, metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "survive-logs", Operator: metav1.LabelSelectorOpExists}}}, "log-agent")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sidecars.AppsV1alpha1().SidecarSets().DeleteCollection(context.Background(), metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: "e2e=survive"})
	})
	checkInjectionPath(t, agent, apps.PathWebhook, apps.ReasonManyNeighbours)
	checkOutageFinding(t, "pods that one of the 1 served by the webhook selects are refused: "+agent)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Labels: map[string]string{"survive-app": "a-07", "survive-logs": "on"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.15.1"}}, AutomountServiceAccountToken: new(bool)}}
	waitInjected(t, pod, "log-agent")
	withServerStopped(t, func() {
		if _, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err == nil {
			t.Fatal("a pod the webhook-path log agent selects was created with the server down; want it refused")
		}
	})

	out, err := runKubectl(t, "", "annotate", "sidecarset", agent, "apps.kruise.io/injection-path=policy")
	if err == nil || !strings.Contains(out, "metadata.annotations[apps.kruise.io/injection-path]") || !strings.Contains(out, `"Policy"`) {
		t.Fatalf("kubectl annotate with value policy: %v: %s; want it refused naming the annotation and the supported value", err, out)
	}
	if out, err := runKubectl(t, "", "annotate", "sidecarset", agent, "apps.kruise.io/injection-path=Policy"); err != nil {
		t.Fatalf("kubectl annotate: %v: %s", err, out)
	}
	checkInjectionPath(t, agent, apps.PathPolicy, apps.ReasonCompiled)
	checkOutageFinding(t, fmt.Sprintf("the %d SidecarSets served by policies still inject; no pod create depends on the server", appSets+1))
	waitOwnedPolicies(t, appSets+1)
	waitWebhookLeavesLabels(t)
	before := waitInjected(t, pod, "log-agent")
	withServerStopped(t, func() {
		created, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatalf("creating a pod the log agent and an app SidecarSet select with the server down: %v", err)
		}
		var names []string
		for _, c := range created.Spec.Containers {
			names = append(names, c.Name)
		}
		if want := []string{"helper-07", "log-agent", "app"}; !cmp.Equal(names, want) {
			t.Errorf("containers with the server down: %v, want %v", names, want)
		}
		if diff := cmp.Diff(comparablePod(before), comparablePod(created)); diff != "" {
			t.Errorf("pod created with the server down differs from the one created with it up (-up +down):\n%s", diff)
		}
	})
}

// surviveSidecarSet is a SidecarSet of TestPolicyServedThroughOutage with one sidecar.
func surviveSidecarSet(name string, sel metav1.LabelSelector, container string) *v1alpha1.SidecarSet {
	ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"e2e": "survive"}}}
	ss.Spec.Selector = &sel
	ss.Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: container, Image: "busybox:1.36",
		Command: []string{"sleep", "3600"}}, PodInjectPolicy: v1alpha1.BeforeAppContainerType}}
	return ss
}

// withServerStopped runs f with this server and its etcd stopped, then starts them again and
// waits until the server serves.
func withServerStopped(t *testing.T, f func()) {
	t.Helper()
	if _, err := localUp("stop-server"); err != nil {
		t.Fatal(err)
	}
	started := false
	defer func() {
		if !started {
			_, _ = localUp("start-server")
		}
	}()
	f()
	if _, err := localUp("start-server"); err != nil {
		t.Fatal(err)
	}
	started = true
}

// checkOutageFinding waits until `kubectl sidecarset check` reports the finding outage ok with
// want in its message.
func checkOutageFinding(t *testing.T, want string) {
	t.Helper()
	eventually(t, "check's finding outage to say "+want, 30*time.Second, func(context.Context) (bool, string) {
		report, out, _ := runCheck(t)
		status, msg := report.status(v1alpha1.FindingOutage)
		return status == "ok" && strings.Contains(msg, want), fmt.Sprintf("%s %q\n%s", status, msg, out)
	})
}
