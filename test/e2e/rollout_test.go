package e2e

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
	"github.com/sidecarset/apiserver/test/conformance"
)

// rolloutTimeout bounds each `eventually` (the README: 300 s is enough for a real cluster) and
// each wait for pods and Deployments.
const rolloutTimeout = 300 * time.Second

// TestRolloutConformance runs every rollout scenario against the local cluster, whose kwok nodes
// play the kubelet (including in-place image changes and unpullable images).
func TestRolloutConformance(t *testing.T) {
	dirs := scenarioDirs(t, "rollout")
	for _, name := range sortedNames(dirs) {
		t.Run(name, func(t *testing.T) {
			var sc conformance.Scenario
			mustRead(t, filepath.Join(dirs[name], "scenario.yaml"), false, &sc)
			if err := sc.Validate(); err != nil {
				t.Fatalf("scenario.yaml: %v", err)
			}
			newScenarioRun(t, &sc).run()
		})
	}
}

// scenarioRun is the state of one scenario: what setup created, to compare against later.
type scenarioRun struct {
	t           *testing.T
	sc          *conformance.Scenario
	template    corev1.PodTemplateSpec
	namespace   string            // the pod template's namespace (default sidecarset-acc)
	namespaces  []string          // every namespace the scenario's pods may live in
	podNS       map[string]string // pod name -> namespace, for pods the scenario names
	deployments map[string]*deploymentState
	setupUIDs   map[string]types.UID
	setupPaths  map[string]interface{}
}

type deploymentState struct {
	namespace string
	replicas  int32
}

func newScenarioRun(t *testing.T, sc *conformance.Scenario) *scenarioRun {
	r := &scenarioRun{t: t, sc: sc, podNS: map[string]string{}, deployments: map[string]*deploymentState{},
		setupUIDs: map[string]types.UID{}, setupPaths: map[string]interface{}{}}
	if sc.Setup.PodTemplate.Set() {
		if err := conformance.DecodeStrict(sc.Setup.PodTemplate, &r.template); err != nil {
			t.Fatalf("setup.podTemplate: %v", err)
		}
	}
	r.namespace = r.template.Namespace
	if r.namespace == "" {
		r.namespace = commonNamespace
	}
	seen := map[string]bool{}
	add := func(ns string) {
		if ns != "" && !seen[ns] {
			seen[ns] = true
			r.namespaces = append(r.namespaces, ns)
		}
	}
	add(r.namespace)
	for _, ns := range sc.Setup.Namespace {
		add(ns.Name)
	}
	for _, p := range sc.Setup.Pods {
		add(p.Namespace)
	}
	for _, d := range sc.Setup.Deployments {
		add(d.Namespace)
	}
	for _, st := range sc.Steps {
		if st.Action != nil {
			for _, p := range st.Action.CreatePods {
				add(p.Namespace)
			}
		}
	}
	return r
}

func (r *scenarioRun) run() {
	r.setup()
	for i := range r.sc.Steps {
		step := &r.sc.Steps[i]
		r.t.Logf("step %d: %s", i+1, step.Name)
		err := r.act(step)
		if rejected, msg := step.ExpectsRejection(); rejected {
			if err == nil {
				r.t.Fatalf("step %q: want the action rejected, it succeeded", step.Name)
			}
			if !strings.Contains(err.Error(), msg) {
				r.t.Fatalf("step %q: error %q does not contain %q", step.Name, err, msg)
			}
		} else if err != nil {
			r.t.Fatalf("step %q: %v", step.Name, err)
		}
		r.expect(step)
	}
}

