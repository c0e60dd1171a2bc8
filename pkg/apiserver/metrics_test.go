package apiserver

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"

	"github.com/sidecarset/apiserver/pkg/metricstest"
)

// TestClientGoMetricsServed: a named workqueue and a leader elector created after the server's
// package is loaded report on the registry /metrics serves, labelled with their names.
func TestClientGoMetricsServed(t *testing.T) {
	// Names of this run's own: the registry keeps the series of a run before (go test -count).
	run := metricsRuns.Add(1)
	queue, lease := fmt.Sprintf("metrics-test-%d", run), fmt.Sprintf("metrics-test-lease-%d", run)
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: queue})
	defer q.ShutDown()
	q.Add("a")

	lock := &fakeLock{identity: "me"}
	if _, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Name: lease, Lock: lock, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second,
		RetryPeriod: 2 * time.Second,
		Callbacks:   leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}},
	}); err != nil {
		t.Fatal(err)
	}

	for _, want := range []struct {
		family, name string
		value        float64
	}{{"leader_election_master_status", lease, 0}, {"workqueue_depth", queue, 1}} {
		if got, ok := metricstest.Gauge(t, want.family, "name", want.name); !ok || got != want.value {
			t.Errorf("%s{name=%q}: %v (served: %v), want %v", want.family, want.name, got, ok, want.value)
		}
	}
}

var metricsRuns atomic.Int32

// fakeLock is a resourcelock.Interface that is never called: creating an elector reads nothing.
type fakeLock struct{ identity string }

func (l *fakeLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return nil, nil, nil
}
func (l *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error { return nil }
func (l *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error { return nil }
func (l *fakeLock) RecordEvent(string)                                              {}
func (l *fakeLock) Identity() string                                                { return l.identity }
func (l *fakeLock) Describe() string                                                { return "fake" }
