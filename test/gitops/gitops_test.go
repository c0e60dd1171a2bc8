package gitops

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"
)

// root is the repository's root, from this package's directory.
const root = "../.."

func readScript(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, ScriptPath))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// object builds a SidecarSet or NamespacedSidecarSet as the API server returns it (JSON numbers
// decoded as int64, as Argo CD's and Flux's clients decode them).
type object struct{ u *unstructured.Unstructured }

func makeObject(kind string, generation int64) object {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.kruise.io/v1alpha1", "kind": kind,
		"metadata": map[string]any{"name": "ss", "generation": generation},
		"spec":     map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "a"}}},
	}}
	if kind == "NamespacedSidecarSet" {
		u.SetNamespace("team-a")
	}
	return object{u}
}

func (o object) observed(generation int64) object {
	_ = unstructured.SetNestedField(o.u.Object, generation, "status", "observedGeneration")
	return o
}

func (o object) condition(kind, status, reason, message string) object {
	conditions, _, _ := unstructured.NestedSlice(o.u.Object, "status", "conditions")
	conditions = append(conditions, map[string]any{"type": kind, "status": status, "reason": reason, "message": message,
		"observedGeneration": o.u.GetGeneration(), "lastTransitionTime": "2026-11-23T10:00:00Z"})
	_ = unstructured.SetNestedSlice(o.u.Object, conditions, "status", "conditions")
	return o
}

func (o object) set(value any, path ...string) object {
	_ = unstructured.SetNestedField(o.u.Object, value, path...)
	return o
}

func (o object) deleting() object {
	o.u.SetDeletionTimestamp(nil)
	_ = unstructured.SetNestedField(o.u.Object, "2026-11-23T10:00:00Z", "metadata", "deletionTimestamp")
	return o
}

// TestHealth: the health script and kstatus agree on the states the server reports, for both
// kinds: Progressing/InProgress until the generation is observed and while the rollout goes on,
// Degraded/Failed while it is stalled, Suspended (kstatus: not Failed) while paused, Healthy/Current
// once it is done.
func TestHealth(t *testing.T) {
	script := readScript(t)
	const (
		summary = `SidecarSet "ss" rollout: 2 of 2 pods updated, 0 upgrading, 0 waiting, 0 unavailable`
		rolling = `SidecarSet "ss" rollout: 1 of 2 pods updated, 1 upgrading, 0 waiting, 0 unavailable`
		failed  = "pods fail to run the new sidecar: ns/p: ImagePullBackOff"
	)
	done := func(o object) object {
		return o.observed(2).condition("Injected", "True", "Policy", "kube-apiserver injects new pods").
			condition("Progressing", "False", "RolloutComplete", summary).condition("Ready", "True", "RolloutComplete", summary)
	}
	for _, tc := range []struct {
		name    string
		build   func(object) object
		argo    string
		kstatus status.Status
		message string // in the health script's message
	}{
		{"new, no status", func(o object) object { return o }, Progressing, status.CurrentStatus, "observe generation 2 (observed: 0)"},
		// As the server stores a create: Reconciling True until the controller observes it.
		{"new, as stored", func(o object) object {
			return o.condition("Reconciling", "True", "NotObserved", "the controller has not observed this SidecarSet yet")
		}, Progressing, status.InProgressStatus, "observe generation 2 (observed: 0)"},
		{"generation not observed", func(o object) object { return done(o).set(int64(1), "status", "observedGeneration") },
			Progressing, status.InProgressStatus, "observe generation 2 (observed: 1)"},
		{"done", done, Healthy, status.CurrentStatus, "2 of 2 pods updated"},
		{"done, pods not injected", func(o object) object {
			return done(o).condition("PodsNotInjected", "True", "PodsRunWithoutSidecars", "1 pod the SidecarSet selects run without its sidecars")
		}, Healthy, status.CurrentStatus, "0 unavailable; 1 pod the SidecarSet selects run without"},
		{"rolling out", func(o object) object {
			return o.observed(2).condition("Progressing", "True", "RollingOut", rolling).condition("Ready", "False", "RollingOut", rolling)
		}, Progressing, status.InProgressStatus, "1 of 2 pods updated"},
		{"rollout paused", func(o object) object {
			return o.observed(2).set(true, "spec", "updateStrategy", "paused").
				condition("Progressing", "False", "Paused", rolling+"; the rollout is paused").condition("Ready", "False", "Paused", rolling)
		}, Suspended, status.InProgressStatus, "the rollout is paused"},
		{"rollout paused once done", func(o object) object { return done(o).set(true, "spec", "updateStrategy", "paused") },
			Healthy, status.CurrentStatus, "2 of 2 pods updated"},
		{"injection paused", func(o object) object {
			return done(o).set(true, "spec", "injectionStrategy", "paused")
		}, Suspended, status.CurrentStatus, "new pods get no sidecars"},
		{"stalled", func(o object) object {
			return o.observed(2).condition("Progressing", "False", "PodsFailed", failed).condition("Ready", "False", "PodsFailed", failed).
				condition("Stalled", "True", "PodsFailed", failed)
		}, Degraded, status.FailedStatus, "ImagePullBackOff"},
		{"stalled while paused", func(o object) object {
			return o.observed(2).set(true, "spec", "updateStrategy", "paused").condition("Progressing", "False", "PodsFailed", failed).
				condition("Ready", "False", "PodsFailed", failed).condition("Stalled", "True", "PodsFailed", failed)
		}, Degraded, status.FailedStatus, "ImagePullBackOff"},
		{"stalled, a server without the Stalled condition", func(o object) object {
			return o.observed(2).condition("Progressing", "False", "PodsFailed", failed).condition("Ready", "False", "PodsFailed", failed)
		}, Degraded, status.InProgressStatus, "ImagePullBackOff"},
		{"recovered from a stall", func(o object) object {
			return done(o).condition("Stalled", "False", "RolloutComplete", summary)
		}, Healthy, status.CurrentStatus, "2 of 2 pods updated"},
		{"stalled, new generation not observed", func(o object) object {
			return o.observed(1).condition("Stalled", "True", "PodsFailed", failed)
		}, Progressing, status.InProgressStatus, "observe generation 2"},
		{"no pod tracking, no Ready", func(o object) object { return o.observed(2) }, Healthy, status.CurrentStatus, "Generation 2 is observed"},
		// An OpenKruise-served object reports counters, no condition: 3 matched pods, 1 updated.
		{"counters only, rolling out", func(o object) object {
			return o.observed(2).set(int64(3), "status", "matchedPods").set(int64(1), "status", "updatedPods").
				set(int64(1), "status", "updatedReadyPods")
		}, Progressing, status.CurrentStatus, "1 of 3 matched pods updated, 1 updated and ready"},
		{"counters only, updated but not ready", func(o object) object {
			return o.observed(2).set(int64(3), "status", "matchedPods").set(int64(3), "status", "updatedPods").
				set(int64(2), "status", "updatedReadyPods")
		}, Progressing, status.CurrentStatus, "3 of 3 matched pods updated, 2 updated and ready"},
		{"counters only, done", func(o object) object {
			return o.observed(2).set(int64(3), "status", "matchedPods").set(int64(3), "status", "updatedPods").
				set(int64(3), "status", "updatedReadyPods").set(int64(3), "status", "readyPods")
		}, Healthy, status.CurrentStatus, "3 of 3 matched pods updated and ready"},
		{"deleting", func(o object) object { return done(o).deleting() }, Healthy, status.TerminatingStatus, ""},
	} {
		for _, kind := range []string{"SidecarSet", "NamespacedSidecarSet"} {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				got, err := Evaluate(script, tc.build(makeObject(kind, 2)).u)
				if err != nil {
					t.Fatal(err)
				}
				if got.ArgoCD.Status != tc.argo || got.Kstatus != tc.kstatus || !strings.Contains(got.ArgoCD.Message, tc.message) {
					t.Errorf("Argo CD %s (%q), kstatus %s (%q); want %s with %q, %s", got.ArgoCD.Status, got.ArgoCD.Message,
						got.Kstatus, got.KstatusMessage, tc.argo, tc.message, tc.kstatus)
				}
			})
		}
	}
}

