package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

const migrateNamespace = "sidecarset-migrate"

// openKruiseExports are the files kubectl get prints in a cluster running OpenKruise, for its
// SidecarSet "migrate" (v1beta1, with its status, uid and resourceVersion) and its two
// ControllerRevisions as OpenKruise's controller writes them (revision 1 busybox:1.35, revision 2,
// the current spec, busybox:1.36): `kubectl get sidecarsets.apps.kruise.io -o yaml` and `kubectl
// get controllerrevisions -n kruise-system -l kruise.io/sidecarset-name -o yaml`.
func openKruiseExports() (sidecarSets, revisions string) {
	dir := filepath.Join(root, "pkg", "migrate", "testdata")
	return filepath.Join(dir, "openkruise-sidecarsets.yaml"), filepath.Join(dir, "openkruise-revisions.yaml")
}

// readControllerRevisions returns the ControllerRevisions of the export, oldest first.
func readControllerRevisions(t *testing.T, path string) []appsv1.ControllerRevision {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	list := &appsv1.ControllerRevisionList{}
	if err := yaml.Unmarshal(data, list); err != nil {
		t.Fatal(err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Revision < list.Items[j].Revision })
	if len(list.Items) != 2 {
		t.Fatalf("%s: %d ControllerRevisions, want 2", path, len(list.Items))
	}
	return list.Items
}

// openKruisePod is a pod OpenKruise injected with the SidecarSet "migrate" at revision current:
// its sidecar first (BeforeAppContainer) with OpenKruise's IS_INJECTED env, and OpenKruise's
// annotations, with the hashes OpenKruise computed and recorded on the revision.
func openKruisePod(name string, current appsv1.ControllerRevision) *corev1.Pod {
	entry := func(hash string, revision bool) string {
		rev := ""
		if revision {
			rev = fmt.Sprintf(`,"controllerRevision":%q`, current.Name)
		}
		return fmt.Sprintf(`{"migrate":{"updateTimestamp":"2026-06-20T14:31:00Z","hash":%q,"sidecarSetName":"migrate","sidecarList":["sidecar1"]%s}}`, hash, rev)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: migrateNamespace, Labels: map[string]string{"app": "migrate"},
			Annotations: map[string]string{
				sidecar.InjectedListAnnotation:     "migrate",
				sidecar.HashAnnotation:             entry(current.Annotations[sidecar.HashAnnotation], true),
				sidecar.HashWithoutImageAnnotation: entry(current.Annotations[sidecar.HashWithoutImageAnnotation], false),
			}},
		Spec: corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false), TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{
				{Name: "sidecar1", Image: "busybox:1.36", Command: []string{"sleep", "999d"}, ImagePullPolicy: corev1.PullIfNotPresent,
					Env: []corev1.EnvVar{{Name: "IS_INJECTED", Value: "true"}}},
				{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "999d"}},
			}},
	}
}

// openKruiseState is what the migration must leave alone on a pod OpenKruise injected.
func openKruiseState(p *corev1.Pod) string {
	var b strings.Builder
	for _, c := range p.Spec.Containers {
		fmt.Fprintf(&b, "%s=%s ", c.Name, c.Image)
	}
	for _, c := range p.Status.ContainerStatuses {
		fmt.Fprintf(&b, "%s restarts %d; ", c.Name, c.RestartCount)
	}
	for _, k := range []string{sidecar.InjectedListAnnotation, sidecar.HashAnnotation, sidecar.HashWithoutImageAnnotation, sidecar.InPlaceUpdateStateAnnotation} {
		fmt.Fprintf(&b, "%s=%s ", k, p.Annotations[k])
	}
	return b.String()
}

