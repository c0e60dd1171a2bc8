package rollout

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// Whole-rollout simulations: a few hundred pods, a simulated kubelet that restarts upgraded
// containers after a random delay (sometimes after a crash restart on the old image first), pods
// that go unready on their own, and the planner driving the rollout round after round as the
// controller does (plan, apply resets and upgrades, let time pass, plan again). Every round is
// checked against an oracle that knows what the kubelet really runs.

// simConfig is one rollout scenario.
type simConfig struct {
	name string
	pods int
	// strategy edits the update strategy of the published versions.
	strategy func(*v1alpha1.SidecarSetUpdateStrategy)
	// sidecars edits the SidecarSet's containers (hot upgrade, native sidecars).
	sidecars func(*v1alpha1.SidecarSet)
	// notUpgradable: every notUpgradable-th pod was injected from a revision whose other fields
	// differ, so that the current spec cannot upgrade it.
	notUpgradable int
	// retag: every version of an image has the same digest (imageID never changes).
	retag bool
	// change publishes another version at the first step from change.at that follows a round
	// with upgrades (so that some pods are still restarting from the previous version).
	change *specChange
	// pause pauses the rollout during steps [pause[0], pause[1]).
	pause [2]int
	// rank, when set, is the priority of a pod: candidates are upgraded in decreasing rank.
	rank func(*corev1.Pod) int64
	// flapRate is the chance per step that a ready pod goes unready for 1-3 steps.
	flapRate float64
	// namespaces, when set, spreads the pods over namespaces ns-0.. of skewed sizes (about half
	// the pods in ns-0), so that maxUnavailable is divided among them (share.go).
	namespaces int
	maxSteps   int
	// reasons are pod plan reasons the scenario must go through.
	reasons []string
}

type specChange struct {
	at               int
	version, hash    string
	hashWithoutImage string
}

// simVersion returns base with every sidecar at image <container>:<version>.
func simVersion(base *v1alpha1.SidecarSet, version, hash, hashNoImg string) *v1alpha1.SidecarSet {
	ss := base.DeepCopy()
	for i := range ss.Spec.Containers {
		ss.Spec.Containers[i].Image = ss.Spec.Containers[i].Name + ":" + version
	}
	for i := range ss.Spec.InitContainers {
		ss.Spec.InitContainers[i].Image = ss.Spec.InitContainers[i].Name + ":" + version
	}
	ss.Annotations = map[string]string{sidecar.HashAnnotation: hash, sidecar.HashWithoutImageAnnotation: hashNoImg}
	ss.Status.LatestRevision = ssName + "-" + hash
	ss.ResourceVersion = fmt.Sprint(100 + len(version))
	return ss
}

// podSim is what the kubelet knows about a pod.
type podSim struct {
	running   map[string]string // container -> image it really runs
	restartAt int               // step of the next sync that restarts changed containers, 0 for none
	readyAt   map[string]int    // container -> step its readiness probe passes
	flapUntil int               // the pod is unready (a readiness gate) until this step
	style     int               // how the runtime reports images: 0 as in the spec, 1 fully qualified, 2 a mirror digest
	hash      decoded           // the pod's hash entries, decoded with the full JSON decoder
	hashNoImg decoded
}

// decoded memoizes the hash of SidecarSet ss in a pod hash annotation ("" when there is none).
type decoded struct{ value, hash string }

func (d *decoded) of(p *corev1.Pod, key string) string {
	if v := p.Annotations[key]; v != d.value || d.value == "" {
		d.value, d.hash = v, ""
		if e, ok := sidecar.PodHashEntry(p.Annotations, key, ssName); ok {
			d.hash = e.Hash
		}
	}
	return d.hash
}

type world struct {
	t     *testing.T
	cfg   simConfig
	rng   *rand.Rand
	ss    *v1alpha1.SidecarSet
	pods  []*corev1.Pod
	kube  []*podSim
	step  int
	now   time.Time
	stats struct{ upgrades, readySelected, resets, crashes, maxUnavailable int }
	seen  map[string]bool // reasons of pod plans seen
}

