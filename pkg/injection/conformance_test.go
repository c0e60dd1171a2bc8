package injection

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/itchyny/gojq"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestConformance runs every injection scenario of the acceptance catalogue (copied into
// testdata/conformance) through Index and Inject and evaluates its expect.yaml jq assertions,
// internal ones included, on the returned pod. It also checks that the patch turns the submitted
// pod into the returned one and that injecting again changes nothing.
func TestConformance(t *testing.T) {
	for _, sc := range loadScenarios(t) {
		t.Run(sc.name, func(t *testing.T) {
			res, err := Inject(sc.input(Options{}))
			if rejected, msg := sc.rejected(); rejected {
				var ierr *Error
				if !errors.As(err, &ierr) {
					t.Fatalf("Inject() error = %v, want an *Error", err)
				}
				if !strings.Contains(err.Error(), msg) {
					t.Errorf("Inject() error = %q, want it to contain %q", err, msg)
				}
				t.Logf("rejected: %v", err)
				return
			}
			if err != nil {
				t.Fatalf("Inject() error = %v", err)
			}
			podJSON := toJSONValue(t, res.Pod)
			if sc.hasVariants() {
				if got := passingVariants(t, sc.expect, podJSON); !reflect.DeepEqual(got, []string{"spec-order"}) {
					t.Errorf("passing variants = %v, want exactly [spec-order]", got)
				}
			}
			for _, a := range sc.expect {
				if _, ok := a["variant"]; ok {
					continue
				}
				if err := checkAssertion(a, podJSON); err != nil {
					t.Error(err)
				}
			}
			checkPatch(t, sc.pod, res)
			checkIdempotent(t, sc.input(Options{}), res.Pod)
		})
	}
}

// TestConformanceSortedByName checks the other variant of scenario 09 under
// SortSidecarContainersByName (OpenKruise's EnableSortSidecarContainerByName gate).
func TestConformanceSortedByName(t *testing.T) {
	sc := loadScenario(t, "testdata/conformance/09-order-within-inject-group")
	res, err := Inject(sc.input(Options{SortSidecarContainersByName: true}))
	if err != nil {
		t.Fatal(err)
	}
	if got := passingVariants(t, sc.expect, toJSONValue(t, res.Pod)); !reflect.DeepEqual(got, []string{"sorted-by-name"}) {
		t.Errorf("passing variants = %v, want exactly [sorted-by-name]", got)
	}
}

// passingVariants returns the variants whose assertions all hold.
func passingVariants(t *testing.T, expect []map[string]any, pod any) []string {
	t.Helper()
	failed := map[string]bool{}
	var order []string
	for _, a := range expect {
		v, ok := a["variant"].(string)
		if !ok {
			continue
		}
		if _, seen := failed[v]; !seen {
			order = append(order, v)
			failed[v] = false
		}
		if err := checkAssertion(a, pod); err != nil {
			failed[v] = true
		}
	}
	var out []string
	for _, v := range order {
		if !failed[v] {
			out = append(out, v)
		}
	}
	return out
}

// checkAssertion evaluates one expect.yaml item (path with equals, absent or contains; quantity).
func checkAssertion(a map[string]any, doc any) error {
	path, _ := a["path"].(string)
	q, err := gojq.Parse(path)
	if err != nil {
		return fmt.Errorf("%s: parse: %v", path, err)
	}
	var outs []any
	iter := q.Run(doc)
	for {
		v, ok := iter.Next()
		if !ok {
			break
		}
		if err, ok := v.(error); ok {
			return fmt.Errorf("%s: %v", path, err)
		}
		outs = append(outs, normalizeJSON(v))
	}
	if absent, _ := a["absent"].(bool); absent {
		for _, o := range outs {
			if o != nil {
				return fmt.Errorf("%s: got %v, want absent", path, outs)
			}
		}
		return nil
	}
	if want, ok := a["contains"]; ok {
		if len(outs) != 1 {
			return fmt.Errorf("%s: got %d outputs, want 1", path, len(outs))
		}
		if !jqContains(outs[0], normalizeJSON(want)) {
			return fmt.Errorf("%s: %v does not contain %v", path, outs[0], want)
		}
		return nil
	}
	want, ok := a["equals"]
	if !ok {
		return fmt.Errorf("%s: unsupported assertion %v", path, a)
	}
	if len(outs) != 1 {
		return fmt.Errorf("%s: got %d outputs %v, want exactly one", path, len(outs), outs)
	}
	if q, _ := a["quantity"].(bool); q {
		return compareQuantity(path, outs[0], want)
	}
	if diff := cmp.Diff(normalizeJSON(want), outs[0]); diff != "" {
		return fmt.Errorf("%s (-want +got):\n%s", path, diff)
	}
	return nil
}

func compareQuantity(path string, got, want any) error {
	gs, ok1 := got.(string)
	ws, ok2 := want.(string)
	if !ok1 || !ok2 {
		return fmt.Errorf("%s: got %v, want quantity %v", path, got, want)
	}
	g, err := resource.ParseQuantity(gs)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	w, err := resource.ParseQuantity(ws)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	if g.Cmp(w) != 0 {
		return fmt.Errorf("%s: got quantity %s, want %s", path, gs, ws)
	}
	return nil
}

