package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// rolloutScenario is a conformance rollout/NN-name/scenario.yaml (see testdata/conformance/README.md).
type rolloutScenario struct {
	Title   string   `json:"title"`
	Sources []string `json:"sources"`
	Notes   string   `json:"notes"`
	Setup   struct {
		SidecarSets           []v1alpha1.SidecarSet  `json:"sidecarSets"`
		PodsBeforeSidecarSets bool                   `json:"podsBeforeSidecarSets"`
		PodTemplate           corev1.PodTemplateSpec `json:"podTemplate"`
		Pods                  []scenarioPod          `json:"pods"`
		Deployments           []struct {
			Name      string            `json:"name"`
			Replicas  int32             `json:"replicas"`
			PodLabels map[string]string `json:"podLabels"`
		} `json:"deployments"`
	} `json:"setup"`
	Steps []rolloutStep `json:"steps"`
}

type scenarioPod struct {
	Name        string            `json:"name"`
	CreateOrder int               `json:"createOrder"`
	Labels      map[string]string `json:"labels"`
	Ready       *bool             `json:"ready"`
}

type rolloutStep struct {
	Name   string `json:"name"`
	Notes  string `json:"notes"`
	Action *struct {
		PatchSidecarSet *struct {
			Name       string          `json:"name"`
			MergePatch json.RawMessage `json:"mergePatch"`
		} `json:"patchSidecarSet"`
		ReplaceSidecarSet *v1alpha1.SidecarSet `json:"replaceSidecarSet"`
		CreatePods        []scenarioPod        `json:"createPods"`
		ScaleDeployments  map[string]int32     `json:"scaleDeployments"`
	} `json:"action"`
	Expect struct {
		Eventually               facts          `json:"eventually"`
		StableForSeconds         int            `json:"stableForSeconds"`
		ObservedSequenceContains []statusCounts `json:"observedSequenceContains"`
		// Prose invariants; the ones this harness knows are checked on every sample (see
		// checkInvariants).
		InvariantsWhileRunning []string `json:"invariantsWhileRunning"`
		OrderingInvariants     []string `json:"orderingInvariants"`
		Notes                  string   `json:"notes"`
	} `json:"expect"`
}

// facts must all hold at the same moment.
type facts struct {
	SidecarSetStatus          *statusCounts    `json:"sidecarSetStatus"`
	Pods                      []podFact        `json:"pods"`
	Events                    []eventFact      `json:"events"`
	SidecarSetPaths           []sidecarSetFact `json:"sidecarSetPaths"`
	ObservedGenerationCurrent bool             `json:"observedGenerationCurrent"`
}

type statusCounts struct {
	Name             string `json:"name"`
	MatchedPods      int32  `json:"matchedPods"`
	UpdatedPods      int32  `json:"updatedPods"`
	ReadyPods        int32  `json:"readyPods"`
	UpdatedReadyPods int32  `json:"updatedReadyPods"`
}

type podFact struct {
	Pod            string      `json:"pod"`
	Path           string      `json:"path"`
	Equals         interface{} `json:"equals"`
	Contains       interface{} `json:"contains"`
	Internal       bool        `json:"internal"`
	SameUIDAsSetup bool        `json:"sameUidAsSetup"`
	CountPods      *struct {
		PodLabels map[string]string `json:"podLabels"`
		Namespace string            `json:"namespace"`
		Path      string            `json:"path"`
		Equals    interface{}       `json:"equals"`
	} `json:"countPods"`
}

type eventFact struct {
	InvolvedObject struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
	} `json:"involvedObject"`
	Type     string `json:"type"`
	Reason   string `json:"reason"`
	Message  string `json:"message"`
	Internal bool   `json:"internal"`
}

type sidecarSetFact struct {
	Name               string      `json:"name"`
	Path               string      `json:"path"`
	Equals             interface{} `json:"equals"`
	UnchangedFromSetup bool        `json:"unchangedFromSetup"`
	Internal           bool        `json:"internal"`
}

const rolloutTimeout = 180 * time.Second

