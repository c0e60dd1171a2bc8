package plan

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sidecarset/apiserver/pkg/admission/policy/webhookconfig"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

const (
	intakeHold = 10 * time.Second
	intakeLoad = time.Second
)

// hold is a hold opened at opened and lasting until until, both offsets from t0.
func hold(opened, until time.Duration) IntakeHold {
	return IntakeHold{Opened: t0.Add(opened), Until: t0.Add(until)}
}

func clusterHold(opened, until time.Duration) *IntakeHold {
	h := hold(opened, until)
	return &h
}

// withIntake returns cfg with the intake webhooks and annotations of s.
func withIntake(cfg *admissionregistrationv1.MutatingWebhookConfiguration, s IntakeState) *admissionregistrationv1.MutatingWebhookConfiguration {
	cfg = cfg.DeepCopy()
	selective, _ := webhookconfig.SplitIntake(cfg.Webhooks)
	cfg.Webhooks = append(selective, s.Webhooks(template().Webhooks, nil)...)
	s.Annotate(&cfg.ObjectMeta)
	return cfg
}

// intakeScope is what the intake webhooks of a configuration select: "every namespace", the
// namespaces they are narrowed to, or "none".
func intakeScope(t *testing.T, webhooks []admissionregistrationv1.MutatingWebhook) string {
	t.Helper()
	_, open := webhookconfig.SplitIntake(webhooks)
	if len(open) == 0 {
		return "none"
	}
	var scopes []string
	for _, w := range open {
		if w.FailurePolicy == nil || *w.FailurePolicy != admissionregistrationv1.Ignore || w.ObjectSelector == nil ||
			len(w.ObjectSelector.MatchLabels)+len(w.ObjectSelector.MatchExpressions) != 0 || len(w.MatchConditions) != 0 {
			t.Errorf("intake webhook %s: failurePolicy %v, objectSelector %v, conditions %v; want Ignore and every pod", w.Name, w.FailurePolicy, w.ObjectSelector, w.MatchConditions)
		}
		scope := "every namespace"
		for _, r := range w.NamespaceSelector.MatchExpressions {
			if r.Key == corev1.LabelMetadataName && r.Operator == metav1.LabelSelectorOpIn {
				scope = fmt.Sprint(r.Values)
			}
		}
		scopes = append(scopes, scope)
	}
	slices.Sort(scopes)
	if scopes = slices.Compact(scopes); len(scopes) != 1 {
		t.Errorf("intake webhooks of different scopes: %v", scopes)
	}
	return scopes[0]
}

// TestIntakeWebhooks: the intake webhooks select every namespace while a cluster hold lasts, else
// the held namespaces alone, one per template webhook; the state reads back from the
// configuration as written, and is stale when the webhooks in place are not its own.
func TestIntakeWebhooks(t *testing.T) {
	for _, tc := range []struct {
		name      string
		state     IntakeState
		wantScope string
	}{
		{name: "no hold", state: IntakeState{}, wantScope: "none"},
		{name: "cluster", state: IntakeState{Cluster: clusterHold(0, 10*time.Second)}, wantScope: "every namespace"},
		{name: "namespaces", state: IntakeState{Namespaces: map[string]IntakeHold{"team-b": hold(0, time.Second), "team-a": hold(time.Second, 5*time.Second)}},
			wantScope: "[team-a team-b]"},
		{name: "cluster and namespaces", state: IntakeState{Cluster: clusterHold(0, time.Second), Namespaces: map[string]IntakeHold{"team-a": hold(0, 5*time.Second)}},
			wantScope: "every namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			active := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "sidecarset-injector-active"},
				Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "sidecarinjection.admission.kruise.io"}}}
			active = withIntake(active, tc.state)
			if got := intakeScope(t, active.Webhooks); got != tc.wantScope {
				t.Errorf("intake webhooks select %s, want %s", got, tc.wantScope)
			}
			if _, open := webhookconfig.SplitIntake(active.Webhooks); tc.wantScope != "none" && len(open) != len(template().Webhooks) {
				t.Errorf("%d intake webhooks, want one per template webhook (%d)", len(open), len(template().Webhooks))
			}
			got := ReadIntake(active, template().Webhooks, nil)
			if diff := cmp.Diff(tc.state, got); diff != "" {
				t.Errorf("state read back (-want +got):\n%s", diff)
			}
			if tc.state.Empty() {
				return
			}
			other := active.DeepCopy()
			other.Webhooks = append(other.Webhooks[:1], webhookconfig.IntakeWebhooks(template().Webhooks, []string{"kube-system"}, nil)...)
			stale := ReadIntake(other, template().Webhooks, nil)
			if !stale.Stale {
				t.Errorf("intake webhooks rendered otherwise read as not stale: %+v", stale)
			}
			if _, ok := stale.CoveredSince("team-a"); ok {
				t.Errorf("a stale state reports its namespaces covered")
			}
		})
	}
}