// TestMigrateFromOpenKruise: kubectl sidecarset migrate writes OpenKruise's exported SidecarSet
// and ControllerRevisions to the server (a dry run first, which writes nothing): the SidecarSet
// and both revisions exist under their names and numbers, the server's hash is OpenKruise's, the
// controller takes revision 2 as the latest and records none, and the pods OpenKruise injected
// count as updated with nothing changed on them (no upgrade). A second migration changes nothing.
// A new SidecarSet pinned to OpenKruise's revision 1 injects busybox:1.35, and a /rollout
// Rollback to it renumbers it 3 and upgrades the pods to it.
func TestMigrateFromOpenKruise(t *testing.T) {
	ctx := context.Background()
	deleteAllSidecarSets(t)
	ensureNamespace(t, migrateNamespace)
	cleanNamespace(t, migrateNamespace)
	t.Cleanup(func() {
		deleteAllSidecarSets(t)
		cleanNamespace(t, migrateNamespace)
	})
	sidecarSetsFile, revisionsFile := openKruiseExports()
	crs := readControllerRevisions(t, revisionsFile)
	old, current := crs[0], crs[1]
	revisions := sidecars.AppsV1alpha1().SidecarSetRevisions()
	waitRevisionsGone(t, "migrate") // those of an earlier run go with its SidecarSet

	// --from-cluster reads OpenKruise's CRD, which this cluster does not serve: a clear error.
	if out, errOut, err := plugin(t, "migrate", "--from-cluster", "--export", filepath.Join(t.TempDir(), "export.yaml")); err == nil ||
		!(strings.Contains(errOut, "sidecarsets.apps.kruise.io is not installed") || strings.Contains(errOut, "OpenKruise's SidecarSets are hidden")) {
		t.Errorf("migrate --from-cluster without OpenKruise: %v\n%s%s", err, out, errOut)
	}

	// Pods OpenKruise injected, running before the server knows their SidecarSet; no SidecarSet of
	// the server selects them (checked by a dry run), so they are created as they are.
	probe := openKruisePod("probe", current)
	eventually(t, "pods labelled app=migrate to be created as they are, not injected", time.Minute, func(context.Context) (bool, string) {
		got, err := createPodDryRun(probe)
		if err != nil {
			return false, err.Error()
		}
		return len(got.Spec.Containers) == 2, fmt.Sprintf("%d containers", len(got.Spec.Containers))
	})
	names := []string{"migrate-0", "migrate-1", "migrate-2"}
	before := map[string]string{}
	for _, name := range names {
		if _, err := kube.CoreV1().Pods(migrateNamespace).Create(ctx, openKruisePod(name, current), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range names {
		before[name] = openKruiseState(waitPodRunning(t, migrateNamespace, name, true))
	}

	out, errOut, err := plugin(t, "migrate", "--dry-run", "-f", sidecarSetsFile, "-f", revisionsFile)
	if err != nil || strings.Count(out, "\nkind: SidecarSetRevision\n") != 2 || !strings.Contains(out, "\nkind: SidecarSet\n") {
		t.Fatalf("migrate --dry-run: %v\n%s%s", err, out, errOut)
	}
	if _, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, "migrate", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the dry run wrote the SidecarSet: %v", err)
	}
	checkMigrateWarnsOfOpenKruiseFeatures(t)

	out, errOut, err = plugin(t, "migrate", "-f", sidecarSetsFile, "-f", revisionsFile)
	if err != nil || errOut != "" {
		t.Fatalf("migrate: %v\n%s%s", err, out, errOut)
	}
	t.Logf("migrate:\n%s", out)
	for _, cr := range crs {
		rev, err := revisions.Get(ctx, cr.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("OpenKruise's revision %s: %v", cr.Name, err)
		}
		if rev.Revision != cr.Revision || rev.SidecarSetName != "migrate" || rev.Labels["kruise.io/sidecarset-name"] != "migrate" ||
			rev.Annotations[sidecar.HashAnnotation] != cr.Annotations[sidecar.HashAnnotation] {
			t.Errorf("revision %s: number %d, SidecarSet %s, labels %v, annotations %v; want OpenKruise's", cr.Name, rev.Revision,
				rev.SidecarSetName, rev.Labels, rev.Annotations)
		}
	}
	ss, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, "migrate", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ss.Annotations[sidecar.HashAnnotation], current.Annotations[sidecar.HashAnnotation]; got != want {
		t.Errorf("the server's hash %s, OpenKruise's %s: the pods would be upgraded", got, want)
	}

	// Adopted: counted as updated, left as they were; the imported revisions are the history.
	waitStatus(t, "migrate", v1alpha1.SidecarSetStatus{MatchedPods: 3, UpdatedPods: 3, ReadyPods: 3, UpdatedReadyPods: 3})
	ss = waitAdopted(t, "migrate", 2)
	if ss.Status.LatestRevision != current.Name {
		t.Errorf("latest revision %s, want OpenKruise's %s", ss.Status.LatestRevision, current.Name)
	}
	for _, name := range names {
		p, err := kube.CoreV1().Pods(migrateNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := openKruiseState(p); got != before[name] {
			t.Errorf("pod %s changed by the migration:\n was %s\n now %s", name, before[name], got)
		}
	}

	// Again: nothing changes (the SidecarSet's status may, with the pods: its generation and
	// metadata may not).
	rvs := map[string]string{}
	for _, cr := range crs {
		rev, err := revisions.Get(ctx, cr.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rvs[cr.Name] = rev.ResourceVersion
	}
	out, errOut, err = plugin(t, "migrate", "-f", sidecarSetsFile, "-f", revisionsFile)
	if err != nil || errOut != "" || strings.Count(out, " unchanged") != 3 || strings.Contains(out, "created") {
		t.Errorf("second migrate: %v, want 3 objects unchanged\n%s%s", err, out, errOut)
	}
	again, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, "migrate", metav1.GetOptions{})
	if err != nil || again.Generation != ss.Generation || fmt.Sprint(again.Labels, again.Annotations) != fmt.Sprint(ss.Labels, ss.Annotations) {
		t.Errorf("the second migration wrote the SidecarSet: %v", err)
	}
	for _, cr := range crs {
		if rev, err := revisions.Get(ctx, cr.Name, metav1.GetOptions{}); err != nil || rev.ResourceVersion != rvs[cr.Name] {
			t.Errorf("the second migration wrote revision %s: %v", cr.Name, err)
		}
	}

	// A new SidecarSet pinned to OpenKruise's revision 1 injects what it recorded.
	pinned := simpleSidecarSet("migrate-pinned", "busybox:1.37", nil)
	pinned.Spec.InjectionStrategy.Revision = &v1alpha1.SidecarSetInjectRevision{RevisionName: ptr.To(old.Name),
		Policy: v1alpha1.AlwaysSidecarSetInjectRevisionPolicy}
	if err := applySidecarSet(t, pinned); err != nil {
		t.Fatalf("a SidecarSet pinned to %s: %v", old.Name, err)
	}
	waitSettled(t, "migrate-pinned")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pinned", Namespace: migrateNamespace, Labels: map[string]string{"app": "migrate-pinned"}},
		Spec: corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false), Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "999d"}}}}}
	waitInjectedImage(t, pod, "sidecar1", "busybox:1.35")

	// Roll back to OpenKruise's revision 1: renumbered 3, the pods upgraded to it in place.
	if _, err := sidecars.AppsV1alpha1().SidecarSets().Rollout(ctx, "migrate", &v1alpha1.SidecarSetRollout{
		Spec: v1alpha1.SidecarSetRolloutSpec{Action: v1alpha1.RolloutActionRollback, RevisionName: old.Name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("rollback to %s: %v", old.Name, err)
	}
	waitStatus(t, "migrate", v1alpha1.SidecarSetStatus{MatchedPods: 3, UpdatedPods: 3, ReadyPods: 3, UpdatedReadyPods: 3})
	for _, name := range names {
		waitPod(t, migrateNamespace, name, func(p *corev1.Pod) bool {
			st := sidecar.ContainerStatus(p, "sidecar1")
			return st != nil && st.Image == "busybox:1.35" && st.Ready
		})
	}
	ss = waitAdopted(t, "migrate", 2)
	rev, err := revisions.Get(ctx, old.Name, metav1.GetOptions{})
	if err != nil || rev.Revision != 3 || ss.Status.LatestRevision != old.Name || ss.Spec.Containers[0].Image != "busybox:1.35" {
		t.Errorf("after the rollback: revision %s number %v (%v), latest %s, image %s; want number 3, latest, busybox:1.35",
			old.Name, rev, err, ss.Status.LatestRevision, ss.Spec.Containers[0].Image)
	}
}

// waitAdopted waits until the SidecarSet has n revisions, all controlled by it, and returns it.
func waitAdopted(t *testing.T, name string, n int) *v1alpha1.SidecarSet {
	t.Helper()
	var ss *v1alpha1.SidecarSet
	eventually(t, fmt.Sprintf("SidecarSet %s to control %d revisions", name, n), time.Minute, func(ctx context.Context) (bool, string) {
		var err error
		if ss, err = sidecars.AppsV1alpha1().SidecarSets().Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		list, err := sidecars.AppsV1alpha1().SidecarSetRevisions().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.SidecarSetNameLabel + "=" + name})
		if err != nil {
			return false, err.Error()
		}
		seen := "revisions "
		adopted := 0
		for _, r := range list.Items {
			owner := metav1.GetControllerOf(&r)
			seen += fmt.Sprintf("%s (number %d, controller %v); ", r.Name, r.Revision, owner)
			if owner != nil && owner.UID == ss.UID {
				adopted++
			}
		}
		return len(list.Items) == n && adopted == n, seen
	})
	return ss
}

