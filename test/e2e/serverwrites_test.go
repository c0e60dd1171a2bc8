package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// TestServerWritesLimitedByPolicy: with the server's own token, the shipped guards hold the
// server's writes to what injection and in-place upgrades need. Its MutatingAdmissionPolicies
// (the static guard of artifacts/deploy/static) select only pod creations, under its own names
// and label; its pod writes (the stored sidecarset-apiserver-pod-guard of
// artifacts/deploy/base/server-guard.yaml) change only the containers it injected, its own
// annotations and its SidecarSetUpgradable condition. What the server does write passes, and an
// administrator's writes are not evaluated at all.
func TestServerWritesLimitedByPolicy(t *testing.T) {
	ctx := context.Background()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(localState(), "server.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	server := kubernetes.NewForConfigOrDie(cfg)
	// A test that uninstalled the deployment may have left the stored guards just re-created.
	if out, err := runKubectl(t, "", "apply", "-f", filepath.Join(root, "artifacts", "deploy", "base", "server-guard.yaml")); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Run("policies", func(t *testing.T) { serverPolicyWrites(ctx, t, server) })
	t.Run("pods", func(t *testing.T) { serverPodWrites(ctx, t, server) })
	t.Run("large pod", func(t *testing.T) { serverLargePodWrites(ctx, t, server) })
}

// refusedWith reports a write that should have been refused with want in its message.
func refusedWith(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("with the server's token, %s: want refused (%q), got %v", what, want, err)
	}
}

func serverPolicyWrites(ctx context.Context, t *testing.T, server kubernetes.Interface) {
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	owned := map[string]string{apps.ManagedByLabel: apps.ManagedByValue}
	policies := server.AdmissionregistrationV1().MutatingAdmissionPolicies()
	const onlyPods = "mutate only pod creations"
	const ownsOnly = "writes only the admission policies and bindings it owns"

	secrets := guardTestPolicy(apps.PolicyNamePrefix+"e2e-guard", owned)
	secrets.Spec.MatchConstraints.ResourceRules[0].Resources = []string{"secrets"}
	_, err := policies.Create(ctx, secrets, dryRun)
	refusedWith(t, "create its own policy for secrets", err, onlyPods)

	updates := guardTestPolicy(apps.PolicyNamePrefix+"e2e-guard", owned)
	updates.Spec.MatchConstraints.ResourceRules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	_, err = policies.Create(ctx, updates, dryRun)
	refusedWith(t, "create its own policy for pod updates", err, onlyPods)

	subresource := guardTestPolicy(apps.PolicyNamePrefix+"e2e-guard", owned)
	subresource.Spec.MatchConstraints.ResourceRules[0].Resources = []string{"pods", "pods/status"}
	_, err = policies.Create(ctx, subresource, dryRun)
	refusedWith(t, "create its own policy for pods/status", err, onlyPods)

	_, err = policies.Create(ctx, guardTestPolicy("e2e-not-the-servers", owned), dryRun)
	refusedWith(t, "create a labelled policy under a foreign name", err, ownsOnly)
	_, err = policies.Create(ctx, guardTestPolicy(apps.PolicyNamePrefix+"e2e-guard", map[string]string{apps.ManagedByLabel: "someone-else"}), dryRun)
	refusedWith(t, "create a sidecarsets-* policy with a foreign managed-by label", err, ownsOnly)

	if _, err := policies.Create(ctx, guardTestPolicy(apps.PolicyNamePrefix+"e2e-guard", owned), dryRun); err != nil {
		t.Errorf("with the server's token, create its own policy for pod creations: %v", err)
	}
	if _, err := kube.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(ctx, secrets, dryRun); err != nil {
		t.Errorf("an administrator's policy for secrets is refused: the guard must hold the server only: %v", err)
	}
}

