// Package rollout plans the in-place upgrade of a SidecarSet's sidecars across its pods. It is a
// pure core: given a SidecarSet and the pods its selector matches, it says which pods the
// SidecarSet manages, the status counters, which pods to upgrade, to reset (hot upgrade) or to mark
// not upgradable this round, and for every pod its rollout state and why it waits. It performs no
// I/O and reads no clock; the controller applies a plan and the sidecarsets/rollout subresource
// shows one.
package rollout

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// Reasons of the pod states of a plan.
const (
	ReasonSelected          = "Selected"
	ReasonRestarting        = "Restarting"
	ReasonNotReady          = "NotReady"
	ReasonHotUpgradeReset   = "HotUpgradeReset"
	ReasonPreviousUpgrade   = "PreviousUpgradeInProgress"
	ReasonPartition         = "Partition"
	ReasonMaxUnavailable    = "MaxUnavailable"
	ReasonPaused            = "Paused"
	ReasonNotSelected       = "NotSelected"
	ReasonNotUpdateStrategy = "NotUpdateStrategy"
	ReasonImmutableField    = sidecar.NotUpgradableReason
	ReasonWritePending      = "WritePending"
	ReasonRetryBackoff      = "RetryBackoff"
	ReasonPreDownloading    = "PreDownloading"
)

// Counts are the SidecarSet status counters (OpenKruise §5.4).
type Counts struct {
	// Matched is the number of managed pods.
	Matched int32
	// Updated counts the pods whose sidecars come from the current spec.
	Updated int32
	// Ready counts the pods whose sidecars run their spec images and that are ready.
	Ready int32
	// UpdatedReady counts the pods that are both.
	UpdatedReady int32
}

// PodPlan is one managed pod's rollout state.
type PodPlan struct {
	Pod *Pod
	// Revision is the SidecarSetRevision the pod's sidecars come from, when recorded.
	Revision string
	State    v1alpha1.PodRolloutState
	Reason   string
	Message  string
	// Batch is set by Preview: the round that would upgrade the pod, from 1; 0 for none.
	Batch int32
	// NotReadyBefore: the pod was upgraded when it was not ready and has not been available
	// since; it holds no place of maxUnavailable (sidecar.UpgradeState.NotReadyBefore).
	NotReadyBefore bool
}

// Result is the plan of one round.
type Result struct {
	Counts Counts
	// Pods are the managed pods: those not waiting for an upgrade by name, then the waiting ones
	// in upgrade order.
	Pods []PodPlan
	// Upgrade are the pods to upgrade now, in order.
	Upgrade []*Pod
	// Upcoming are the pods the rollout will upgrade, now or in later rounds, in order: the
	// candidates partition does not keep; none while the rollout is paused, NotUpdate, or waits
	// for hot-upgrade resets. Pre-download pulls their new images ahead of their upgrades.
	Upcoming []*Pod
	// Resize are the pods of Upgrade whose sidecars' resources change too (Options).
	Resize map[*Pod]bool
	// Unbudgeted are the pods of Upgrade taken without maxUnavailable because they were not ready
	// (OpenKruise §5.7). The pods come from a cache, which may not show yet that one became
	// ready: the controller reads them again (ReadyForSidecar) and plans again with what it read.
	Unbudgeted map[*Pod]bool
	// Recreate are the pods to evict now so that their owners recreate them (RecreateAnnotation).
	Recreate []*Pod
	// Reset are the pods whose idle hot-upgrade twins go back to the empty image now.
	Reset []*Pod
	// NotUpgradable are the pods the current spec cannot upgrade in place, to be marked so.
	NotUpgradable []*Pod
	// NotInjected are the selected pods that missed injection (MissedInjection).
	NotInjected []*Pod
	// Terminating counts the selected pods being deleted.
	Terminating int32
	// MaxUnavailable and Partition are the resolved strategy values.
	MaxUnavailable, Partition int32
	// Unavailable counts the updated pods that are not available (before this round's upgrades)
	// but those that were not ready before their upgrade (NotReadyBefore), and the pods whose
	// last write is not seen yet (Unseen), but those of the namespaces whose hold lapsed
	// (Options.Lapsed).
	Unavailable int32
	// Holding counts, per namespace, the pods that hold a place of its share of maxUnavailable
	// (share.go), lapsed or not; nil when the budget is not divided (a NamespacedSidecarSet, or
	// pods in one namespace).
	Holding map[string]int32
	// Holder is the namespace whose pods hold every place of maxUnavailable by themselves while
	// pods of other namespaces wait for one, "" for none: the controller lets its hold lapse
	// after NamespaceHoldLapse (Options.Lapsed).
	Holder string
	// Unseen counts the managed pods whose last write the pods given do not show (Options.Unseen).
	Unseen int32
}

