package bytebudget

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/sidecarset/apiserver/pkg/apis/apps/revision"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// namespaced is a stored NamespacedSidecarSet whose sidecar has an env value of pad bytes.
func namespaced(namespace, name, image string, pad int) *v1alpha1.NamespacedSidecarSet {
	return &v1alpha1.NamespacedSidecarSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-" + namespace + "-" + name),
			ResourceVersion: "7", Generation: 1, CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
			Annotations: map[string]string{v1alpha1.SidecarSetHashAnnotation: strings.Repeat("h", 64),
				v1alpha1.SidecarSetHashWithoutImageAnnotation: strings.Repeat("w", 64)}},
		Spec: v1alpha1.SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "agent", Image: image,
				Env: []corev1.EnvVar{{Name: "PAD", Value: strings.Repeat("p", pad)}}}}},
		},
		Status: v1alpha1.SidecarSetStatus{ObservedGeneration: 1, LatestRevision: name + "-abc"},
	}
}

func TestMeasure(t *testing.T) {
	n := namespaced("team-a", "agent", "busybox:1.36", 1000)
	typed := *n
	typed.APIVersion, typed.Kind = "apps.kruise.io/v1alpha1", "NamespacedSidecarSet"
	stored, err := json.Marshal(&typed)
	if err != nil {
		t.Fatal(err)
	}
	written, err := MeasureNamespaced(n)
	if err != nil {
		t.Fatal(err)
	}
	cached, err := MeasureSidecarSet(n.AsSidecarSet())
	if err != nil {
		t.Fatal(err)
	}
	if written != cached {
		t.Errorf("a write and the informer's object measure differently:\n%+v\n%+v", written, cached)
	}
	if written.Name != "team-a.agent" || written.Bytes != int64(len(stored)) {
		t.Errorf("measured %s of %d bytes, want team-a.agent of %d", written.Name, written.Bytes, len(stored))
	}

	// The revision the controller records: the estimate is within a few bytes above it, and
	// records the same injected part.
	ss := n.AsSidecarSet()
	name, err := revision.Name(ss.Name, revision.Snapshot(ss), 0)
	if err != nil {
		t.Fatal(err)
	}
	rev := revision.New(ss, name, 3)
	rev.UID, rev.ResourceVersion, rev.CreationTimestamp = "0c1f9d36-0e4b-4f0a-8d3c-3a6a1b0b6f52", "4711", metav1.Now()
	recorded, err := MeasureRevision(rev)
	if err != nil {
		t.Fatal(err)
	}
	if d := written.RevisionBytes - recorded.Bytes; d < 0 || d > 20 {
		t.Errorf("revision estimated at %d bytes, recorded at %d: want at most 20 bytes above", written.RevisionBytes, recorded.Bytes)
	}
	if recorded.Injected != written.Injected || recorded.SidecarSet != written.Name {
		t.Errorf("the recorded revision %+v does not match its object %+v", recorded, written)
	}
	if got := Measure([]Object{cached}, []Revision{recorded}).Bytes; got != cached.Bytes+recorded.Bytes {
		t.Errorf("object and its recorded revision: %d bytes, want %d", got, cached.Bytes+recorded.Bytes)
	}

	// A list written empty is absent once stored: the same injected part.
	empty := n.DeepCopy()
	empty.Spec.Volumes, empty.Spec.ImagePullSecrets = []corev1.Volume{}, []corev1.LocalObjectReference{}
	if m, err := MeasureNamespaced(empty); err != nil || m.Injected != written.Injected {
		t.Errorf("empty lists: injected %d (err %v), want %d", m.Injected, err, written.Injected)
	}
	other := n.DeepCopy()
	other.Spec.Containers[0].Image = "busybox:1.37"
	if m, err := MeasureNamespaced(other); err != nil || m.Injected == written.Injected {
		t.Errorf("another image: injected %d (err %v), want other than %d", m.Injected, err, written.Injected)
	}
	if _, err := MeasureSidecarSet(&v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}); err == nil {
		t.Error("a cluster SidecarSet measured as a NamespacedSidecarSet")
	}
}

// meterOn returns a Meter on stores holding objects (as the informer holds them) and revisions.
func meterOn(t *testing.T, objects []*v1alpha1.NamespacedSidecarSet, revisions []*v1alpha1.SidecarSetRevision) (*Meter, cache.Indexer, cache.Indexer) {
	t.Helper()
	sets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{"namespaced": func(obj any) ([]string, error) {
		if ns, _, ok := v1alpha1.SplitNamespacedName(obj.(*v1alpha1.SidecarSet).Name); ok {
			return []string{ns}, nil
		}
		return nil, nil
	}})
	for _, n := range objects {
		if err := sets.Add(n.AsSidecarSet()); err != nil {
			t.Fatal(err)
		}
	}
	revs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{RevisionIndex: IndexRevisionNamespace})
	for _, r := range revisions {
		if err := revs.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	return &Meter{Objects: sets, ObjectIndex: "namespaced", Revisions: revs}, sets, revs
}

