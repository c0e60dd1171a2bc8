package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// restoreNamespace holds TestBackupRestore's pods and NamespacedSidecarSet.
const restoreNamespace = "sidecarset-restore"

// restorePods is how many pods TestBackupRestore injects and upgrades.
const restorePods = 3

// TestBackupRestore drills the restore procedure (artifacts/deploy/README.md, Restore) on the
// local cluster: a SidecarSet and a NamespacedSidecarSet with two revisions each, pods injected
// and upgraded; a snapshot taken as the backup CronJobs take it (etcdctl snapshot save), copied to
// an S3-compatible object store with the server's `snapshot upload` and read back with `snapshot
// download`; then writes the snapshot misses (an upgrade the pods take, a new SidecarSet); the
// server's etcd stopped, its data directory deleted, the downloaded copy restored with etcdutl
// (revision bumped and marked compacted) and everything started again. The SidecarSets and
// revisions come back with their UIDs, generations and hashes, the later SidecarSet is gone, a
// watch from a resourceVersion seen before the restore is answered 410 Expired, the pods keep
// their sidecars, and the controller resumes: the pods the restored spec is older than follow it
// again, and a new image change of each rolls out.
func TestBackupRestore(t *testing.T) {
	serialOnly(t, "restoring the server's etcd")
	startOver(t, restoreNamespace, "")
	cluster, namespaced := restoreFixtures(t)
	setRestoreImages(t, cluster, namespaced, "v2", "v2")
	before := readRestoreState(t)

	snapshot := filepath.Join(t.TempDir(), "snapshot.db")
	if _, err := localUp("snapshot-server-etcd", snapshot); err != nil {
		t.Fatal(err)
	}
	restored := copyOffCluster(t, snapshot)

	// What the snapshot misses: the pods upgraded once more, a SidecarSet created.
	setRestoreImages(t, cluster, namespaced, "v3", "v2")
	later := restoreSidecarSet("restore-later", "later", "later:v1")
	if err := createSidecarSet(context.Background(), later); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, later.Name)
	seen := sidecarSetListVersion(t)

	start := time.Now()
	if _, err := localUp("restore-server-etcd", restored); err != nil {
		t.Fatal(err)
	}
	waitReadable(t, cluster.Name)
	t.Logf("restore: the server answered %s after the restore began", time.Since(start).Round(100*time.Millisecond))

	after := readRestoreState(t)
	if diff := cmp.Diff(before.stored, after.stored); diff != "" {
		t.Errorf("SidecarSets and revisions after the restore (-before the snapshot +after the restore):\n%s", diff)
	}
	if _, err := sidecars.AppsV1alpha1().SidecarSets().Get(context.Background(), later.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("SidecarSet %s, created after the snapshot, after the restore: %v, want NotFound", later.Name, err)
	}
	checkWatchExpired(t, seen)
	checkPodsKept(t, before.pods, after.pods)

	// The controller resumes: the pods follow the restored spec (v2), then a new change of each.
	waitRestoreImages(t, "v2", "v2")
	setRestoreImages(t, cluster, namespaced, "v4", "v3")
	final := readRestoreState(t)
	checkPodsKept(t, before.pods, final.pods)
}

// restoreFixtures creates the cluster SidecarSet restore-cluster (sidecar1) and the
// NamespacedSidecarSet restore-team (agent), both at image v1 selecting app=restore, and the pods,
// injected with both.
func restoreFixtures(t *testing.T) (cluster *v1alpha1.SidecarSet, namespaced *v1alpha1.NamespacedSidecarSet) {
	t.Helper()
	ctx := context.Background()
	cluster = restoreSidecarSet("restore-cluster", "sidecar1", "sidecar:v1")
	if err := createSidecarSet(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sidecars.AppsV1alpha1().SidecarSets().Delete(context.Background(), cluster.Name, metav1.DeleteOptions{})
	})
	namespaced = &v1alpha1.NamespacedSidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "restore-team", Namespace: restoreNamespace},
		Spec:       restoreSidecarSet("", "agent", "agent:v1").Spec,
	}
	if _, err := sidecars.AppsV1alpha1().NamespacedSidecarSets(restoreNamespace).Create(ctx, namespaced, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, cluster.Name)
	waitNamespacedSettled(t, sidecars, restoreNamespace, namespaced.Name)
	for i := range restorePods {
		pod := budgetPod(fmt.Sprintf("restore-%d", i), restoreNamespace, "restore")
		eventually(t, "pod "+pod.Name+" created with both sidecars", time.Minute, func(ctx context.Context) (bool, string) {
			got, err := kube.CoreV1().Pods(restoreNamespace).Create(ctx, pod.DeepCopy(), metav1.CreateOptions{})
			if err != nil {
				return false, err.Error()
			}
			if sidecar.FindPodContainer(got, "sidecar1") != nil && sidecar.FindPodContainer(got, "agent") != nil {
				return true, ""
			}
			_ = kube.CoreV1().Pods(restoreNamespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			waitGone(t, restoreNamespace, pod.Name)
			return false, fmt.Sprintf("containers %v", containerNames(got))
		})
	}
	waitRestoreImages(t, "v1", "v1")
	return cluster, namespaced
}

