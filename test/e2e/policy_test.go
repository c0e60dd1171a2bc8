package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/admission/policy/policytest"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// TestPolicyDifferential runs a generated corpus (E2E_POLICY_CASES, default 500: 1,256
// SidecarSets, whose group policies kube-apiserver must admit within its request timeout) of
// SidecarSets and
// pods through the real kube-apiserver in both injection modes of the server: webhook (the
// webhook injects every SidecarSet), then policy (the server compiles each SidecarSet into a
// MutatingAdmissionPolicy evaluated inside kube-apiserver and keeps the webhook's match
// condition current; pods that declare a sidecar's name still reach the webhook). Every pod must
// come out the same, except for the order of volumes and pull secrets across SidecarSets
// (name-keyed lists) and the hash entries' updateTimestamp (a policy stamps its compile time).
func TestPolicyDifferential(t *testing.T) {
	n := envInt("E2E_POLICY_CASES", 500)
	g := policytest.New(7)
	g.Namespaces = [2]string{"policy-ns0", "policy-ns1"}
	g.CaseLabel = "policy-case"
	cases := make([]policytest.Case, n)
	for i := range cases {
		cases[i] = g.Next(i)
	}
	deleteAllSidecarSets(t)
	for i := 0; i < 2; i++ {
		ensureLabelledNamespace(t, g.Namespace(i))
	}
	restartServer(t, "webhook")
	// The next test starts once the server has deleted the corpus's policies.
	t.Cleanup(func() { deleteAllSidecarSets(t); restartServer(t, "policy"); waitOwnedPolicies(t, 0) })
	waitOwnedPolicies(t, 0)
	stored := storeCorpus(t, cases)
	webhook := dryRunAll(t, cases)

	restartServer(t, "policy")
	// Each SidecarSet's Injected condition says which path serves it; the policies the server
	// owns must inject exactly those on the Policy path, and enough of them to prove something.
	served := len(policyServedSidecarSets(t, stored))
	waitOwnedPolicies(t, served) // and each policy has its binding
	// Every second: each try dry-runs every case.
	eventuallyEvery(t, "identical pods in webhook and policy mode", time.Second, 2*time.Minute, func(context.Context) (bool, string) {
		diffs := compareAnswers(cases, webhook, dryRunAll(t, cases))
		if len(diffs) == 0 {
			return true, ""
		}
		return false, fmt.Sprintf("%d of %d cases differ; first:\n%s", len(diffs), n, diffs[0])
	})
	t.Logf("%d cases, %d SidecarSets, %d served by policies: identical pods in both modes", n, len(stored), served)
	checkPolicyAdmission(t, maxPolicyAdmission)
}

// maxPolicyAdmission is the longest kube-apiserver may take to admit one of the server's policies
// while the suite's other clusters share the machine (BenchmarkPolicyCompile measures the compile
// alone; kube-apiserver's request timeout, which policies of the whole corpus once exceeded, is 60 s).
const maxPolicyAdmission = 10 * time.Second

// checkPolicyAdmission creates a copy of every policy the server owns, dry-run, one at a time:
// kube-apiserver validates (compiles and cost-checks) each as when the server writes it. It logs
// the times and fails when one takes longer than limit.
func checkPolicyAdmission(t *testing.T, limit time.Duration) {
	t.Helper()
	ctx := context.Background()
	maps := kube.AdmissionregistrationV1().MutatingAdmissionPolicies()
	list, err := maps.List(ctx, metav1.ListOptions{LabelSelector: apps.ManagedByLabel + "=" + apps.ManagedByValue})
	if err != nil {
		t.Fatal(err)
	}
	times := make([]time.Duration, 0, len(list.Items))
	for i := range list.Items {
		p := list.Items[i].DeepCopy()
		p.ObjectMeta = metav1.ObjectMeta{Name: "admission-check-" + p.Name}
		start := time.Now()
		if _, err := maps.Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatalf("dry-run create of a copy of policy %s: %v", list.Items[i].Name, err)
		}
		took := time.Since(start)
		times = append(times, took)
		if took > limit {
			t.Errorf("kube-apiserver took %v to admit a copy of policy %s, more than %v", took.Round(time.Millisecond), list.Items[i].Name, limit)
		}
	}
	slices.Sort(times)
	if len(times) > 0 {
		t.Logf("kube-apiserver admits each of the %d policies in %v (median), %v at most",
			len(times), times[len(times)/2].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond))
	}
}

