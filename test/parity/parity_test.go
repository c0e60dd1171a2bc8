// Package parity compares kubectl sidecarset inject, offline, with the server's injection webhook.
package parity

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app"
	"github.com/sidecarset/apiserver/pkg/admission/webhook"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/install"
	"github.com/sidecarset/apiserver/pkg/apis/apps/revision"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	listers "github.com/sidecarset/apiserver/pkg/generated/listers/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/injection"
	"github.com/sidecarset/apiserver/pkg/registry/apps/sidecarset"
)

// The offline `inject` against the server's injection path: the webhook adapter (Reviewer) over
// the SidecarSets as the server stores them (decoded, defaulted, converted and stamped by the
// registry strategy), its patch applied to the submitted pod.

var (
	parityNow    = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	parityScheme = func() *runtime.Scheme {
		s := runtime.NewScheme()
		install.Install(s)
		return s
	}()
)

// parityCase is one pod and the SidecarSets (successive versions of one name become revisions).
type parityCase struct {
	name      string
	sets      [][]byte
	pod       *corev1.Pod
	nsLabels  map[string]string
	workloads bool // also check a Deployment wrapping the pod
}

func TestInjectOfflineMatchesServer(t *testing.T) {
	cases := append(conformanceCases(t), manualCases(t)...)
	if len(cases) < 30 {
		t.Fatalf("only %d cases found", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			latest, revisions := versions(t, tc.sets)
			dir := t.TempDir()
			setsFile := writeDocs(t, filepath.Join(dir, "sets.yaml"), append(objects(latest), objects(revisions)...))
			podFile := writeDocs(t, filepath.Join(dir, "pod.yaml"), []any{tc.pod})
			ns := tc.pod.Namespace
			want, serverErr := serverInject(t, tc.pod, ns, tc.nsLabels, latest, revisions)
			got, cliErr := runInjectCLI(t, podFile, setsFile, ns, tc.nsLabels)
			if (serverErr != nil) != (cliErr != nil) {
				t.Fatalf("server error %v, plugin error %v", serverErr, cliErr)
			}
			if serverErr != nil {
				return
			}
			pod := &corev1.Pod{}
			if err := json.Unmarshal(got, pod); err != nil {
				t.Fatalf("plugin output: %v\n%s", err, got)
			}
			if diff := cmp.Diff(want, pod); diff != "" {
				t.Errorf("plugin pod differs from the server's (-server +plugin):\n%s", diff)
			}
			if tc.workloads {
				checkDeployment(t, tc, dir, setsFile, latest, revisions, want)
			}
		})
	}
}

// checkDeployment injects a Deployment wrapping the pod offline and checks that a pod created
// from its template is injected by the server into the same pod as the bare one.
func checkDeployment(t *testing.T, tc parityCase, dir, setsFile string, latest []*v1alpha1.SidecarSet, revisions []*v1alpha1.SidecarSetRevision, want *corev1.Pod) {
	t.Helper()
	deploy := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": tc.pod.Namespace},
		"spec": map[string]any{"selector": map[string]any{"matchLabels": tc.pod.Labels},
			"template": map[string]any{"metadata": map[string]any{"labels": tc.pod.Labels, "annotations": tc.pod.Annotations}, "spec": tc.pod.Spec}}}
	file := writeDocs(t, filepath.Join(dir, "deploy.yaml"), []any{deploy})
	out, err := runInjectCLI(t, file, setsFile, tc.pod.Namespace, tc.nsLabels)
	if err != nil {
		t.Fatal(err)
	}
	var injected struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(out, &injected); err != nil {
		t.Fatal(err)
	}
	fromTemplate := &corev1.Pod{TypeMeta: tc.pod.TypeMeta, ObjectMeta: injected.Spec.Template.ObjectMeta, Spec: injected.Spec.Template.Spec}
	fromTemplate.Name, fromTemplate.Namespace = tc.pod.Name, tc.pod.Namespace
	got, err := serverInject(t, fromTemplate, tc.pod.Namespace, tc.nsLabels, latest, revisions)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a pod of the injected template differs from the injected pod (-pod +template pod):\n%s", diff)
	}
}