// TestIntakeOpen: what a write of a namespace ("": a cluster SidecarSet) does to the holds, and
// how long it then waits: nothing and no wait when a hold covers it for half the hold more and
// has been loaded; an extension keeps the time the coverage began; a namespace newly covered waits
// the load delay; a stale state is written again; one namespace too many turns the holds into a
// cluster hold.
func TestIntakeOpen(t *testing.T) {
	many := map[string]IntakeHold{apps.IntakeLabelScope + "app": hold(0, 12*time.Second)} // a key is no namespace
	for i := range MaxIntakeNamespaces {
		many[fmt.Sprintf("ns-%03d", i)] = hold(0, 12*time.Second)
	}
	for _, tc := range []struct {
		name      string
		state     IntakeState
		namespace string
		now       time.Duration // after t0
		wantWrite bool
		want      IntakeState
		wantWait  time.Duration
	}{
		{name: "first namespaced write", namespace: "team-a", now: 0,
			wantWrite: true, want: IntakeState{Namespaces: map[string]IntakeHold{"team-a": hold(0, 10*time.Second)}}, wantWait: intakeLoad},
		{name: "same namespace, not loaded yet", state: IntakeState{Namespaces: map[string]IntakeHold{"team-a": hold(0, 10*time.Second)}},
			namespace: "team-a", now: 400 * time.Millisecond,
			want: IntakeState{Namespaces: map[string]IntakeHold{"team-a": hold(0, 10*time.Second)}}, wantWait: 600 * time.Millisecond},
		{name: "same namespace, loaded", state: IntakeState{Namespaces: map[string]IntakeHold{"team-a": hold(0, 10*time.Second)}},
			namespace: "team-a", now: 5 * time.Second,
			want: IntakeState{Namespaces: map[string]IntakeHold{"team-a": hold(0, 10*time.Second)}}},
		{name: "same namespace past half the hold: extended, no wait", state: IntakeState{Namespaces: map[string]IntakeHold{"team-a": hold(0, 10*time.Second)}},
			namespace: "team-a", now: 6 * time.Second,
			wantWrite: true, want: IntakeState{Namespaces: map[string]IntakeHold{"team-a": hold(0, 16*time.Second)}}},
		{name: "another namespace: added, waits", state: IntakeState{Namespaces: map[string]IntakeHold{"team-a": hold(0, 10*time.Second)}},
			namespace: "team-b", now: 2 * time.Second,
			wantWrite: true, want: IntakeState{Namespaces: map[string]IntakeHold{"team-a": hold(0, 10*time.Second), "team-b": hold(2*time.Second, 12*time.Second)}},
			wantWait: intakeLoad},
		{name: "namespace under a loaded cluster hold: nothing", state: IntakeState{Cluster: clusterHold(0, 10*time.Second)},
			namespace: "team-a", now: 2 * time.Second,
			want: IntakeState{Cluster: clusterHold(0, 10*time.Second)}},
		{name: "namespace under an ending cluster hold: held from the cluster's opening, no wait", state: IntakeState{Cluster: clusterHold(0, 10*time.Second)},
			namespace: "team-a", now: 6 * time.Second,
			wantWrite: true, want: IntakeState{Cluster: clusterHold(0, 10*time.Second), Namespaces: map[string]IntakeHold{"team-a": hold(0, 16*time.Second)}}},
		{name: "cluster write beside namespaces: every namespace newly covered, waits", state: IntakeState{Namespaces: map[string]IntakeHold{"team-a": hold(0, 10*time.Second)}},
			namespace: "", now: 2 * time.Second,
			wantWrite: true, want: IntakeState{Cluster: clusterHold(2*time.Second, 12*time.Second), Namespaces: map[string]IntakeHold{"team-a": hold(0, 10*time.Second)}},
			wantWait: intakeLoad},
		{name: "namespace write beside a new cluster hold: its own hold loaded", state: IntakeState{Cluster: clusterHold(2*time.Second, 12*time.Second), Namespaces: map[string]IntakeHold{"team-a": hold(0, 10*time.Second)}},
			namespace: "team-a", now: 2500 * time.Millisecond,
			want: IntakeState{Cluster: clusterHold(2*time.Second, 12*time.Second), Namespaces: map[string]IntakeHold{"team-a": hold(0, 10*time.Second)}}},
		{name: "cluster write within half the hold: nothing", state: IntakeState{Cluster: clusterHold(0, 10*time.Second)},
			namespace: "", now: 4 * time.Second,
			want: IntakeState{Cluster: clusterHold(0, 10*time.Second)}},
		{name: "cluster write past half the hold: extended", state: IntakeState{Cluster: clusterHold(0, 10*time.Second), Namespaces: map[string]IntakeHold{"team-a": hold(0, 10*time.Second)}},
			namespace: "", now: 6 * time.Second,
			wantWrite: true, want: IntakeState{Cluster: clusterHold(0, 16*time.Second), Namespaces: map[string]IntakeHold{"team-a": hold(0, 10*time.Second)}}},
		{name: "stale: written again, opened now", state: IntakeState{Stale: true, Namespaces: map[string]IntakeHold{"team-a": hold(0, 10*time.Second)}},
			namespace: "team-a", now: 2 * time.Second,
			wantWrite: true, want: IntakeState{Namespaces: map[string]IntakeHold{"team-a": hold(2*time.Second, 12*time.Second)}}, wantWait: intakeLoad},
		{name: "one namespace too many: every namespace until the last hold", state: IntakeState{Namespaces: many},
			namespace: "team-a", now: time.Second,
			wantWrite: true, want: IntakeState{Cluster: clusterHold(time.Second, 12*time.Second)}, wantWait: intakeLoad},
		{name: "a burst across namespaces: a third namespace held at once folds the holds",
			state:     IntakeState{Namespaces: map[string]IntakeHold{"team-a": hold(0, 10*time.Second), "team-b": hold(0, 14*time.Second)}},
			namespace: "team-c", now: 5 * time.Second,
			wantWrite: true, want: IntakeState{Cluster: clusterHold(5*time.Second, 15*time.Second)}, wantWait: intakeLoad},
		{name: "after the fold, the burst's next namespace neither writes nor waits",
			state:     IntakeState{Cluster: clusterHold(5*time.Second, 15*time.Second)},
			namespace: "team-d", now: 7 * time.Second,
			want: IntakeState{Cluster: clusterHold(5*time.Second, 15*time.Second)}},
		{name: "label keys do not count as namespaces",
			state: IntakeState{Namespaces: map[string]IntakeHold{"team-a": hold(0, 10*time.Second), "team-b": hold(0, 10*time.Second),
				apps.IntakeLabelScope + "app": hold(0, 10*time.Second)}},
			namespace: apps.IntakeLabelScope + "tier", now: time.Second,
			wantWrite: true, want: IntakeState{Namespaces: map[string]IntakeHold{"team-a": hold(0, 10*time.Second), "team-b": hold(0, 10*time.Second),
				apps.IntakeLabelScope + "app": hold(0, 10*time.Second), apps.IntakeLabelScope + "tier": hold(time.Second, 11*time.Second)}},
			wantWait: intakeLoad},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := t0.Add(tc.now)
			got, write := tc.state.Open(tc.namespace, now, intakeHold)
			if write != tc.wantWrite {
				t.Errorf("write %v, want %v", write, tc.wantWrite)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
			since, ok := got.CoveredSince(tc.namespace)
			if !ok {
				t.Fatalf("namespace %q not covered after the open", tc.namespace)
			}
			wait := max(since.Add(intakeLoad).Sub(now), 0)
			if wait != tc.wantWait {
				t.Errorf("wait %v, want %v", wait, tc.wantWait)
			}
			if until := got.Until(tc.namespace); until.Sub(now) < intakeHold/2 {
				t.Errorf("held until %v, less than half the hold from now", until.Sub(t0))
			}
		})
	}
}

