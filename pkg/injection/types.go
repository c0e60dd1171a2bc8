package injection

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// Input is everything Inject needs.
type Input struct {
	// Pod is the pod as submitted for creation. It is not modified.
	Pod *corev1.Pod
	// Namespace is the pod's namespace; empty means Pod.Namespace, and "default" if that is empty.
	Namespace string
	// NamespaceLabels are the labels of the namespace, matched by namespaceSelectors. The
	// kubernetes.io/metadata.name label is assumed to equal the namespace name when absent.
	NamespaceLabels map[string]string
	// SidecarSets are the candidates (for example from Index.Candidates), defaulted, carrying the
	// hash annotations the server stamps. They are not modified; order does not matter.
	SidecarSets []*v1alpha1.SidecarSet
	// Retired are versions of SidecarSets replaced or deleted a moment ago (see Retired) that the
	// pod may carry: a SidecarSet the pod's hash annotation has at the hash of one of them, and that
	// no matching candidate of its name applies to now, is taken out of the pod (a policy compiled
	// from that version, which kube-apiserver still ran, injected it earlier in the admission).
	Retired []*v1alpha1.SidecarSet
	// Revisions resolves injectionStrategy.revision; needed only when a candidate sets it.
	Revisions RevisionSource
	// Now stamps the hash annotation entries.
	Now time.Time
	// Rand returns a uniform number in [0, 1) for the Partial revision policy with a percentage
	// partition; needed only when a candidate has one (Inject fails without it then).
	Rand func() float64
	// Options tune the injection.
	Options Options
}

// Options tune Inject.
type Options struct {
	// SortSidecarContainersByName stably sorts all injected containers by name before merging, as
	// OpenKruise's EnableSortSidecarContainerByName feature gate does. The default keeps the
	// deterministic SidecarSet-name-then-spec order (OpenKruise's default order within one
	// SidecarSet). Init containers are always sorted by name.
	SortSidecarContainersByName bool
	// Evaluator evaluates resourcesPolicy expressions; nil uses package resourceexpr.
	Evaluator ResourceEvaluator
	// SkipInjected leaves out the SidecarSets the pod's injected-list annotation already names:
	// they were injected earlier in the same admission (by their MutatingAdmissionPolicy, or by a
	// previous invocation of the webhook), and injecting them again would undo what other
	// admission steps changed since. New sidecars are placed among theirs as if all had been
	// injected together, in name order.
	SkipInjected bool
}

// ResourceEvaluator evaluates a resourcesPolicy expression with variable ("cpu" or "memory")
// bound to value and returns a non-negative quantity; a plain-number result is converted for the
// resource named by variable (cores for cpu, bytes otherwise).
type ResourceEvaluator = sidecar.ResourceEvaluator

// RevisionSource resolves the revisions named by injectionStrategy.revision. A lookup that finds
// nothing should return an error (OpenKruise fails the pod creation then); (nil, nil) makes the
// SidecarSet inject its latest spec.
type RevisionSource interface {
	// Revision returns the SidecarSetRevision with this name (of any SidecarSet, as in OpenKruise).
	Revision(name string) (*v1alpha1.SidecarSetRevision, error)
	// LatestWithCustomVersion returns the revision of sidecarSetName with the highest .revision
	// among those labelled apps.kruise.io/sidecarset-custom-version=customVersion.
	LatestWithCustomVersion(sidecarSetName, customVersion string) (*v1alpha1.SidecarSetRevision, error)
}

// Result is the outcome of Inject.
type Result struct {
	// Pod is the injected pod, a new object. When Patch is empty it is the input pod itself and
	// must not be modified.
	Pod *corev1.Pod
	// Patch is the JSON patch (RFC 6902) from the input pod to Pod; empty when nothing changed.
	Patch []Operation
	// Decisions has one entry per candidate SidecarSet, in processing (name) order.
	Decisions []Decision
	// Warnings name the parts of the injected SidecarSets that injection skipped for this pod,
	// in SidecarSet then field order; the webhook returns them as admission warnings.
	Warnings []Warning
}

// Warning is a part of a SidecarSet that injection skipped for one pod, which still got the rest.
type Warning struct {
	// SidecarSet is the SidecarSet's name.
	SidecarSet string `json:"sidecarSet"`
	// Field is the path of the skipped field in the SidecarSet.
	Field string `json:"field"`
	// Message says what was skipped and why.
	Message string `json:"message"`
}

// String renders the warning as an admission warning: SidecarSet "name": field: message.
func (w Warning) String() string {
	return fmt.Sprintf("SidecarSet %q: %s: %s", w.SidecarSet, w.Field, w.Message)
}

