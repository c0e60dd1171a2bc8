// Package explain says, for one pod and every SidecarSet, whether injection applies to the pod
// and why. It is a pure core over the injector: it runs injection.Inject on the pod and reads its
// per-SidecarSet decisions and warnings, so the answer cannot drift from what admission does, and
// adds what admission knows besides: whether the admission configuration sends the pod's
// namespace to injection at all, and which path (policy or webhook) serves each SidecarSet.
//
// For a pod that exists (Input.Created) it also reports what the pod carries: a SidecarSet that
// selects the pod but that the pod's injected-list annotation does not name missed injection (the
// pod was created before the SidecarSet, or while injection was unavailable).
package explain

import (
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/injection"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// Input is everything Explain needs.
type Input struct {
	// Pod is the pod: one to be created, or (Created) one that exists.
	Pod *corev1.Pod
	// Namespace is the pod's namespace; empty means Pod.Namespace, and "default" if that is empty.
	Namespace string
	// NamespaceLabels are the labels of the namespace.
	NamespaceLabels map[string]string
	// SidecarSets are every SidecarSet to explain, defaulted and carrying their hash annotations.
	SidecarSets []*v1alpha1.SidecarSet
	// Revisions resolves injectionStrategy.revision (see injection.Input).
	Revisions injection.RevisionSource
	// Admission is what the cluster's admission configuration sends to injection.
	Admission Admission
	// Created says the pod exists: Explain reports what it carries.
	Created bool
	// Now and Rand are passed to the injector (see injection.Input).
	Now  time.Time
	Rand func() float64
	// Options tune the injection as the server's do.
	Options injection.Options
}

// Admission is the part of the admission configuration that decides which namespaces injection
// sees at all.
type Admission struct {
	// NamespaceSelectors are the namespaceSelectors of the injection webhooks: a namespace that
	// none of them selects is excluded (the policies exclude the same namespaces). Nil when
	// unknown: no namespace is excluded by them.
	NamespaceSelectors []*metav1.LabelSelector
	// ExcludedNamespaces are excluded as well.
	ExcludedNamespaces []string
}

// Reasons of entries, besides the injector's own (injection.Reason values). An existing pod the
// SidecarSet selects that does not carry it has the reason of injection.Missed
// (CreatedBeforeSidecarSet, CreatedWithSidecarSet, AdmittedWithoutSidecars,
// ShadowedByClusterSidecarSet), the one the /rollout view names for it.
const (
	// ReasonInjected: the SidecarSet injects (or injected) sidecars into the pod.
	ReasonInjected = "Injected"
	// ReasonNothingToInject: the SidecarSet selects the pod but has no container to inject (it may
	// still patch the pod's metadata).
	ReasonNothingToInject = "NothingToInject"
	// ReasonNamespaceExcluded: the admission configuration never sends the namespace's pods to
	// injection.
	ReasonNamespaceExcluded = "NamespaceExcluded"
)

// Entry explains one SidecarSet.
type Entry struct {
	// SidecarSet is the SidecarSet's name.
	SidecarSet string `json:"sidecarSet"`
	// Injected says the pod gets (or, when it exists, carries) the SidecarSet's sidecars.
	Injected bool `json:"injected"`
	// Reason is the outcome: Injected, NothingToInject, NamespaceExcluded, MissedInjection, or
	// the injector's reason for skipping it (SelectorMismatch, NamespaceMismatch,
	// InjectionPaused, OverriddenByCanary, Duplicate).
	Reason string `json:"reason"`
	// Message explains Reason: the label or expression that did not match, for instance.
	Message string `json:"message,omitempty"`
	// Path is the admission path that serves the SidecarSet (Policy, Webhook, None), from its
	// Injected condition; empty when the SidecarSet has none yet.
	Path string `json:"path,omitempty"`
	// PathMessage is the condition's reason and message.
	PathMessage string `json:"pathMessage,omitempty"`
	// Revision is the SidecarSetRevision injected (or carried by an existing pod).
	Revision string `json:"revision,omitempty"`
	// RevisionMessage says why that revision.
	RevisionMessage string `json:"revisionMessage,omitempty"`
	// Skipped are the parts of the SidecarSet the pod does not get as the SidecarSet says.
	Skipped []injection.Warning `json:"skipped,omitempty"`
}

// Report is the explanation for one pod.
type Report struct {
	// Namespace and Name of the pod (Name may be empty for a pod to be created with generateName).
	Namespace string `json:"namespace"`
	Name      string `json:"name,omitempty"`
	// NamespaceExcluded says the admission configuration never sends the namespace to injection.
	NamespaceExcluded bool `json:"namespaceExcluded,omitempty"`
	// SidecarSets has one entry per SidecarSet, by name.
	SidecarSets []Entry `json:"sidecarSets"`
}

// Explain explains the injection of every SidecarSet of in into in.Pod. It fails when the
// injector fails (an *injection.Error names the SidecarSet and field at fault).
func Explain(in Input) (Report, error) {
	ns := in.Namespace
	if ns == "" {
		ns = in.Pod.Namespace
	}
	if ns == "" {
		ns = "default"
	}
	res, err := injection.Inject(injection.Input{Pod: in.Pod, Namespace: ns, NamespaceLabels: in.NamespaceLabels,
		SidecarSets: in.SidecarSets, Revisions: in.Revisions, Now: in.Now, Rand: in.Rand, Options: in.Options})
	if err != nil {
		return Report{}, err
	}
	rep := Report{Namespace: ns, Name: in.Pod.Name, NamespaceExcluded: excluded(in.Admission, ns, in.NamespaceLabels)}
	byName := make(map[string]*v1alpha1.SidecarSet, len(in.SidecarSets))
	for _, ss := range in.SidecarSets {
		if ss != nil && byName[ss.Name] == nil {
			byName[ss.Name] = ss
		}
	}
	for _, d := range res.Decisions {
		e := entry(&in, ns, byName, d, rep.NamespaceExcluded)
		if e.Injected {
			e.Skipped = warningsOf(res.Warnings, d.SidecarSet)
		}
		rep.SidecarSets = append(rep.SidecarSets, e)
	}
	return rep, nil
}

// entry explains one decision of the injector.
func entry(in *Input, ns string, sets map[string]*v1alpha1.SidecarSet, d injection.Decision, excluded bool) Entry {
	ss := sets[d.SidecarSet]
	e := Entry{SidecarSet: d.SidecarSet, Reason: string(d.Reason)}
	e.Path, e.PathMessage = path(ss)
	switch d.Reason {
	case injection.ReasonInjectionPaused:
		e.Message = "spec.injectionStrategy.paused is true"
		return e
	case injection.ReasonNamespaceMismatch, injection.ReasonSelectorMismatch:
		e.Message = injection.Mismatch(ss, ns, in.NamespaceLabels, in.Pod.Labels)
		return e
	case injection.ReasonDuplicate:
		e.Message = "another SidecarSet has the same name"
		return e
	case injection.ReasonOverriddenByCanary:
		e.Message = "a canary SidecarSet that selects the pod names this one as its base (" + canaryOf(in.SidecarSets, d.SidecarSet) + ")"
		return e
	}
	if excluded {
		e.Reason = ReasonNamespaceExcluded
		e.Message = fmt.Sprintf("the SidecarSet selects the pod, but the admission configuration excludes namespace %q from injection", ns)
		return e
	}
	if in.Created {
		return carried(in.Pod, ss, sets, d, e)
	}
	e.Injected = d.Injected
	e.Reason, e.Message = ReasonInjected, ""
	if !d.Injected {
		e.Reason, e.Message = ReasonNothingToInject, "the SidecarSet selects the pod but has no container to inject"
		return e
	}
	e.Revision, e.RevisionMessage = d.Revision, revisionMessage(d)
	return e
}

// carried reports what an existing pod carries of ss, a SidecarSet that selects it; sets are the
// SidecarSets by name.
func carried(pod *corev1.Pod, ss *v1alpha1.SidecarSet, sets map[string]*v1alpha1.SidecarSet, d injection.Decision, e Entry) Entry {
	if !sidecar.InjectedListHas(pod.Annotations[sidecar.InjectedListAnnotation], d.SidecarSet) {
		hashes, _ := sidecar.ParseHashMap(pod.Annotations[sidecar.HashAnnotation]) // malformed: none injected
		in := injection.MissedInput{SidecarSet: ss, Namespace: pod.Namespace, Created: pod.CreationTimestamp.Time,
			Injected: slices.Sorted(maps.Keys(hashes)), Cluster: func(name string) *v1alpha1.SidecarSet { return sets[name] }}
		e.Reason, e.Message = injection.Missed(in)
		return e
	}
	e.Reason = ReasonInjected
	h, ok := sidecar.PodHashEntry(pod.Annotations, sidecar.HashAnnotation, d.SidecarSet)
	if !ok {
		e.Reason, e.Message = ReasonNothingToInject, "the pod lists the SidecarSet as injected, with no container of it"
		return e
	}
	e.Injected = true
	e.Revision = h.ControllerRevision
	e.RevisionMessage = "carried by the pod"
	if h.Hash == d.Hash {
		e.RevisionMessage += "; the current spec"
	} else {
		e.RevisionMessage += fmt.Sprintf("; a pod created now would get %s (%s)", orUnknown(d.Revision), revisionMessage(d))
	}
	return e
}

func orUnknown(s string) string {
	if s == "" {
		return "a revision not recorded yet"
	}
	return s
}

// revisionMessage says why the injector chose the decision's revision.
func revisionMessage(d injection.Decision) string {
	switch d.Reason {
	case injection.ReasonRevisionPinned:
		return "injectionStrategy.revision pins it (policy Always, updateStrategy.paused, or a Partial pod outside updateStrategy.selector)"
	case injection.ReasonPartialRandom:
		if d.Latest {
			return "Partial policy: the random draw chose the latest spec"
		}
		return "Partial policy: the random draw chose injectionStrategy.revision"
	case injection.ReasonPartialSticky:
		return "Partial policy: the version the pod already carries"
	}
	return "the latest spec"
}

// path reads the Injected condition: the path that serves the SidecarSet (its reason while True,
// None while False) and why.
func path(ss *v1alpha1.SidecarSet) (string, string) {
	if ss == nil {
		return "", ""
	}
	c := meta.FindStatusCondition(ss.Status.Conditions, "Injected")
	switch {
	case c == nil:
		return "", ""
	case c.Status == metav1.ConditionTrue:
		return c.Reason, c.Message
	}
	return string(apps.PathNone), c.Reason + ": " + c.Message
}

// excluded reports whether the admission configuration keeps namespace ns from injection; every
// path leaves out a namespace labelled apps.ControlPlaneNamespaceLabel.
func excluded(a Admission, ns string, nsLabels map[string]string) bool {
	if apps.ExcludedFromInjection(ns, nsLabels, a.ExcludedNamespaces) {
		return true
	}
	if a.NamespaceSelectors == nil {
		return false
	}
	labels := apps.NamespaceLabels(ns, nsLabels)
	for _, sel := range a.NamespaceSelectors {
		if sel == nil || injection.Unmet(sel, labels) == "" {
			return false
		}
	}
	return true
}

// canaryOf names the canary SidecarSets whose base is base.
func canaryOf(sets []*v1alpha1.SidecarSet, base string) string {
	var names []string
	for _, ss := range sets {
		if ss == nil {
			continue
		}
		if b, ok := apps.CanaryBase(ss.Annotations); ok && b == base {
			names = append(names, ss.Name)
		}
	}
	slices.Sort(names)
	return fmt.Sprint(names)
}

func warningsOf(ws []injection.Warning, set string) []injection.Warning {
	var out []injection.Warning
	for _, w := range ws {
		if w.SidecarSet == set {
			out = append(out, w)
		}
	}
	return out
}
