package conformance

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Scenario is a rollout/NN-name/scenario.yaml.
type Scenario struct {
	Title    string   `json:"title"`
	Sources  []string `json:"sources,omitempty"`
	Requires []string `json:"requires,omitempty"`
	Flags    []string `json:"flags,omitempty"`
	Notes    Text     `json:"notes,omitempty"`
	Setup    Setup    `json:"setup"`
	Steps    []Step   `json:"steps"`
}

// Setup is what a rollout scenario creates before its steps.
type Setup struct {
	// Namespace: namespaces to create (or relabel) first, each a name, {name, labels} or a
	// Namespace manifest; one or a list.
	Namespace OneOrMany[NamespaceSpec] `json:"namespace,omitempty"`
	// SidecarSets are applied first, unless PodsBeforeSidecarSets.
	SidecarSets           []Object `json:"sidecarSets,omitempty"`
	PodsBeforeSidecarSets bool     `json:"podsBeforeSidecarSets,omitempty"`
	// PodTemplate is a PodTemplateSpec the pods and Deployments are built from.
	PodTemplate Object       `json:"podTemplate,omitempty"`
	Pods        []Pod        `json:"pods,omitempty"`
	Deployments []Deployment `json:"deployments,omitempty"`
	Notes       Text         `json:"notes,omitempty"`
}

// NamespaceSpec is a namespace a scenario needs, with the labels that matter.
type NamespaceSpec struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
}

// UnmarshalJSON accepts a name, {name, labels} or a Namespace manifest.
func (n *NamespaceSpec) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err == nil {
		*n = NamespaceSpec{Name: name}
		return nil
	}
	type plain NamespaceSpec
	var p plain
	if err := strictJSON(b, &p); err == nil {
		*n = NamespaceSpec(p)
		return n.check()
	}
	var m struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name   string            `json:"name"`
			Labels map[string]string `json:"labels,omitempty"`
		} `json:"metadata"`
	}
	if err := strictJSON(b, &m); err != nil || m.Kind != "Namespace" {
		return fmt.Errorf("namespace: want a name, {name, labels} or a Namespace manifest: %s", b)
	}
	*n = NamespaceSpec{Name: m.Metadata.Name, Labels: m.Metadata.Labels}
	return n.check()
}

func (n NamespaceSpec) check() error {
	if n.Name == "" {
		return fmt.Errorf("namespace without a name")
	}
	return nil
}

