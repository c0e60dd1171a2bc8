// Package migrate converts what OpenKruise stores for its SidecarSets into this server's objects,
// for kubectl sidecarset migrate: each SidecarSet (apps.kruise.io v1alpha1 or v1beta1, as kubectl
// get prints it) becomes the same SidecarSet with its metadata cleaned, and each of its
// ControllerRevisions (apps/v1, in OpenKruise's namespace) becomes a SidecarSetRevision of the same
// name, number, labels and annotations, recording the snapshot decoded from the revision's data.
// It also orders the writes and compares what is stored with what would be written, so that a
// second migration changes nothing. Pure: no cluster, no clock.
//
// Why the server then adopts OpenKruise's pods with no upgrade: the SidecarSet's spec is kept as
// OpenKruise stored it (defaulted alike), so the server's kruise.io/sidecarset-hash equals the one
// OpenKruise wrote on the pods it injected (pkg/apis/apps/hash, checked against values computed by
// OpenKruise); and the revision equal to the spec is found by comparing snapshots, so the
// controller takes the imported one as its latest instead of recording another (both through
// package revision).
package migrate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/install"
	"github.com/sidecarset/apiserver/pkg/apis/apps/revision"
	"github.com/sidecarset/apiserver/pkg/apis/apps/stored"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1beta1"
)

// OpenKruise's names.
const (
	// SidecarSetNameLabel labels OpenKruise's ControllerRevisions of a SidecarSet with its name
	// (this server labels its revisions v1alpha1.SidecarSetNameLabel).
	SidecarSetNameLabel = "kruise.io/sidecarset-name"
	// Namespace is where OpenKruise keeps the ControllerRevisions of SidecarSets by default.
	Namespace = "kruise-system"
)

var scheme = newScheme()

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}

// Plan is what a migration writes, in order: the revisions first (the SidecarSets that pin one by
// name, or by custom version, are refused while it does not exist; and a SidecarSet whose revision
// exists takes it over instead of recording its own), then the SidecarSets, every canary after
// the SidecarSets that are not (a canary is refused while its base does not exist).
type Plan struct {
	Revisions   []*v1alpha1.SidecarSetRevision
	SidecarSets []*v1alpha1.SidecarSet
	// Warnings are what the migration cannot carry over exactly, or skips.
	Warnings []string
}

// Convert converts OpenKruise's objects: SidecarSets (apps.kruise.io/v1alpha1 or v1beta1) and
// ControllerRevisions (apps/v1); a ControllerRevision that is not a SidecarSet's (no
// kruise.io/sidecarset-name label) is skipped with a warning. Every error names its object.
func Convert(objs []*unstructured.Unstructured) (*Plan, error) {
	plan := &Plan{}
	var errs []string
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		switch {
		case gvk.Group == apps.GroupName && gvk.Kind == "SidecarSet":
			ss, err := ConvertSidecarSet(obj)
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			plan.SidecarSets = append(plan.SidecarSets, ss)
		case gvk.Group == appsv1.GroupName && gvk.Kind == "ControllerRevision":
			cr := &appsv1.ControllerRevision{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, cr, true); err != nil {
				errs = append(errs, fmt.Sprintf("ControllerRevision %s: %v", objectName(obj), err))
				continue
			}
			if _, ok := cr.Labels[SidecarSetNameLabel]; !ok {
				plan.Warnings = append(plan.Warnings, fmt.Sprintf("ControllerRevision %s skipped: no label %s, not a SidecarSet's", objectName(obj), SidecarSetNameLabel))
				continue
			}
			rev, err := ConvertRevision(cr)
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			plan.Revisions = append(plan.Revisions, rev)
		default:
			errs = append(errs, fmt.Sprintf("%s %s (%s): not an OpenKruise SidecarSet (apps.kruise.io) or ControllerRevision (apps/v1)",
				obj.GetKind(), objectName(obj), obj.GetAPIVersion()))
		}
	}
	if err := plan.check(); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	plan.order()
	plan.Warnings = append(plan.Warnings, plan.review()...)
	plan.Warnings = append(plan.Warnings, plan.features()...)
	return plan, nil
}