func newWorld(t *testing.T, cfg simConfig, seed int64) *world {
	w := &world{t: t, cfg: cfg, rng: rand.New(rand.NewSource(seed)), now: t0, seen: map[string]bool{}}
	base := newSidecarSet("sidecar:v1", "h1", "nh1", func(ss *v1alpha1.SidecarSet) {
		if cfg.sidecars != nil {
			cfg.sidecars(ss)
		}
	})
	v1 := simVersion(base, "v1", "h1", "nh1")
	zones := []string{"z0", "z0", "z0", "z1", "z2", "z3"} // z0 holds half the pods
	tiers := []string{"canary", "edge", "core", "core", "core"}
	for i := range cfg.pods {
		name := fmt.Sprintf("pod-%03d", i)
		p := newPod(name, v1, labelled("zone", zones[w.rng.Intn(len(zones))], "tier", tiers[w.rng.Intn(len(tiers))],
			"sts", fmt.Sprintf("web-%d", w.rng.Intn(cfg.pods))))
		if w.rng.Intn(10) < 3 {
			p.Labels["canary"] = "true"
		}
		if w.rng.Intn(5) == 0 {
			delete(p.Labels, "sts") // some pods lack the ordered key
		}
		if cfg.namespaces > 0 {
			p.Namespace = fmt.Sprintf("ns-%d", min(w.rng.Intn(2*cfg.namespaces), cfg.namespaces)%cfg.namespaces)
		}
		p.CreationTimestamp = metav1.NewTime(t0.Add(-time.Duration(w.rng.Intn(7200)) * time.Second))
		setReady(p, false, p.CreationTimestamp.Time)
		setReady(p, true, p.CreationTimestamp.Add(time.Duration(10+w.rng.Intn(60))*time.Second))
		if cfg.notUpgradable > 0 && i%cfg.notUpgradable == 0 {
			setHashes(p, "h0", "nh0")
		}
		k := &podSim{running: map[string]string{}, readyAt: map[string]int{}, style: w.rng.Intn(3)}
		for _, c := range allContainers(p) {
			k.running[c.Name] = c.Image
			st := statusOf(p, c.Name)
			st.Image, st.ImageID = w.reported(k, c.Image), w.imageID(c.Image)
		}
		if w.rng.Intn(20) == 0 {
			k.flapUntil = 1 + w.rng.Intn(20)
			setReady(p, false, t0)
		}
		w.pods = append(w.pods, p)
		w.kube = append(w.kube, k)
	}
	w.ss = w.version("v2", "h2", "nh1")
	return w
}

// version returns the SidecarSet at version with the scenario's strategy.
func (w *world) version(version, hash, hashNoImg string) *v1alpha1.SidecarSet {
	base := newSidecarSet("sidecar:v1", hash, hashNoImg, func(ss *v1alpha1.SidecarSet) {
		if w.cfg.sidecars != nil {
			w.cfg.sidecars(ss)
		}
		if w.cfg.strategy != nil {
			w.cfg.strategy(&ss.Spec.UpdateStrategy)
		}
	})
	return simVersion(base, version, hash, hashNoImg)
}

func allContainers(p *corev1.Pod) []*corev1.Container {
	var out []*corev1.Container
	for i := range p.Spec.InitContainers {
		out = append(out, &p.Spec.InitContainers[i])
	}
	for i := range p.Spec.Containers {
		out = append(out, &p.Spec.Containers[i])
	}
	return out
}

func allStatuses(p *corev1.Pod) []*corev1.ContainerStatus {
	var out []*corev1.ContainerStatus
	for i := range p.Status.InitContainerStatuses {
		out = append(out, &p.Status.InitContainerStatuses[i])
	}
	for i := range p.Status.ContainerStatuses {
		out = append(out, &p.Status.ContainerStatuses[i])
	}
	return out
}

func (w *world) imageID(image string) string {
	if w.cfg.retag {
		if repo, _, ok := cutLast(image, ':'); ok {
			return imageIDOf(repo + ":v1")
		}
	}
	return imageIDOf(image)
}

