package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SidecarSetRollout is the rollout view of a SidecarSet (GET sidecarsets/<name>/rollout) and the
// request body of rollout actions (POST sidecarsets/<name>/rollout with spec.action).
type SidecarSetRollout struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata; the name is the SidecarSet's.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the action to perform, for POST.
	Spec SidecarSetRolloutSpec `json:"spec,omitempty"`
	// Status is the state of the rollout, for GET.
	Status SidecarSetRolloutStatus `json:"status,omitempty"`
}

// RolloutAction is an action on a rollout.
type RolloutAction string

const (
	// RolloutActionPause sets updateStrategy.paused.
	RolloutActionPause RolloutAction = "Pause"
	// RolloutActionResume clears updateStrategy.paused.
	RolloutActionResume RolloutAction = "Resume"
	// RolloutActionRollback sets the SidecarSet's containers, initContainers, volumes,
	// imagePullSecrets and patchPodMetadata from a revision.
	RolloutActionRollback RolloutAction = "Rollback"
	// RolloutActionPreview changes nothing: the answer's status is the plan of a rollout of the
	// proposed spec over the current pods (each pod's state, and the batch that would upgrade it).
	RolloutActionPreview RolloutAction = "Preview"
)

// SidecarSetRolloutSpec is a rollout action.
type SidecarSetRolloutSpec struct {
	// Action is Pause, Resume, Rollback or Preview.
	Action RolloutAction `json:"action,omitempty"`
	// RevisionName is the SidecarSetRevision to roll back to (Rollback only).
	RevisionName string `json:"revisionName,omitempty"`
	// Proposed is the SidecarSet spec to preview (Preview only).
	Proposed *SidecarSetSpec `json:"proposed,omitempty"`
}

// PodRolloutState is the rollout state of one pod.
type PodRolloutState string

const (
	// PodRolloutUpdated means the pod runs the latest sidecar spec.
	PodRolloutUpdated PodRolloutState = "Updated"
	// PodRolloutUpgrading means the pod's spec was updated and its sidecars are restarting.
	PodRolloutUpgrading PodRolloutState = "Upgrading"
	// PodRolloutWaiting means the pod will be upgraded; reason says what it waits for.
	PodRolloutWaiting PodRolloutState = "Waiting"
	// PodRolloutNotUpgradable means a change other than an image keeps the pod on its old spec.
	PodRolloutNotUpgradable PodRolloutState = "NotUpgradable"
	// PodRolloutFailed means the pod was upgraded and its sidecar fails to run the new image.
	PodRolloutFailed PodRolloutState = "Failed"
	// PodRolloutNotInjected means the SidecarSet selects the pod but the pod runs without its
	// sidecars (created before the SidecarSet, in a namespace excluded from injection, or admitted
	// while injection was unavailable); reason says which when known.
	PodRolloutNotInjected PodRolloutState = "NotInjected"
)

// RolloutPhase is where a rollout stands, as the server reads its pods' states.
type RolloutPhase string

const (
	// RolloutProgressing means pods are still to be upgraded or to become available, and nothing
	// stops the rollout.
	RolloutProgressing RolloutPhase = "Progressing"
	// RolloutDone means every pod the rollout upgrades runs the current spec and is available
	// (pods held by partition or updateStrategy.selector, pods that cannot be upgraded in place and
	// pods that missed the injection do not hold it up).
	RolloutDone RolloutPhase = "Done"
	// RolloutPaused means updateStrategy.paused stops the rollout before it is done.
	RolloutPaused RolloutPhase = "Paused"
	// RolloutStalled means upgraded pods fail to run the new sidecar; the rollout waits for them.
	RolloutStalled RolloutPhase = "Stalled"
)

// SidecarSetRolloutStatus is the state of a rollout.
type SidecarSetRolloutStatus struct {
	// ObservedGeneration is the SidecarSet generation this view was computed for.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LatestRevision is the revision of the current spec.
	LatestRevision string `json:"latestRevision,omitempty"`
	// Paused reports updateStrategy.paused.
	Paused bool `json:"paused,omitempty"`
	// MaxUnavailable is the resolved unavailability budget.
	MaxUnavailable int32 `json:"maxUnavailable"`
	// Partition is the resolved number of pods kept on old revisions.
	Partition int32 `json:"partition"`
	// Unavailable is the number of updated pods that are not available.
	Unavailable int32 `json:"unavailable"`
	// PreDownloading counts the pods whose new sidecar images are being pulled onto their nodes
	// ahead of their upgrade.
	PreDownloading int32 `json:"preDownloading,omitempty"`
	// PreDownloaded counts the pods waiting for their upgrade whose nodes have the new images.
	PreDownloaded int32 `json:"preDownloaded,omitempty"`
	// Revisions lists the revisions pods run, newest first, with their pod counts.
	// +listType=atomic
	Revisions []RolloutRevision `json:"revisions,omitempty"`
	// Pods lists every matched pod with its rollout state.
	// +listType=atomic
	Pods []RolloutPod `json:"pods,omitempty"`
	// Phase is where the rollout stands: Progressing, Done, Paused or Stalled.
	Phase RolloutPhase `json:"phase,omitempty"`
	// Summary is one line on the pods' progress (updated, upgrading, waiting, unavailable, held).
	Summary string `json:"summary,omitempty"`
	// Message says why a Paused or Stalled rollout does not go on; empty otherwise.
	Message string `json:"message,omitempty"`
	// Injection says which admission path injects the SidecarSet into new pods, and why.
	Injection *RolloutInjection `json:"injection,omitempty"`
}

// RolloutInjection is the admission path that injects a SidecarSet.
type RolloutInjection struct {
	// Path is Policy (a MutatingAdmissionPolicy inside kube-apiserver), Webhook, or None.
	Path string `json:"path"`
	// Reason is why: Compiled, or the feature a policy cannot express.
	Reason string `json:"reason,omitempty"`
	// Message explains the reason.
	Message string `json:"message,omitempty"`
	// Policy is the name of the MutatingAdmissionPolicy, for the Policy path.
	Policy string `json:"policy,omitempty"`
}

// RolloutRevision counts the pods that run one revision.
type RolloutRevision struct {
	// Name of the revision; empty for pods whose revision is unknown.
	Name string `json:"name"`
	// Pods running it.
	Pods int32 `json:"pods"`
}

// RolloutPod is the rollout state of one pod.
type RolloutPod struct {
	// Namespace of the pod.
	Namespace string `json:"namespace"`
	// Name of the pod.
	Name string `json:"name"`
	// Revision the pod's sidecars were injected from or last upgraded to.
	Revision string `json:"revision,omitempty"`
	// State is Updated, Upgrading, Waiting, NotUpgradable, Failed or NotInjected.
	State PodRolloutState `json:"state"`
	// Reason says why a pod waits: Partition, MaxUnavailable, NamespaceShare, Paused, NotSelected,
	// NotUpdateStrategy, or NotReady; or why it is not upgradable or failed.
	Reason string `json:"reason,omitempty"`
	// Message is a human readable explanation.
	Message string `json:"message,omitempty"`
	// Batch is, in a preview, the round of the rollout that would upgrade the pod (1 for the
	// first), assuming each round's pods become available before the next; 0 for pods it would
	// not upgrade.
	Batch int32 `json:"batch,omitempty"`
	// PreDownload is PreDownloading while the new sidecar images are pulled onto the pod's node
	// ahead of its upgrade (the annotation apps.kruise.io/image-predownload-parallelism), and
	// PreDownloaded once they are there; empty without pre-download.
	PreDownload string `json:"preDownload,omitempty"`
}
