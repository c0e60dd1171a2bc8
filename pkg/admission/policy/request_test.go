package policy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidecarset/apiserver/pkg/admission/policy/neighbour"
	"github.com/sidecarset/apiserver/pkg/admission/policy/policytest"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// platformShape is the shape a platform team has: apps SidecarSets, each selecting its app by
// value, more of them than a policy places sidecars among, and one platform-wide SidecarSet
// selecting every pod with a common label by Exists (a neighbour of each of them).
func platformShape(t *testing.T, apps int, asks bool) (platform *v1alpha1.SidecarSet, sets []*v1alpha1.SidecarSet) {
	t.Helper()
	created := metav1.NewTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	for i := range apps {
		ss := selecting(t, fmt.Sprintf("app-%02d", i), fmt.Sprintf("{matchLabels: {app: app-%02d}}", i), fmt.Sprintf("helper-%02d", i))
		ss.UID, ss.ResourceVersion, ss.Generation, ss.CreationTimestamp = types.UID(ss.Name), "1", 1, created
		sets = append(sets, ss)
	}
	platform = selecting(t, "log-agent", "{matchExpressions: [{key: platform.example.com/logs, operator: Exists}]}", "log-agent")
	platform.UID, platform.ResourceVersion, platform.Generation, platform.CreationTimestamp = "platform", "1", 1, created
	if asks {
		platform.Annotations["apps.kruise.io/injection-path"] = "Policy"
	}
	return platform, append(sets, platform)
}

// TestPolicyRequestServesPlatformWideSidecarSet: a platform-wide SidecarSet with more neighbours
// than a policy places sidecars among goes to the webhook (ManyNeighbours), unless it asks for the
// policy path and the server grants it; then a pod of any app gets the same sidecars as from the
// injector alone without calling the server (what survives an outage), in a plan kept by the memo
// and in one made from nothing.
func TestPolicyRequestServesPlatformWideSidecarSet(t *testing.T) {
	n := neighbour.MaxNeighbours + 8
	cases := []struct {
		name       string
		asks       bool
		limit      int
		wantPath   apps.InjectionPath
		wantReason string
		wantInMsg  string
	}{
		{name: "not asking", asks: false, limit: 4, wantPath: apps.PathWebhook, wantReason: apps.ReasonManyNeighbours},
		{name: "asking, granted", asks: true, limit: 4, wantPath: apps.PathPolicy, wantReason: apps.ReasonCompiled},
		{name: "asking, no request served", asks: true, limit: 0, wantPath: apps.PathWebhook, wantReason: apps.ReasonManyNeighbours,
			wantInMsg: "--max-policy-path-requests"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			platform, sets := platformShape(t, n, tc.asks)
			in := PlanInput{SidecarSets: sets, Now: testStamp, MaxPolicyRequests: tc.limit}
			p, err := PlanPolicies(in)
			if err != nil {
				t.Fatal(err)
			}
			r := p.Results[platform.Name]
			if r.Path != tc.wantPath || r.Reason != tc.wantReason || !strings.Contains(r.Message, tc.wantInMsg) {
				t.Fatalf("platform SidecarSet: %s %s %q, want %s %s (message with %q)", r.Path, r.Reason, r.Message, tc.wantPath, tc.wantReason, tc.wantInMsg)
			}
			memo := &Memo{}
			for range 2 {
				in.Memo = memo
				kept, err := PlanPolicies(in)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(p.Results, kept.Results); diff != "" {
					t.Fatalf("the memo's results differ from a plan from nothing (-fresh +memo):\n%s", diff)
				}
			}
			ns := namespace("shop", nil)
			for _, i := range []int{0, n / 2, n - 1} {
				pod := policytest.LabelledPod(map[string]string{"app": fmt.Sprintf("app-%02d", i), "platform.example.com/logs": "on"})
				pod.Namespace = ns.Name
				want := normalize(webhookPod(t, sets, pod, ns))
				got, called := admittedBy(t, in, pod, ns)
				if diff := cmp.Diff(want, normalize(got)); diff != "" {
					t.Fatalf("app-%02d: differs from the injector alone (-injector +admitted):\n%s", i, diff)
				}
				if wantCall := tc.wantPath == apps.PathWebhook; called != wantCall {
					t.Errorf("app-%02d: the pod calls the server: %v, want %v", i, called, wantCall)
				}
			}
		})
	}
}

// TestGrantRequests: the oldest SidecarSets asking are granted, then by name; a
// NamespacedSidecarSet's request (refused by validation) and a SidecarSet not asking never are.
func TestGrantRequests(t *testing.T) {
	at := func(name string, minute int, asks bool) *v1alpha1.SidecarSet {
		ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 12, 1, 0, minute, 0, 0, time.UTC))}}
		if asks {
			ss.Annotations = map[string]string{"apps.kruise.io/injection-path": "Policy"}
		}
		return ss
	}
	sets := []*v1alpha1.SidecarSet{at("zeta", 1, true), at("alpha", 3, true), at("beta", 3, true), at("old", 0, false),
		at(v1alpha1.NamespacedName("team-a", "mesh"), 0, true), at("late", 9, true)}
	for _, tc := range []struct {
		limit int
		want  []string
	}{
		{-1, nil}, {0, nil}, {1, []string{"zeta"}}, {2, []string{"zeta", "alpha"}}, {3, []string{"zeta", "alpha", "beta"}},
		{10, []string{"zeta", "alpha", "beta", "late"}},
	} {
		got := grantRequests(sets, tc.limit)
		want := map[string]bool{}
		for _, n := range tc.want {
			want[n] = true
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("limit %d (-want +got):\n%s", tc.limit, diff)
		}
	}
}

// TestPolicyRequestListedFirst: with more label values than the policies list, a granted
// SidecarSet's value is listed before those the most SidecarSets select, and placed first.
func TestPolicyRequestListedFirst(t *testing.T) {
	var sets []*v1alpha1.SidecarSet
	for i := range maxNativeValues {
		// Two SidecarSets per value: each value ranks above a value of one.
		for j := range 2 {
			sets = append(sets, selecting(t, fmt.Sprintf("busy-%03d-%d", i, j), fmt.Sprintf("{matchLabels: {app: busy-%03d}}", i), fmt.Sprintf("c-%d", j)))
		}
	}
	lone := selecting(t, "zz-lone", "{matchLabels: {app: zz-lone}}", "agent")
	sets = append(sets, lone)
	p, err := PlanPolicies(PlanInput{SidecarSets: sets, Now: testStamp, MaxPolicyRequests: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r := p.Results[lone.Name]; r.Reason != apps.ReasonSelectorBudget || !strings.HasPrefix(r.Message, "the group policies") {
		t.Fatalf("not asking: %s %s %q, want %s", r.Path, r.Reason, r.Message, apps.ReasonSelectorBudget)
	}
	lone.Annotations["apps.kruise.io/injection-path"] = "Policy"
	p, err = PlanPolicies(PlanInput{SidecarSets: sets, Now: testStamp, MaxPolicyRequests: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r := p.Results[lone.Name]; r.Path != apps.PathPolicy {
		t.Fatalf("granted: %s %s %q, want the policy path", r.Path, r.Reason, r.Message)
	}
	over := 0
	for _, ss := range sets {
		if p.Results[ss.Name].Reason == apps.ReasonSelectorBudget {
			over++
		}
	}
	if over != 2 {
		t.Errorf("%d SidecarSets beyond the value budget, want the 2 of the value the granted one displaced", over)
	}
}
