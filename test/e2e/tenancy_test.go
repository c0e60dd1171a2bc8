package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	clientset "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
)

// TestTenantBoundary: a user bound to edit in one namespace attacks, with NamespacedSidecarSets,
// a cluster SidecarSet and the pods of another namespace, in both injection modes; nothing outside
// its namespace changes. The attacks: a sidecar named like another namespace's app container
// (with shareVolumePolicy, and without: the deferral names of policy injection), a selector that
// requires no label (every pod of the cluster sent to the server), 33 neighbours on another key
// (a cluster SidecarSet pushed to the webhook), 64 values on the cluster SidecarSet's own key (its
// value budget). The victim pod is injected as before the attacks, the cluster SidecarSet keeps
// its Injected reason, and every webhook of the active configuration is the same as before or
// limited to the attacker's namespace. Then the limits: a ResourceQuota counting
// NamespacedSidecarSets is enforced, and an unbounded revisionHistoryLimit is refused.
func TestTenantBoundary(t *testing.T) {
	deleteAllSidecarSets(t)
	t.Cleanup(func() { deleteAllSidecarSets(t) })
	defer restartServer(t, "policy")
	ctx := context.Background()
	if out, err := runKubectl(t, "", "apply", "-f", filepath.Join(root, "artifacts/deploy/base/user-roles.yaml")); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	tenant, victim := tempNamespace(t, "e2e-tenant-"), tempNamespace(t, "e2e-victim-")
	editor := namespaceEditor(t, "e2e-tenant-attacker", tenant)

	audit := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "e2e-audit-agent"},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "e2e-web"}},
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "audit-agent", Image: "busybox:1.36"}}},
		}}
	if _, err := sidecars.AppsV1alpha1().SidecarSets().Create(ctx, audit, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	victimPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: victim, Labels: map[string]string{"tier": "e2e-web"}},
		Spec: corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false), Containers: []corev1.Container{
			{Name: "app", Image: "busybox:1.36"}, {Name: "app2", Image: "busybox:1.36"}}}}

	for _, mode := range []string{"policy", "webhook"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "webhook" {
				restartServer(t, mode)
			}
			// The path of a plain SidecarSet in this mode (the condition written before the
			// restart is of the same generation: wait for the new leader's).
			reason := map[string]string{"policy": string(apps.PathPolicy), "webhook": string(apps.PathWebhook)}[mode]
			eventually(t, "the cluster SidecarSet's Injected reason "+reason, time.Minute, func(context.Context) (bool, string) {
				got := injectedReason(t, audit.Name)
				return got == reason, got
			})
			kubeAPIServerLoads() // the policies of the settled SidecarSet
			before := waitInjected(t, victimPod, "audit-agent")
			webhooks := activeWebhooks(t)

			attacks := tenantAttacks()
			for _, a := range attacks {
				createAsEditor(t, editor, tenant, a)
			}
			t.Cleanup(func() { deleteNamespacedSidecarSets(t, tenant) })
			for _, a := range attacks {
				waitNamespacedSettled(t, editor, tenant, a.Name)
			}
			// Over twice the time new policies take to load, every try is injected as before.
			consistently(t, "the victim pod injected as before the attacks", 500*time.Millisecond, 2*policySettle, func(context.Context) (bool, string) {
				got, err := createPodDryRun(victimPod)
				if err != nil {
					return false, "refused: " + err.Error()
				}
				return reflect.DeepEqual(containerSpecs(got), containerSpecs(before)),
					fmt.Sprintf("containers %v, before %v", containerSpecs(got), containerSpecs(before))
			})
			if got := injectedReason(t, audit.Name); got != reason {
				t.Errorf("the cluster SidecarSet's Injected reason went from %q to %q", reason, got)
			}
			checkWebhooksScoped(t, webhooks, activeWebhooks(t), tenant)
			checkSquattedNames(t, editor, tenant, victim)
		})
	}

	t.Run("limits", func(t *testing.T) {
		unbounded := tenantSidecarSet("history", map[string]string{"e2e-history": "1"}, "history")
		unbounded.Spec.RevisionHistoryLimit = ptr.To[int32](2147483647)
		_, err := editor.AppsV1alpha1().NamespacedSidecarSets(tenant).Create(ctx, unbounded, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.revisionHistoryLimit") {
			t.Errorf("revisionHistoryLimit 2147483647: want Invalid naming spec.revisionHistoryLimit, got %v", err)
		}
		// A namespace of its own: the deletions of the attacks in tenant would have the main
		// cluster's quota controller recount the new quota from its informer, which may not yet
		// have the creates below.
		quotaNS := tempNamespace(t, "e2e-quota-")
		quotaEditor := namespaceEditor(t, "e2e-quota-editor", quotaNS)
		quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "sidecarsets", Namespace: quotaNS},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/namespacedsidecarsets.apps.kruise.io": resource.MustParse("2")}}}
		if _, err := kube.CoreV1().ResourceQuotas(quotaNS).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the quota's status", time.Minute, func(ctx context.Context) (bool, string) {
			q, err := kube.CoreV1().ResourceQuotas(quotaNS).Get(ctx, quota.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			_, ok := q.Status.Hard["count/namespacedsidecarsets.apps.kruise.io"]
			return ok, fmt.Sprintf("%+v", q.Status)
		})
		for i := 0; i < 2; i++ {
			createAsEditor(t, quotaEditor, quotaNS, tenantSidecarSet(fmt.Sprintf("quota-%d", i), map[string]string{"e2e-quota": "1"}, fmt.Sprintf("quota%d", i)))
		}
		_, err = quotaEditor.AppsV1alpha1().NamespacedSidecarSets(quotaNS).Create(ctx,
			tenantSidecarSet("quota-2", map[string]string{"e2e-quota": "1"}, "quota2"), metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota") {
			t.Errorf("a third NamespacedSidecarSet under a quota of 2: want Forbidden, exceeded quota; got %v", err)
		}
	})

	t.Run("per-namespace cap", func(t *testing.T) {
		deleteNamespacedSidecarSets(t, tenant)
		restartServerWithArgs(t, "--max-namespaced-sidecarsets-per-namespace=2")
		for i := 0; i < 2; i++ {
			createAsEditor(t, editor, tenant, tenantSidecarSet(fmt.Sprintf("cap-%d", i), map[string]string{"e2e-cap": "1"}, fmt.Sprintf("cap%d", i)))
		}
		_, err := editor.AppsV1alpha1().NamespacedSidecarSets(tenant).Create(ctx,
			tenantSidecarSet("cap-2", map[string]string{"e2e-cap": "1"}, "cap2"), metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "--max-namespaced-sidecarsets-per-namespace=2") {
			t.Errorf("a third NamespacedSidecarSet with a cap of 2: want Forbidden naming the flag, got %v", err)
		}
		// Another namespace has its own count.
		createAsEditor(t, sidecars, victim, tenantSidecarSet("cap-0", map[string]string{"e2e-cap": "1"}, "cap0"))
		deleteNamespacedSidecarSets(t, victim)
	})
}

