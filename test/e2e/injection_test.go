package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/test/conformance"
)

// commonNamespace is the namespace of common/namespace.yaml, used when a pod names none.
const commonNamespace = "sidecarset-acc"

// TestInjectionConformance creates each scenario's pod with a server-side dry run through
// kube-apiserver and evaluates expect.yaml on the returned pod, internal assertions included, in
// both injection modes of the server. In webhook mode the webhook (reached through the aggregation
// layer) injects every SidecarSet. In policy mode the pod is checked twice: at once (the policy of
// a new SidecarSet is not loaded yet, the webhook serves it during the grace period) and once the
// grace period is over (the policies inject what they can express, the webhook the rest). In
// webhook mode each scenario that applies runs again with NamespacedSidecarSets.
func TestInjectionConformance(t *testing.T) {
	dirs := scenarioDirs(t, "injection")
	defer restartServer(t, "policy")
	answers := map[string]map[string]*corev1.Pod{}
	for _, mode := range []string{"webhook", "policy"} {
		answers[mode] = map[string]*corev1.Pod{}
		t.Run(mode, func(t *testing.T) {
			restartServer(t, mode)
			for _, name := range sortedNames(dirs) {
				passed := t.Run(name, func(t *testing.T) {
					answers[mode][name] = runInjectionScenario(t, dirs[name], mode == "policy")
				})
				if mode != "webhook" || !passed {
					continue // policy mode injects NamespacedSidecarSets in TestNamespacedSidecarSet
				}
				t.Run(name+"/namespaced", func(t *testing.T) {
					if !runNamespacedInjection(t, dirs[name], answers[mode][name]) {
						t.Skip("does not apply to NamespacedSidecarSets")
					}
				})
			}
		})
	}
	// Both modes give the same pod (scenarios that reject the pod have none).
	for name, want := range answers["webhook"] {
		got := answers["policy"][name]
		if want == nil || got == nil {
			continue
		}
		if diff := cmp.Diff(comparablePod(want), comparablePod(got)); diff != "" {
			t.Errorf("%s: the pod differs between webhook and policy mode (-webhook +policy):\n%s", name, diff)
		}
	}
}

// policySettle is how long after a SidecarSet change its policy injects on the local cluster: the
// server's --policy-grace (3s there), plus kube-apiserver's policy refresh (1s), plus a margin.
const policySettle = 5 * time.Second

// kubeAPIServerLoads returns once kube-apiserver has had policySettle to load what its admission
// reads: a SidecarSet's policies past the server's grace period, a webhook configuration, a
// namespace's new labels. The one wait of the suite that stands for a state, because kube-apiserver
// shows none of these loads (its admission caches have no status), and a loaded configuration that
// admits a pod unchanged looks just like one not loaded yet.
func kubeAPIServerLoads() { time.Sleep(policySettle) }

// runInjectionScenario runs one scenario and returns the admitted pod (nil when rejected).
func runInjectionScenario(t *testing.T, dir string, settled bool) *corev1.Pod {
	var meta conformance.Meta
	var expect conformance.Expectation
	var proc conformance.Procedure
	mustRead(t, filepath.Join(dir, "meta.yaml"), false, &meta)
	mustRead(t, filepath.Join(dir, "expect.yaml"), false, &expect)
	hasProcedure := mustRead(t, filepath.Join(dir, "procedure.yaml"), true, &proc)
	if err := meta.Validate(); err != nil {
		t.Fatalf("meta.yaml: %v", err)
	}
	if err := expect.Validate(); err != nil {
		t.Fatalf("expect.yaml: %v", err)
	}
	if hasProcedure {
		if err := proc.Validate(); err != nil {
			t.Fatalf("procedure.yaml: %v", err)
		}
	}
	deleteAllSidecarSets(t)
	applyNamespaces(t, filepath.Join(conformanceDir, "common", "namespace.yaml"))
	applyRequirements(t, meta.Requires)
	namespaces := applyNamespaces(t, filepath.Join(dir, "namespace.yaml"))
	docs := readSidecarSetDocs(t, filepath.Join(dir, "sidecarsets.yaml"))
	podFile := "pod.yaml"
	if hasProcedure {
		podFile = runProcedure(t, proc, docs)
	} else {
		for i := range docs {
			applySidecarSetDoc(t, docs[i], nil)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, podFile))
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	if err := conformance.DecodeStrict(data, pod); err != nil {
		t.Fatalf("%s: %v", podFile, err)
	}
	if pod.Namespace == "" {
		pod.Namespace = conformance.NamespaceFromNotes(meta.Notes, append(namespaces, commonNamespace), commonNamespace)
	}
	got, err := createPodDryRun(pod)
	checkInjection(t, meta.Title, expect, got, err)
	if settled {
		kubeAPIServerLoads() // the policies, past the grace period
		got, err = createPodDryRun(pod)
		checkInjection(t, meta.Title+" (policies loaded)", expect, got, err)
	}
	if err != nil {
		return nil
	}
	return got
}

