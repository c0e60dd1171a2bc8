package migrate

import (
	"bufio"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps/stored"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

const (
	hash135    = "x4czcfwwvwcx72v4v9x46vwcc4vd9zx747vf6wc8dc446dz49xzc48d4dc488598"
	hash136    = "z752v6x4x47829vxwf6c744f948f768wf284b262w4d7z92fzbcc9d24fx254wv5"
	hashNoImg  = "4zv6464d6c4bb89d2298d2w2cww65d2d5f89bd72zcxw4dbcf85f44774f6c4794"
	container  = "{name: sidecar1, image: %s, command: [sleep, 999d], imagePullPolicy: IfNotPresent, resources: {}, terminationMessagePath: /dev/termination-log, terminationMessagePolicy: File, podInjectPolicy: BeforeAppContainer, shareVolumePolicy: {type: disabled}, upgradeStrategy: {upgradeType: ColdUpgrade}}"
	okData136  = `{"spec":{"$patch":"replace","containers":[{"command":["sleep","999d"],"image":"busybox:1.36","imagePullPolicy":"IfNotPresent","name":"sidecar1","podInjectPolicy":"BeforeAppContainer","resources":{},"shareVolumePolicy":{"type":"disabled"},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","upgradeStrategy":{"upgradeType":"ColdUpgrade"}}],"imagePullSecrets":null,"initContainers":null,"patchPodMetadata":null,"volumes":null}}`
	okRevName2 = "migrate-cf96db497"
)

// readFile returns the objects of a YAML file, the items of a List one by one.
func readFile(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return readYAML(t, string(data))
}

func readYAML(t *testing.T, docs string) []*unstructured.Unstructured {
	t.Helper()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(docs)))
	var out []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			t.Fatal(err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if !obj.IsList() {
			out = append(out, obj)
			continue
		}
		list, err := obj.ToList()
		if err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
}

func sidecarSetFrom(t *testing.T, y string) *v1alpha1.SidecarSet {
	t.Helper()
	ss := &v1alpha1.SidecarSet{}
	if err := yaml.UnmarshalStrict([]byte(y), ss); err != nil {
		t.Fatal(err)
	}
	return ss
}

func image(img string) string { return strings.ReplaceAll(container, "%s", img) }

// TestConvertSidecarSet: OpenKruise's SidecarSet, at either version, becomes this server's at
// v1alpha1 with the same name, labels, annotations and spec, and none of the metadata the cluster
// wrote (uid, resourceVersion, creationTimestamp, generation, managedFields) nor the status.
func TestConvertSidecarSet(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr string
	}{
		{
			name: "v1beta1 as kubectl get prints it",
			in:   "testdata/openkruise-sidecarsets.yaml",
			want: `
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata:
  name: migrate
  labels: {team: platform}
  annotations:
    kruise.io/sidecarset-hash: ` + hash136 + `
    kruise.io/sidecarset-hash-without-image: ` + hashNoImg + `
    team.example.com/owner: platform
spec:
  selector: {matchLabels: {app: migrate}}
  containers: [` + image("busybox:1.36") + `]
  injectionStrategy: {}
  revisionHistoryLimit: 10
  updateStrategy: {type: RollingUpdate, maxUnavailable: 1, partition: 0}
`,
		},
		{
			name: "v1beta1 customVersion becomes the v1alpha1 label",
			in: `
apiVersion: apps.kruise.io/v1beta1
kind: SidecarSet
metadata: {name: versioned, uid: u1, resourceVersion: "7"}
spec:
  customVersion: v3
  selector: {matchLabels: {app: web}}
  containers: [{name: c, image: img:1}]
status: {matchedPods: 1, updatedPods: 1, readyPods: 1, someFieldOfALaterOpenKruise: true}
`,
			want: `
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata:
  name: versioned
  labels: {apps.kruise.io/sidecarset-custom-version: v3}
spec:
  selector: {matchLabels: {app: web}}
  containers: [{name: c, image: img:1, resources: {}}]
`,
		},
		{
			name: "v1alpha1 with a namespace and a custom version label",
			in: `
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata: {name: scoped, generation: 4, labels: {apps.kruise.io/sidecarset-custom-version: v1}}
spec:
  namespace: shop
  selector: {matchLabels: {app: web}}
  containers: [{name: c, image: img:1}]
`,
			want: `
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata: {name: scoped, labels: {apps.kruise.io/sidecarset-custom-version: v1}}
spec:
  namespace: shop
  selector: {matchLabels: {app: web}}
  containers: [{name: c, image: img:1, resources: {}}]
`,
		},
		{
			name: "a field this server does not know",
			in: `
apiVersion: apps.kruise.io/v1beta1
kind: SidecarSet
metadata: {name: newer}
spec:
  selector: {matchLabels: {app: web}}
  containers: [{name: c, image: img:1, startupPolicy: Eager}]
`,
			wantErr: `SidecarSet newer: strict decoding error: unknown field "spec.containers[0].startupPolicy"`,
		},
		{
			name:    "another version",
			in:      "apiVersion: apps.kruise.io/v1\nkind: SidecarSet\nmetadata: {name: future}\n",
			wantErr: "SidecarSet future: apiVersion apps.kruise.io/v1, want apps.kruise.io/v1alpha1 or apps.kruise.io/v1beta1",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var objs []*unstructured.Unstructured
			if strings.HasPrefix(tc.in, "testdata/") {
				objs = readFile(t, tc.in)
			} else {
				objs = readYAML(t, tc.in)
			}
			got, err := ConvertSidecarSet(objs[0])
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(sidecarSetFrom(t, tc.want), got); diff != "" {
				t.Errorf("converted (-want +got):\n%s", diff)
			}
		})
	}
}

