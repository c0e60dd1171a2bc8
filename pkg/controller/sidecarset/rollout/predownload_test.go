package rollout

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestPlanPreDownload: a pod whose upgrade waits for its pre-download is skipped without taking a
// place of maxUnavailable, and the walk goes on with the next pods in order; Upcoming lists the
// pods the rollout will upgrade, in order, within partition and pause.
func TestPlanPreDownload(t *testing.T) {
	pods := []*corev1.Pod{old("a", createdAt(t0)), old("b"), old("c"), old("d")}
	tests := []struct {
		name         string
		ss           *v1alpha1.SidecarSet
		holding      []types.UID
		wantStates   map[string]string
		wantUpgrade  []string
		wantUpcoming []string
	}{{
		name:         "nothing held: the first in order within maxUnavailable 1",
		ss:           ssV2,
		wantStates:   map[string]string{"a": selected, "b": overBudget, "c": overBudget, "d": overBudget},
		wantUpgrade:  []string{"a"},
		wantUpcoming: []string{"a", "b", "c", "d"},
	}, {
		name:         "a and b held: c takes the place",
		ss:           ssV2,
		holding:      []types.UID{"uid-a", "uid-b"},
		wantStates:   map[string]string{"a": "Waiting/PreDownloading", "b": "Waiting/PreDownloading", "c": selected, "d": overBudget},
		wantUpgrade:  []string{"c"},
		wantUpcoming: []string{"a", "b", "c", "d"},
	}, {
		name:         "every pod held: none upgraded, none over budget",
		ss:           ssV2,
		holding:      []types.UID{"uid-a", "uid-b", "uid-c", "uid-d"},
		wantStates:   map[string]string{"a": "Waiting/PreDownloading", "b": "Waiting/PreDownloading", "c": "Waiting/PreDownloading", "d": "Waiting/PreDownloading"},
		wantUpcoming: []string{"a", "b", "c", "d"},
	}, {
		name:         "partition 2 keeps the last two out of Upcoming",
		ss:           strategy(func(s *v1alpha1.SidecarSetUpdateStrategy) { s.Partition = intOrStr("2") }),
		holding:      []types.UID{"uid-a"},
		wantStates:   map[string]string{"a": "Waiting/PreDownloading", "b": selected, "c": partitioned, "d": partitioned},
		wantUpgrade:  []string{"b"},
		wantUpcoming: []string{"a", "b"},
	}, {
		name:       "paused: nothing upcoming",
		ss:         strategy(func(s *v1alpha1.SidecarSetUpdateStrategy) { s.Paused = true }),
		holding:    []types.UID{"uid-a"},
		wantStates: map[string]string{"a": "Waiting/Paused", "b": "Waiting/Paused", "c": "Waiting/Paused", "d": "Waiting/Paused"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{PreDownloading: map[types.UID]bool{}}
			for _, uid := range tt.holding {
				opts.PreDownloading[uid] = true
			}
			res := PlanWith(tt.ss, cached(pods), opts)
			if diff := cmp.Diff(tt.wantStates, states(res)); diff != "" {
				t.Errorf("states (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantUpgrade, names(res.Upgrade), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("upgrade (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantUpcoming, names(res.Upcoming), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("upcoming (-want +got):\n%s", diff)
			}
		})
	}
}