// Done reports whether nothing is left to do until something changes: every pod is updated and
// available, and no reset is due.
func (r *Result) Done() bool {
	return r.Counts.Updated == r.Counts.Matched && r.Unavailable == 0 && len(r.Reset) == 0 && r.Unseen == 0
}

// Plan plans a round of the rollout of ss over pods, the pods its selector and namespace rules
// match (it keeps those ss manages).
func Plan(ss *v1alpha1.SidecarSet, pods []*Pod) *Result {
	return PlanWith(ss, pods, Options{})
}

// PlanWith plans a round as Plan does, knowing opts.
func PlanWith(ss *v1alpha1.SidecarSet, pods []*Pod, opts Options) *Result {
	res, _ := planRound(ss, pods, opts)
	return res
}

// round is what Plan derives on the way: the managed pods, their facts, and the upgrade
// candidates (indexes into managed) in upgrade order, empty when the rollout is blocked or waits
// for hot-upgrade resets.
type round struct {
	managed    []*Pod
	facts      []podFacts
	candidates []int
	shares     *shares
}

func planRound(ss *v1alpha1.SidecarSet, pods []*Pod, opts Options) (*Result, *round) {
	p := newPlanner(ss, opts)
	managed := make([]*Pod, 0, len(pods))
	res := &Result{}
	for _, pod := range pods {
		if pod.Deleting {
			res.Terminating++
		}
		switch {
		case Managed(ss, pod):
			managed = append(managed, pod)
		case MissedInjection(ss, pod):
			res.NotInjected = append(res.NotInjected, pod)
		}
	}
	facts := make([]podFacts, len(managed))
	sh := newShares(ss, opts.Lapsed)
	for i, pod := range managed {
		facts[i] = p.facts(pod)
		res.Counts.add(&facts[i])
		holds := facts[i].holdsPlace() || facts[i].unseen
		if holds {
			res.Unavailable++
		}
		if facts[i].unseen {
			res.Unseen++
		}
		sh.count(pod, holds, facts[i].born)
	}
	sh, own := sh.divided()
	res.Unavailable -= own
	total := res.Counts.Matched
	res.Partition = ResolvePartition(ss.Spec.UpdateStrategy.Partition, total)
	res.MaxUnavailable = ResolveMaxUnavailable(ss.Spec.UpdateStrategy.MaxUnavailable, total)
	if sh != nil {
		sh.max, res.Holding = res.MaxUnavailable, sh.holding()
	}

	plans := make([]PodPlan, len(managed))
	var candidates []int
	for i := range managed {
		plans[i] = p.classify(&facts[i])
		if facts[i].unseen {
			plans[i] = PodPlan{Pod: managed[i], Revision: facts[i].revision, State: plans[i].State, Reason: ReasonWritePending}
			if plans[i].State == "" || plans[i].State == v1alpha1.PodRolloutNotUpgradable {
				plans[i].State = v1alpha1.PodRolloutWaiting
			}
			continue
		}
		if facts[i].notReadyBefore {
			plans[i].NotReadyBefore = true
			plans[i].Message = strings.TrimPrefix(plans[i].Message+"; "+notReadyBeforeMessage, "; ")
		}
		if plans[i].State == "" {
			candidates = append(candidates, i)
		}
		if plans[i].State == v1alpha1.PodRolloutNotUpgradable && p.blocked == "" {
			res.NotUpgradable = append(res.NotUpgradable, managed[i])
		}
	}
	if p.blocked == "" {
		res.Reset = p.resets(managed)
	}
	for _, i := range candidates {
		plans[i].State, plans[i].Reason = v1alpha1.PodRolloutWaiting, p.blocked
	}
	r := &round{managed: managed, facts: facts, shares: sh}
	if p.blocked == "" && len(res.Reset) == 0 {
		candidates = sortCandidates(&ss.Spec.UpdateStrategy, managed, candidates)
		var used int32
		res.Upgrade, used = p.choose(res, managed, facts, plans, candidates, sh)
		r.candidates = candidates
		for _, i := range candidates[:max(0, len(candidates)-int(res.Partition))] {
			res.Upcoming = append(res.Upcoming, managed[i])
		}
		res.Holder = holder(sh, managed, plans, candidates)
		res.Recreate = p.recreates(res, managed, plans, used)
	} else if len(res.Reset) > 0 {
		for _, i := range candidates {
			plans[i].Reason = ReasonHotUpgradeReset
		}
	}
	res.Pods = orderPlans(plans, candidates)
	messages := map[string]string{} // by reason: formatted once per plan
	for i := range res.Pods {
		if pp := &res.Pods[i]; pp.Message == "" && pp.Reason != "" {
			m, ok := messages[pp.Reason]
			if !ok {
				m = message(res, pp.Reason)
				messages[pp.Reason] = m
			}
			pp.Message = m
		}
	}
	return res, r
}

