package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	clientset "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
)

// asUser returns a clientset impersonating user, who is granted exactly rules.
func asUser(t *testing.T, user string, rules []rbacv1.PolicyRule) clientset.Interface {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + user}, Rules: rules}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}},
	}
	_ = kube.RbacV1().ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{})
	_ = kube.RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return clientset.NewForConfigOrDie(cfg)
}

// TestRBACPerSubresource: authorization is delegated to kube-apiserver's RBAC per subresource.
func TestRBACPerSubresource(t *testing.T) {
	parallelTest(t, fixtureManualExample)
	applyManualExample(t)
	ctx := context.Background()
	reader := asUser(t, "e2e-reader", []rbacv1.PolicyRule{{APIGroups: []string{"apps.kruise.io"},
		Resources: []string{"sidecarsets"}, Verbs: []string{"get"}}})
	var got *v1alpha1.SidecarSet
	// The server caches authorization decisions for a few seconds: retry until it is allowed.
	eventually(t, "the reader allowed to get SidecarSets", 30*time.Second, func(ctx context.Context) (bool, string) {
		var err error
		got, err = reader.AppsV1alpha1().SidecarSets().Get(ctx, "test-sidecarset", metav1.GetOptions{})
		return err == nil, fmt.Sprintf("get: %v", err)
	})
	got.Spec.Containers[0].Image = "centos:7"
	if _, err := reader.AppsV1alpha1().SidecarSets().Update(ctx, got, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("reader update: want Forbidden, got %v", err)
	}

	writer := asUser(t, "e2e-status-writer", []rbacv1.PolicyRule{
		{APIGroups: []string{"apps.kruise.io"}, Resources: []string{"sidecarsets"}, Verbs: []string{"get"}},
		{APIGroups: []string{"apps.kruise.io"}, Resources: []string{"sidecarsets/status"}, Verbs: []string{"update"}},
	})
	eventually(t, "the status writer allowed to update the status", 30*time.Second, func(ctx context.Context) (bool, string) {
		cur, err := writer.AppsV1alpha1().SidecarSets().Get(ctx, "test-sidecarset", metav1.GetOptions{})
		if err != nil {
			return false, fmt.Sprintf("get: %v", err)
		}
		cur.Spec.Containers[0].Image = "centos:7"
		_, err = writer.AppsV1alpha1().SidecarSets().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err == nil, fmt.Sprintf("update status: %v", err)
	})
	after, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, "test-sidecarset", metav1.GetOptions{})
	if err != nil || after.Spec.Containers[0].Image != "centos:6.7" {
		t.Errorf("a status update changed the spec: %v %v", err, after.Spec.Containers)
	}
	cur, _ := writer.AppsV1alpha1().SidecarSets().Get(ctx, "test-sidecarset", metav1.GetOptions{})
	cur.Spec.Containers[0].Image = "centos:7"
	if _, err := writer.AppsV1alpha1().SidecarSets().Update(ctx, cur, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("status writer update of the main resource: want Forbidden, got %v", err)
	}
}

// TestShippedUserRoles applies the shipped user roles: a namespace editor (the aggregated edit
// role) reads SidecarSets but cannot write one, since a SidecarSet injects into every namespace,
// nor import a SidecarSetRevision; sidecarsets-admin can both.
func TestShippedUserRoles(t *testing.T) {
	parallelTest(t, fixtureManualExample)
	applyManualExample(t)
	ctx := context.Background()
	if out, err := runKubectl(t, "", "apply", "-f", filepath.Join(root, "artifacts/deploy/base/user-roles.yaml")); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	bind := func(user, role string) clientset.Interface {
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + user},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
		_ = kube.RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})
		if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = kube.RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{}) })
		cfg := rest.CopyConfig(restConfig)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		return clientset.NewForConfigOrDie(cfg)
	}
	editor, admin := bind("e2e-namespace-editor", "edit"), bind("e2e-sidecarset-admin", "sidecarsets-admin")
	// Aggregation and the server's authorization cache take a moment: retry until both may read.
	eventually(t, "the editor and the SidecarSet admin allowed to read SidecarSets", 30*time.Second, func(ctx context.Context) (bool, string) {
		_, err1 := editor.AppsV1alpha1().SidecarSets().Get(ctx, "test-sidecarset", metav1.GetOptions{})
		_, err2 := admin.AppsV1alpha1().SidecarSets().Get(ctx, "test-sidecarset", metav1.GetOptions{})
		return err1 == nil && err2 == nil, fmt.Sprintf("editor: %v; admin: %v", err1, err2)
	})
	ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "e2e-roles"},
		Spec: v1alpha1.SidecarSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "e2e-roles"}},
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "roles", Image: "busybox"}}}}}
	if _, err := editor.AppsV1alpha1().SidecarSets().Create(ctx, ss, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("a namespace editor created a SidecarSet: %v", err)
	}
	stored, err := admin.AppsV1alpha1().SidecarSets().Create(ctx, ss, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("sidecarsets-admin cannot create a SidecarSet: %v", err)
	}
	_ = sidecars.AppsV1alpha1().SidecarSets().Delete(ctx, ss.Name, metav1.DeleteOptions{})
	// The controller may have recorded the SidecarSet's revision 1 before the delete; it deletes
	// the revisions of a deleted SidecarSet, and until then an import of number 1 is refused.
	eventually(t, "the revisions of the deleted SidecarSet e2e-roles gone", time.Minute, func(ctx context.Context) (bool, string) {
		list, err := sidecars.AppsV1alpha1().SidecarSetRevisions().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.SidecarSetNameLabel + "=e2e-roles"})
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 0, fmt.Sprintf("%d revisions", len(list.Items))
	})

	// Importing a revision (kubectl sidecarset migrate) is the SidecarSet admin's too (dry runs:
	// authorized and validated, nothing stored).
	rev := &v1alpha1.SidecarSetRevision{ObjectMeta: metav1.ObjectMeta{Name: "e2e-roles-imported",
		Labels: map[string]string{v1alpha1.SidecarSetNameLabel: "e2e-roles"}}, SidecarSetName: "e2e-roles", Revision: 1,
		Spec: v1alpha1.SidecarSetRevisionSpec{Containers: stored.Spec.Containers}} // a snapshot is of a defaulted spec
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	if _, err := editor.AppsV1alpha1().SidecarSetRevisions().Create(ctx, rev, dryRun); !apierrors.IsForbidden(err) {
		t.Errorf("a namespace editor created a SidecarSetRevision: %v", err)
	}
	if _, err := admin.AppsV1alpha1().SidecarSetRevisions().Create(ctx, rev, dryRun); err != nil {
		t.Errorf("sidecarsets-admin cannot create a SidecarSetRevision: %v", err)
	}
}

