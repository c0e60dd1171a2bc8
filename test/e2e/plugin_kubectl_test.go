package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// TestPluginKubectlFlags: the plugin takes kubectl's connection flags and output forms against the
// local cluster: --context picks a context of the kubeconfig, --server, --certificate-authority and
// --token connect without any kubeconfig entry (as a ServiceAccount allowed only the revisions
// subresource), and -o name and -o jsonpath print the objects.
func TestPluginKubectlFlags(t *testing.T) {
	parallelTest(t)
	ctx := context.Background()
	const name, ns = "e2e-plugin-flags", "e2e-plugin-flags"
	ss := simpleSidecarSet(name, "busybox:1.36", nil)
	if _, err := sidecars.AppsV1alpha1().SidecarSets().Create(ctx, ss, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteSidecarSets(t, name) })
	rev := waitSettled(t, name).Status.LatestRevision

	// -o name and -o jsonpath.
	out := pluginAs(t, "rollout", "history", name, "-o", "name")
	if want := "sidecarsetrevision.apps.kruise.io/" + rev + "\n"; out != want {
		t.Errorf("rollout history -o name: %q, want %q", out, want)
	}
	out = pluginAs(t, "rollout", "history", name, "-o", "jsonpath={.items[0].metadata.name} {.items[0].revision}")
	if want := rev + " 1"; out != want {
		t.Errorf("rollout history -o jsonpath: %q, want %q", out, want)
	}

	// --context: a kubeconfig whose current context points nowhere.
	raw, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	current := raw.CurrentContext
	raw.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	raw.Contexts["nowhere"] = &clientcmdapi.Context{Cluster: "nowhere", AuthInfo: raw.Contexts[current].AuthInfo}
	raw.CurrentContext = "nowhere"
	dir := t.TempDir()
	contexts := filepath.Join(dir, "contexts")
	if err := clientcmd.WriteToFile(*raw, contexts); err != nil {
		t.Fatal(err)
	}
	out = pluginAs(t, "--kubeconfig", contexts, "--context", current, "rollout", "history", name, "-o", "name")
	if !strings.Contains(out, rev) {
		t.Errorf("--context %s: %q lacks %s", current, out, rev)
	}

	// --server, --certificate-authority and --token of a ServiceAccount, with an empty kubeconfig.
	setNamespace(t, ns, nil)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "history-reader", Namespace: ns}}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-plugin-flags"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"apps.kruise.io"}, Resources: []string{"sidecarsets/revisions"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-plugin-flags"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}}}
	for _, create := range []func() error{
		func() error {
			_, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
			return err
		},
	} {
		if err := create(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		_ = kube.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
		_ = kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	token, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	empty, ca := filepath.Join(dir, "empty"), filepath.Join(dir, "ca.crt")
	caData := restConfig.CAData
	if len(caData) == 0 {
		if caData, err = os.ReadFile(restConfig.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(empty, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ca, caData, 0o600); err != nil {
		t.Fatal(err)
	}
	out = pluginAs(t, "--kubeconfig", empty, "--server", restConfig.Host, "--certificate-authority", ca, "--token", token.Status.Token,
		"--request-timeout", "30s", "rollout", "history", name, "-o", "jsonpath={.items[*].metadata.name}")
	if out != rev {
		t.Errorf("--server --token: %q, want %q", out, rev)
	}
	// The token is what authenticates: the ServiceAccount may not list SidecarSets.
	if out, errOut, err := plugin(t, "--kubeconfig", empty, "--server", restConfig.Host, "--certificate-authority", ca, "--token", token.Status.Token,
		"rollout", "status", name, "--watch=false"); exitCode(err) != 1 || !strings.Contains(errOut, "forbidden") {
		t.Errorf("rollout status as the ServiceAccount: exit %d, want 1 and forbidden\n%s%s", exitCode(err), out, errOut)
	}
}