// preDownloadAnnotation is the annotation that turns pre-download on (predownload.ParallelismAnnotation).
const preDownloadAnnotation = "apps.kruise.io/image-predownload-parallelism"

// choose walks the candidates in order: partition keeps the last ones; a candidate whose upgrade
// waits for its pre-download (Options.PreDownloading) is skipped; a candidate that is not
// ready for its sidecars costs nothing (res.Unbudgeted); a ready one whose namespace holds its
// share of maxUnavailable waits (sh, share.go), and the walk goes on; another ready one is taken
// while fewer than maxUnavailable updated pods are unavailable, and the walk stops at the first
// that would exceed it (OpenKruise §5.7). It also returns how many pods are unavailable once
// these are upgraded.
func (p *planner) choose(res *Result, pods []*Pod, facts []podFacts, plans []PodPlan, candidates []int, sh *shares) ([]*Pod, int32) {
	keep := len(candidates) - int(res.Partition)
	unavailable := res.Unavailable
	used := sh.used(false)
	sh.contend(pods, facts, candidates[:max(0, keep)], func(pod *Pod) bool {
		return p.opts.Deferred[pod.UID] || p.opts.PreDownloading[pod.UID]
	})
	shareMessages := map[text]string{}
	var out []*Pod
	stopped := false
	for n, i := range candidates {
		take := false
		switch ns := pods[i].namespace; {
		case n >= keep:
			plans[i].Reason = ReasonPartition
		case p.opts.Deferred[pods[i].UID]:
			plans[i].Reason = ReasonRetryBackoff
		case p.opts.PreDownloading[pods[i].UID]:
			plans[i].Reason = ReasonPreDownloading
		case facts[i].readyForSidecar && sh.full(used, ns):
			if _, ok := shareMessages[ns]; !ok {
				shareMessages[ns] = sh.message(ns)
			}
			plans[i].Reason, plans[i].Message = ReasonNamespaceShare, shareMessages[ns]
		case stopped:
			plans[i].Reason = ReasonMaxUnavailable
		case !facts[i].readyForSidecar:
			take = true
			if res.Unbudgeted == nil {
				res.Unbudgeted = map[*Pod]bool{}
			}
			res.Unbudgeted[pods[i]] = true
		case unavailable >= res.MaxUnavailable:
			stopped = true
			plans[i].Reason = ReasonMaxUnavailable
		default:
			unavailable++
			sh.take(used, ns)
			take = true
		}
		if take {
			plans[i].State, plans[i].Reason = v1alpha1.PodRolloutUpgrading, ReasonSelected
			out = append(out, pods[i])
			if facts[i].resize {
				if res.Resize == nil {
					res.Resize = map[*Pod]bool{}
				}
				res.Resize[pods[i]] = true
			}
		}
	}
	return out, unavailable
}

// holder returns the namespace whose pods hold every place of maxUnavailable by themselves
// (shares.holder) while a pod of another namespace waits for a place, "" for none.
func holder(sh *shares, pods []*Pod, plans []PodPlan, candidates []int) string {
	ns := sh.holder()
	if ns == "" {
		return ""
	}
	for _, i := range candidates {
		if plans[i].Reason == ReasonMaxUnavailable && pods[i].Namespace != ns {
			return ns
		}
	}
	return ""
}

