package metric

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/utils/clock"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

// Metrics served on the server's /metrics.
var (
	podsUpgraded = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      "sidecarset",
		Name:           "pods_upgraded_total",
		Help:           "Pods whose sidecars were upgraded in place, by SidecarSet.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"sidecarset"})
	upgradeDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      "sidecarset",
		Name:           "pod_upgrade_duration_seconds",
		Help:           "Time from a pod's in-place upgrade to its sidecars running the new spec and the pod being ready, by SidecarSet.",
		Buckets:        metrics.ExponentialBuckets(0.25, 2, 12),
		StabilityLevel: metrics.ALPHA,
	}, []string{"sidecarset"})
	podsResizing = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      "sidecarset",
		Name:           "pods_resizing",
		Help:           "Pods whose sidecars' in-place resize is outstanding, by SidecarSet and by the kubelet's progress (Resizing, ResizeDeferred, ResizeInfeasible, ResizeError).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"sidecarset", "reason"})
	podsWaiting = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      "sidecarset",
		Name:           "pods_waiting",
		Help:           "Matched pods not yet on the latest spec, by SidecarSet and by what they wait for.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"sidecarset", "reason"})
	podWriteErrors = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      "sidecarset",
		Name:           "pod_write_errors_total",
		Help:           "Pod writes of a round that failed (the pod was skipped, the others went on), by SidecarSet and action.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"sidecarset", "action"})
	podsNotInjected = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      "sidecarset",
		Name:           "pods_not_injected",
		Help:           "Active pods the SidecarSet selects that run without its sidecars (created before it, in a namespace excluded from injection, or admitted while injection was unavailable), by SidecarSet.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"sidecarset"})
	rolloutStalled = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      "sidecarset",
		Name:           "rollout_stalled",
		Help:           "1 while the SidecarSet's rollout is stalled (its Stalled condition: pods it upgraded fail to run the new sidecar), 0 otherwise, by SidecarSet.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"sidecarset"})
)

var registerOnce sync.Once

func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(podsUpgraded, upgradeDuration, podsWaiting, podsResizing, podsNotInjected, podWriteErrors, rolloutStalled)
	})
}

// Progress turns rounds into metrics: it remembers when each pod was upgraded, to observe how long
// the pod took to be ready on the new spec, and which waiting reasons it last published.
type Progress struct {
	clock   clock.PassiveClock
	mu      sync.Mutex
	started map[types.UID]time.Time
	reasons map[string]map[string]bool
	resizes map[string]map[string]bool    // SidecarSet -> the podsResizing reasons published
	missed  map[string]map[types.UID]bool // SidecarSet -> pods reported as not injected
}

// New returns the metrics of the rounds, on clock c; it registers them the first time.
func New(c clock.PassiveClock) *Progress {
	registerMetrics()
	return &Progress{clock: c, started: map[types.UID]time.Time{}, reasons: map[string]map[string]bool{}, resizes: map[string]map[string]bool{}, missed: map[string]map[types.UID]bool{}}
}

// Upgraded records an in-place upgrade of pod by the SidecarSet.
func (p *Progress) Upgraded(sidecarSet string, pod *corev1.Pod) {
	podsUpgraded.WithLabelValues(sidecarSet).Inc()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.started[pod.UID] = p.clock.Now()
}

