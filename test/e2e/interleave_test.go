package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/sidecarset/apiserver/pkg/admission/policy/policytest"
	"github.com/sidecarset/apiserver/pkg/admission/policy/webhookconfig"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/injectionsync"
	clientset "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
)

// TestPolicyDifferentialWhileWriting is the policy differential with SidecarSets written while
// pods are created: a fixed, seeded sequence of writes (policytest.Interleaved, E2E_INTERLEAVED_STEPS,
// default 28: creates, image and selector changes, canaries added to and removed from their
// bases, deletes), each followed at once, as soon as it returns, by server-side dry-run creates of
// pods the written SidecarSet selects (or selected), pods others select and one none selects,
// with a drawn pause before the next write; one delete waits until the server has closed the
// intake first. The sequence runs in webhook mode, then from a clean slate in policy mode, and
// each pod of each step must come out of policy mode as it came out of webhook mode (compared as
// TestPolicyDifferential compares), but for the pull secrets of a SidecarSet that a policy
// kube-apiserver had not reloaded injected and the webhook took out again (they may be the pod's
// own: docs/policy-injection.md). In both modes each answer must keep the promise of
// docs/policy-injection.md: a pod created once a SidecarSet's write has returned carries every
// SidecarSet that applies to it (selects it, and no canary of it does) at the version its last
// write returned (its hash and images) and no other, deleted ones included, and no pod is refused
// (a sidecar injected twice is refused with "Duplicate value").
func TestPolicyDifferentialWhileWriting(t *testing.T) {
	g := policytest.New(2)
	g.Namespaces = [2]string{"interleave-ns0", "interleave-ns1"}
	// Most writes follow the previous step at once; some wait for the policies to catch up.
	pauses := []time.Duration{0, 0, 300 * time.Millisecond, time.Second}
	steps := g.Interleaved(envInt("E2E_INTERLEAVED_STEPS", 28), "iw", pauses)
	start := time.Now()
	deleteAllSidecarSets(t)
	for i := 0; i < 2; i++ {
		ensureLabelledNamespace(t, g.Namespace(i))
	}
	restartServer(t, "webhook")
	inPolicyMode := false
	// The next test starts in policy mode once the server has deleted the sequence's policies.
	t.Cleanup(func() {
		deleteAllSidecarSets(t)
		if !inPolicyMode {
			restartServer(t, "policy")
		}
		waitOwnedPolicies(t, 0)
	})
	webhookAt := time.Now()
	webhookRun := runInterleaved(t, "webhook", g, steps)

	switchAt := time.Now()
	deleteAllSidecarSets(t)
	restartServer(t, "policy")
	inPolicyMode = true
	waitOwnedPolicies(t, 0)
	policyAt := time.Now()
	policyRun := runInterleaved(t, "policy", g, steps)
	t.Logf("set up and webhook mode %v, sequence %v; clean slate and policy mode %v, sequence %v",
		webhookAt.Sub(start).Round(time.Second/10), switchAt.Sub(webhookAt).Round(time.Second/10),
		policyAt.Sub(switchAt).Round(time.Second/10), time.Since(policyAt).Round(time.Second/10))

	var differ, diffs []string
	live := map[string]*v1alpha1.SidecarSet{}
	var written []*v1alpha1.SidecarSet
	secretsLeft := 0
	for i, st := range steps {
		written = append(written, st.Set)
		if st.Op == policytest.OpDelete || st.Op == policytest.OpUncanary {
			delete(live, st.Set.Name)
		} else {
			live[st.Set.Name] = st.Set
		}
		for k, pod := range st.Pods {
			want, got := webhookRun.answers[i][k], policyRun.answers[i][k]
			if want.pod != nil && got.pod != nil {
				var n int
				got.pod, n = withoutSecretsLeft(got.pod, want.pod, withdrawnSecrets(g, written, live, pod))
				secretsLeft += n
			}
			if diff := cmp.Diff(want.comparable(), got.comparable()); diff != "" {
				what := fmt.Sprintf("step %d (%s %s), pod %s/%s labels %v", i, st.Op, st.Set.Name, pod.Namespace, pod.Name, pod.Labels)
				differ = append(differ, what)
				diffs = append(diffs, fmt.Sprintf("%s (-webhook mode +policy mode):\n%s", what, diff))
			}
		}
	}
	if len(diffs) > 0 {
		t.Errorf("%d pods differ between webhook and policy mode:\n%s\nthe first ones:\n%s", len(diffs), strings.Join(differ, "\n"), strings.Join(diffs[:min(len(diffs), 3)], "\n"))
	}
	pods := 0
	for _, st := range steps {
		pods += len(st.Pods)
	}
	t.Logf("%d writes, %d pods: webhook mode %s, policy mode %s; %d pull secrets of withdrawn SidecarSets left in policy mode",
		len(steps), pods, webhookRun, policyRun, secretsLeft)
	if policyRun.maxServed == 0 {
		t.Errorf("the policies never served a SidecarSet while the sequence ran: it compared the webhook with itself")
	}
}