// setup starts from a clean slate: no SidecarSets, no pods or Deployments in the scenario's
// namespaces; then the namespaces, SidecarSets, pods and Deployments of setup.
func (r *scenarioRun) setup() {
	t := r.t
	deleteAllSidecarSets(t)
	applyNamespaces(t, filepath.Join(conformanceDir, "common", "namespace.yaml"))
	applyRequirements(t, r.sc.Requires)
	for _, ns := range r.sc.Setup.Namespace {
		setNamespace(t, ns.Name, ns.Labels)
	}
	for _, ns := range r.namespaces {
		setNamespace(t, ns, r.currentLabels(ns))
		cleanNamespace(t, ns)
	}
	if r.sc.Setup.PodsBeforeSidecarSets {
		r.setupPods()
	}
	for i, obj := range r.sc.Setup.SidecarSets {
		ss, err := decodeSidecarSet(obj)
		if err != nil {
			t.Fatalf("setup.sidecarSets[%d]: %v", i, err)
		}
		if err := applySidecarSet(t, ss); err != nil {
			t.Fatalf("apply SidecarSet %s: %v", ss.Name, err)
		}
		waitSettled(t, ss.Name)
	}
	if !r.sc.Setup.PodsBeforeSidecarSets {
		r.setupPods()
	}
	for _, p := range r.scenarioPods("", nil) {
		r.setupUIDs[p.Namespace+"/"+p.Name] = p.UID
	}
	for _, st := range r.sc.Steps {
		for _, f := range st.Expect.Eventually.SidecarSetPaths {
			if f.UnchangedFromSetup {
				v, err := r.sidecarSetPath(f.Name, f.Path)
				if err != nil {
					t.Fatal(err)
				}
				r.setupPaths[f.Name+"\x00"+f.Path] = v
			}
		}
	}
}

// setupPods creates setup.pods, then setup.deployments (both before or both after the
// SidecarSets, as podsBeforeSidecarSets says).
func (r *scenarioRun) setupPods() {
	if err := r.createPods(r.sc.Setup.Pods); err != nil {
		r.t.Fatalf("setup: %v", err)
	}
	for _, d := range r.sc.Setup.Deployments {
		r.createDeployment(d)
	}
}

// currentLabels returns the labels setup.namespace gives a namespace, or the existing ones.
func (r *scenarioRun) currentLabels(name string) map[string]string {
	for _, ns := range r.sc.Setup.Namespace {
		if ns.Name == name {
			return ns.Labels
		}
	}
	cur, err := kube.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return cur.Labels
}

// createPods creates the pods in createOrder, each after the previous one runs (and is ready
// unless it is meant not to be) and in a later second: creation and ready times have
// one-second resolution and the default upgrade order compares them.
func (r *scenarioRun) createPods(pods []conformance.Pod) error {
	sorted := append([]conformance.Pod(nil), pods...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].CreateOrder < sorted[j].CreateOrder })
	for i, sp := range sorted {
		if i > 0 {
			nextSecond() // creation and ready times: one-second resolution
		}
		pod := &corev1.Pod{ObjectMeta: *r.template.ObjectMeta.DeepCopy(), Spec: *r.template.Spec.DeepCopy()}
		pod.Name, pod.Namespace = sp.Name, r.namespace
		if sp.Namespace != "" {
			pod.Namespace = sp.Namespace
		}
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		for k, v := range sp.Labels {
			pod.Labels[k] = v
		}
		if !sp.IsReady() {
			pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}}}
		}
		created, err := kube.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create pod %s: %w", sp.Name, err)
		}
		r.podNS[sp.Name] = pod.Namespace
		// A pod created by a later step is compared with itself as created (sameUidAsSetup).
		if _, ok := r.setupUIDs[pod.Namespace+"/"+sp.Name]; !ok {
			r.setupUIDs[pod.Namespace+"/"+sp.Name] = created.UID
		}
		waitPodRunning(r.t, pod.Namespace, sp.Name, sp.IsReady())
	}
	return nil
}

func (r *scenarioRun) createDeployment(d conformance.Deployment) {
	ns := r.namespace
	if d.Namespace != "" {
		ns = d.Namespace
	}
	tmpl := r.template.DeepCopy()
	tmpl.Namespace = ""
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	for k, v := range d.PodLabels {
		tmpl.Labels[k] = v
	}
	selector := d.PodLabels
	if len(selector) == 0 {
		selector = tmpl.Labels
	}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(d.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: *tmpl,
		},
	}
	if _, err := kube.AppsV1().Deployments(ns).Create(context.Background(), dep, metav1.CreateOptions{}); err != nil {
		r.t.Fatalf("create Deployment %s: %v", d.Name, err)
	}
	r.deployments[d.Name] = &deploymentState{namespace: ns, replicas: d.Replicas}
	r.waitDeployment(d.Name)
}

