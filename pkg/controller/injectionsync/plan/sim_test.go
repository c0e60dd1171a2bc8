package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/google/cel-go/cel"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sidecarset/apiserver/pkg/admission/policy"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// This file simulates the sync over many passes against a kube-apiserver that loads each write
// of a policy, binding or webhook configuration some time after it (less than the grace period),
// running either the old or the new version meanwhile, and drops a deleted one at once (the
// worst case for a gap), and checks the package's invariants at every step.

// loadDelay is how long the simulated kube-apiserver takes to load a write.
const loadDelay = 7 * time.Second

// version is one write of an object: nil when deleted.
type version struct {
	obj metav1.Object
	at  time.Time
}

// history is every write of each object, by key, oldest first.
type history map[string][]version

// serves reports whether kube-apiserver runs the object of key, at t, in a way pred accepts,
// whichever of its versions it runs: a write not loaded yet may run the previous version, or the
// new one.
func (h history) serves(key string, t time.Time, pred func(metav1.Object) bool) bool {
	vs := h[key]
	i := len(vs) - 1
	for i >= 0 && vs[i].at.After(t) {
		i--
	}
	if i < 0 || vs[i].obj == nil || !pred(vs[i].obj) {
		return false
	}
	if t.Before(vs[i].at.Add(loadDelay)) { // not loaded yet: the previous version may still run
		return i > 0 && vs[i-1].obj != nil && pred(vs[i-1].obj)
	}
	return true
}

// servedByPolicy reports whether some policy, with its binding, injects the SidecarSet name at t.
func (h history) servedByPolicy(name string, t time.Time) bool {
	for key := range h {
		pname, ok := strings.CutPrefix(key, string(Policy)+"/")
		if !ok {
			continue
		}
		if h.serves(key, t, func(o metav1.Object) bool {
			return policy.Members(o.(*admissionregistrationv1.MutatingAdmissionPolicy))[name]
		}) &&
			h.serves(BindingKey(pname), t, func(o metav1.Object) bool {
				return o.(*admissionregistrationv1.MutatingAdmissionPolicyBinding).Spec.PolicyName == pname
			}) {
			return true
		}
	}
	return false
}

// servedByWebhook reports whether the active webhooks receive, at t, a pod of ss that declares no
// sidecar of its own.
func (h history) servedByWebhook(t *testing.T, ss *v1alpha1.SidecarSet, at time.Time) bool {
	pod := map[string]any{
		"metadata": map[string]any{"labels": toAny(ss.Spec.Selector.MatchLabels)},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "main"}}},
	}
	return h.serves(WebhooksKey(ActiveWebhooks("sidecarset-injector")), at, func(o metav1.Object) bool {
		for _, w := range o.(*admissionregistrationv1.MutatingWebhookConfiguration).Webhooks {
			if !strings.HasSuffix(w.Name, "sidecarinjection.admission.kruise.io") {
				continue // the system namespaces' class
			}
			sel, err := metav1.LabelSelectorAsSelector(w.ObjectSelector)
			if err != nil {
				t.Fatal(err)
			}
			if sel.Matches(labels.Set(ss.Spec.Selector.MatchLabels)) && (len(w.MatchConditions) == 0 || evalCEL(t, w.MatchConditions[0].Expression, pod)) {
				return true
			}
		}
		return false
	})
}

func toAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

var celEnv, _ = cel.NewEnv(cel.Variable("object", cel.DynType), cel.OptionalTypes())

func evalCEL(t *testing.T, expr string, object map[string]any) bool {
	ast, iss := celEnv.Compile(expr)
	if iss.Err() != nil {
		t.Fatalf("match condition %q: %v", expr, iss.Err())
	}
	prg, err := celEnv.Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := prg.Eval(map[string]any{"object": object})
	if err != nil {
		t.Fatalf("match condition %q: %v", expr, err)
	}
	return out.Value() == true
}

