package validation

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// sidecarSet builds a SidecarSet for the cross-object checks.
type sidecarSet struct{ *apps.SidecarSet }

func makeSidecarSet(name string, containers ...string) sidecarSet {
	ss := validSidecarSet(name)
	ss.Spec.Containers = nil
	for _, c := range containers {
		ss.Spec.Containers = append(ss.Spec.Containers, validContainer(c))
	}
	return sidecarSet{ss}
}

func (s sidecarSet) init(names ...string) sidecarSet {
	for _, n := range names {
		s.Spec.InitContainers = append(s.Spec.InitContainers, validContainer(n))
	}
	return s
}

func (s sidecarSet) selector(kv ...string) sidecarSet {
	s.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.Spec.Selector.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

func (s sidecarSet) namespaceSelector(k, v string) sidecarSet {
	s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	return s
}

func (s sidecarSet) namespace(ns string) sidecarSet {
	s.Spec.Namespace = ns
	return s
}

func (s sidecarSet) volume(name string, src corev1.VolumeSource) sidecarSet {
	s.Spec.Volumes = append(s.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: src})
	return s
}

func (s sidecarSet) patch(policy apps.SidecarSetPatchPolicyType, kv ...string) sidecarSet {
	p := apps.SidecarSetPatchPodMetadata{PatchPolicy: policy, Annotations: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		p.Annotations[kv[i]] = kv[i+1]
	}
	s.Spec.PatchPodMetadata = append(s.Spec.PatchPodMetadata, p)
	return s
}

func (s sidecarSet) canaryOf(base string) sidecarSet {
	canary(s.SidecarSet, base)
	return s
}

// conflictCase is a SidecarSet, the stored ones and the conflicts expected.
type conflictCase struct {
	name   string
	ss     sidecarSet
	others []sidecarSet
	want   []wantErr
}

func runConflictCases(t *testing.T, cases []conflictCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			others := make([]*apps.SidecarSet, 0, len(tt.others))
			for _, o := range tt.others {
				others = append(others, o.SidecarSet)
			}
			checkErrors(t, tt.want, ValidateConflicts(tt.ss.SidecarSet, others))
			// The same against the others sharing a conflict key: what the server looks up.
			keys := sets.New(ConflictKeys(tt.ss.SidecarSet)...)
			var sharing []*apps.SidecarSet
			for _, o := range others {
				if keys.HasAny(ConflictKeys(o)...) {
					sharing = append(sharing, o)
				}
			}
			checkErrors(t, tt.want, ValidateConflicts(tt.ss.SidecarSet, sharing))
		})
	}
}