// TestArgoCDLibraries: scripts run with Argo CD's libraries for argocd-cm scripts only, and their
// result is checked as Argo CD checks it.
func TestArgoCDLibraries(t *testing.T) {
	obj := map[string]any{"metadata": map[string]any{"generation": int64(3)}, "list": []any{"a", float64(2)}}
	for _, tc := range []struct {
		name, script string
		want         Health
		wantErr      string
	}{
		{"base and table", `local t = {} table.insert(t, obj.list[1]) return {status = "Healthy", message = t[1] .. obj.metadata.generation .. tostring(obj.list[2])}`,
			Health{Healthy, "a32"}, ""},
		{"no message", `return {status = "Progressing"}`, Health{Status: Progressing}, ""},
		{"no string library", `return {status = string.format("%s", "Healthy")}`, Health{}, "key 'format'"},
		{"no os library", `return {status = "Healthy", message = os.getenv("HOME")}`, Health{}, "key 'getenv'"},
		{"unknown status", `return {status = "Fine"}`, Health{}, "does not know"},
		{"not a table", `return "Healthy"`, Health{}, "not a table"},
		{"endless", `while true do end`, Health{}, "context deadline exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ArgoCD(tc.script, obj)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one with %q", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestConfigMapCarriesScript: the argocd-cm data installs health.lua, verbatim, for both kinds.
func TestConfigMapCarriesScript(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, ConfigMapPath))
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.UnmarshalStrict(data, &cm); err != nil {
		t.Fatal(err)
	}
	script := readScript(t)
	if len(cm.Data) != len(ConfigMapKeys) {
		t.Errorf("keys %v, want %v", cmp.Diff(ConfigMapKeys, keys(cm.Data)), ConfigMapKeys)
	}
	for _, k := range ConfigMapKeys {
		if diff := cmp.Diff(script, cm.Data[k]); diff != "" {
			t.Errorf("%s differs from %s (-health.lua +%s):\n%s", ConfigMapPath, ScriptPath, k, diff)
		}
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