// TestSimulation runs the sync once a second for a few minutes while SidecarSets are created,
// move between paths, change and go, a write is refused for a while, and leadership changes.
func TestSimulation(t *testing.T) {
	a, b, c := sidecarSet("a", "app", "v1"), sidecarSet("b", "app", "v1"), sidecarSet("c", "team", "v1")
	events := map[int]func(map[string]*v1alpha1.SidecarSet){
		0:   func(s map[string]*v1alpha1.SidecarSet) { s["a"], s["b"], s["c"] = a, b, c },
		30:  func(s map[string]*v1alpha1.SidecarSet) { s["a"] = toWebhook(s["a"]) },
		45:  func(s map[string]*v1alpha1.SidecarSet) { s["d"] = sidecarSet("d", "app", "v1") },
		60:  func(s map[string]*v1alpha1.SidecarSet) { s["b"] = sidecarSet("b", "app", "v2") },
		80:  func(s map[string]*v1alpha1.SidecarSet) { s["c"] = toWebhook(s["c"]) },
		95:  func(s map[string]*v1alpha1.SidecarSet) { delete(s, "d") },
		110: func(s map[string]*v1alpha1.SidecarSet) { s["a"] = sidecarSet("a", "app", "v3") }, // back to a policy
	}
	const newLeaderAt, refusedUntil, end = 100, 20, 180
	refused := Key(Policy, teamName) // another owner holds its name until refusedUntil

	store := map[string]*v1alpha1.SidecarSet{}
	cl := newCluster()
	h := history{}
	var tracker Tracker
	var state State
	memo := &policy.Memo{}
	everServed := map[string]bool{}
	var webhooksWritten time.Time
	lastWrites := 0
	check := func(now time.Time, when string) {
		for name, ss := range store {
			served := h.servedByPolicy(name, now) || h.servedByWebhook(t, ss, now)
			if everServed[name] && !served {
				t.Errorf("%s, %s: SidecarSet %s has no path: neither a policy nor the webhook serves it", now.Sub(t0), when, name)
			}
			everServed[name] = everServed[name] || served
		}
	}
	for sec := 0; sec <= end; sec++ {
		now := t0.Add(time.Duration(sec) * time.Second)
		if e := events[sec]; e != nil {
			e(store)
			for name := range everServed {
				if store[name] == nil {
					delete(everServed, name)
				}
			}
		}
		if sec == newLeaderAt {
			tracker, state, memo = Tracker{}, State{}, &policy.Memo{}
		}
		check(now, "before the pass")
		var sets []*v1alpha1.SidecarSet
		for _, ss := range store {
			sets = append(sets, ss)
		}
		in := cl.input(sets, now, nil)
		in.Memo = memo
		in.Since = tracker.Observe(now, Observations(now, in.Policies, in.Bindings, in.Active))
		r, err := Sync(in)
		if err != nil {
			t.Fatal(err)
		}
		failed := map[string]bool{}
		for _, w := range r.Writes {
			if w.Kind == Policy {
				checkWithdrawal(t, w, cl, store, h, now, webhooksWritten)
			}
			if w.Key() == refused && w.Op == Create && sec < refusedUntil {
				failed[w.Key()] = true
				continue
			}
			if !cl.apply(w, now, failed) {
				continue
			}
			h[w.Key()] = append(h[w.Key()], version{cl.objects[w.Key()], now})
			if w.Kind == Webhooks && w.Name != "sidecarset-injector" {
				webhooksWritten = now
				tracker.Wrote(w.Key(), cl.objects[w.Key()].GetResourceVersion(), now)
			}
		}
		state = r.Next(state, failed, now)
		check(now, "after the pass")
		if sec > refusedUntil && len(r.HeldAfter(failed)) > 0 && sec > 170 {
			t.Errorf("%s: still held: %v", now.Sub(t0), r.Held)
		}
		if sec > 150 {
			lastWrites += len(r.Writes)
		}
	}
	if lastWrites > 0 {
		t.Errorf("%d writes in the last half minute: the sync does not converge", lastWrites)
	}
	for name, ss := range store {
		if !state.Ready(name, ss.Generation, t0.Add(end*time.Second)) {
			t.Errorf("SidecarSet %s is not ready at the end", name)
		}
		if !everServed[name] {
			t.Errorf("SidecarSet %s was never served", name)
		}
	}
}

// checkWithdrawal fails the test when w withdraws a policy from a stored SidecarSet before the
// webhooks that take it over have been in place for the grace period and serve it.
func checkWithdrawal(t *testing.T, w Write, cl *cluster, store map[string]*v1alpha1.SidecarSet, h history, now, webhooksWritten time.Time) {
	t.Helper()
	have, ok := cl.objects[w.Key()].(*admissionregistrationv1.MutatingAdmissionPolicy)
	if !ok {
		return
	}
	after := map[string]bool{}
	if w.Op == Update {
		after = policy.Members(w.Object.(*admissionregistrationv1.MutatingAdmissionPolicy))
	}
	for name := range policy.Members(have) {
		ss := store[name]
		if after[name] || ss == nil {
			continue
		}
		if now.Sub(webhooksWritten) < grace {
			t.Errorf("%s: %s %s withdraws %s %s after the webhooks were written, within the grace period", now.Sub(t0), w.Op, w.Name, name, now.Sub(webhooksWritten))
		}
		if !h.servedByWebhook(t, ss, now) {
			t.Errorf("%s: %s %s withdraws %s, which the webhooks do not serve", now.Sub(t0), w.Op, w.Name, name)
		}
	}
}
