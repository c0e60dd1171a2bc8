package sidecar

import (
	"encoding/json"
	"maps"
)

// UpgradeStateAnnotation maps each SidecarSet name to an UpgradeState: where the rollout of that
// SidecarSet stands on this pod, as its rollout view says. It is this server's own (OpenKruise
// shows the state only in its SidecarSet status), so platform tooling can read it from the pod
// alone. The controller writes it when it changes, at a bounded rate, and with each in-place
// upgrade.
const UpgradeStateAnnotation = "apps.kruise.io/sidecarset-upgrade-state"

// UpgradeState is one SidecarSet's entry in UpgradeStateAnnotation, e.g.
// {"revision":"logs-7d9f","state":"Waiting","reason":"MaxUnavailable"}.
type UpgradeState struct {
	// Revision is the SidecarSetRevision the pod's sidecars come from, when recorded.
	Revision string `json:"revision,omitempty"`
	// State is the pod's rollout state: Updated, Upgrading, Waiting, Failed or NotUpgradable.
	State string `json:"state"`
	// Reason says why, as the rollout view does (MaxUnavailable, Restarting, Resizing, ...).
	Reason string `json:"reason,omitempty"`
	// NotReadyBefore is set while the pod, upgraded to Revision when it was not ready (Pending,
	// or not ready for its sidecars), has not been available since: its unavailability is not the
	// upgrade's, so it holds no place of maxUnavailable. Written with the upgrade, dropped once
	// the pod is available.
	NotReadyBefore bool `json:"notReadyBefore,omitempty"`
}

// UpgradeStates decodes an UpgradeStateAnnotation value; a value that does not decode counts as
// empty (the controller writes it again).
func UpgradeStates(value string) map[string]UpgradeState {
	out := map[string]UpgradeState{}
	if value != "" {
		if err := json.Unmarshal([]byte(value), &out); err != nil {
			return map[string]UpgradeState{}
		}
	}
	return out
}

// SetUpgradeState records the SidecarSet's entry in annotations and reports whether it changed.
func SetUpgradeState(annotations map[string]string, sidecarSetName string, st UpgradeState) bool {
	states := UpgradeStates(annotations[UpgradeStateAnnotation])
	if old, ok := states[sidecarSetName]; ok && old == st {
		return false
	}
	states = maps.Clone(states)
	states[sidecarSetName] = st
	b, err := json.Marshal(states) // keys sorted
	if err != nil {
		return false
	}
	annotations[UpgradeStateAnnotation] = string(b)
	return true
}
