package injection

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// retiredPod has a volume of its own named like a volume of the SidecarSets below, which none
// of its containers mounts: the pod's wins, and stays when a SidecarSet is withdrawn.
const retiredPod = `
metadata: {name: p, namespace: ns1, labels: {app: web}}
spec:
  containers:
  - {name: app, image: app:1}
  volumes:
  - {name: shared, emptyDir: {sizeLimit: 1Gi}}
`

// retiredSet is a SidecarSet with a sidecar, an init container, a volume of its own and one the
// pod declares too, and a pull secret.
func retiredSet(t *testing.T, selector, image, extra string) *v1alpha1.SidecarSet {
	return mustSidecarSet(t, `
metadata: {name: x}
spec:
  selector: `+selector+`
  containers:
  - {name: x-sidecar, image: "`+image+`", volumeMounts: [{name: x-vol, mountPath: /x}, {name: shared, mountPath: /shared}]}
  initContainers:
  - {name: x-init, image: x-init:1}
  volumes:
  - {name: x-vol, emptyDir: {}}
  - {name: shared, emptyDir: {}}
`+extra)
}

// TestStaleRetiredWithdrawn: a pod reaches the webhook with a SidecarSet injected by a policy
// compiled from a version that an update or a delete has since retired (kube-apiserver still ran
// it). Where no version stored now applies to the pod, the webhook takes that SidecarSet out
// again and the pod is the webhook's alone, also after the stale policy runs again (reinvocation).
// Without the retired version (a pod created as a copy of an injected one, long after), or with
// the pod at another hash, the pod is left as it is.
func TestStaleRetiredWithdrawn(t *testing.T) {
	other := mustSidecarSet(t, ss("a-logs", `  containers: [{name: logs, image: logs:1}]`))
	x1 := retiredSet(t, `{matchLabels: {app: web}}`, "x:1", "")
	pod := mustPod(t, retiredPod)
	for _, tc := range []struct {
		name    string
		now     []*v1alpha1.SidecarSet // stored now, other included
		retired []*v1alpha1.SidecarSet
		kept    bool // x stays in the pod
	}{
		{"selector changed", []*v1alpha1.SidecarSet{other, retiredSet(t, `{matchLabels: {app: db}}`, "x:1", "")}, []*v1alpha1.SidecarSet{x1}, false},
		{"selector and image changed", []*v1alpha1.SidecarSet{other, retiredSet(t, `{matchLabels: {app: db}}`, "x:2", "")}, []*v1alpha1.SidecarSet{x1}, false},
		{"namespace changed", []*v1alpha1.SidecarSet{other, retiredSet(t, `{matchLabels: {app: web}}`, "x:1", "  namespace: ns2\n")}, []*v1alpha1.SidecarSet{x1}, false},
		{"paused", []*v1alpha1.SidecarSet{other, retiredSet(t, `{matchLabels: {app: web}}`, "x:1", "  injectionStrategy: {paused: true}\n")}, []*v1alpha1.SidecarSet{x1}, false},
		{"deleted", []*v1alpha1.SidecarSet{other}, []*v1alpha1.SidecarSet{x1}, false},
		{"deleted, not retired", []*v1alpha1.SidecarSet{other}, nil, true},
		{"deleted, another version retired", []*v1alpha1.SidecarSet{other}, []*v1alpha1.SidecarSet{retiredSet(t, `{matchLabels: {app: web}}`, "x:0", "")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			byPolicies, err := Inject(Input{Pod: pod, SidecarSets: []*v1alpha1.SidecarSet{other, x1}, Now: testNow})
			if err != nil {
				t.Fatal(err)
			}
			webhook := func(p *corev1.Pod) *corev1.Pod {
				t.Helper()
				res, err := Inject(Input{Pod: p, SidecarSets: tc.now, Retired: tc.retired, Now: testNow, Options: Options{SkipInjected: true}})
				if err != nil {
					t.Fatal(err)
				}
				return res.Pod
			}
			got := webhook(byPolicies.Pod)
			if tc.kept {
				if diff := cmp.Diff(byPolicies.Pod, got); diff != "" {
					t.Errorf("pod changed (-before +after):\n%s", diff)
				}
				return
			}
			alone, err := Inject(Input{Pod: pod, SidecarSets: tc.now, Now: testNow})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(alone.Pod, got); diff != "" {
				t.Errorf("pod differs from the webhook's alone (-alone +got):\n%s", diff)
			}
			// The stale policy runs again once the webhook changed the pod, then the webhook.
			rerun, err := Inject(Input{Pod: got, SidecarSets: []*v1alpha1.SidecarSet{x1}, Now: testNow})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(alone.Pod, webhook(rerun.Pod)); diff != "" {
				t.Errorf("after the stale policy ran again, the pod differs from the webhook's alone (-alone +got):\n%s", diff)
			}
		})
	}
}

