package plan

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/sidecarset/apiserver/pkg/admission/policy"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestIntake: the intake webhooks a SidecarSet write added to the active configuration stay while
// their hold, plus the load delay, lasts, while the selective webhooks change and until those have
// been in place for the load delay; then one update removes them and their annotations.
func TestIntake(t *testing.T) {
	const load = time.Second
	a, b := sidecarSet("a", "app", "v1"), sidecarSet("b", "app", "v1")
	until := t0.Add(30 * time.Second)
	for _, tc := range []struct {
		name        string
		sets        []*v1alpha1.SidecarSet
		now         time.Time
		activeSince time.Time // since when the active configuration is as it is
		wantKept    bool      // the intake webhooks stay
		wantWrite   bool      // the active configuration is written
		wantRecheck time.Duration
	}{
		{name: "held", sets: []*v1alpha1.SidecarSet{a, b}, now: t0.Add(10 * time.Second), activeSince: t0,
			wantKept: true, wantRecheck: 21 * time.Second},
		{name: "hold passed, the load delay not yet", sets: []*v1alpha1.SidecarSet{a, b}, now: until.Add(load / 2), activeSince: t0,
			wantKept: true, wantRecheck: load / 2},
		{name: "hold passed, selective webhooks loaded", sets: []*v1alpha1.SidecarSet{a, b}, now: until.Add(load), activeSince: t0,
			wantWrite: true},
		{name: "selective webhooks just written", sets: []*v1alpha1.SidecarSet{a, b}, now: until.Add(time.Minute), activeSince: until.Add(time.Minute - load/4),
			wantKept: true, wantRecheck: 3 * load / 4},
		{name: "a SidecarSet of a new key", sets: []*v1alpha1.SidecarSet{a, b, sidecarSet("c", "team", "v1")}, now: until.Add(time.Minute), activeSince: t0,
			wantKept: true, wantWrite: true, wantRecheck: load + time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := settled(t, a, b)
			key := Key(Webhooks, "sidecarset-injector-active")
			cfg := c.input(nil, t0, nil).Active.DeepCopy()
			cfg.Webhooks = append(cfg.Webhooks, policy.IntakeWebhooks(template().Webhooks, nil)...)
			cfg.Annotations[apps.IntakeOpenedAnnotation] = t0.Format(time.RFC3339Nano)
			cfg.Annotations[apps.IntakeUntilAnnotation] = until.Format(time.RFC3339Nano)
			c.objects[key] = cfg
			since := c.longAgo(tc.now)
			since[key] = tc.activeSince
			in := c.input(tc.sets, tc.now, since)
			in.LoadDelay = load
			r, err := Sync(in)
			if err != nil {
				t.Fatal(err)
			}
			var written *Write
			for i := range r.Writes {
				if r.Writes[i].Key() == key {
					written = &r.Writes[i]
				}
			}
			if (written != nil) != tc.wantWrite {
				t.Fatalf("active configuration written: %v, want %v (%v)", written != nil, tc.wantWrite, summarize(r).Writes)
			}
			if written != nil {
				got := written.Object.(interface{ GetAnnotations() map[string]string })
				_, intake := policy.SplitIntake(written.Object.(*admissionregistrationv1.MutatingWebhookConfiguration).Webhooks)
				if kept := len(intake) > 0; kept != tc.wantKept {
					t.Errorf("intake webhooks kept: %v, want %v", kept, tc.wantKept)
				}
				if _, ok := got.GetAnnotations()[apps.IntakeUntilAnnotation]; ok != tc.wantKept {
					t.Errorf("hold annotation kept: %v, want %v", ok, tc.wantKept)
				}
			}
			if diff := cmp.Diff(tc.wantRecheck, r.RecheckAfter); diff != "" {
				t.Errorf("recheck after (-want +got):\n%s", diff)
			}
		})
	}
}