// restoreSidecarSet is a SidecarSet selecting app=restore with one sidecar, upgraded in place
// all at once (maxUnavailable 100%).
func restoreSidecarSet(name, container, image string) *v1alpha1.SidecarSet {
	all := intstr.FromString("100%")
	return &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "restore"}},
			UpdateStrategy: v1alpha1.SidecarSetUpdateStrategy{Type: v1alpha1.RollingUpdateSidecarSetStrategyType,
				MaxUnavailable: &all},
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: container, Image: image,
				Command: []string{"sleep", "999d"}}}},
		},
	}
}

// setRestoreImages sets sidecar1's image to sidecar:<clusterVersion> and agent's to
// agent:<teamVersion> (where they differ from the stored ones) and waits until every pod runs both.
func setRestoreImages(t *testing.T, cluster *v1alpha1.SidecarSet, namespaced *v1alpha1.NamespacedSidecarSet, clusterVersion, teamVersion string) {
	t.Helper()
	ctx := context.Background()
	patch := func(container, image string) []byte {
		return fmt.Appendf(nil, `{"spec":{"containers":[{"name":%q,"image":%q}]}}`, container, image)
	}
	if _, err := sidecars.AppsV1alpha1().SidecarSets().Patch(ctx, cluster.Name, types.StrategicMergePatchType,
		patch("sidecar1", "sidecar:"+clusterVersion), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch SidecarSet %s: %v", cluster.Name, err)
	}
	if _, err := sidecars.AppsV1alpha1().NamespacedSidecarSets(restoreNamespace).Patch(ctx, namespaced.Name, types.MergePatchType,
		fmt.Appendf(nil, `{"spec":{"containers":[{"name":"agent","image":%q,"command":["sleep","999d"]}]}}`, "agent:"+teamVersion),
		metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch NamespacedSidecarSet %s: %v", namespaced.Name, err)
	}
	waitRestoreImages(t, clusterVersion, teamVersion)
}