// waitDeployment waits until the Deployment has exactly its replicas, all ready and none
// terminating.
func (r *scenarioRun) waitDeployment(name string) {
	st := r.deployments[name]
	if st == nil {
		r.t.Fatalf("Deployment %s is not one of the scenario's", name)
	}
	eventually(r.t, fmt.Sprintf("Deployment %s ready with %d replicas", name, st.replicas), rolloutTimeout, func(ctx context.Context) (bool, string) {
		d, err := kube.AppsV1().Deployments(st.namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if d.Status.ObservedGeneration != d.Generation || d.Status.ReadyReplicas != st.replicas || d.Status.Replicas != st.replicas {
			return false, fmt.Sprintf("generation %d, status %+v", d.Generation, d.Status)
		}
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil { // no use waiting
			r.t.Fatalf("Deployment %s: selector: %v", name, err)
		}
		pods, err := kube.CoreV1().Pods(st.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == int(st.replicas), fmt.Sprintf("%d pods", len(pods.Items))
	})
}

// act performs the step's action; an API error (which a step may expect) is returned.
func (r *scenarioRun) act(step *conformance.Step) error {
	a := step.Action
	if a == nil {
		return nil
	}
	ctx := context.Background()
	client := sidecars.AppsV1alpha1().SidecarSets()
	switch {
	case a.PatchSidecarSet != nil:
		p := a.PatchSidecarSet
		if _, err := client.Patch(ctx, p.Name, types.MergePatchType, p.MergePatch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("patch SidecarSet %s: %w", p.Name, err)
		}
	case a.ReplaceSidecarSet.Set():
		ss, err := decodeSidecarSet(a.ReplaceSidecarSet)
		if err != nil {
			r.t.Fatalf("replaceSidecarSet: %v", err)
		}
		if err := applySidecarSet(r.t, ss); err != nil {
			return fmt.Errorf("replace SidecarSet %s: %w", ss.Name, err)
		}
	case a.RepeatPatchSidecarSet != nil:
		return r.repeatPatch(a.RepeatPatchSidecarSet)
	case len(a.CreatePods) > 0:
		return r.createPods(a.CreatePods)
	case a.LabelPod != nil:
		return r.labelPod(a.LabelPod)
	case a.LabelNamespace != nil:
		return r.labelNamespace(a)
	case len(a.ScaleDeployments) > 0:
		return r.scaleDeployments(a.ScaleDeployments)
	}
	return nil
}

// repeatPatch applies the merge patch for i = from..to, waiting for observedGeneration each time.
func (r *scenarioRun) repeatPatch(rp *conformance.RepeatPatch) error {
	patches, err := rp.Patches()
	if err != nil {
		r.t.Fatal(err)
	}
	for i, p := range patches {
		if _, err := sidecars.AppsV1alpha1().SidecarSets().Patch(context.Background(), rp.Name, types.MergePatchType, p, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("repeatPatchSidecarSet %s, i=%d: %w", rp.Name, rp.From+i, err)
		}
		waitSettled(r.t, rp.Name)
	}
	return nil
}

func (r *scenarioRun) labelPod(l *conformance.LabelPod) error {
	name := l.PodName()
	ns := r.podNamespace(name, l.Namespace)
	patch, err := conformance.LabelPatch(l.Labels)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := kube.CoreV1().Pods(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("label pod %s/%s: %w", ns, name, err)
	}
	return nil
}

// labelNamespace patches the namespace's labels; with thenDeletePods it deletes the scenario's pods
// there and waits until they are gone and the Deployments there have their replicas again.
func (r *scenarioRun) labelNamespace(a *conformance.Action) error {
	ctx := context.Background()
	l := a.LabelNamespace
	patch, err := conformance.LabelPatch(l.Labels)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := kube.CoreV1().Namespaces().Patch(ctx, l.NamespaceName(), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("label namespace %s: %w", l.NamespaceName(), err)
	}
	name, ok := a.PodsToDelete()
	if !ok {
		return nil
	}
	kubeAPIServerLoads() // the new labels, for the webhooks' and the policies' namespace selectors
	old := r.scenarioPods(name, nil)
	for _, p := range old {
		if err := kube.CoreV1().Pods(name).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			return fmt.Errorf("delete pod %s/%s: %w", name, p.Name, err)
		}
	}
	for _, p := range old {
		waitGoneUID(r.t, name, p.Name, p.UID)
	}
	for dn, st := range r.deployments {
		if st.namespace == name {
			r.waitDeployment(dn)
		}
	}
	return nil
}

func (r *scenarioRun) scaleDeployments(scales map[string]int32) error {
	ctx := context.Background()
	for name, replicas := range scales {
		st := r.deployments[name]
		if st == nil {
			r.t.Fatalf("scaleDeployments: %s is not one of the scenario's Deployments", name)
		}
		scale, err := kube.AppsV1().Deployments(st.namespace).GetScale(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		scale.Spec.Replicas = replicas
		if _, err := kube.AppsV1().Deployments(st.namespace).UpdateScale(ctx, name, scale, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("scale Deployment %s: %w", name, err)
		}
		st.replicas = replicas
	}
	for name := range scales {
		r.waitDeployment(name)
	}
	return nil
}

// expect waits until the facts hold together, sampling the status counters and invariants on
// the way, then checks they keep holding for stableForSeconds.
func (r *scenarioRun) expect(step *conformance.Step) {
	t := r.t
	r.logInvariants(step)
	var seen []conformance.StatusCounts
	// Every 100 ms: each try also samples the status counters for the sequence checked below.
	eventuallyEvery(t, fmt.Sprintf("step %q's expectations", step.Name), 100*time.Millisecond, rolloutTimeout, func(context.Context) (bool, string) {
		seen = r.sample(step, seen)
		if err := r.check(&step.Expect.Eventually); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	if want := step.Expect.ObservedSequenceContains; len(want) > 0 && !subsequence(want, seen) {
		t.Errorf("step %q: status sequence %v does not contain %v in order", step.Name, seen, want)
	}
	if d := time.Duration(step.Expect.StableForSeconds) * time.Second; d > 0 {
		consistently(t, fmt.Sprintf("step %q: what held", step.Name), time.Second, d, func(context.Context) (bool, string) {
			r.sample(step, nil)
			if err := r.check(&step.Expect.Eventually); err != nil {
				return false, err.Error()
			}
			return true, ""
		})
	}
}

// sample records the status counters of the observed SidecarSets (deduplicating repeats) and
// checks the invariants the step declares (see conformance.Classify).
func (r *scenarioRun) sample(step *conformance.Step, seen []conformance.StatusCounts) []conformance.StatusCounts {
	kinds := invariantKinds(step)
	names := map[string]bool{}
	for _, s := range step.Expect.ObservedSequenceContains {
		names[s.Name] = true
	}
	for _, s := range step.Expect.Eventually.SidecarSetStatus {
		names[s.Name] = true
	}
	if kinds[conformance.InvariantCountersConsistent] || kinds[conformance.InvariantMaxUnavailable] {
		list, err := sidecars.AppsV1alpha1().SidecarSets().List(context.Background(), metav1.ListOptions{})
		if err == nil {
			for _, ss := range list.Items {
				names[ss.Name] = true
			}
		}
	}
	for name := range names {
		ss, err := sidecars.AppsV1alpha1().SidecarSets().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			continue
		}
		c := countsOf(ss)
		if len(seen) == 0 || seen[len(seen)-1] != c {
			seen = append(seen, c)
		}
		r.checkStatusInvariants(ss, kinds)
	}
	if kinds[conformance.InvariantHotUpgradeOrder] {
		r.checkHotUpgradeInvariants()
	}
	return seen
}

// invariantKinds classifies the step's invariants.
func invariantKinds(step *conformance.Step) map[conformance.Invariant]bool {
	kinds := map[conformance.Invariant]bool{}
	for _, text := range append(append([]string(nil), step.Expect.InvariantsWhileRunning...), step.Expect.OrderingInvariants...) {
		kinds[conformance.Classify(text)] = true
	}
	return kinds
}

// logInvariants says which declared invariants are sampled and which only reported.
func (r *scenarioRun) logInvariants(step *conformance.Step) {
	for _, text := range append(append([]string(nil), step.Expect.InvariantsWhileRunning...), step.Expect.OrderingInvariants...) {
		switch conformance.Classify(text) {
		case conformance.InvariantUnknown:
			r.t.Logf("step %q: invariant not checked mechanically: %s", step.Name, text)
		case conformance.InvariantReadyExcludesStale:
			r.t.Logf("step %q: invariant not sampled (status and pods cannot be read at one moment): %s", step.Name, text)
		default:
			r.t.Logf("step %q: invariant sampled at every poll: %s", step.Name, text)
		}
	}
}

func countsOf(ss *v1alpha1.SidecarSet) conformance.StatusCounts {
	return conformance.StatusCounts{Name: ss.Name, MatchedPods: ss.Status.MatchedPods, UpdatedPods: ss.Status.UpdatedPods,
		ReadyPods: ss.Status.ReadyPods, UpdatedReadyPods: ss.Status.UpdatedReadyPods}
}

// checkStatusInvariants: readyPods <= matchedPods and updatedReadyPods <= min(updated, ready)
// (InvariantCountersConsistent); once the controller observed the spec, at most maxUnavailable
// updated pods are not ready (InvariantMaxUnavailable).
func (r *scenarioRun) checkStatusInvariants(ss *v1alpha1.SidecarSet, kinds map[conformance.Invariant]bool) {
	s := ss.Status
	if kinds[conformance.InvariantCountersConsistent] && (s.ReadyPods > s.MatchedPods || s.UpdatedReadyPods > min(s.UpdatedPods, s.ReadyPods)) {
		r.t.Errorf("inconsistent counters of %s: %+v", ss.Name, s)
	}
	maxUnavailable := expectedMaxUnavailable(r.t, ss.Spec.UpdateStrategy.MaxUnavailable, s.MatchedPods)
	if kinds[conformance.InvariantMaxUnavailable] && s.ObservedGeneration == ss.Generation && s.UpdatedPods-s.UpdatedReadyPods > maxUnavailable {
		r.t.Errorf("%s: %d updated pods unavailable, maxUnavailable %d: %+v", ss.Name, s.UpdatedPods-s.UpdatedReadyPods, maxUnavailable, s)
	}
}

// expectedMaxUnavailable is the manual's reading of updateStrategy.maxUnavailable, written here
// rather than taken from the code under test: 1 when unset, a number as is, a percentage of the
// matched pods rounded up.
func expectedMaxUnavailable(t *testing.T, u *intstr.IntOrString, matched int32) int32 {
	switch {
	case u == nil:
		return 1
	case u.Type == intstr.Int:
		return u.IntVal
	}
	pct, err := strconv.Atoi(strings.TrimSuffix(u.StrVal, "%"))
	if err != nil {
		t.Fatalf("maxUnavailable %q: %v", u.StrVal, err)
	}
	return int32((int(matched)*pct + 99) / 100)
}

// checkHotUpgradeInvariants: the twins of a hot-upgrade sidecar never both have the empty image,
// and a twin gets the empty image only while the other one is ready and runs its spec image.
func (r *scenarioRun) checkHotUpgradeInvariants() {
	list, err := sidecars.AppsV1alpha1().SidecarSets().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return
	}
	pods := r.scenarioPods("", nil)
	for _, ss := range list.Items {
		for _, sc := range ss.Spec.Containers {
			if !sidecar.IsHotUpgrade(&sc) {
				continue
			}
			empty := sc.UpgradeStrategy.HotUpgradeEmptyImage
			n1, n2 := sidecar.HotUpgradeNames(sc.Name)
			for _, p := range pods {
				c1, c2 := sidecar.FindPodContainer(p, n1), sidecar.FindPodContainer(p, n2)
				if c1 == nil || c2 == nil {
					continue
				}
				if c1.Image == empty && c2.Image == empty {
					r.t.Errorf("pod %s: both %s and %s have the empty image", p.Name, n1, n2)
				}
				for _, pair := range [][2]*corev1.Container{{c1, c2}, {c2, c1}} {
					if pair[0].Image != empty || pair[1].Image == empty {
						continue
					}
					st := sidecar.ContainerStatus(p, pair[1].Name)
					if st == nil || !st.Ready || !sameImage(pair[1].Image, st.Image) {
						r.t.Errorf("pod %s: %s has the empty image while %s is not ready on %s: %+v", p.Name, pair[0].Name, pair[1].Name, pair[1].Image, st)
					}
				}
			}
		}
	}
}

// check evaluates all facts once.
func (r *scenarioRun) check(f *conformance.Facts) error {
	ctx := context.Background()
	var errs []error
	for _, s := range f.SidecarSetStatus {
		ss, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, s.Name, metav1.GetOptions{})
		switch {
		case err != nil:
			errs = append(errs, err)
		case ss.Status.ObservedGeneration != ss.Generation:
			errs = append(errs, fmt.Errorf("%s: observedGeneration %d, generation %d", s.Name, ss.Status.ObservedGeneration, ss.Generation))
		case countsOf(ss) != s.Counters():
			errs = append(errs, fmt.Errorf("%s: status %+v, want %+v", s.Name, countsOf(ss), s.Counters()))
		}
	}
	if f.ObservedGenerationCurrent {
		list, err := sidecars.AppsV1alpha1().SidecarSets().List(ctx, metav1.ListOptions{})
		if err != nil {
			errs = append(errs, err)
		} else {
			for _, ss := range list.Items {
				if ss.Status.ObservedGeneration != ss.Generation {
					errs = append(errs, fmt.Errorf("%s: observedGeneration %d, generation %d", ss.Name, ss.Status.ObservedGeneration, ss.Generation))
				}
			}
		}
	}
	for _, pf := range f.Pods {
		errs = append(errs, r.checkPod(pf))
	}
	for _, ef := range f.Events {
		errs = append(errs, r.checkEvent(ef))
	}
	for _, sf := range f.SidecarSetPaths {
		errs = append(errs, r.checkSidecarSetPath(sf))
	}
	for _, rf := range f.Revisions {
		errs = append(errs, r.checkRevisions(rf))
	}
	return errors.Join(errs...)
}

func (r *scenarioRun) checkSidecarSetPath(sf conformance.PathFact) error {
	got, err := r.sidecarSetPath(sf.Name, sf.Path)
	switch {
	case err != nil:
		return err
	case sf.NonEmpty:
		if !conformance.NonEmpty(got) {
			return fmt.Errorf("SidecarSet %s %s = %v, want a non-empty value", sf.Name, sf.Path, got)
		}
	case sf.UnchangedFromSetup:
		if want := r.setupPaths[sf.Name+"\x00"+sf.Path]; !conformance.Equal(got, want) {
			return fmt.Errorf("SidecarSet %s %s = %v, want %v as after setup", sf.Name, sf.Path, got, want)
		}
	default:
		if !conformance.Equal(got, sf.Equals.V) {
			return fmt.Errorf("SidecarSet %s %s = %v, want %v", sf.Name, sf.Path, got, sf.Equals.V)
		}
	}
	return nil
}

// checkRevisions reads the SidecarSet's recorded revisions (SidecarSetRevisions labelled
// apps.kruise.io/sidecarset-name) and evaluates the fact.
func (r *scenarioRun) checkRevisions(rf conformance.RevisionFact) error {
	ctx := context.Background()
	ss, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, rf.SidecarSet, metav1.GetOptions{})
	if err != nil {
		return err
	}
	list, err := sidecars.AppsV1alpha1().SidecarSetRevisions().List(ctx, metav1.ListOptions{
		LabelSelector: labels.Set{v1alpha1.SidecarSetNameLabel: rf.SidecarSet}.String()})
	if err != nil {
		return err
	}
	var revs []conformance.Revision
	for _, rev := range list.Items {
		if rev.SidecarSetName == rf.SidecarSet {
			revs = append(revs, conformance.Revision{Name: rev.Name, Number: rev.Revision})
		}
	}
	return rf.Evaluate(revs, toDoc(ss))
}