// runInjectCLI runs `inject -f pod --sidecarsets sets -o json`.
func runInjectCLI(t *testing.T, podFile, setsFile, ns string, nsLabels map[string]string) ([]byte, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	var labels []string
	for k, v := range nsLabels {
		labels = append(labels, k+"="+v)
	}
	cmd := app.NewOfflineCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		app.Offline{Now: func() time.Time { return parityNow }, Rand: func() float64 { return 0.5 }})
	cmd.SetArgs([]string{"inject", "-f", podFile, "--sidecarsets", setsFile, "-n", ns, "--namespace-labels", strings.Join(labels, ","), "-o", "json"})
	err := cmd.ExecuteContext(context.Background())
	return out.Bytes(), err
}

// serverInject runs the webhook adapter on a pod CREATE and applies its patch.
func serverInject(t *testing.T, pod *corev1.Pod, ns string, nsLabels map[string]string, sets []*v1alpha1.SidecarSet, revisions []*v1alpha1.SidecarSetRevision) (*corev1.Pod, error) {
	t.Helper()
	index := injection.NewIndex()
	for _, ss := range sets {
		index.Add(serverStored(t, ss))
	}
	nsIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = nsIndexer.Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: nsLabels}})
	revIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, r := range revisions {
		_ = revIndexer.Add(r)
	}
	r := &webhook.Reviewer{Index: index, Namespaces: corelisters.NewNamespaceLister(nsIndexer),
		Revisions: listers.NewSidecarSetRevisionLister(revIndexer), Clock: clocktesting.NewFakePassiveClock(parityNow),
		Rand: func() float64 { return 0.5 }, HasSynced: func() bool { return true }}
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.Review(context.Background(), &admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: ns,
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Object: runtime.RawExtension{Raw: raw}})
	if err != nil {
		return nil, err
	}
	if !resp.Allowed {
		return nil, fmt.Errorf("denied: %s", resp.Result.Message)
	}
	if len(resp.Patch) > 0 {
		patch, err := jsonpatch.DecodePatch(resp.Patch)
		if err != nil {
			t.Fatal(err)
		}
		if raw, err = patch.Apply(raw); err != nil {
			t.Fatal(err)
		}
	}
	out := &corev1.Pod{}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
	return out, nil
}

// serverStored is ss as the server stores it: defaulted, converted to the internal version, prepared by
// the registry strategy (which stamps the hashes) and converted back.
func serverStored(t *testing.T, ss *v1alpha1.SidecarSet) *v1alpha1.SidecarSet {
	t.Helper()
	in := ss.DeepCopy()
	parityScheme.Default(in)
	internal := &apps.SidecarSet{}
	if err := parityScheme.Convert(in, internal, nil); err != nil {
		t.Fatal(err)
	}
	sidecarset.NewStrategy(parityScheme).PrepareForCreate(context.Background(), internal)
	internal.Status = apps.SidecarSetStatus{}
	out := &v1alpha1.SidecarSet{}
	if err := parityScheme.Convert(internal, out, nil); err != nil {
		t.Fatal(err)
	}
	out.Status = ss.Status
	return out
}

// versions returns the last version of each SidecarSet, its status.latestRevision set, and one
// revision per version (numbered in order, labelled like the controller's).
func versions(t *testing.T, docs [][]byte) ([]*v1alpha1.SidecarSet, []*v1alpha1.SidecarSetRevision) {
	t.Helper()
	latest := map[string]*v1alpha1.SidecarSet{}
	var order []string
	var revisions []*v1alpha1.SidecarSetRevision
	count := map[string]int64{}
	for _, doc := range docs {
		ss := &v1alpha1.SidecarSet{}
		if err := yaml.UnmarshalStrict(doc, ss); err != nil {
			t.Fatal(err)
		}
		if _, ok := latest[ss.Name]; !ok {
			order = append(order, ss.Name)
		}
		count[ss.Name]++
		n := count[ss.Name]
		name := fmt.Sprintf("%s-rev%d", ss.Name, n)
		labels := map[string]string{v1alpha1.SidecarSetNameLabel: ss.Name}
		if v := ss.Labels[v1alpha1.SidecarSetCustomVersionLabel]; v != "" {
			labels[v1alpha1.SidecarSetCustomVersionLabel] = v
		}
		revisions = append(revisions, &v1alpha1.SidecarSetRevision{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "SidecarSetRevision"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, SidecarSetName: ss.Name, Revision: n,
			Spec: revision.Snapshot(ss)})
		ss.Status.LatestRevision = name
		latest[ss.Name] = ss
	}
	out := make([]*v1alpha1.SidecarSet, 0, len(order))
	for _, n := range order {
		out = append(out, latest[n])
	}
	return out, revisions
}

