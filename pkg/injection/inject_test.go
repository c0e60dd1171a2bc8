package injection

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

const basicPod = `
metadata: {name: p, namespace: ns1, labels: {app: web}}
spec:
  containers:
  - name: app
    image: app:1
    resources: {limits: {cpu: "1", memory: 1Gi}, requests: {cpu: 500m, memory: 512Mi}}
`

func ss(name, extra string) string {
	return `
metadata: {name: ` + name + `}
spec:
  selector: {matchLabels: {app: web}}
` + extra
}

// names returns the container names of a pod.
func names(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func TestInject(t *testing.T) {
	tests := []struct {
		name        string
		pod         string
		sets        []string
		nsLabels    map[string]string
		rand        float64
		revisions   func(t *testing.T, sets []*v1alpha1.SidecarSet) RevisionSource
		wantErr     string // substring; the error must be an *Error
		check       func(t *testing.T, res Result)
		wantReasons map[string]Reason
	}{
		{
			name: "canary overrides its base",
			pod:  basicPod,
			sets: []string{
				ss("base", `  containers: [{name: envoy, image: envoy:1}]`),
				`
metadata: {name: canary, annotations: {apps.kruise.io/sidecarset-canary: "true", apps.kruise.io/sidecarset-base: base}}
spec:
  selector: {matchLabels: {app: web}}
  updateStrategy: {type: NotUpdate}
  containers: [{name: envoy, image: envoy:2}]`,
			},
			check: func(t *testing.T, res Result) {
				if got := res.Pod.Spec.Containers[0].Image; got != "envoy:2" {
					t.Errorf("envoy image = %s, want the canary's", got)
				}
				if got := res.Pod.Annotations[sidecar.InjectedListAnnotation]; got != "canary" {
					t.Errorf("injected list = %q, want canary", got)
				}
			},
			wantReasons: map[string]Reason{"base": ReasonOverriddenByCanary, "canary": ""},
		},
		{
			name: "paused, namespace and selector mismatches are recorded",
			pod:  basicPod,
			sets: []string{
				ss("paused", "  injectionStrategy: {paused: true}\n  containers: [{name: a, image: a}]"),
				ss("other-ns", "  namespace: ns2\n  containers: [{name: b, image: b}]"),
				ss("ns-selector", "  namespaceSelector: {matchLabels: {env: prod}}\n  containers: [{name: c, image: c}]"),
				`
metadata: {name: selector}
spec:
  selector: {matchLabels: {app: db}}
  containers: [{name: d, image: d}]`,
				`
metadata: {name: empty-selector}
spec:
  selector: {}
  containers: [{name: e, image: e}]`,
				ss("ok", "  containers: [{name: f, image: f}]"),
			},
			nsLabels: map[string]string{"env": "dev"},
			check: func(t *testing.T, res Result) {
				if diff := cmp.Diff([]string{"f", "app"}, names(res.Pod.Spec.Containers)); diff != "" {
					t.Errorf("containers (-want +got):\n%s", diff)
				}
			},
			wantReasons: map[string]Reason{
				"paused": ReasonInjectionPaused, "other-ns": ReasonNamespaceMismatch, "ns-selector": ReasonNamespaceMismatch,
				"selector": ReasonSelectorMismatch, "empty-selector": ReasonSelectorMismatch, "ok": "",
			},
		},
		{
			name: "spec.namespace wins over namespaceSelector; namespace name label defaulted",
			pod:  basicPod,
			sets: []string{
				ss("by-name", "  namespace: ns1\n  namespaceSelector: {matchLabels: {env: prod}}\n  containers: [{name: a, image: a}]"),
				ss("by-label", "  namespaceSelector: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: In, values: [ns1, ns9]}]}\n  containers: [{name: b, image: b}]"),
			},
			check: func(t *testing.T, res Result) {
				if diff := cmp.Diff([]string{"b", "a", "app"}, names(res.Pod.Spec.Containers)); diff != "" {
					t.Errorf("containers (-want +got):\n%s", diff)
				}
			},
		},
		{
			name:    "invalid selector operator is an error naming the field",
			pod:     basicPod,
			sets:    []string{ss("bad", "  containers: [{name: a, image: a}]\n  namespaceSelector: {matchExpressions: [{key: k, operator: Near}]}")},
			wantErr: `SidecarSet "bad": spec.namespaceSelector: matchExpressions[0]`,
		},
		{
			name: "revision name missing fails the pod",
			pod:  basicPod,
			sets: []string{ss("pinned", "  injectionStrategy: {revision: {revisionName: gone}}\n  containers: [{name: a, image: a}]")},
			revisions: func(t *testing.T, sets []*v1alpha1.SidecarSet) RevisionSource {
				return &revisionStore{}
			},
			wantErr: `SidecarSet "pinned": spec.injectionStrategy.revision.revisionName: cannot find the revision to inject`,
		},
		{
			name:    "revision without a revision source",
			pod:     basicPod,
			sets:    []string{ss("pinned", "  injectionStrategy: {revision: {customVersion: v1}}\n  containers: [{name: a, image: a}]")},
			wantErr: `spec.injectionStrategy.revision.customVersion: no revision source`,
		},
		{
			name: "revision lookup returning nothing injects the latest spec",
			pod:  basicPod,
			sets: []string{ss("pinned", "  injectionStrategy: {revision: {revisionName: whatever}}\n  containers: [{name: a, image: a:latest-spec}]")},
			revisions: func(t *testing.T, sets []*v1alpha1.SidecarSet) RevisionSource {
				return nilRevisions{}
			},
			check: func(t *testing.T, res Result) {
				if got := res.Pod.Spec.Containers[0].Image; got != "a:latest-spec" {
					t.Errorf("image = %s", got)
				}
				if !res.Decisions[0].Latest {
					t.Error("decision not Latest")
				}
			},
		},
		{
			name: "partial with a percentage partition draws at random: history",
			pod:  basicPod,
			sets: []string{ss("partial", `  injectionStrategy: {revision: {revisionName: partial-old, policy: Partial}}
  updateStrategy: {partition: 30%}
  containers: [{name: a, image: a:new}]`)},
			rand:      0.3,
			revisions: oldRevision("partial", "a:old"),
			check:     wantImage("a:old"),
			wantReasons: map[string]Reason{
				"partial": ReasonPartialRandom,
			},
		},
		{
			name: "partial with a percentage partition draws at random: latest",
			pod:  basicPod,
			sets: []string{ss("partial", `  injectionStrategy: {revision: {revisionName: partial-old, policy: Partial}}
  updateStrategy: {partition: 30%}
  containers: [{name: a, image: a:new}]`)},
			rand:      0.31,
			revisions: oldRevision("partial", "a:old"),
			check:     wantImage("a:new"),
		},
		{
			name: "partial with an int partition injects the latest",
			pod:  basicPod,
			sets: []string{ss("partial", `  injectionStrategy: {revision: {revisionName: partial-old, policy: Partial}}
  updateStrategy: {partition: 3}
  containers: [{name: a, image: a:new}]`)},
			revisions: oldRevision("partial", "a:old"),
			check:     wantImage("a:new"),
		},
		{
			name: "partial with a malformed partition fails",
			pod:  basicPod,
			sets: []string{ss("partial", `  injectionStrategy: {revision: {revisionName: partial-old, policy: Partial}}
  updateStrategy: {partition: "3x"}
  containers: [{name: a, image: a:new}]`)},
			revisions: oldRevision("partial", "a:old"),
			wantErr:   `SidecarSet "partial": spec.updateStrategy.partition: invalid value "3x"`,
		},
		{
			name: "partial with a pod selected by the update selector gets the latest",
			pod:  basicPod,
			sets: []string{ss("partial", `  injectionStrategy: {revision: {revisionName: partial-old, policy: Partial}}
  updateStrategy: {selector: {matchLabels: {app: web}}}
  containers: [{name: a, image: a:new}]`)},
			revisions: oldRevision("partial", "a:old"),
			check:     wantImage("a:new"),
		},
		{
			name: "revision volumes, secrets and patches come from the revision",
			pod:  basicPod,
			sets: []string{ss("pinned", `  injectionStrategy: {revision: {revisionName: pinned-old}}
  imagePullSecrets: [{name: new-secret}]
  containers: [{name: a, image: a:new}]`)},
			revisions: func(t *testing.T, sets []*v1alpha1.SidecarSet) RevisionSource {
				return &revisionStore{items: []*v1alpha1.SidecarSetRevision{{
					ObjectMeta: metav1.ObjectMeta{Name: "pinned-old"},
					Spec: v1alpha1.SidecarSetRevisionSpec{
						Containers:       []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "a", Image: "a:old", VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/v"}}}}},
						Volumes:          []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
						ImagePullSecrets: []corev1.LocalObjectReference{{Name: "old-secret"}},
						PatchPodMetadata: []v1alpha1.SidecarSetPatchPodMetadata{{Annotations: map[string]string{"from": "revision"}}},
					},
				}}}
			},
			check: func(t *testing.T, res Result) {
				p := res.Pod // the revision's container has no podInjectPolicy: after the app
				if p.Spec.Containers[1].Image != "a:old" || len(p.Spec.Volumes) != 1 || p.Spec.ImagePullSecrets[0].Name != "old-secret" || p.Annotations["from"] != "revision" {
					t.Errorf("pod not injected from the revision: %+v %v", p.Spec, p.Annotations)
				}
				e, _ := sidecar.PodHashEntry(p.Annotations, sidecar.HashAnnotation, "pinned")
				if e.ControllerRevision != "pinned-old" || e.Hash == "" {
					t.Errorf("hash entry %+v, want controllerRevision pinned-old and a computed hash", e)
				}
			},
			wantReasons: map[string]Reason{"pinned": ReasonRevisionPinned},
		},
		{
			name: "malformed pod hash annotation is an error naming the pod field",
			pod: `
metadata: {name: p, labels: {app: web}, annotations: {kruise.io/sidecarset-hash: "{broken"}}
spec: {containers: [{name: app, image: app}]}`,
			sets:    []string{ss("s", "  containers: [{name: a, image: a}]")},
			wantErr: `pod metadata.annotations[kruise.io/sidecarset-hash]`,
		},
		{
			name: "merge patch failure names the SidecarSet",
			pod: `
metadata: {name: p, labels: {app: web}, annotations: {cfg: "not json"}}
spec: {containers: [{name: app, image: app}]}`,
			sets:    []string{ss("s", "  patchPodMetadata: [{patchPolicy: MergePatchJson, annotations: {cfg: '{\"a\":1}'}}]\n  containers: [{name: a, image: a}]")},
			wantErr: `SidecarSet "s": spec.patchPodMetadata: patchPodMetadata[0]: annotation "cfg"`,
		},
		{
			name: "legacy hash annotations and the existing injected list are kept and upgraded",
			pod: `
metadata:
  name: p
  labels: {app: web}
  annotations:
    kruise.io/sidecarset-hash: '{"old-set":"h-old"}'
    kruise.io/sidecarset-hash-without-image: '{"old-set":"w-old"}'
    kruise.io/sidecarset-injected-list: old-set
spec: {containers: [{name: app, image: app}]}`,
			sets: []string{ss("s", "  containers: [{name: a, image: a}]")},
			check: func(t *testing.T, res Result) {
				m, err := sidecar.ParseHashMap(res.Pod.Annotations[sidecar.HashAnnotation])
				if err != nil || m["old-set"].Hash != "h-old" || m["s"].Hash == "" {
					t.Errorf("hash map = %+v, %v", m, err)
				}
				if !strings.HasPrefix(res.Pod.Annotations[sidecar.HashAnnotation], `{"old-set":{"updateTimestamp":null,"hash":"h-old"`) {
					t.Errorf("legacy entry not converted: %s", res.Pod.Annotations[sidecar.HashAnnotation])
				}
				if got := res.Pod.Annotations[sidecar.InjectedListAnnotation]; got != "old-set,s" {
					t.Errorf("injected list = %q", got)
				}
			},
		},
		{
			name: "a SidecarSet without containers patches metadata only",
			pod:  basicPod,
			sets: []string{ss("meta", "  patchPodMetadata: [{annotations: {k: v}}]")},
			check: func(t *testing.T, res Result) {
				want := []Operation{{Op: "add", Path: "/metadata/annotations", Value: map[string]string{"k": "v"}}}
				if diff := cmp.Diff(want, res.Patch); diff != "" {
					t.Errorf("patch (-want +got):\n%s", diff)
				}
				if res.Decisions[0].Injected || !res.Decisions[0].Matched {
					t.Errorf("decision %+v", res.Decisions[0])
				}
			},
		},
		{
			name: "pod volumes and secrets win; only referenced volumes are added once",
			pod: `
metadata: {name: p, labels: {app: web}}
spec:
  imagePullSecrets: [{name: s1}, {name: s1}]
  volumes: [{name: shared, hostPath: {path: /pod}}]
  containers: [{name: app, image: app}]`,
			sets: []string{
				ss("a", `  imagePullSecrets: [{name: s1}, {name: s2}]
  volumes: [{name: shared, emptyDir: {}}, {name: mine, emptyDir: {}}, {name: unused, emptyDir: {}}]
  containers: [{name: a, image: a, volumeMounts: [{name: shared, mountPath: /s}, {name: mine, mountPath: /m}, {name: undeclared, mountPath: /u}]}]`),
				ss("b", `  volumes: [{name: mine, configMap: {name: other}}]
  containers: [{name: b, image: b, volumeMounts: [{name: mine, mountPath: /m}]}]`),
			},
			check: func(t *testing.T, res Result) {
				want := []corev1.Volume{
					{Name: "shared", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/pod"}}},
					{Name: "mine", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				}
				if diff := cmp.Diff(want, res.Pod.Spec.Volumes); diff != "" {
					t.Errorf("volumes (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]corev1.LocalObjectReference{{Name: "s1"}, {Name: "s2"}}, res.Pod.Spec.ImagePullSecrets); diff != "" {
					t.Errorf("secrets (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "resourcesPolicy on a hot-upgrade sidecar and a native sidecar; other sidecars are not targets",
			pod: `
metadata: {name: p, labels: {app: web}}
spec:
  initContainers:
  - {name: pod-native, image: native, restartPolicy: Always, resources: {limits: {cpu: 200m}, requests: {cpu: 100m}}}
  - {name: pod-init, image: i, resources: {limits: {cpu: "8"}, requests: {cpu: "8"}}}
  containers:
  - {name: app, image: app, resources: {limits: {cpu: 800m}, requests: {cpu: 400m}}}
  - {name: other-sidecar, image: o, resources: {limits: {cpu: "16"}, requests: {cpu: "16"}}}`,
			sets: []string{
				ss("a", `  updateStrategy: {type: NotUpdate}
  initContainers:
  - name: native
    image: native
    restartPolicy: Always
    resourcesPolicy: {targetContainersMode: max, targetContainersNameRegex: ".*", resourcesExpr: {requests: {cpu: cpu*10%}}}
  containers:
  - name: hot
    image: h
    upgradeStrategy: {upgradeType: HotUpgrade, hotUpgradeEmptyImage: empty}
    resourcesPolicy: {targetContainersMode: sum, targetContainersNameRegex: ".*", resourcesExpr: {limits: {cpu: cpu*50%, memory: 1Gi}, requests: {cpu: "0.1"}}}`),
				ss("b", "  containers: [{name: other-sidecar, image: o2}]"),
			},
			check: func(t *testing.T, res Result) {
				byName := map[string]corev1.ResourceRequirements{}
				for _, c := range append(res.Pod.Spec.InitContainers, res.Pod.Spec.Containers...) {
					byName[c.Name] = c.Resources
				}
				// targets: pod-native (200m/100m) and app (800m/400m); memory limits absent.
				hot := corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
				}
				native := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("40m")}}
				cmpQ := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
				for name, want := range map[string]corev1.ResourceRequirements{"hot-1": hot, "hot-2": hot, "native": native} {
					if diff := cmp.Diff(want, byName[name], cmpQ); diff != "" {
						t.Errorf("%s resources (-want +got):\n%s", name, diff)
					}
				}
			},
		},
		{
			name: "a pod container replaced by a sharing sidecar shares nothing (reinvocation-stable)",
			pod: `
metadata: {name: p, labels: {app: web}}
spec:
  volumes: [{name: old, emptyDir: {}}, {name: data, emptyDir: {}}]
  containers:
  - {name: dns-f, image: user-dns, volumeMounts: [{name: old, mountPath: /old}]}
  - {name: app, image: app, volumeMounts: [{name: data, mountPath: /data}]}`,
			sets: []string{ss("s", `  containers:
  - {name: dns-f, image: dns-f:1, podInjectPolicy: AfterAppContainer, shareVolumePolicy: {type: enabled}}`)},
			check: func(t *testing.T, res Result) {
				c := res.Pod.Spec.Containers[0]
				if c.Name != "dns-f" || c.Image != "dns-f:1" || len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/data" {
					t.Errorf("replaced container = %+v, want dns-f:1 in place sharing only /data", c)
				}
			},
		},
		{
			name: "resourcesPolicy with a bad expression names the field",
			pod:  basicPod,
			sets: []string{ss("r", `  containers:
  - name: a
    image: a
    resourcesPolicy: {targetContainersMode: sum, targetContainersNameRegex: app, resourcesExpr: {limits: {memory: memory*cpu}}}`)},
			wantErr: `SidecarSet "r": spec.containers[0].resourcesPolicy: resourcesExpr.limits.memory`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var sets []*v1alpha1.SidecarSet
			for _, doc := range tc.sets {
				sets = append(sets, mustSidecarSet(t, doc))
			}
			in := Input{
				Pod:             mustPod(t, tc.pod),
				NamespaceLabels: tc.nsLabels,
				SidecarSets:     sets,
				Now:             testNow,
				Rand:            func() float64 { return tc.rand },
			}
			if tc.revisions != nil {
				in.Revisions = tc.revisions(t, sets)
			}
			podBefore := in.Pod.DeepCopy()
			setsBefore := deepCopySets(sets)
			res, err := Inject(in)
			if diff := cmp.Diff(podBefore, in.Pod); diff != "" {
				t.Errorf("input pod modified (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(setsBefore, sets); diff != "" {
				t.Errorf("input SidecarSets modified (-before +after):\n%s", diff)
			}
			if tc.wantErr != "" {
				var ierr *Error
				if !errors.As(err, &ierr) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Inject() error = %v, want an *Error containing %q", err, tc.wantErr)
				}
				if len(res.Patch) != 0 {
					t.Errorf("patch on error: %v", res.Patch)
				}
				return
			}
			if err != nil {
				t.Fatalf("Inject() error = %v", err)
			}
			if tc.check != nil {
				tc.check(t, res)
			}
			for name, want := range tc.wantReasons {
				found := false
				for _, d := range res.Decisions {
					if d.SidecarSet == name {
						found = true
						if d.Reason != want {
							t.Errorf("decision %s reason = %q, want %q", name, d.Reason, want)
						}
					}
				}
				if !found {
					t.Errorf("no decision for %s", name)
				}
			}
			checkPatch(t, in.Pod, res)
			checkIdempotent(t, in, res.Pod)
		})
	}
}

type nilRevisions struct{}

func (nilRevisions) Revision(string) (*v1alpha1.SidecarSetRevision, error) { return nil, nil }
func (nilRevisions) LatestWithCustomVersion(string, string) (*v1alpha1.SidecarSetRevision, error) {
	return nil, nil
}

// oldRevision returns a revision source holding <set>-old with one container a of image.
func oldRevision(set, image string) func(t *testing.T, sets []*v1alpha1.SidecarSet) RevisionSource {
	return func(t *testing.T, sets []*v1alpha1.SidecarSet) RevisionSource {
		old := sets[0].DeepCopy()
		old.Spec.Containers[0].Image = image
		stampHashes(t, old)
		return &revisionStore{items: []*v1alpha1.SidecarSetRevision{{
			ObjectMeta: metav1.ObjectMeta{Name: set + "-old", Annotations: map[string]string{
				sidecar.HashAnnotation:             old.Annotations[sidecar.HashAnnotation],
				sidecar.HashWithoutImageAnnotation: old.Annotations[sidecar.HashWithoutImageAnnotation],
			}},
			Spec: v1alpha1.SidecarSetRevisionSpec{Containers: old.Spec.Containers},
		}}}
	}
}

func wantImage(image string) func(t *testing.T, res Result) {
	return func(t *testing.T, res Result) {
		t.Helper()
		if got := res.Pod.Spec.Containers[0].Image; got != image {
			t.Errorf("sidecar image = %s, want %s", got, image)
		}
	}
}

func deepCopySets(sets []*v1alpha1.SidecarSet) []*v1alpha1.SidecarSet {
	out := make([]*v1alpha1.SidecarSet, len(sets))
	for i, s := range sets {
		out[i] = s.DeepCopy()
	}
	return out
}

// TestInjectPartialSticky: a reinvoked webhook keeps the version the pod carries, whatever the
// random draw says.
func TestInjectPartialSticky(t *testing.T) {
	set := mustSidecarSet(t, ss("partial", `  injectionStrategy: {revision: {revisionName: partial-old, policy: Partial}}
  updateStrategy: {partition: 50%}
  containers: [{name: a, image: a:new}]`))
	in := Input{Pod: mustPod(t, basicPod), SidecarSets: []*v1alpha1.SidecarSet{set}, Revisions: oldRevision("partial", "a:old")(t, []*v1alpha1.SidecarSet{set}), Now: testNow}
	for _, draw := range []float64{0.1, 0.9} {
		in.Rand = func() float64 { return draw }
		first, err := Inject(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, redraw := range []float64{0.1, 0.9} {
			again := in
			again.Pod = first.Pod
			again.Rand = func() float64 { return redraw }
			res, err := Inject(again)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Patch) != 0 || res.Decisions[0].Reason != ReasonPartialSticky {
				t.Errorf("draw %v then %v: patch %v, decision %+v", draw, redraw, res.Patch, res.Decisions[0])
			}
		}
	}
}

// TestInjectPartialNeedsRand: the injector draws no randomness of its own: a draw against a
// percentage partition without Input.Rand fails, and is not taken as a draw of some value.
func TestInjectPartialNeedsRand(t *testing.T) {
	set := mustSidecarSet(t, ss("partial", `  injectionStrategy: {revision: {revisionName: partial-old, policy: Partial}}
  updateStrategy: {partition: 50%}
  containers: [{name: a, image: a:new}]`))
	in := Input{Pod: mustPod(t, basicPod), SidecarSets: []*v1alpha1.SidecarSet{set}, Revisions: oldRevision("partial", "a:old")(t, []*v1alpha1.SidecarSet{set}), Now: testNow}
	if _, err := Inject(in); err == nil || !strings.Contains(err.Error(), "Input.Rand") {
		t.Errorf("Inject without Rand: error %v, want one naming Input.Rand", err)
	}
}

// TestInjectDeterministic: candidate order and the clock's sub-second part do not change the output.
func TestInjectDeterministic(t *testing.T) {
	var sets []*v1alpha1.SidecarSet
	for _, n := range []string{"c", "a", "d", "b"} {
		sets = append(sets, mustSidecarSet(t, ss("set-"+n, `  initContainers: [{name: init-`+n+`, image: i}]
  containers:
  - {name: before-`+n+`, image: x, podInjectPolicy: BeforeAppContainer}
  - {name: after-`+n+`, image: x, podInjectPolicy: AfterAppContainer}
  - {name: hot-`+n+`, image: x, upgradeStrategy: {upgradeType: HotUpgrade, hotUpgradeEmptyImage: e}}`)))
	}
	pod := mustPod(t, basicPod)
	var want []byte
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20; i++ {
		shuffled := append([]*v1alpha1.SidecarSet(nil), sets...)
		r.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
		res, err := Inject(Input{Pod: pod, SidecarSets: shuffled, Now: testNow.Add(time.Duration(i) * time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = got
			wantOrder := []string{"before-a", "hot-a-1", "hot-a-2", "before-b", "hot-b-1", "hot-b-2", "before-c", "hot-c-1", "hot-c-2",
				"before-d", "hot-d-1", "hot-d-2", "app", "after-a", "after-b", "after-c", "after-d"}
			if diff := cmp.Diff(wantOrder, names(res.Pod.Spec.Containers)); diff != "" {
				t.Errorf("containers (-want +got):\n%s", diff)
			}
			continue
		}
		if string(got) != string(want) {
			t.Fatalf("iteration %d differs:\n%s\nvs\n%s", i, got, want)
		}
	}
}

func TestInjectPatchShape(t *testing.T) {
	pod := mustPod(t, `
metadata:
  name: p
  labels: {app: web}
  annotations: {a/b~c: keep, over: old}
spec:
  containers: [{name: app, image: app}]`)
	set := mustSidecarSet(t, ss("s", `  patchPodMetadata: [{patchPolicy: Overwrite, annotations: {over: new, x/y: "1"}}]
  imagePullSecrets: [{name: sec}]
  initContainers: [{name: init, image: i}]
  containers: [{name: a, image: a}]`))
	res, err := Inject(Input{Pod: pod, SidecarSets: []*v1alpha1.SidecarSet{set}, Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, op := range res.Patch {
		got = append(got, op.Op+" "+op.Path)
	}
	want := []string{
		"add /spec/initContainers",
		"replace /spec/containers",
		"add /spec/imagePullSecrets",
		"add /metadata/annotations/kruise.io~1sidecarset-hash",
		"add /metadata/annotations/kruise.io~1sidecarset-hash-without-image",
		"add /metadata/annotations/kruise.io~1sidecarset-injected-list",
		"replace /metadata/annotations/over",
		"add /metadata/annotations/x~1y",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("patch ops (-want +got):\n%s", diff)
	}
	checkPatch(t, pod, res)
}

func TestInjectInactiveAndNoMatch(t *testing.T) {
	set := mustSidecarSet(t, ss("s", "  containers: [{name: a, image: a}]"))
	for name, pod := range map[string]*corev1.Pod{
		"succeeded": func() *corev1.Pod { p := mustPod(t, basicPod); p.Status.Phase = corev1.PodSucceeded; return p }(),
		"deleting":  func() *corev1.Pod { p := mustPod(t, basicPod); p.DeletionTimestamp = &metav1.Time{}; return p }(),
		"no match":  func() *corev1.Pod { p := mustPod(t, basicPod); p.Labels = nil; return p }(),
	} {
		res, err := Inject(Input{Pod: pod, SidecarSets: []*v1alpha1.SidecarSet{set}, Now: testNow})
		if err != nil || len(res.Patch) != 0 || res.Pod != pod {
			t.Errorf("%s: patch %v, err %v, same pod %v", name, res.Patch, err, res.Pod == pod)
		}
	}
	if _, err := Inject(Input{}); err == nil {
		t.Error("Inject without a pod succeeded")
	}
}

func TestErrorFormat(t *testing.T) {
	base := errors.New("boom")
	e := &Error{SidecarSet: "s", Field: "spec.x", Err: base}
	if got, want := e.Error(), `SidecarSet "s": spec.x: boom`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(e, base) {
		t.Error("errors.Is does not see the wrapped error")
	}
	if got, want := (&Error{Field: "metadata.annotations[k]", Err: base}).Error(), "pod metadata.annotations[k]: boom"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// TestSkipInjectedSidecarsAreNotResourceTargets: with SkipInjected, the sidecars of a SidecarSet
// injected earlier in the admission (by its policy) are sidecars, not app containers, for another
// SidecarSet's resourcesPolicy.
func TestSkipInjectedSidecarsAreNotResourceTargets(t *testing.T) {
	logs := mustSidecarSet(t, `
metadata: {name: a-logs}
spec:
  selector: {matchLabels: {app: web}}
  containers: [{name: logs, image: busybox, resources: {limits: {cpu: "1"}}}]`)
	sized := mustSidecarSet(t, `
metadata: {name: b-sized}
spec:
  selector: {matchLabels: {app: web}}
  containers:
  - name: sized
    image: busybox
    resourcesPolicy: {targetContainersMode: sum, targetContainersNameRegex: ".*", resourcesExpr: {limits: {cpu: cpu*50%}}}`)
	pod := mustPod(t, `
metadata: {name: p, namespace: default, labels: {app: web}}
spec:
  containers: [{name: app, image: nginx, resources: {limits: {cpu: "200m"}}}]`)
	first, err := Inject(Input{Pod: pod, SidecarSets: []*v1alpha1.SidecarSet{logs}, Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Inject(Input{Pod: first.Pod, SidecarSets: []*v1alpha1.SidecarSet{logs, sized}, Now: testNow, Options: Options{SkipInjected: true}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Pod.Spec.Containers {
		if c.Name == "sized" {
			if got := c.Resources.Limits.Cpu().String(); got != "100m" {
				t.Fatalf("sized cpu limit %s, want 100m (half of the app's 200m, the logs sidecar not counted)", got)
			}
			return
		}
	}
	t.Fatal("sized not injected")
}