func TestConflictKeys(t *testing.T) {
	emptyDir := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	for _, tc := range []struct {
		name string
		ss   sidecarSet
		want []string
	}{
		{"containers and init containers apart", makeSidecarSet("s", "log", "proxy").init("log"),
			[]string{"container/log", "container/proxy", "initContainer/log"}},
		{"volumes", makeSidecarSet("s").volume("data", emptyDir), []string{"volume/data"}},
		{"annotations, but not retained ones, each once",
			makeSidecarSet("s").patch(apps.SidecarSetRetainPatchPolicy, "kept", "1").
				patch(apps.SidecarSetOverwritePatchPolicy, "set", "1").
				patch(apps.SidecarSetMergePatchJsonPatchPolicy, "merged", "{}", "set", "{}"),
			[]string{"annotation/merged", "annotation/set"}},
		{"nothing", makeSidecarSet("s"), []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ConflictKeys(tc.ss.SidecarSet); !slices.Equal(got, tc.want) {
				t.Errorf("ConflictKeys = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestValidateConflictsContainers(t *testing.T) {
	emptyDir := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	runConflictCases(t, []conflictCase{
		{name: "same names and identical volume (OpenKruise test1)",
			ss:     makeSidecarSet("sidecarset2", "container-name").init("init-name").volume("volume-name", emptyDir),
			others: []sidecarSet{makeSidecarSet("sidecarset1", "container-name").init("init-name").volume("volume-name", emptyDir)},
			want: []wantErr{
				{"spec.initContainers[0].name", duplicate, "container init-name already exist in sidecarset1"},
				{"spec.containers[0].name", duplicate, "container container-name already exist in sidecarset1"},
			}},
		{name: "same namespace selector (OpenKruise test2)",
			ss:     makeSidecarSet("sidecarset2", "container-name").namespaceSelector("app", "nginx"),
			others: []sidecarSet{makeSidecarSet("sidecarset1", "container-name").namespaceSelector("app", "nginx")},
			want:   []wantErr{{"spec.containers[0].name", duplicate, "already exist in sidecarset1"}}},
		{name: "disjoint namespace selectors (OpenKruise test3, validation/47)",
			ss:     makeSidecarSet("sidecarset2", "container-name").namespaceSelector("app", "nginx"),
			others: []sidecarSet{makeSidecarSet("sidecarset1", "container-name").namespaceSelector("app", "redis")}},
		{name: "one namespace selector only",
			ss:     makeSidecarSet("sidecarset2", "container-name").namespaceSelector("app", "nginx"),
			others: []sidecarSet{makeSidecarSet("sidecarset1", "container-name")},
			want:   []wantErr{{"spec.containers[0].name", duplicate, ""}}},
		{name: "different v1alpha1 namespaces (validation/49)",
			ss:     makeSidecarSet("b", "container-name").namespace("team-b"),
			others: []sidecarSet{makeSidecarSet("a", "container-name").namespace("team-a")}},
		{name: "v1alpha1 namespace and a selector on its name",
			ss:     makeSidecarSet("b", "container-name").namespace("team-a"),
			others: []sidecarSet{makeSidecarSet("a", "container-name").namespaceSelector(corev1.LabelMetadataName, "team-a")},
			want:   []wantErr{{"spec.containers[0].name", duplicate, ""}}},
		{name: "disjoint pod selectors (validation/51)",
			ss:     makeSidecarSet("new", "shared-name").selector("a", "i"),
			others: []sidecarSet{makeSidecarSet("old", "shared-name").selector("a", "h")}},
		{name: "init and regular names are separate",
			ss:     makeSidecarSet("new", "x"),
			others: []sidecarSet{makeSidecarSet("old").init("x")}},
		{name: "itself is skipped and the first other is named",
			ss:     makeSidecarSet("me", "c"),
			others: []sidecarSet{makeSidecarSet("me", "c"), makeSidecarSet("first", "c"), makeSidecarSet("second", "c")},
			want:   []wantErr{{"spec.containers[0].name", duplicate, "already exist in first"}}},
		{name: "the first by name is named, whatever the order of the others",
			ss:     makeSidecarSet("me", "c"),
			others: []sidecarSet{makeSidecarSet("zeta", "c"), makeSidecarSet("alpha", "c")},
			want:   []wantErr{{"spec.containers[0].name", duplicate, "already exist in alpha"}}},
		{name: "canary skips its base (validation/83)",
			ss:     makeSidecarSet("canary", "c").canaryOf("base"),
			others: []sidecarSet{makeSidecarSet("base", "c")}},
		{name: "the base does not skip its canary",
			ss:     makeSidecarSet("base", "c"),
			others: []sidecarSet{makeSidecarSet("canary", "c").canaryOf("base")},
			want:   []wantErr{{"spec.containers[0].name", duplicate, "already exist in canary"}}},
	})
}

// TestConflicts: the collisions of two SidecarSets that select the same pod, whatever their
// selectors say.
func TestConflicts(t *testing.T) {
	emptyDir := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	hostPath := corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}
	for _, tc := range []struct {
		name  string
		ss, o sidecarSet
		want  []wantErr
	}{
		{"disjoint selectors still collide on a name",
			makeSidecarSet("tenant", "log").selector("a", "i"), makeSidecarSet("cluster", "log").selector("a", "h"),
			[]wantErr{{"spec.containers[0].name", duplicate, "already exist in cluster"}}},
		{"a volume of the same name, defined otherwise",
			makeSidecarSet("tenant", "x").volume("data", emptyDir), makeSidecarSet("cluster", "y").volume("data", hostPath),
			[]wantErr{{"spec.volumes[0]", invalid, "in conflict with sidecarset cluster"}}},
		{"nothing in common", makeSidecarSet("tenant", "x").volume("a", emptyDir), makeSidecarSet("cluster", "y").volume("a", emptyDir), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, tc.want, Conflicts(tc.ss.SidecarSet, tc.o.SidecarSet))
		})
	}
}

func TestValidateConflictsVolumesAndAnnotations(t *testing.T) {
	emptyDir := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	hostPath := func(p string) corev1.VolumeSource {
		return corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p, Type: ptr.To(corev1.HostPathUnset)}}
	}
	runConflictCases(t, []conflictCase{
		{name: "different volume definition",
			ss:     makeSidecarSet("new", "c-new").volume("volume-1", emptyDir).volume("volume-2", hostPath("/home/work")),
			others: []sidecarSet{makeSidecarSet("old", "c-old").volume("volume-2", hostPath("/home/admin")).volume("volume-3", emptyDir)},
			want:   []wantErr{{"spec.volumes[1]", invalid, "volume volume-2 is in conflict with sidecarset old"}}},
		{name: "same volume definition (validation/59)",
			ss:     makeSidecarSet("new", "c-new").volume("volume-2", hostPath("/home/work")),
			others: []sidecarSet{makeSidecarSet("old", "c-old").volume("volume-2", hostPath("/home/work"))}},
		{name: "annotation overwritten by both",
			ss:     makeSidecarSet("new", "c-new").patch(apps.SidecarSetOverwritePatchPolicy, "oom-score", "1"),
			others: []sidecarSet{makeSidecarSet("old", "c-old").patch(apps.SidecarSetOverwritePatchPolicy, "oom-score", "2")},
			want:   []wantErr{{"spec.patchPodMetadata[0].annotations[oom-score]", forbidden, "annotation oom-score is in conflict with sidecarset old"}}},
		{name: "annotation merged by one and overwritten by the other",
			ss:     makeSidecarSet("new", "c-new").patch(apps.SidecarSetMergePatchJsonPatchPolicy, "oom-score", "{}"),
			others: []sidecarSet{makeSidecarSet("old", "c-old").patch(apps.SidecarSetOverwritePatchPolicy, "oom-score", "2")},
			want:   []wantErr{{"spec.patchPodMetadata[0].annotations[oom-score]", forbidden, ""}}},
		{name: "annotation merged by both (validation/61)",
			ss:     makeSidecarSet("new", "c-new").patch(apps.SidecarSetMergePatchJsonPatchPolicy, "oom-score", `{"log-agent": 1}`),
			others: []sidecarSet{makeSidecarSet("old", "c-old").patch(apps.SidecarSetMergePatchJsonPatchPolicy, "oom-score", `{"envoy": 1}`)}},
		{name: "retained annotations are ignored",
			ss:     makeSidecarSet("new", "c-new").patch(apps.SidecarSetRetainPatchPolicy, "k", "1").patch(apps.SidecarSetOverwritePatchPolicy, "j", "1"),
			others: []sidecarSet{makeSidecarSet("old", "c-old").patch(apps.SidecarSetOverwritePatchPolicy, "k", "2").patch(apps.SidecarSetRetainPatchPolicy, "j", "2")}},
	})
}