// withdrawnSecrets returns the pull secrets of the SidecarSets written so far (any version) that
// do not apply to pod now. A policy kube-apiserver had not reloaded may have injected such a
// SidecarSet; the webhook then takes it out of the pod again but for its pull secrets, which may
// be the pod's own (docs/policy-injection.md).
func withdrawnSecrets(g *policytest.Corpus, written []*v1alpha1.SidecarSet, live map[string]*v1alpha1.SidecarSet, pod *corev1.Pod) map[string]bool {
	applies := applying(g, live, pod)
	out := map[string]bool{}
	for _, ss := range written {
		if applies[ss.Name] == nil {
			for _, s := range ss.Spec.ImagePullSecrets {
				out[s.Name] = true
			}
		}
	}
	return out
}

// withoutSecretsLeft returns got without the pull secrets that want lacks and left names, and how
// many it dropped.
func withoutSecretsLeft(got, want *corev1.Pod, left map[string]bool) (*corev1.Pod, int) {
	had := map[string]bool{}
	for _, s := range want.Spec.ImagePullSecrets {
		had[s.Name] = true
	}
	got = got.DeepCopy()
	n := len(got.Spec.ImagePullSecrets)
	got.Spec.ImagePullSecrets = slices.DeleteFunc(got.Spec.ImagePullSecrets, func(s corev1.LocalObjectReference) bool {
		return !had[s.Name] && left[s.Name]
	})
	n -= len(got.Spec.ImagePullSecrets)
	if len(got.Spec.ImagePullSecrets) == 0 {
		got.Spec.ImagePullSecrets = nil
	}
	return got, n
}

// interleavedRun is what one run of the sequence saw.
type interleavedRun struct {
	answers   [][]podAnswer // per step, per pod
	writes    []time.Duration
	took      time.Duration
	served    int // steps whose pods were created while the server's policies served a SidecarSet
	maxServed int // the most SidecarSets its policies served when a step's pods were created
}

func (r interleavedRun) String() string {
	w := slices.Clone(r.writes)
	slices.Sort(w)
	return fmt.Sprintf("%v (writes %v median, %v at most; policies served SidecarSets at %d steps, up to %d)",
		r.took.Round(time.Millisecond), w[len(w)/2].Round(time.Millisecond), w[len(w)-1].Round(time.Millisecond), r.served, r.maxServed)
}

// podAnswer is kube-apiserver's answer to one dry-run pod create.
type podAnswer struct {
	pod *corev1.Pod
	err string
}

func (a podAnswer) comparable() any {
	if a.pod == nil {
		return a.err
	}
	return comparablePod(a.pod)
}