// TestRolloutConformance runs every rollout scenario against the local cluster, whose kwok nodes
// play the kubelet (including in-place image changes and unpullable images).
func TestRolloutConformance(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(conformance, "rollout", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, "scenario.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var sc rolloutScenario
			if err := yaml.UnmarshalStrict(data, &sc); err != nil {
				t.Fatalf("scenario.yaml: %v", err)
			}
			newScenarioRun(t, &sc).run()
		})
	}
}

// scenarioRun is the state of one scenario: what setup created, to compare against later.
type scenarioRun struct {
	t          *testing.T
	sc         *rolloutScenario
	namespace  string
	setupUIDs  map[string]types.UID
	setupPaths map[string]interface{}
}

func newScenarioRun(t *testing.T, sc *rolloutScenario) *scenarioRun {
	ns := sc.Setup.PodTemplate.Namespace
	if ns == "" {
		ns = "sidecarset-acc"
	}
	return &scenarioRun{t: t, sc: sc, namespace: ns, setupUIDs: map[string]types.UID{}, setupPaths: map[string]interface{}{}}
}

func (r *scenarioRun) run() {
	r.setup()
	for i := range r.sc.Steps {
		step := &r.sc.Steps[i]
		r.t.Logf("step %d: %s", i+1, step.Name)
		r.act(step)
		r.expect(step)
	}
}

// setup starts from a clean slate: no SidecarSets, no pods or Deployments in the namespace.
func (r *scenarioRun) setup() {
	t, ctx := r.t, context.Background()
	deleteAllSidecarSets(t)
	setWhitelist(t, nil)
	applyNamespaces(t, filepath.Join(conformance, "common", "namespace.yaml"))
	cleanNamespace(t, r.namespace)
	if r.sc.Setup.PodsBeforeSidecarSets {
		r.createPods(r.sc.Setup.Pods)
	}
	for i := range r.sc.Setup.SidecarSets {
		ss := &r.sc.Setup.SidecarSets[i]
		if err := applySidecarSet(t, ss); err != nil {
			t.Fatalf("apply SidecarSet %s: %v", ss.Name, err)
		}
		waitSettled(t, ss.Name)
	}
	if !r.sc.Setup.PodsBeforeSidecarSets {
		r.createPods(r.sc.Setup.Pods)
	}
	for _, d := range r.sc.Setup.Deployments {
		r.createDeployment(ctx, d.Name, d.Replicas, d.PodLabels)
	}
	pods := r.scenarioPods(nil)
	for _, p := range pods {
		r.setupUIDs[p.Name] = p.UID
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

// createPods creates the pods in createOrder, each after the previous one runs (and is ready
// unless it is meant not to be) and at least 1.1 s later: creation and ready times have
// one-second resolution and the default upgrade order compares them.
func (r *scenarioRun) createPods(pods []scenarioPod) {
	sorted := append([]scenarioPod(nil), pods...)
	for i := 1; i < len(sorted); i++ {
		for j := i; j > 0 && sorted[j].CreateOrder < sorted[j-1].CreateOrder; j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	for i, sp := range sorted {
		if i > 0 {
			time.Sleep(1100 * time.Millisecond)
		}
		pod := &corev1.Pod{ObjectMeta: *r.sc.Setup.PodTemplate.ObjectMeta.DeepCopy(), Spec: *r.sc.Setup.PodTemplate.Spec.DeepCopy()}
		pod.Name, pod.Namespace = sp.Name, r.namespace
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		for k, v := range sp.Labels {
			pod.Labels[k] = v
		}
		ready := sp.Ready == nil || *sp.Ready
		if !ready {
			pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}}}
		}
		if _, err := kube.CoreV1().Pods(r.namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			r.t.Fatalf("create pod %s: %v", sp.Name, err)
		}
		waitPodRunning(r.t, r.namespace, sp.Name, ready)
	}
}