// runProcedure follows procedure.yaml: applies the documents each step names in order (each
// settled), captures jq results of the settled objects into variables and substitutes ${VAR} in
// later documents. It returns the pod file the procedure creates (pod.yaml by default).
func runProcedure(t *testing.T, proc conformance.Procedure, docs [][]byte) string {
	t.Helper()
	plan, err := proc.Plan(len(docs))
	if err != nil {
		t.Fatalf("procedure.yaml: %v", err)
	}
	vars := map[string]string{}
	applied := map[int]bool{}
	podFile := ""
	for i, st := range plan {
		for k, v := range st.Substitute.Values {
			vars[k] = v
		}
		for _, name := range st.Substitute.Names {
			if _, ok := vars[name]; !ok {
				t.Fatalf("procedure step %d: substitute %s, which no earlier step captured", i+1, name)
			}
		}
		var last interface{}
		for _, d := range st.Documents {
			last = toDoc(applySidecarSetDoc(t, docs[d], vars))
			applied[d] = true
		}
		for _, c := range st.Capture {
			if last == nil {
				t.Fatalf("procedure step %d: capture %s without an applied document", i+1, c.Var)
			}
			v, err := conformance.EvalOne(c.Path, last)
			if err != nil || v == nil {
				t.Fatalf("procedure step %d: capture %s = %s: %v (got %v)", i+1, c.Var, c.Path, err, v)
			}
			vars[c.Var] = captureString(v)
			t.Logf("captured %s = %s", c.Var, vars[c.Var])
		}
		if st.CreatePod != "" {
			podFile = strings.TrimSpace(st.CreatePod)
		}
	}
	if len(applied) != len(docs) {
		t.Fatalf("procedure.yaml applies %d of the %d documents of sidecarsets.yaml", len(applied), len(docs))
	}
	if podFile == "" {
		podFile = "pod.yaml"
	}
	return podFile
}

// captureString renders a captured jq value for substitution: strings as they are, anything
// else as JSON.
func captureString(v interface{}) string {
	if s, ok := v.(string); ok {
		return s
	}
	data, _ := json.Marshal(v)
	return string(data)
}

// applySidecarSetDoc substitutes ${VAR} in a SidecarSet document, applies it and waits until it
// is settled; it returns the settled object.
func applySidecarSetDoc(t *testing.T, doc []byte, vars map[string]string) interface{} {
	t.Helper()
	text := string(doc)
	if strings.Contains(text, "${") {
		var err error
		if text, err = conformance.Expand(text, vars); err != nil {
			t.Fatalf("sidecarsets.yaml: %v", err)
		}
	}
	ss, err := decodeSidecarSet([]byte(text))
	if err != nil {
		t.Fatalf("sidecarsets.yaml: %v", err)
	}
	if ss.Kind != "SidecarSet" {
		t.Fatalf("sidecarsets.yaml: kind %q, want SidecarSet", ss.Kind)
	}
	if err := applySidecarSet(t, ss); err != nil {
		t.Fatalf("apply SidecarSet %s: %v", ss.Name, err)
	}
	return waitSettled(t, ss.Name)
}

// createPodDryRun retries briefly: the server's SidecarSet cache follows writes asynchronously.
// Three tries a second apart while the server answers "not ready", each with its full request
// time, and the last answer returned: not a wait on a condition, since its callers check the
// answer (a rejection may be what they expect); they wait with waitInjected.
func createPodDryRun(pod *corev1.Pod) (*corev1.Pod, error) {
	var got *corev1.Pod
	var err error
	pollEvery(time.Second, 3*time.Second, func(context.Context) (bool, string) {
		got, err = kube.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod.DeepCopy(),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil || !strings.Contains(err.Error(), "not ready"), ""
	})
	return got, err
}

func checkInjection(t *testing.T, title string, expect conformance.Expectation, got *corev1.Pod, err error) {
	t.Helper()
	if rej, ok := expect.Rejection(); ok {
		if err == nil {
			t.Fatalf("%s: want the pod rejected, it was admitted", title)
		}
		if !strings.Contains(err.Error(), rej.MessageContains) {
			t.Errorf("%s: error %q does not contain %q", title, err, rej.MessageContains)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: create pod: %v", title, err)
	}
	res := expect.Evaluate(toDoc(got), false)
	if res.Variant != "" {
		t.Logf("%s: variant %s passes", title, res.Variant)
	}
	if err := res.Err(); err != nil {
		t.Errorf("%s: %v", title, err)
	}
}