// waitRevisionsGone waits until no revision of the SidecarSet name is controlled by a SidecarSet
// (the server deletes them once it is deleted). Revisions without a controller, imported by an
// earlier run that stopped before writing the SidecarSet, stay: a migration finds them unchanged.
func waitRevisionsGone(t *testing.T, name string) {
	t.Helper()
	eventually(t, fmt.Sprintf("the revisions of an earlier SidecarSet %s deleted", name), time.Minute, func(ctx context.Context) (bool, string) {
		list, err := sidecars.AppsV1alpha1().SidecarSetRevisions().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.SidecarSetNameLabel + "=" + name})
		if err != nil {
			return false, err.Error()
		}
		for _, r := range list.Items {
			if owner := metav1.GetControllerOf(&r); owner != nil {
				return false, fmt.Sprintf("revision %s still controlled by %s %s", r.Name, owner.Kind, owner.UID)
			}
		}
		return true, ""
	})
}

// checkMigrateWarnsOfOpenKruiseFeatures: a dry run of a SidecarSet whose sidecar asks for
// OpenKruise's Job sidecar terminator and container launch priority warns on stderr, naming it
// and the fields (the export above asks for neither: the migration of it warns of nothing).
func checkMigrateWarnsOfOpenKruiseFeatures(t *testing.T) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "job-proxy.yaml")
	if err := os.WriteFile(file, []byte(`apiVersion: apps.kruise.io/v1beta1
kind: SidecarSet
metadata: {name: e2e-migrate-job-proxy}
spec:
  selector: {matchLabels: {app: e2e-migrate-batch}}
  containers: [{name: proxy, image: busybox:1.36, env: [{name: KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT, value: "true"}, {name: KRUISE_CONTAINER_PRIORITY, value: "1"}]}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := plugin(t, "migrate", "--dry-run", "-f", file)
	for _, want := range []string{"Warning: SidecarSet e2e-migrate-job-proxy relies on OpenKruise features outside the SidecarSet API",
		"Job sidecar terminator (spec.containers[proxy].env[KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT])",
		"container launch priority (spec.containers[proxy].env[KRUISE_CONTAINER_PRIORITY])"} {
		if err != nil || !strings.Contains(errOut, want) {
			t.Errorf("migrate --dry-run of a SidecarSet relying on OpenKruise features: %v, stderr lacks %q\n%s%s", err, want, out, errOut)
		}
	}
}