func (r *scenarioRun) createDeployment(ctx context.Context, name string, replicas int32, podLabels map[string]string) {
	tmpl := r.sc.Setup.PodTemplate.DeepCopy()
	tmpl.Namespace = ""
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	for k, v := range podLabels {
		tmpl.Labels[k] = v
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Template: *tmpl,
		},
	}
	if _, err := kube.AppsV1().Deployments(r.namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		r.t.Fatalf("create Deployment %s: %v", name, err)
	}
	r.waitDeployment(name, replicas)
}

func (r *scenarioRun) waitDeployment(name string, replicas int32) {
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, rolloutTimeout, true, func(ctx context.Context) (bool, error) {
		d, err := kube.AppsV1().Deployments(r.namespace).Get(ctx, name, metav1.GetOptions{})
		return err == nil && d.Status.ObservedGeneration == d.Generation && d.Status.ReadyReplicas == replicas &&
			d.Status.Replicas == replicas, nil
	})
	if err != nil {
		r.t.Fatalf("Deployment %s not ready with %d replicas: %v", name, replicas, err)
	}
}

func (r *scenarioRun) act(step *rolloutStep) {
	a := step.Action
	if a == nil {
		return
	}
	t, ctx := r.t, context.Background()
	client := sidecars.AppsV1alpha1().SidecarSets()
	if p := a.PatchSidecarSet; p != nil {
		if _, err := client.Patch(ctx, p.Name, types.MergePatchType, p.MergePatch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("patch SidecarSet %s: %v", p.Name, err)
		}
	}
	if ss := a.ReplaceSidecarSet; ss != nil {
		if err := applySidecarSet(t, ss); err != nil {
			t.Fatalf("replace SidecarSet %s: %v", ss.Name, err)
		}
	}
	if len(a.CreatePods) > 0 {
		r.createPods(a.CreatePods)
	}
	for name, replicas := range a.ScaleDeployments {
		scale, err := kube.AppsV1().Deployments(r.namespace).GetScale(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		scale.Spec.Replicas = replicas
		if _, err := kube.AppsV1().Deployments(r.namespace).UpdateScale(ctx, name, scale, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("scale Deployment %s: %v", name, err)
		}
	}
	for name, replicas := range a.ScaleDeployments {
		r.waitDeployment(name, replicas)
	}
}

// expect waits until the facts hold together, sampling the status counters and invariants on
// the way, then checks they keep holding for stableForSeconds.
func (r *scenarioRun) expect(step *rolloutStep) {
	t := r.t
	var seen []statusCounts
	var lastErr error
	deadline := time.Now().Add(rolloutTimeout)
	for {
		seen = r.sample(step, seen)
		if lastErr = r.check(&step.Expect.Eventually); lastErr == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("step %q: not reached within %v: %v", step.Name, rolloutTimeout, lastErr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if want := step.Expect.ObservedSequenceContains; len(want) > 0 && !subsequence(want, seen) {
		t.Errorf("step %q: status sequence %v does not contain %v in order", step.Name, seen, want)
	}
	until := time.Now().Add(time.Duration(step.Expect.StableForSeconds) * time.Second)
	for time.Now().Before(until) {
		time.Sleep(time.Second)
		r.sample(step, nil)
		if err := r.check(&step.Expect.Eventually); err != nil {
			t.Fatalf("step %q: held, then stopped holding within %ds: %v", step.Name, step.Expect.StableForSeconds, err)
		}
	}
}

// sample records the status counters of the observed SidecarSets (deduplicating repeats) and
// checks the invariants the step declares.
func (r *scenarioRun) sample(step *rolloutStep, seen []statusCounts) []statusCounts {
	names := map[string]bool{}
	for _, s := range step.Expect.ObservedSequenceContains {
		names[s.Name] = true
	}
	if s := step.Expect.Eventually.SidecarSetStatus; s != nil {
		names[s.Name] = true
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
		if len(step.Expect.InvariantsWhileRunning) > 0 {
			r.checkStatusInvariants(ss)
		}
	}
	if len(step.Expect.OrderingInvariants) > 0 {
		r.checkHotUpgradeInvariants()
	}
	return seen
}

func countsOf(ss *v1alpha1.SidecarSet) statusCounts {
	return statusCounts{Name: ss.Name, MatchedPods: ss.Status.MatchedPods, UpdatedPods: ss.Status.UpdatedPods,
		ReadyPods: ss.Status.ReadyPods, UpdatedReadyPods: ss.Status.UpdatedReadyPods}
}

// checkStatusInvariants: readyPods <= matchedPods, updatedReadyPods <= min(updated, ready), and,
// once the controller observed the spec, at most maxUnavailable updated pods are not ready.
func (r *scenarioRun) checkStatusInvariants(ss *v1alpha1.SidecarSet) {
	s := ss.Status
	if s.ReadyPods > s.MatchedPods || s.UpdatedReadyPods > min(s.UpdatedPods, s.ReadyPods) {
		r.t.Errorf("inconsistent counters of %s: %+v", ss.Name, s)
	}
	maxUnavailable := rollout.ResolveMaxUnavailable(ss.Spec.UpdateStrategy.MaxUnavailable, s.MatchedPods)
	if s.ObservedGeneration == ss.Generation && s.UpdatedPods-s.UpdatedReadyPods > maxUnavailable {
		r.t.Errorf("%s: %d updated pods unavailable, maxUnavailable %d: %+v", ss.Name, s.UpdatedPods-s.UpdatedReadyPods, maxUnavailable, s)
	}
}

// checkHotUpgradeInvariants: the twins of a hot-upgrade sidecar never both have the empty image,
// and a twin gets the empty image only while the other one is ready and runs its spec image.
func (r *scenarioRun) checkHotUpgradeInvariants() {
	list, err := sidecars.AppsV1alpha1().SidecarSets().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return
	}
	pods := r.scenarioPods(nil)
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
					if st == nil || !st.Ready || !rollout.SameImage(pair[1].Image, st.Image) {
						r.t.Errorf("pod %s: %s has the empty image while %s is not ready on %s: %+v", p.Name, pair[0].Name, pair[1].Name, pair[1].Image, st)
					}
				}
			}
		}
	}
}

