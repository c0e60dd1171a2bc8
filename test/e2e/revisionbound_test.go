package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	clientset "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// revisionStorageCap is the number of revisions the server keeps of a SidecarSet with
// revisionHistoryLimit 1 however many of them are pinned or named by pods, as docs/tenancy.md
// documents it: max(revisionHistoryLimit, 10).
const revisionStorageCap = 10

// TestRevisionStorageBounded: a namespace editor cannot make the server keep more revisions of a
// NamespacedSidecarSet than the documented cap. The editor's NamespacedSidecarSet carries a large
// env value, keeps one revision (revisionHistoryLimit 1), is labelled with a custom version and
// pinned to it (so every revision recorded carries the pinned version), and its pods' hash
// annotations are rewritten by the editor to name old revisions; 30 image changes later the
// server stores exactly the cap, never more on the way, and a warning event tells the editor.
func TestRevisionStorageBounded(t *testing.T) {
	parallelTest(t)
	ctx := context.Background()
	if out, err := runKubectl(t, "", "apply", "-f", filepath.Join(root, "artifacts/deploy/base/user-roles.yaml")); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	own := tempNamespace(t, "e2e-revbound-")
	editor := namespaceEditor(t, "e2e-revbound-editor", own)
	editorKube := editorPods(t, "e2e-revbound-editor")
	const name, version, pods, changes = "revbound", "v1", 12, 30

	spec := simpleSidecarSet(name, "busybox:1.36", nil).Spec
	spec.RevisionHistoryLimit = ptr.To[int32](1)
	spec.UpdateStrategy.Paused = true // the forged annotations stay: the controller upgrades nothing
	spec.Containers[0].Env = []corev1.EnvVar{{Name: "PADDING", Value: strings.Repeat("x", 100*1024)}}
	nss := &v1alpha1.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{v1alpha1.SidecarSetCustomVersionLabel: version}}, Spec: spec}
	eventually(t, "a namespace editor allowed to create a NamespacedSidecarSet", 30*time.Second, func(ctx context.Context) (bool, string) {
		_, err := editor.AppsV1alpha1().NamespacedSidecarSets(own).Create(ctx, nss, metav1.CreateOptions{})
		return err == nil, fmt.Sprintf("create: %v", err)
	})
	waitNamespacedSettled(t, editor, own, name)
	// The pin is checked against the revisions in the server's cache, a moment behind.
	eventually(t, "the NamespacedSidecarSet pinned to custom version "+version, 30*time.Second, func(ctx context.Context) (bool, string) {
		got, err := editor.AppsV1alpha1().NamespacedSidecarSets(own).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got.Spec.InjectionStrategy.Revision = &v1alpha1.SidecarSetInjectRevision{CustomVersion: ptr.To(version),
			Policy: v1alpha1.AlwaysSidecarSetInjectRevisionPolicy}
		_, err = editor.AppsV1alpha1().NamespacedSidecarSets(own).Update(ctx, got, metav1.UpdateOptions{})
		return err == nil, fmt.Sprint(err)
	})
	waitNamespacedSettled(t, editor, own, name)
	waitInjected(t, teamPod(own, name, "probe"), "sidecar1")
	for i := 0; i < pods; i++ {
		if _, err := editorKube.CoreV1().Pods(own).Create(ctx, teamPod(own, name, fmt.Sprintf("web-%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	engine := v1alpha1.NamespacedName(own, name)
	most := 0
	for i := 1; i <= changes; i++ {
		latest := changeImage(t, editor, own, name, fmt.Sprintf("busybox:1.%d", 36+i))
		// The editor makes pod i%pods claim to run the revision just recorded: every revision
		// recorded is named by a pod for a while, the last 12 at the end.
		forgeRevision(t, editorKube, own, fmt.Sprintf("web-%d", i%pods), engine, latest)
		n, err := storedRevisions(ctx, engine)
		if err != nil {
			t.Fatal(err)
		}
		most = max(most, n)
		t.Logf("change %d: revision %s recorded, %d stored", i, latest, n)
	}
	if most > revisionStorageCap {
		t.Errorf("up to %d revisions stored on the way, want at most %d", most, revisionStorageCap)
	}
	// Pods name 12 revisions and the pin names the latest: the cap holds them back.
	eventually(t, fmt.Sprintf("%d revisions of %s stored", revisionStorageCap, engine), time.Minute, func(ctx context.Context) (bool, string) {
		n, err := storedRevisions(ctx, engine)
		return err == nil && n == revisionStorageCap, fmt.Sprintf("%d stored (%v)", n, err)
	})
	// The editor is told, on its own object, which revisions the cap took.
	eventually(t, "a RevisionCapReached event on the NamespacedSidecarSet", time.Minute, func(ctx context.Context) (bool, string) {
		events, err := editorKube.CoreV1().Events(own).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=NamespacedSidecarSet,involvedObject.name=" +
			name + ",reason=RevisionCapReached"})
		if err != nil {
			return false, err.Error()
		}
		return len(events.Items) > 0 && events.Items[0].Type == corev1.EventTypeWarning, fmt.Sprintf("%d events", len(events.Items))
	})
}

// editorPods returns a Kubernetes client acting as user (bound to edit by namespaceEditor).
func editorPods(t *testing.T, user string) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return kubernetes.NewForConfigOrDie(cfg)
}