// Pod is a pod of setup.pods or of a createPods action: built from setup.podTemplate.
type Pod struct {
	Name        string            `json:"name"`
	CreateOrder int               `json:"createOrder,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	// Ready false: the pod must stay Running but not Ready.
	Ready *bool `json:"ready,omitempty"`
	// Namespace overrides the template's namespace.
	Namespace string `json:"namespace,omitempty"`
}

// IsReady reports whether the pod is meant to become Ready (the default).
func (p Pod) IsReady() bool { return p.Ready == nil || *p.Ready }

// Deployment is a Deployment built from setup.podTemplate.
type Deployment struct {
	Name      string            `json:"name"`
	Replicas  int32             `json:"replicas"`
	PodLabels map[string]string `json:"podLabels,omitempty"`
	Namespace string            `json:"namespace,omitempty"`
}

// Step is one step of a rollout scenario: an optional action, then expectations.
type Step struct {
	Name   string  `json:"name"`
	Notes  Text    `json:"notes,omitempty"`
	Action *Action `json:"action,omitempty"`
	Expect Expect  `json:"expect"`
	// Rejected / MessageContains: the action must fail (with that message).
	Rejected        bool   `json:"rejected,omitempty"`
	MessageContains string `json:"messageContains,omitempty"`
}

// ExpectsRejection reports whether the step's action must fail, and the message substring.
func (s Step) ExpectsRejection() (bool, string) {
	msg := s.MessageContains
	if msg == "" {
		msg = s.Expect.MessageContains
	}
	return s.Rejected || s.Expect.Rejected || msg != "", msg
}

// Action is what a step does. Exactly one kind is set.
type Action struct {
	PatchSidecarSet       *Patch          `json:"patchSidecarSet,omitempty"`
	ReplaceSidecarSet     Object          `json:"replaceSidecarSet,omitempty"`
	RepeatPatchSidecarSet *RepeatPatch    `json:"repeatPatchSidecarSet,omitempty"`
	CreatePods            []Pod           `json:"createPods,omitempty"`
	LabelPod              *LabelPod       `json:"labelPod,omitempty"`
	LabelNamespace        *LabelNamespace `json:"labelNamespace,omitempty"`
	// ThenDeletePods, beside LabelNamespace, deletes the scenario's pods in its namespace once the
	// labels are set (the same as LabelNamespace.ThenDeletePods, for a namespace given here).
	ThenDeletePods   *DeletePods      `json:"thenDeletePods,omitempty"`
	ScaleDeployments map[string]int32 `json:"scaleDeployments,omitempty"`
	Notes            Text             `json:"notes,omitempty"`
}

// DeletePods names the namespace whose scenario pods are deleted (their Deployments recreate them).
type DeletePods struct {
	Namespace string `json:"namespace"`
}

// PodsToDelete returns the namespace whose scenario pods are deleted after the action's
// labelNamespace, whichever form asked for it (thenDeletePods: true inside labelNamespace, or
// thenDeletePods: {namespace: NS} beside it), and whether any did.
func (a Action) PodsToDelete() (string, bool) {
	switch {
	case a.ThenDeletePods != nil && a.ThenDeletePods.Namespace != "":
		return a.ThenDeletePods.Namespace, true
	case a.LabelNamespace == nil:
		return "", false
	case a.ThenDeletePods != nil || a.LabelNamespace.ThenDeletePods:
		return a.LabelNamespace.NamespaceName(), true
	}
	return "", false
}

// Kinds lists the action kinds set.
func (a Action) Kinds() []string {
	var k []string
	for name, set := range map[string]bool{
		"patchSidecarSet": a.PatchSidecarSet != nil, "replaceSidecarSet": a.ReplaceSidecarSet.Set(),
		"repeatPatchSidecarSet": a.RepeatPatchSidecarSet != nil, "createPods": len(a.CreatePods) > 0,
		"labelPod": a.LabelPod != nil, "labelNamespace": a.LabelNamespace != nil,
		"scaleDeployments": len(a.ScaleDeployments) > 0,
	} {
		if set {
			k = append(k, name)
		}
	}
	return k
}

// Patch is a JSON merge patch on the v1alpha1 SidecarSet named Name (null deletes a field).
type Patch struct {
	Name       string `json:"name"`
	MergePatch Object `json:"mergePatch"`
}

// RepeatPatch applies MergePatch for i = From..To (inclusive), with ${i} replaced by i, waiting
// for observedGeneration after each.
type RepeatPatch struct {
	Name       string `json:"name"`
	MergePatch Object `json:"mergePatch"`
	From       int    `json:"from"`
	To         int    `json:"to"`
}

// Patches returns the expanded merge patches in order.
func (r RepeatPatch) Patches() ([][]byte, error) {
	if r.To < r.From {
		return nil, fmt.Errorf("repeatPatchSidecarSet: to %d < from %d", r.To, r.From)
	}
	if !strings.Contains(string(r.MergePatch), "${i}") {
		return nil, fmt.Errorf("repeatPatchSidecarSet: mergePatch does not use ${i}")
	}
	var out [][]byte
	for i := r.From; i <= r.To; i++ {
		p, err := ExpandJSON(r.MergePatch, map[string]string{"i": strconv.Itoa(i)})
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// LabelPod sets (or, with a null value, removes) labels of a pod.
type LabelPod struct {
	// Pod (or Name) is the pod.
	Pod       string             `json:"pod,omitempty"`
	Name      string             `json:"name,omitempty"`
	Namespace string             `json:"namespace,omitempty"`
	Labels    map[string]*string `json:"labels"`
}

// PodName returns the pod's name, whichever field gave it.
func (l LabelPod) PodName() string {
	if l.Pod != "" {
		return l.Pod
	}
	return l.Name
}

// LabelNamespace sets (or, with a null value, removes) labels of a namespace; ThenDeletePods then
// deletes the scenario's pods in it (their Deployments recreate them).
type LabelNamespace struct {
	Name           string             `json:"name,omitempty"`
	Namespace      string             `json:"namespace,omitempty"`
	Labels         map[string]*string `json:"labels"`
	ThenDeletePods bool               `json:"thenDeletePods,omitempty"`
}

// NamespaceName returns the namespace's name, whichever field gave it.
func (l LabelNamespace) NamespaceName() string {
	if l.Name != "" {
		return l.Name
	}
	return l.Namespace
}

// LabelPatch renders labels as a merge patch on metadata.labels.
func LabelPatch(labels map[string]*string) ([]byte, error) {
	return json.Marshal(map[string]interface{}{"metadata": map[string]interface{}{"labels": labels}})
}

// Expect is what must hold after a step's action.
type Expect struct {
	// Eventually: all facts must hold at the same moment within the timeout.
	Eventually Facts `json:"eventually"`
	// StableForSeconds: once Eventually holds it must keep holding that long.
	StableForSeconds int `json:"stableForSeconds,omitempty"`
	// InvariantsWhileRunning and OrderingInvariants are properties (prose) sampled while the step
	// runs; ObservedSequenceContains are status counters that must be observed in this order.
	InvariantsWhileRunning   []string       `json:"invariantsWhileRunning,omitempty"`
	OrderingInvariants       []string       `json:"orderingInvariants,omitempty"`
	ObservedSequenceContains []StatusCounts `json:"observedSequenceContains,omitempty"`
	Notes                    Text           `json:"notes,omitempty"`
	// Rejected / MessageContains: the step's action must fail (with that message).
	Rejected        bool   `json:"rejected,omitempty"`
	MessageContains string `json:"messageContains,omitempty"`
}

// Facts are checked together.
type Facts struct {
	SidecarSetStatus OneOrMany[StatusCounts] `json:"sidecarSetStatus,omitempty"`
	Pods             []PodFact               `json:"pods,omitempty"`
	Events           []EventFact             `json:"events,omitempty"`
	SidecarSetPaths  []PathFact              `json:"sidecarSetPaths,omitempty"`
	Revisions        OneOrMany[RevisionFact] `json:"revisions,omitempty"`
	// ObservedGenerationCurrent: every SidecarSet has observedGeneration == generation.
	ObservedGenerationCurrent bool `json:"observedGenerationCurrent,omitempty"`
	Notes                     Text `json:"notes,omitempty"`
}

// StatusCounts are a SidecarSet's status counters (a missing counter reads as 0); the fact also
// requires observedGeneration == generation.
type StatusCounts struct {
	Name             string `json:"name"`
	MatchedPods      int32  `json:"matchedPods"`
	UpdatedPods      int32  `json:"updatedPods"`
	ReadyPods        int32  `json:"readyPods"`
	UpdatedReadyPods int32  `json:"updatedReadyPods"`
	Internal         bool   `json:"internal,omitempty"`
	Note             Text   `json:"note,omitempty"`
}

// Counters returns the comparable counters (name included, flags and notes left out).
func (s StatusCounts) Counters() StatusCounts {
	return StatusCounts{Name: s.Name, MatchedPods: s.MatchedPods, UpdatedPods: s.UpdatedPods, ReadyPods: s.ReadyPods, UpdatedReadyPods: s.UpdatedReadyPods}
}

// PodFact is a jq assertion on a named pod, the count of the scenario's pods for which a jq
// program equals a value (CountPods; the fact's Equals is the count), or SameUIDAsSetup.
type PodFact struct {
	Check     `json:",inline"`
	Pod       string     `json:"pod,omitempty"`
	Namespace string     `json:"namespace,omitempty"`
	CountPods *CountPods `json:"countPods,omitempty"`
	// SameUIDAsSetup: the pod was updated in place, not recreated.
	SameUIDAsSetup bool `json:"sameUidAsSetup,omitempty"`
	Internal       bool `json:"internal,omitempty"`
	Note           Text `json:"note,omitempty"`
}

// CountPods selects the scenario's pods (optionally by labels and namespace) and the check each
// counted pod passes.
type CountPods struct {
	Check     `json:",inline"`
	PodLabels map[string]string `json:"podLabels,omitempty"`
	Namespace string            `json:"namespace,omitempty"`
}

// Validate checks the fact's shape.
func (f PodFact) Validate() error {
	if f.CountPods != nil {
		if f.Pod != "" || f.SameUIDAsSetup || !f.Equals.Set || f.Path != "" {
			return fmt.Errorf("countPods: want only countPods and equals (the count)")
		}
		return f.CountPods.Check.Validate()
	}
	if f.Pod == "" {
		return fmt.Errorf("pod fact without pod or countPods")
	}
	if f.Path == "" {
		if !f.SameUIDAsSetup || f.Equals.Set || f.Absent || f.Contains.Set {
			return fmt.Errorf("pod %s: a fact without path must be sameUidAsSetup alone", f.Pod)
		}
		return nil
	}
	return f.Check.Validate()
}

// EventFact is a Kubernetes Event by involvedObject, reason, type and message substring.
type EventFact struct {
	InvolvedObject struct {
		Kind      string `json:"kind"`
		Name      string `json:"name"`
		Namespace string `json:"namespace,omitempty"`
	} `json:"involvedObject"`
	Type            string `json:"type,omitempty"`
	Reason          string `json:"reason"`
	Message         string `json:"message,omitempty"`
	MessageContains string `json:"messageContains,omitempty"`
	Internal        bool   `json:"internal,omitempty"`
	Note            Text   `json:"note,omitempty"`
}

// MessageSubstrings returns the substrings the event's message must contain.
func (e EventFact) MessageSubstrings() []string {
	var out []string
	for _, s := range []string{e.Message, e.MessageContains} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// PathFact is a jq program on the SidecarSet named Name that equals a value, is non-empty
// (NonEmpty) or has the value it had right after setup (UnchangedFromSetup).
type PathFact struct {
	Name               string `json:"name"`
	Path               string `json:"path"`
	Equals             Value  `json:"equals"`
	NonEmpty           bool   `json:"nonEmpty,omitempty"`
	UnchangedFromSetup bool   `json:"unchangedFromSetup,omitempty"`
	Internal           bool   `json:"internal,omitempty"`
	Note               Text   `json:"note,omitempty"`
}

// Validate checks that exactly one of equals, nonEmpty, unchangedFromSetup is given.
func (f PathFact) Validate() error {
	n := 0
	for _, set := range []bool{f.Equals.Set, f.NonEmpty, f.UnchangedFromSetup} {
		if set {
			n++
		}
	}
	if f.Name == "" || f.Path == "" || n != 1 {
		return fmt.Errorf("sidecarSetPaths: want name, path and exactly one of equals, nonEmpty, unchangedFromSetup")
	}
	return nil
}

// RevisionFact: the SidecarSet's recorded revisions: exactly Count, their revision numbers equal
// to the set RevisionNumbers, and LatestIs a jq path on the SidecarSet whose value is the name of
// the revision with the highest number.
type RevisionFact struct {
	SidecarSet      string  `json:"sidecarSet"`
	Count           *int    `json:"count"`
	RevisionNumbers []int64 `json:"revisionNumbers,omitempty"`
	LatestIs        string  `json:"latestIs,omitempty"`
	Internal        bool    `json:"internal,omitempty"`
	Note            Text    `json:"note,omitempty"`
}

// Revision is one recorded revision, as the runner found it.
type Revision struct {
	Name   string
	Number int64
}

// Evaluate checks the fact against the recorded revisions and the SidecarSet document.
func (f RevisionFact) Evaluate(revs []Revision, sidecarSet interface{}) error {
	if f.Count != nil && len(revs) != *f.Count {
		return fmt.Errorf("SidecarSet %s: %d revisions %v, want %d", f.SidecarSet, len(revs), revs, *f.Count)
	}
	if f.RevisionNumbers != nil {
		got := map[int64]bool{}
		for _, r := range revs {
			got[r.Number] = true
		}
		want := map[int64]bool{}
		for _, n := range f.RevisionNumbers {
			want[n] = true
		}
		if !Equal(keys(got), keys(want)) {
			return fmt.Errorf("SidecarSet %s: revision numbers %v, want %v", f.SidecarSet, keys(got), keys(want))
		}
	}
	if f.LatestIs != "" {
		if len(revs) == 0 {
			return fmt.Errorf("SidecarSet %s: no revisions, latestIs %s", f.SidecarSet, f.LatestIs)
		}
		latest := revs[0]
		for _, r := range revs[1:] {
			if r.Number > latest.Number {
				latest = r
			}
		}
		v, err := EvalOne(f.LatestIs, sidecarSet)
		if err != nil {
			return err
		}
		if v != latest.Name {
			return fmt.Errorf("SidecarSet %s: %s = %v, want the latest revision %s (number %d)", f.SidecarSet, f.LatestIs, v, latest.Name, latest.Number)
		}
	}
	return nil
}

func keys(m map[int64]bool) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// Validate checks the scenario's tokens, actions and facts.
func (s Scenario) Validate() error {
	if _, err := ParseRequirements(s.Requires); err != nil {
		return err
	}
	if err := ValidateFlags(s.Flags); err != nil {
		return err
	}
	if !s.Setup.PodTemplate.Set() && (len(s.Setup.Pods) > 0 || len(s.Setup.Deployments) > 0) {
		return fmt.Errorf("setup: pods or deployments without podTemplate")
	}
	for i, st := range s.Steps {
		if err := st.Validate(); err != nil {
			return fmt.Errorf("step %d (%s): %w", i+1, st.Name, err)
		}
	}
	return nil
}

// Validate checks one step.
func (s Step) Validate() error {
	if s.Action != nil {
		if k := s.Action.Kinds(); len(k) != 1 {
			return fmt.Errorf("action: want exactly one kind, got %v", k)
		}
		if r := s.Action.RepeatPatchSidecarSet; r != nil {
			if _, err := r.Patches(); err != nil {
				return err
			}
		}
		if l := s.Action.LabelPod; l != nil && (l.PodName() == "" || (l.Pod != "" && l.Name != "")) {
			return fmt.Errorf("labelPod: want pod (or name)")
		}
		if l := s.Action.LabelNamespace; l != nil && (l.NamespaceName() == "" || (l.Name != "" && l.Namespace != "")) {
			return fmt.Errorf("labelNamespace: want name (or namespace)")
		}
	}
	if rejected, _ := s.ExpectsRejection(); rejected && s.Action == nil {
		return fmt.Errorf("rejection expected without an action")
	}
	for _, f := range s.Expect.Eventually.Pods {
		if err := f.Validate(); err != nil {
			return err
		}
	}
	for _, f := range s.Expect.Eventually.SidecarSetPaths {
		if err := f.Validate(); err != nil {
			return err
		}
	}
	for _, f := range s.Expect.Eventually.Revisions {
		if f.SidecarSet == "" {
			return fmt.Errorf("revisions without sidecarSet")
		}
	}
	return nil
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Expand replaces every ${NAME} in s by vars[NAME]; a reference to an unknown name is an error.
func Expand(s string, vars map[string]string) (string, error) {
	var missing []string
	out := varRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := varRef.FindStringSubmatch(ref)[1]
		v, ok := vars[name]
		if !ok {
			missing = append(missing, name)
			return ref
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("undefined variables %v", missing)
	}
	return out, nil
}

// ExpandJSON expands ${NAME} inside the string values and keys of a JSON document (an unquoted
// ${i} in YAML is a string too, so values stay strings).
func ExpandJSON(doc []byte, vars map[string]string) ([]byte, error) {
	var v interface{}
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, err
	}
	out, err := expandValue(v, vars)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

func expandValue(v interface{}, vars map[string]string) (interface{}, error) {
	switch x := v.(type) {
	case string:
		return Expand(x, vars)
	case []interface{}:
		out := make([]interface{}, len(x))
		for i, e := range x {
			ev, err := expandValue(e, vars)
			if err != nil {
				return nil, err
			}
			out[i] = ev
		}
		return out, nil
	case map[string]interface{}:
		out := make(map[string]interface{}, len(x))
		for k, e := range x {
			ek, err := Expand(k, vars)
			if err != nil {
				return nil, err
			}
			ev, err := expandValue(e, vars)
			if err != nil {
				return nil, err
			}
			out[ek] = ev
		}
		return out, nil
	}
	return v, nil
}