// check evaluates all facts once.
func (r *scenarioRun) check(f *facts) error {
	ctx := context.Background()
	var errs []error
	if s := f.SidecarSetStatus; s != nil {
		ss, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, s.Name, metav1.GetOptions{})
		switch {
		case err != nil:
			errs = append(errs, err)
		case ss.Status.ObservedGeneration != ss.Generation:
			errs = append(errs, fmt.Errorf("%s: observedGeneration %d, generation %d", s.Name, ss.Status.ObservedGeneration, ss.Generation))
		case countsOf(ss) != *s:
			errs = append(errs, fmt.Errorf("%s: status %+v, want %+v", s.Name, countsOf(ss), *s))
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
		if err := r.checkPod(pf); err != nil {
			errs = append(errs, err)
		}
	}
	for _, ef := range f.Events {
		if err := r.checkEvent(ef); err != nil {
			errs = append(errs, err)
		}
	}
	for _, sf := range f.SidecarSetPaths {
		got, err := r.sidecarSetPath(sf.Name, sf.Path)
		want := sf.Equals
		if sf.UnchangedFromSetup {
			want = r.setupPaths[sf.Name+"\x00"+sf.Path]
		}
		if err == nil && !reflect.DeepEqual(normalize(got), normalize(want)) {
			err = fmt.Errorf("SidecarSet %s %s = %v, want %v", sf.Name, sf.Path, got, want)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (r *scenarioRun) checkPod(pf podFact) error {
	ctx := context.Background()
	if c := pf.CountPods; c != nil {
		ns := r.namespace
		if c.Namespace != "" {
			ns = c.Namespace
		}
		n := 0
		for _, p := range r.scenarioPodsIn(ns, c.PodLabels) {
			if (assertion{Path: c.Path, Equals: c.Equals}).check(toDoc(p)) == nil {
				n++
			}
		}
		if !reflect.DeepEqual(normalize(n), normalize(pf.Equals)) {
			return fmt.Errorf("%d pods with %s == %v, want %v", n, c.Path, c.Equals, pf.Equals)
		}
		return nil
	}
	pod, err := kube.CoreV1().Pods(r.namespace).Get(ctx, pf.Pod, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if pf.SameUIDAsSetup && pod.UID != r.setupUIDs[pf.Pod] {
		return fmt.Errorf("pod %s was recreated (uid %s, setup %s)", pf.Pod, pod.UID, r.setupUIDs[pf.Pod])
	}
	if pf.Path == "" {
		return nil
	}
	if err := (assertion{Path: pf.Path, Equals: pf.Equals, Contains: pf.Contains}).check(toDoc(pod)); err != nil {
		return fmt.Errorf("pod %s: %w", pf.Pod, err)
	}
	return nil
}

func (r *scenarioRun) checkEvent(ef eventFact) error {
	list, err := kube.CoreV1().Events(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == ef.InvolvedObject.Kind && e.InvolvedObject.Name == ef.InvolvedObject.Name &&
			(ef.Type == "" || e.Type == ef.Type) && e.Reason == ef.Reason && strings.Contains(e.Message, ef.Message) {
			return nil
		}
	}
	return fmt.Errorf("no %s event %s on %s %s", ef.Type, ef.Reason, ef.InvolvedObject.Kind, ef.InvolvedObject.Name)
}

func (r *scenarioRun) sidecarSetPath(name, path string) (interface{}, error) {
	ss, err := sidecars.AppsV1alpha1().SidecarSets().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return evalOne(path, toDoc(ss))
}

// scenarioPods lists the scenario's pods: those in its namespace with the template's labels
// (and extra labels when given).
func (r *scenarioRun) scenarioPods(extra map[string]string) []*corev1.Pod {
	return r.scenarioPodsIn(r.namespace, extra)
}

func (r *scenarioRun) scenarioPodsIn(namespace string, extra map[string]string) []*corev1.Pod {
	set := labels.Set{}
	for k, v := range r.sc.Setup.PodTemplate.Labels {
		set[k] = v
	}
	for k, v := range extra {
		set[k] = v
	}
	list, err := kube.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: set.String()})
	if err != nil {
		r.t.Fatal(err)
	}
	out := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			out = append(out, &list.Items[i])
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
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		_ = kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		rs, err2 := kube.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		return err == nil && err2 == nil && len(pods.Items) == 0 && len(rs.Items) == 0, nil
	})
	if err != nil {
		t.Fatalf("namespace %s not cleaned: %v", ns, err)
	}
}