// checkSquattedNames: a namespace editor takes a container and a volume name first; an
// administrator's cluster SidecarSet of the same names is still accepted, and wins: the pods of
// another namespace get it, and so do the tenant's own pods, without the tenant's collision (a
// duplicate container would refuse them), whose NamespacedSidecarSet says why.
func checkSquattedNames(t *testing.T, editor clientset.Interface, tenant, victim string) {
	t.Helper()
	ctx := context.Background()
	const name, volume = "e2e-squatted", "e2e-squatted-vol"
	labels := map[string]string{"e2e-squat": "1"}
	mount := []corev1.VolumeMount{{Name: volume, MountPath: "/squat"}}
	squat := tenantSidecarSet("squat", labels, name)
	squat.Spec.Containers[0].VolumeMounts = mount
	squat.Spec.Volumes = []corev1.Volume{{Name: volume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	createAsEditor(t, editor, tenant, squat)
	t.Cleanup(func() {
		_ = sidecars.AppsV1alpha1().NamespacedSidecarSets(tenant).Delete(ctx, squat.Name, metav1.DeleteOptions{})
	})
	waitNamespacedSettled(t, editor, tenant, squat.Name)

	admin := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: name, Image: "busybox:1.37",
				VolumeMounts: mount}}},
			Volumes: []corev1.Volume{{Name: volume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "e2e-squat"}, Optional: ptr.To(true)}}}},
		}}
	if _, err := sidecars.AppsV1alpha1().SidecarSets().Create(ctx, admin, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the administrator's SidecarSet with names a namespace editor took first is refused: %v", err)
	}
	t.Cleanup(func() { _ = sidecars.AppsV1alpha1().SidecarSets().Delete(ctx, admin.Name, metav1.DeleteOptions{}) })
	waitSettled(t, admin.Name)
	for _, ns := range []string{victim, tenant} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "squat", Namespace: ns, Labels: labels},
			Spec: corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false), Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36"}}}}
		eventually(t, "pod of "+ns+" with the cluster SidecarSet's "+name+" only", time.Minute, func(context.Context) (bool, string) {
			got, err := createPodDryRun(pod)
			if err != nil {
				return false, err.Error()
			}
			var vol string
			for _, v := range got.Spec.Volumes {
				if v.Name == volume {
					vol = fmt.Sprintf("configMap=%v", v.ConfigMap != nil)
				}
			}
			// The tenant's other attacks inject into its pods too: count this name only.
			specs, n := containerSpecs(got), 0
			for _, c := range specs {
				if strings.HasPrefix(c, name+"=") {
					n++
				}
			}
			return n == 1 && slices.Contains(specs, name+"=busybox:1.37") && vol == "configMap=true",
				fmt.Sprintf("containers %v, volume %s", specs, vol)
		})
	}
	waitNamespacedShadowed(t, editor, tenant, squat.Name, true)
}