func serverPodWrites(ctx context.Context, t *testing.T, server kubernetes.Interface) {
	ns := labelledNamespace(t, "e2e-server-writes-", nil)
	requests := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: ns, Labels: map[string]string{"e2e-guard": "pods"},
		Annotations: map[string]string{"example.com/owner": "team-a"}},
		Spec: corev1.PodSpec{AutomountServiceAccountToken: new(bool), Containers: []corev1.Container{
			{Name: "app", Image: "nginx:1.15.1", Resources: requests},
			{Name: "sidecar", Image: "busybox:1.0", Resources: requests,
				Env: []corev1.EnvVar{{Name: sidecar.InjectedEnv, Value: "true"}}},
		}}}
	if _, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := server.CoreV1().Pods(ns)
	dryRun := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}
	patch := func(body string, subresources ...string) error {
		_, err := pods.Patch(ctx, pod.Name, types.StrategicMergePatchType, []byte(body), dryRun, subresources...)
		return err
	}
	appImage := `{"spec":{"containers":[{"name":"app","image":"nginx:1.16"}]}}`
	// kube-apiserver takes a moment to load a policy applied at registration: the first refusal
	// is waited for, refusedWith reports what the last try returned.
	var err error
	_, _ = poll(time.Minute, func(context.Context) (bool, string) {
		err = patch(appImage)
		return err != nil, ""
	})
	const containers = "changes only the containers it injected"
	refusedWith(t, "change an application container's image", err, containers)
	refusedWith(t, "resize an application container", patch(`{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"20m"}}}]}}`, "resize"), containers)
	refusedWith(t, "set activeDeadlineSeconds", patch(`{"spec":{"activeDeadlineSeconds":60}}`), "not spec.activeDeadlineSeconds")
	refusedWith(t, "add a toleration", patch(`{"spec":{"tolerations":[{"key":"e2e","operator":"Exists"}]}}`), "not spec.tolerations")
	refusedWith(t, "change a label", patch(`{"metadata":{"labels":{"e2e-guard":"other"}}}`), "not metadata.labels")
	refusedWith(t, "change a foreign annotation", patch(`{"metadata":{"annotations":{"example.com/owner":"team-b"}}}`), "not example.com/owner")
	refusedWith(t, "remove a foreign annotation", patch(`{"metadata":{"annotations":{"example.com/owner":null}}}`), "not example.com/owner")
	refusedWith(t, "add a foreign annotation", patch(`{"metadata":{"annotations":{"kruise.io.example.com/x":"1"}}}`), "not kruise.io.example.com/x")
	refusedWith(t, "write another pod condition", patch(`{"status":{"conditions":[{"type":"Ready","status":"False"}]}}`, "status"), "not status.conditions other than SidecarSetUpgradable")
	refusedWith(t, "change the pod phase", patch(`{"status":{"phase":"Failed"}}`, "status"), "not status.phase")
	// An in-place upgrade (a new hash entry) re-applies its SidecarSet's patchPodMetadata, which
	// sets keys outside kruise.io (the manual's oom-score, custom.example.com/...), never removes one.
	refusedWith(t, "remove a foreign annotation in an upgrade", patch(`{"metadata":{"annotations":{"kruise.io/sidecarset-hash":"{\"e2e\":1}",`+
		`"example.com/owner":null}},"spec":{"containers":[{"name":"sidecar","image":"busybox:2.0"}]}}`), "not example.com/owner")

	allowed := map[string]error{
		"change its sidecar's image": patch(`{"spec":{"containers":[{"name":"sidecar","image":"busybox:2.0"}]}}`),
		"resize its sidecar":         patch(`{"spec":{"containers":[{"name":"sidecar","resources":{"requests":{"cpu":"20m"}}}]}}`, "resize"),
		"write its annotations": patch(`{"metadata":{"annotations":{"kruise.io/sidecarset-hash":"{}",` +
			`"kruise.io/sidecarset-inplace-update-state":"{}","version.sidecarset.kruise.io/sidecar":"1"}}}`),
		"set its patchPodMetadata keys in an upgrade": patch(`{"metadata":{"annotations":{"kruise.io/sidecarset-hash":"{\"e2e\":2}",` +
			`"oom-score":"{\"log-agent\": 1}","example.com/owner":"team-a,log-agent"}},"spec":{"containers":[{"name":"sidecar","image":"busybox:2.0"}]}}`),
		"write its SidecarSetUpgradable condition": patch(`{"status":{"conditions":[{"type":"SidecarSetUpgradable","status":"True",`+
			`"reason":"AllSidecarsetUpgradable","message":"{\"e2e\":true}"}]}}`, "status"),
	}
	for what, err := range allowed {
		if err != nil {
			t.Errorf("with the server's token, %s: %v", what, err)
		}
	}
	if _, err := kube.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.StrategicMergePatchType, []byte(appImage), dryRun); err != nil {
		t.Errorf("an administrator's change of the application image is refused: the guard must hold the server only: %v", err)
	}
}