// TestIntake: the intake webhooks a SidecarSet write added to their configuration stay while
// their hold, plus the load delay, lasts, while the selective webhooks change, until those have
// been in place for the load delay, and while a policy that stops injecting a SidecarSet waits
// for the webhooks that take it over (kube-apiserver runs it meanwhile, injecting the version
// before into pods that version alone selects, which must reach the webhook) and in the pass
// that withdraws it; then one update of the intake configuration removes them and their
// annotations. The active configuration is written only for its selective webhooks; intake
// webhooks an earlier version added to it go the same way, with an update of it.
func TestIntake(t *testing.T) {
	const load = time.Second
	a, b := sidecarSet("a", "app", "v1"), sidecarSet("b", "app", "v1")
	until := t0.Add(30 * time.Second)
	for _, tc := range []struct {
		name           string
		sets           []*v1alpha1.SidecarSet
		now            time.Time
		selectiveSince time.Time // since when the selective webhooks are as they are
		// moved: the selective webhooks already serve sets, while the policy still serves a and
		// b, since activeSince (zero: now) as far as the withdrawal's wait goes.
		moved       bool
		activeSince time.Time
		// legacy: the intake webhooks are in the active configuration, as an earlier version
		// wrote them.
		legacy          bool
		wantKept        bool // the intake webhooks stay
		wantActiveWrite bool // the active configuration is written
		wantRecheck     time.Duration
	}{
		{name: "held", sets: []*v1alpha1.SidecarSet{a, b}, now: t0.Add(10 * time.Second), selectiveSince: t0,
			wantKept: true, wantRecheck: 21 * time.Second},
		{name: "hold passed, the load delay not yet", sets: []*v1alpha1.SidecarSet{a, b}, now: until.Add(load / 2), selectiveSince: t0,
			wantKept: true, wantRecheck: load / 2},
		{name: "hold passed, selective webhooks loaded", sets: []*v1alpha1.SidecarSet{a, b}, now: until.Add(load), selectiveSince: t0},
		{name: "selective webhooks just written", sets: []*v1alpha1.SidecarSet{a, b}, now: until.Add(time.Minute), selectiveSince: until.Add(time.Minute - load/4),
			wantKept: true, wantRecheck: 3 * load / 4},
		{name: "a SidecarSet of a new key", sets: []*v1alpha1.SidecarSet{a, b, sidecarSet("c", "team", "v1")}, now: until.Add(time.Minute), selectiveSince: t0,
			wantKept: true, wantActiveWrite: true, wantRecheck: load + time.Millisecond},
		{name: "a policy still injects a SidecarSet moved to the webhook", sets: []*v1alpha1.SidecarSet{toWebhook(a), b}, now: until.Add(time.Minute),
			selectiveSince: t0, moved: true, wantKept: true, wantRecheck: grace},
		{name: "that policy's withdrawal is written now, the intake goes in a pass after it", sets: []*v1alpha1.SidecarSet{toWebhook(a), b},
			now: until.Add(time.Minute), selectiveSince: t0, moved: true, activeSince: t0, wantKept: true, wantRecheck: grace},
		{name: "an earlier version's intake, held", sets: []*v1alpha1.SidecarSet{a, b}, now: t0.Add(10 * time.Second), selectiveSince: t0,
			legacy: true, wantKept: true, wantRecheck: 21 * time.Second},
		{name: "an earlier version's intake, hold passed", sets: []*v1alpha1.SidecarSet{a, b}, now: until.Add(load), selectiveSince: t0,
			legacy: true, wantActiveWrite: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := settled(t, a, b)
			if tc.moved {
				first, err := Sync(c.input(tc.sets, t0, c.longAgo(t0)))
				if err != nil {
					t.Fatal(err)
				}
				for _, w := range first.Writes {
					if w.Kind == Webhooks {
						c.apply(w, t0, map[string]bool{})
					}
				}
			}
			key, intakeKey := Key(Webhooks, "sidecarset-injector-active"), Key(Webhooks, IntakeWebhooks("sidecarset-injector"))
			holder := intakeKey
			if tc.legacy {
				holder = key
				c.objects[key] = withIntake(c.input(nil, t0, nil).Active, IntakeState{Cluster: &IntakeHold{Opened: t0, Until: until}})
			} else {
				c.objects[intakeKey] = withIntake(intakeConfiguration(), IntakeState{Cluster: &IntakeHold{Opened: t0, Until: until}})
			}
			since := c.longAgo(tc.now)
			since[key] = tc.now // the intake's own writes do not delay its removal
			if !tc.activeSince.IsZero() {
				since[key] = tc.activeSince
			}
			since[SelectiveWebhooksKey("sidecarset-injector-active")] = tc.selectiveSince
			in := c.input(tc.sets, tc.now, since)
			in.LoadDelay = load
			r, err := Sync(in)
			if err != nil {
				t.Fatal(err)
			}
			if withdrawn := slices.ContainsFunc(r.Writes, func(w Write) bool { return w.Kind == Policy }); tc.moved && withdrawn != !tc.activeSince.IsZero() {
				t.Errorf("the policy withdrawn: %v, want %v (%v)", withdrawn, !tc.activeSince.IsZero(), summarize(r).Writes)
			}
			if written := activeWrite(r); (written != nil) != tc.wantActiveWrite {
				t.Fatalf("active configuration written: %v, want %v (%v)", written != nil, tc.wantActiveWrite, summarize(r).Writes)
			}
			if written, want := configWrite(r, IntakeWebhooks("sidecarset-injector")) != nil, !tc.legacy && !tc.wantKept; written != want {
				t.Errorf("intake configuration written: %v, want %v (%v)", written, want, summarize(r).Writes)
			}
			after := c.objects[holder].(*admissionregistrationv1.MutatingWebhookConfiguration)
			if written := configWrite(r, after.Name); written != nil {
				after = written
			} else if !tc.wantKept {
				t.Fatalf("%s not written, want its intake webhooks removed (%v)", after.Name, summarize(r).Writes)
			}
			_, intake := webhookconfig.SplitIntake(after.Webhooks)
			if kept := len(intake) > 0; kept != tc.wantKept {
				t.Errorf("intake webhooks kept: %v, want %v", kept, tc.wantKept)
			}
			if _, ok := after.Annotations[apps.IntakeUntilAnnotation]; ok != tc.wantKept {
				t.Errorf("hold annotation kept: %v, want %v", ok, tc.wantKept)
			}
			if diff := cmp.Diff(tc.wantRecheck, r.RecheckAfter); diff != "" {
				t.Errorf("recheck after (-want +got):\n%s", diff)
			}
		})
	}
}

