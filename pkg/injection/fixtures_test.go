package injection

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps/hash"
	"github.com/sidecarset/apiserver/pkg/apis/apps/install"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// Labels of SidecarSetRevisions (and the custom-version label of SidecarSets).
const (
	revisionNameLabel  = "apps.kruise.io/sidecarset-name"
	customVersionLabel = "apps.kruise.io/sidecarset-custom-version"
)

// testNow is the clock value of every test injection.
var testNow = time.Date(2026, 7, 1, 12, 30, 45, 123456789, time.UTC)

var testScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// decodeSidecarSet decodes one YAML document, defaults it as the server does and stamps the
// hash annotations.
func decodeSidecarSet(t testing.TB, doc []byte) *v1alpha1.SidecarSet {
	t.Helper()
	ss := &v1alpha1.SidecarSet{}
	if err := yaml.UnmarshalStrict(doc, ss); err != nil {
		t.Fatalf("decode SidecarSet: %v", err)
	}
	testScheme.Default(ss)
	stampHashes(t, ss)
	return ss
}

func stampHashes(t testing.TB, ss *v1alpha1.SidecarSet) {
	t.Helper()
	h, err := hash.Of(&ss.Spec)
	if err != nil {
		t.Fatal(err)
	}
	h.Stamp(ss)
}

// mustSidecarSet decodes an inline YAML SidecarSet.
func mustSidecarSet(t testing.TB, doc string) *v1alpha1.SidecarSet {
	t.Helper()
	return decodeSidecarSet(t, []byte(doc))
}

// mustPod decodes an inline YAML pod.
func mustPod(t testing.TB, doc string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	if err := yaml.UnmarshalStrict([]byte(doc), pod); err != nil {
		t.Fatalf("decode pod: %v", err)
	}
	return pod
}