func TestValidateCanary(t *testing.T) {
	const path = "metadata.annotations[apps.kruise.io/sidecarset-base]"
	tests := []struct {
		name    string
		ss      sidecarSet
		base    *apps.SidecarSet
		baseErr error
		want    []wantErr
	}{
		{name: "not a canary", ss: makeSidecarSet("s", "c")},
		{name: "canary without base is not a canary", ss: func() sidecarSet {
			s := makeSidecarSet("s", "c")
			s.Annotations = map[string]string{apps.SidecarSetCanaryAnnotation: "true"}
			return s
		}()},
		{name: "valid (validation/83)", ss: makeSidecarSet("canary", "c").canaryOf("base"), base: makeSidecarSet("base", "c").SidecarSet},
		{name: "itself (validation/79)", ss: makeSidecarSet("self", "c").canaryOf("self"),
			want: []wantErr{{path, invalid, "base sidecarSet cannot be itself"}}},
		{name: "base is a canary (validation/81)", ss: makeSidecarSet("canary-2", "c").canaryOf("canary-1"),
			base: makeSidecarSet("canary-1", "c").canaryOf("root").SidecarSet,
			want: []wantErr{{path, invalid, "base sidecarSet cannot be canary"}}},
		{name: "base cannot be fetched", ss: makeSidecarSet("canary", "c").canaryOf("base"), baseErr: errors.New(`sidecarset "base" not found`),
			want: []wantErr{{path, invalid, `fetch base sidecarSet[base] failed: sidecarset "base" not found`}}},
		{name: "base missing", ss: makeSidecarSet("canary", "c").canaryOf("base"),
			want: []wantErr{{path, invalid, "fetch base sidecarSet[base] failed"}}},
		{name: "rolling update", ss: func() sidecarSet {
			s := makeSidecarSet("canary", "c").canaryOf("base")
			s.Spec.UpdateStrategy.Type = apps.RollingUpdateSidecarSetStrategyType
			return s
		}(), base: makeSidecarSet("base", "c").SidecarSet,
			want: []wantErr{{"spec.updateStrategy.type", invalid, "RollingUpdate is not supported for canary sidecarSet"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrors(t, tt.want, ValidateCanary(tt.ss.SidecarSet, tt.base, tt.baseErr))
		})
	}
}

func TestIsCanary(t *testing.T) {
	base, ok := IsCanary(makeSidecarSet("c", "c").canaryOf("b").SidecarSet)
	if base != "b" || !ok {
		t.Errorf("IsCanary = %q, %v; want b, true", base, ok)
	}
	if base, ok := IsCanary(makeSidecarSet("c", "c").SidecarSet); base != "" || ok {
		t.Errorf("IsCanary of a plain SidecarSet = %q, %v", base, ok)
	}
}

func TestValidatePatchPodMetadataWhitelist(t *testing.T) {
	// The conformance whitelist: acc.example.com/* and oom-score for everyone, the launch
	// priority annotation only for SidecarSets labelled sidecar=log-agent.
	whitelist := `{"rules":[{"allowedAnnotationKeyExprs":["^acc\\.example\\.com/.+$","^oom-score$"]},` +
		`{"selector":{"matchLabels":{"sidecar":"log-agent"}},"allowedAnnotationKeyExprs":["^apps\\.kruise\\.io/container-launch-priority$"]}]}`
	selective := `{"rules":[{"selector":{"matchLabels":{"sidecar":"log-agent"}},"allowedAnnotationKeyExprs":["key.*"]}]}`
	launch := "apps.kruise.io/container-launch-priority"
	tests := []struct {
		name            string
		ss              sidecarSet
		whitelist       *string
		defaultsAllowed bool
		want            []wantErr
	}{
		{name: "no patches", ss: makeSidecarSet("s", "c")},
		{name: "allowed keys", ss: makeSidecarSet("s", "c").patch(apps.SidecarSetOverwritePatchPolicy, "acc.example.com/k", "v", "oom-score", "1"),
			whitelist: &whitelist},
		{name: "key not in whitelist (validation/21)", ss: makeSidecarSet("s", "c").patch(apps.SidecarSetOverwritePatchPolicy, "other.example.com/not-allowed", "v"),
			whitelist: &whitelist, defaultsAllowed: true,
			want: []wantErr{{"spec.patchPodMetadata[0].annotations[other.example.com/not-allowed]", forbidden,
				"sidecarSet patch metadata annotation(other.example.com/not-allowed) is not allowed"}}},
		{name: "rule selector does not match (validation/23)", ss: makeSidecarSet("s", "c").patch(apps.SidecarSetOverwritePatchPolicy, launch, "Ordered"),
			whitelist: &whitelist,
			want:      []wantErr{{"spec.patchPodMetadata[0].annotations[" + launch + "]", forbidden, "is not allowed"}}},
		{name: "rule selector matches", ss: func() sidecarSet {
			s := makeSidecarSet("s", "c").patch(apps.SidecarSetOverwritePatchPolicy, launch, "Ordered")
			s.Labels = map[string]string{"sidecar": "log-agent"}
			return s
		}(), whitelist: &whitelist},
		{name: "expressions are unanchored", ss: func() sidecarSet {
			s := makeSidecarSet("s", "c").patch(apps.SidecarSetOverwritePatchPolicy, "xkeyz", "v")
			s.Labels = map[string]string{"sidecar": "log-agent"}
			return s
		}(), whitelist: &selective},
		{name: "no whitelist", ss: makeSidecarSet("s", "c").patch(apps.SidecarSetOverwritePatchPolicy, "k", "v"),
			want: []wantErr{{"spec.patchPodMetadata", forbidden, "SidecarSet patch metadata whitelist not found"}}},
		{name: "no whitelist, defaults allowed", ss: makeSidecarSet("s", "c").patch(apps.SidecarSetOverwritePatchPolicy, "k", "v"),
			defaultsAllowed: true},
		{name: "no applicable rule", ss: makeSidecarSet("s", "c").patch(apps.SidecarSetOverwritePatchPolicy, "key", "v"),
			whitelist: &selective,
			want:      []wantErr{{"spec.patchPodMetadata", forbidden, "sidecarSet patch metadata annotation is not allowed"}}},
		{name: "no applicable rule, defaults allowed", ss: makeSidecarSet("s", "c").patch(apps.SidecarSetOverwritePatchPolicy, "key", "v"),
			whitelist: &selective, defaultsAllowed: true},
		{name: "malformed whitelist", ss: makeSidecarSet("s", "c").patch(apps.SidecarSetOverwritePatchPolicy, "k", "v"),
			whitelist: ptr.To(`{"rules":[{"allowedAnnotationKeyExprs":["("]}]}`), defaultsAllowed: true,
			want: []wantErr{{"spec.patchPodMetadata", "InternalError", "invalid patch metadata whitelist"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrors(t, tt.want, ValidatePatchPodMetadataWhitelist(tt.ss.SidecarSet, tt.whitelist, tt.defaultsAllowed))
		})
	}
}