// controllerRevision is revision 2 of "migrate" exactly as OpenKruise writes it: its data is the
// bytes OpenKruise marshals (not a YAML rendering of them).
func controllerRevision() *appsv1.ControllerRevision {
	controller := true
	return &appsv1.ControllerRevision{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ControllerRevision"},
		ObjectMeta: metav1.ObjectMeta{Name: okRevName2, Namespace: Namespace, UID: "9a4b", ResourceVersion: "48210",
			Labels: map[string]string{"controller.kubernetes.io/hash": "cf96db497", SidecarSetNameLabel: "migrate", "team": "platform"},
			Annotations: map[string]string{v1alpha1.SidecarSetHashAnnotation: hash136, v1alpha1.SidecarSetHashWithoutImageAnnotation: hashNoImg,
				"team.example.com/owner": "platform"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1beta1", Kind: "SidecarSet", Name: "migrate",
				UID: "6f1c", Controller: &controller, BlockOwnerDeletion: &controller}}},
		Data:     runtime.RawExtension{Raw: []byte(okData136)},
		Revision: 2,
	}
}

// TestConvertRevision: OpenKruise's ControllerRevision becomes a SidecarSetRevision of the same
// name, number, labels (with this server's SidecarSet label) and annotations, recording the
// snapshot of its data, with no owner; data OpenKruise did not write is refused, with its name.
func TestConvertRevision(t *testing.T) {
	want := func(img, name string, n int64, hash string) *v1alpha1.SidecarSetRevision {
		r := &v1alpha1.SidecarSetRevision{}
		if err := yaml.UnmarshalStrict([]byte(`
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSetRevision
metadata:
  name: `+name+`
  labels:
    apps.kruise.io/sidecarset-name: migrate
    kruise.io/sidecarset-name: migrate
    controller.kubernetes.io/hash: `+strings.TrimPrefix(name, "migrate-")+`
    team: platform
  annotations:
    kruise.io/sidecarset-hash: `+hash+`
    kruise.io/sidecarset-hash-without-image: `+hashNoImg+`
    team.example.com/owner: platform
sidecarSetName: migrate
revision: `+strconv.FormatInt(n, 10)+`
spec:
  containers: [`+image(img)+`]
`), r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	fromFile := readFile(t, "testdata/openkruise-revisions.yaml")
	typed := func(obj *unstructured.Unstructured) *appsv1.ControllerRevision {
		cr := &appsv1.ControllerRevision{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, cr); err != nil {
			t.Fatal(err)
		}
		return cr
	}
	if got := string(typed(fromFile[1]).Data.Raw); got != okData136 {
		t.Errorf("the export's revision 2 holds data\n%s\nnot OpenKruise's bytes\n%s", got, okData136)
	}
	withData := func(data string) *appsv1.ControllerRevision {
		cr := controllerRevision()
		cr.Data.Raw = []byte(data)
		return cr
	}
	tests := []struct {
		name    string
		in      *appsv1.ControllerRevision
		want    *v1alpha1.SidecarSetRevision
		wantErr string
	}{
		{name: "as OpenKruise writes it", in: controllerRevision(), want: want("busybox:1.36", okRevName2, 2, hash136)},
		{name: "as kubectl get -o yaml prints it", in: typed(fromFile[0]), want: want("busybox:1.35", "migrate-56bdc8874", 1, hash135)},
		{name: "no SidecarSet label", in: func() *appsv1.ControllerRevision {
			cr := controllerRevision()
			delete(cr.Labels, SidecarSetNameLabel)
			return cr
		}(), wantErr: "ControllerRevision kruise-system/migrate-cf96db497: no label kruise.io/sidecarset-name"},
		{name: "not a replace patch", in: withData(`{"spec":{"containers":[]}}`),
			wantErr: `ControllerRevision kruise-system/migrate-cf96db497: data: spec.$patch is "", want "replace"`},
		{name: "a field this server does not know", in: withData(`{"spec":{"$patch":"replace","containers":[{"name":"c","image":"i","futureField":1}]}}`),
			wantErr: `unknown field "spec.containers[0].futureField"`},
		{name: "more than the spec", in: withData(`{"spec":{"$patch":"replace"},"metadata":{}}`), wantErr: `unknown field "metadata"`},
		{name: "a field outside the snapshot", in: withData(`{"spec":{"$patch":"replace","selector":{}}}`), wantErr: `unknown field "spec.selector"`},
		{name: "no data", in: withData(""), wantErr: "data: empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ConvertRevision(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("converted (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConvertPlan: the exports of kubectl get are converted and ordered revisions first (by
// SidecarSet and number), then SidecarSets, canaries last; what cannot be carried over as it is
// is a warning; an object that is neither kind is an error naming it.
func TestConvertPlan(t *testing.T) {
	exported := append(readFile(t, "testdata/openkruise-sidecarsets.yaml"), readFile(t, "testdata/openkruise-revisions.yaml")...)
	t.Run("the exports of one SidecarSet: nothing lost", func(t *testing.T) {
		plan, err := Convert(exported)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Warnings) != 0 {
			t.Errorf("warnings %q: the server hashes the spec as OpenKruise did and its revision 2 records it", plan.Warnings)
		}
		if names := revisionNames(plan); names != "migrate-56bdc8874/1 migrate-cf96db497/2" {
			t.Errorf("revisions %s", names)
		}
		if len(plan.SidecarSets) != 1 || plan.SidecarSets[0].Name != "migrate" {
			t.Errorf("SidecarSets %+v", plan.SidecarSets)
		}
	})
	t.Run("canaries, orphans, other revisions, another hash", func(t *testing.T) {
		extra := readYAML(t, `
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata:
  name: a-canary
  annotations: {apps.kruise.io/sidecarset-canary: "true", apps.kruise.io/sidecarset-base: migrate}
spec:
  selector: {matchLabels: {app: migrate, track: canary}}
  updateStrategy: {type: NotUpdate}
  containers: [{name: sidecar1, image: busybox:1.37}]
---
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata:
  name: rehashed
  annotations: {kruise.io/sidecarset-hash: not-the-servers}
spec:
  selector: {matchLabels: {app: other}}
  containers: [{name: c, image: img:1}]
  injectionStrategy: {revision: {revisionName: elsewhere-1}}
---
apiVersion: apps/v1
kind: ControllerRevision
metadata: {name: kruise-daemon-5d9f, namespace: kruise-system, labels: {controller-revision-hash: 5d9f}}
data: {spec: {template: {}}}
revision: 1
---
apiVersion: apps/v1
kind: ControllerRevision
metadata: {name: gone-7c4b, namespace: kruise-system, labels: {kruise.io/sidecarset-name: gone}}
data: {spec: {$patch: replace, containers: [{name: c, image: img:1}]}}
revision: 3
`)
		plan, err := Convert(append(extra, exported...))
		if err != nil {
			t.Fatal(err)
		}
		if names := revisionNames(plan); names != "gone-7c4b/3 migrate-56bdc8874/1 migrate-cf96db497/2" {
			t.Errorf("revisions %s", names)
		}
		var sets []string
		for _, ss := range plan.SidecarSets {
			sets = append(sets, ss.Name)
		}
		if got := strings.Join(sets, " "); got != "migrate rehashed a-canary" {
			t.Errorf("SidecarSets in the order %s, want the canary last", got)
		}
		for _, want := range []string{
			"ControllerRevision kruise-system/kruise-daemon-5d9f skipped: no label kruise.io/sidecarset-name",
			"SidecarSet rehashed: the server's kruise.io/sidecarset-hash is ",
			"OpenKruise's not-the-servers: the pods OpenKruise injected will not count as updated and will be upgraded in place",
			"SidecarSet rehashed: none of its ControllerRevisions was read",
			"SidecarSet a-canary: none of its ControllerRevisions was read",
			"ControllerRevision gone-7c4b: its SidecarSet gone was not read",
			"SidecarSet rehashed: injectionStrategy.revision.revisionName elsewhere-1 is not among the ControllerRevisions read",
		} {
			if !strings.Contains(strings.Join(plan.Warnings, "\n"), want) {
				t.Errorf("no warning %q in %q", want, plan.Warnings)
			}
		}
	})
	t.Run("OpenKruise features outside the SidecarSet API", func(t *testing.T) {
		plan, err := Convert(append(readYAML(t, `
apiVersion: apps.kruise.io/v1beta1
kind: SidecarSet
metadata: {name: job-proxy}
spec:
  selector: {matchLabels: {app: batch}}
  containers: [{name: proxy, image: proxy:1, env: [{name: KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT, value: "true"}, {name: KRUISE_CONTAINER_PRIORITY, value: "1"}]}]
`), exported...))
		if err != nil {
			t.Fatal(err)
		}
		want := "SidecarSet job-proxy relies on OpenKruise features outside the SidecarSet API, which stop working after the cutover: " +
			"OpenKruise's Job sidecar terminator (spec.containers[proxy].env[KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT])"
		var found bool
		for _, w := range plan.Warnings {
			if strings.Contains(w, "SidecarSet migrate relies") {
				t.Errorf("a warning for the SidecarSet that relies on nothing: %q", w)
			}
			found = found || strings.HasPrefix(w, want) && strings.Contains(w, "container launch priority (spec.containers[proxy].env[KRUISE_CONTAINER_PRIORITY])")
		}
		if !found {
			t.Errorf("no warning %q... in %q", want, plan.Warnings)
		}
	})
	t.Run("errors name their objects", func(t *testing.T) {
		_, err := Convert(append(exported, readYAML(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: kruise-configuration, namespace: kruise-system}
---
apiVersion: apps/v1
kind: ControllerRevision
metadata: {name: migrate-56bdc8874, namespace: kruise-system, labels: {kruise.io/sidecarset-name: migrate}}
data: {spec: {$patch: replace, containers: [{name: c, image: img:1}]}}
revision: 1
`)...))
		for _, want := range []string{"ConfigMap kruise-system/kruise-configuration (v1): not an OpenKruise SidecarSet",
			"ControllerRevision migrate-56bdc8874 read twice"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v, want %q", err, want)
			}
		}
	})
}

func revisionNames(p *Plan) string {
	var out []string
	for _, r := range p.Revisions {
		out = append(out, r.Name+"/"+strconv.FormatInt(r.Revision, 10))
	}
	return strings.Join(out, " ")
}

// TestDiff: what the server stores for a migrated object is identical (so a second migration
// changes nothing) despite what the server adds (defaults, hash annotations, owners, other labels);
// a changed spec, number, label or annotation is a difference, named.
func TestDiff(t *testing.T) {
	rev, err := ConvertRevision(controllerRevision())
	if err != nil {
		t.Fatal(err)
	}
	ss, err := ConvertSidecarSet(readFile(t, "testdata/openkruise-sidecarsets.yaml")[0])
	if err != nil {
		t.Fatal(err)
	}
	storedRev := func(change func(*v1alpha1.SidecarSetRevision)) *v1alpha1.SidecarSetRevision {
		r := stored.Revision(rev)
		r.UID, r.ResourceVersion = "server-uid", "12"
		r.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(ss, v1alpha1.SchemeGroupVersion.WithKind("SidecarSet"))}
		if change != nil {
			change(r)
		}
		return r
	}
	storedSet := func(change func(*v1alpha1.SidecarSet)) *v1alpha1.SidecarSet {
		s, err := stored.SidecarSet(ss)
		if err != nil {
			t.Fatal(err)
		}
		s.Annotations["apps.kruise.io/added-by-the-server"] = "x"
		s.Status.LatestRevision = okRevName2
		if change != nil {
			change(s)
		}
		return s
	}
	revTests := []struct {
		name string
		got  *v1alpha1.SidecarSetRevision
		want string
	}{
		{"as stored", storedRev(nil), ""},
		{"renumbered since", storedRev(func(r *v1alpha1.SidecarSetRevision) { r.Revision = 3 }), "revision 3 (want 2)"},
		{"another snapshot", storedRev(func(r *v1alpha1.SidecarSetRevision) { r.Spec.Containers[0].Image = "busybox:1" }), "spec"},
		{"another SidecarSet", storedRev(func(r *v1alpha1.SidecarSetRevision) { r.SidecarSetName = "other" }), "SidecarSet other (want migrate)"},
		{"a label changed", storedRev(func(r *v1alpha1.SidecarSetRevision) { r.Labels["team"] = "apps" }), `label team="apps" (want "platform")`},
	}
	for _, tc := range revTests {
		t.Run("revision "+tc.name, func(t *testing.T) {
			if got := RevisionDiff(rev, tc.got); got != tc.want {
				t.Errorf("RevisionDiff = %q, want %q", got, tc.want)
			}
		})
	}
	setTests := []struct {
		name string
		got  *v1alpha1.SidecarSet
		want string
	}{
		{"as stored", storedSet(nil), ""},
		{"the server's hashes whatever they are", storedSet(func(s *v1alpha1.SidecarSet) { s.Annotations[v1alpha1.SidecarSetHashAnnotation] = "other" }), ""},
		{"another image", storedSet(func(s *v1alpha1.SidecarSet) { s.Spec.Containers[0].Image = "busybox:1.35" }), "spec"},
		{"an annotation gone", storedSet(func(s *v1alpha1.SidecarSet) { delete(s.Annotations, "team.example.com/owner") }),
			"annotation team.example.com/owner missing"},
	}
	for _, tc := range setTests {
		t.Run("SidecarSet "+tc.name, func(t *testing.T) {
			if got := SidecarSetDiff(ss, tc.got); got != tc.want {
				t.Errorf("SidecarSetDiff = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestStoredHashesAreOpenKruises: the server stamps on the migrated SidecarSet, and so compares
// with its pods, the hashes OpenKruise stamped on it and on the pods it injected.
func TestStoredHashesAreOpenKruises(t *testing.T) {
	ss, err := ConvertSidecarSet(readFile(t, "testdata/openkruise-sidecarsets.yaml")[0])
	if err != nil {
		t.Fatal(err)
	}
	held, err := stored.SidecarSet(ss)
	if err != nil {
		t.Fatal(err)
	}
	if got := held.Annotations[v1alpha1.SidecarSetHashAnnotation]; got != hash136 {
		t.Errorf("hash %s, OpenKruise's %s", got, hash136)
	}
	if got := held.Annotations[v1alpha1.SidecarSetHashWithoutImageAnnotation]; got != hashNoImg {
		t.Errorf("hash without image %s, OpenKruise's %s", got, hashNoImg)
	}
}
