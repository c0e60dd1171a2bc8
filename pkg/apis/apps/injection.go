package apps

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The words of the injection paths: which admission path injects a SidecarSet, why, and the
// names of the objects the server owns in kube-apiserver to serve them. The policy compiler
// (pkg/admission/policy) decides; the registry, the controllers, the plugin and the tests read
// the same words here, so that none of them imports the compiler for a constant.

// Names and marks of the objects the server owns (MutatingAdmissionPolicies, their bindings, the
// injection webhook configuration).
const (
	// PolicyNamePrefix prefixes the name of every policy and binding this server owns.
	PolicyNamePrefix = "sidecarsets-"
	// ManagedByLabel marks the objects this server owns; its value is ManagedByValue.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of ManagedByLabel on the objects this server owns.
	ManagedByValue = "sidecarset-apiserver"
	// SidecarSetsAnnotation on a compiled policy records the SidecarSets it injects: a JSON object
	// from SidecarSet name to the spec hash it was compiled from, when (the updateTimestamp its
	// pods' hash annotation entries carry) and a digest of what it injects where.
	SidecarSetsAnnotation = "apps.kruise.io/sidecarsets"
	// ServerVersionAnnotation on the active injection webhook configuration is the version of the
	// server (its leader) that last wrote it; kubectl sidecarset version reads it.
	ServerVersionAnnotation = "apps.kruise.io/server-version"
	// IntakeOpenedAnnotation and IntakeUntilAnnotation on the intake webhook
	// configuration, while it holds the intake webhooks for every namespace (every pod to the
	// server: a cluster SidecarSet's write is under way), record since when every namespace has
	// been sent and until when the last write holds them (RFC 3339 times); the leader drops the
	// hold once the selective webhooks serve every SidecarSet written until then.
	IntakeOpenedAnnotation = "apps.kruise.io/intake-opened"
	IntakeUntilAnnotation  = "apps.kruise.io/intake-until"
	// IntakeNamespacesAnnotation records the same for the scopes held by the other writes, whose
	// pods alone the intake webhooks send besides: a NamespacedSidecarSet's namespace, or a label
	// key a cluster SidecarSet requires (IntakeLabelScope): a JSON object from scope to
	// {"opened": time, "until": time}.
	IntakeNamespacesAnnotation = "apps.kruise.io/intake-namespaces"
)

// IntakeLabelScope is the prefix of an intake scope that holds the pods with a label key, in every
// namespace: a cluster SidecarSet's write whose versions all require that key concerns no other
// pod. (Namespace names never hold a colon.)
const IntakeLabelScope = "label:"

// IntakeScopes returns the intake scopes of a write of a SidecarSet of namespace (a
// NamespacedSidecarSet's; "" for a cluster SidecarSet) whose versions written (the new one, and
// the one replaced or deleted) have the selectors sels: its namespace, for a NamespacedSidecarSet;
// for a cluster SidecarSet, each label key its versions require (IntakeLabelScope), or "" (every
// pod) when one of them requires none.
func IntakeScopes(namespace string, sels ...*metav1.LabelSelector) []string {
	if namespace != "" {
		return []string{namespace}
	}
	var out []string
	for _, sel := range sels {
		k, _ := RequiredLabel(sel)
		if k == "" {
			return []string{""}
		}
		if s := IntakeLabelScope + k; !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return []string{""}
	}
	return out
}

// InjectionPath says which admission path injects a SidecarSet (RolloutInjection.Path).
type InjectionPath string

// The injection paths.
const (
	// PathPolicy: a MutatingAdmissionPolicy inside kube-apiserver.
	PathPolicy InjectionPath = "Policy"
	// PathWebhook: this server's injection webhook, for what a policy cannot express exactly.
	PathWebhook InjectionPath = "Webhook"
	// PathNone: the SidecarSet injects into no pod (injection paused), so neither path serves it.
	PathNone InjectionPath = "None"
)

// InjectionPathAnnotation on a cluster SidecarSet asks for a path: its only value,
// InjectionPathPolicy, asks for a MutatingAdmissionPolicy, which kube-apiserver runs itself, so
// that the SidecarSet's pods are injected while this server is down. Up to the server's
// --max-policy-path-requests SidecarSets asking (the oldest first) get policies before the others
// and whatever their selector's shape; what a policy cannot express, or a policy too large for
// kube-apiserver, still goes to the webhook, and the Injected condition says why.
const InjectionPathAnnotation = "apps.kruise.io/injection-path"

// InjectionPathPolicy is the value of InjectionPathAnnotation that asks for a policy.
const InjectionPathPolicy = string(PathPolicy)

// AsksForPolicy reports whether a SidecarSet's annotations ask for the policy path.
func AsksForPolicy(annotations map[string]string) bool {
	return annotations[InjectionPathAnnotation] == InjectionPathPolicy
}

