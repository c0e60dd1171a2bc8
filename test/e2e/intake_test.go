package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sidecarset/apiserver/pkg/admission/policy/webhookconfig"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/injectionsync"
)

// TestIntakeScopedToNamespace: a namespace editor's NamespacedSidecarSet write in namespace A has
// kube-apiserver send the server the pods of A, and not those of another namespace B; a write
// refused as invalid (in namespace C) sends none. Observed on the intake webhook configuration:
// whether its intake webhooks (namespaceSelector and objectSelector) select a pod of each
// namespace with labels nothing selects. A cluster SidecarSet's write rightly sends every
// namespace's pods for about ten seconds: the test runs in a serial shard (hack/e2e.sh), where no
// other test writes one, and still takes a moment with no such hold before its writes and none
// after them. Then the leader drops A's hold.
func TestIntakeScopedToNamespace(t *testing.T) {
	serialOnly(t, "reading the cluster-wide intake, which other tests' cluster SidecarSet writes open,")
	if out, err := runKubectl(t, "", "apply", "-f", filepath.Join(root, "artifacts/deploy/base/user-roles.yaml")); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	nsA, nsB, nsC := tempNamespace(t, "e2e-intake-a-"), tempNamespace(t, "e2e-intake-b-"), tempNamespace(t, "e2e-intake-c-")
	editorA := namespaceEditor(t, "e2e-intake-editor", nsA)
	editorC := namespaceEditor(t, "e2e-intake-editor", nsC)
	const name = "intake"
	createAsEditor(t, editorA, nsA, tenantSidecarSet(name, map[string]string{"e2e-intake": nsA}, "intake-sidecar"))
	t.Cleanup(func() { deleteNamespacedSidecarSets(t, nsA) })

	namespaces := map[string]*corev1.Namespace{}
	for _, ns := range []string{nsA, nsB, nsC} {
		got, err := kube.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		namespaces[ns] = got
	}
	// sent reports whether the intake webhooks of cfg send kube-apiserver's pod of ns that nothing
	// selects (labelled app=e2e-intake-nothing) to the server.
	sent := func(cfg *admissionregistrationv1.MutatingWebhookConfiguration, ns string) bool {
		return intakeSends(t, cfg, namespaces[ns].Labels, labels.Set{"app": "e2e-intake-nothing"})
	}
	image := "busybox:1.36"
	lastWrites := "none yet"
	eventuallyEvery(t, "writes in "+nsA+" and "+nsC+" with no cluster SidecarSet's intake around them", time.Second, 3*time.Minute, func(ctx context.Context) (bool, string) {
		if sent(intakeConfiguration(t), nsB) {
			return false, "before the writes, every namespace's pods are sent (a cluster SidecarSet's write, or this test's last writes): waiting for a moment without; the last writes: " + lastWrites
		}
		before := lastWrites
		defer func() {
			if lastWrites != before {
				t.Logf("writes tried: %s", lastWrites)
			}
		}()
		invalid := tenantSidecarSet("invalid", map[string]string{"e2e-intake": nsC}, "invalid-sidecar")
		invalid.Spec.Containers = nil
		if _, err := editorC.AppsV1alpha1().NamespacedSidecarSets(nsC).Create(ctx, invalid, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
			lastWrites = fmt.Sprintf("a NamespacedSidecarSet without containers: want Invalid, got %v", err)
			return false, lastWrites
		}
		cfg := intakeConfiguration(t)
		if sent(cfg, nsB) {
			lastWrites = fmt.Sprintf("after a write in %s refused as invalid, the pods of %s (every namespace) are sent to the server: the refused write opened the intake, unless another test wrote a cluster SidecarSet meanwhile; %s",
				nsC, nsB, describeIntake(cfg))
			return false, lastWrites
		}
		if sent(cfg, nsC) {
			t.Errorf("after a write in %s refused as invalid, the pods of %s are sent to the server: %s", nsC, nsC, describeIntake(cfg))
		}
		image = map[string]string{"busybox:1.36": "busybox:1.37", "busybox:1.37": "busybox:1.36"}[image]
		if err := updateImage(ctx, editorA.AppsV1alpha1().NamespacedSidecarSets(nsA), name, image); err != nil {
			lastWrites = fmt.Sprintf("updating %s/%s: %v", nsA, name, err)
			return false, lastWrites
		}
		cfg = intakeConfiguration(t)
		if sent(cfg, nsB) {
			lastWrites = fmt.Sprintf("after a NamespacedSidecarSet write in %s, a pod of %s that nothing selects is sent to the server (every namespace's are): the namespaced write opened the intake for every namespace, unless another test wrote a cluster SidecarSet meanwhile; %s",
				nsA, nsB, describeIntake(cfg))
			return false, lastWrites
		}
		if !sent(cfg, nsA) {
			t.Errorf("the NamespacedSidecarSet write in %s returned, and the pods of %s are not sent to the server: %s", nsA, nsA, describeIntake(cfg))
		}
		lastWrites = "both as expected: " + describeIntake(cfg)
		return true, lastWrites
	})

	eventually(t, "the leader to drop the hold of "+nsA, time.Minute, func(context.Context) (bool, string) {
		cfg := intakeConfiguration(t)
		held := map[string]json.RawMessage{}
		if raw, ok := cfg.Annotations[apps.IntakeNamespacesAnnotation]; ok {
			if err := json.Unmarshal([]byte(raw), &held); err != nil {
				t.Fatalf("annotation %s: %v", apps.IntakeNamespacesAnnotation, err)
			}
		}
		_, holdsA := held[nsA]
		narrowedToA := sent(cfg, nsA) && !sent(cfg, nsB)
		return !holdsA && !narrowedToA, describeIntake(cfg)
	})
}

