package e2e

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sidecarset/apiserver/pkg/admission/policy"
	"github.com/sidecarset/apiserver/pkg/admission/policy/policytest"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// TestPolicyDifferential runs a generated corpus (E2E_POLICY_CASES, default 500) of SidecarSets and
// pods through the real kube-apiserver twice: first with the SidecarSets stored in this server and
// injected by its webhook, then with the SidecarSets deleted and their compiled
// MutatingAdmissionPolicies installed instead, evaluated inside kube-apiserver. Every pod must come
// out the same, except for the volume and pull-secret order across SidecarSets (name-keyed lists)
// and the hash entries' updateTimestamp (a policy stamps its compile time). Pods the policies leave
// to the webhook (they declare a sidecar's name) must not be touched by those policies.
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
	deletePolicies(t)
	t.Cleanup(func() { deletePolicies(t) })
	for i := 0; i < 2; i++ {
		ensureLabelledNamespace(t, g.Namespace(i))
	}

	stored := storeCorpus(t, cases)
	webhook := dryRunAll(t, cases)
	deleteAllSidecarSets(t)
	waitNotInjected(t, cases[0].Pod)

	objects := compileCorpus(t, stored)
	installPolicies(t, objects)
	deferring := map[int]map[string]bool{}
	for _, c := range cases {
		deferring[c.ID] = deferringSets(c, stored)
	}
	var diffs []string
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
		diffs = comparePolicyAnswers(t, cases, webhook, deferring)
		return len(diffs) == 0, nil
	})
	if err != nil {
		t.Fatalf("%d of %d cases differ between the webhook and the policies; first:\n%s", len(diffs), n, diffs[0])
	}
	deferred := 0
	for _, d := range deferring {
		if len(d) > 0 {
			deferred++
		}
	}
	t.Logf("%d cases, %d SidecarSets, %d policies: identical pods (%d cases left to the webhook by the policies)", n, len(stored), len(objects), deferred)
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
	var stored []*v1alpha1.SidecarSet
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := client.List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != len(sets) {
			return false, nil
		}
		stored = stored[:0]
		for i := range list.Items {
			if list.Items[i].Status.ObservedGeneration != list.Items[i].Generation {
				return false, nil
			}
			stored = append(stored, &list.Items[i])
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("SidecarSets not settled: %v", err)
	}
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

// waitNotInjected waits until the webhook, its SidecarSets gone, injects nothing into pod.
func waitNotInjected(t *testing.T, pod *corev1.Pod) {
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		got, err := createPodDryRun(pod)
		return err == nil && got.Annotations[sidecar.InjectedListAnnotation] == "", nil
	})
	if err != nil {
		t.Fatalf("the webhook still injects after the SidecarSets were deleted: %v", err)
	}
}

// compileCorpus compiles every stored SidecarSet against all the others.
func compileCorpus(t *testing.T, stored []*v1alpha1.SidecarSet) []policy.Result {
	var out []policy.Result
	for i, ss := range stored {
		others := append(append([]*v1alpha1.SidecarSet(nil), stored[:i]...), stored[i+1:]...)
		r, err := policy.Compile(policy.Input{SidecarSet: ss, Others: others, ExcludedNamespaces: []string{"kube-system", "kruise-system"}, Stamp: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		if r.Path != policy.PathPolicy {
			t.Fatalf("SidecarSet %s: path %s (%s: %s), want Policy", ss.Name, r.Path, r.Reason, r.Message)
		}
		out = append(out, r)
	}
	return out
}

func installPolicies(t *testing.T, objects []policy.Result) {
	ar := kube.AdmissionregistrationV1()
	parallel(t, len(objects), func(i int) error {
		if _, err := ar.MutatingAdmissionPolicies().Create(context.Background(), objects[i].Policy, metav1.CreateOptions{}); err != nil {
			return err
		}
		_, err := ar.MutatingAdmissionPolicyBindings().Create(context.Background(), objects[i].Binding, metav1.CreateOptions{})
		return err
	})
}

func deletePolicies(t *testing.T) {
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: policy.ManagedByLabel + "=" + policy.ManagedByValue}
	ar := kube.AdmissionregistrationV1()
	if err := ar.MutatingAdmissionPolicyBindings().DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		t.Fatal(err)
	}
	if err := ar.MutatingAdmissionPolicies().DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		t.Fatal(err)
	}
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

// deferringSets returns the SidecarSets of case c whose policies leave its pod to the webhook.
func deferringSets(c policytest.Case, stored []*v1alpha1.SidecarSet) map[string]bool {
	out := map[string]bool{}
	for i, ss := range stored {
		for _, mine := range c.Sets {
			if mine.Name != ss.Name {
				continue
			}
			others := append(append([]*v1alpha1.SidecarSet(nil), stored[:i]...), stored[i+1:]...)
			if policy.Defers(ss, others, c.Pod) {
				out[ss.Name] = true
			}
		}
	}
	return out
}

// comparePolicyAnswers dry-runs every case with the policies installed and returns the cases
// whose pod differs from the webhook's.
func comparePolicyAnswers(t *testing.T, cases []policytest.Case, webhook []*corev1.Pod, deferring map[int]map[string]bool) []string {
	got := dryRunAll(t, cases)
	var diffs []string
	for i, c := range cases {
		if d := deferring[c.ID]; len(d) > 0 {
			list := got[i].Annotations[sidecar.InjectedListAnnotation]
			for name := range d {
				if sidecar.InjectedListHas(got[i].Annotations, name) {
					diffs = append(diffs, fmt.Sprintf("case %d: deferring SidecarSet %s injected by its policy (injected list %q)", c.ID, name, list))
				}
			}
			continue
		}
		if diff := cmp.Diff(comparable(webhook[i]), comparable(got[i])); diff != "" {
			diffs = append(diffs, fmt.Sprintf("case %d (-webhook +policy):\n%s", c.ID, diff))
		}
	}
	return diffs
}

var updateTimestamp = regexp.MustCompile(`"updateTimestamp":"[^"]*"`)

// comparable drops what differs between two admissions of the same pod by design: server-set
// identity, the hash entries' timestamps, and the order of name-keyed volumes and pull secrets.
func comparable(pod *corev1.Pod) *corev1.Pod {
	pod = pod.DeepCopy()
	pod.UID, pod.CreationTimestamp, pod.ManagedFields = "", metav1.Time{}, nil
	for _, k := range []string{sidecar.HashAnnotation, sidecar.HashWithoutImageAnnotation} {
		if v, ok := pod.Annotations[k]; ok {
			pod.Annotations[k] = updateTimestamp.ReplaceAllString(v, `"updateTimestamp":""`)
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
