package rollout

import (
	"fmt"
	"strings"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// Item is one pod's place in a rollout, as the planner or the sidecarsets/rollout view gives it.
type Item struct {
	Namespace, Name string
	State           v1alpha1.PodRolloutState
	Reason, Message string
}

// Items returns the pods of a round's plan as items.
func Items(res *Result) []Item {
	out := make([]Item, 0, len(res.Pods))
	for _, p := range res.Pods {
		out = append(out, Item{Namespace: p.Pod.Namespace, Name: p.Pod.Name, State: p.State, Reason: p.Reason, Message: p.Message})
	}
	return out
}

// Progress is where a rollout stands: the one reading of the pods' states that the Ready and
// Progressing conditions and `kubectl sidecarset rollout status` share.
type Progress struct {
	Total, Updated, Upgrading, Waiting, Unavailable int
	// Held are pods the strategy keeps on their revision (partition, updateStrategy.selector,
	// NotUpdate): they do not hold the rollout up.
	Held int
	// NotUpgradable pods cannot be upgraded in place; NotInjected missed the injection.
	NotUpgradable, NotInjected int
	// Failed are the pods whose new sidecar does not run ("namespace/name: reason message").
	Failed []string
	// Paused is the strategy's paused.
	Paused bool
}

// heldReasons are the waiting reasons that the strategy means to last.
var heldReasons = map[string]bool{ReasonPartition: true, ReasonNotSelected: true, ReasonNotUpdateStrategy: true}

// Assess reads the items of a rollout whose strategy is paused or not.
func Assess(items []Item, paused bool) Progress {
	p := Progress{Total: len(items), Paused: paused}
	for _, it := range items {
		switch {
		case it.State == v1alpha1.PodRolloutUpdated:
			p.Updated++
			if it.Reason != "" {
				p.Unavailable++
			}
		case it.State == v1alpha1.PodRolloutFailed:
			p.Failed = append(p.Failed, fmt.Sprintf("%s/%s: %s", it.Namespace, it.Name, strings.TrimSpace(it.Reason+" "+it.Message)))
		case it.State == v1alpha1.PodRolloutNotUpgradable:
			p.NotUpgradable++
		case it.State == v1alpha1.PodRolloutNotInjected:
			p.NotInjected++
		case it.State == v1alpha1.PodRolloutWaiting && heldReasons[it.Reason]:
			p.Held++
		case it.State == v1alpha1.PodRolloutUpgrading:
			p.Upgrading++
		default:
			p.Waiting++
		}
	}
	return p
}

// Done reports whether every pod the rollout upgrades runs the current spec and is available.
func (p Progress) Done() bool {
	return len(p.Failed) == 0 && p.Upgrading+p.Waiting+p.Unavailable == 0
}

// Stalled says why the rollout cannot go on by itself, "" when it can (or is done).
func (p Progress) Stalled() string {
	switch p.Phase() {
	case v1alpha1.RolloutStalled:
		return "pods fail to run the new sidecar: " + strings.Join(p.Failed, "; ")
	case v1alpha1.RolloutPaused:
		return "the rollout is paused"
	}
	return ""
}

// Phase is where the rollout stands, the first that holds of: Stalled when pods fail to run the
// new sidecar, Done, Paused, Progressing. Stalled, the status conditions and the /rollout view
// all rank phases here.
func (p Progress) Phase() v1alpha1.RolloutPhase {
	switch {
	case len(p.Failed) > 0:
		return v1alpha1.RolloutStalled
	case p.Done():
		return v1alpha1.RolloutDone
	case p.Paused:
		return v1alpha1.RolloutPaused
	}
	return v1alpha1.RolloutProgressing
}

// Summary is one line on the rollout of SidecarSet name.
func (p Progress) Summary(name string) string {
	line := fmt.Sprintf("SidecarSet %q rollout: %d of %d pods updated, %d upgrading, %d waiting, %d unavailable", name, p.Updated, p.Total, p.Upgrading, p.Waiting, p.Unavailable)
	if p.Held > 0 {
		line += fmt.Sprintf(", %d held (partition or selector)", p.Held)
	}
	if p.NotUpgradable > 0 {
		line += fmt.Sprintf(", %d not upgradable in place", p.NotUpgradable)
	}
	if p.NotInjected > 0 {
		line += fmt.Sprintf(", %d missed injection", p.NotInjected)
	}
	return line
}