// Operation is one RFC 6902 JSON patch operation; a []Operation marshals to a JSON patch.
type Operation struct {
	// Op is "add", "replace" or "remove".
	Op string `json:"op"`
	// Path is a JSON pointer (RFC 6901).
	Path string `json:"path"`
	// Value is the new value; absent for "remove".
	Value any `json:"value,omitempty"`
}

// Decision records what happened to one candidate SidecarSet.
type Decision struct {
	// SidecarSet is the SidecarSet's name.
	SidecarSet string `json:"sidecarSet"`
	// Matched says the SidecarSet selects the pod and is not paused (a base overridden by its
	// canary is Matched, with Reason OverriddenByCanary, and never Injected).
	Matched bool `json:"matched"`
	// Injected says the SidecarSet contributed containers or init containers to the pod (and so
	// has entries in the hash annotations). A matched SidecarSet that is not Injected may still
	// have patched the pod's annotations and is listed in the injected-list annotation.
	Injected bool `json:"injected"`
	// Latest says the latest spec was chosen rather than a recorded revision. Set when Matched.
	Latest bool `json:"latest,omitempty"`
	// Revision is the SidecarSetRevision the chosen spec comes from: the recorded revision, or
	// status.latestRevision for the latest spec (may be empty or lag right after an edit).
	Revision string `json:"revision,omitempty"`
	// Hash is the kruise.io/sidecarset-hash of the chosen spec.
	Hash string `json:"hash,omitempty"`
	// Reason says why the SidecarSet was skipped or chose its revision.
	Reason Reason `json:"reason,omitempty"`
}

// Reason explains a Decision.
type Reason string

// Reasons of decisions.
const (
	// ReasonInjectionPaused: injectionStrategy.paused is set.
	ReasonInjectionPaused Reason = "InjectionPaused"
	// ReasonNamespaceMismatch: spec.namespace or namespaceSelector does not select the namespace.
	ReasonNamespaceMismatch Reason = "NamespaceMismatch"
	// ReasonSelectorMismatch: the pod selector is nil, empty or does not select the pod.
	ReasonSelectorMismatch Reason = "SelectorMismatch"
	// ReasonOverriddenByCanary: a matching canary SidecarSet names this one as its base.
	ReasonOverriddenByCanary Reason = "OverriddenByCanary"
	// ReasonDuplicate: another candidate has the same name; the first one was used.
	ReasonDuplicate Reason = "Duplicate"
	// ReasonRevisionPinned: injectionStrategy.revision applies (policy Always, update paused, or a
	// Partial pod outside updateStrategy.selector).
	ReasonRevisionPinned Reason = "RevisionPinned"
	// ReasonPartialRandom: the Partial policy chose by the random draw against the partition.
	ReasonPartialRandom Reason = "PartialRandom"
	// ReasonPartialSticky: the Partial policy kept the version the pod already carries
	// (reinvocation of the webhook).
	ReasonPartialSticky Reason = "PartialSticky"
	// ReasonAlreadyInjected: with Options.SkipInjected, the pod's injected-list names the SidecarSet.
	ReasonAlreadyInjected Reason = "AlreadyInjected"
	// ReasonShadowed: a NamespacedSidecarSet that collides with a cluster SidecarSet injected into
	// the same pod (a container, volume or annotation); the cluster SidecarSet wins.
	ReasonShadowed Reason = apps.ReasonShadowed
	// ReasonCollidesWithPresent: a cluster SidecarSet that collides with a NamespacedSidecarSet
	// already in the pod (injected earlier in the admission by a policy kube-apiserver has not
	// reloaded yet); left out of this pod only.
	ReasonCollidesWithPresent Reason = "CollidesWithInjectedNamespacedSidecarSet"
)

// Error is an injection failure. It names the SidecarSet (empty for a problem of the pod itself)
// and the field at fault.
type Error struct {
	// SidecarSet is the name of the SidecarSet at fault, "" when the pod is.
	SidecarSet string
	// Field is the path of the offending field, in the SidecarSet or (SidecarSet == "") the pod.
	Field string
	// Err is the underlying error.
	Err error
}

func (e *Error) Error() string {
	if e.SidecarSet == "" {
		return fmt.Sprintf("pod %s: %v", e.Field, e.Err)
	}
	return fmt.Sprintf("SidecarSet %q: %s: %v", e.SidecarSet, e.Field, e.Err)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

func newError(sidecarSet, field string, err error) *Error {
	return &Error{SidecarSet: sidecarSet, Field: field, Err: err}
}