// intakeConfiguration is an intake configuration without webhooks, as the leader keeps it.
func intakeConfiguration() *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: IntakeWebhooks("sidecarset-injector"),
		Labels: map[string]string{apps.ManagedByLabel: apps.ManagedByValue}}}
}

// configWrite returns the webhook configuration name a pass writes, nil when none.
func configWrite(r Result, name string) *admissionregistrationv1.MutatingWebhookConfiguration {
	for i := range r.Writes {
		if r.Writes[i].Key() == Key(Webhooks, name) {
			return r.Writes[i].Object.(*admissionregistrationv1.MutatingWebhookConfiguration)
		}
	}
	return nil
}

// activeWrite returns the active configuration a pass writes, nil when none.
func activeWrite(r Result) *admissionregistrationv1.MutatingWebhookConfiguration {
	for i := range r.Writes {
		if r.Writes[i].Key() == Key(Webhooks, "sidecarset-injector-active") {
			return r.Writes[i].Object.(*admissionregistrationv1.MutatingWebhookConfiguration)
		}
	}
	return nil
}

// TestIntakeDropsHoldsApart: the leader drops each hold once its time, plus the load delay, has
// passed, the cluster hold and each namespace's apart, and rewrites the intake webhooks for those
// left, in their own configuration (the active one is not written): every namespace while the cluster hold lasts, then the namespaces still held, then none.
// Nothing is dropped while the selective webhooks are not loaded.
func TestIntakeDropsHoldsApart(t *testing.T) {
	a := sidecarSet("a", "app", "v1")
	held := IntakeState{
		Cluster:    clusterHold(0, 10*time.Second),
		Namespaces: map[string]IntakeHold{"team-a": hold(0, 20*time.Second), "team-b": hold(time.Second, 30*time.Second)},
	}
	for _, tc := range []struct {
		name           string
		now            time.Duration // after t0
		selectiveSince time.Duration // after t0
		wantWrite      bool
		want           IntakeState // the holds after the pass
		wantScope      string
		wantRecheck    time.Duration
	}{
		{name: "every hold lasts", now: 5 * time.Second, want: held, wantScope: "every namespace", wantRecheck: 6 * time.Second},
		{name: "the cluster hold passed: the namespaces still held", now: 11 * time.Second, wantWrite: true,
			want: IntakeState{Namespaces: held.Namespaces}, wantScope: "[team-a team-b]", wantRecheck: 10 * time.Second},
		{name: "the cluster hold passed, the selective webhooks not loaded", now: 11 * time.Second, selectiveSince: 10500 * time.Millisecond,
			want: held, wantScope: "every namespace", wantRecheck: 500 * time.Millisecond},
		{name: "one namespace passed", now: 21 * time.Second, wantWrite: true,
			want: IntakeState{Namespaces: map[string]IntakeHold{"team-b": held.Namespaces["team-b"]}}, wantScope: "[team-b]", wantRecheck: 10 * time.Second},
		{name: "every hold passed", now: 31 * time.Second, wantWrite: true, wantScope: "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := settled(t, a)
			key := Key(Webhooks, IntakeWebhooks("sidecarset-injector"))
			c.objects[key] = withIntake(intakeConfiguration(), held)
			since := c.longAgo(t0)
			since[SelectiveWebhooksKey("sidecarset-injector-active")] = t0.Add(tc.selectiveSince)
			in := c.input([]*v1alpha1.SidecarSet{a}, t0.Add(tc.now), since)
			in.LoadDelay = intakeLoad
			r, err := Sync(in)
			if err != nil {
				t.Fatal(err)
			}
			if activeWrite(r) != nil {
				t.Errorf("active configuration written: %v", summarize(r).Writes)
			}
			cfg := c.objects[key].(*admissionregistrationv1.MutatingWebhookConfiguration)
			if written := configWrite(r, cfg.Name); written != nil {
				cfg = written
			} else if tc.wantWrite {
				t.Fatalf("intake configuration not written (%v)", summarize(r).Writes)
			}
			if configWrite(r, cfg.Name) != nil && !tc.wantWrite {
				t.Errorf("intake configuration written: %v", summarize(r).Writes)
			}
			if got := intakeScope(t, cfg.Webhooks); got != tc.wantScope {
				t.Errorf("intake webhooks select %s, want %s", got, tc.wantScope)
			}
			if diff := cmp.Diff(tc.want, ReadIntake(cfg, template().Webhooks, nil)); diff != "" {
				t.Errorf("holds (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRecheck, r.RecheckAfter); diff != "" {
				t.Errorf("recheck after (-want +got):\n%s", diff)
			}
		})
	}
}