// TestWithdrawKeepsPodsOwnVolume: withdrawing a SidecarSet leaves a volume the pod declared
// itself under the name of one of the SidecarSet's, though no container mounts it, and drops the
// injection annotations once they are empty.
func TestWithdrawKeepsPodsOwnVolume(t *testing.T) {
	x := retiredSet(t, `{matchLabels: {app: web}}`, "x:1", "")
	pod := mustPod(t, retiredPod)
	injected, err := Inject(Input{Pod: pod, SidecarSets: []*v1alpha1.SidecarSet{x}, Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	got := injected.Pod.DeepCopy()
	if err := withdraw(got, x); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pod.Spec, got.Spec); diff != "" {
		t.Errorf("spec after withdrawal (-before injection +after):\n%s", diff)
	}
	for _, k := range []string{sidecar.HashAnnotation, sidecar.HashWithoutImageAnnotation, sidecar.InjectedListAnnotation} {
		if v, ok := got.Annotations[k]; ok {
			t.Errorf("annotation %s = %q left", k, v)
		}
	}
}

// TestRetired: versions are kept Keep after they were retired, by name, oldest first.
func TestRetired(t *testing.T) {
	at := testNow
	r := &Retired{Keep: 10 * time.Second}
	v := func(name, image string) *v1alpha1.SidecarSet {
		ss := retiredSet(t, `{matchLabels: {app: web}}`, image, "")
		ss.Name = name
		return ss
	}
	a1, a2, b1 := v("x", "x:1"), v("x", "x:2"), v("y", "x:3")
	r.Retire(a1, at)
	r.Retire(b1, at.Add(4*time.Second))
	r.Retire(a2, at.Add(8*time.Second))
	names := func(vs []*v1alpha1.SidecarSet) []string {
		var out []string
		for _, v := range vs {
			out = append(out, v.Name+"@"+v.Spec.Containers[0].Image)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		after time.Duration
		want  []string
	}{
		{"x", 9 * time.Second, []string{"x@x:1", "x@x:2"}},
		{"y", 9 * time.Second, []string{"y@x:3"}},
		{"x", 11 * time.Second, []string{"x@x:2"}},
		{"y", 14500 * time.Millisecond, nil},
		{"x", 19 * time.Second, nil},
	} {
		if diff := cmp.Diff(tc.want, names(r.Versions(tc.name, at.Add(tc.after)))); diff != "" {
			t.Errorf("%s at +%v (-want +got):\n%s", tc.name, tc.after, diff)
		}
	}
	if len(r.byName) != 0 || len(r.order) != 0 {
		t.Errorf("expired versions kept: %d names, %d in order", len(r.byName), len(r.order))
	}
}

// TestStaleRetiredSharingNames: a canary names its base's sidecars alike. The base's stale policy
// (compiled before a selector change that leaves the pod to the canary alone) injects the base,
// the webhook takes it out and injects the canary; the stale policy runs again and puts the
// base's envoy in place of the canary's; the webhook, run again, must then take the base out and
// inject the canary again, not leave the canary recorded without its envoy.
func TestStaleRetiredSharingNames(t *testing.T) {
	base1 := mustSidecarSet(t, `
metadata: {name: base}
spec:
  selector: {matchLabels: {app: web}}
  containers: [{name: envoy, image: envoy:1}]`)
	base2 := base1.DeepCopy()
	base2.Spec.Selector.MatchLabels = map[string]string{"app": "db"}
	canary := mustSidecarSet(t, `
metadata: {name: canary, annotations: {apps.kruise.io/sidecarset-canary: "true", apps.kruise.io/sidecarset-base: base}}
spec:
  selector: {matchLabels: {app: web, track: canary}}
  updateStrategy: {type: NotUpdate}
  containers: [{name: envoy, image: envoy:2}]`)
	pod := mustPod(t, basicPod)
	pod.Labels["track"] = "canary"
	now := []*v1alpha1.SidecarSet{base2, canary}
	webhook := func(p *corev1.Pod) *corev1.Pod {
		t.Helper()
		res, err := Inject(Input{Pod: p, SidecarSets: now, Retired: []*v1alpha1.SidecarSet{base1}, Now: testNow, Options: Options{SkipInjected: true}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Pod
	}
	stalePolicy := func(p *corev1.Pod) *corev1.Pod {
		t.Helper()
		res, err := Inject(Input{Pod: p, SidecarSets: []*v1alpha1.SidecarSet{base1}, Now: testNow})
		if err != nil {
			t.Fatal(err)
		}
		return res.Pod
	}
	alone, err := Inject(Input{Pod: pod, SidecarSets: now, Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	first := webhook(stalePolicy(pod))
	if diff := cmp.Diff(alone.Pod, first); diff != "" {
		t.Errorf("pod differs from the webhook's alone (-alone +got):\n%s", diff)
	}
	if diff := cmp.Diff(alone.Pod, webhook(stalePolicy(first))); diff != "" {
		t.Errorf("after the stale policy ran again, the pod differs from the webhook's alone (-alone +got):\n%s", diff)
	}
}