// intakeSends reports whether the intake webhooks of cfg send a pod with podLabels, in a namespace
// with nsLabels, to the server.
func intakeSends(t *testing.T, cfg *admissionregistrationv1.MutatingWebhookConfiguration, nsLabels, podLabels labels.Set) bool {
	t.Helper()
	_, intake := webhookconfig.SplitIntake(cfg.Webhooks)
	for _, w := range intake {
		nsSel, err1 := metav1.LabelSelectorAsSelector(w.NamespaceSelector)
		podSel, err2 := metav1.LabelSelectorAsSelector(w.ObjectSelector)
		if err1 != nil || err2 != nil {
			t.Fatalf("intake webhook %s: selectors %v, %v", w.Name, err1, err2)
		}
		if nsSel.Matches(nsLabels) && podSel.Matches(podLabels) {
			return true
		}
	}
	return false
}

// TestIntakeFoldsAcrossNamespaces: NamespacedSidecarSet writes in namespaces one after another (a
// GitOps sync of every tenant's) hold the intake for their namespaces alone up to two namespaces;
// the third turns the holds into one for every namespace (a namespace nothing was written in is
// then sent too), and a fourth namespace's write then neither adds a hold nor waits for one. Then
// the leader drops the hold. Serial: another test's write of a cluster SidecarSet requiring no
// label holds every pod, and this one sends every namespace's pods for a while.
func TestIntakeFoldsAcrossNamespaces(t *testing.T) {
	serialOnly(t, "holding the intake for every namespace")
	written := []string{tempNamespace(t, "e2e-fold-a-"), tempNamespace(t, "e2e-fold-b-"), tempNamespace(t, "e2e-fold-c-"), tempNamespace(t, "e2e-fold-d-")}
	quiet := tempNamespace(t, "e2e-fold-quiet-")
	for _, ns := range written {
		t.Cleanup(func() { deleteNamespacedSidecarSets(t, ns) })
	}
	nothing := labels.Set{"app": "e2e-intake-nothing"}
	sends := func(cfg *admissionregistrationv1.MutatingWebhookConfiguration, ns string) bool {
		return intakeSends(t, cfg, labels.Set{corev1.LabelMetadataName: ns}, nothing)
	}
	eventually(t, "a moment with no intake hold", 2*time.Minute, func(context.Context) (bool, string) {
		cfg := intakeConfiguration(t)
		_, intake := webhookconfig.SplitIntake(cfg.Webhooks)
		return len(intake) == 0, describeIntake(cfg)
	})
	create := func(ns string) *admissionregistrationv1.MutatingWebhookConfiguration {
		nss := tenantSidecarSet("fold", map[string]string{"e2e-fold": ns}, "fold-sidecar")
		if _, err := sidecars.AppsV1alpha1().NamespacedSidecarSets(ns).Create(context.Background(), nss, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return intakeConfiguration(t)
	}
	for i, ns := range written[:2] {
		cfg := create(ns)
		if cfg.Annotations[apps.IntakeUntilAnnotation] != "" || sends(cfg, quiet) {
			t.Fatalf("after writes in %d namespaces, the pods of every namespace are sent: %s", i+1, describeIntake(cfg))
		}
		if !sends(cfg, ns) {
			t.Fatalf("after a write in %s, its pods are not sent: %s", ns, describeIntake(cfg))
		}
	}
	cfg := create(written[2])
	if cfg.Annotations[apps.IntakeUntilAnnotation] == "" || !sends(cfg, quiet) {
		t.Fatalf("after writes in three namespaces, the pods of %s, where nothing was written, are not sent: %s", quiet, describeIntake(cfg))
	}
	if cfg.Annotations[apps.IntakeNamespacesAnnotation] != "" {
		t.Errorf("the namespaces' holds are kept beside the hold of every namespace: %s", describeIntake(cfg))
	}
	if cfg = create(written[3]); cfg.Annotations[apps.IntakeNamespacesAnnotation] != "" || !sends(cfg, written[3]) {
		t.Errorf("a fourth namespace's write under the hold of every namespace held its own: %s", describeIntake(cfg))
	}
	eventually(t, "the leader to drop the hold of every namespace", time.Minute, func(context.Context) (bool, string) {
		cfg := intakeConfiguration(t)
		return !sends(cfg, quiet), describeIntake(cfg)
	})
}

// intakeConfiguration returns the configuration of the intake webhooks, one without webhooks
// when there is none. The intake webhooks are never in the active configuration.
func intakeConfiguration(t *testing.T) *admissionregistrationv1.MutatingWebhookConfiguration {
	t.Helper()
	ctx := context.Background()
	active, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, injectionsync.ActiveWebhooks("sidecarset-injector"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, intake := webhookconfig.SplitIntake(active.Webhooks); len(intake) > 0 {
		t.Fatalf("the active configuration holds intake webhooks: %s", describeIntake(active))
	}
	cfg, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, injectionsync.IntakeWebhooks("sidecarset-injector"), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &admissionregistrationv1.MutatingWebhookConfiguration{}
	}
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// describeIntake says what the intake webhooks of cfg select and which holds it records.
func describeIntake(cfg *admissionregistrationv1.MutatingWebhookConfiguration) string {
	_, intake := webhookconfig.SplitIntake(cfg.Webhooks)
	var selectors []string
	for _, w := range intake {
		selectors = append(selectors, fmt.Sprintf("%s: namespaces %s, pods %s", w.Name, metav1.FormatLabelSelector(w.NamespaceSelector), metav1.FormatLabelSelector(w.ObjectSelector)))
	}
	slices.Sort(selectors)
	return fmt.Sprintf("intake webhooks [%s]; holds: every namespace until %q, namespaces %s", strings.Join(selectors, "; "),
		cfg.Annotations[apps.IntakeUntilAnnotation], cfg.Annotations[apps.IntakeNamespacesAnnotation])
}

// namespacedClient is what updateImage needs of a NamespacedSidecarSet client.
type namespacedClient interface {
	Get(context.Context, string, metav1.GetOptions) (*v1alpha1.NamespacedSidecarSet, error)
	Update(context.Context, *v1alpha1.NamespacedSidecarSet, metav1.UpdateOptions) (*v1alpha1.NamespacedSidecarSet, error)
}

// updateImage sets the image of the first sidecar of the named NamespacedSidecarSet.
func updateImage(ctx context.Context, client namespacedClient, name, image string) error {
	nss, err := client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	nss.Spec.Containers[0].Image = image
	_, err = client.Update(ctx, nss, metav1.UpdateOptions{})
	return err
}

// TestIntakeScopedToLabelKey: a cluster SidecarSet's write whose selector requires a label key
// has kube-apiserver send the server the pods with that key, in every namespace, before it
// returns, and not the pods without it: those cannot be its pods, and they are created without
// calling the server. Then the leader drops the hold. Serial: another test's write of a cluster
// SidecarSet requiring no label holds every pod.
func TestIntakeScopedToLabelKey(t *testing.T) {
	serialOnly(t, "reading the cluster-wide intake, which other tests' cluster SidecarSet writes open,")
	ns := tempNamespace(t, "e2e-intake-key-")
	nsLabels := map[string]string{corev1.LabelMetadataName: ns}
	sent := func(cfg *admissionregistrationv1.MutatingWebhookConfiguration, podLabels labels.Set) bool {
		return intakeSends(t, cfg, nsLabels, podLabels)
	}
	keyed, other := labels.Set{"e2e-intake-key": "elsewhere"}, labels.Set{"app": "e2e-intake-nothing"}
	ss := simpleSidecarSet("e2e-intake-key", "busybox:1.36", nil)
	ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"e2e-intake-key": "x"}}
	ss.Spec.Containers[0].Name = "e2e-intake-key" // a name no other SidecarSet that may select its pods has
	t.Cleanup(func() { deleteSidecarSets(t, ss.Name) })
	image := "busybox:1.36"
	eventuallyEvery(t, "a write of "+ss.Name+" with no other intake hold around it", time.Second, 3*time.Minute, func(ctx context.Context) (bool, string) {
		if cfg := intakeConfiguration(t); sent(cfg, keyed) || sent(cfg, other) {
			return false, "before the write, the pods are sent already (another write, or this test's last one): " + describeIntake(cfg)
		}
		image = map[string]string{"busybox:1.36": "busybox:1.37", "busybox:1.37": "busybox:1.36"}[image]
		ss.Spec.Containers[0].Image = image
		if err := applySidecarSet(t, ss); err != nil {
			return false, err.Error()
		}
		cfg := intakeConfiguration(t)
		if !sent(cfg, keyed) {
			t.Errorf("the write of %s returned, and a pod with its label key is not sent to the server: %s", ss.Name, describeIntake(cfg))
		}
		if sent(cfg, other) {
			return false, "after the write, a pod without its label key is sent to the server (the write held every pod, unless another test's write did): " + describeIntake(cfg)
		}
		return true, describeIntake(cfg)
	})
	eventually(t, "the leader to drop the hold of the label key", time.Minute, func(context.Context) (bool, string) {
		cfg := intakeConfiguration(t)
		return !sent(cfg, keyed), describeIntake(cfg)
	})
}