// orderPlans lists the pods that do not wait for an upgrade by namespace/name, then the
// candidates in upgrade order.
func orderPlans(plans []PodPlan, candidates []int) []PodPlan {
	isCandidate := make([]bool, len(plans))
	for _, i := range candidates {
		isCandidate[i] = true
	}
	out := make([]PodPlan, 0, len(plans))
	for i := range plans {
		if !isCandidate[i] {
			out = append(out, plans[i])
		}
	}
	slices.SortFunc(out, func(a, b PodPlan) int {
		if c := strings.Compare(a.Pod.Namespace, b.Pod.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Pod.Name, b.Pod.Name)
	})
	for _, i := range candidates {
		out = append(out, plans[i])
	}
	return out
}

func message(res *Result, reason string) string {
	switch reason {
	case ReasonPartition:
		return fmt.Sprintf("partition keeps %d pod(s) on older revisions", res.Partition)
	case ReasonMaxUnavailable:
		m := fmt.Sprintf("maxUnavailable is %d and as many updated pods are unavailable", res.MaxUnavailable)
		if res.Holder != "" {
			m += fmt.Sprintf("; the pods of namespace %s hold every place: if they still do after %s, they count against its share alone and the other namespaces go on", res.Holder, NamespaceHoldLapse)
		}
		return m
	case ReasonPaused:
		return "updateStrategy.paused is true"
	case ReasonNotSelected:
		return "updateStrategy.selector does not select the pod"
	case ReasonNotUpdateStrategy:
		return "updateStrategy.type is NotUpdate"
	case ReasonHotUpgradeReset:
		return "waiting for hot-upgrade sidecars of other pods to go idle"
	case ReasonImmutableField:
		return "a sidecar field other than image and resources changed; the pod gets the new spec when it is recreated"
	case ReasonResizing:
		return "the kubelet is resizing sidecar containers to the new resources"
	case ReasonPreviousUpgrade:
		return "a sidecar is still restarting from an earlier upgrade"
	case ReasonRestarting:
		return "sidecar containers are restarting with the new image"
	case ReasonNotReady:
		return "the pod is not ready; it counts against maxUnavailable"
	case ReasonSelected:
		return "upgrading in this round"
	case ReasonRetryBackoff:
		return "kube-apiserver refused the controller's last upgrade or eviction of the pod: tried again after a backoff (5 s, doubling up to 5 minutes); the pod's events say why"
	case ReasonPreDownloading:
		return "the new sidecar images are being pulled onto the pod's node (" + preDownloadAnnotation + "): the upgrade waits for the pull, at most its timeout"
	case ReasonWritePending:
		return "the controller's last write to the pod is not in its cache yet: it counts against maxUnavailable until it is"
	}
	return ""
}

func (c *Counts) add(f *podFacts) {
	c.Matched++
	ready := f.consistent && f.readyForSidecar
	if f.updated {
		c.Updated++
	}
	if ready {
		c.Ready++
	}
	if f.updated && ready {
		c.UpdatedReady++
	}
}

// planner holds what a round derives from the SidecarSet once.
type planner struct {
	ss              *v1alpha1.SidecarSet
	hash, hashNoImg string
	names           []string // pod containers of the SidecarSet's upgradable sidecars
	hot             []*v1alpha1.SidecarContainer
	selector        labels.Selector // updateStrategy.selector; nil selects every pod
	badSelector     bool
	blocked         string // why no pod is upgraded at all (NotUpdate, paused)
	opts            Options
	decoded         map[text]corev1.ResourceRequirements // resources texts, decoded once
}

func newPlanner(ss *v1alpha1.SidecarSet, opts Options) *planner {
	p := &planner{ss: ss, opts: opts, hash: ss.Annotations[sidecar.HashAnnotation], hashNoImg: ss.Annotations[sidecar.HashWithoutImageAnnotation]}
	for sc := range sidecar.RunningContainers(ss.Spec.Containers, ss.Spec.InitContainers) {
		p.names = append(p.names, sidecar.PodContainerNames(sc, false)...) // init or not: a running container has the same twins
	}
	for i := range ss.Spec.Containers {
		if sc := &ss.Spec.Containers[i]; sidecar.IsHotUpgrade(sc) && sc.UpgradeStrategy.HotUpgradeEmptyImage != "" {
			p.hot = append(p.hot, sc)
		}
	}
	if sel := ss.Spec.UpdateStrategy.Selector; sel != nil {
		s, err := metav1.LabelSelectorAsSelector(sel)
		p.selector, p.badSelector = s, err != nil
	}
	switch {
	case ss.Spec.UpdateStrategy.Type == v1alpha1.NotUpdateSidecarSetStrategyType:
		p.blocked = ReasonNotUpdateStrategy
	case ss.Spec.UpdateStrategy.Paused:
		p.blocked = ReasonPaused
	}
	return p
}