// TestPodSecurityWarning: kubectl tells the author of a SidecarSet whose sidecar is privileged that
// its pods are refused where Pod Security baseline is enforced, naming the namespaces it selects
// that do; with --refuse-pod-security-violations the server refuses such a SidecarSet instead.
func TestPodSecurityWarning(t *testing.T) {
	deleteAllSidecarSets(t)
	t.Cleanup(func() { deleteAllSidecarSets(t) })
	ctx := context.Background()
	enforced := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-psa-baseline-",
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}}}
	enforced, err := kube.CoreV1().Namespaces().Create(ctx, enforced, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().Namespaces().Delete(context.Background(), enforced.Name, metav1.DeleteOptions{})
	})
	manifest := func(name, namespace string) string {
		return `apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata: {name: ` + name + `}
spec:
  namespace: ` + namespace + `
  selector: {matchLabels: {app: privileged-agent}}
  containers:
  - name: agent
    image: busybox
    securityContext: {privileged: true}
`
	}
	// Selecting no namespace that enforces baseline: the warning in general.
	out, err := runKubectl(t, manifest("privileged-agent", "e2e-psa-nowhere"), "apply", "-f", "-")
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(out, "Warning:") || !strings.Contains(out, `"baseline"`) || !strings.Contains(out, "privileged") {
		t.Errorf("kubectl apply printed no Pod Security warning: %s", out)
	}
	// Selecting one: the warning names it.
	out, err = runKubectl(t, manifest("privileged-agent", enforced.Name), "apply", "-f", "-")
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(out, "Warning:") || !strings.Contains(out, "enforce baseline or restricted: "+enforced.Name) {
		t.Errorf("the Pod Security warning does not name namespace %s: %s", enforced.Name, out)
	}
	// A pod there is refused by Pod Security after injection: the webhook's warning names the
	// SidecarSet. Its sidecar adds a capability (the local cluster refuses privileged containers
	// before Pod Security looks); transferEnv keeps it on the webhook path (a policy cannot warn).
	capAgent := `apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata: {name: cap-agent}
spec:
  namespace: ` + enforced.Name + `
  selector: {matchLabels: {app: cap-agent}}
  containers:
  - name: agent
    image: busybox
    securityContext: {capabilities: {add: [NET_ADMIN]}}
    transferEnv: [{sourceContainerName: app, envName: TZ}]
`
	if out, err := runKubectl(t, capAgent, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	pod := `apiVersion: v1
kind: Pod
metadata: {name: psa-refused, namespace: ` + enforced.Name + `, labels: {app: cap-agent}}
spec:
  containers: [{name: app, image: busybox, env: [{name: TZ, value: UTC}]}]
`
	// Every second: each try runs kubectl.
	last, ok := pollEvery(time.Second, 30*time.Second, func(context.Context) (bool, string) {
		out, err = runKubectl(t, pod, "create", "--dry-run=server", "-f", "-")
		return err != nil && strings.Contains(out, `Warning: SidecarSet "cap-agent"`), fmt.Sprintf("%v: %s", err, out)
	})
	if !ok {
		t.Errorf("waited 30s for a pod Pod Security refuses after injection to be refused with the SidecarSet's warning; last seen: %s", last)
	} else if !strings.Contains(out, "namespace "+enforced.Name+" enforces") || !strings.Contains(out, "violates PodSecurity") {
		t.Errorf("a pod Pod Security refuses after injection: the output does not name the namespace and its violation: %s", out)
	} else {
		t.Logf("kubectl create of a pod Pod Security refuses after injection:\n%s", out)
	}
	if err := sidecars.AppsV1alpha1().SidecarSets().Delete(ctx, "cap-agent", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// With --refuse-pod-security-violations, refused.
	if err := sidecars.AppsV1alpha1().SidecarSets().Delete(ctx, "privileged-agent", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	restartServerWithArgs(t, "--refuse-pod-security-violations")
	out, err = runKubectl(t, manifest("privileged-agent-2", enforced.Name), "apply", "-f", "-")
	if err == nil || !strings.Contains(out, "spec.containers") || !strings.Contains(out, enforced.Name) {
		t.Errorf("a SidecarSet whose pods %s refuses was not refused: %v: %s", enforced.Name, err, out)
	}
	if out, err := runKubectl(t, manifest("privileged-agent-3", "e2e-psa-nowhere"), "apply", "-f", "-"); err != nil {
		t.Errorf("refused although no namespace it selects enforces baseline: %v: %s", err, out)
	}
}