// TestEvictionForbiddenReported: without pods/eviction in the server's ClusterRole (the chart's
// rbac.evictions=false), a SidecarSet that asks for the repair of a pod created before it gets a
// Warning event EvictionForbidden saying why, and the pod stays. The rule is put back afterwards.
func TestEvictionForbiddenReported(t *testing.T) {
	ctx := context.Background()
	roles := kube.RbacV1().ClusterRoles()
	role, err := roles.Get(ctx, "sidecarset-apiserver", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	saved := role.Rules
	role.Rules = slices.DeleteFunc(slices.Clone(saved), func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "pods/eviction") })
	if len(role.Rules) == len(saved) {
		t.Fatal("the server's ClusterRole grants no pods/eviction: the local cluster does not run the shipped RBAC")
	}
	if _, err := roles.Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		role, err := roles.Get(ctx, "sidecarset-apiserver", metav1.GetOptions{})
		if err == nil {
			role.Rules = saved
			_, err = roles.Update(ctx, role, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Errorf("putting pods/eviction back into the server's ClusterRole: %v", err)
		}
	})

	const name = "e2e-evict-forbidden"
	ns := labelledNamespace(t, name+"-", nil)
	labels := map[string]string{"app": name}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false), TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "999d"}}}}}}}
	if _, err := kube.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	eventually(t, "the Deployment's pod ready", rolloutTimeout, func(ctx context.Context) (bool, string) {
		list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 || !podIsReady(&list.Items[0]) {
			return false, fmt.Sprintf("%v %v", list, err)
		}
		pod = list.Items[0]
		return true, ""
	})
	nextSecond()
	ss := simpleSidecarSet(name, "busybox:1.36", ptr.To(intstr.FromInt32(1)))
	ss.Annotations = map[string]string{rollout.RepairAnnotation: "true"}
	if err := applySidecarSet(t, ss); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteSidecarSets(t, name) })
	eventually(t, "a Warning event EvictionForbidden on the SidecarSet", rolloutTimeout, func(ctx context.Context) (bool, string) {
		events, err := kube.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=EvictionForbidden,involvedObject.name=" + name})
		if err != nil || len(events.Items) == 0 {
			return false, fmt.Sprintf("%v", err)
		}
		e := events.Items[0]
		return e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "rbac.evictions"), e.Message
	})
	got, err := kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil || got.UID != pod.UID || got.DeletionTimestamp != nil {
		t.Errorf("the pod was evicted though the server may not evict: %v", err)
	}
}

// serverLargePodWrites: the pod guard's expressions stay within kube-apiserver's CEL cost limits
// on a pod far larger than usual (60 containers of 20 env vars each, 10 of them sidecars, 10 init
// containers, 400 annotations): the server's write passes and a foreign one is refused by the
// guard's own verdict, not by a cost limit.
func serverLargePodWrites(ctx context.Context, t *testing.T, server kubernetes.Interface) {
	ns := labelledNamespace(t, "e2e-server-writes-large-", nil)
	env := make([]corev1.EnvVar, 20)
	for i := range env {
		env[i] = corev1.EnvVar{Name: fmt.Sprintf("E%d", i), Value: strings.Repeat("v", 20)}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "large", Namespace: ns, Labels: map[string]string{"e2e-guard": "pods"},
		Annotations: map[string]string{}}, Spec: corev1.PodSpec{AutomountServiceAccountToken: new(bool)}}
	for i := range 400 {
		pod.Annotations[fmt.Sprintf("example.com/a%d", i)] = strings.Repeat("x", 40)
	}
	for i := range 60 {
		c := corev1.Container{Name: fmt.Sprintf("app-%d", i), Image: "busybox:1.36", Env: slices.Clone(env)}
		if i >= 50 {
			c.Name = fmt.Sprintf("sidecar-%d", i)
			c.Env = append(c.Env, corev1.EnvVar{Name: sidecar.InjectedEnv, Value: "true"})
		}
		pod.Spec.Containers = append(pod.Spec.Containers, c)
	}
	for i := range 10 {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: fmt.Sprintf("init-%d", i), Image: "busybox:1.36", Env: slices.Clone(env)})
	}
	if _, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dryRun := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}
	patch := func(body string) error {
		_, err := server.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.StrategicMergePatchType, []byte(body), dryRun)
		return err
	}
	ops := []string{`{"op":"replace","path":"/spec/containers/50/image","value":"busybox:1.37"}`,
		`{"op":"replace","path":"/spec/containers/59/image","value":"busybox:1.37"}`}
	for i := range 50 {
		ops = append(ops, fmt.Sprintf(`{"op":"add","path":"/metadata/annotations/version.sidecarset.kruise.io~1c%d","value":"1"}`, i))
	}
	if _, err := server.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.JSONPatchType, []byte("["+strings.Join(ops, ",")+"]"), dryRun); err != nil {
		t.Errorf("with the server's token, upgrade two sidecars of a large pod and write 50 annotations: %v", err)
	}
	refusedWith(t, "change the image of a large pod's last application container",
		patch(`{"spec":{"containers":[{"name":"app-49","image":"busybox:1.37"}]}}`), "changes only the containers it injected (env IS_INJECTED=true), not app-49")
	refusedWith(t, "change a foreign annotation of a large pod",
		patch(`{"metadata":{"annotations":{"example.com/a399":"y"}}}`), "not example.com/a399")
}