// podFacts are the predicates of one managed pod.
type podFacts struct {
	pod              *Pod
	revision         string
	updated          bool   // hash entry is the current spec's
	upgradable       bool   // only images (and resources, resizable) differ from the current spec
	notUpgradable    string // why not, when not for a field other than image and resources
	notUpgradableMsg string
	resize           bool   // the upgrade resizes sidecars too
	refused          string // kube-apiserver refused its resize to the current spec: why
	consistent       bool   // every sidecar runs its spec image
	readyForSidecar  bool   // running, ready, not terminating, idle hot twins empty
	inFlight         bool   // a ready sidecar has not yet restarted from an earlier upgrade
	failure          string
	failed           string // the container that fails
	resizing         string // the reason of an outstanding resize, "" when none
	resizeMsg        string // the kubelet's message on it
	selected         bool   // by updateStrategy.selector
	notReadyBefore   bool   // updated, not available, and upgraded when it was not ready
	born             bool   // holds a place, created with the current spec: never upgraded to it
	unseen           bool   // the controller's last write to it is not seen yet (Options.Unseen)
}

func (f *podFacts) available() bool { return f.consistent && f.readyForSidecar }

// holdsPlace reports whether the pod takes a place of maxUnavailable: it is updated and not
// available, and was available before its upgrade. A pod upgraded while it was not ready
// (Pending, not ready, which any namespace editor can make its pods) is left out until it has
// been available, and so is a pod whose resize kube-apiserver refused (it runs on unchanged; a
// namespace's ResourceQuota or LimitRange refuses it): otherwise one such pod would stall the
// SidecarSet's rollout in every other namespace for as long as it exists.
func (f *podFacts) holdsPlace() bool {
	return f.updated && !f.available() && !f.notReadyBefore
}

const notReadyBeforeMessage = "the pod was not ready before its upgrade and has not been available since: it holds no place of maxUnavailable"

func (p *planner) facts(pod *Pod) podFacts {
	f := podFacts{pod: pod, unseen: p.opts.Unseen[pod.Namespace+"/"+pod.Name]}
	h, _ := pod.Hash(p.ss.Name)
	f.revision, f.updated = h.Revision(), h.Hash() == p.hash
	if !f.updated { // upgradability matters for pods to upgrade only
		noImg, ok := pod.HashWithoutImage(p.ss.Name)
		f.upgradable = ok && noImg.Hash() == p.hashNoImg
		if !f.upgradable {
			f.upgradable, f.notUpgradable, f.notUpgradableMsg = p.resizable(pod, f.revision)
			f.resize = f.upgradable
			f.refused = p.opts.ResizeRefused[pod.UID]
		}
	}
	f.consistent = pod.statusesComplete()
	for _, n := range p.names {
		done := ContainerUpgraded(pod, p.ss.Name, n)
		f.consistent = f.consistent && done
		if !done {
			if ct := pod.Container(n); ct != nil && ct.HasStatus && ct.Ready {
				f.inFlight = true
			}
		}
	}
	f.readyForSidecar = p.readyForSidecar(pod)
	f.failure, f.failed = waitingFailure(pod, p.names)
	if reason, failed, msg := resizeState(pod, p.names); reason != "" {
		f.consistent, f.resizing, f.resizeMsg = false, reason, msg
		if failed && f.failure == "" {
			f.failure = reason
		}
	}
	f.selected = !p.badSelector && (p.selector == nil || p.selector.Matches(pod.Labels))
	if f.updated && !f.available() {
		st, ok := pod.UpgradeState(p.ss.Name)
		f.notReadyBefore = ok && st.NotReadyBefore
	}
	f.born = f.holdsPlace() && !f.unseen && h.AtCreation()
	return f
}

// ReadyForSidecar returns what a plan of ss reads to decide whether upgrading a pod counts
// against maxUnavailable: the pod is running, ready, not terminating, and every idle hot-upgrade
// twin runs the empty image.
func ReadyForSidecar(ss *v1alpha1.SidecarSet) func(*Pod) bool {
	return newPlanner(ss, Options{}).readyForSidecar
}

func (p *planner) readyForSidecar(pod *Pod) bool {
	return podRunningAndReady(pod) && p.hotIdle(pod)
}