// tenantAttacks are the attacker's NamespacedSidecarSets.
func tenantAttacks() []*v1alpha1.NamespacedSidecarSet {
	never := map[string]string{"e2e-never": "1"}
	stripShare := tenantSidecarSet("strip-app", never, "app")
	stripShare.Spec.Containers[0].ShareVolumePolicy.Type = v1alpha1.ShareVolumePolicyEnabled
	out := []*v1alpha1.NamespacedSidecarSet{
		stripShare,
		tenantSidecarSet("strip-app2", map[string]string{"aaa": "1"}, "app2"),
	}
	everyPod := tenantSidecarSet("every-pod", nil, "every-pod")
	everyPod.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "e2e-absent", Operator: metav1.LabelSelectorOpDoesNotExist}}}
	everyPod.Spec.Containers[0].ShareVolumePolicy.Type = v1alpha1.ShareVolumePolicyEnabled
	out = append(out, everyPod)
	var values []string
	for i := 0; i < 64; i++ {
		values = append(values, fmt.Sprintf("e2e-web-%02d", i))
	}
	budget := tenantSidecarSet("value-budget", nil, "budget")
	budget.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: values}}}
	out = append(out, budget)
	for i := 0; i < 33; i++ {
		out = append(out, tenantSidecarSet(fmt.Sprintf("neighbour-%02d", i), map[string]string{"e2e-neighbour": fmt.Sprint(i)},
			fmt.Sprintf("neighbour%02d", i)))
	}
	return out
}

func tenantSidecarSet(name string, selector map[string]string, container string) *v1alpha1.NamespacedSidecarSet {
	return &v1alpha1.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: selector},
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: container, Image: "busybox:1.36"}}},
		}}
}

// createAsEditor creates nss as the namespace editor (retrying while role aggregation and the
// authorization cache catch up).
func createAsEditor(t *testing.T, editor clientset.Interface, ns string, nss *v1alpha1.NamespacedSidecarSet) {
	t.Helper()
	eventually(t, "the editor's create of "+nss.Name, 30*time.Second, func(ctx context.Context) (bool, string) {
		_, err := editor.AppsV1alpha1().NamespacedSidecarSets(ns).Create(ctx, nss, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), fmt.Sprint(err)
	})
}

func deleteNamespacedSidecarSets(t *testing.T, ns string) {
	t.Helper()
	client := sidecars.AppsV1alpha1().NamespacedSidecarSets(ns)
	if err := client.DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no NamespacedSidecarSet in "+ns, time.Minute, func(ctx context.Context) (bool, string) {
		list, err := client.List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, fmt.Sprint(err)
	})
}

// injectedReason is the reason of the SidecarSet's Injected condition (its path).
func injectedReason(t *testing.T, name string) string {
	t.Helper()
	ss := waitSettled(t, name)
	c := apimeta.FindStatusCondition(ss.Status.Conditions, v1alpha1.SidecarSetInjected)
	if c == nil {
		t.Fatalf("SidecarSet %s has no %s condition", name, v1alpha1.SidecarSetInjected)
	}
	return c.Reason
}

// containerSpecs is what the victim pod gets: each container's name and image, in order.
func containerSpecs(p *corev1.Pod) []string {
	var out []string
	for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		out = append(out, c.Name+"="+c.Image)
	}
	return out
}

func activeWebhooks(t *testing.T) []admissionregistrationv1.MutatingWebhook {
	t.Helper()
	cfg, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), "sidecarset-injector-active", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Webhooks
}

// checkWebhooksScoped fails t unless every webhook of after either is one of before, unchanged in
// what it selects, or selects pods of the tenant's namespace only.
func checkWebhooksScoped(t *testing.T, before, after []admissionregistrationv1.MutatingWebhook, tenant string) {
	t.Helper()
	selects := func(w admissionregistrationv1.MutatingWebhook) string {
		return fmt.Sprintf("objectSelector %v namespaceSelector %v conditions %v", w.ObjectSelector, w.NamespaceSelector, w.MatchConditions)
	}
	was := map[string]string{}
	for _, w := range before {
		was[w.Name] = selects(w)
	}
	for _, w := range after {
		if was[w.Name] == selects(w) {
			continue
		}
		if !onlyNamespace(w.NamespaceSelector, tenant) {
			t.Errorf("webhook %s changed and is not limited to namespace %s: %s (was %q)", w.Name, tenant, selects(w), was[w.Name])
		}
	}
}

// onlyNamespace reports whether sel selects no namespace but ns: kubernetes.io/metadata.name In
// [ns], with or without other requirements.
func onlyNamespace(sel *metav1.LabelSelector, ns string) bool {
	if sel == nil {
		return false
	}
	if sel.MatchLabels[corev1.LabelMetadataName] == ns {
		return true
	}
	for _, r := range sel.MatchExpressions {
		if r.Key == corev1.LabelMetadataName && r.Operator == metav1.LabelSelectorOpIn && len(r.Values) == 1 && r.Values[0] == ns {
			return true
		}
	}
	return false
}