// TestIntakeSimulation plays replicas' opens (of a few namespaces, and of every namespace) and the
// leader's passes at random moments against a kube-apiserver that may run, at any time, any
// version of the configuration written within the load delay before (or the last one before
// that), and checks at every step: once an open returns (after its wait), the pods of its
// namespace reach the server in every version kube-apiserver may run, for at least half the hold
// plus the load delay from the open; the opens of one namespace write the configuration at most
// once per half hold; and once the writes stop the leader removes every hold.
func TestIntakeSimulation(t *testing.T) {
	a := sidecarSet("a", "app", "v1")
	scopes := []string{"", "ns-0", "ns-1", "ns-2", "ns-3", "ns-4", "ns-5", "ns-6"}
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 1))
			c := settled(t, a)
			key := Key(Webhooks, IntakeWebhooks("sidecarset-injector"))
			c.objects[key] = intakeConfiguration()
			type written struct {
				at  time.Time
				cfg *admissionregistrationv1.MutatingWebhookConfiguration
			}
			versions := []written{{at: t0.Add(-time.Hour), cfg: c.objects[key].(*admissionregistrationv1.MutatingWebhookConfiguration)}}
			write := func(now time.Time, cfg *admissionregistrationv1.MutatingWebhookConfiguration) {
				c.rv++
				cfg = cfg.DeepCopy()
				cfg.ResourceVersion = fmt.Sprint(c.rv)
				c.objects[key] = cfg
				versions = append(versions, written{at: now, cfg: cfg})
			}
			// mayRun returns the versions kube-apiserver may run at at.
			mayRun := func(at time.Time) []*admissionregistrationv1.MutatingWebhookConfiguration {
				var out []*admissionregistrationv1.MutatingWebhookConfiguration
				for i := len(versions) - 1; i >= 0; i-- {
					if v := versions[i]; !v.at.After(at) {
						out = append(out, v.cfg)
						if !v.at.After(at.Add(-intakeLoad)) {
							break
						}
					}
				}
				return out
			}
			type open struct {
				namespace string
				at, until time.Time // the pods of namespace must reach the server from at to until
			}
			var opens []open
			lastWrite := map[string]time.Time{}
			leader := func(now time.Time) {
				since := c.longAgo(now) // the selective webhooks do not change
				in := c.input([]*v1alpha1.SidecarSet{a}, now, since)
				in.LoadDelay = intakeLoad
				r, err := Sync(in)
				if err != nil {
					t.Fatal(err)
				}
				if activeWrite(r) != nil {
					t.Fatalf("%v: the active configuration written: %v", now.Sub(t0), summarize(r).Writes)
				}
				if w := configWrite(r, IntakeWebhooks("sidecarset-injector")); w != nil {
					write(now, w)
				}
			}
			now := t0
			for range 400 {
				now = now.Add(time.Duration(rnd.Int64N(int64(3 * time.Second))))
				if rnd.IntN(10) < 3 {
					leader(now)
					continue
				}
				ns := scopes[rnd.IntN(len(scopes))]
				cfg := c.objects[key].(*admissionregistrationv1.MutatingWebhookConfiguration)
				next, wrote := ReadIntake(cfg, template().Webhooks, nil).Open(ns, now, intakeHold)
				if wrote {
					if last, ok := lastWrite[ns]; ok && now.Sub(last) <= intakeHold/2 {
						t.Fatalf("%v: the opens of %q wrote the configuration %v apart", now.Sub(t0), ns, now.Sub(last))
					}
					lastWrite[ns] = now
					write(now, withIntake(cfg, next))
				}
				since, ok := next.CoveredSince(ns)
				if !ok {
					t.Fatalf("%v: %q not covered after its open", now.Sub(t0), ns)
				}
				loaded := since.Add(intakeLoad) // as injectionsync.Intake waits
				if loaded.Before(now) {
					loaded = now
				}
				opens = append(opens, open{namespace: ns, at: loaded, until: now.Add(intakeHold/2 + intakeLoad)})
			}
			for _, o := range opens {
				for _, v := range versions {
					for _, at := range []time.Time{o.at, v.at, v.at.Add(intakeLoad)} {
						if at.Before(o.at) || at.After(o.until) {
							continue
						}
						for _, cfg := range mayRun(at) {
							if !intakeSends(t, cfg, o.namespace) {
								t.Fatalf("the open of %q returned at %v: at %v kube-apiserver may run a configuration whose intake webhooks do not send it (%s)",
									o.namespace, o.at.Sub(t0), at.Sub(t0), intakeScope(t, cfg.Webhooks))
							}
						}
					}
				}
			}
			for range 3 {
				now = now.Add(intakeHold + 2*intakeLoad)
				leader(now)
			}
			if got := intakeScope(t, c.objects[key].(*admissionregistrationv1.MutatingWebhookConfiguration).Webhooks); got != "none" {
				t.Errorf("once the writes stop, the intake webhooks still select %s", got)
			}
		})
	}
}

// intakeSends reports whether the intake webhooks of cfg send the pods of namespace ("": of
// every namespace, tried on one no hold names) to the server.
func intakeSends(t *testing.T, cfg *admissionregistrationv1.MutatingWebhookConfiguration, namespace string) bool {
	t.Helper()
	if namespace == "" {
		namespace = "elsewhere"
	}
	_, open := webhookconfig.SplitIntake(cfg.Webhooks)
	for _, w := range open {
		sel, err := metav1.LabelSelectorAsSelector(w.NamespaceSelector)
		if err != nil {
			t.Fatal(err)
		}
		if sel.Matches(labels.Set{corev1.LabelMetadataName: namespace}) {
			return true
		}
	}
	return false
}
