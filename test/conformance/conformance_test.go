package conformance

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeStrict(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		out     func() interface{}
		wantErr string
	}{
		{"meta with every field", "title: t\nsources: [a]\noperation: update\nrequires: [k8s-native-sidecars]\nflags: [undocumented]\nnotes: some notes\n", func() interface{} { return &Meta{} }, ""},
		{"meta notes as a list", "title: t\nnotes: [a, b]\n", func() interface{} { return &Meta{} }, ""},
		{"meta typo", "title: t\nrequire: [x]\n", func() interface{} { return &Meta{} }, `require"`},
		{"validation expect with alternative", "rejected: true\nmessageContains: m\nalternative:\n  rejected: false\n  when: later\n  stored:\n  - path: .a\n    equals: 1\n", func() interface{} { return &ValidationExpect{} }, ""},
		{"validation expect typo", "rejected: true\nmessageContain: m\n", func() interface{} { return &ValidationExpect{} }, `messageContain"`},
		{"injection expect", "- path: .a\n  equals: null\n  internal: true\n  note: a note\n- path: .b\n  absent: true\n- path: .c\n  contains: x\n  variant: v\n- path: .d\n  equals: 1\n  quantity: true\n", func() interface{} { return &Expectation{} }, ""},
		{"injection expect typo", "- path: .a\n  equal: 1\n", func() interface{} { return &Expectation{} }, `equal"`},
		{"procedure", "steps:\n- apply: each document\n  waitFor: settled\n  capture: {REV: .status.latestRevision}\n- apply: 2\n  substitute: [REV]\n- createPod: pod.yaml\n  note: a note\n", func() interface{} { return &Procedure{} }, ""},
		{"procedure typo", "steps:\n- aply: x\n", func() interface{} { return &Procedure{} }, `aply"`},
		{"procedure capture typo", "steps:\n- apply: x\n  capture: {var: A, pth: .a}\n", func() interface{} { return &Procedure{} }, "pth"},
		{"scenario with every step kind", scenarioYAML, func() interface{} { return &Scenario{} }, ""},
		{"scenario typo in a fact", "title: t\nsetup: {}\nsteps:\n- name: s\n  expect:\n    eventually:\n      pods:\n      - pod: p\n        sameUidAsSetUp: true\n", func() interface{} { return &Scenario{} }, `sameUidAsSetUp"`},
		{"scenario typo in labelPod", "title: t\nsetup: {}\nsteps:\n- name: s\n  action:\n    labelPod: {pod: p, lables: {a: b}}\n  expect: {}\n", func() interface{} { return &Scenario{} }, `lables"`},
		{"scenario typo in one sidecarSetStatus", "title: t\nsetup: {}\nsteps:\n- name: s\n  expect:\n    eventually:\n      sidecarSetStatus: {name: a, matchedPod: 1}\n", func() interface{} { return &Scenario{} }, `matchedPod"`},
		{"scenario typo in setup.namespace", "title: t\nsetup:\n  namespace: {name: a, label: {x: y}}\nsteps: []\n", func() interface{} { return &Scenario{} }, "namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := DecodeStrict([]byte(tt.yaml), tt.out())
			if tt.wantErr == "" && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

const scenarioYAML = `
title: every documented field
sources: [s]
requires: [patch-pod-metadata-allowed]
flags: [version-dependent]
notes: some notes
setup:
  namespace:
  - r-ns-a
  - {name: r-ns-b, labels: {env: prod}}
  - {apiVersion: v1, kind: Namespace, metadata: {name: r-ns-c, labels: {env: dev}}}
  sidecarSets:
  - {apiVersion: apps.kruise.io/v1alpha1, kind: SidecarSet, metadata: {name: ss}}
  podsBeforeSidecarSets: true
  podTemplate: {metadata: {labels: {app: r}}, spec: {containers: [{name: app, image: busybox}]}}
  pods:
  - {name: p0, createOrder: 0, labels: {k: v}, ready: false}
  deployments:
  - {name: d, replicas: 2, podLabels: {version: stable}}
steps:
- name: patch
  action: {patchSidecarSet: {name: ss, mergePatch: {spec: {containers: null}}}}
  expect:
    eventually:
      sidecarSetStatus: {name: ss, matchedPods: 1, updatedPods: 1, readyPods: 1, updatedReadyPods: 1}
      pods:
      - {pod: p0, path: .metadata.name, equals: p0, internal: true}
      - {pod: p0, sameUidAsSetup: true}
      - {countPods: {podLabels: {k: v}, namespace: r-ns-a, path: .a, equals: 1}, equals: 0}
      events:
      - {involvedObject: {kind: SidecarSet, name: ss}, type: Normal, reason: R, message: m}
      sidecarSetPaths:
      - {name: ss, path: .a, equals: 1}
      - {name: ss, path: .b, nonEmpty: true}
      - {name: ss, path: .c, unchangedFromSetup: true, internal: true}
      revisions: {sidecarSet: ss, count: 2, revisionNumbers: [1, 2], latestIs: .status.latestRevision, internal: true}
      observedGenerationCurrent: true
    stableForSeconds: 5
    invariantsWhileRunning: [a]
    orderingInvariants: [b]
    observedSequenceContains:
    - {name: ss, matchedPods: 1, updatedPods: 0, readyPods: 1, updatedReadyPods: 0}
    notes: step notes
- name: replace
  action: {replaceSidecarSet: {apiVersion: apps.kruise.io/v1alpha1, kind: SidecarSet, metadata: {name: ss}}}
  expect: {}
- name: repeat
  action: {repeatPatchSidecarSet: {name: ss, from: 1, to: 3, mergePatch: {metadata: {annotations: {round: "${i}"}}}}}
  expect: {}
- name: create
  action: {createPods: [{name: p1, createOrder: 1}]}
  expect: {}
- name: label pod
  action: {labelPod: {pod: p0, labels: {k: w, gone: null}}}
  expect: {}
- name: label namespace
  action: {labelNamespace: {name: r-ns-b, labels: {env: staging}, thenDeletePods: true}}
  expect: {}
- name: scale
  action: {scaleDeployments: {d: 3}}
  expect: {}
- name: rejected patch
  action: {patchSidecarSet: {name: ss, mergePatch: {spec: {selector: null}}}}
  messageContains: selector
  expect: {}
`

// TestThenDeletePodsForms: thenDeletePods inside labelNamespace (true) or beside it (a namespace),
// as the scenario format allows both.
func TestThenDeletePodsForms(t *testing.T) {
	for _, tc := range []struct {
		action string
		ns     string
		ok     bool
	}{
		{`{labelNamespace: {name: a, labels: {env: x}, thenDeletePods: true}}`, "a", true},
		{`{labelNamespace: {name: a, labels: {env: x}}, thenDeletePods: {namespace: b}}`, "b", true},
		{`{labelNamespace: {name: a, labels: {env: x}}}`, "", false},
		{`{labelNamespace: {namespace: a, labels: {env: x}, thenDeletePods: false}}`, "", false},
	} {
		var a Action
		if err := DecodeStrict([]byte(tc.action), &a); err != nil {
			t.Fatalf("%s: %v", tc.action, err)
		}
		if ns, ok := a.PodsToDelete(); ns != tc.ns || ok != tc.ok {
			t.Errorf("%s: pods to delete in %q (%v), want %q (%v)", tc.action, ns, ok, tc.ns, tc.ok)
		}
	}
}

func TestScenarioFields(t *testing.T) {
	var sc Scenario
	if err := DecodeStrict([]byte(scenarioYAML), &sc); err != nil {
		t.Fatal(err)
	}
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	wantNS := []NamespaceSpec{{Name: "r-ns-a"}, {Name: "r-ns-b", Labels: map[string]string{"env": "prod"}}, {Name: "r-ns-c", Labels: map[string]string{"env": "dev"}}}
	if diff := cmp.Diff(wantNS, []NamespaceSpec(sc.Setup.Namespace)); diff != "" {
		t.Errorf("setup.namespace (-want +got):\n%s", diff)
	}
	if p := sc.Setup.Pods[0]; p.IsReady() {
		t.Errorf("pod %s: ready false decoded as ready", p.Name)
	}
	facts := sc.Steps[0].Expect.Eventually
	if len(facts.SidecarSetStatus) != 1 || len(facts.Revisions) != 1 || *facts.Revisions[0].Count != 2 {
		t.Errorf("one sidecarSetStatus and one revisions fact, got %+v %+v", facts.SidecarSetStatus, facts.Revisions)
	}
	if c := facts.Pods[2].CountPods; c == nil || c.Namespace != "r-ns-a" || !Equal(facts.Pods[2].Equals.V, 0) {
		t.Errorf("countPods: %+v", facts.Pods[2])
	}
	lp := sc.Steps[4].Action.LabelPod
	if lp.PodName() != "p0" || lp.Labels["gone"] != nil || *lp.Labels["k"] != "w" {
		t.Errorf("labelPod: %+v", lp)
	}
	patch, err := LabelPatch(lp.Labels)
	if err != nil || string(patch) != `{"metadata":{"labels":{"gone":null,"k":"w"}}}` {
		t.Errorf("label patch %s, %v", patch, err)
	}
	if ln := sc.Steps[5].Action.LabelNamespace; ln.NamespaceName() != "r-ns-b" || !ln.ThenDeletePods {
		t.Errorf("labelNamespace: %+v", ln)
	}
	if ns, ok := sc.Steps[5].Action.PodsToDelete(); ns != "r-ns-b" || !ok {
		t.Errorf("pods to delete after labelNamespace: %q, %v", ns, ok)
	}
	if rejected, msg := sc.Steps[7].ExpectsRejection(); !rejected || msg != "selector" {
		t.Errorf("step messageContains: rejected %v, %q", rejected, msg)
	}
	if rejected, _ := sc.Steps[0].ExpectsRejection(); rejected {
		t.Errorf("a plain step expects a rejection")
	}
}

func TestScenarioValidate(t *testing.T) {
	tests := []struct {
		name, steps, wantErr string
	}{
		{"two action kinds", "- name: s\n  action: {createPods: [{name: p}], scaleDeployments: {d: 1}}\n  expect: {}\n", "exactly one kind"},
		{"labelPod without pod", "- name: s\n  action: {labelPod: {labels: {a: b}}}\n  expect: {}\n", "labelPod"},
		{"repeat without ${i}", "- name: s\n  action: {repeatPatchSidecarSet: {name: ss, from: 1, to: 2, mergePatch: {a: b}}}\n  expect: {}\n", "${i}"},
		{"repeat backwards", "- name: s\n  action: {repeatPatchSidecarSet: {name: ss, from: 3, to: 2, mergePatch: {a: '${i}'}}}\n  expect: {}\n", "to 2 < from 3"},
		{"rejection without action", "- name: s\n  messageContains: x\n  expect: {}\n", "without an action"},
		{"path fact with two kinds", "- name: s\n  expect: {eventually: {sidecarSetPaths: [{name: a, path: .a, equals: 1, nonEmpty: true}]}}\n", "exactly one of"},
		{"pod fact with nothing", "- name: s\n  expect: {eventually: {pods: [{pod: p}]}}\n", "sameUidAsSetup alone"},
		{"countPods without count", "- name: s\n  expect: {eventually: {pods: [{countPods: {path: .a, equals: 1}}]}}\n", "countPods"},
		{"bad jq", "- name: s\n  expect: {eventually: {pods: [{pod: p, path: '.a[', equals: 1}]}}\n", ".a["},
		{"fine", "- name: s\n  action: {labelNamespace: {namespace: ns-x, labels: {a: null}}}\n  expect: {eventually: {pods: [{pod: p, path: .a, absent: true}]}}\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sc Scenario
			if err := DecodeStrict([]byte("title: t\nsetup: {}\nsteps:\n"+tt.steps), &sc); err != nil {
				t.Fatal(err)
			}
			err := sc.Validate()
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestRepeatPatches(t *testing.T) {
	var r RepeatPatch
	if err := DecodeStrict([]byte("name: ss\nfrom: 2\nto: 4\nmergePatch:\n  metadata:\n    annotations:\n      round-${i}: v${i}\n"), &r); err != nil {
		t.Fatal(err)
	}
	patches, err := r.Patches()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range patches {
		got = append(got, string(p))
	}
	want := []string{
		`{"metadata":{"annotations":{"round-2":"v2"}}}`,
		`{"metadata":{"annotations":{"round-3":"v3"}}}`,
		`{"metadata":{"annotations":{"round-4":"v4"}}}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("patches (-want +got):\n%s", diff)
	}
}

func TestExpand(t *testing.T) {
	tests := []struct {
		in, want, wantErr string
	}{
		{"revisionName: ${REV}", "revisionName: r-1", ""},
		{"a: ${REV}-${i}", "a: r-1-7", ""},
		{"no refs $REV {REV}", "no refs $REV {REV}", ""},
		{"a: ${MISSING}", "", "MISSING"},
	}
	for _, tt := range tests {
		got, err := Expand(tt.in, map[string]string{"REV": "r-1", "i": "7"})
		if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("Expand(%q): error %v, want %q", tt.in, err, tt.wantErr)
		}
		if got != tt.want {
			t.Errorf("Expand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCheckEvaluate(t *testing.T) {
	doc := Normalize(map[string]interface{}{
		"names": []string{"app", "sidecar"},
		"n":     3,
		"cpu":   "100m",
		"obj":   map[string]interface{}{"a": 1, "b": []int{1, 2}},
		"null":  nil,
	})
	tests := []struct {
		name  string
		check Check
		ok    bool
	}{
		{"equals list", Check{Path: ".names", Equals: V([]string{"app", "sidecar"})}, true},
		{"equals list order matters", Check{Path: ".names", Equals: V([]string{"sidecar", "app"})}, false},
		{"numbers numerically", Check{Path: ".n", Equals: V(3.0)}, true},
		{"equals null needs one output", Check{Path: ".null", Equals: V(nil)}, true},
		{"equals null vs missing output", Check{Path: ".names[] | select(. == \"x\")", Equals: V(nil)}, false},
		{"two outputs fail equals", Check{Path: ".names[]", Equals: V("app")}, false},
		{"absent missing", Check{Path: ".nope", Absent: true}, true},
		{"absent no output", Check{Path: ".names[] | select(. == \"x\")", Absent: true}, true},
		{"absent present", Check{Path: ".n", Absent: true}, false},
		{"contains element", Check{Path: ".names", Contains: V("sidecar")}, true},
		{"contains not element", Check{Path: ".names", Contains: V("other")}, false},
		{"contains sub-object", Check{Path: ".obj", Contains: V(map[string]interface{}{"b": []int{2}})}, true},
		{"contains substring", Check{Path: ".cpu", Contains: V("00")}, true},
		{"quantity equal", Check{Path: ".cpu", Equals: V("0.1"), Quantity: true}, true},
		{"quantity differs", Check{Path: ".cpu", Equals: V("0.2"), Quantity: true}, false},
		{"string vs quantity without flag", Check{Path: ".cpu", Equals: V("0.1")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.check.Evaluate(doc); (err == nil) != tt.ok {
				t.Errorf("Evaluate: %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestValueNull(t *testing.T) {
	var a []Assertion
	if err := DecodeStrict([]byte("- path: .a\n  equals: null\n- path: .b\n  absent: true\n"), &a); err != nil {
		t.Fatal(err)
	}
	if !a[0].Equals.Set || a[0].Equals.V != nil {
		t.Errorf("equals: null decoded as %+v", a[0].Equals)
	}
	if a[1].Equals.Set {
		t.Errorf("missing equals decoded as set")
	}
}

func TestExpectationVariants(t *testing.T) {
	doc := Normalize(map[string]interface{}{"order": []string{"b", "a"}})
	exp := Expectation{
		{Check: Check{Path: ".order | length", Equals: V(2)}},
		{Check: Check{Path: ".order", Equals: V([]string{"b", "a"})}, Variant: "spec-order"},
		{Check: Check{Path: ".order", Equals: V([]string{"a", "b"})}, Variant: "sorted-by-name"},
	}
	if r := exp.Evaluate(doc, false); r.Err() != nil || r.Variant != "spec-order" {
		t.Errorf("got %+v, want variant spec-order passing", r)
	}
	both := append(Expectation{}, exp...)
	both[2].Check.Equals = V([]string{"b", "a"})
	if r := both.Evaluate(doc, false); r.VariantErr == nil {
		t.Errorf("two passing variants accepted")
	}
	none := append(Expectation{}, exp...)
	none[1].Check.Equals = V([]string{"x"})
	none[2].Check.Equals = V([]string{"y"})
	if r := none.Evaluate(doc, false); r.VariantErr == nil {
		t.Errorf("no passing variant accepted")
	}
	internal := Expectation{{Check: Check{Path: ".x", Equals: V(1)}, Internal: true}}
	if internal.Evaluate(doc, true).Err() != nil || internal.Evaluate(doc, false).Err() == nil {
		t.Errorf("internal assertions: skipped only when asked")
	}
	rej := Expectation{{Rejected: true, MessageContains: "m"}}
	if a, ok := rej.Rejection(); !ok || a.MessageContains != "m" || rej.Validate() != nil {
		t.Errorf("rejection item not recognised")
	}
	mixed := Expectation{{Rejected: true}, {Check: Check{Path: ".a", Equals: V(1)}}}
	if mixed.Validate() == nil {
		t.Errorf("a rejection among other items accepted")
	}
	if (Expectation{{Check: Check{Path: ".a", Equals: V(1), Absent: true}}}).Validate() == nil {
		t.Errorf("equals together with absent accepted")
	}
}

func TestValidationMatch(t *testing.T) {
	rejectedOrAccepted := ValidationExpect{Outcome: Outcome{Rejected: true, MessageContains: "exclusive"},
		Alternative: &Outcome{Rejected: false, When: "v1.9"}}
	storedOrNot := ValidationExpect{Outcome: Outcome{Stored: Expectation{{Check: Check{Path: ".a", Equals: V(1)}}}},
		Alternative: &Outcome{Stored: Expectation{{Check: Check{Path: ".a", Absent: true}}}}}
	tests := []struct {
		name     string
		expect   ValidationExpect
		err      error
		want     []bool // Alternative of each candidate, in order
		mismatch bool
	}{
		{"rejected as expected", rejectedOrAccepted, errors.New("are mutually exclusive"), []bool{false}, false},
		{"alternative accepted", rejectedOrAccepted, nil, []bool{true}, false},
		{"wrong message, no alternative for rejections", rejectedOrAccepted, errors.New("other"), nil, true},
		{"accepted as expected", ValidationExpect{}, nil, []bool{false}, false},
		{"rejected but accepted expected", ValidationExpect{}, errors.New("x"), nil, true},
		{"rejection without message", ValidationExpect{Outcome: Outcome{Rejected: true}}, errors.New("any"), []bool{false}, false},
		{"both accepted: main first", storedOrNot, nil, []bool{false, true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cands, mismatch := tt.expect.Match(tt.err)
			var got []bool
			for _, c := range cands {
				got = append(got, c.Alternative)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" || (mismatch != nil) != tt.mismatch {
				t.Errorf("candidates (-want +got):\n%s\nmismatch %v, want %v", diff, mismatch, tt.mismatch)
			}
		})
	}
	if (ValidationExpect{Outcome: Outcome{Rejected: true, Stored: Expectation{{Check: Check{Path: ".a", Equals: V(1)}}}}}).Validate() == nil {
		t.Errorf("stored on a rejected outcome accepted")
	}
}

func TestParseRequirements(t *testing.T) {
	tests := []struct {
		tokens  []string
		want    Requirements
		wantErr bool
	}{
		{nil, Requirements{}, false},
		{[]string{"patch-pod-metadata-allowed"}, Requirements{Whitelist: true}, false},
		{[]string{"patch-pod-metadata-whitelist-configmap", "k8s-native-sidecars"}, Requirements{Whitelist: true, NativeSidecars: true}, false},
		{[]string{"patch-pod-metadata-not-configured"}, Requirements{}, false},
		{[]string{"patch-pod-metadata-not-configured", "patch-pod-metadata-allowed"}, Requirements{}, true},
		{[]string{"native-sidecars"}, Requirements{}, true},
	}
	for _, tt := range tests {
		got, err := ParseRequirements(tt.tokens)
		if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
			t.Errorf("ParseRequirements(%v) = %+v, %v; want %+v, error %v", tt.tokens, got, err, tt.want, tt.wantErr)
		}
	}
	if ValidateFlags([]string{"schema-validation", "undocumented", "version-dependent"}) != nil || ValidateFlags([]string{"schema"}) == nil {
		t.Errorf("flags: documented ones accepted, others rejected")
	}
	if (Meta{Operation: "patch"}).Validate() == nil {
		t.Errorf("unknown operation accepted")
	}
}

func TestNamespaceFromNotes(t *testing.T) {
	tests := []struct {
		notes      Text
		candidates []string
		want       string
	}{
		{"", nil, "sidecarset-acc"},
		{"the pod is created in namespace `inj-44-prod`", []string{"inj-44-prod", "sidecarset-acc"}, "inj-44-prod"},
		{"submit it in namespace inj-46-x.", nil, "inj-46-x"},
		{"uses namespaceSelector only", nil, "sidecarset-acc"},
		{"Namespace: other-ns", nil, "other-ns"},
		{"mentions inj-48-ns somewhere", []string{"inj-48-ns"}, "inj-48-ns"},
	}
	for _, tt := range tests {
		if got := NamespaceFromNotes(tt.notes, tt.candidates, "sidecarset-acc"); got != tt.want {
			t.Errorf("NamespaceFromNotes(%q) = %q, want %q", tt.notes, got, tt.want)
		}
	}
}

func TestProcedurePlan(t *testing.T) {
	tests := []struct {
		name, yaml string
		docs       int
		want       [][]int
		wantErr    bool
	}{
		{"published form", "steps:\n- apply: each document of sidecarsets.yaml in order\n  waitFor: x\n- createPod: pod.yaml\n", 3, [][]int{{0, 1, 2}, nil}, false},
		{"one by one", "steps:\n- apply: first version\n- apply: second version\n", 2, [][]int{{0}, {1}}, false},
		{"words containing all are not all", "steps:\n- apply: install the first version\n- apply: apply all remaining versions\n", 3, [][]int{{0}, {1, 2}}, false},
		{"numbered", "steps:\n- apply: document 2\n- apply: '#1'\n- apply: 3\n", 3, [][]int{{1}, {0}, {2}}, false},
		{"past the end", "steps:\n- apply: a\n- apply: b\n", 1, nil, true},
		{"number out of range", "steps:\n- apply: document 4\n", 3, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Procedure
			if err := DecodeStrict([]byte(tt.yaml), &p); err != nil {
				t.Fatal(err)
			}
			plan, err := p.Plan(tt.docs)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Plan: %v, want error %v", err, tt.wantErr)
			}
			var got [][]int
			for _, st := range plan {
				got = append(got, st.Documents)
			}
			if diff := cmp.Diff(tt.want, got); !tt.wantErr && diff != "" {
				t.Errorf("documents (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCapturesAndSubstitution(t *testing.T) {
	tests := []struct {
		yaml string
		want Captures
	}{
		{"capture: {REV: .status.latestRevision}", Captures{{Var: "REV", Path: ".status.latestRevision"}}},
		{"capture: {var: REV, path: .a}", Captures{{Var: "REV", Path: ".a"}}},
		{"capture: {name: REV, path: .a}", Captures{{Var: "REV", Path: ".a"}}},
		{"capture: [{var: A, path: .a}, {var: B, path: .b}]", Captures{{Var: "A", Path: ".a"}, {Var: "B", Path: ".b"}}},
	}
	for _, tt := range tests {
		var st ProcedureStep
		if err := DecodeStrict([]byte(tt.yaml), &st); err != nil {
			t.Fatalf("%s: %v", tt.yaml, err)
		}
		if diff := cmp.Diff(tt.want, st.Capture); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.yaml, diff)
		}
	}
	subs := []struct {
		yaml string
		want Substitution
	}{
		{"substitute: true", Substitution{All: true}},
		{"substitute: REV", Substitution{Names: []string{"REV"}}},
		{"substitute: ['${REV}', B]", Substitution{Names: []string{"REV", "B"}}},
		{"substitute: {REV: r-1}", Substitution{Values: map[string]string{"REV": "r-1"}}},
	}
	for _, tt := range subs {
		var st ProcedureStep
		if err := DecodeStrict([]byte(tt.yaml), &st); err != nil {
			t.Fatalf("%s: %v", tt.yaml, err)
		}
		if diff := cmp.Diff(tt.want, st.Substitute); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.yaml, diff)
		}
	}
}

func TestRevisionFact(t *testing.T) {
	two := 2
	ss := Normalize(map[string]interface{}{"status": map[string]interface{}{"latestRevision": "ss-b"}})
	revs := []Revision{{Name: "ss-a", Number: 1}, {Name: "ss-b", Number: 2}}
	tests := []struct {
		name string
		fact RevisionFact
		revs []Revision
		ok   bool
	}{
		{"all hold", RevisionFact{SidecarSet: "ss", Count: &two, RevisionNumbers: []int64{2, 1}, LatestIs: ".status.latestRevision"}, revs, true},
		{"count differs", RevisionFact{SidecarSet: "ss", Count: &two}, revs[:1], false},
		{"numbers differ", RevisionFact{SidecarSet: "ss", RevisionNumbers: []int64{1, 3}}, revs, false},
		{"latest is not the highest", RevisionFact{SidecarSet: "ss", LatestIs: ".status.latestRevision"}, []Revision{{Name: "ss-b", Number: 1}, {Name: "ss-a", Number: 2}}, false},
		{"no revisions", RevisionFact{SidecarSet: "ss", LatestIs: ".status.latestRevision"}, nil, false},
	}
	for _, tt := range tests {
		if err := tt.fact.Evaluate(tt.revs, ss); (err == nil) != tt.ok {
			t.Errorf("%s: %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

func TestSplitDocumentsAndNamespaces(t *testing.T) {
	data := []byte("---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\n# comment only\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: b\n  labels: {env: prod}\n")
	if n := len(SplitDocuments(data)); n != 2 {
		t.Fatalf("%d documents, want 2", n)
	}
	nss, err := Namespaces(data)
	if err != nil || len(nss) != 2 || nss[1].Labels["env"] != "prod" {
		t.Fatalf("namespaces %+v, %v", nss, err)
	}
	if _, err := Namespaces([]byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n  lables: {}\n")); err == nil {
		t.Errorf("a typo in namespace.yaml accepted")
	}
}

func TestNonEmpty(t *testing.T) {
	for _, v := range []interface{}{nil, "", []interface{}{}, map[string]interface{}{}} {
		if NonEmpty(v) {
			t.Errorf("NonEmpty(%v) = true", v)
		}
	}
	for _, v := range []interface{}{"x", 0, false, []int{1}, map[string]int{"a": 1}} {
		if !NonEmpty(v) {
			t.Errorf("NonEmpty(%v) = false", v)
		}
	}
}

func TestClassifyInvariants(t *testing.T) {
	tests := []struct {
		text string
		want Invariant
	}{
		{"readyPods <= matchedPods and updatedReadyPods <= min(updatedPods, readyPods)", InvariantCountersConsistent},
		{"updatedPods - updatedReadyPods <= 1 (maxUnavailable) whenever observedGeneration == generation", InvariantMaxUnavailable},
		{"a pod whose sidecar spec image changed but whose status still reports the old image is not counted in readyPods", InvariantReadyExcludesStale},
		{"sidecar-2 reports image nginx:1.26 (running, ready) before sidecar-1's spec image is set to the empty image", InvariantHotUpgradeOrder},
		{"at no moment do both sidecar-1 and sidecar-2 have the empty image in the pod spec", InvariantHotUpgradeOrder},
		{"the moon is made of cheese", InvariantUnknown},
	}
	for _, tt := range tests {
		if got := Classify(tt.text); got != tt.want {
			t.Errorf("Classify(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}