// TestPolicyInjectionWithoutServer stops this server and its etcd in policy mode: a matching pod
// is still created with its sidecars exactly as before, and a pod nothing matches too. Once the
// server is back, a policy deleted by hand meanwhile is restored and a SidecarSet change takes
// effect.
func TestPolicyInjectionWithoutServer(t *testing.T) {
	deleteAllSidecarSets(t)
	applyManualExample(t)
	waitOwnedPolicies(t, 1)
	pod := nginxPod("default", fmt.Sprintf("outage-%d", time.Now().UnixNano()))
	before := waitInjected(t, pod, "sidecar1")
	waitWebhookLeavesLabels(t)
	checkInjectionPath(t, "test-sidecarset", apps.PathPolicy, apps.ReasonCompiled)
	ctx := context.Background()
	view, err := sidecars.AppsV1alpha1().SidecarSets().GetRollout(ctx, "test-sidecarset", metav1.GetOptions{})
	if err != nil || view.Status.Injection == nil || view.Status.Injection.Policy == "" {
		t.Fatalf("/rollout names no policy for test-sidecarset: %+v, %v", view, err)
	}
	name := view.Status.Injection.Policy

	if _, err := localUp("stop-server"); err != nil {
		t.Fatal(err)
	}
	restarted := false
	defer func() {
		if !restarted {
			_, _ = localUp("start-server")
		}
	}()
	created, err := kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a matching pod with the server down: %v", err)
	}
	defer func(name string) {
		_ = kube.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		waitGone(t, "default", name) // the manual example's other tests count its pods
	}(pod.Name)
	if diff := cmp.Diff(comparablePod(before), comparablePod(created)); diff != "" {
		t.Fatalf("pod created with the server down differs from the one created with it up (-up +down):\n%s", diff)
	}
	plain := pod.DeepCopy()
	plain.Name, plain.Labels = pod.Name+"-plain", map[string]string{"app": "other"}
	if _, err := kube.CoreV1().Pods("default").Create(ctx, plain, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("creating a pod nothing matches with the server down: %v", err)
	}
	if err := kube.AdmissionregistrationV1().MutatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	if _, err := localUp("start-server"); err != nil {
		t.Fatal(err)
	}
	restarted = true
	waitOwnedPolicies(t, 1)
	waitSettled(t, "test-sidecarset")
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ss, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, "test-sidecarset", metav1.GetOptions{})
		if err != nil {
			return err
		}
		ss.Spec.Containers[0].Image = "centos:7"
		_, err = sidecars.AppsV1alpha1().SidecarSets().Update(ctx, ss, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "policy "+name+" to follow the SidecarSet change to centos:7", time.Minute, func(ctx context.Context) (bool, string) {
		p, err := kube.AdmissionregistrationV1().MutatingAdmissionPolicies().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		// The sidecars' literals are in the policy's variables (its inserts) or its mutations.
		var exprs []string
		for _, v := range p.Spec.Variables {
			exprs = append(exprs, v.Expression)
		}
		for _, m := range p.Spec.Mutations {
			exprs = append(exprs, m.JSONPatch.Expression)
		}
		expr := strings.Join(exprs, "\n")
		return strings.Contains(expr, `"centos:7"`), "expressions " + expr
	})
	pod.Name += "-after"
	waitInjectedImage(t, pod, "sidecar1", "centos:7")
}

// checkInjectionPath checks the path the /rollout view reports for a SidecarSet, its Injected
// condition once its generation is observed (True with the path as reason, or False when nothing
// injects), and the PATH column of `kubectl get -o wide`. The view reports what the leader
// decided: after a restart, what the previous leader recorded until the new one has planned, so
// it is awaited.
func checkInjectionPath(t *testing.T, name string, path apps.InjectionPath, reason string) {
	t.Helper()
	eventually(t, fmt.Sprintf("/rollout of %s with injection path %s reason %s", name, path, reason), time.Minute, func(ctx context.Context) (bool, string) {
		view, err := sidecars.AppsV1alpha1().SidecarSets().GetRollout(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		in := view.Status.Injection
		return in != nil && in.Path == string(path) && in.Reason == reason, fmt.Sprintf("injection %+v", in)
	})
	want, wantReason := metav1.ConditionTrue, string(path)
	if path == apps.PathNone {
		want, wantReason = metav1.ConditionFalse, reason
	}
	eventually(t, fmt.Sprintf("condition Injected of %s with status %s reason %s", name, want, wantReason), 30*time.Second, func(ctx context.Context) (bool, string) {
		ss, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := apimeta.FindStatusCondition(ss.Status.Conditions, "Injected")
		return c != nil && c.ObservedGeneration == ss.Generation && c.Status == want && c.Reason == wantReason &&
			(path != apps.PathWebhook || strings.Contains(c.Message, reason)), fmt.Sprintf("generation %d, condition %+v", ss.Generation, c)
	})
	out, err := runKubectl(t, "", "get", "sidecarset", name, "-o", "wide", "--no-headers")
	if fields := strings.Fields(out); err != nil || len(fields) == 0 || fields[len(fields)-1] != string(path) {
		t.Errorf("kubectl get sidecarset %s -o wide: %q (%v), want PATH %s last", name, out, err, path)
	}
}

// restartServer restarts this server in the given injection mode (later restarts keep it).
// restartServerWithArgs restarts the server with extra flags (SERVER_ARGS) and, when the test
// ends, restarts it again without them. Serial tests only.
func restartServerWithArgs(t *testing.T, args string) {
	t.Helper()
	t.Setenv("SERVER_ARGS", args)
	if _, err := localUp("restart-server"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = os.Unsetenv("SERVER_ARGS")
		if _, err := localUp("restart-server"); err != nil {
			t.Error(err)
		}
	})
}

