package condition

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

// Injected is True while new pods the SidecarSet selects get its sidecars, with the path
// that injects them as its reason: Policy (kube-apiserver itself, through a
// MutatingAdmissionPolicy) or Webhook (this server's injection webhook, the message says why);
// either is a healthy state. False (reason InjectionPaused or NoSelector) when no new pod gets
// them.
const Injected = v1alpha1.SidecarSetInjected

// injectionCondition is the Injected condition of a SidecarSet at generation, from the path that
// serves it.
func injectionCondition(inj *v1alpha1.RolloutInjection, generation int64) metav1.Condition {
	c := metav1.Condition{Type: Injected, ObservedGeneration: generation, Status: metav1.ConditionTrue, Reason: inj.Path}
	why := inj.Message
	if inj.Reason != "" {
		why = inj.Reason + ": " + inj.Message
	}
	switch apps.InjectionPath(inj.Path) {
	case apps.PathPolicy:
		c.Message = policyMessage + inj.Policy
	case apps.PathWebhook:
		c.Message = webhookMessage + why + ")"
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, inj.Reason, noneMessage+inj.Message
	}
	if c.Reason == "" {
		c.Reason = "Unknown"
	}
	return c
}

// The messages of the Injected condition; InjectionFrom reads them back.
const (
	policyMessage  = "kube-apiserver injects new pods through MutatingAdmissionPolicy "
	webhookMessage = "the injection webhook injects new pods ("
	noneMessage    = "no new pod is injected: "
)

// InjectionFrom reads back the path the leader recorded in ss's Injected condition (the
// inverse of injectionCondition), so that every replica's /rollout view says what the leader
// decided, not a decision of its own; false when the condition is not of ss's current generation
// (the leader has not decided for it yet).
func InjectionFrom(ss *v1alpha1.SidecarSet) (*v1alpha1.RolloutInjection, bool) {
	c := meta.FindStatusCondition(ss.Status.Conditions, Injected)
	if c == nil || c.ObservedGeneration != ss.Generation {
		return nil, false
	}
	if c.Status != metav1.ConditionTrue {
		return &v1alpha1.RolloutInjection{Path: string(apps.PathNone), Reason: c.Reason, Message: strings.TrimPrefix(c.Message, noneMessage)}, true
	}
	if name, ok := strings.CutPrefix(c.Message, policyMessage); ok && c.Reason == string(apps.PathPolicy) {
		return &v1alpha1.RolloutInjection{Path: c.Reason, Reason: apps.ReasonCompiled, Message: apps.PolicyInjectsMessage(name), Policy: name}, true
	}
	inj := &v1alpha1.RolloutInjection{Path: c.Reason}
	why, ok := strings.CutPrefix(c.Message, webhookMessage)
	if !ok {
		inj.Message = c.Message
		return inj, true
	}
	why = strings.TrimSuffix(why, ")")
	if reason, message, ok := strings.Cut(why, ": "); ok && !strings.Contains(reason, " ") {
		inj.Reason, inj.Message = reason, message
	} else {
		inj.Message = why
	}
	return inj, true
}

// SetInjection records the Injected condition in st, keeping its transition time when
// its status is unchanged.
func SetInjection(st *v1alpha1.SidecarSetStatus, inj *v1alpha1.RolloutInjection, generation int64, now metav1.Time) {
	c := injectionCondition(inj, generation)
	c.LastTransitionTime = now
	meta.SetStatusCondition(&st.Conditions, c)
}

// WebhookReceivesEveryPod is True while the SidecarSet leaves the injection webhooks
// without a label selector (apps.Widening): every pod created in the namespaces they serve then
// reaches their match condition or this server, and while this server is down such creates may
// fail. False (Narrowed) once that ends; absent on a SidecarSet that never caused it.
const WebhookReceivesEveryPod = v1alpha1.SidecarSetWebhookReceivesEveryPod

// SetWidening records the WebhookReceivesEveryPod condition in st: True with w's reason
// when widened, False once it no longer is (only where it was True before).
func SetWidening(st *v1alpha1.SidecarSetStatus, w apps.Widening, widened bool, generation int64, now metav1.Time) {
	c := metav1.Condition{Type: WebhookReceivesEveryPod, ObservedGeneration: generation, LastTransitionTime: now}
	switch {
	case widened:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, w.Reason, w.Message()
	case meta.FindStatusCondition(st.Conditions, WebhookReceivesEveryPod) != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, "Narrowed", "label selectors narrow the injection webhooks to the pods SidecarSets may select"
	default:
		return
	}
	meta.SetStatusCondition(&st.Conditions, c)
}

// PodsNotInjected is True while pods the SidecarSet selects run without its sidecars
// (status.notInjectedPods; the sidecarsets/rollout view lists them with the reason), and False
// once every one of them runs them again.
const PodsNotInjected = v1alpha1.SidecarSetPodsNotInjected

// SetMissed records the PodsNotInjected condition in st: True with a summary while pods
// missed the injection; False once none does, only where it was True before (a SidecarSet that
// never missed a pod carries no such condition).
func SetMissed(st *v1alpha1.SidecarSetStatus, missed []rollout.Missed, generation int64, now metav1.Time) {
	c := metav1.Condition{Type: PodsNotInjected, ObservedGeneration: generation, LastTransitionTime: now}
	switch {
	case len(missed) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, "PodsRunWithoutSidecars", rollout.DescribeMissed(missed)+
			" (listed with state NotInjected in the sidecarsets/rollout view; annotate the SidecarSet "+rollout.RepairAnnotation+"=true to have the pods that a controller owns evicted and recreated)"
	case meta.FindStatusCondition(st.Conditions, PodsNotInjected) != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, "AllInjected", "every pod the SidecarSet selects runs its sidecars"
	default:
		return
	}
	meta.SetStatusCondition(&st.Conditions, c)
}