// waitPodRunning waits until the pod runs on a node and, if ready, is Ready.
func waitPodRunning(t *testing.T, ns, name string, ready bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, rolloutTimeout, true, func(ctx context.Context) (bool, error) {
		var err error
		pod, err = kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || pod.Status.Phase != corev1.PodRunning {
			return false, nil
		}
		return !ready || podIsReady(pod), nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s not running (ready=%v): %v; status %+v", ns, name, ready, err, pod.Status)
	}
	return pod
}

func podIsReady(pod *corev1.Pod) bool {
	c := podCondition(pod, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

// toDoc renders an object as the generic JSON document assertions run on.
func toDoc(obj interface{}) interface{} {
	data, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	var doc interface{}
	if err := json.Unmarshal(data, &doc); err != nil {
		panic(err)
	}
	return doc
}

// evalOne returns the single output of a jq program (nil for none).
func evalOne(path string, doc interface{}) (interface{}, error) {
	outs, err := assertion{Path: path}.outputs(doc)
	switch {
	case err != nil:
		return nil, err
	case len(outs) > 1:
		return nil, fmt.Errorf("%s: %d outputs, want one", path, len(outs))
	case len(outs) == 0:
		return nil, nil
	}
	return outs[0], nil
}

// subsequence reports whether want occurs in seen in order (not necessarily adjacent).
func subsequence(want, seen []statusCounts) bool {
	i := 0
	for _, s := range seen {
		if i < len(want) && s == want[i] {
			i++
		}
	}
	return i == len(want)
}