// hotIdle reports whether every hot-upgrade sidecar's idle twin runs the empty image.
func (p *planner) hotIdle(pod *Pod) bool {
	for _, sc := range p.hot {
		_, idle := pod.HotUpgradeTwins(sc.Name)
		if c := pod.Container(idle); c != nil && c.Image() != sc.UpgradeStrategy.HotUpgradeEmptyImage {
			return false
		}
	}
	return true
}

// classify returns the plan of a pod, with an empty state for an upgrade candidate.
func (p *planner) classify(f *podFacts) PodPlan {
	pp := PodPlan{Pod: f.pod, Revision: f.revision}
	set := func(state v1alpha1.PodRolloutState, reason string) PodPlan {
		pp.State, pp.Reason = state, reason
		return pp
	}
	if f.updated {
		switch {
		case f.failure != "" && f.failure == f.resizing:
			pp.Message = resizeMessage(f)
			return set(v1alpha1.PodRolloutFailed, f.failure)
		case f.failure != "":
			pp.Message = fmt.Sprintf("container %s is waiting: %s", f.failed, f.failure)
			return set(v1alpha1.PodRolloutFailed, f.failure)
		case f.resizing != "" && f.resizeMsg != "":
			pp.Message = resizeMessage(f)
			return set(v1alpha1.PodRolloutUpgrading, f.resizing)
		case f.resizing != "":
			return set(v1alpha1.PodRolloutUpgrading, f.resizing)
		case !f.consistent:
			return set(v1alpha1.PodRolloutUpgrading, ReasonRestarting)
		case !p.hotIdle(f.pod):
			return set(v1alpha1.PodRolloutUpgrading, ReasonHotUpgradeReset)
		case !f.readyForSidecar:
			return set(v1alpha1.PodRolloutUpdated, ReasonNotReady)
		}
		return set(v1alpha1.PodRolloutUpdated, "")
	}
	switch {
	case f.refused != "":
		pp.Message = "kube-apiserver refused to resize the sidecars: " + f.refused + "; tried again later (roll back or change the resources, or the namespace's quota or limits)"
		return set(v1alpha1.PodRolloutFailed, ReasonResizeInfeasible)
	case !f.selected:
		return set(v1alpha1.PodRolloutWaiting, ReasonNotSelected)
	case !f.upgradable && f.notUpgradable != "":
		pp.Message = f.notUpgradableMsg
		return set(v1alpha1.PodRolloutNotUpgradable, f.notUpgradable)
	case !f.upgradable:
		return set(v1alpha1.PodRolloutNotUpgradable, ReasonImmutableField)
	case p.blocked != "":
		return set(v1alpha1.PodRolloutWaiting, p.blocked)
	case f.inFlight:
		return set(v1alpha1.PodRolloutUpgrading, ReasonPreviousUpgrade)
	}
	return pp
}

// resets returns the pods whose hot-upgrade sidecars' idle twins should go back to the empty
// image (OpenKruise §5.9): an idle twin runs a real image, every other sidecar runs its spec
// image, and the pod is ready (or all its containers but the idle twins are).
func (p *planner) resets(pods []*Pod) []*Pod {
	if len(p.hot) == 0 {
		return nil
	}
	var out []*Pod
	for _, pod := range pods {
		if p.opts.Unseen[pod.Namespace+"/"+pod.Name] {
			continue
		}
		idle := map[string]bool{}
		due := false
		for _, sc := range p.hot {
			_, twin := pod.HotUpgradeTwins(sc.Name)
			idle[twin] = true
			if c := pod.Container(twin); c != nil && c.Image() != sc.UpgradeStrategy.HotUpgradeEmptyImage {
				due = true
			}
		}
		if due && p.settledExcept(pod, idle) && (podRunningAndReady(pod) || readyExcept(pod, idle)) {
			out = append(out, pod)
		}
	}
	return out
}

func (p *planner) settledExcept(pod *Pod, skip map[string]bool) bool {
	if !pod.statusesComplete() {
		return false
	}
	for _, n := range p.names {
		if !skip[n] && !ContainerUpgraded(pod, p.ss.Name, n) {
			return false
		}
	}
	return true
}

func podRunningAndReady(pod *Pod) bool {
	return pod.Phase == corev1.PodRunning && pod.Ready && !pod.Deleting
}

func readyExcept(pod *Pod, skip map[string]bool) bool {
	for i := range pod.Containers {
		if c := &pod.Containers[i]; !c.Init && c.HasStatus && !skip[c.Name()] && !c.Ready {
			return false
		}
	}
	return true
}