// jqContains is jq's contains, except that a non-array value tested against an array means
// "is an element of" (the catalogue's rule).
func jqContains(got, want any) bool {
	if arr, ok := got.([]any); ok {
		if _, wantArr := want.([]any); !wantArr {
			for _, e := range arr {
				if reflect.DeepEqual(e, want) {
					return true
				}
			}
			return false
		}
	}
	return containsValue(got, want)
}

func containsValue(a, b any) bool {
	switch bv := b.(type) {
	case map[string]any:
		av, ok := a.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range bv {
			if !containsValue(av[k], v) {
				return false
			}
		}
		return true
	case []any:
		av, ok := a.([]any)
		if !ok {
			return false
		}
		for _, w := range bv {
			found := false
			for _, x := range av {
				if containsValue(x, w) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	case string:
		as, ok := a.(string)
		return ok && strings.Contains(as, bv)
	default:
		return reflect.DeepEqual(a, b)
	}
}

// normalizeJSON round-trips a value through encoding/json so that numbers compare as float64.
func normalizeJSON(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return v
	}
	return out
}

func toJSONValue(t testing.TB, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkPatch applies the JSON patch to the submitted pod and compares with the returned pod.
func checkPatch(t *testing.T, submitted *corev1.Pod, res Result) {
	t.Helper()
	orig, err := json.Marshal(submitted)
	if err != nil {
		t.Fatal(err)
	}
	patchJSON, err := json.Marshal(res.Patch)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(patchJSON)
	if err != nil {
		t.Fatalf("decode patch %s: %v", patchJSON, err)
	}
	patched, err := patch.Apply(orig)
	if err != nil {
		t.Fatalf("apply patch %s: %v", patchJSON, err)
	}
	got := &corev1.Pod{}
	if err := json.Unmarshal(patched, got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(toJSONValue(t, res.Pod), toJSONValue(t, got)); diff != "" {
		t.Errorf("patched pod differs from Result.Pod (-want +got):\n%s", diff)
	}
	for _, op := range res.Patch {
		if !strings.HasPrefix(op.Path, "/spec/") && !strings.HasPrefix(op.Path, "/metadata/annotations") {
			t.Errorf("patch touches %s", op.Path)
		}
	}
}

// checkIdempotent re-runs the injection on the injected pod, decoded from its JSON as the API
// server would send it on reinvocation, and expects no change.
func checkIdempotent(t *testing.T, in Input, injected *corev1.Pod) {
	t.Helper()
	data, err := json.Marshal(injected)
	if err != nil {
		t.Fatal(err)
	}
	again := &corev1.Pod{}
	if err := json.Unmarshal(data, again); err != nil {
		t.Fatal(err)
	}
	in.Pod = again
	in.Now = in.Now.Add(90 * 1e9)
	in.Rand = func() float64 { return 0.999 }
	res, err := Inject(in)
	if err != nil {
		t.Fatalf("reinvocation: %v", err)
	}
	if len(res.Patch) != 0 {
		data, _ := json.Marshal(res.Patch)
		t.Errorf("reinvocation patch = %s, want none", data)
	}
}

// TestCheckAssertion guards the harness itself: wrong expectations must fail.
func TestCheckAssertion(t *testing.T) {
	doc := toJSONValue(t, mustPod(t, `
metadata: {name: p}
spec:
  containers:
  - {name: a, image: a:1, resources: {limits: {cpu: 100m}}, volumeMounts: [{name: v, mountPath: /v}]}`))
	tests := []struct {
		a    map[string]any
		pass bool
	}{
		{map[string]any{"path": ".spec.containers | map(.name)", "equals": []any{"a"}}, true},
		{map[string]any{"path": ".spec.containers | map(.name)", "equals": []any{"b"}}, false},
		{map[string]any{"path": ".spec.containers[] | .name", "equals": "a"}, true},
		{map[string]any{"path": "(.spec.containers, .spec.containers) | length", "equals": 1.0}, false},
		{map[string]any{"path": ".spec.containers[0].resources.limits.cpu", "equals": "0.1", "quantity": true}, true},
		{map[string]any{"path": ".spec.containers[0].resources.limits.cpu", "equals": "0.2", "quantity": true}, false},
		{map[string]any{"path": ".spec.containers[0].resources.limits.memory", "absent": true}, true},
		{map[string]any{"path": ".spec.containers[0].image", "absent": true}, false},
		{map[string]any{"path": "[.spec.containers[0].volumeMounts[] | {name, mountPath}]", "contains": map[string]any{"name": "v", "mountPath": "/v"}}, true},
		{map[string]any{"path": "[.spec.containers[0].volumeMounts[] | {name, mountPath}]", "contains": map[string]any{"name": "w", "mountPath": "/v"}}, false},
		{map[string]any{"path": ".spec.containers[0].length("}, false},
	}
	for _, tc := range tests {
		if err := checkAssertion(tc.a, doc); (err == nil) != tc.pass {
			t.Errorf("checkAssertion(%v) = %v, want pass=%v", tc.a, err, tc.pass)
		}
	}
}