func (r *scenarioRun) checkPod(pf conformance.PodFact) error {
	ctx := context.Background()
	if c := pf.CountPods; c != nil {
		n := 0
		for _, p := range r.scenarioPods(c.Namespace, c.PodLabels) {
			if c.Check.Evaluate(toDoc(p)) == nil {
				n++
			}
		}
		if !conformance.Equal(n, pf.Equals.V) {
			return fmt.Errorf("%d pods (namespace %q, labels %v) with %s, want %v", n, c.Namespace, c.PodLabels, c.Path, pf.Equals.V)
		}
		return nil
	}
	ns := r.podNamespace(pf.Pod, pf.Namespace)
	pod, err := kube.CoreV1().Pods(ns).Get(ctx, pf.Pod, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if pf.SameUIDAsSetup {
		setup, ok := r.setupUIDs[ns+"/"+pf.Pod]
		if !ok {
			return fmt.Errorf("pod %s/%s did not exist after setup", ns, pf.Pod)
		}
		if pod.UID != setup {
			return fmt.Errorf("pod %s was recreated (uid %s, setup %s)", pf.Pod, pod.UID, setup)
		}
	}
	if pf.Path == "" {
		return nil
	}
	if err := pf.Check.Evaluate(toDoc(pod)); err != nil {
		return fmt.Errorf("pod %s: %w", pf.Pod, err)
	}
	return nil
}

// podNamespace returns a named pod's namespace: the one given, the one the scenario created it
// in, or the template's.
func (r *scenarioRun) podNamespace(name, given string) string {
	if given != "" {
		return given
	}
	if ns, ok := r.podNS[name]; ok {
		return ns
	}
	return r.namespace
}

func (r *scenarioRun) checkEvent(ef conformance.EventFact) error {
	list, err := kube.CoreV1().Events(ef.InvolvedObject.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == ef.InvolvedObject.Kind && e.InvolvedObject.Name == ef.InvolvedObject.Name &&
			(ef.Type == "" || e.Type == ef.Type) && e.Reason == ef.Reason && containsAll(e.Message, ef.MessageSubstrings()) {
			return nil
		}
	}
	return fmt.Errorf("no %s event %s on %s %s with message containing %q", ef.Type, ef.Reason, ef.InvolvedObject.Kind, ef.InvolvedObject.Name, ef.MessageSubstrings())
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func (r *scenarioRun) sidecarSetPath(name, path string) (interface{}, error) {
	ss, err := sidecars.AppsV1alpha1().SidecarSets().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return conformance.EvalOne(path, toDoc(ss))
}

// scenarioPods lists the scenario's active pods: those with the template's labels (and extra
// labels when given) in namespace, or in every namespace of the scenario when namespace is "".
func (r *scenarioRun) scenarioPods(namespace string, extra map[string]string) []*corev1.Pod {
	set := labels.Set{}
	for k, v := range r.template.Labels {
		set[k] = v
	}
	for k, v := range extra {
		set[k] = v
	}
	nss := r.namespaces
	if namespace != "" {
		nss = []string{namespace}
	}
	var out []*corev1.Pod
	for _, ns := range nss {
		list, err := kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: set.String()})
		if err != nil {
			r.t.Fatal(err)
		}
		for i := range list.Items {
			if list.Items[i].DeletionTimestamp == nil {
				out = append(out, &list.Items[i])
			}
		}
	}
	return out
}

// cleanNamespace deletes every Deployment and pod in the namespace and waits until they are gone.
func cleanNamespace(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	if err := kube.AppsV1().Deployments(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, fmt.Sprintf("no pod nor ReplicaSet in namespace %s", ns), 5*time.Minute, func(ctx context.Context) (bool, string) {
		_ = kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		rs, err := kube.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0 && len(rs.Items) == 0, fmt.Sprintf("%d pods, %d ReplicaSets left", len(pods.Items), len(rs.Items))
	})
}

func podIsReady(pod *corev1.Pod) bool {
	c := podCondition(pod, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

// subsequence reports whether want occurs in seen in order (not necessarily adjacent).
func subsequence(want, seen []conformance.StatusCounts) bool {
	i := 0
	for _, s := range seen {
		if i < len(want) && s == want[i].Counters() {
			i++
		}
	}
	return i == len(want)
}
