package e2e

import (
	"context"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/cert"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/test/chart"
)

// TestSelfManagedCertificateGuard: with the RBAC and guards the chart renders for self-managed
// certificates (the Role sidecarset-certificates, the server's rule on its APIServices, the
// policies sidecarset-apiserver-certificate-guard and -apiservice-guard), the server's own
// ServiceAccount may create and update the certificates' Secrets and set its APIServices'
// caBundle, and is refused any other Secret and any other change of an APIService (dry runs).
func TestSelfManagedCertificateGuard(t *testing.T) {
	parallelTest(t)
	ctx := context.Background()
	applySelfManagedRBAC(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(localState(), "server.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	server := kubernetes.NewForConfigOrDie(cfg)
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	secret := func(name string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: serverNamespace}, Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{"x": []byte("y")}}
	}
	// The policies take effect once kube-apiserver has loaded them.
	eventually(t, "the certificate guard to refuse the server a Secret not of its certificates", time.Minute, func(ctx context.Context) (bool, string) {
		_, err := server.CoreV1().Secrets(serverNamespace).Create(ctx, secret("not-a-certificate"), dry)
		return err != nil && strings.Contains(err.Error(), "the installation writes only the Secrets of its certificates"), errString(err)
	})
	if _, err := server.CoreV1().Secrets(serverNamespace).Create(ctx, secret("sidecarset-serving-ca"), dry); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Errorf("the server may not create the Secret sidecarset-serving-ca: %v", err)
	}
	apiservice := func(patch string) error {
		return server.Discovery().RESTClient().Patch(types.MergePatchType).AbsPath("/apis/apiregistration.k8s.io/v1/apiservices", "v1alpha1.apps.kruise.io").
			Param("dryRun", "All").Body([]byte(patch)).Do(ctx).Error()
	}
	eventually(t, "the APIService guard to refuse the server another change than the caBundle", time.Minute, func(ctx context.Context) (bool, string) {
		err := apiservice(`{"spec":{"groupPriorityMinimum":2000}}`)
		return err != nil && strings.Contains(err.Error(), "the server changes only the caBundle of its APIServices"), errString(err)
	})
	ca, _, err := cert.GenerateSelfSignedCertKey("e2e-ca", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := apiservice(`{"spec":{"caBundle":"` + base64.StdEncoding.EncodeToString(ca) + `"}}`); err != nil {
		t.Errorf("the server may not set its APIService's caBundle: %v", err)
	}
}

func errString(err error) string {
	if err == nil {
		return "allowed"
	}
	return err.Error()
}

// applySelfManagedRBAC applies what the chart renders for self-managed certificates beside the
// local cluster's objects (the Role and its binding, the guards), each under a name of its own,
// and the server's APIService rule as a ClusterRole of its own, until the test ends.
func applySelfManagedRBAC(t *testing.T) {
	t.Helper()
	helm, err := chart.Helm(root)
	if err != nil {
		t.Fatal(err)
	}
	out, err := chart.Template(helm, root, "--namespace", serverNamespace)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := chart.Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	add := func(o interface{}) {
		data, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(data))
	}
	for k, o := range objs {
		switch {
		case k.Name == "sidecarset-certificates" && (k.Kind == "Role" || k.Kind == "RoleBinding"),
			strings.HasPrefix(k.Kind, "ValidatingAdmissionPolicy") && (k.Name == "sidecarset-apiserver-certificate-guard" || k.Name == "sidecarset-apiserver-apiservice-guard"):
			add(ownName(t, o))
		case k.Kind == "ClusterRole" && k.Name == "sidecarset-apiserver":
			add(apiserviceRole(t, o))
		}
	}
	if len(docs) != 7 {
		t.Fatalf("the chart rendered %d of the 6 self-managed RBAC and guard objects and the server's ClusterRole", len(docs))
	}
	add(rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-certificates-apiservices"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "e2e-certificates-apiservices"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "sidecarset-apiserver", Namespace: serverNamespace}}})
	manifest := strings.Join(docs, "---\n")
	if out, err := runKubectl(t, manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := runKubectl(t, manifest, "delete", "--ignore-not-found", "-f", "-"); err != nil {
			t.Errorf("kubectl delete: %v\n%s", err, out)
		}
	})
}

// ownName is an object of the chart under a name of this test's, and a binding bound to the
// renamed object: TestChartDryRun applies the chart, under its own names, while this test runs.
func ownName(t *testing.T, o *unstructured.Unstructured) map[string]interface{} {
	t.Helper()
	out := o.DeepCopy()
	out.SetName("e2e-" + o.GetName())
	for _, ref := range [][]string{{"spec", "policyName"}, {"roleRef", "name"}} {
		if name, ok, _ := unstructured.NestedString(out.Object, ref...); ok {
			if err := unstructured.SetNestedField(out.Object, "e2e-"+name, ref...); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out.Object
}

// apiserviceRole is the rule of the server's ClusterRole on its APIServices' caBundle, as a
// ClusterRole of its own.
func apiserviceRole(t *testing.T, cr *unstructured.Unstructured) map[string]interface{} {
	t.Helper()
	rules, _, _ := unstructured.NestedSlice(cr.Object, "rules")
	for _, r := range rules {
		r := r.(map[string]interface{})
		if verbs, _ := r["verbs"].([]interface{}); len(verbs) == 2 && verbs[1] == "patch" && strings.Contains(strings.Join(toStrings(r["resources"]), ","), "apiservices") {
			return map[string]interface{}{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
				"metadata": map[string]interface{}{"name": "e2e-certificates-apiservices"}, "rules": []interface{}{r}}
		}
	}
	t.Fatal("the server's ClusterRole has no rule to patch its APIServices")
	return nil
}

func toStrings(v interface{}) []string {
	var out []string
	l, _ := v.([]interface{})
	for _, s := range l {
		out = append(out, s.(string))
	}
	return out
}