// splitDocs splits a multi-document YAML file, dropping empty documents.
func splitDocs(data []byte) [][]byte {
	var out [][]byte
	for _, d := range bytes.Split(data, []byte("\n---")) {
		d = bytes.TrimPrefix(bytes.TrimSpace(d), []byte("---"))
		if len(bytes.TrimSpace(d)) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// revisionStore is an in-memory RevisionSource that records revisions as the controller does:
// one per distinct injection-relevant spec of a SidecarSet.
type revisionStore struct {
	items []*v1alpha1.SidecarSetRevision
}

func (r *revisionStore) Revision(name string) (*v1alpha1.SidecarSetRevision, error) {
	for _, rev := range r.items {
		if rev.Name == name {
			return rev, nil
		}
	}
	return nil, apierrors.NewNotFound(v1alpha1.Resource("sidecarsetrevisions"), name)
}

func (r *revisionStore) LatestWithCustomVersion(sidecarSetName, customVersion string) (*v1alpha1.SidecarSetRevision, error) {
	var best *v1alpha1.SidecarSetRevision
	for _, rev := range r.items {
		if rev.Labels[revisionNameLabel] == sidecarSetName && rev.Labels[customVersionLabel] == customVersion &&
			(best == nil || rev.Revision > best.Revision) {
			best = rev
		}
	}
	if best == nil {
		return nil, apierrors.NewNotFound(v1alpha1.Resource("sidecarsetrevisions"), sidecarSetName+"@"+customVersion)
	}
	return best, nil
}

// record registers ss's current spec as its latest revision (reusing an identical newest one)
// and sets status.latestRevision.
func (r *revisionStore) record(ss *v1alpha1.SidecarSet) {
	spec := v1alpha1.SidecarSetRevisionSpec{
		InitContainers:   ss.Spec.InitContainers,
		Containers:       ss.Spec.Containers,
		Volumes:          ss.Spec.Volumes,
		ImagePullSecrets: ss.Spec.ImagePullSecrets,
		PatchPodMetadata: ss.Spec.PatchPodMetadata,
	}
	var last *v1alpha1.SidecarSetRevision
	for _, rev := range r.items {
		if rev.SidecarSetName == ss.Name && (last == nil || rev.Revision > last.Revision) {
			last = rev
		}
	}
	if last == nil || !equality.Semantic.DeepEqual(last.Spec, spec) {
		n := int64(1)
		if last != nil {
			n = last.Revision + 1
		}
		last = &v1alpha1.SidecarSetRevision{
			ObjectMeta: metav1.ObjectMeta{
				Name:   fmt.Sprintf("%s-r%d", ss.Name, n),
				Labels: map[string]string{revisionNameLabel: ss.Name},
				Annotations: map[string]string{
					sidecar.HashAnnotation:             ss.Annotations[sidecar.HashAnnotation],
					sidecar.HashWithoutImageAnnotation: ss.Annotations[sidecar.HashWithoutImageAnnotation],
				},
			},
			SidecarSetName: ss.Name,
			Revision:       n,
			Spec:           *spec.DeepCopy(),
		}
		r.items = append(r.items, last)
	}
	if v, ok := ss.Labels[customVersionLabel]; ok {
		last.Labels[customVersionLabel] = v
	}
	ss.Status.LatestRevision = last.Name
}

// scenario is one conformance injection scenario loaded from testdata/conformance.
type scenario struct {
	name        string
	sidecarSets []*v1alpha1.SidecarSet
	revisions   *revisionStore
	pod         *corev1.Pod
	namespace   string
	nsLabels    map[string]string
	expect      []map[string]any
}

func loadScenarios(t testing.TB) []*scenario {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("testdata", "conformance", "*"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(dirs)
	var out []*scenario
	for _, dir := range dirs {
		out = append(out, loadScenario(t, dir))
	}
	return out
}

func loadScenario(t testing.TB, dir string) *scenario {
	t.Helper()
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return data
	}
	sc := &scenario{name: filepath.Base(dir), revisions: &revisionStore{}}
	latest := map[string]*v1alpha1.SidecarSet{}
	var order []string
	// Documents with the same name are successive versions (procedure.yaml), each recorded as a
	// revision by the controller before the next one is applied.
	for _, doc := range splitDocs(read("sidecarsets.yaml")) {
		ss := decodeSidecarSet(t, doc)
		sc.revisions.record(ss)
		if _, ok := latest[ss.Name]; !ok {
			order = append(order, ss.Name)
		}
		latest[ss.Name] = ss
	}
	for _, name := range order {
		sc.sidecarSets = append(sc.sidecarSets, latest[name])
	}
	sc.pod = mustPod(t, string(read("pod.yaml")))
	sc.namespace = sc.pod.Namespace
	sc.nsLabels = map[string]string{"kubernetes.io/metadata.name": sc.namespace}
	for _, doc := range splitDocs(read("namespace.yaml")) {
		ns := &corev1.Namespace{}
		if err := yaml.UnmarshalStrict(doc, ns); err != nil {
			t.Fatal(err)
		}
		if ns.Name == sc.namespace {
			for k, v := range ns.Labels {
				sc.nsLabels[k] = v
			}
		}
	}
	if err := yaml.Unmarshal(read("expect.yaml"), &sc.expect); err != nil {
		t.Fatalf("%s: expect.yaml: %v", sc.name, err)
	}
	return sc
}

// input returns the Inject input of the scenario, with candidates taken from an Index.
func (sc *scenario) input(opts Options) Input {
	idx := NewIndex()
	for _, ss := range sc.sidecarSets {
		idx.Add(ss)
	}
	return Input{
		Pod:             sc.pod,
		Namespace:       sc.namespace,
		NamespaceLabels: sc.nsLabels,
		SidecarSets:     idx.Candidates(sc.namespace, sc.pod.Labels),
		Revisions:       sc.revisions,
		Now:             testNow,
		Rand:            func() float64 { return 0.5 },
		Options:         opts,
	}
}

func (sc *scenario) hasVariants() bool {
	for _, a := range sc.expect {
		if _, ok := a["variant"]; ok {
			return true
		}
	}
	return false
}

func (sc *scenario) rejected() (bool, string) {
	for _, a := range sc.expect {
		if r, _ := a["rejected"].(bool); r {
			msg, _ := a["messageContains"].(string)
			return true, msg
		}
	}
	return false, ""
}