func recordedRevision(t *testing.T, n *v1alpha1.NamespacedSidecarSet, number int64) *v1alpha1.SidecarSetRevision {
	t.Helper()
	ss := n.AsSidecarSet()
	name, err := revision.Name(ss.Name, revision.Snapshot(ss), 0)
	if err != nil {
		t.Fatal(err)
	}
	r := revision.New(ss, name, number)
	r.UID, r.ResourceVersion = types.UID("uid-"+name), "3"
	return r
}

func TestMeter(t *testing.T) {
	a := namespaced("team-a", "a", "busybox:1.36", 100)
	aOld := namespaced("team-a", "a", "busybox:1.35", 100)
	b := namespaced("team-a", "b", "busybox:1.36", 5000)
	elsewhere := namespaced("team-b", "a", "busybox:1.36", 100)
	cluster := &v1alpha1.SidecarSetRevision{ObjectMeta: metav1.ObjectMeta{Name: "cluster-1", UID: "uid-cluster-1"}, SidecarSetName: "cluster"}
	revA, revAOld, revElsewhere := recordedRevision(t, a, 2), recordedRevision(t, aOld, 1), recordedRevision(t, elsewhere, 1)
	meter, sets, _ := meterOn(t, []*v1alpha1.NamespacedSidecarSet{a, b, elsewhere},
		[]*v1alpha1.SidecarSetRevision{revA, revAOld, revElsewhere, cluster})

	measure := func(n *v1alpha1.NamespacedSidecarSet) Object {
		m, err := MeasureNamespaced(n)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	revBytes := func(r *v1alpha1.SidecarSetRevision) int64 {
		m, err := MeasureRevision(r)
		if err != nil {
			t.Fatal(err)
		}
		return m.Bytes
	}
	mb := measure(b)
	// a and its two revisions; b and the revision it is still to get.
	want := measure(a).Bytes + revBytes(revA) + revBytes(revAOld) + mb.Bytes + mb.RevisionBytes
	use, err := meter.Usage("team-a")
	if err != nil {
		t.Fatal(err)
	}
	if use.Bytes != want {
		t.Errorf("team-a stores %d bytes, want %d", use.Bytes, want)
	}

	// Measures are kept per version: the same resourceVersion is not measured again.
	grown := b.DeepCopy()
	grown.Spec.Containers[0].Env[0].Value = strings.Repeat("p", 9000)
	if err := sets.Update(grown.AsSidecarSet()); err != nil {
		t.Fatal(err)
	}
	if use, err = meter.Usage("team-a"); err != nil || use.Bytes != want {
		t.Errorf("same resourceVersion: %d bytes (err %v), want the measure kept, %d", use.Bytes, err, want)
	}
	grown.ResourceVersion = "8"
	if err := sets.Update(grown.AsSidecarSet()); err != nil {
		t.Fatal(err)
	}
	mg := measure(grown)
	want += mg.Bytes + mg.RevisionBytes - mb.Bytes - mb.RevisionBytes
	if use, err = meter.Usage("team-a"); err != nil || use.Bytes != want {
		t.Errorf("new resourceVersion: %d bytes (err %v), want %d", use.Bytes, err, want)
	}

	// Objects gone are forgotten at the next sweep (once the measures have doubled).
	if err := sets.Delete(grown.AsSidecarSet()); err != nil {
		t.Fatal(err)
	}
	meter.objects.sweepAbove = 0
	if _, err := meter.Usage("team-a"); err != nil {
		t.Fatal(err)
	}
	if _, kept := meter.objects.byID[grown.UID]; kept {
		t.Error("the measure of a deleted object is kept")
	}
	if use, err := meter.Usage("nobody"); err != nil || use.Bytes != 0 {
		t.Errorf("an empty namespace stores %d bytes (err %v)", use.Bytes, err)
	}
}

// BenchmarkUsage measures a namespace at the count cap, 200 NamespacedSidecarSets of 2 KiB env
// values with ten revisions each, once every measure is kept (what a write pays), and from
// nothing (the first write after a restart).
func BenchmarkUsage(b *testing.B) {
	t := &testing.T{}
	var objects []*v1alpha1.NamespacedSidecarSet
	var revisions []*v1alpha1.SidecarSetRevision
	for i := range 200 {
		for j := range 10 {
			n := namespaced("team-a", fmt.Sprintf("s%d", i), fmt.Sprintf("busybox:1.%d", j), 2048)
			revisions = append(revisions, recordedRevision(t, n, int64(j+1)))
			if j == 9 {
				objects = append(objects, n)
			}
		}
	}
	meter, _, _ := meterOn(t, objects, revisions)
	b.Run("kept", func(b *testing.B) {
		for b.Loop() {
			if _, err := meter.Usage("team-a"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("from nothing", func(b *testing.B) {
		for b.Loop() {
			fresh := &Meter{Objects: meter.Objects, ObjectIndex: meter.ObjectIndex, Revisions: meter.Revisions}
			if _, err := fresh.Usage("team-a"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
