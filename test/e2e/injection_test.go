package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"
)

// injectionSkips are scenarios this harness does not drive, with the reason.
var injectionSkips = map[string]string{
	"41-kube-system-pods-injected": "the webhook configuration excludes kube-system by design (an environment property per the scenario notes)",
}

// TestInjectionConformance creates each scenario's pod with a server-side dry run through
// kube-apiserver and evaluates expect.yaml on the returned pod, internal assertions included, in
// both injection modes of the server. In webhook mode the webhook (reached through the aggregation
// layer) injects every SidecarSet. In policy mode the pod is checked twice: at once (the policy of
// a new SidecarSet is not loaded yet, the webhook serves it during the grace period) and once the
// grace period is over (the policies inject what they can express, the webhook the rest).
func TestInjectionConformance(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(conformance, "injection", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	defer restartServer(t, "policy")
	answers := map[string]map[string]*corev1.Pod{}
	for _, mode := range []string{"webhook", "policy"} {
		answers[mode] = map[string]*corev1.Pod{}
		t.Run(mode, func(t *testing.T) {
			restartServer(t, mode)
			for _, dir := range dirs {
				name := filepath.Base(dir)
				t.Run(name, func(t *testing.T) {
					if why, ok := injectionSkips[name]; ok {
						t.Skip(why)
					}
					answers[mode][name] = runInjectionScenario(t, dir, mode == "policy")
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

// runInjectionScenario runs one scenario and returns the admitted pod (nil when rejected).
func runInjectionScenario(t *testing.T, dir string, settled bool) *corev1.Pod {
	var meta scenarioMeta
	if err := readYAML(filepath.Join(dir, "meta.yaml"), &meta); err != nil {
		t.Fatal(err)
	}
	deleteAllSidecarSets(t)
	setWhitelist(t, meta.Requires)
	applyNamespaces(t, filepath.Join(conformance, "common", "namespace.yaml"))
	applyNamespaces(t, filepath.Join(dir, "namespace.yaml"))
	// procedure.yaml, where present, says the same: apply each version in order and settle.
	for _, ss := range readSidecarSets(t, filepath.Join(dir, "sidecarsets.yaml")) {
		if err := applySidecarSet(t, ss); err != nil {
			t.Fatalf("apply SidecarSet %s: %v", ss.Name, err)
		}
		waitSettled(t, ss.Name)
	}
	pod := &corev1.Pod{}
	if err := readYAML(filepath.Join(dir, "pod.yaml"), pod); err != nil {
		t.Fatal(err)
	}
	if pod.Namespace == "" {
		pod.Namespace = "sidecarset-acc"
	}
	var expect []assertion
	if err := readYAML(filepath.Join(dir, "expect.yaml"), &expect); err != nil {
		t.Fatal(err)
	}
	got, err := createPodDryRun(pod)
	checkInjection(t, meta.Title, expect, got, err)
	if settled {
		time.Sleep(policySettle)
		got, err = createPodDryRun(pod)
		checkInjection(t, meta.Title+" (policies loaded)", expect, got, err)
	}
	if err != nil {
		return nil
	}
	return got
}

// createPodDryRun retries briefly: the server's SidecarSet cache follows writes asynchronously.
func createPodDryRun(pod *corev1.Pod) (*corev1.Pod, error) {
	var got *corev1.Pod
	var err error
	for i := 0; i < 3; i++ {
		got, err = kube.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod.DeepCopy(),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil || !strings.Contains(err.Error(), "not ready") {
			return got, err
		}
		time.Sleep(time.Second)
	}
	return got, err
}

func checkInjection(t *testing.T, title string, expect []assertion, got *corev1.Pod, err error) {
	t.Helper()
	if len(expect) == 1 && expect[0].Rejected {
		if err == nil {
			t.Fatalf("%s: want the pod rejected, it was admitted", title)
		}
		if !strings.Contains(err.Error(), expect[0].MessageContains) {
			t.Errorf("%s: error %q does not contain %q", title, err, expect[0].MessageContains)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: create pod: %v", title, err)
	}
	doc := normalize(got)
	variants := map[string][]error{}
	for _, a := range expect {
		err := a.check(doc)
		if a.Variant != "" {
			variants[a.Variant] = append(variants[a.Variant], err)
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", title, err)
		}
	}
	if len(variants) > 0 && !oneVariantPasses(variants) {
		t.Errorf("%s: no variant group passes: %v", title, variants)
	}
}

func oneVariantPasses(groups map[string][]error) bool {
	passing := 0
	for _, errs := range groups {
		ok := true
		for _, err := range errs {
			ok = ok && err == nil
		}
		if ok {
			passing++
		}
	}
	return passing == 1
}

// applyNamespaces creates the namespaces of a YAML file, or updates their labels.
func applyNamespaces(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, doc := range strings.Split(string(data), "\n---") {
		ns := &corev1.Namespace{}
		if err := yaml.Unmarshal([]byte(doc), ns); err != nil || ns.Name == "" {
			continue
		}
		cur, err := kube.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		} else if err == nil {
			cur.Labels = ns.Labels
			_, err = kube.CoreV1().Namespaces().Update(ctx, cur, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().ServiceAccounts("sidecarset-acc").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}
