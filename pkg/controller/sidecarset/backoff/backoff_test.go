package backoff

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/inplace/inplacetest"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

// TestPodBackoffs: refusals double a pod's delay per action up to its longest, a success forgets
// it, a new revision tries again at once, and a new term takes the backoffs the status recorded.
func TestPodBackoffs(t *testing.T) {
	clk := clocktesting.NewFakeClock(inplacetest.T0)
	b := New(clk)
	ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "ss"}, Status: v1alpha1.SidecarSetStatus{LatestRevision: "ss-1"}}
	p := &rollout.Pod{Namespace: "team-a", Name: "web-0", UID: "uid-web-0"}

	var delays []time.Duration
	for range 8 {
		delays = append(delays, b.Refuse(ss, p, rollout.BackoffEvict, "500: two budgets"))
	}
	want := []time.Duration{6 * time.Second, 11 * time.Second, 21 * time.Second, 41 * time.Second, 81 * time.Second, 161 * time.Second, 301 * time.Second, 301 * time.Second}
	if diff := cmp.Diff(want, delays); diff != "" { // 5 s doubling to 5 minutes, to the next second
		t.Errorf("eviction delays (-want +got):\n%s", diff)
	}
	if d := b.Refuse(ss, p, rollout.BackoffResize, "quota"); d != 31*time.Second {
		t.Errorf("first resize delay %s, want 31s", d)
	}
	if !b.Deferred(ss, p.UID, rollout.BackoffEvict) || b.Deferred(ss, p.UID, rollout.BackoffUpgrade) {
		t.Error("want the eviction deferred, the upgrade not")
	}
	b.Reset(ss, p.UID, rollout.BackoffEvict)
	if b.Deferred(ss, p.UID, rollout.BackoffEvict) {
		t.Error("eviction still deferred once it passed")
	}

	// What the status records, a new term takes.
	ss.Status.Backoffs = rollout.BackoffsStatus(b.Active(ss))
	next := New(clk)
	next.Sync(ss)
	if !next.Deferred(ss, p.UID, rollout.BackoffResize) {
		t.Error("a new term forgot the recorded resize backoff")
	}
	deferred, refused := rollout.BackoffOptions(next.Active(ss), false)
	if len(deferred) != 0 || refused[p.UID] != "quota" {
		t.Errorf("options: deferred %v, refused %v; want the resize refused with its answer", deferred, refused)
	}
	clk.Step(31 * time.Second)
	if next.Deferred(ss, p.UID, rollout.BackoffResize) {
		t.Error("resize still deferred after its delay")
	}

	// A new revision tries again at once.
	clk.Step(-31 * time.Second)
	ss.Status.LatestRevision = "ss-2"
	next.Sync(ss)
	if next.Deferred(ss, p.UID, rollout.BackoffResize) || len(next.Active(ss)) != 0 {
		t.Error("a backoff of the previous revision still holds")
	}
}

// TestBackoffsStatusCap: the status keeps the MaxRecordedBackoffs retried last, in a stable order.
func TestBackoffsStatusCap(t *testing.T) {
	var all []v1alpha1.PodBackoff
	for i := range rollout.MaxRecordedBackoffs + 5 {
		all = append(all, v1alpha1.PodBackoff{Namespace: "ns", Name: string(rune('a'+i%26)) + string(rune('a'+i/26)), Action: rollout.BackoffUpgrade,
			RetryAfter: metav1.NewTime(inplacetest.T0.Add(time.Duration(i) * time.Second))})
	}
	got := rollout.BackoffsStatus(all)
	if len(got) != rollout.MaxRecordedBackoffs {
		t.Fatalf("%d recorded, want %d", len(got), rollout.MaxRecordedBackoffs)
	}
	for _, e := range got {
		if e.RetryAfter.Time.Before(inplacetest.T0.Add(5 * time.Second)) {
			t.Errorf("kept %s, retried among the first five", e.Name)
		}
	}
}