// Observe publishes the waiting pods of a round, whether its rollout is stalled (a pod failing to
// run the new sidecar, as rollout.Progress reads it) and the durations of finished upgrades.
func (p *Progress) Observe(sidecarSet string, plan *rollout.Result) {
	waiting, resizing := map[string]float64{}, map[string]float64{}
	stalled := 0.0
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range plan.Pods {
		pp := &plan.Pods[i]
		if resizeReasons[pp.Reason] {
			resizing[pp.Reason]++
		}
		switch pp.State {
		case v1alpha1.PodRolloutUpdated:
			if pp.Reason != "" {
				continue // updated but not yet ready
			}
			if t, ok := p.started[pp.Pod.UID]; ok {
				upgradeDuration.WithLabelValues(sidecarSet).Observe(p.clock.Since(t).Seconds())
				delete(p.started, pp.Pod.UID)
			}
		case v1alpha1.PodRolloutWaiting, v1alpha1.PodRolloutNotUpgradable, v1alpha1.PodRolloutFailed:
			if pp.State == v1alpha1.PodRolloutFailed {
				stalled = 1
			}
			reason := pp.Reason
			if pp.State != v1alpha1.PodRolloutWaiting {
				reason = string(pp.State)
			}
			waiting[reason]++
		}
	}
	rolloutStalled.WithLabelValues(sidecarSet).Set(stalled)
	p.reasons[sidecarSet] = publish(podsWaiting, sidecarSet, p.reasons[sidecarSet], waiting)
	p.resizes[sidecarSet] = publish(podsResizing, sidecarSet, p.resizes[sidecarSet], resizing)
}

// resizeReasons are the pod reasons podsResizing counts.
var resizeReasons = map[string]bool{rollout.ReasonResizing: true, rollout.ReasonResizeDeferred: true,
	rollout.ReasonResizeInfeasible: true, rollout.ReasonResizeError: true}

// publish sets a gauge's values by reason for a SidecarSet, deleting the reasons it published
// before (was) that are gone, and returns the reasons published now.
func publish(g *metrics.GaugeVec, sidecarSet string, was map[string]bool, values map[string]float64) map[string]bool {
	for reason := range was {
		if _, ok := values[reason]; !ok {
			g.DeleteLabelValues(sidecarSet, reason)
		}
	}
	now := make(map[string]bool, len(values))
	for reason, n := range values {
		g.WithLabelValues(sidecarSet, reason).Set(n)
		now[reason] = true
	}
	return now
}

// NotInjected publishes the pods of a round that missed the SidecarSet's injection and returns
// those not reported before, each to be reported once.
func (p *Progress) NotInjected(sidecarSet string, pods []*rollout.Pod) []*rollout.Pod {
	podsNotInjected.WithLabelValues(sidecarSet).Set(float64(len(pods)))
	p.mu.Lock()
	defer p.mu.Unlock()
	before, now := p.missed[sidecarSet], make(map[types.UID]bool, len(pods))
	var fresh []*rollout.Pod
	for _, pod := range pods {
		now[pod.UID] = true
		if !before[pod.UID] {
			fresh = append(fresh, pod)
		}
	}
	p.missed[sidecarSet] = now
	return fresh
}

// Reset drops every SidecarSet's gauges: a replica whose term ends no longer knows them, and the
// new leader reports them, so that sums over the replicas stay true.
func (p *Progress) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for sidecarSet, reasons := range p.reasons {
		for reason := range reasons {
			podsWaiting.DeleteLabelValues(sidecarSet, reason)
		}
	}
	for sidecarSet := range p.missed {
		podsNotInjected.DeleteLabelValues(sidecarSet)
	}
	rolloutStalled.Reset()
	podsResizing.Reset()
	p.reasons, p.resizes = map[string]map[string]bool{}, map[string]map[string]bool{}
}

// Forget drops a deleted SidecarSet's gauges.
func (p *Progress) Forget(sidecarSet string) {
	if sidecarSet == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	podsNotInjected.DeleteLabelValues(sidecarSet)
	rolloutStalled.DeleteLabelValues(sidecarSet)
	delete(p.missed, sidecarSet)
	for reason := range p.reasons[sidecarSet] {
		podsWaiting.DeleteLabelValues(sidecarSet, reason)
	}
	delete(p.reasons, sidecarSet)
	for reason := range p.resizes[sidecarSet] {
		podsResizing.DeleteLabelValues(sidecarSet, reason)
	}
	delete(p.resizes, sidecarSet)
}

// WriteFailed counts a pod write of a round of the SidecarSet that failed (action says which).
func WriteFailed(sidecarSet, action string) {
	podWriteErrors.WithLabelValues(sidecarSet, action).Inc()
}