// PolicyInjectsMessage is the message of a SidecarSet the group policy name injects.
func PolicyInjectsMessage(name string) string { return "injected by MutatingAdmissionPolicy " + name }

// Reasons of a RolloutInjection: why a SidecarSet is served by the policy path (ReasonCompiled),
// by the webhook (the feature or limit a policy cannot express), or by neither path.
const (
	ReasonInjectionPaused     = "InjectionPaused"
	ReasonCanary              = "Canary"
	ReasonInjectionRevision   = "InjectionRevision"
	ReasonPatchPodMetadata    = "PatchPodMetadata"
	ReasonHotUpgrade          = "HotUpgrade"
	ReasonResourcesPolicy     = "ResourcesPolicy"
	ReasonTransferEnv         = "TransferEnv"
	ReasonShareVolumePolicy   = "ShareVolumePolicy"
	ReasonShareVolumeDevices  = "ShareVolumeDevicePolicy"
	ReasonSortedContainers    = "SortSidecarContainersByName"
	ReasonAmbiguousContainers = "AmbiguousContainerNames"
	ReasonTooLarge            = "TooLarge"
	ReasonNoSelector          = "NoSelector"
	ReasonCompiled            = "Compiled"
	ReasonWebhookMode         = "WebhookMode"
	ReasonSelectorBudget      = "SelectorBudget"
	ReasonManyNeighbours      = "ManyNeighbours"
	ReasonRevisionPending     = "RevisionPending"
	// ReasonShadowed: a NamespacedSidecarSet that may collide with a cluster SidecarSet in the
	// pods both select (a container name, a volume defined otherwise); the webhook leaves it out
	// of those pods, the cluster SidecarSet wins.
	ReasonShadowed = "ShadowedByClusterSidecarSet"
)

// MaxWebhookLabelKeys is the most label keys that get an injection webhook each; with more, one
// webhook selects pods with a match condition alone (a Widening, WideningTooManyLabelKeys).
const MaxWebhookLabelKeys = 16

// Widening says why a SidecarSet leaves the injection webhooks without a label selector: every
// pod created in the namespaces they serve then reaches their match condition (CallsServer false)
// or this server (true), and a server outage fails those creates. The SidecarSet controller
// reports it as the WebhookReceivesEveryPod condition.
//
// +k8s:deepcopy-gen=false
type Widening struct {
	// Reason is WideningSelectorRequiresNoLabel (the SidecarSet's own selector),
	// WideningTooManyLabelKeys or WideningMatchConditionTooLarge (all SidecarSets together).
	Reason      string
	CallsServer bool
}

// The reasons of a Widening.
const (
	WideningSelectorRequiresNoLabel = "SelectorRequiresNoLabel"
	WideningTooManyLabelKeys        = "TooManyLabelKeys"
	WideningMatchConditionTooLarge  = "MatchConditionTooLarge"
)

// Message says what w means for the cluster.
func (w Widening) Message() string {
	why := map[string]string{
		WideningSelectorRequiresNoLabel: "spec.selector requires no label (only NotIn or DoesNotExist)",
		WideningTooManyLabelKeys:        fmt.Sprintf("the SidecarSets' selectors require more than %d label keys", MaxWebhookLabelKeys),
		WideningMatchConditionTooLarge:  "the webhooks' match condition would exceed CEL's expression size",
	}[w.Reason]
	if w.CallsServer {
		return why + ": no label selector narrows the injection webhooks, and every pod create in the namespaces they serve calls this server (while it is down, those creates fail)"
	}
	return why + ": no label selector narrows the injection webhooks, and every pod create in the namespaces they serve is checked against their match condition"
}

// RequiredLabel returns a requirement every pod sel selects meets: a label key and the values it
// may have, or nil values when it only has to exist. The key is "" when sel requires no label to
// be present: then no label selector narrows what the injection webhook receives, and every pod
// create in the namespaces it selects reaches the webhook's match condition or the server. The
// first matchLabels key (in sorted order) wins, then the first In requirement, then the first
// Exists requirement.
func RequiredLabel(sel *metav1.LabelSelector) (key string, values []string) {
	if sel == nil {
		return "", nil
	}
	if len(sel.MatchLabels) > 0 {
		first := ""
		for k := range sel.MatchLabels {
			if first == "" || k < first {
				first = k
			}
		}
		return first, []string{sel.MatchLabels[first]}
	}
	exists := ""
	for _, r := range sel.MatchExpressions {
		switch r.Operator {
		case metav1.LabelSelectorOpIn:
			return r.Key, r.Values
		case metav1.LabelSelectorOpExists:
			if exists == "" {
				exists = r.Key
			}
		}
	}
	return exists, nil
}