func restartServer(t *testing.T, mode string) {
	t.Helper()
	serialOnly(t, "restarting the server")
	if err := os.Setenv("SERVER_INJECTION", mode); err != nil {
		t.Fatal(err)
	}
	if _, err := localUp("restart-server"); err != nil {
		t.Fatal(err)
	}
}

// storeCorpus creates every case's SidecarSets in the server and returns them as stored
// (defaulted, with their hash annotations), once the controller has seen them.
func storeCorpus(t *testing.T, cases []policytest.Case) []*v1alpha1.SidecarSet {
	var sets []*v1alpha1.SidecarSet
	for _, c := range cases {
		sets = append(sets, c.Sets...)
	}
	client := sidecars.AppsV1alpha1().SidecarSets()
	parallel(t, len(sets), func(i int) error {
		_, err := client.Create(context.Background(), sets[i], metav1.CreateOptions{})
		return err
	})
	// Each try lists the whole corpus (megabytes through the aggregation layer), so it polls
	// every 2 s rather than loading the control plane it waits for; settling is one status
	// write per SidecarSet, minutes on a loaded 2-core machine.
	var stored []*v1alpha1.SidecarSet
	eventuallyEvery(t, fmt.Sprintf("the corpus's %d SidecarSets stored and settled", len(sets)), 2*time.Second, 4*time.Minute, func(ctx context.Context) (bool, string) {
		list, err := client.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		if len(list.Items) != len(sets) {
			return false, fmt.Sprintf("%d SidecarSets stored", len(list.Items))
		}
		stored = stored[:0]
		for i := range list.Items {
			if ss := &list.Items[i]; ss.Status.ObservedGeneration != ss.Generation {
				return false, fmt.Sprintf("%s at generation %d observed %d", ss.Name, ss.Generation, ss.Status.ObservedGeneration)
			}
			stored = append(stored, &list.Items[i])
		}
		return true, ""
	})
	return stored
}

// dryRunAll returns each case's pod as kube-apiserver admits it (server-side dry run).
func dryRunAll(t *testing.T, cases []policytest.Case) []*corev1.Pod {
	out := make([]*corev1.Pod, len(cases))
	parallel(t, len(cases), func(i int) error {
		pod, err := createPodDryRun(cases[i].Pod)
		out[i] = pod
		return err
	})
	return out
}