// changeImage sets the NamespacedSidecarSet's container image and returns the revision the
// controller recorded for it, once its status says so.
func changeImage(t *testing.T, editor clientset.Interface, namespace, name, image string) string {
	t.Helper()
	var latest string
	eventually(t, fmt.Sprintf("image %s set", image), 30*time.Second, func(ctx context.Context) (bool, string) {
		got, err := editor.AppsV1alpha1().NamespacedSidecarSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		latest = got.Status.LatestRevision
		got.Spec.Containers[0].Image = image
		_, err = editor.AppsV1alpha1().NamespacedSidecarSets(namespace).Update(ctx, got, metav1.UpdateOptions{})
		return err == nil, fmt.Sprint(err)
	})
	before := latest
	eventually(t, fmt.Sprintf("a revision of image %s recorded", image), time.Minute, func(ctx context.Context) (bool, string) {
		got, err := editor.AppsV1alpha1().NamespacedSidecarSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		latest = got.Status.LatestRevision
		return got.Status.ObservedGeneration == got.Generation && latest != before,
			fmt.Sprintf("generation %d observed %d, latest revision %s", got.Generation, got.Status.ObservedGeneration, latest)
	})
	return latest
}

// forgeRevision rewrites the pod's hash annotation entry of SidecarSet engine to name revision,
// as any namespace editor may.
func forgeRevision(t *testing.T, client kubernetes.Interface, namespace, pod, engine, revision string) {
	t.Helper()
	eventually(t, fmt.Sprintf("pod %s naming revision %s", pod, revision), 30*time.Second, func(ctx context.Context) (bool, string) {
		got, err := client.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		hashes, err := sidecar.ParseHashMap(got.Annotations[sidecar.HashAnnotation])
		if err != nil {
			return false, err.Error()
		}
		entry, ok := hashes[engine]
		if !ok {
			return false, fmt.Sprintf("not injected by %s: %s", engine, got.Annotations[sidecar.HashAnnotation])
		}
		entry.ControllerRevision = revision
		if err := sidecar.SetHashEntry(got.Annotations, sidecar.HashAnnotation, entry); err != nil {
			return false, err.Error()
		}
		_, err = client.CoreV1().Pods(namespace).Update(ctx, got, metav1.UpdateOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

// storedRevisions counts the stored revisions of SidecarSet engine.
func storedRevisions(ctx context.Context, engine string) (int, error) {
	list, err := sidecars.AppsV1alpha1().SidecarSetRevisions().List(ctx,
		metav1.ListOptions{LabelSelector: v1alpha1.SidecarSetNameLabel + "=" + engine})
	if err != nil {
		return 0, err
	}
	return len(list.Items), nil
}
