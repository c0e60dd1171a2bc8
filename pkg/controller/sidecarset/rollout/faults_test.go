package rollout

import (
	"fmt"
	"maps"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// Rollouts under faults: the simulation of simulation_test.go, with the planner fed as the
// controller feeds it, from a cache, and the faults a real cluster brings:
//
//   - the cache shows each pod as it was up to maxLag steps ago (a watch that lags, drops and
//     relists), never going back;
//   - an upgrade's answer is lost now and then (kube-apiserver restarting): the write was applied
//     or not, at random, and the controller cannot tell;
//   - the controller's term ends now and then: in the same process (its expectations of its own
//     writes are kept) or in another replica (a new cache, listed afresh, and no expectations);
//   - some pods never get a node (Pending, no container statuses) and some are never ready:
//     the pods a namespace editor can make;
//   - the pods are spread over namespaces, and in one of them (brokenNS) no pod is ready again
//     once upgraded: what a namespace editor can make of its pods after an upgrade (their
//     readiness, a config or a NetworkPolicy the new sidecar meets there).
//
// The controller's part is played as in pkg/controller/sidecarset: its writes read the newest pod
// and apply the plan's upgrade to it (leaving a pod taken without the budget that became ready),
// mark a pod upgraded while not ready (NotReadyBefore), and expect the cache to show each write
// (Options.Unseen) for at most expectTTL steps, and times the namespace that holds every place of
// maxUnavailable while others wait (Result.Holder) to let its hold lapse after lapseSteps
// (Options.Lapsed; a term in another replica measures again). The oracle sees the truth and
// checks, at every round, that the pods the rollout made unavailable never exceed maxUnavailable
// (but those of a namespace whose hold lapsed, after it held every place by itself), that no
// namespace's ever do, and that the rollout ends in every namespace but the broken one.

// faultConfig is a rollout scenario under faults.
type faultConfig struct {
	simConfig
	maxLag     int     // steps the cache may lag behind a pod
	lostAnswer float64 // chance that an upgrade's answer is lost
	termEnds   float64 // chance per step that the term ends (half of them in another replica)
	pending    int     // every pending-th pod never gets a node
	unready    int     // every unready-th pod is never ready
	namespaces int     // pod i is in namespace ns-<i mod namespaces>; all in "default" when 0
	broken     bool    // no pod of brokenNS is ready again once upgraded
}

// brokenNS is the namespace whose upgraded pods are never ready (faultConfig.broken).
const brokenNS = "ns-0"

// lapseSteps is NamespaceHoldLapse in steps of 10 s.
const lapseSteps = int(NamespaceHoldLapse / (10 * time.Second))

// expectTTL is the controller's expectationTTL in steps of 10 s.
const expectTTL = 30

type faultWorld struct {
	*world
	cfg      faultConfig
	rv       uint64
	history  [][]*corev1.Pod // per pod, its last maxLag+1 versions, oldest first
	shown    []*corev1.Pod   // per pod, the version the cache shows
	expect   map[string]expectation
	pendings sets.Set[string] // pods that never get a node
	// exempt are the pods the oracle knows were not available when they were upgraded and have
	// not been available since: they are not the rollout's doing.
	exempt       sets.Set[string]
	worst, terms int
	lost         int
	// the controller's timing of namespace holds (NamespaceHolds)
	holder     string
	holdSince  int
	lapsed     map[string]bool
	lapses     int
	brokenMost int32 // most pods of brokenNS the rollout made unavailable at once
}

// expectation is what the controller expects the cache to show of a pod it wrote.
type expectation struct {
	rv       uint64
	deadline int
}

func newFaultWorld(t *testing.T, cfg faultConfig, seed int64) *faultWorld {
	f := &faultWorld{world: newWorld(t, cfg.simConfig, seed), cfg: cfg, expect: map[string]expectation{},
		pendings: sets.New[string](), exempt: sets.New[string](), lapsed: map[string]bool{}}
	for i, p := range f.pods {
		if cfg.namespaces > 0 {
			p.Namespace = fmt.Sprintf("ns-%d", i%cfg.namespaces)
		}
		switch {
		case cfg.pending > 0 && i%cfg.pending == 1:
			f.pendings.Insert(p.Name)
			p.Spec.NodeName = ""
			p.Status = corev1.PodStatus{Phase: corev1.PodPending}
		case cfg.unready > 0 && i%cfg.unready == 2:
			f.kube[i].flapUntil = 1 << 30
			setReady(p, false, f.now)
		}
		f.bump(p)
	}
	f.history = make([][]*corev1.Pod, len(f.pods))
	f.shown = make([]*corev1.Pod, len(f.pods))
	f.record()
	copy(f.shown, f.latest())
	return f
}

// bump gives a pod that changed a new resourceVersion, as kube-apiserver does.
func (f *faultWorld) bump(p *corev1.Pod) {
	f.rv++
	p.ResourceVersion = strconv.FormatUint(f.rv, 10)
}

func rvOf(p *corev1.Pod) uint64 { v, _ := strconv.ParseUint(p.ResourceVersion, 10, 64); return v }

// record keeps each pod's version of this step.
func (f *faultWorld) record() {
	for i, p := range f.pods {
		h := f.history[i]
		if len(h) > 0 && h[len(h)-1].ResourceVersion == p.ResourceVersion {
			continue
		}
		h = append(h, p.DeepCopy())
		if len(h) > f.cfg.maxLag+1 {
			h = h[1:]
		}
		f.history[i] = h
	}
}

func (f *faultWorld) latest() []*corev1.Pod {
	out := make([]*corev1.Pod, len(f.history))
	for i, h := range f.history {
		out[i] = h[len(h)-1]
	}
	return out
}

// catchUp moves the cache forward by a random part of each pod's history.
func (f *faultWorld) catchUp() {
	for i, h := range f.history {
		v := h[f.rng.Intn(len(h))]
		if rvOf(v) > rvOf(f.shown[i]) {
			f.shown[i] = v
		}
	}
}

// unseen returns the pods whose writes the cache does not show, forgetting met expectations.
func (f *faultWorld) unseen() map[string]bool {
	out := map[string]bool{}
	for i, p := range f.shown {
		e, ok := f.expect[p.Name]
		if !ok {
			continue
		}
		if rvOf(p) >= e.rv || f.step > e.deadline {
			delete(f.expect, p.Name)
			continue
		}
		out[f.pods[i].Namespace+"/"+p.Name] = true
	}
	return out
}

// truthUnavailable counts the updated pods the rollout made unavailable (the oracle's view), but
// those of the namespaces whose hold lapsed, and those per namespace, lapsed or not; it forgets
// the exemption of the pods that became available.
func (f *faultWorld) truthUnavailable() (int32, map[string]int32) {
	var n int32
	byNS := map[string]int32{}
	for i, p := range f.pods {
		tr := f.truth(i)
		if tr.available() {
			f.exempt.Delete(p.Name)
		}
		if tr.updated && !tr.available() && !f.exempt.Has(p.Name) {
			byNS[p.Namespace]++
			if !f.lapsed[p.Namespace] {
				n++
			}
		}
	}
	return n, byNS
}

// lapsedNow returns the namespaces whose hold lapsed, with the holder once it has held for
// lapseSteps; the oracle checks that a new one holds every place of maxUnavailable by itself.
func (f *faultWorld) lapsedNow(maxUnavailable int32) map[string]bool {
	if f.holder != "" && f.step-f.holdSince >= lapseSteps && !f.lapsed[f.holder] {
		if _, byNS := f.truthUnavailable(); byNS[f.holder] < maxUnavailable {
			f.t.Fatalf("step %d: namespace %s's hold lapses with %d of its pods unavailable, maxUnavailable %d", f.step, f.holder, byNS[f.holder], maxUnavailable)
		}
		f.lapsed[f.holder] = true
		f.lapses++
	}
	return maps.Clone(f.lapsed)
}

// share is the rule of share.go: max(1, min(B-1, ceil(B*n/N))), N the pods of the competing
// namespaces and of ns.
func (f *faultWorld) share(b int32, ns string, competing sets.Set[string]) int32 {
	var n, total int32
	for _, p := range f.pods {
		if p.Namespace == ns {
			n++
		}
		if p.Namespace == ns || competing.Has(p.Namespace) {
			total++
		}
	}
	return max(1, min(b-1, (b*n+total-1)/total))
}

// competing returns the namespaces with a pod the cache shows waiting for its upgrade and ready
// (what the planner divides maxUnavailable among), unseen ones aside.
func (f *faultWorld) competing(unseen map[string]bool) sets.Set[string] {
	out := sets.New[string]()
	for _, p := range f.shown {
		h, _ := sidecar.PodHashEntry(p.Annotations, sidecar.HashAnnotation, ssName)
		if !unseen[p.Namespace+"/"+p.Name] && h.Hash != f.ss.Annotations[sidecar.HashAnnotation] &&
			p.Status.Phase == corev1.PodRunning && readyCondition(p) {
			out.Insert(p.Namespace)
		}
	}
	return out
}

// observeHolds plays NamespaceHolds.observe: lapsed namespaces stay so while they hold places.
func (f *faultWorld) observeHolds(res *Result) {
	for ns := range f.lapsed {
		if res.Holding[ns] == 0 {
			delete(f.lapsed, ns)
		}
	}
	switch {
	case res.Holder == "":
		f.holder = ""
	case res.Holder != f.holder:
		f.holder, f.holdSince = res.Holder, f.step
	}
}

// round plans on the cache, writes the plan's upgrades as the controller does, and checks them
// against the truth.
func (f *faultWorld) round() {
	view := make([]*Pod, len(f.shown))
	byName := map[string]int{}
	for i, p := range f.shown {
		view[i] = NewPod(p)
		byName[p.Name] = i
	}
	maxUnavailable := ResolveMaxUnavailable(f.ss.Spec.UpdateStrategy.MaxUnavailable, int32(len(f.pods)))
	unseen := f.unseen()
	competing := f.competing(unseen)
	res := PlanWith(f.ss, view, Options{Unseen: unseen, Lapsed: f.lapsedNow(maxUnavailable)})
	before, beforeNS := f.truthUnavailable()
	var took int32 // pods available in truth that this round made unavailable
	tookNS := map[string]int32{}
	ready := ReadyForSidecar(f.ss)
	for _, pp := range res.Upgrade {
		i := byName[pp.Name]
		p := f.pods[i]
		notReady := !ready(NewPod(p))
		if res.Unbudgeted[pp] && !notReady {
			continue // the write reads it ready: left to the next round, which counts it
		}
		based := rvOf(p)
		if len(upgradePod(p, f.ss, f.now)) == 0 {
			continue // already upgraded (the cache lagged): nothing written
		}
		sidecar.SetUpgradeState(p.Annotations, ssName, sidecar.UpgradeState{State: "Upgrading", Reason: ReasonRestarting, NotReadyBefore: notReady})
		if notReady {
			f.exempt.Insert(p.Name)
		} else {
			took++
			tookNS[p.Namespace]++
		}
		lost := f.rng.Float64() < f.cfg.lostAnswer
		if lost && f.rng.Intn(2) == 0 { // never applied: the pod stays as it was
			f.lost++
			f.pods[i] = f.history[i][len(f.history[i])-1].DeepCopy()
			f.exempt.Delete(p.Name)
			if !notReady {
				took--
				tookNS[p.Namespace]--
			}
			f.expect[p.Name] = expectation{rv: based + 1, deadline: f.step + expectTTL}
			continue
		}
		f.bump(p)
		f.stats.upgrades++
		if f.cfg.broken && p.Namespace == brokenNS {
			f.kube[i].flapUntil = 1 << 30 // never ready again
		}
		if lost {
			f.lost++
			f.expect[p.Name] = expectation{rv: based + 1, deadline: f.step + expectTTL}
		} else {
			f.expect[p.Name] = expectation{rv: rvOf(p), deadline: f.step + expectTTL}
		}
	}
	if f.lapsed[brokenNS] {
		took -= tookNS[brokenNS] // they count against its share alone
	}
	if after := before + took; after > max(maxUnavailable, before) {
		f.t.Fatalf("step %d: the round made %d more pods unavailable with %d already (maxUnavailable %d)\n%s",
			f.step, took, before, maxUnavailable, stateOf(res))
	}
	for ns, n := range tookNS {
		if after := beforeNS[ns] + n; n > 0 && after > max(maxUnavailable, beforeNS[ns]) {
			f.t.Fatalf("step %d: the round made %d more pods of namespace %s unavailable with %d already (maxUnavailable %d)\n%s",
				f.step, n, ns, beforeNS[ns], maxUnavailable, stateOf(res))
		}
	}
	bounded := competing.Len() > 1 || f.lapsed[brokenNS] // by its share: others compete, or its hold lapsed
	if bounded && tookNS[brokenNS] > 0 {
		if share := f.share(maxUnavailable, brokenNS, competing); beforeNS[brokenNS]+tookNS[brokenNS] > max(share, beforeNS[brokenNS]) {
			f.t.Fatalf("step %d: the round made %d more pods of namespace %s unavailable with %d already (share %d, competing %v, lapsed %v)\n%s",
				f.step, tookNS[brokenNS], brokenNS, beforeNS[brokenNS], share, sets.List(competing), f.lapsed[brokenNS], stateOf(res))
		}
	}
	f.brokenMost = max(f.brokenMost, beforeNS[brokenNS]+tookNS[brokenNS])
	f.worst = max(f.worst, int(before+took))
	f.observeHolds(res)
}

// endTerm ends the controller's term: in another replica, the cache is listed afresh and the
// expectations are gone.
func (f *faultWorld) endTerm() {
	f.terms++
	if f.rng.Intn(2) == 0 {
		return // the same process: a new term keeps its cache and expectations
	}
	f.expect = map[string]expectation{}
	f.holder, f.lapsed = "", map[string]bool{} // measured again from the new leader's first round
	copy(f.shown, f.latest())
}

// tick lets the kubelet work (pods without a node stay as they are), then the cache catch up.
func (f *faultWorld) tick() {
	saved := map[int]*corev1.Pod{}
	for i, p := range f.pods {
		if f.pendings.Has(p.Name) {
			saved[i] = p.DeepCopy()
		}
	}
	before := make([]string, len(f.pods))
	for i, p := range f.pods {
		before[i] = fingerprint(p)
	}
	f.world.tick()
	for i, p := range saved {
		f.pods[i], f.kube[i].restartAt = p, 0
	}
	for i, p := range f.pods {
		if fingerprint(p) != before[i] {
			f.bump(p)
		}
	}
	f.record()
	f.catchUp()
	if f.rng.Float64() < f.cfg.termEnds {
		f.endTerm()
	}
}

// fingerprint sums up what the simulated kubelet changes of a pod's status.
func fingerprint(p *corev1.Pod) string {
	b := strconv.AppendInt(nil, p.Status.ObservedGeneration, 10)
	b = strconv.AppendBool(b, readyCondition(p))
	for _, st := range allStatuses(p) {
		b = append(b, st.ContainerID...)
		b = strconv.AppendBool(b, st.Ready)
	}
	return string(b)
}

// done reports whether every pod is updated and every one that can run is available, in every
// namespace but the broken one.
func (f *faultWorld) done() bool {
	for i, p := range f.pods {
		if f.cfg.broken && p.Namespace == brokenNS {
			continue
		}
		tr := f.truth(i)
		if !tr.updated || (!f.pendings.Has(p.Name) && f.kube[i].flapUntil < 1<<30 && !tr.available()) {
			return false
		}
	}
	return true
}

func (f *faultWorld) run() {
	for !f.done() {
		if f.step >= f.cfg.maxSteps {
			f.t.Fatalf("rollout not finished after %d steps", f.step)
		}
		f.round()
		f.tick()
	}
	f.t.Logf("%d pods in %d steps: %d upgrades, %d answers lost, %d terms ended, at most %d pods unavailable by the rollout; "+
		"namespace %s: at most %d unavailable, %d lapses",
		len(f.pods), f.step, f.stats.upgrades, f.lost, f.terms, f.worst, brokenNS, f.brokenMost, f.lapses)
}

func TestRolloutUnderFaults(t *testing.T) {
	for _, cfg := range []faultConfig{
		{simConfig: simConfig{name: "maxUnavailable=10", pods: 200, maxSteps: 1500,
			strategy: func(s *v1alpha1.SidecarSetUpdateStrategy) { s.MaxUnavailable = intOrStr("10") }},
			maxLag: 3, lostAnswer: 0.05, termEnds: 0.02, pending: 25, unready: 30},
		{simConfig: simConfig{name: "maxUnavailable=1", pods: 60, maxSteps: 3000},
			maxLag: 4, lostAnswer: 0.1, termEnds: 0.05, pending: 20, unready: 15},
		{simConfig: simConfig{name: "maxUnavailable=5%/slow-cache", pods: 200, maxSteps: 2000,
			strategy: func(s *v1alpha1.SidecarSetUpdateStrategy) { s.MaxUnavailable = intOrStr("5%") }},
			maxLag: 8, lostAnswer: 0.2, termEnds: 0.01, pending: 40},
		// A namespace whose upgraded pods are never ready again: it holds its share, the others
		// finish. share(ns-0) = min(9, ceil(10*50/200)) = 3.
		{simConfig: simConfig{name: "maxUnavailable=10/broken-namespace", pods: 200, maxSteps: 1500,
			strategy: func(s *v1alpha1.SidecarSetUpdateStrategy) { s.MaxUnavailable = intOrStr("10") }},
			maxLag: 3, lostAnswer: 0.05, termEnds: 0.02, pending: 25, unready: 30, namespaces: 4, broken: true},
		// B=2: every share is one place.
		{simConfig: simConfig{name: "maxUnavailable=2/broken-namespace", pods: 90, maxSteps: 2000,
			strategy: func(s *v1alpha1.SidecarSetUpdateStrategy) { s.MaxUnavailable = intOrStr("2") }},
			maxLag: 4, lostAnswer: 0.1, termEnds: 0.02, pending: 20, unready: 15, namespaces: 3, broken: true},
		// B=1: the broken namespace holds the one place until its hold lapses.
		{simConfig: simConfig{name: "maxUnavailable=1/broken-namespace", pods: 60, maxSteps: 3000},
			maxLag: 4, lostAnswer: 0.1, termEnds: 0.01, pending: 20, unready: 15, namespaces: 3, broken: true},
	} {
		for _, seed := range []int64{1, 2, 3} {
			t.Run(fmt.Sprintf("%s/seed=%d", cfg.name, seed), func(t *testing.T) {
				t.Parallel()
				newFaultWorld(t, cfg, seed).run()
			})
		}
	}
}