func ensureLabelledNamespace(t *testing.T, ns *corev1.Namespace) {
	_, err := kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = kube.CoreV1().Namespaces().Update(context.Background(), ns, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// compareAnswers returns the cases whose pod differs between the two answers.
func compareAnswers(cases []policytest.Case, want, got []*corev1.Pod) []string {
	var diffs []string
	for i, c := range cases {
		if diff := cmp.Diff(comparablePod(want[i]), comparablePod(got[i])); diff != "" {
			diffs = append(diffs, fmt.Sprintf("case %d (-webhook mode +policy mode):\n%s", c.ID, diff))
		}
	}
	return diffs
}

var (
	updateTimestamp    = regexp.MustCompile(`"updateTimestamp":"[^"]*"`)
	controllerRevision = regexp.MustCompile(`,"controllerRevision":"[^"]*"`)
)

// comparablePod drops what differs between two admissions of the same pod by design: server-set
// identity, the hash entries' timestamps and revision names (an entry names its SidecarSet's
// revision only once the controller has recorded it, which a pod admitted right after the
// SidecarSet's creation may precede), and the order of name-keyed volumes and pull secrets.
func comparablePod(pod *corev1.Pod) *corev1.Pod {
	pod = pod.DeepCopy()
	pod.ObjectMeta = metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, Labels: pod.Labels, Annotations: pod.Annotations}
	pod.Status = corev1.PodStatus{}
	for _, k := range []string{sidecar.HashAnnotation, sidecar.HashWithoutImageAnnotation} {
		if v, ok := pod.Annotations[k]; ok {
			pod.Annotations[k] = controllerRevision.ReplaceAllString(updateTimestamp.ReplaceAllString(v, `"updateTimestamp":""`), "")
		}
	}
	sort.SliceStable(pod.Spec.Volumes, func(i, j int) bool { return pod.Spec.Volumes[i].Name < pod.Spec.Volumes[j].Name })
	sort.SliceStable(pod.Spec.ImagePullSecrets, func(i, j int) bool { return pod.Spec.ImagePullSecrets[i].Name < pod.Spec.ImagePullSecrets[j].Name })
	return pod
}

// parallel runs f for 0..n-1 on 8 workers and fails the test with the first error.
func parallel(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan int)
	)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("item %d: %w", i, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
}

// policyServedSidecarSets waits until the server's policies inject exactly the SidecarSets of
// stored whose Injected condition reports the Policy path, at least a tenth of stored, and both stay
// so for 3 s (the conditions the webhook-mode server left say Webhook until the policy-mode one
// has planned); it returns them.
func policyServedSidecarSets(t *testing.T, stored []*v1alpha1.SidecarSet) sets.Set[string] {
	t.Helper()
	var onPolicy sets.Set[string]
	var stableSince time.Time
	state := "nothing read yet"
	// Every 2 s: each try lists every SidecarSet and policy.
	eventuallyEvery(t, "the policies to inject the SidecarSets on the Policy path", 2*time.Second, 5*time.Minute, func(ctx context.Context) (bool, string) {
		conditions, err := policyPathSidecarSets(ctx, stored)
		if err != nil {
			return false, state + "; then " + err.Error()
		}
		owned, err := ownedPolicySidecarSets(ctx)
		if err != nil {
			return false, state + "; then " + err.Error()
		}
		state = fmt.Sprintf("%d SidecarSets on the Policy path by their conditions, %d injected by the policies (%d in both)",
			len(conditions), len(owned), conditions.Intersection(owned).Len())
		if !conditions.Equal(owned) || len(conditions) < len(stored)/10 {
			stableSince = time.Time{}
			return false, state
		}
		if !conditions.Equal(onPolicy) {
			onPolicy, stableSince = conditions, time.Now()
		}
		return time.Since(stableSince) >= 3*time.Second, state
	})
	return onPolicy
}

// policyPathSidecarSets returns the SidecarSets of stored whose Injected condition reports the
// Policy path.
func policyPathSidecarSets(ctx context.Context, stored []*v1alpha1.SidecarSet) (sets.Set[string], error) {
	list, err := sidecars.AppsV1alpha1().SidecarSets().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	want := sets.New[string]()
	for _, ss := range stored {
		want.Insert(ss.Name)
	}
	out := sets.New[string]()
	for i := range list.Items {
		ss := &list.Items[i]
		c := apimeta.FindStatusCondition(ss.Status.Conditions, v1alpha1.SidecarSetInjected)
		if want.Has(ss.Name) && c != nil && c.Reason == string(apps.PathPolicy) {
			out.Insert(ss.Name)
		}
	}
	return out, nil
}

// ownedPolicySidecarSets returns the SidecarSets the server's policies inject, by their records.
func ownedPolicySidecarSets(ctx context.Context) (sets.Set[string], error) {
	ps, err := kube.AdmissionregistrationV1().MutatingAdmissionPolicies().List(ctx,
		metav1.ListOptions{LabelSelector: apps.ManagedByLabel + "=" + apps.ManagedByValue})
	if err != nil {
		return nil, err
	}
	out := sets.New[string]()
	for i := range ps.Items {
		recs := map[string]json.RawMessage{}
		if err := json.Unmarshal([]byte(ps.Items[i].Annotations[apps.SidecarSetsAnnotation]), &recs); err != nil {
			return nil, fmt.Errorf("policy %s: %w", ps.Items[i].Name, err)
		}
		for name := range recs {
			out.Insert(name)
		}
	}
	return out, nil
}