func cutLast(s string, sep byte) (string, string, bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// reported is the image string the runtime reports for image.
func (w *world) reported(k *podSim, image string) string {
	switch k.style {
	case 1:
		return "docker.io/library/" + image
	case 2:
		repo, _, _ := cutLast(image, ':')
		return "mirror.invalid/" + repo + "@sha256:" + digestOf(image)
	}
	return image
}

// truth is the oracle's view of a pod.
type truth struct {
	updated, upgradable, selected, consistent, ready bool
}

func (tr truth) available() bool { return tr.consistent && tr.ready }

func (w *world) truth(i int) truth {
	p, k := w.pods[i], w.kube[i]
	var tr truth
	tr.updated = k.hash.of(p, sidecar.HashAnnotation) == w.ss.Annotations[sidecar.HashAnnotation]
	tr.upgradable = k.hashNoImg.of(p, sidecar.HashWithoutImageAnnotation) == w.ss.Annotations[sidecar.HashWithoutImageAnnotation]
	tr.selected = true
	if sel := w.ss.Spec.UpdateStrategy.Selector; sel != nil {
		s, err := metav1.LabelSelectorAsSelector(sel)
		tr.selected = err == nil && s.Matches(labels.Set(p.Labels))
	}
	tr.consistent = true
	for _, c := range allContainers(p) {
		tr.consistent = tr.consistent && k.running[c.Name] == c.Image
	}
	tr.ready = p.Status.Phase == corev1.PodRunning && readyCondition(p)
	for _, sc := range w.ss.Spec.Containers {
		if sidecar.IsHotUpgrade(&sc) {
			_, idle := sidecar.HotUpgradeContainers(sc.Name, p.Annotations)
			tr.ready = tr.ready && sidecar.FindPodContainer(p, idle).Image == sc.UpgradeStrategy.HotUpgradeEmptyImage
		}
	}
	return tr
}

func (w *world) paused() bool { return w.step >= w.cfg.pause[0] && w.step < w.cfg.pause[1] }

// round plans, checks the plan against the oracle and applies it.
func (w *world) round() *Result {
	t := w.t
	w.ss.Spec.UpdateStrategy.Paused = w.paused()
	res := plan(w.ss, w.pods)
	src := make(map[string]*corev1.Pod, len(w.pods)) // the pods the plan's pods were made from
	for _, p := range w.pods {
		src[p.Name] = p
	}

	var want Counts
	var unavailable, eligible int32
	truths := make(map[*corev1.Pod]truth, len(w.pods))
	for i, p := range w.pods {
		tr := w.truth(i)
		truths[p] = tr
		want.Matched++
		if tr.updated {
			want.Updated++
			if !tr.available() {
				unavailable++
			}
		}
		if tr.available() {
			want.Ready++
			if tr.updated {
				want.UpdatedReady++
			}
		}
		if tr.upgradable && tr.selected {
			eligible++
		}
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("step %d: %s\n%s", w.step, fmt.Sprintf(format, args...), stateOf(res))
	}
	if res.Counts != want {
		fail("counts %+v, oracle %+v", res.Counts, want)
	}
	if res.Unavailable != unavailable {
		fail("unavailable %d, oracle %d", res.Unavailable, unavailable)
	}
	maxUnavailable := ResolveMaxUnavailable(w.ss.Spec.UpdateStrategy.MaxUnavailable, want.Matched)
	partition := ResolvePartition(w.ss.Spec.UpdateStrategy.Partition, want.Matched)
	if res.MaxUnavailable != maxUnavailable || res.Partition != partition {
		fail("resolved maxUnavailable %d partition %d, want %d %d", res.MaxUnavailable, res.Partition, maxUnavailable, partition)
	}
	w.stats.maxUnavailable = max(w.stats.maxUnavailable, int(unavailable))

	if w.paused() && (len(res.Upgrade) > 0 || len(res.Reset) > 0) {
		fail("paused, yet upgrades %v and resets %v", names(res.Upgrade), names(res.Reset))
	}
	if len(res.Reset) > 0 && len(res.Upgrade) > 0 {
		fail("upgrades %v planned while resets %v are due", names(res.Upgrade), names(res.Reset))
	}

	// The selected pods: not updated, upgradable, selected; ready ones only within the budget.
	var readySelected int32
	selectedRank := int64(1 << 62)
	for _, p := range res.Upgrade {
		tr := truths[src[p.Name]]
		if tr.updated || !tr.upgradable || !tr.selected {
			fail("pod %s selected: %+v", p.Name, tr)
		}
		if tr.ready {
			readySelected++
		}
		if w.cfg.rank != nil {
			selectedRank = min(selectedRank, w.cfg.rank(src[p.Name]))
		}
	}
	if unavailable >= maxUnavailable && readySelected > 0 {
		fail("%d ready pods selected with %d updated pods unavailable (maxUnavailable %d)", readySelected, unavailable, maxUnavailable)
	}
	if after := unavailable + readySelected; after > max(maxUnavailable, unavailable) {
		fail("selection makes %d updated pods unavailable (before %d, maxUnavailable %d)", after, unavailable, maxUnavailable)
	}
	// Partition: never more updated than the eligible pods minus the partition.
	if after := want.Updated + int32(len(res.Upgrade)); after > max(eligible-partition, want.Updated) {
		fail("%d updated after this round, eligible %d, partition %d", after, eligible, partition)
	}

	// Result.Upgrade is the Selected pods of Result.Pods, in order; candidates are ranked.
	var selectedInPods []*Pod
	for _, pp := range res.Pods {
		w.seen[pp.Reason] = true
		if pp.State == v1alpha1.PodRolloutUpgrading && pp.Reason == ReasonSelected {
			selectedInPods = append(selectedInPods, pp.Pod)
		}
		if w.cfg.rank != nil && len(res.Upgrade) > 0 && pp.State == v1alpha1.PodRolloutWaiting &&
			(pp.Reason == ReasonMaxUnavailable || pp.Reason == ReasonPartition) && w.cfg.rank(src[pp.Pod.Name]) > selectedRank {
			fail("pod %s (rank %d) waits while a pod of rank %d is upgraded", pp.Pod.Name, w.cfg.rank(src[pp.Pod.Name]), selectedRank)
		}
	}
	if fmt.Sprint(names(selectedInPods)) != fmt.Sprint(names(res.Upgrade)) {
		fail("upgrade %v, selected in pods %v", names(res.Upgrade), names(selectedInPods))
	}
	// Not-upgradable pods are reported unless the rollout is paused.
	var notUpgradable []string
	for _, p := range w.pods {
		if tr := truths[p]; !tr.updated && tr.selected && !tr.upgradable && !w.paused() {
			notUpgradable = append(notUpgradable, p.Name)
		}
	}
	if fmt.Sprint(notUpgradable) != fmt.Sprint(names(res.NotUpgradable)) {
		fail("not upgradable %v, oracle %v", names(res.NotUpgradable), notUpgradable)
	}

	for _, p := range res.Reset {
		if len(resetPod(src[p.Name], w.ss, w.now)) == 0 {
			fail("reset of pod %s changes nothing", p.Name)
		}
		w.stats.resets++
	}
	for _, p := range res.Upgrade {
		upgradePod(src[p.Name], w.ss, w.now)
		w.stats.upgrades++
	}
	w.stats.readySelected += int(readySelected)
	for _, p := range res.Upgrade {
		for i := range w.pods {
			if w.pods[i] == src[p.Name] && !w.truth(i).updated {
				fail("pod %s not updated after its upgrade", p.Name)
			}
		}
	}
	return res
}

// tick lets the kubelet work for one step.
func (w *world) tick() {
	w.step++
	w.now = w.now.Add(10 * time.Second)
	for i, p := range w.pods {
		k := w.kube[i]
		pending := false
		for _, c := range allContainers(p) {
			pending = pending || k.running[c.Name] != c.Image
		}
		switch {
		case pending && k.restartAt == 0:
			k.restartAt = w.step + 1 + w.rng.Intn(2)
			if w.rng.Intn(2) == 0 {
				// The kubelet reports the new generation a little before it restarts anything.
				p.Status.ObservedGeneration = p.Generation
			}
		case k.restartAt != 0 && w.step >= k.restartAt:
			// The kubelet syncs the pod: it sees the current generation and restarts every
			// container whose image changed.
			k.restartAt = 0
			for _, c := range allContainers(p) {
				if k.running[c.Name] == c.Image {
					continue
				}
				k.running[c.Name] = c.Image
				st := statusOf(p, c.Name)
				st.RestartCount++
				st.ContainerID = fmt.Sprintf("containerd://%s-%s-%d", p.Name, c.Name, st.RestartCount)
				st.Image, st.ImageID, st.Ready = w.reported(k, c.Image), w.imageID(c.Image), false
				k.readyAt[c.Name] = w.step + 1 + w.rng.Intn(3)
			}
			p.Status.ObservedGeneration = p.Generation
		case pending && p.Status.ObservedGeneration < p.Generation && w.rng.Intn(10) == 0:
			// A crash before the kubelet saw the new spec: restarted at once on the image it
			// runs, and ready again.
			for _, c := range allContainers(p) {
				if k.running[c.Name] != c.Image {
					st := statusOf(p, c.Name)
					st.RestartCount++
					st.ContainerID = fmt.Sprintf("containerd://%s-%s-%d", p.Name, c.Name, st.RestartCount)
					w.stats.crashes++
					break
				}
			}
		}
		ready := true
		for _, st := range allStatuses(p) {
			if at, ok := k.readyAt[st.Name]; ok && w.step >= at {
				st.Ready = true
				delete(k.readyAt, st.Name)
			}
			ready = ready && st.Ready
		}
		if w.step >= k.flapUntil && w.rng.Float64() < w.cfg.flapRate {
			k.flapUntil = w.step + 1 + w.rng.Intn(3)
		}
		setReady(p, ready && w.step >= k.flapUntil, w.now)
	}
}

// settled reports whether the kubelet has nothing left to do and no hot-upgrade reset is due.
func (w *world) settled() bool {
	for i, p := range w.pods {
		k := w.kube[i]
		if k.restartAt != 0 || len(k.readyAt) > 0 {
			return false
		}
		for _, c := range allContainers(p) {
			if k.running[c.Name] != c.Image {
				return false
			}
		}
		if tr := w.truth(i); tr.updated {
			for _, sc := range w.ss.Spec.Containers {
				if sidecar.IsHotUpgrade(&sc) {
					_, idle := sidecar.HotUpgradeContainers(sc.Name, p.Annotations)
					if sidecar.FindPodContainer(p, idle).Image != sc.UpgradeStrategy.HotUpgradeEmptyImage {
						return false
					}
				}
			}
		}
	}
	return true
}

// run drives the rollout to its end and checks the end state.
func (w *world) run() {
	t := w.t
	changed, upgraded := false, 0
	for {
		if c := w.cfg.change; c != nil && !changed && w.step >= c.at && upgraded > 0 {
			changed = true
			w.ss = w.version(c.version, c.hash, c.hashWithoutImage)
		}
		res := w.round()
		var eligible int32
		var updated int32
		for i := range w.pods {
			tr := w.truth(i)
			if tr.upgradable && tr.selected {
				eligible++
			}
			if tr.updated {
				updated++
			}
		}
		final := max(0, eligible-res.Partition)
		upgraded = len(res.Upgrade)
		quiet := !w.paused() && (w.cfg.change == nil || changed)
		if quiet && len(res.Upgrade) == 0 && len(res.Reset) == 0 && updated == final && w.settled() {
			w.checkEnd(res, final)
			for _, r := range w.cfg.reasons {
				if !w.seen[r] {
					t.Errorf("no pod went through reason %q", r)
				}
			}
			t.Logf("%d pods, %d steps: %d upgrades (%d of ready pods), %d resets, %d crashes before the kubelet saw an upgrade, "+
				"at most %d updated pods unavailable (maxUnavailable %d), %d updated, partition %d",
				len(w.pods), w.step, w.stats.upgrades, w.stats.readySelected, w.stats.resets, w.stats.crashes,
				w.stats.maxUnavailable, res.MaxUnavailable, updated, res.Partition)
			return
		}
		if w.step >= w.cfg.maxSteps {
			t.Fatalf("rollout not finished after %d steps: %d/%d updated (want %d)\n%s", w.step, updated, len(w.pods), final, stateOf(res))
		}
		w.tick()
	}
}

func (w *world) checkEnd(res *Result, final int32) {
	t := w.t
	if res.Counts.Updated != final {
		t.Errorf("end: %d updated, want %d", res.Counts.Updated, final)
	}
	waitingPartition := 0
	for _, pp := range res.Pods {
		switch {
		case pp.State == v1alpha1.PodRolloutUpdated:
		case pp.State == v1alpha1.PodRolloutWaiting && pp.Reason == ReasonPartition:
			waitingPartition++
		case pp.State == v1alpha1.PodRolloutWaiting && pp.Reason == ReasonNotSelected:
		case pp.State == v1alpha1.PodRolloutNotUpgradable:
		default:
			t.Errorf("end: pod %s is %s/%s", pp.Pod.Name, pp.State, pp.Reason)
		}
	}
	if int32(waitingPartition) != min(res.Partition, res.Counts.Matched-res.Counts.Updated-int32(len(res.NotUpgradable))-w.notSelected()) {
		t.Errorf("end: %d pods wait for the partition (partition %d)", waitingPartition, res.Partition)
	}
}

func (w *world) notSelected() int32 {
	var n int32
	for i := range w.pods {
		if tr := w.truth(i); !tr.selected && !tr.updated {
			n++
		}
	}
	return n
}

func simulations() []simConfig {
	weights := []v1alpha1.UpdatePriorityWeightTerm{
		{Weight: 50, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}},
		{Weight: 20, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "edge"}}},
		{Weight: 5, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"zone": "z1"}}},
	}
	return []simConfig{
		{
			name: "maxUnavailable=10", pods: 400, flapRate: 0.002, maxSteps: 600,
			reasons:  []string{ReasonSelected, ReasonMaxUnavailable, ReasonPaused, ReasonRestarting, ReasonNotReady},
			strategy: func(s *v1alpha1.SidecarSetUpdateStrategy) { s.MaxUnavailable = intOrStr("10") },
			pause:    [2]int{5, 12},
		},
		{
			name: "maxUnavailable=5%/retag", pods: 300, flapRate: 0.002, maxSteps: 500, retag: true,
			strategy: func(s *v1alpha1.SidecarSetUpdateStrategy) { s.MaxUnavailable = intOrStr("5%") },
		},
		{
			name: "default-maxUnavailable=1", pods: 300, flapRate: 0.0003, maxSteps: 4000,
		},
		{
			name: "partition=150", pods: 400, flapRate: 0.002, maxSteps: 600,
			reasons: []string{ReasonPartition, ReasonPaused},
			strategy: func(s *v1alpha1.SidecarSetUpdateStrategy) {
				s.Partition, s.MaxUnavailable = intOrStr("150"), intOrStr("10%")
			},
			pause: [2]int{3, 6},
		},
		{
			name: "partition=30%", pods: 350, flapRate: 0.002, maxSteps: 600,
			strategy: func(s *v1alpha1.SidecarSetUpdateStrategy) {
				s.Partition, s.MaxUnavailable = intOrStr("30%"), intOrStr("20")
			},
		},
		{
			name: "priority-weight", pods: 400, flapRate: 0.002, maxSteps: 800,
			strategy: func(s *v1alpha1.SidecarSetUpdateStrategy) {
				s.MaxUnavailable = intOrStr("8")
				s.PriorityStrategy = &v1alpha1.UpdatePriorityStrategy{WeightPriority: weights}
			},
			rank: func(p *corev1.Pod) int64 {
				var r int64
				for _, w := range weights {
					if labels.SelectorFromSet(w.MatchSelector.MatchLabels).Matches(labels.Set(p.Labels)) {
						r += int64(w.Weight)
					}
				}
				return r
			},
		},
		{
			name: "priority-order", pods: 300, flapRate: 0.002, maxSteps: 800,
			strategy: func(s *v1alpha1.SidecarSetUpdateStrategy) {
				s.MaxUnavailable, s.Partition = intOrStr("3%"), intOrStr("20")
				s.PriorityStrategy = &v1alpha1.UpdatePriorityStrategy{OrderPriority: []v1alpha1.UpdatePriorityOrderTerm{{OrderedKey: "sts"}}}
			},
			rank: func(p *corev1.Pod) int64 {
				v, ok := p.Labels["sts"]
				if !ok {
					return 1 << 40 // pods without the key first
				}
				return intSuffix(v)
			},
		},
		{
			name: "scatter", pods: 400, flapRate: 0.002, maxSteps: 600,
			strategy: func(s *v1alpha1.SidecarSetUpdateStrategy) {
				s.MaxUnavailable = intOrStr("12")
				s.ScatterStrategy = v1alpha1.UpdateScatterStrategy{{Key: "zone", Value: "*"}, {Key: "tier", Value: "canary"}}
			},
		},
		{
			name: "priority+scatter+partition", pods: 500, flapRate: 0.002, maxSteps: 800,
			strategy: func(s *v1alpha1.SidecarSetUpdateStrategy) {
				s.MaxUnavailable, s.Partition = intOrStr("4%"), intOrStr("10%")
				s.PriorityStrategy = &v1alpha1.UpdatePriorityStrategy{WeightPriority: weights}
				s.ScatterStrategy = v1alpha1.UpdateScatterStrategy{{Key: "zone", Value: "z0"}}
			},
		},
		{
			name: "selector", pods: 400, flapRate: 0.002, maxSteps: 600,
			reasons: []string{ReasonNotSelected, ReasonPartition},
			strategy: func(s *v1alpha1.SidecarSetUpdateStrategy) {
				s.MaxUnavailable, s.Partition = intOrStr("5"), intOrStr("10")
				s.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
			},
		},
		{
			name: "not-upgradable", pods: 400, flapRate: 0.002, maxSteps: 600, notUpgradable: 7,
			reasons: []string{ReasonImmutableField, ReasonPartition},
			strategy: func(s *v1alpha1.SidecarSetUpdateStrategy) {
				s.MaxUnavailable, s.Partition = intOrStr("10"), intOrStr("10%")
			},
		},
		{
			name: "image-change-mid-rollout", pods: 400, flapRate: 0.002, maxSteps: 800,
			reasons:  []string{ReasonPreviousUpgrade},
			strategy: func(s *v1alpha1.SidecarSetUpdateStrategy) { s.MaxUnavailable = intOrStr("15") },
			change:   &specChange{at: 9, version: "v3", hash: "h3", hashWithoutImage: "nh1"},
		},
		{
			name: "non-image-change-mid-rollout", pods: 300, flapRate: 0.002, maxSteps: 400,
			reasons:  []string{ReasonImmutableField},
			strategy: func(s *v1alpha1.SidecarSetUpdateStrategy) { s.MaxUnavailable = intOrStr("15") },
			change:   &specChange{at: 7, version: "v3", hash: "h3", hashWithoutImage: "nh2"},
		},
		{
			name: "namespaces+priority+partition", pods: 400, flapRate: 0.002, maxSteps: 800, namespaces: 5,
			reasons: []string{ReasonNamespaceShare, ReasonMaxUnavailable, ReasonPartition, ReasonPaused},
			strategy: func(s *v1alpha1.SidecarSetUpdateStrategy) {
				s.MaxUnavailable, s.Partition = intOrStr("5%"), intOrStr("20")
				s.PriorityStrategy = &v1alpha1.UpdatePriorityStrategy{WeightPriority: weights}
			},
			pause: [2]int{4, 8},
		},
		{
			name: "hot-upgrade+native-sidecar", pods: 300, flapRate: 0.002, maxSteps: 800,
			reasons: []string{ReasonHotUpgradeReset, ReasonRestarting, ReasonPaused, ReasonPreviousUpgrade},
			sidecars: func(ss *v1alpha1.SidecarSet) {
				ss.Spec.Containers = append(ss.Spec.Containers, hotSidecar("proxy", "proxy:v1"))
				ss.Spec.InitContainers = append(ss.Spec.InitContainers, nativeSidecar("agent", "agent:v1"))
			},
			strategy: func(s *v1alpha1.SidecarSetUpdateStrategy) { s.MaxUnavailable = intOrStr("10") },
			pause:    [2]int{10, 14},
			change:   &specChange{at: 20, version: "v3", hash: "h3", hashWithoutImage: "nh1"},
		},
	}
}

func TestRolloutSimulation(t *testing.T) {
	seeds := []int64{1, 2, 3}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, cfg := range simulations() {
		for _, seed := range seeds {
			t.Run(fmt.Sprintf("%s/seed=%d", cfg.name, seed), func(t *testing.T) {
				t.Parallel()
				newWorld(t, cfg, seed).run()
			})
		}
	}
}

// TestRolloutSimulationMaxUnavailableZero: with maxUnavailable 0 only pods that are not ready
// are ever upgraded.
func TestRolloutSimulationMaxUnavailableZero(t *testing.T) {
	w := newWorld(t, simConfig{
		name: "maxUnavailable=0", pods: 300, flapRate: 0.01,
		strategy: func(s *v1alpha1.SidecarSetUpdateStrategy) { s.MaxUnavailable = intOrStr("0") },
	}, 1)
	for range 100 {
		w.round()
		w.tick()
	}
	if w.stats.readySelected != 0 {
		t.Errorf("%d ready pods upgraded with maxUnavailable 0", w.stats.readySelected)
	}
	if w.stats.upgrades == 0 {
		t.Error("no unready pod was upgraded")
	}
	t.Logf("%d unready pods upgraded in 100 steps", w.stats.upgrades)
}
