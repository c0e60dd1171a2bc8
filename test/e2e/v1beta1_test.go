package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1beta1"
)

// v1beta1Manifests is the folder of OpenKruise's v1beta1 e2e SidecarSets.
var v1beta1Manifests = filepath.Join("testdata", "openkruise-v1beta1")

// TestV1beta1Manifests applies every v1beta1 SidecarSet of OpenKruise's e2e tests unchanged with
// kubectl, then again (nothing changes), and reads each back at both versions.
func TestV1beta1Manifests(t *testing.T) {
	ctx := context.Background()
	deleteAllSidecarSets(t)
	t.Cleanup(func() { deleteAllSidecarSets(t) })
	setNamespace(t, "e2e-v1beta1", map[string]string{"inject": "sidecar"})
	// OpenKruise's whitelist in this server's namespace (applyWhitelist waits for the admission
	// plugin's ConfigMap informer).
	applyWhitelist(t, filepath.Join(v1beta1Manifests, "whitelist-configmap.yaml"))
	t.Cleanup(func() { setWhitelist(t, false) })
	files, err := filepath.Glob(filepath.Join(v1beta1Manifests, "[0-9]*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("manifests: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			out, err := runKubectl(t, "", "apply", "-f", f)
			if err != nil || !strings.Contains(out, "created") {
				t.Fatalf("apply: %v: %s", err, out)
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			written := &v1beta1.SidecarSet{}
			if err := json.Unmarshal(mustJSON(t, string(data)), written); err != nil {
				t.Fatal(err)
			}
			first := waitSettled(t, written.Name)
			// Applied again, the SidecarSet does not change (kubectl may still send a patch, for
			// lists without a merge key such as downwardAPI items that the server defaulted).
			if out, err := runKubectl(t, "", "apply", "-f", f); err != nil {
				t.Errorf("apply again: %v: %s", err, out)
			}
			if again := waitSettled(t, written.Name); again.Generation != first.Generation {
				t.Errorf("applying again changed the generation from %d to %d", first.Generation, again.Generation)
			}
			beta, err := sidecars.AppsV1beta1().SidecarSets().Get(ctx, written.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(written.Spec.NamespaceSelector, beta.Spec.NamespaceSelector); diff != "" {
				t.Errorf("v1beta1 namespaceSelector (-written +read):\n%s", diff)
			}
			if beta.Spec.CustomVersion != written.Spec.CustomVersion || beta.Labels[v1alpha1.SidecarSetCustomVersionLabel] != "" {
				t.Errorf("v1beta1 customVersion %q labels %v, written %q", beta.Spec.CustomVersion, beta.Labels, written.Spec.CustomVersion)
			}
			alpha, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, written.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := alpha.Labels[v1alpha1.SidecarSetCustomVersionLabel]; got != written.Spec.CustomVersion || alpha.Spec.Namespace != "" {
				t.Errorf("v1alpha1 custom version label %q namespace %q, written customVersion %q", got, alpha.Spec.Namespace, written.Spec.CustomVersion)
			}
		})
	}
	// The revision chosen by spec.customVersion carries it as its label, as in OpenKruise.
	revs, err := sidecars.AppsV1beta1().SidecarSets().GetRevisions(ctx, "test-sidecarset-e2e-v1beta1-rev1", metav1.GetOptions{})
	if err != nil || len(revs.Items) != 1 || revs.Items[0].Labels[v1alpha1.SidecarSetCustomVersionLabel] != "0" {
		t.Errorf("revisions of the custom version SidecarSet: %v %+v", err, revs)
	}
	// OpenKruise's injection revision test then pins the injected revision by its custom version
	// while moving spec.customVersion on.
	out, err := runKubectl(t, "", "patch", "sidecarsets.v1beta1.apps.kruise.io", "test-sidecarset-e2e-v1beta1-rev1", "--type=merge",
		"-p", `{"spec":{"customVersion":"1","injectionStrategy":{"revision":{"customVersion":"0","policy":"Always"}}}}`)
	if err != nil {
		t.Fatalf("pin the injection revision: %v: %s", err, out)
	}
	alpha := waitSettled(t, "test-sidecarset-e2e-v1beta1-rev1")
	if alpha.Labels[v1alpha1.SidecarSetCustomVersionLabel] != "1" || alpha.Spec.InjectionStrategy.Revision == nil ||
		ptr.Deref(alpha.Spec.InjectionStrategy.Revision.CustomVersion, "") != "0" {
		t.Errorf("after pinning: labels %v injectionStrategy %+v", alpha.Labels, alpha.Spec.InjectionStrategy)
	}
}

// TestV1beta1API covers both versions side by side: kubectl get and explain, an object written in
// one version read in the other with OpenKruise's values, the revisions and rollout subresources,
// strategic merge patch, server-side apply and field selectors at v1beta1.
func TestV1beta1API(t *testing.T) {
	parallelTest(t)
	ctx := context.Background()
	deleteSidecarSets(t, "written-alpha", "written-beta", "applied-beta")
	t.Cleanup(func() { deleteSidecarSets(t, "written-alpha", "written-beta", "applied-beta") })
	alphaClient, betaClient := sidecars.AppsV1alpha1().SidecarSets(), sidecars.AppsV1beta1().SidecarSets()
	container := v1alpha1.SidecarContainer{Container: corev1.Container{Name: "c-alpha", Image: "busybox:1"}}

	// Written in v1alpha1, read in v1beta1.
	alpha := &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "written-alpha", Labels: map[string]string{"app": "x", v1alpha1.SidecarSetCustomVersionLabel: "v1"}},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "alpha"}},
			Namespace:  "e2e-v1beta1-api",
			Containers: []v1alpha1.SidecarContainer{container},
		},
	}
	if _, err := alphaClient.Create(ctx, alpha, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, alpha.Name)
	beta, err := betaClient.Get(ctx, alpha.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "e2e-v1beta1-api"}}
	if diff := cmp.Diff(want, beta.Spec.NamespaceSelector); diff != "" || beta.Spec.CustomVersion != "v1" ||
		beta.Labels[v1alpha1.SidecarSetCustomVersionLabel] != "" || beta.Labels["app"] != "x" {
		t.Errorf("v1beta1 read: customVersion %q labels %v namespaceSelector (-want +got):\n%s", beta.Spec.CustomVersion, beta.Labels, diff)
	}
	// Written back in v1beta1 unchanged, the v1alpha1 object is unchanged too. The controller may
	// write the status meanwhile: the write is tried again on the object as stored.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		_, err := betaClient.Update(ctx, beta, metav1.UpdateOptions{})
		if cur, getErr := betaClient.Get(ctx, alpha.Name, metav1.GetOptions{}); apierrors.IsConflict(err) && getErr == nil {
			beta = cur
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	back, err := alphaClient.Get(ctx, alpha.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if back.Spec.Namespace != "e2e-v1beta1-api" || back.Spec.NamespaceSelector != nil || back.Labels[v1alpha1.SidecarSetCustomVersionLabel] != "v1" || back.Generation != 1 {
		t.Errorf("v1alpha1 after a v1beta1 round trip: namespace %q selector %v labels %v generation %d",
			back.Spec.Namespace, back.Spec.NamespaceSelector, back.Labels, back.Generation)
	}

	// Written in v1beta1, read in v1alpha1.
	betaSet := &v1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "written-beta"},
		Spec: v1beta1.SidecarSetSpec{
			Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{"app": "beta"}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
			CustomVersion:     "v2",
			Containers:        []v1beta1.SidecarContainer{{Container: corev1.Container{Name: "c-beta", Image: "busybox:1"}}},
		},
	}
	if _, err := betaClient.Create(ctx, betaSet, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, betaSet.Name)
	alphaRead, err := alphaClient.Get(ctx, betaSet.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(betaSet.Spec.NamespaceSelector, alphaRead.Spec.NamespaceSelector); diff != "" ||
		alphaRead.Labels[v1alpha1.SidecarSetCustomVersionLabel] != "v2" || alphaRead.Spec.Namespace != "" {
		t.Errorf("v1alpha1 read: labels %v namespace %q namespaceSelector (-want +got):\n%s", alphaRead.Labels, alphaRead.Spec.Namespace, diff)
	}

	// kubectl get at v1beta1, with the printer columns.
	out, err := runKubectl(t, "", "get", "sidecarsets.v1beta1.apps.kruise.io")
	if err != nil || !strings.Contains(strings.Join(strings.Fields(strings.SplitN(out, "\n", 2)[0]), " "), "NAME MATCHED UPDATED READY AGE") ||
		!strings.Contains(out, "written-alpha") || !strings.Contains(out, "written-beta") {
		t.Errorf("get sidecarsets.v1beta1.apps.kruise.io: %v\n%s", err, out)
	}
	out, err = runKubectl(t, "", "get", "sidecarsets.v1beta1.apps.kruise.io", "written-beta", "-o", "jsonpath={.apiVersion} {.spec.customVersion}")
	if err != nil || out != "apps.kruise.io/v1beta1 v2" {
		t.Errorf("get -o jsonpath at v1beta1: %v %q", err, out)
	}

	// kubectl explain at both versions; each version has its own fields.
	explain := func(args ...string) (string, error) {
		var out string
		var err error
		// kube-apiserver aggregates this server's OpenAPI asynchronously. Every second: each try
		// runs kubectl. The caller reports the last try.
		_, _ = pollEvery(time.Second, time.Minute, func(context.Context) (bool, string) {
			out, err = runKubectl(t, "", append([]string{"explain"}, args...)...)
			return err == nil, ""
		})
		return out, err
	}
	if out, err := explain("sidecarset.spec.customVersion", "--api-version=apps.kruise.io/v1beta1"); err != nil ||
		!strings.Contains(out, "VERSION:    v1beta1") || !strings.Contains(out, "customVersion <string>") {
		t.Errorf("explain v1beta1 customVersion: %v\n%s", err, out)
	}
	if out, err := explain("sidecarset.spec.namespace", "--api-version=apps.kruise.io/v1alpha1"); err != nil ||
		!strings.Contains(out, "VERSION:    v1alpha1") || !strings.Contains(out, "namespace <string>") {
		t.Errorf("explain v1alpha1 namespace: %v\n%s", err, out)
	}
	if out, err := runKubectl(t, "", "explain", "sidecarset.spec.namespace", "--api-version=apps.kruise.io/v1beta1"); err == nil {
		t.Errorf("explain v1beta1 spec.namespace succeeded:\n%s", out)
	}

	// /revisions at both versions returns the v1alpha1 SidecarSetRevisionList (SidecarSetRevision
	// has one version); /rollout returns the SidecarSetRollout of the version asked.
	for version, get := range map[string]func() (*v1alpha1.SidecarSetRevisionList, error){
		"v1alpha1": func() (*v1alpha1.SidecarSetRevisionList, error) {
			return alphaClient.GetRevisions(ctx, betaSet.Name, metav1.GetOptions{})
		},
		"v1beta1": func() (*v1alpha1.SidecarSetRevisionList, error) {
			return betaClient.GetRevisions(ctx, betaSet.Name, metav1.GetOptions{})
		},
	} {
		revs, err := get()
		if err != nil || len(revs.Items) != 1 || revs.Items[0].Labels[v1alpha1.SidecarSetCustomVersionLabel] != "v2" {
			t.Errorf("%s revisions: %v %+v", version, err, revs)
		}
	}
	alphaView, err := alphaClient.GetRollout(ctx, betaSet.Name, metav1.GetOptions{})
	if err != nil || alphaView.Status.LatestRevision == "" || alphaView.Status.LatestRevision != alphaRead.Status.LatestRevision {
		t.Errorf("v1alpha1 rollout: %v %+v", err, alphaView)
	}
	betaView, err := betaClient.GetRollout(ctx, betaSet.Name, metav1.GetOptions{})
	if err != nil || betaView.Status.LatestRevision != alphaRead.Status.LatestRevision {
		t.Errorf("v1beta1 rollout: %v %+v", err, betaView)
	}
	if _, err := betaClient.Rollout(ctx, betaSet.Name, &v1beta1.SidecarSetRollout{Spec: v1beta1.SidecarSetRolloutSpec{Action: v1beta1.RolloutActionPause}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("rollout Pause at v1beta1: %v", err)
	}
	if got, err := alphaClient.Get(ctx, betaSet.Name, metav1.GetOptions{}); err != nil || !got.Spec.UpdateStrategy.Paused {
		t.Errorf("Pause at v1beta1 not seen at v1alpha1: %v", err)
	}
	if _, err := alphaClient.Rollout(ctx, betaSet.Name, &v1alpha1.SidecarSetRollout{Spec: v1alpha1.SidecarSetRolloutSpec{Action: v1alpha1.RolloutActionResume}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("rollout Resume at v1alpha1: %v", err)
	}
	if got, err := betaClient.Get(ctx, betaSet.Name, metav1.GetOptions{}); err != nil || got.Spec.UpdateStrategy.Paused {
		t.Errorf("Resume at v1alpha1 not seen at v1beta1: %v", err)
	}
	if _, err := betaClient.Rollout(ctx, betaSet.Name, &v1beta1.SidecarSetRollout{Spec: v1beta1.SidecarSetRolloutSpec{Action: v1beta1.RolloutActionPause}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("rollout Pause at v1beta1: %v", err)
	}
	out, err = runKubectl(t, "", "get", "--raw", "/apis/apps.kruise.io/v1beta1/sidecarsets/written-beta/rollout")
	if err != nil || !strings.Contains(out, `"kind":"SidecarSetRollout","apiVersion":"apps.kruise.io/v1beta1"`) || !strings.Contains(out, `"paused":true`) {
		t.Errorf("GET v1beta1 rollout: %v %s", err, out)
	}

	// Strategic merge patch at v1beta1 merges containers by name; spec.customVersion patches.
	out, err = runKubectl(t, "", "patch", "sidecarsets.v1beta1.apps.kruise.io", "written-beta", "--type=strategic",
		"-p", `{"spec":{"customVersion":"v3","containers":[{"name":"c-beta","image":"busybox:2"}]}}`)
	if err != nil {
		t.Fatalf("strategic merge patch: %v\n%s", err, out)
	}
	got, err := alphaClient.Get(ctx, betaSet.Name, metav1.GetOptions{})
	if err != nil || len(got.Spec.Containers) != 1 || got.Spec.Containers[0].Image != "busybox:2" || got.Labels[v1alpha1.SidecarSetCustomVersionLabel] != "v3" {
		t.Errorf("strategic merge patch at v1beta1: %v %+v %v", err, got.Spec.Containers, got.Labels)
	}

	// Server-side apply at v1beta1, then a field selector at v1beta1.
	manifest := `{"apiVersion":"apps.kruise.io/v1beta1","kind":"SidecarSet","metadata":{"name":"applied-beta"},
		"spec":{"customVersion":"a1","selector":{"matchLabels":{"app":"ssa"}},"containers":[{"name":"c-ssa","image":"busybox:1"}]}}`
	if out, err := runKubectl(t, manifest, "apply", "--server-side", "--field-manager=e2e-beta", "-f", "-"); err != nil {
		t.Fatalf("server-side apply: %v\n%s", err, out)
	}
	applied, err := betaClient.Get(ctx, "applied-beta", metav1.GetOptions{})
	if err != nil || applied.Spec.CustomVersion != "a1" {
		t.Fatalf("server-side applied: %v %+v", err, applied)
	}
	managers := map[string]string{}
	for _, m := range applied.ManagedFields {
		managers[m.Manager] = m.APIVersion
	}
	if managers["e2e-beta"] != "apps.kruise.io/v1beta1" {
		t.Errorf("managed fields: %v", managers)
	}
	list, err := betaClient.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=applied-beta"})
	if err != nil || len(list.Items) != 1 {
		t.Errorf("field selector at v1beta1: %v %+v", err, list)
	}
	list, err = betaClient.List(ctx, metav1.ListOptions{FieldSelector: "spec.namespace=e2e-v1beta1-api"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "written-alpha" {
		t.Errorf("spec.namespace field selector at v1beta1: %v %+v", err, list)
	}
}
