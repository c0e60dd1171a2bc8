package policy

import (
	"context"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/hash"
	"github.com/sidecarset/apiserver/pkg/apis/apps/install"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/injection"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

var testStamp = time.Date(2026, 7, 1, 12, 30, 45, 0, time.UTC)

var appsScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// prepare defaults ss and stamps its hash annotations, as the server stores it.
func prepare(t testing.TB, ss *v1alpha1.SidecarSet) *v1alpha1.SidecarSet {
	t.Helper()
	appsScheme.Default(ss)
	h, err := hash.Of(&ss.Spec)
	if err != nil {
		t.Fatal(err)
	}
	h.Stamp(ss)
	// As stored once the controller has recorded a revision (a policy serves only then).
	if ss.Status.LatestRevision == "" {
		ss.Status.LatestRevision = ss.Name + "-rev"
	}
	return ss
}

func mustSidecarSet(t testing.TB, doc string) *v1alpha1.SidecarSet {
	t.Helper()
	ss := &v1alpha1.SidecarSet{}
	if err := yaml.UnmarshalStrict([]byte(doc), ss); err != nil {
		t.Fatal(err)
	}
	return prepare(t, ss)
}

func mustPod(t testing.TB, doc string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	if err := yaml.UnmarshalStrict([]byte(doc), pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	l := map[string]string{corev1.LabelMetadataName: name}
	for k, v := range labels {
		l[k] = v
	}
	ns := &corev1.Namespace{}
	ns.Name, ns.Labels = name, l
	return ns
}

// webhookPod is what the injector makes of pod.
func webhookPod(t testing.TB, sets []*v1alpha1.SidecarSet, pod *corev1.Pod, ns *corev1.Namespace) *corev1.Pod {
	t.Helper()
	res, err := injection.Inject(injection.Input{Pod: pod, Namespace: ns.Name, NamespaceLabels: ns.Labels, SidecarSets: sets, Now: testStamp})
	if err != nil {
		t.Fatalf("inject: %v", err)
	}
	return res.Pod
}

// compileAll plans every SidecarSet into group policies and fails unless each is policy-path
// (or injects nothing).
func compileAll(t testing.TB, sets []*v1alpha1.SidecarSet, excluded []string) []*compiledPolicy {
	t.Helper()
	plan, err := PlanPolicies(PlanInput{SidecarSets: sets, ExcludedNamespaces: excluded, Now: testStamp})
	if err != nil {
		t.Fatal(err)
	}
	for _, ss := range sets {
		if r := plan.Results[ss.Name]; r.Path == apps.PathWebhook {
			t.Fatalf("SidecarSet %s: webhook path: %s: %s", ss.Name, r.Reason, r.Message)
		}
	}
	var out []*compiledPolicy
	for _, p := range plan.Policies {
		out = append(out, compilePolicy(t, p))
	}
	return out
}

// normalize orders the lists whose order is not part of the answer (keyed by name).
func normalize(pod *corev1.Pod) *corev1.Pod {
	pod = pod.DeepCopy()
	sort.SliceStable(pod.Spec.Volumes, func(i, j int) bool { return pod.Spec.Volumes[i].Name < pod.Spec.Volumes[j].Name })
	sort.SliceStable(pod.Spec.ImagePullSecrets, func(i, j int) bool {
		return pod.Spec.ImagePullSecrets[i].Name < pod.Spec.ImagePullSecrets[j].Name
	})
	return pod
}

// checkSame runs the policies in every given order, then the webhook (the injector with
// SkipInjected, as the webhook adapter runs it), and compares each result with the injector's
// alone; a second pass (reinvocation) must change nothing. Each order also runs with every other
// policy missing, as if its SidecarSet were webhook-path: the webhook then injects it among the
// policies' sidecars.
func checkSame(t *testing.T, sets []*v1alpha1.SidecarSet, pod *corev1.Pod, ns *corev1.Namespace, orders [][]int) {
	t.Helper()
	want := normalize(webhookPod(t, sets, pod, ns))
	policies := compileAll(t, sets, nil)
	if deferring := deferred(sets, pod); len(deferring) > 0 {
		checkDeferred(t, policies, deferring, want, pod, ns)
	}
	for _, order := range orders {
		if len(order) != len(policies) {
			order = identity(len(policies))
		}
		for _, mixed := range []bool{false, true} {
			run := order
			if mixed {
				run = nil
				for _, i := range order {
					if i%2 == 0 {
						run = append(run, i)
					}
				}
			}
			got := bothPaths(t, sets, policies, run, pod.DeepCopy(), ns)
			if diff := cmp.Diff(want, normalize(got)); diff != "" {
				t.Fatalf("policies %v then webhook: pod differs from webhook alone (-webhook +both):\n%s", run, diff)
			}
			again := bothPaths(t, sets, policies, run, got.DeepCopy(), ns)
			if diff := cmp.Diff(got, again); diff != "" {
				t.Fatalf("policies %v: reinvocation changed the pod (-first +second):\n%s", run, diff)
			}
		}
	}
}

// bothPaths runs the policies in order, then the webhook.
func bothPaths(t testing.TB, sets []*v1alpha1.SidecarSet, policies []*compiledPolicy, order []int, pod *corev1.Pod, ns *corev1.Namespace) *corev1.Pod {
	t.Helper()
	pod = runAll(t, policies, order, pod, ns)
	res, err := injection.Inject(injection.Input{Pod: pod, Namespace: ns.Name, NamespaceLabels: ns.Labels, SidecarSets: sets, Now: testStamp,
		Options: injection.Options{SkipInjected: true}})
	if err != nil {
		t.Fatalf("webhook after policies: %v", err)
	}
	return res.Pod
}

// deferred returns the SidecarSets whose policies leave pod to the webhook.
func deferred(sets []*v1alpha1.SidecarSet, pod *corev1.Pod) map[string]bool {
	out := map[string]bool{}
	for i, ss := range sets {
		others := append(append([]*v1alpha1.SidecarSet(nil), sets[:i]...), sets[i+1:]...)
		if Defers(ss, others, pod) {
			out[ss.Name] = true
		}
	}
	return out
}

// checkDeferred checks that each policy, run alone, injects exactly the SidecarSets of its group
// that the webhook injects and that do not leave the pod to it.
func checkDeferred(t *testing.T, policies []*compiledPolicy, deferring map[string]bool, want *corev1.Pod, pod *corev1.Pod, ns *corev1.Namespace) {
	t.Helper()
	wanted := injectedList(want)
	for _, cp := range policies {
		got := injectedList(pod)
		if cp.selects(t, pod, ns) {
			out, err := cp.run(context.Background(), pod.DeepCopy(), ns)
			if err != nil {
				t.Fatal(err)
			}
			got = injectedList(out)
		}
		for name := range records(cp.policy) {
			if should := wanted[name] && !deferring[name] && !injectedList(pod)[name]; got[name] != should {
				t.Fatalf("policy %s: injected %s: %v, want %v (deferring: %v)", cp.policy.Name, name, got[name], should, deferring[name])
			}
		}
	}
}

func injectedList(pod *corev1.Pod) map[string]bool {
	out := map[string]bool{}
	for _, n := range strings.Split(pod.Annotations[sidecar.InjectedListAnnotation], ",") {
		if n != "" {
			out[n] = true
		}
	}
	return out
}

func identity(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func reversed(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = n - 1 - i
	}
	return out
}

// TestCompileManualExample compiles the manual's first example as shipped in artifacts/.
func TestCompileManualExample(t *testing.T) {
	doc, err := os.ReadFile("../../../artifacts/examples/01-test-sidecarset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ss := mustSidecarSet(t, string(doc))
	pod := mustPod(t, `
apiVersion: v1
kind: Pod
metadata:
  name: test-pod
  namespace: default
  labels:
    app: nginx
spec:
  containers:
  - name: app
    image: nginx:1.15.1
`)
	checkSame(t, []*v1alpha1.SidecarSet{ss}, pod, namespace("default", nil), [][]int{nil})
}