// runInterleaved runs steps from an empty cluster and returns the answers, once it has checked
// each against the promise (checkWhileWriting).
func runInterleaved(t *testing.T, mode string, g *policytest.Corpus, steps []policytest.Step) interleavedRun {
	t.Helper()
	ctx := context.Background()
	run := interleavedRun{answers: make([][]podAnswer, len(steps))}
	live := map[string]*v1alpha1.SidecarSet{} // as the writes returned them
	start := time.Now()
	for i, st := range steps {
		if st.Quiet {
			waitIntakeClosed(t)
		}
		began := time.Now()
		stored, err := writeStep(ctx, st)
		if err != nil {
			t.Fatalf("%s mode, step %d: %s of %s: %v", mode, i, st.Op, st.Set.Name, err)
		}
		run.writes = append(run.writes, time.Since(began))
		if stored == nil {
			delete(live, st.Set.Name)
		} else {
			live[st.Set.Name] = stored
		}
		run.answers[i] = dryRunBatch(st.Pods)
		if mode == "policy" {
			owned, err := ownedPolicySidecarSets(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if owned.Len() > 0 {
				run.served++
			}
			run.maxServed = max(run.maxServed, owned.Len())
		}
		for _, e := range checkWhileWriting(g, st, live, run.answers[i]) {
			t.Errorf("%s mode, step %d (%s %s): %s", mode, i, st.Op, st.Set.Name, e)
		}
		time.Sleep(st.Pause) // the sequence's own pacing: a pause between writes is part of the scenario, not a wait
	}
	run.took = time.Since(start)
	return run
}

// waitIntakeClosed waits until the server has removed the intake webhooks, which send every pod to
// it while SidecarSet writes are recent (docs/policy-injection.md).
func waitIntakeClosed(t *testing.T) {
	t.Helper()
	eventually(t, "the intake webhooks removed", 3*time.Minute, func(ctx context.Context) (bool, string) {
		cfg, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, injectionsync.IntakeWebhooks("sidecarset-injector"), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		_, open := webhookconfig.SplitIntake(cfg.Webhooks)
		return len(open) == 0, fmt.Sprintf("%d intake webhooks, held until %s", len(open), cfg.Annotations[apps.IntakeUntilAnnotation])
	})
}

// writeStep applies the step's write and returns the SidecarSet as the server returned it (nil
// for a delete).
func writeStep(ctx context.Context, st policytest.Step) (*v1alpha1.SidecarSet, error) {
	client := quietSidecars().AppsV1alpha1().SidecarSets()
	switch st.Op {
	case policytest.OpCreate, policytest.OpCanary:
		return client.Create(ctx, st.Set.DeepCopy(), metav1.CreateOptions{})
	case policytest.OpUncanary, policytest.OpDelete:
		return nil, client.Delete(ctx, st.Set.Name, metav1.DeleteOptions{})
	}
	var out *v1alpha1.SidecarSet
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := client.Get(ctx, st.Set.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		switch st.Op {
		case policytest.OpImage:
			cur.Spec.Containers[0].Image = st.Set.Spec.Containers[0].Image
		case policytest.OpSelector:
			cur.Spec.Selector = st.Set.Spec.Selector.DeepCopy()
		}
		out, err = client.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	return out, err
}

// dryRunBatch creates every pod at once (server-side dry run, one try each) and returns the
// answers in order.
func dryRunBatch(pods []*corev1.Pod) []podAnswer {
	quiet := quietKube()
	out := make([]podAnswer, len(pods))
	var wg sync.WaitGroup
	for k, pod := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := quiet.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod.DeepCopy(),
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				out[k] = podAnswer{err: err.Error()}
				return
			}
			out[k] = podAnswer{pod: got}
		}()
	}
	wg.Wait()
	return out
}

// quietKube and quietSidecars are kube and sidecars without the warnings printed (a SidecarSet
// volume the pod already has, a hostPath volume: hundreds of times a run).
var (
	quietKube = sync.OnceValue(func() kubernetes.Interface {
		return kubernetes.NewForConfigOrDie(quietConfig())
	})
	quietSidecars = sync.OnceValue(func() clientset.Interface {
		return clientset.NewForConfigOrDie(quietConfig())
	})
)

func quietConfig() *rest.Config {
	cfg := rest.CopyConfig(restConfig)
	cfg.WarningHandler = rest.NoWarnings{}
	return cfg
}

