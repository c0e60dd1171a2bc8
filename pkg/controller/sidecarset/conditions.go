package sidecarset

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/admission/policy"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

// ConditionInjectedByPolicy is True when kube-apiserver injects the SidecarSet into new pods
// itself, through its MutatingAdmissionPolicy; False says which path does instead, and why.
const ConditionInjectedByPolicy = "InjectedByPolicy"

// injectionCondition is the InjectedByPolicy condition of a SidecarSet at generation, from the
// path that serves it.
func injectionCondition(inj *v1alpha1.RolloutInjection, generation int64) metav1.Condition {
	c := metav1.Condition{Type: ConditionInjectedByPolicy, ObservedGeneration: generation, Status: metav1.ConditionFalse,
		Reason: inj.Reason, Message: inj.Message}
	switch policy.Path(inj.Path) {
	case policy.PathPolicy:
		c.Status = metav1.ConditionTrue
		c.Message = fmt.Sprintf("kube-apiserver injects new pods through MutatingAdmissionPolicy %s", inj.Policy)
	case policy.PathWebhook:
		c.Message = "the injection webhook injects new pods: " + inj.Message
	default:
		c.Message = "no pod is injected: " + inj.Message
	}
	if c.Reason == "" {
		c.Reason = "Unknown"
	}
	return c
}

// setInjectionCondition records the InjectedByPolicy condition in st, keeping its transition time
// when its status is unchanged.
func setInjectionCondition(st *v1alpha1.SidecarSetStatus, inj *v1alpha1.RolloutInjection, generation int64, now metav1.Time) {
	c := injectionCondition(inj, generation)
	c.LastTransitionTime = now
	meta.SetStatusCondition(&st.Conditions, c)
}

// ConditionPodsNotInjected is True while pods the SidecarSet selects run without its sidecars
// (status.notInjectedPods; the sidecarsets/rollout view lists them with the reason), and False
// once every one of them runs them again.
const ConditionPodsNotInjected = "PodsNotInjected"

// setMissedCondition records the PodsNotInjected condition in st: True with a summary while pods
// missed the injection; False once none does, only where it was True before (a SidecarSet that
// never missed a pod carries no such condition).
func setMissedCondition(st *v1alpha1.SidecarSetStatus, missed []rollout.Missed, generation int64, now metav1.Time) {
	c := metav1.Condition{Type: ConditionPodsNotInjected, ObservedGeneration: generation, LastTransitionTime: now}
	switch {
	case len(missed) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, "PodsRunWithoutSidecars", rollout.DescribeMissed(missed)+
			" (listed with state NotInjected in the sidecarsets/rollout view; annotate the SidecarSet "+rollout.RepairAnnotation+"=true to have the pods that a controller owns evicted and recreated)"
	case meta.FindStatusCondition(st.Conditions, ConditionPodsNotInjected) != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, "AllInjected", "every pod the SidecarSet selects runs its sidecars"
	default:
		return
	}
	meta.SetStatusCondition(&st.Conditions, c)
}
