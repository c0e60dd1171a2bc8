package apiserver

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
)

// TestReleaseGuard: the release client-go makes when a term ends (an update without holder,
// against the version of a fresh read) goes through only when that read names this replica: a
// replica stalled past its renew deadline must not clear the record of the replica that took the
// Lease meanwhile.
func TestReleaseGuard(t *testing.T) {
	for _, tc := range []struct {
		name, holder string
		released     bool
	}{
		{"held by this replica", "me", true},
		{"taken over by another replica", "other", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewSimpleClientset(&coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: leaseName},
				Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(tc.holder), LeaseDurationSeconds: ptr.To[int32](15)},
			})
			lock, err := resourcelock.New(resourcelock.LeasesResourceLock, "ns", leaseName, nil, client.CoordinationV1(),
				resourcelock.ResourceLockConfig{Identity: "me"})
			if err != nil {
				t.Fatal(err)
			}
			g := &releaseGuard{Interface: lock}
			ctx := context.Background()
			if _, _, err := g.Get(ctx); err != nil {
				t.Fatal(err)
			}
			now := metav1.NewTime(time.Now())
			err = g.Update(ctx, resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 1, RenewTime: now, AcquireTime: now})
			if (err == nil) != tc.released {
				t.Fatalf("release: %v, want released %v", err, tc.released)
			}
			lease, err := client.CoordinationV1().Leases("ns").Get(ctx, leaseName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := tc.holder
			if tc.released {
				want = ""
			}
			if got := ptr.Deref(lease.Spec.HolderIdentity, ""); got != want {
				t.Errorf("holder %q after the release, want %q", got, want)
			}
		})
	}
}