// checkWhileWriting returns how the answers to a step's pods break the promise: every SidecarSet
// written before (live, as its write returned it) that applies to a pod (it selects the pod and no
// canary of it does) is in the pod at the version its write returned (hash and images), and no
// other SidecarSet is, deleted ones included; no pod is refused. Selection is read with
// apimachinery's selectors.
func checkWhileWriting(g *policytest.Corpus, st policytest.Step, live map[string]*v1alpha1.SidecarSet, answers []podAnswer) []string {
	var out []string
	for k, a := range answers {
		if a.pod == nil {
			out = append(out, fmt.Sprintf("pod %s refused: %s", st.Pods[k].Name, a.err))
			continue
		}
		pod := a.pod
		hashes, err := podHashes(pod)
		if err != nil {
			out = append(out, fmt.Sprintf("pod %s: %v", pod.Name, err))
			continue
		}
		want := applying(g, live, pod)
		for _, name := range slices.Sorted(maps.Keys(hashes)) {
			if want[name] == nil {
				why := "which does not apply to it"
				if live[name] == nil {
					why = "deleted before it was created"
				}
				out = append(out, fmt.Sprintf("pod %s (labels %v in %s) carries %s, %s", pod.Name, pod.Labels, pod.Namespace, name, why))
			}
		}
		for _, name := range slices.Sorted(maps.Keys(want)) {
			ss := want[name]
			e, injected := hashes[name]
			if w := ss.Annotations["kruise.io/sidecarset-hash"]; !injected || e.Hash != w {
				out = append(out, fmt.Sprintf("pod %s (labels %v in %s) carries %s at hash %q (injected %v), want %q: the version its write returned",
					pod.Name, pod.Labels, pod.Namespace, name, e.Hash, injected, w))
				continue
			}
			for _, c := range ss.Spec.Containers {
				i := slices.IndexFunc(pod.Spec.Containers, func(p corev1.Container) bool { return p.Name == c.Name })
				if i < 0 || pod.Spec.Containers[i].Image != c.Image {
					out = append(out, fmt.Sprintf("pod %s lacks sidecar %s of %s with image %s", pod.Name, c.Name, name, c.Image))
				}
			}
		}
	}
	return out
}

// applying returns the live SidecarSets that apply to pod: those that select it but the bases
// of live canaries that select it.
func applying(g *policytest.Corpus, live map[string]*v1alpha1.SidecarSet, pod *corev1.Pod) map[string]*v1alpha1.SidecarSet {
	out := map[string]*v1alpha1.SidecarSet{}
	for name, ss := range live {
		if selectsPod(g, ss, pod) {
			out[name] = ss
		}
	}
	for _, c := range live {
		if base, ok := apps.CanaryBase(c.Annotations); ok && out[c.Name] != nil {
			delete(out, base)
		}
	}
	return out
}

// podHashEntry is the part of an entry of the pod's hash annotation the checks read.
type podHashEntry struct {
	Hash string `json:"hash"`
}

// podHashes reads the pod's hash annotation (kruise.io/sidecarset-hash): an entry per SidecarSet
// injected.
func podHashes(pod *corev1.Pod) (map[string]podHashEntry, error) {
	out := map[string]podHashEntry{}
	v, ok := pod.Annotations["kruise.io/sidecarset-hash"]
	if !ok {
		return out, nil
	}
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return nil, fmt.Errorf("hash annotation %q: %w", v, err)
	}
	return out, nil
}

// selectsPod reports whether ss's selector and namespace restriction (spec.namespace, which wins,
// or namespaceSelector) select pod, in one of g's namespaces.
func selectsPod(g *policytest.Corpus, ss *v1alpha1.SidecarSet, pod *corev1.Pod) bool {
	sel, err := metav1.LabelSelectorAsSelector(ss.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
		return false
	}
	if ss.Spec.Namespace != "" {
		return ss.Spec.Namespace == pod.Namespace
	}
	if ss.Spec.NamespaceSelector == nil {
		return true
	}
	ns, err := metav1.LabelSelectorAsSelector(ss.Spec.NamespaceSelector)
	if err != nil {
		return false
	}
	for i := 0; i < 2; i++ {
		if n := g.Namespace(i); n.Name == pod.Namespace {
			return ns.Matches(labels.Set(n.Labels))
		}
	}
	return false
}
