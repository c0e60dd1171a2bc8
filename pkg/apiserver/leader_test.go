package apiserver

import (
	"context"
	"strings"
	"sync"
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

// TestOneTermAtATime: a term starts only once the previous one has returned, and a term whose
// context has ended runs nothing.
func TestOneTermAtATime(t *testing.T) {
	release := make(chan struct{})
	var order []string
	var mu sync.Mutex
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	term := oneTermAtATime(func(ctx context.Context) {
		note("start " + ctx.Value(termKey{}).(string))
		if ctx.Value(termKey{}) == "first" {
			<-release
		}
		note("end " + ctx.Value(termKey{}).(string))
	})
	first := context.WithValue(context.Background(), termKey{}, "first")
	second := context.WithValue(context.Background(), termKey{}, "second")
	lost, cancel := context.WithCancel(context.WithValue(context.Background(), termKey{}, "lost"))
	cancel()
	done := make(chan struct{})
	go func() { term(first); close(done) }()
	for {
		mu.Lock()
		n := len(order)
		mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	secondDone := make(chan struct{})
	go func() { term(second); close(secondDone) }()
	time.Sleep(20 * time.Millisecond)
	close(release)
	<-done
	<-secondDone
	term(lost)
	if got, want := strings.Join(order, ", "), "start first, end first, start second, end second"; got != want {
		t.Errorf("order %q, want %q", got, want)
	}
}

type termKey struct{}
