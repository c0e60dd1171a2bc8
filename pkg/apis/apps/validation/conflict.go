package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/selectoroverlap"
)

// ValidateConflicts checks ss against the other stored SidecarSets that may inject into the same
// pods. others may include ss itself and its canary base; both are skipped. Another SidecarSet
// overlaps when its namespaces and its pod selector overlap ss's (package selectoroverlap; a nil
// namespace restriction overlaps everything, a v1alpha1 namespace is a selector on the
// kubernetes.io/metadata.name label). The relation is OpenKruise's heuristic on purpose, paused
// SidecarSets included: the server refuses what OpenKruise refuses, so migrated SidecarSets are
// accepted. It is not the policy compiler's neighbours (neighbour.Neighbours), which must be sound
// (selectoroverlap.Intersect) and leave paused SidecarSets out: {app: a} and {app: a, canary
// Exists} do not overlap here but are neighbours there. Against overlapping SidecarSets it rejects:
//   - an init container (container) whose name an init container (container) of another has;
//   - a volume whose name another declares with a different definition;
//   - an annotation patched by both with non-Retain policies, when either uses Overwrite.
//
// Each conflict is reported once, naming the first conflicting SidecarSet by name.
func ValidateConflicts(ss *apps.SidecarSet, others []*apps.SidecarSet) field.ErrorList {
	baseName, _ := IsCanary(ss)
	var overlapping []*apps.SidecarSet
	overlaps := Overlapping(ss)
	for _, o := range others {
		if o == nil || o.Name == ss.Name || (baseName != "" && o.Name == baseName) {
			continue
		}
		if overlaps(o.Spec.Selector, o.Spec.Namespace, o.Spec.NamespaceSelector) {
			overlapping = append(overlapping, o)
		}
	}
	slices.SortStableFunc(overlapping, func(a, b *apps.SidecarSet) int { return strings.Compare(a.Name, b.Name) })
	return conflictsWith(ss, overlapping)
}

// Overlapping returns the test ValidateConflicts applies to each other SidecarSet, given its pod
// selector, v1alpha1 namespace and namespace selector: whether it may select a pod ss selects. A
// caller holding the others in another form (the stored objects) can leave out those it rejects
// before converting them.
func Overlapping(ss *apps.SidecarSet) func(selector *metav1.LabelSelector, namespace string, namespaceSelector *metav1.LabelSelector) bool {
	pods := selectoroverlap.Prepare(ss.Spec.Selector)
	sel := apps.NamespaceSelector(ss.Spec.Namespace, ss.Spec.NamespaceSelector)
	if sel == nil {
		return func(selector *metav1.LabelSelector, _ string, _ *metav1.LabelSelector) bool {
			return pods.Overlap(selector)
		}
	}
	namespaces := selectoroverlap.Prepare(sel)
	return func(selector *metav1.LabelSelector, namespace string, namespaceSelector *metav1.LabelSelector) bool {
		if !pods.Overlap(selector) {
			return false
		}
		other := apps.NamespaceSelector(namespace, namespaceSelector)
		return other == nil || namespaces.Overlap(other)
	}
}

