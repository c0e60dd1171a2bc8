package policy

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidecarset/apiserver/pkg/admission/policy/neighbour"
	"github.com/sidecarset/apiserver/pkg/admission/policy/policytest"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// plainHotPaused returns a SidecarSet a policy serves, one the webhook serves (hot upgrade) and
// one that injects no pod.
func plainHotPaused(t *testing.T) (plain, hot, paused *v1alpha1.SidecarSet) {
	plain = mustSidecarSet(t, `
metadata: {name: plain}
spec:
  selector: {matchLabels: {app: web}}
  containers: [{name: log, image: busybox}]
`)
	hot = mustSidecarSet(t, `
metadata: {name: hot}
spec:
  selector: {matchExpressions: [{key: tier, operator: In, values: [front]}]}
  containers:
  - name: proxy
    image: envoy
    upgradeStrategy: {upgradeType: HotUpgrade, hotUpgradeEmptyImage: empty}
`)
	paused = mustSidecarSet(t, `
metadata: {name: paused}
spec:
  selector: {matchLabels: {app: web}}
  injectionStrategy: {paused: true}
  containers: [{name: other, image: busybox}]
`)
	return plain, hot, paused
}

func TestPlanPolicies(t *testing.T) {
	plain, hot, paused := plainHotPaused(t)
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	first, err := PlanPolicies(PlanInput{SidecarSets: []*v1alpha1.SidecarSet{plain, hot, paused}, Now: now, Grace: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(first.Policies); got != 1 || first.Policies[0].Name != "sidecarsets-app-v0" {
		t.Fatalf("policies: %d, want only sidecarsets-app-v0", got)
	}
	if r := first.Results["plain"]; r.PolicyName != "sidecarsets-app-v0" {
		t.Errorf("plain: policy %q", r.PolicyName)
	}
	for name, want := range map[string]apps.InjectionPath{"plain": apps.PathPolicy, "hot": apps.PathWebhook, "paused": apps.PathNone} {
		if got := first.Results[name].Path; got != want {
			t.Errorf("%s: path %s, want %s", name, got, want)
		}
	}
	if first.Results["hot"].Reason != apps.ReasonHotUpgrade {
		t.Errorf("hot: reason %q", first.Results["hot"].Reason)
	}
	web, front := policytest.LabelledPod(map[string]string{"app": "web"}), policytest.LabelledPod(map[string]string{"tier": "front"})
	// Within its grace period the new policy's SidecarSet is also sent to the webhook.
	for _, pod := range []*corev1.Pod{web, front} {
		if n := webhooksCalled(t, first.WebhookMatches, pod); n != 1 {
			t.Errorf("pod %v: the webhook is called %d times, want once", pod.Labels, n)
		}
	}
	if first.RecheckAfter != 10*time.Second {
		t.Errorf("RecheckAfter = %v, want 10s", first.RecheckAfter)
	}

	// Later, with the policy in place: same stamp (no rewrite), grace over.
	compiled := map[string]*admissionregistrationv1.MutatingAdmissionPolicy{"sidecarsets-app-v0": first.Policies[0]}
	loaded := map[string]time.Time{"sidecarsets-app-v0": now.Add(time.Second)}
	inGrace, err := PlanPolicies(PlanInput{SidecarSets: []*v1alpha1.SidecarSet{plain, hot, paused}, Compiled: compiled, Loaded: loaded, Now: now.Add(5 * time.Second), Grace: 10 * time.Second})
	if err != nil || webhooksCalled(t, inGrace.WebhookMatches, web) != 1 || inGrace.RecheckAfter != 6*time.Second {
		t.Errorf("4s after the policy appeared: recheck %v, webhooks %+v", inGrace.RecheckAfter, inGrace.WebhookMatches)
	}
	later, err := PlanPolicies(PlanInput{SidecarSets: []*v1alpha1.SidecarSet{plain, hot, paused}, Compiled: compiled, Loaded: loaded, Now: now.Add(time.Hour), Grace: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if later.Policies[0].Spec.Mutations[0].JSONPatch.Expression != first.Policies[0].Spec.Mutations[0].JSONPatch.Expression {
		t.Error("replanning an unchanged SidecarSet changed its policy")
	}
	declaring := policytest.LabelledPod(map[string]string{"app": "web"}, "log")
	if webhooksCalled(t, later.WebhookMatches, web) != 0 || webhooksCalled(t, later.WebhookMatches, front) != 1 ||
		webhooksCalled(t, later.WebhookMatches, declaring) != 1 || later.RecheckAfter != 0 {
		t.Errorf("after the grace period the webhook should receive only the webhook-path SidecarSet's pods (and declared names): %+v", later.WebhookMatches)
	}

	// A changed spec is stamped anew and gets a new grace period.
	changed := plain.DeepCopy()
	changed.Spec.Containers[0].Image = "busybox:2"
	prepare(t, changed)
	again, err := PlanPolicies(PlanInput{SidecarSets: []*v1alpha1.SidecarSet{changed}, Compiled: compiled, Loaded: loaded, Now: now.Add(time.Hour), Grace: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if stamp := records(again.Policies[0])["plain"].CompiledAt; stamp != "2026-11-23T11:00:00Z" || again.RecheckAfter != 10*time.Second {
		t.Errorf("changed spec: stamp %s, recheck %v", stamp, again.RecheckAfter)
	}
	if got := Replaced(compiled, again.Policies); len(got) != 1 || got[0] != "plain" {
		t.Errorf("replaced: %v, want [plain]", got)
	}
	if got := Replaced(compiled, later.Policies); len(got) != 0 {
		t.Errorf("replaced after an unchanged plan: %v", got)
	}
	if webhooksCalled(t, again.WebhookMatches, web) != 1 {
		t.Errorf("a policy to be changed must leave its pods to the webhook: %+v", again.WebhookMatches)
	}

	// Nothing stored: the webhook receives no pod.
	none, err := PlanPolicies(PlanInput{Now: now})
	if err != nil || webhooksCalled(t, none.WebhookMatches, web) != 0 || webhooksCalled(t, none.WebhookMatches, policytest.LabelledPod(nil)) != 0 {
		t.Errorf("empty plan: webhooks %+v, err %v", none.WebhookMatches, err)
	}
}

// TestPlanWaitsForRecordedRevision: a SidecarSet the controller has not recorded a revision of
// yet is served by the webhook (which reads the revision at each admission), never compiled into
// a policy that would go on recording no revision; it joins its policy once the revision is
// recorded. For its first 2 s (created at a whole second, so 1 to 2 s) the webhooks are not
// rewritten for it: the plan asks to be made again when that wait ends.
func TestPlanWaitsForRecordedRevision(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 500_000_000, time.UTC)
	for _, tc := range []struct {
		name     string
		revision string
		age      time.Duration // of the creation timestamp (whole seconds) at now; 0 for none
		path     apps.InjectionPath
		reason   string
		policies int
		webhook  int           // calls of the webhook for a selected pod
		recheck  time.Duration // RecheckAfter
	}{
		{"no revision recorded, no creation time", "", 0, apps.PathWebhook, apps.ReasonRevisionPending, 0, 1, 0},
		{"no revision recorded, created 0.5 s ago", "", 500 * time.Millisecond, apps.PathWebhook, apps.ReasonRevisionPending, 0, 0, 1500 * time.Millisecond},
		{"no revision recorded, created 1.5 s ago", "", 1500 * time.Millisecond, apps.PathWebhook, apps.ReasonRevisionPending, 0, 0, 500 * time.Millisecond},
		{"no revision recorded, created 2.5 s ago", "", 2500 * time.Millisecond, apps.PathWebhook, apps.ReasonRevisionPending, 0, 1, 0},
		{"revision recorded", "plain-5d8f", 0, apps.PathPolicy, apps.ReasonCompiled, 1, 0, 0},
		{"revision recorded at once", "plain-5d8f", 500 * time.Millisecond, apps.PathPolicy, apps.ReasonCompiled, 1, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := mustSidecarSet(t, `
metadata: {name: plain}
spec:
  selector: {matchLabels: {app: web}}
  containers: [{name: log, image: busybox}]
`)
			ss.Status.LatestRevision = tc.revision
			if tc.age > 0 {
				ss.CreationTimestamp = metav1.NewTime(now.Add(-tc.age))
			}
			p, err := PlanPolicies(PlanInput{SidecarSets: []*v1alpha1.SidecarSet{ss}, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			if r := p.Results["plain"]; r.Path != tc.path || r.Reason != tc.reason {
				t.Errorf("result %+v, want path %s reason %s", r, tc.path, tc.reason)
			}
			if len(p.Policies) != tc.policies {
				t.Errorf("%d policies, want %d", len(p.Policies), tc.policies)
			}
			web := policytest.LabelledPod(map[string]string{"app": "web"})
			if n := webhooksCalled(t, p.WebhookMatches, web); n != tc.webhook {
				t.Errorf("the webhook is called %d times for a selected pod, want %d", n, tc.webhook)
			}
			if tc.policies == 0 && p.RecheckAfter != tc.recheck {
				t.Errorf("recheck after %v, want %v", p.RecheckAfter, tc.recheck)
			}
		})
	}
}

// TestGroupOfOneContainerMembersIsOneMutation: kube-apiserver converts, encodes, patches and
// decodes the pod once per mutation of a policy that applies, so a full group policy of
// one-container SidecarSets (the manual's shape, one label key) is one mutation.
func TestGroupOfOneContainerMembersIsOneMutation(t *testing.T) {
	var sets []*v1alpha1.SidecarSet
	for i := 0; i < 300; i++ {
		ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("agent-%03d", i)}}
		ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("app-%d", i%20)}}
		ss.Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: fmt.Sprintf("log-%d", i), Image: "busybox:1.36",
			Env: []corev1.EnvVar{{Name: "ROLE", Value: "log"}}}}}
		sets = append(sets, prepare(t, ss))
	}
	plan, err := PlanPolicies(PlanInput{SidecarSets: sets, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	full := 0
	for _, p := range plan.Policies {
		if n := len(Members(p)); n >= 20 {
			full++
			if got := len(p.Spec.Mutations); got != 1 {
				t.Errorf("policy %s of %d members has %d mutations, want 1", p.Name, n, got)
			}
		}
	}
	if full == 0 {
		t.Fatalf("no policy of 20 members or more among %d", len(plan.Policies))
	}
}

// TestPlanWebhookOnly: with --injection=webhook every SidecarSet that injects pods is the
// webhook's: reason WebhookMode for those a policy could serve, and the reason a policy could not
// for the others (a shadowed NamespacedSidecarSet reports it in this mode too).
func TestPlanWebhookOnly(t *testing.T) {
	plain, hot, paused := plainHotPaused(t)
	p, err := PlanPolicies(PlanInput{SidecarSets: []*v1alpha1.SidecarSet{plain, hot, paused}, WebhookOnly: true,
		Now: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"plain": apps.ReasonWebhookMode, "hot": apps.ReasonHotUpgrade, "paused": apps.ReasonInjectionPaused} {
		if got := p.Results[name].Reason; got != want {
			t.Errorf("%s: reason %s, want %s", name, got, want)
		}
	}
	if len(p.Policies) != 0 {
		t.Errorf("webhook mode: %d policies, want none", len(p.Policies))
	}
	if webhooksCalled(t, p.WebhookMatches, policytest.LabelledPod(map[string]string{"app": "web"})) == 0 {
		t.Error("webhook mode: a pod plain selects is not sent to the webhook")
	}
}

// TestManyNeighboursSettle: SidecarSets that may share pods with more others than a policy places
// sidecars among keep the same result when one more such SidecarSet is created or deleted, so a
// write does not rewrite the status of every SidecarSet sharing a common label.
func TestManyNeighboursSettle(t *testing.T) {
	set := func(i int) *v1alpha1.SidecarSet {
		ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("agent-%02d", i), UID: types.UID(fmt.Sprint("uid-", i)),
			ResourceVersion: fmt.Sprint(i + 1), Generation: 1}}
		// Each selects its own label key: any two may select the same pod.
		ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{fmt.Sprintf("key-%d", i): "x"}}
		ss.Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: fmt.Sprintf("agent-%d", i), Image: "busybox"}}}
		return prepare(t, ss)
	}
	var sets []*v1alpha1.SidecarSet
	for i := range neighbour.MaxNeighbours + 4 {
		sets = append(sets, set(i))
	}
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	memo := &Memo{}
	plan := func(sets []*v1alpha1.SidecarSet) Plan {
		now = now.Add(time.Second)
		p, err := PlanPolicies(PlanInput{SidecarSets: sets, Now: now, Memo: memo})
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := PlanPolicies(PlanInput{SidecarSets: sets, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(fresh.Results, p.Results); diff != "" {
			t.Errorf("%d SidecarSets: the memo's results differ from a plan from nothing (-fresh +memo):\n%s", len(sets), diff)
		}
		return p
	}
	before := plan(sets[:len(sets)-1])
	after := plan(sets)
	deleted := plan(sets[:len(sets)-2])
	for _, ss := range sets[:len(sets)-2] {
		b, a, d := before.Results[ss.Name], after.Results[ss.Name], deleted.Results[ss.Name]
		if b.Reason != apps.ReasonManyNeighbours {
			t.Fatalf("%s: reason %q, want %s", ss.Name, b.Reason, apps.ReasonManyNeighbours)
		}
		if a != b || d != b {
			t.Errorf("%s: result changed by a write of another SidecarSet:\n before %+v\n after  %+v\n delete %+v", ss.Name, b, a, d)
		}
	}
}

// TestTenantsDoNotCrowdClusterSidecarSets is a namespace editor's attack: NamespacedSidecarSets
// that may share pods with a cluster SidecarSet, more of them than a policy places sidecars
// among, must not send the cluster SidecarSet to the webhook (ManyNeighbours counts cluster
// neighbours only), in a plan kept by the memo or made from nothing.
func TestTenantsDoNotCrowdClusterSidecarSets(t *testing.T) {
	set := func(i int) *v1alpha1.SidecarSet {
		ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("agent-%02d", i)}}
		ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{fmt.Sprintf("key-%d", i): "x"}}
		ss.Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: fmt.Sprintf("agent-%d", i), Image: "busybox"}}}
		return ss
	}
	rv := 0
	stored := func(ss *v1alpha1.SidecarSet) *v1alpha1.SidecarSet {
		rv++
		ss.UID, ss.ResourceVersion, ss.Generation = types.UID("uid-"+ss.Name), fmt.Sprint(rv), 1
		return prepare(t, ss)
	}
	var sets []*v1alpha1.SidecarSet
	for i := range neighbour.MaxNeighbours - 2 { // agent-00 and fewer neighbours than the limit
		sets = append(sets, stored(set(i)))
	}
	var tenants []*v1alpha1.SidecarSet
	for i := range 2 * neighbour.MaxNeighbours {
		n := &v1alpha1.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("squat-%02d", i), Namespace: "team-a"}, Spec: set(100 + i).Spec}
		tenants = append(tenants, stored(n.AsSidecarSet()))
	}
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	memo := &Memo{}
	for _, step := range []struct {
		name string
		sets []*v1alpha1.SidecarSet
	}{{"cluster SidecarSets alone", sets}, {"with the namespace's", slices.Concat(sets, tenants)}} {
		now = now.Add(time.Second)
		for _, m := range []*Memo{memo, nil} {
			p, err := PlanPolicies(PlanInput{SidecarSets: step.sets, Now: now, Memo: m})
			if err != nil {
				t.Fatal(err)
			}
			if r := p.Results["agent-00"]; r.Path != apps.PathPolicy {
				t.Errorf("%s (memo %v): agent-00 is served by %s (%s: %s), want a policy", step.name, m != nil, r.Path, r.Reason, r.Message)
			}
			if r := p.Results[tenants[0].Name]; step.name != "cluster SidecarSets alone" && r.Reason != apps.ReasonManyNeighbours {
				t.Errorf("%s: the namespace's own SidecarSet: %s %s, want %s", step.name, r.Path, r.Reason, apps.ReasonManyNeighbours)
			}
		}
	}
}