func objectName(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}

// ConvertSidecarSet returns OpenKruise's SidecarSet as this server's, at v1alpha1 (through the
// server's own conversion when it is v1beta1): the same name, labels, annotations and spec; no
// uid, resourceVersion, creationTimestamp, generation, managedFields, ownerReferences, finalizers
// nor status. Unknown fields are an error: nothing is dropped silently.
func ConvertSidecarSet(obj *unstructured.Unstructured) (*v1alpha1.SidecarSet, error) {
	name := "SidecarSet " + obj.GetName()
	content := obj.DeepCopy().Object
	delete(content, "status") // written by the server's controller; OpenKruise's may have other fields
	var versioned runtime.Object
	switch obj.GetAPIVersion() {
	case v1alpha1.SchemeGroupVersion.String():
		versioned = &v1alpha1.SidecarSet{}
	case v1beta1.SchemeGroupVersion.String():
		versioned = &v1beta1.SidecarSet{}
	default:
		return nil, fmt.Errorf("%s: apiVersion %s, want %s or %s", name, obj.GetAPIVersion(), v1alpha1.SchemeGroupVersion, v1beta1.SchemeGroupVersion)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(content, versioned, true); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	internal := &apps.SidecarSet{}
	if err := scheme.Convert(versioned, internal, nil); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	ss := &v1alpha1.SidecarSet{}
	if err := scheme.Convert(internal, ss, nil); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &v1alpha1.SidecarSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "SidecarSet"},
		ObjectMeta: metav1.ObjectMeta{Name: ss.Name, Labels: ss.Labels, Annotations: ss.Annotations},
		Spec:       ss.Spec,
	}, nil
}

// revisionData is the data of OpenKruise's ControllerRevision of a SidecarSet: a strategic merge
// patch replacing the spec with the five fields it records.
type revisionData struct {
	Spec struct {
		Patch string `json:"$patch"`
		v1alpha1.SidecarSetRevisionSpec
	} `json:"spec"`
}

// ConvertRevision returns OpenKruise's ControllerRevision of a SidecarSet as a SidecarSetRevision:
// the same name, revision number, labels (with this server's apps.kruise.io/sidecarset-name
// added) and annotations (OpenKruise copies the SidecarSet's, its hash annotations included), and
// the snapshot its data records, decoded strictly. No owner: the SidecarSet adopts it.
func ConvertRevision(cr *appsv1.ControllerRevision) (*v1alpha1.SidecarSetRevision, error) {
	name := "ControllerRevision " + cr.Namespace + "/" + cr.Name
	set := cr.Labels[SidecarSetNameLabel]
	if set == "" {
		return nil, fmt.Errorf("%s: no label %s naming its SidecarSet", name, SidecarSetNameLabel)
	}
	raw := cr.Data.Raw
	if len(raw) == 0 && cr.Data.Object != nil {
		var err error
		if raw, err = json.Marshal(cr.Data.Object); err != nil {
			return nil, fmt.Errorf("%s: data: %w", name, err)
		}
	}
	spec, err := DecodeRevisionData(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: data: %w", name, err)
	}
	labels := maps.Clone(cr.Labels)
	labels[v1alpha1.SidecarSetNameLabel] = set
	return &v1alpha1.SidecarSetRevision{
		TypeMeta:       metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "SidecarSetRevision"},
		ObjectMeta:     metav1.ObjectMeta{Name: cr.Name, Labels: labels, Annotations: maps.Clone(cr.Annotations)},
		SidecarSetName: set,
		Revision:       cr.Revision,
		Spec:           spec,
	}, nil
}

