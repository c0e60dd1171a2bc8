package apiserver

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
)

// TestClientGoMetricsServed: a named workqueue and a leader elector created after the server's
// package is loaded report on the registry /metrics serves, labelled with their names.
func TestClientGoMetricsServed(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "metrics-test"})
	defer q.ShutDown()
	q.Add("a")

	lock := &fakeLock{identity: "me"}
	if _, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Name: "metrics-test-lease", Lock: lock, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second,
		RetryPeriod: 2 * time.Second,
		Callbacks:   leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}},
	}); err != nil {
		t.Fatal(err)
	}

	want := `
# HELP leader_election_master_status [ALPHA] Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.
# TYPE leader_election_master_status gauge
leader_election_master_status{name="metrics-test-lease"} 0
# HELP workqueue_depth [BETA] Current depth of workqueue
# TYPE workqueue_depth gauge
workqueue_depth{name="metrics-test"} 1
`
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(want),
		"leader_election_master_status", "workqueue_depth"); err != nil {
		t.Error(err)
	}
}

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