// ConflictKeys returns the names a conflict of ss with another SidecarSet can be about, one key
// per init container, container, volume and annotation it patches with a non-Retain policy, each
// prefixed by its kind ("initContainer/", "container/", "volume/", "annotation/"). Two
// SidecarSets that share no key never conflict: ValidateConflicts(ss, others) is the same for
// others and for the others sharing a key with ss, which lets a caller look up only those.
func ConflictKeys(ss *apps.SidecarSet) []string {
	keys := make([]string, 0, len(ss.Spec.InitContainers)+len(ss.Spec.Containers)+len(ss.Spec.Volumes))
	for _, c := range ss.Spec.InitContainers {
		keys = append(keys, "initContainer/"+c.Name)
	}
	for _, c := range ss.Spec.Containers {
		keys = append(keys, "container/"+c.Name)
	}
	for _, v := range ss.Spec.Volumes {
		keys = append(keys, "volume/"+v.Name)
	}
	for _, patch := range ss.Spec.PatchPodMetadata {
		if patch.PatchPolicy == apps.SidecarSetRetainPatchPolicy {
			continue
		}
		for key := range patch.Annotations {
			keys = append(keys, "annotation/"+key)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// Conflicts returns what of ss conflicts with o by the rules of ValidateConflicts, whether or not
// their selectors overlap: for two SidecarSets that select the same pod, what injecting both
// into it would collide on. Empty when they can be injected together.
func Conflicts(ss, o *apps.SidecarSet) field.ErrorList {
	return conflictsWith(ss, []*apps.SidecarSet{o})
}

// conflictsWith reports the conflicts of ss with each of overlapping.
func conflictsWith(ss *apps.SidecarSet, overlapping []*apps.SidecarSet) field.ErrorList {
	spec := field.NewPath("spec")
	allErrs := containerConflicts(ss.Spec.InitContainers, overlapping,
		func(o *apps.SidecarSet) []apps.SidecarContainer { return o.Spec.InitContainers }, spec.Child("initContainers"))
	allErrs = append(allErrs, containerConflicts(ss.Spec.Containers, overlapping,
		func(o *apps.SidecarSet) []apps.SidecarContainer { return o.Spec.Containers }, spec.Child("containers"))...)
	allErrs = append(allErrs, volumeConflicts(ss.Spec.Volumes, overlapping, spec.Child("volumes"))...)
	return append(allErrs, annotationConflicts(ss.Spec.PatchPodMetadata, overlapping, spec.Child("patchPodMetadata"))...)
}

func containerConflicts(mine []apps.SidecarContainer, others []*apps.SidecarSet,
	list func(*apps.SidecarSet) []apps.SidecarContainer, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, c := range mine {
		for _, o := range others {
			if hasContainer(list(o), c.Name) {
				allErrs = append(allErrs, withDetail(field.Duplicate(path.Index(i).Child("name"), c.Name),
					"container %s already exist in %s", c.Name, o.Name))
				break
			}
		}
	}
	return allErrs
}

func hasContainer(cs []apps.SidecarContainer, name string) bool {
	for _, c := range cs {
		if c.Name == name {
			return true
		}
	}
	return false
}

func volumeConflicts(mine []corev1.Volume, others []*apps.SidecarSet, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i := range mine {
		v := &mine[i]
	others:
		for _, o := range others {
			for j := range o.Spec.Volumes {
				if ov := &o.Spec.Volumes[j]; ov.Name == v.Name && !apiequality.Semantic.DeepEqual(v, ov) {
					allErrs = append(allErrs, field.Invalid(path.Index(i), v.Name,
						fmt.Sprintf("volume %s is in conflict with sidecarset %s", v.Name, o.Name)))
					break others
				}
			}
		}
	}
	return allErrs
}

func annotationConflicts(mine []apps.SidecarSetPatchPodMetadata, others []*apps.SidecarSet, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, patch := range mine {
		if patch.PatchPolicy == apps.SidecarSetRetainPatchPolicy {
			continue
		}
		for _, key := range sets.List(sets.KeySet(patch.Annotations)) {
			if o := firstAnnotationConflict(patch.PatchPolicy, key, others); o != nil {
				allErrs = append(allErrs, field.Forbidden(path.Index(i).Child("annotations").Key(key),
					fmt.Sprintf("annotation %s is in conflict with sidecarset %s", key, o.Name)))
			}
		}
	}
	return allErrs
}

// firstAnnotationConflict returns the first SidecarSet that patches key with a non-Retain policy
// when either it or policy is Overwrite.
func firstAnnotationConflict(policy apps.SidecarSetPatchPolicyType, key string, others []*apps.SidecarSet) *apps.SidecarSet {
	for _, o := range others {
		for _, op := range o.Spec.PatchPodMetadata {
			if _, ok := op.Annotations[key]; !ok || op.PatchPolicy == apps.SidecarSetRetainPatchPolicy {
				continue
			}
			if policy == apps.SidecarSetOverwritePatchPolicy || op.PatchPolicy == apps.SidecarSetOverwritePatchPolicy {
				return o
			}
		}
	}
	return nil
}