// DecodeRevisionData decodes the data of OpenKruise's ControllerRevision of a SidecarSet,
// {"spec":{"$patch":"replace","containers":...,"imagePullSecrets":...,"initContainers":...,
// "patchPodMetadata":...,"volumes":...}}; a field this server does not know is an error.
func DecodeRevisionData(raw []byte) (v1alpha1.SidecarSetRevisionSpec, error) {
	var data revisionData
	if len(bytes.TrimSpace(raw)) == 0 {
		return v1alpha1.SidecarSetRevisionSpec{}, fmt.Errorf("empty")
	}
	strict, err := kjson.UnmarshalStrict(raw, &data, kjson.DisallowUnknownFields)
	if err != nil {
		return v1alpha1.SidecarSetRevisionSpec{}, err
	}
	if len(strict) > 0 {
		return v1alpha1.SidecarSetRevisionSpec{}, fmt.Errorf("%v", strict)
	}
	if data.Spec.Patch != "replace" {
		return v1alpha1.SidecarSetRevisionSpec{}, fmt.Errorf(`spec.$patch is %q, want "replace" (OpenKruise's SidecarSet revision)`, data.Spec.Patch)
	}
	return data.Spec.SidecarSetRevisionSpec, nil
}

// check refuses two objects of the same name, and a revision numbered below 1.
func (p *Plan) check() error {
	var errs []string
	seen := map[string]bool{}
	for _, r := range p.Revisions {
		if seen[r.Name] {
			errs = append(errs, fmt.Sprintf("ControllerRevision %s read twice", r.Name))
		}
		seen[r.Name] = true
		if r.Revision < 1 {
			errs = append(errs, fmt.Sprintf("ControllerRevision %s: revision %d, want 1 or more", r.Name, r.Revision))
		}
	}
	clear(seen)
	for _, ss := range p.SidecarSets {
		if seen[ss.Name] {
			errs = append(errs, fmt.Sprintf("SidecarSet %s read twice", ss.Name))
		}
		seen[ss.Name] = true
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

// order sorts the revisions by SidecarSet and number, and the SidecarSets by name, the canaries
// last.
func (p *Plan) order() {
	sort.Slice(p.Revisions, func(i, j int) bool {
		a, b := p.Revisions[i], p.Revisions[j]
		if a.SidecarSetName != b.SidecarSetName {
			return a.SidecarSetName < b.SidecarSetName
		}
		return a.Revision < b.Revision
	})
	sort.SliceStable(p.SidecarSets, func(i, j int) bool {
		_, ci := apps.CanaryBase(p.SidecarSets[i].Annotations)
		_, cj := apps.CanaryBase(p.SidecarSets[j].Annotations)
		if ci != cj {
			return cj
		}
		return p.SidecarSets[i].Name < p.SidecarSets[j].Name
	})
}

// review warns about what the migration does not carry over as it is: a SidecarSet whose hash
// the server computes differently from OpenKruise's annotation (its pods would be upgraded), a
// SidecarSet without revisions read, or none equal to its spec, or pinning a revision not read,
// and revisions of a SidecarSet not read.
func (p *Plan) review() []string {
	var out []string
	bySet := map[string][]*v1alpha1.SidecarSetRevision{}
	for _, r := range p.Revisions {
		bySet[r.SidecarSetName] = append(bySet[r.SidecarSetName], r)
	}
	for _, ss := range p.SidecarSets {
		held, _ := stored.SidecarSet(ss) // unhashable: no hash, reported below as differing
		for _, k := range []string{v1alpha1.SidecarSetHashAnnotation, v1alpha1.SidecarSetHashWithoutImageAnnotation} {
			if theirs, ok := ss.Annotations[k]; ok && theirs != held.Annotations[k] {
				out = append(out, fmt.Sprintf("SidecarSet %s: the server's %s is %s, OpenKruise's %s: the pods OpenKruise injected will not count as updated and will be upgraded in place",
					ss.Name, k, held.Annotations[k], theirs))
			}
		}
		revs := bySet[ss.Name]
		delete(bySet, ss.Name)
		if len(revs) == 0 {
			out = append(out, fmt.Sprintf("SidecarSet %s: none of its ControllerRevisions was read: its history is not migrated (read them from %s too)", ss.Name, Namespace))
			continue
		}
		storedRevs := make([]*v1alpha1.SidecarSetRevision, 0, len(revs))
		for _, r := range revs {
			storedRevs = append(storedRevs, stored.Revision(r))
		}
		if revision.Find(storedRevs, revision.Snapshot(held)) == nil {
			out = append(out, fmt.Sprintf("SidecarSet %s: none of its ControllerRevisions read records its current spec: the server records a new revision", ss.Name))
		}
	}
	read := map[string]bool{}
	for _, r := range p.Revisions {
		read[r.Name] = true
	}
	for _, ss := range p.SidecarSets {
		if pin := ss.Spec.InjectionStrategy.Revision; pin != nil && pin.RevisionName != nil && !read[*pin.RevisionName] {
			out = append(out, fmt.Sprintf("SidecarSet %s: injectionStrategy.revision.revisionName %s is not among the ControllerRevisions read: the server refuses the SidecarSet unless it has that revision",
				ss.Name, *pin.RevisionName))
		}
	}
	for _, set := range slices.Sorted(maps.Keys(bySet)) {
		for _, r := range bySet[set] {
			out = append(out, fmt.Sprintf("ControllerRevision %s: its SidecarSet %s was not read; the revision is imported all the same, and a SidecarSet %s created later adopts it",
				r.Name, set, set))
		}
	}
	return out
}

// SidecarSetDiff says how the stored SidecarSet got differs from want, the SidecarSet a migration
// writes: its spec, or a label or annotation want has (the server's hash annotations aside, which
// it stamps itself). Empty when got is what writing want would store.
func SidecarSetDiff(want, got *v1alpha1.SidecarSet) string {
	var diffs []string
	if held, _ := stored.SidecarSet(want); !apiequality.Semantic.DeepEqual(held.Spec, got.Spec) {
		diffs = append(diffs, "spec")
	}
	diffs = append(diffs, mapDiff("label", want.Labels, got.Labels, nil)...)
	diffs = append(diffs, mapDiff("annotation", want.Annotations, got.Annotations,
		[]string{v1alpha1.SidecarSetHashAnnotation, v1alpha1.SidecarSetHashWithoutImageAnnotation})...)
	return strings.Join(diffs, ", ")
}

// RevisionDiff says how the stored revision got differs from want, the revision a migration
// writes: its SidecarSet, number or snapshot, or a label or annotation want has (owners aside: the
// SidecarSet adopts its revisions). Empty when got is what writing want would store.
func RevisionDiff(want, got *v1alpha1.SidecarSetRevision) string {
	var diffs []string
	if want.SidecarSetName != got.SidecarSetName {
		diffs = append(diffs, fmt.Sprintf("SidecarSet %s (want %s)", got.SidecarSetName, want.SidecarSetName))
	}
	if want.Revision != got.Revision {
		diffs = append(diffs, fmt.Sprintf("revision %d (want %d)", got.Revision, want.Revision))
	}
	if !apiequality.Semantic.DeepEqual(stored.Revision(want).Spec, got.Spec) {
		diffs = append(diffs, "spec")
	}
	diffs = append(diffs, mapDiff("label", want.Labels, got.Labels, nil)...)
	diffs = append(diffs, mapDiff("annotation", want.Annotations, got.Annotations, nil)...)
	return strings.Join(diffs, ", ")
}

// mapDiff lists the keys of want whose value in got differs, but those in ignore.
func mapDiff(what string, want, got map[string]string, ignore []string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if slices.Contains(ignore, k) {
			continue
		}
		if v, ok := got[k]; !ok {
			out = append(out, fmt.Sprintf("%s %s missing", what, k))
		} else if v != want[k] {
			out = append(out, fmt.Sprintf("%s %s=%q (want %q)", what, k, v, want[k]))
		}
	}
	return out
}
