package migrate

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// OpenKruise's names for features outside the SidecarSet API that a SidecarSet can ask for through
// its sidecars' environment or the annotations it patches into pods. OpenKruise's own pod webhook,
// kruise-daemon and sidecar terminator act on them; this server does not, so they stop working
// after the cutover.
const (
	// ContainerPriorityEnv is a container's launch priority: OpenKruise starts a pod's containers
	// in the order of their priorities.
	ContainerPriorityEnv = "KRUISE_CONTAINER_PRIORITY"
	// ContainerLaunchPriorityAnnotation set to ContainerLaunchOrdered on a pod has OpenKruise start
	// its containers in their order.
	ContainerLaunchPriorityAnnotation = "apps.kruise.io/container-launch-priority"
	// ContainerLaunchOrdered is the value of ContainerLaunchPriorityAnnotation that orders.
	ContainerLaunchOrdered = "Ordered"
	// TerminateSidecarEnv set to "true" (any case) on a sidecar has OpenKruise's sidecar
	// terminator stop it once the other containers of a Job's pod have exited.
	TerminateSidecarEnv = "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT"
	// TerminateSidecarWithImageEnv set to an image has the sidecar terminator stop the sidecar by
	// updating it in place to that image.
	TerminateSidecarWithImageEnv = "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE"
)

// The features a Reliance names.
const (
	FeatureLaunchPriority       = "container launch priority"
	FeatureJobSidecarTerminator = "Job sidecar terminator"
)

// consequences says, per feature, what changes after the cutover and what takes its place.
var consequences = map[string]string{
	FeatureLaunchPriority: "no container start order is enforced here (a native sidecar, an init container with " +
		"restartPolicy Always, starts before the application containers)",
	FeatureJobSidecarTerminator: "the sidecar is not stopped when the Job's other containers exit, so its pods never " +
		"complete (Kubernetes stops a native sidecar, an init container with restartPolicy Always, once they have)",
}

// Reliance is a place where a SidecarSet's spec asks for an OpenKruise feature outside the
// SidecarSet API.
type Reliance struct {
	// Field is what asks for it, e.g. spec.containers[log].env[KRUISE_CONTAINER_PRIORITY].
	Field string
	// Feature is FeatureLaunchPriority or FeatureJobSidecarTerminator.
	Feature string
}

// Reliances lists, in spec order, where spec asks for OpenKruise's container launch priority (a
// sidecar's KRUISE_CONTAINER_PRIORITY, with any value, or apps.kruise.io/container-launch-priority:
// Ordered among the patched pod annotations) or its Job sidecar terminator (a sidecar's
// KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT set to true, or its _WITH_IMAGE variant set to an
// image), with the values OpenKruise acts on. Only spec.containers are read: OpenKruise reads
// these variables in a pod's containers only, so in an init container (a native sidecar too) they
// did nothing there either, and nothing stops working.
func Reliances(spec *v1alpha1.SidecarSetSpec) []Reliance {
	var out []Reliance
	for _, c := range spec.Containers {
		for _, e := range c.Env {
			if feature := envFeature(e); feature != "" {
				out = append(out, Reliance{Field: fmt.Sprintf("spec.containers[%s].env[%s]", c.Name, e.Name), Feature: feature})
			}
		}
	}
	for i, p := range spec.PatchPodMetadata {
		if p.Annotations[ContainerLaunchPriorityAnnotation] == ContainerLaunchOrdered {
			out = append(out, Reliance{Field: fmt.Sprintf("spec.patchPodMetadata[%d].annotations[%s]", i, ContainerLaunchPriorityAnnotation),
				Feature: FeatureLaunchPriority})
		}
	}
	return out
}

// envFeature is the feature a sidecar's variable asks for, "" for none.
func envFeature(e corev1.EnvVar) string {
	switch {
	case e.Name == ContainerPriorityEnv:
		return FeatureLaunchPriority
	case e.Name == TerminateSidecarEnv && strings.EqualFold(e.Value, "true"),
		e.Name == TerminateSidecarWithImageEnv && e.Value != "":
		return FeatureJobSidecarTerminator
	}
	return ""
}

// DescribeReliances is one line saying that the object what (e.g. "SidecarSet log") relies on
// the features of rs and what changes after the cutover, feature by feature in the order first
// met in rs; "" when rs is empty.
func DescribeReliances(what string, rs []Reliance) string {
	if len(rs) == 0 {
		return ""
	}
	features, fields := group(rs)
	parts := make([]string, len(features))
	for i, f := range features {
		parts[i] = fmt.Sprintf("%s (%s): %s", f, strings.Join(fields[f], ", "), Consequence(f))
	}
	return fmt.Sprintf("%s relies on OpenKruise features outside the SidecarSet API, which stop working after the cutover: OpenKruise's %s",
		what, strings.Join(parts, "; OpenKruise's "))
}

// SummarizeReliances names the features of rs, in the order first met, each with its fields,
// e.g. "Job sidecar terminator (spec.containers[a].env[KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT])".
func SummarizeReliances(rs []Reliance) string {
	features, fields := group(rs)
	parts := make([]string, len(features))
	for i, f := range features {
		parts[i] = fmt.Sprintf("%s (%s)", f, strings.Join(fields[f], ", "))
	}
	return strings.Join(parts, ", ")
}

// Consequence says what changes for feature after the cutover, and what takes its place.
func Consequence(feature string) string { return consequences[feature] }

// group returns the features of rs in the order first met, and the fields of each.
func group(rs []Reliance) ([]string, map[string][]string) {
	var features []string
	fields := map[string][]string{}
	for _, r := range rs {
		if _, seen := fields[r.Feature]; !seen {
			features = append(features, r.Feature)
		}
		fields[r.Feature] = append(fields[r.Feature], r.Field)
	}
	return features, fields
}

// features warns, per SidecarSet, about the OpenKruise features outside the SidecarSet API it
// relies on.
func (p *Plan) features() []string {
	var out []string
	for _, ss := range p.SidecarSets {
		if w := DescribeReliances("SidecarSet "+ss.Name, Reliances(&ss.Spec)); w != "" {
			out = append(out, w)
		}
	}
	return out
}