// The rollout conditions, as a Deployment's: `kubectl wait --for=condition=Ready sidecarset/NAME`
// returns once a rollout is done, and GitOps tools see one in progress. kstatus (Flux, kubectl's
// cli-utils) reads them with its generic rules, in this order: status.observedGeneration behind
// metadata.generation is InProgress, Stalled True is Failed, Ready True is Current and Ready False
// InProgress; Argo CD's health script (artifacts/gitops/argocd/health.lua) reads them in the same
// order.
const (
	// Ready is True once the SidecarSet's generation is observed (its injection is in
	// place) and every pod the rollout upgrades runs the current spec and is available (pods held
	// by partition or updateStrategy.selector, or not upgradable in place, do not hold it up).
	// It is False whenever Stalled is True.
	Ready = v1alpha1.SidecarSetReady
	// Progressing is True while the rollout goes on by itself; False once it is done
	// (RolloutComplete), paused (Paused) or stalled on pods whose new sidecar does not run
	// (PodsFailed).
	Progressing = v1alpha1.SidecarSetProgressing
	// Stalled is True (reason PodsFailed) exactly while the rollout's phase is Stalled:
	// a pod the rollout upgraded runs one of the SidecarSet's containers waiting on a failure
	// (ErrImagePull, ImagePullBackOff, InvalidImageName, ErrImageNeverPull, CrashLoopBackOff,
	// CreateContainerError, CreateContainerConfigError, RunContainerError). The rollout then waits
	// for those pods and only a change of the spec (a fixed image, a rollback) or of the pods
	// ends it; it holds while updateStrategy.paused is set too (pausing does not mend the pods).
	// A paused rollout with no such pod, one waiting on pods that are not ready or on its
	// maxUnavailable budget, pods that missed the injection (PodsNotInjected) and paused
	// injection are never Stalled. False, with the Progressing reason, once it ends; absent on a
	// SidecarSet whose rollout never stalled (the "abnormal-true" convention kstatus follows).
	Stalled = v1alpha1.SidecarSetStalled
)

// Reasons of the rollout conditions.
const (
	ReasonRolloutComplete   = "RolloutComplete"
	ReasonRollingOut        = "RollingOut"
	ReasonRolloutPaused     = v1alpha1.ReasonRolloutPaused
	ReasonPodsFailed        = "PodsFailed"
	ReasonInjectionNotReady = v1alpha1.ReasonInjectionNotReady
)

// rolloutConditions are the Progressing, Ready and Stalled conditions of a rollout.
type rolloutConditions struct {
	progressing, ready, stalled metav1.Condition
}

// assessRollout returns the rollout conditions of SidecarSet name at generation for a rollout at
// progress p; observed says whether the status observes generation. Stalled is True exactly
// when p's phase is Stalled, and then Ready is False (a stalled rollout is not done).
func assessRollout(p rollout.Progress, observed bool, name string, generation int64) rolloutConditions {
	progressing := metav1.Condition{Type: Progressing, ObservedGeneration: generation}
	switch p.Phase() {
	case v1alpha1.RolloutStalled:
		progressing.Status, progressing.Reason, progressing.Message = metav1.ConditionFalse, ReasonPodsFailed, p.Stalled()
	case v1alpha1.RolloutDone:
		progressing.Status, progressing.Reason, progressing.Message = metav1.ConditionFalse, ReasonRolloutComplete, p.Summary(name)
	case v1alpha1.RolloutPaused:
		progressing.Status, progressing.Reason, progressing.Message = metav1.ConditionFalse, ReasonRolloutPaused, p.Summary(name)+"; the rollout is paused"
	default:
		progressing.Status, progressing.Reason, progressing.Message = metav1.ConditionTrue, ReasonRollingOut, p.Summary(name)
	}
	ready := metav1.Condition{Type: Ready, ObservedGeneration: generation,
		Status: metav1.ConditionFalse, Reason: progressing.Reason, Message: progressing.Message}
	switch {
	case !observed:
		ready.Reason, ready.Message = ReasonInjectionNotReady, "the injection objects of this generation are not in place yet"
	case p.Done():
		ready.Status = metav1.ConditionTrue
	}
	stalled := metav1.Condition{Type: Stalled, ObservedGeneration: generation,
		Status: metav1.ConditionFalse, Reason: progressing.Reason, Message: progressing.Message}
	if p.Phase() == v1alpha1.RolloutStalled {
		stalled.Status, stalled.Message = metav1.ConditionTrue, p.Stalled()+
			" (the rollout waits for these pods: fix the sidecar's image or command, or roll back to an earlier revision)"
	}
	return rolloutConditions{progressing: progressing, ready: ready, stalled: stalled}
}

// SetRollout records Ready, Progressing and Stalled in st for a rollout at progress p;
// observed says whether st observes generation. Stalled is recorded when True, or False where it
// was recorded before. It returns whether Ready is True, and Progressing's reason.
func SetRollout(st *v1alpha1.SidecarSetStatus, p rollout.Progress, observed bool, name string, generation int64, now metav1.Time) (bool, string) {
	c := assessRollout(p, observed, name, generation)
	c.progressing.LastTransitionTime, c.ready.LastTransitionTime, c.stalled.LastTransitionTime = now, now, now
	meta.SetStatusCondition(&st.Conditions, c.progressing)
	meta.SetStatusCondition(&st.Conditions, c.ready)
	if c.stalled.Status == metav1.ConditionTrue || meta.FindStatusCondition(st.Conditions, Stalled) != nil {
		meta.SetStatusCondition(&st.Conditions, c.stalled)
	}
	return c.ready.Status == metav1.ConditionTrue, c.progressing.Reason
}
