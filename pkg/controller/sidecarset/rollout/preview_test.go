package rollout

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

func TestPreview(t *testing.T) {
	ssV3 := withVersion(ssV1, "sidecar:v3", "h3", "nh3")
	tests := []struct {
		name string
		ss   *v1alpha1.SidecarSet
		pods []*corev1.Pod
		want map[string]string // pod -> "batch state/reason"
	}{{
		name: "image change, maxUnavailable 2, a not-ready pod goes for free",
		ss:   strategy(func(s *v1alpha1.SidecarSetUpdateStrategy) { s.MaxUnavailable = intOrStr("2") }),
		pods: []*corev1.Pod{old("a"), old("b"), old("c", notReady), old("d"), old("e"), updatedPod("f")},
		want: map[string]string{"a": "1 Upgrading/Selected", "b": "1 Upgrading/Selected", "c": "1 Upgrading/Selected",
			"d": "2 Waiting/MaxUnavailable", "e": "2 Waiting/MaxUnavailable", "f": "0 Updated/"},
	}, {
		name: "partition keeps the last",
		ss:   strategy(func(s *v1alpha1.SidecarSetUpdateStrategy) { s.Partition = intOrStr("1") }),
		pods: []*corev1.Pod{old("a"), old("b"), old("c")},
		want: map[string]string{"a": "1 Upgrading/Selected", "b": "2 Waiting/MaxUnavailable", "c": "0 Waiting/Partition"},
	}, {
		name: "non-image change: nothing upgradable",
		ss:   ssV3,
		pods: []*corev1.Pod{old("a"), old("b")},
		want: map[string]string{"a": "0 NotUpgradable/UpdateImmutableField", "b": "0 NotUpgradable/UpdateImmutableField"},
	}, {
		name: "paused: no batch",
		ss:   strategy(func(s *v1alpha1.SidecarSetUpdateStrategy) { s.Paused = true }),
		pods: []*corev1.Pod{old("a")},
		want: map[string]string{"a": "0 Waiting/Paused"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Preview(tt.ss, cached(tt.pods))
			got := map[string]string{}
			for _, pp := range res.Pods {
				got[pp.Pod.Name] = fmt.Sprintf("%d %s/%s", pp.Batch, pp.State, pp.Reason)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("preview (-want +got):\n%s", diff)
			}
			first := Plan(tt.ss, cached(tt.pods))
			var batch1 []string
			for _, pp := range res.Pods {
				if pp.Batch == 1 {
					batch1 = append(batch1, pp.Pod.Name)
				}
			}
			if diff := cmp.Diff(names(first.Upgrade), batch1, cmpEmpty); diff != "" {
				t.Errorf("batch 1 is not the next round's upgrades (-plan +preview):\n%s", diff)
			}
		})
	}
}

var cmpEmpty = cmp.Transformer("nilToEmpty", func(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
})