func objects[T any](items []T) []any {
	out := make([]any, len(items))
	for i := range items {
		out[i] = items[i]
	}
	return out
}

func writeDocs(t *testing.T, path string, docs []any) string {
	t.Helper()
	var b bytes.Buffer
	for _, d := range docs {
		data, err := yaml.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// conformanceCases reads the injection scenarios of the acceptance catalogue.
func conformanceCases(t *testing.T) []parityCase {
	t.Helper()
	dirs, _ := filepath.Glob("../../pkg/injection/testdata/conformance/*")
	var out []parityCase
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, "sidecarsets.yaml"))
		if err != nil {
			continue
		}
		podData, err := os.ReadFile(filepath.Join(dir, "pod.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{}
		if err := yaml.UnmarshalStrict(podData, pod); err != nil {
			t.Fatal(err)
		}
		tc := parityCase{name: "conformance/" + filepath.Base(dir), sets: splitYAML(data), pod: pod, workloads: true,
			nsLabels: map[string]string{"kubernetes.io/metadata.name": pod.Namespace}}
		if nsData, err := os.ReadFile(filepath.Join(dir, "namespace.yaml")); err == nil {
			for _, doc := range splitYAML(nsData) {
				ns := &corev1.Namespace{}
				if err := yaml.UnmarshalStrict(doc, ns); err != nil {
					t.Fatal(err)
				}
				if ns.Name == pod.Namespace {
					for k, v := range ns.Labels {
						tc.nsLabels[k] = v
					}
				}
			}
		}
		out = append(out, tc)
	}
	return out
}

// manualCases pairs every complete SidecarSet example of the manual with a pod it selects.
func manualCases(t *testing.T) []parityCase {
	t.Helper()
	files, _ := filepath.Glob("../../artifacts/examples/*.yaml")
	var out []parityCase
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ss := &v1alpha1.SidecarSet{}
		if err := yaml.UnmarshalStrict(data, ss); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, parityCase{name: "manual/" + filepath.Base(f), sets: [][]byte{data}, pod: podFor(ss), workloads: true,
			nsLabels: namespaceLabelsFor(ss)})
	}
	return out
}

// podFor returns a pod in a namespace ss applies to, labelled so that ss selects it.
func podFor(ss *v1alpha1.SidecarSet) *corev1.Pod {
	ns := ss.Spec.Namespace
	if ns == "" {
		ns = "default"
	}
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: ns, Labels: labelsFor(ss.Spec.Selector)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "main:v1",
			Env:          []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
	}
}

func namespaceLabelsFor(ss *v1alpha1.SidecarSet) map[string]string {
	out := map[string]string{"kubernetes.io/metadata.name": podFor(ss).Namespace}
	for k, v := range labelsFor(ss.Spec.NamespaceSelector) {
		out[k] = v
	}
	return out
}

// labelsFor returns labels a selector selects: its matchLabels, and a value for each In (the
// first) and Exists expression.
func labelsFor(sel *metav1.LabelSelector) map[string]string {
	out := map[string]string{}
	if sel == nil {
		return out
	}
	for k, v := range sel.MatchLabels {
		out[k] = v
	}
	for _, r := range sel.MatchExpressions {
		switch r.Operator {
		case metav1.LabelSelectorOpIn:
			out[r.Key] = r.Values[0]
		case metav1.LabelSelectorOpExists:
			out[r.Key] = "x"
		}
	}
	return out
}

func splitYAML(data []byte) [][]byte {
	var out [][]byte
	for _, doc := range strings.Split("\n"+string(data), "\n---") {
		if strings.TrimSpace(doc) != "" {
			out = append(out, []byte(doc))
		}
	}
	return out
}
