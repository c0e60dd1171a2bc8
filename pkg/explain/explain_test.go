package explain

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps/hash"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/injection"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

var now = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

func sidecarSet(t *testing.T, doc string) *v1alpha1.SidecarSet {
	t.Helper()
	ss := &v1alpha1.SidecarSet{}
	if err := yaml.UnmarshalStrict([]byte(doc), ss); err != nil {
		t.Fatal(err)
	}
	h, err := hash.Of(&ss.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if ss.Annotations == nil {
		ss.Annotations = map[string]string{}
	}
	ss.Annotations[sidecar.HashAnnotation], ss.Annotations[sidecar.HashWithoutImageAnnotation] = h.WithImage, h.WithoutImage
	return ss
}

// createdAt sets the pod's creationTimestamp (RFC 3339).
func createdAt(p *corev1.Pod, at string) *corev1.Pod {
	ts, err := time.Parse(time.RFC3339, at)
	if err != nil {
		panic(err)
	}
	p.CreationTimestamp = metav1.NewTime(ts)
	return p
}

func pod(t *testing.T, doc string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	if err := yaml.UnmarshalStrict([]byte(doc), p); err != nil {
		t.Fatal(err)
	}
	return p
}

const webPod = `
metadata: {name: web-0, namespace: shop, labels: {app: web, tier: front}}
spec: {containers: [{name: app, image: app:v1, env: [{name: LEVEL, value: debug}]}]}
`

func TestExplain(t *testing.T) {
	logs := `
metadata: {name: logs, creationTimestamp: "2026-07-01T12:00:00Z"}
spec:
  selector: {matchLabels: {app: web}}
  containers: [{name: agent, image: agent:v1}]
status:
  latestRevision: logs-abc
`
	tests := []struct {
		name      string
		set       string
		admission Admission
		nsLabels  map[string]string // the namespace's labels, env=test when nil
		created   func(*testing.T) *corev1.Pod
		want      Entry
	}{{
		name: "selector mismatch names the label",
		set: `
metadata: {name: s}
spec: {selector: {matchLabels: {app: db}}, containers: [{name: agent, image: agent:v1}]}`,
		want: Entry{SidecarSet: "s", Reason: "SelectorMismatch", Message: `spec.selector: matchLabels app=db: label app is "web"`},
	}, {
		name: "selector expression mismatch",
		set: `
metadata: {name: s}
spec:
  selector: {matchExpressions: [{key: tier, operator: In, values: [back]}]}
  containers: [{name: agent, image: agent:v1}]`,
		want: Entry{SidecarSet: "s", Reason: "SelectorMismatch", Message: `spec.selector: matchExpressions[0] tier In [back]: label tier is "front"`},
	}, {
		name: "namespace mismatch",
		set: `
metadata: {name: s}
spec: {namespace: other, selector: {matchLabels: {app: web}}, containers: [{name: agent, image: agent:v1}]}`,
		want: Entry{SidecarSet: "s", Reason: "NamespaceMismatch", Message: `spec.namespace is "other", the pod is in "shop"`},
	}, {
		name: "namespace selector mismatch",
		set: `
metadata: {name: s}
spec:
  namespaceSelector: {matchLabels: {env: prod}}
  selector: {matchLabels: {app: web}}
  containers: [{name: agent, image: agent:v1}]`,
		want: Entry{SidecarSet: "s", Reason: "NamespaceMismatch", Message: `spec.namespaceSelector: namespace "shop": matchLabels env=prod: label env is "test"`},
	}, {
		name: "paused",
		set: `
metadata: {name: s}
spec: {injectionStrategy: {paused: true}, selector: {matchLabels: {app: web}}, containers: [{name: agent, image: agent:v1}]}`,
		want: Entry{SidecarSet: "s", Reason: "InjectionPaused", Message: "spec.injectionStrategy.paused is true"},
	}, {
		name:      "excluded namespace",
		set:       logs,
		admission: Admission{NamespaceSelectors: []*metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"shop"}}}}}},
		want: Entry{SidecarSet: "logs", Reason: "NamespaceExcluded",
			Message: `the SidecarSet selects the pod, but the admission configuration excludes namespace "shop" from injection`},
	}, {
		name:     "namespace labelled control-plane, as OpenKruise's webhook leaves alone",
		set:      logs,
		nsLabels: map[string]string{"control-plane": "controller-manager"},
		want: Entry{SidecarSet: "logs", Reason: "NamespaceExcluded",
			Message: `the SidecarSet selects the pod, but the admission configuration excludes namespace "shop" from injection`},
	}, {
		name: "injected with revision and path",
		set: logs + `
  conditions: [{type: Injected, status: "True", reason: Policy, message: through policy p, lastTransitionTime: "2026-01-01T00:00:00Z"}]`,
		want: Entry{SidecarSet: "logs", Injected: true, Reason: "Injected", Path: "Policy", PathMessage: "through policy p",
			Revision: "logs-abc", RevisionMessage: "the latest spec"},
	}, {
		name: "partly skipped",
		set: `
metadata: {name: s}
spec:
  selector: {matchLabels: {app: web}}
  containers: [{name: agent, image: agent:v1, transferEnv: [{sourceContainerName: app, envNames: [LEVEL, ZONE]}]}]
status: {latestRevision: s-1}`,
		want: Entry{SidecarSet: "s", Injected: true, Reason: "Injected", Revision: "s-1", RevisionMessage: "the latest spec",
			Skipped: []injection.Warning{{SidecarSet: "s", Field: "spec.containers[0].transferEnv[0]", Message: `container "app" has no env var "ZONE"; nothing copied`}}},
	}, {
		name:    "existing pod created before the SidecarSet",
		set:     logs,
		created: func(t *testing.T) *corev1.Pod { return createdAt(pod(t, webPod), "2026-07-01T11:59:59Z") },
		want: Entry{SidecarSet: "logs", Reason: "CreatedBeforeSidecarSet", Message: "the pod was created at 2026-07-01T11:59:59Z, before the SidecarSet " +
			"(2026-07-01T12:00:00Z); sidecars are injected only when a pod is created: recreate it"},
	}, {
		name:    "existing pod created in the SidecarSet's second",
		set:     logs,
		created: func(t *testing.T) *corev1.Pod { return createdAt(pod(t, webPod), "2026-07-01T12:00:00Z") },
		want: Entry{SidecarSet: "logs", Reason: "CreatedWithSidecarSet", Message: "the pod was created in the same second as the SidecarSet (2026-07-01T12:00:00Z), " +
			"most likely while the SidecarSet's create was in progress (creation times are whole seconds; pods created once the create returned are injected): recreate it"},
	}, {
		name:    "existing pod created after the SidecarSet without it",
		set:     logs,
		created: func(t *testing.T) *corev1.Pod { return createdAt(pod(t, webPod), "2026-07-01T12:05:00Z") },
		want: Entry{SidecarSet: "logs", Reason: "AdmittedWithoutSidecars", Message: "the pod was created at 2026-07-01T12:05:00Z, after the SidecarSet " +
			"(2026-07-01T12:00:00Z), and admitted without its sidecars (injection was unavailable or skipped): recreate it"},
	}, {
		name: "existing injected pod",
		set:  logs,
		created: func(t *testing.T) *corev1.Pod {
			res, err := injection.Inject(injection.Input{Pod: pod(t, webPod), SidecarSets: []*v1alpha1.SidecarSet{sidecarSet(t, logs)}, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			return res.Pod
		},
		want: Entry{SidecarSet: "logs", Injected: true, Reason: "Injected", Revision: "logs-abc", RevisionMessage: "carried by the pod; the current spec"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nsLabels := tt.nsLabels
			if nsLabels == nil {
				nsLabels = map[string]string{"env": "test"}
			}
			in := Input{Pod: pod(t, webPod), NamespaceLabels: nsLabels, Now: now,
				SidecarSets: []*v1alpha1.SidecarSet{sidecarSet(t, tt.set)}, Admission: tt.admission}
			if tt.created != nil {
				in.Pod, in.Created = tt.created(t), true
			}
			rep, err := Explain(in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]Entry{tt.want}, rep.SidecarSets, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("explain (-want +got):\n%s", diff)
			}
		})
	}
}
