package apps

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ControlPlaneNamespaceLabel marks a namespace whose pods no SidecarSet is injected into, whatever
// the label's value, as OpenKruise's pod webhook leaves such namespaces alone (its
// namespaceSelector requires the label not to exist). Every injection path skips them: the
// webhooks' namespaceSelectors (ControlPlaneRequirement), the policies' CEL
// (on namespaceObject), and the webhook handler itself (SkipsControlPlane), so that a pod's fate
// does not depend on the path that serves its SidecarSets.
const ControlPlaneNamespaceLabel = "control-plane"

// ControlPlaneRequirement is the namespaceSelector requirement that leaves out the namespaces
// labelled ControlPlaneNamespaceLabel.
func ControlPlaneRequirement() metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: ControlPlaneNamespaceLabel, Operator: metav1.LabelSelectorOpDoesNotExist}
}

// ExcludedFromInjection reports whether no injection path injects the pods of namespace name,
// labelled nsLabels: it is one of excluded (the server's own namespace and
// --injection-excluded-namespaces, which the webhooks' namespaceSelectors and the policies leave
// out), or labelled ControlPlaneNamespaceLabel. The controller, the /rollout view and kubectl
// sidecarset explain decide NamespaceExcluded with it.
func ExcludedFromInjection(name string, nsLabels map[string]string, excluded []string) bool {
	return slices.Contains(excluded, name) || SkipsControlPlane(nsLabels)
}

// SkipsControlPlane reports whether a namespace with labels nsLabels is left out of injection:
// it carries ControlPlaneNamespaceLabel, with any value.
func SkipsControlPlane(nsLabels map[string]string) bool {
	_, ok := nsLabels[ControlPlaneNamespaceLabel]
	return ok
}