// waitRestoreImages waits until every pod of TestBackupRestore runs sidecar:<clusterVersion> and
// agent:<teamVersion>, ready, and both SidecarSets count every pod updated.
func waitRestoreImages(t *testing.T, clusterVersion, teamVersion string) {
	t.Helper()
	want := map[string]string{"sidecar1": "sidecar:" + clusterVersion, "agent": "agent:" + teamVersion}
	eventually(t, fmt.Sprintf("pods app=restore running %v", want), rolloutTimeout, func(ctx context.Context) (bool, string) {
		list, err := kube.CoreV1().Pods(restoreNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=restore"})
		if err != nil {
			return false, err.Error()
		}
		done := 0
		var seen []string
		for i := range list.Items {
			p := &list.Items[i]
			ok := podIsReady(p)
			for c, image := range want {
				st := sidecar.ContainerStatus(p, c)
				ok = ok && st != nil && st.Image == image && st.Ready
				if st != nil {
					seen = append(seen, p.Name+"/"+c+"="+st.Image)
				}
			}
			if ok {
				done++
			}
		}
		sort.Strings(seen)
		return done == restorePods && len(list.Items) == restorePods, fmt.Sprintf("%d of %d: %v", done, len(list.Items), seen)
	})
	waitStatusFor(t, "restore-cluster", restorePods, rolloutTimeout)
	waitNamespacedStatus(t, sidecars, restoreNamespace, "restore-team", func(s v1alpha1.SidecarSetStatus) bool {
		return s.MatchedPods == restorePods && s.UpdatedPods == restorePods && s.UpdatedReadyPods == restorePods
	})
}

// restoreState is what TestBackupRestore compares across the restore.
type restoreState struct {
	// stored: each SidecarSet's, NamespacedSidecarSet's and revision's identity, generation and
	// hashes, by kind/name.
	stored map[string]string
	// pods: each pod's UID and the SidecarSets it was injected with.
	pods map[string]podRecord
}

// podRecord is what a pod must keep across a restore.
type podRecord struct {
	UID      types.UID
	Injected string
	Sidecars []string
}

// readRestoreState reads the SidecarSets, NamespacedSidecarSets and revisions of the test, and its
// pods.
func readRestoreState(t *testing.T) restoreState {
	t.Helper()
	ctx := context.Background()
	st := restoreState{stored: map[string]string{}, pods: map[string]podRecord{}}
	ss, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, "restore-cluster", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st.stored["SidecarSet/"+ss.Name] = storedIdentity(&ss.ObjectMeta)
	ns, err := sidecars.AppsV1alpha1().NamespacedSidecarSets(restoreNamespace).Get(ctx, "restore-team", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st.stored["NamespacedSidecarSet/"+ns.Name] = storedIdentity(&ns.ObjectMeta)
	for _, owner := range []string{"restore-cluster", v1alpha1.NamespacedName(restoreNamespace, "restore-team")} {
		revs, err := sidecars.AppsV1alpha1().SidecarSetRevisions().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.SidecarSetNameLabel + "=" + owner})
		if err != nil {
			t.Fatal(err)
		}
		for i := range revs.Items {
			r := &revs.Items[i]
			st.stored["SidecarSetRevision/"+r.Name] = fmt.Sprintf("%s revision %d", storedIdentity(&r.ObjectMeta), r.Revision)
		}
	}
	pods, err := kube.CoreV1().Pods(restoreNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=restore"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		st.pods[p.Name] = podRecord{UID: p.UID, Injected: p.Annotations["kruise.io/sidecarset-injected-list"], Sidecars: containerNames(p)}
	}
	return st
}

// storedIdentity is an object's UID, generation and hash annotations.
func storedIdentity(m *metav1.ObjectMeta) string {
	return fmt.Sprintf("uid %s generation %d hash %s without images %s", m.UID, m.Generation,
		m.Annotations[v1alpha1.SidecarSetHashAnnotation], m.Annotations[v1alpha1.SidecarSetHashWithoutImageAnnotation])
}

// checkPodsKept fails t unless every pod is the same pod (UID) with the same SidecarSets and
// containers as before.
func checkPodsKept(t *testing.T, before, after map[string]podRecord) {
	t.Helper()
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("pods across the restore (-before the snapshot +now):\n%s", diff)
	}
}

// sidecarSetListVersion is the resourceVersion of a list of every SidecarSet: one a client has
// seen.
func sidecarSetListVersion(t *testing.T) string {
	t.Helper()
	list, err := sidecars.AppsV1alpha1().SidecarSets().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.ResourceVersion
}

// waitReadable waits until the server answers a read of SidecarSet name.
func waitReadable(t *testing.T, name string) {
	t.Helper()
	eventually(t, "SidecarSet "+name+" read after the restore", time.Minute, func(ctx context.Context) (bool, string) {
		_, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, name, metav1.GetOptions{})
		return err == nil, fmt.Sprintf("get: %v", err)
	})
}

// checkWatchExpired fails t unless a watch of SidecarSets from seen, a resourceVersion a client
// read before the restore, is answered 410 Expired: the client lists again and sees the restored
// store. A restore without the revision bump would start the store's revisions below seen, and the
// watch would wait for a revision the restored store reaches only after unrelated writes, missing
// every change in between.
func checkWatchExpired(t *testing.T, seen string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := sidecars.AppsV1alpha1().SidecarSets().Watch(ctx, metav1.ListOptions{ResourceVersion: seen})
	if err != nil {
		if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			t.Errorf("watch from resourceVersion %s, seen before the restore: %v, want 410 Expired", seen, err)
		}
		return
	}
	defer w.Stop()
	if ev, ok := <-w.ResultChan(); ok {
		if status, isStatus := ev.Object.(*metav1.Status); !isStatus || status.Code != 410 {
			t.Errorf("watch from resourceVersion %s, seen before the restore: event %s %T, want 410 Expired", seen, ev.Type, ev.Object)
		}
		return
	}
	t.Errorf("watch from resourceVersion %s, seen before the restore: no event in 10 s, want 410 Expired (%s)", seen,
		strings.TrimSpace(fmt.Sprint(ctx.Err())))
}
