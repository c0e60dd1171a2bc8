package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +genclient
// +genclient:nonNamespaced
// +genclient:method=GetRevisions,verb=get,subresource=revisions,result=SidecarSetRevisionList
// +genclient:method=GetRollout,verb=get,subresource=rollout,result=SidecarSetRollout
// +genclient:method=Rollout,verb=create,subresource=rollout,input=SidecarSetRollout,result=SidecarSetRollout
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SidecarSet injects sidecar containers into the pods it selects when they are created, and
// upgrades those containers in place when their image changes.
type SidecarSet struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the SidecarSet.
	Spec SidecarSetSpec `json:"spec,omitempty"`
	// Status is the most recently observed state of the SidecarSet, written by the server's controller.
	Status SidecarSetStatus `json:"status,omitempty"`
}

// SidecarSetSpec defines the desired state of a SidecarSet.
type SidecarSetSpec struct {
	// Selector is a label query over pods that should be injected. Required and must not be empty.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Namespace restricts the SidecarSet to pods in this namespace. Empty means all namespaces.
	// Mutually exclusive with namespaceSelector.
	Namespace string `json:"namespace,omitempty"`

	// NamespaceSelector restricts the SidecarSet to pods in namespaces whose labels match.
	// Nil matches every namespace.
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// InitContainers are injected into matching pods at creation only, sorted by name. An init
	// container with restartPolicy Always is a native sidecar and is upgraded in place like a container.
	// +patchMergeKey=name
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=name
	InitContainers []SidecarContainer `json:"initContainers,omitempty" patchStrategy:"merge" patchMergeKey:"name"`

	// Containers are the sidecar containers injected into matching pods and upgraded in place.
	// +patchMergeKey=name
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=name
	Containers []SidecarContainer `json:"containers,omitempty" patchStrategy:"merge" patchMergeKey:"name"`

	// Volumes the sidecar containers may mount. Only volumes that an injected container mounts are
	// added to a pod, and a pod volume of the same name wins.
	// +patchMergeKey=name
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=name
	Volumes []corev1.Volume `json:"volumes,omitempty" patchStrategy:"merge" patchMergeKey:"name"`

	// UpdateStrategy controls how injected pods are upgraded in place when the sidecar image changes.
	UpdateStrategy SidecarSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// InjectionStrategy controls injection into newly created pods.
	InjectionStrategy SidecarSetInjectionStrategy `json:"injectionStrategy,omitempty"`

	// ImagePullSecrets are appended to the pod's imagePullSecrets at injection.
	// +patchMergeKey=name
	// +patchStrategy=merge
	// +listType=atomic
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty" patchStrategy:"merge" patchMergeKey:"name"`

	// RevisionHistoryLimit is the number of SidecarSetRevisions kept. Defaults to 10.
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// PatchPodMetadata lists pod annotations set at injection and, for Overwrite and MergePatchJson,
	// again at each in-place upgrade. Keys must be allowed by the whitelist ConfigMap.
	// +listType=atomic
	PatchPodMetadata []SidecarSetPatchPodMetadata `json:"patchPodMetadata,omitempty"`
}

// SidecarSetPatchPodMetadata is a set of annotations patched into pods with one policy.
type SidecarSetPatchPodMetadata struct {
	// Annotations to patch into the pod.
	Annotations map[string]string `json:"annotations,omitempty"`

	// PatchPolicy is Retain (set only when absent, the default), Overwrite or MergePatchJson.
	PatchPolicy SidecarSetPatchPolicyType `json:"patchPolicy,omitempty"`
}

// SidecarSetPatchPolicyType says how a patched annotation combines with the pod's own value.
type SidecarSetPatchPolicyType string

const (
	// SidecarSetRetainPatchPolicy keeps the pod's value when the annotation exists. Injection only.
	SidecarSetRetainPatchPolicy SidecarSetPatchPolicyType = "Retain"
	// SidecarSetOverwritePatchPolicy always sets the SidecarSet's value.
	SidecarSetOverwritePatchPolicy SidecarSetPatchPolicyType = "Overwrite"
	// SidecarSetMergePatchJsonPatchPolicy applies the value as a JSON merge patch to the pod's value.
	SidecarSetMergePatchJsonPatchPolicy SidecarSetPatchPolicyType = "MergePatchJson"
)

// SidecarContainer is a container injected by a SidecarSet: every field of a core/v1 Container plus
// the injection and upgrade policies. The field order is part of the wire contract: it determines
// the kruise.io/sidecarset-hash annotations.
type SidecarContainer struct {
	corev1.Container `json:",inline"`

	// PodInjectPolicy places the container before (BeforeAppContainer, the default for containers)
	// or after (AfterAppContainer, the default for initContainers) the pod's own containers.
	PodInjectPolicy PodInjectPolicyType `json:"podInjectPolicy,omitempty"`

	// UpgradeStrategy is ColdUpgrade (restart the container with the new image) or HotUpgrade
	// (two containers that hand over to each other).
	UpgradeStrategy SidecarContainerUpgradeStrategy `json:"upgradeStrategy,omitempty"`

	// ShareVolumePolicy, when enabled, mounts the app containers' volume mounts into this sidecar.
	ShareVolumePolicy ShareVolumePolicy `json:"shareVolumePolicy,omitempty"`

	// ShareVolumeDevicePolicy, when enabled, shares the app containers' volume devices with this sidecar.
	ShareVolumeDevicePolicy *ShareVolumePolicy `json:"shareVolumeDevicePolicy,omitempty"`

	// TransferEnv copies environment variables from an app container of the pod.
	// +listType=atomic
	TransferEnv []TransferEnvVar `json:"transferEnv,omitempty"`

	// ResourcesPolicy computes this container's resources from the pod's containers at injection.
	// Cannot be combined with resources.
	// +optional
	ResourcesPolicy *ResourcesPolicy `json:"resourcesPolicy,omitempty"`
}

// ShareVolumePolicy enables or disables volume sharing.
type ShareVolumePolicy struct {
	// Type is enabled or disabled.
	Type ShareVolumePolicyType `json:"type,omitempty"`
}

// PodInjectPolicyType says where a sidecar goes relative to the pod's own containers.
type PodInjectPolicyType string

const (
	// BeforeAppContainerType injects the sidecar in front of the pod's containers.
	BeforeAppContainerType PodInjectPolicyType = "BeforeAppContainer"
	// AfterAppContainerType injects the sidecar after the pod's containers.
	AfterAppContainerType PodInjectPolicyType = "AfterAppContainer"
)

// ShareVolumePolicyType is enabled or disabled.
type ShareVolumePolicyType string

const (
	// ShareVolumePolicyEnabled shares volumes.
	ShareVolumePolicyEnabled ShareVolumePolicyType = "enabled"
	// ShareVolumePolicyDisabled does not share volumes.
	ShareVolumePolicyDisabled ShareVolumePolicyType = "disabled"
)

// TransferEnvVar copies environment variables from a container of the pod into the sidecar.
type TransferEnvVar struct {
	// SourceContainerName is the name of the pod container to copy from.
	SourceContainerName string `json:"sourceContainerName,omitempty"`
	// SourceContainerNameFrom reads the source container name from a pod label or annotation.
	// +optional
	SourceContainerNameFrom *SourceContainerNameSource `json:"sourceContainerNameFrom,omitempty"`
	// EnvName is the name of one variable to copy.
	EnvName string `json:"envName,omitempty"`
	// EnvNames are the names of several variables to copy.
	// +optional
	// +listType=atomic
	EnvNames []string `json:"envNames,omitempty"`
}

// SourceContainerNameSource selects the source container name from pod metadata.
type SourceContainerNameSource struct {
	// FieldRef selects metadata.labels['<KEY>'] or metadata.annotations['<KEY>'] of the pod.
	FieldRef *corev1.ObjectFieldSelector `json:"fieldRef,omitempty"`
}

// ResourcesPolicy computes a sidecar's resources from the pod's target containers at injection.
type ResourcesPolicy struct {
	// TargetContainersMode aggregates the target containers' resources: sum or max.
	TargetContainersMode TargetContainersModeType `json:"targetContainersMode"`

	// TargetContainersNameRegex selects target containers by name (RE2, unanchored). Defaults to ".*"
	// when absent (as OpenKruise's CRD does); an explicit empty value is invalid. Sidecars of
	// matched SidecarSets are never targets. No target rejects the pod.
	// +optional
	TargetContainersNameRegex *string `json:"targetContainersNameRegex,omitempty"`

	// ResourcesExpr holds the expressions that compute the resources.
	ResourcesExpr ResourcesExpr `json:"resourcesExpr"`
}

// TargetContainersModeType says how target containers' resources are aggregated.
type TargetContainersModeType string

const (
	// TargetContainersModeSum sums the target containers' resources.
	TargetContainersModeSum TargetContainersModeType = "sum"
	// TargetContainersModeMax takes the largest of the target containers' resources.
	TargetContainersModeMax TargetContainersModeType = "max"
)

// ResourcesExpr holds resource expressions. An expression supports + - * /, parentheses,
// max(a,b), min(a,b), numbers, percentages, quantities and the variable cpu or memory.
type ResourcesExpr struct {
	// Limits expressions; a limit is left unset when any target container has no such limit.
	// +optional
	Limits *ResourceExprLimits `json:"limits,omitempty"`

	// Requests expressions; a target container without a request counts as zero.
	// +optional
	Requests *ResourceExprRequests `json:"requests,omitempty"`
}

// ResourceExprLimits holds the expressions of limits.
type ResourceExprLimits struct {
	// CPU expression over the variable cpu.
	// +optional
	CPU string `json:"cpu,omitempty"`
	// Memory expression over the variable memory.
	// +optional
	Memory string `json:"memory,omitempty"`
}

// ResourceExprRequests holds the expressions of requests.
type ResourceExprRequests struct {
	// CPU expression over the variable cpu.
	// +optional
	CPU string `json:"cpu,omitempty"`
	// Memory expression over the variable memory.
	// +optional
	Memory string `json:"memory,omitempty"`
}

// SidecarContainerUpgradeType is ColdUpgrade or HotUpgrade.
type SidecarContainerUpgradeType string

const (
	// SidecarContainerColdUpgrade restarts the container with the new image.
	SidecarContainerColdUpgrade SidecarContainerUpgradeType = "ColdUpgrade"
	// SidecarContainerHotUpgrade runs two twins, <name>-1 and <name>-2, that hand over on upgrade.
	SidecarContainerHotUpgrade SidecarContainerUpgradeType = "HotUpgrade"
)

// SidecarContainerUpgradeStrategy says how a sidecar container is upgraded.
type SidecarContainerUpgradeStrategy struct {
	// UpgradeType is ColdUpgrade (default) or HotUpgrade. Immutable once set.
	UpgradeType SidecarContainerUpgradeType `json:"upgradeType,omitempty"`

	// HotUpgradeEmptyImage is the image of the idle twin of a hot-upgrade sidecar: same command and
	// probes, no work.
	HotUpgradeEmptyImage string `json:"hotUpgradeEmptyImage,omitempty"`
}

// SidecarSetInjectionStrategy controls injection into new pods.
type SidecarSetInjectionStrategy struct {
	// Paused stops injection into new pods; injected pods are still upgraded.
	Paused bool `json:"paused,omitempty"`

	// Revision injects a recorded revision instead of the latest spec.
	Revision *SidecarSetInjectRevision `json:"revision,omitempty"`
}

// SidecarSetInjectRevision names the revision injected into new pods.
type SidecarSetInjectRevision struct {
	// CustomVersion selects the newest revision labelled apps.kruise.io/sidecarset-custom-version=<value>.
	// +optional
	CustomVersion *string `json:"customVersion,omitempty"`
	// RevisionName is the name of a SidecarSetRevision.
	// +optional
	RevisionName *string `json:"revisionName,omitempty"`
	// Policy is Always (default: every new pod gets the revision) or Partial (pods selected by
	// updateStrategy.selector, or the partition share of new pods, get the latest spec).
	Policy SidecarSetInjectRevisionPolicy `json:"policy,omitempty"`
}

// SidecarSetInjectRevisionPolicy is Always or Partial.
type SidecarSetInjectRevisionPolicy string

const (
	// AlwaysSidecarSetInjectRevisionPolicy injects the named revision into every new pod.
	AlwaysSidecarSetInjectRevisionPolicy SidecarSetInjectRevisionPolicy = "Always"
	// PartialSidecarSetInjectRevisionPolicy injects the named revision or the latest according to the update strategy.
	PartialSidecarSetInjectRevisionPolicy SidecarSetInjectRevisionPolicy = "Partial"
)

// SidecarSetUpdateStrategy controls in-place upgrades of injected pods.
type SidecarSetUpdateStrategy struct {
	// Type is RollingUpdate (default) or NotUpdate (never touch existing pods).
	Type SidecarSetUpdateStrategyType `json:"type,omitempty"`

	// Paused stops in-place upgrades.
	Paused bool `json:"paused,omitempty"`

	// Selector limits upgrades to the pods it selects (canary).
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Partition is the number or percentage of pods left on the old version. Defaults to 0.
	Partition *intstr.IntOrString `json:"partition,omitempty"`

	// MaxUnavailable is the number or percentage (rounded up) of matched pods that may be
	// unavailable during the upgrade. Defaults to 1.
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// PriorityStrategy orders pods for upgrade by weight or by an ordered label.
	PriorityStrategy *UpdatePriorityStrategy `json:"priorityStrategy,omitempty"`

	// ScatterStrategy spreads pods with the given labels across upgrade batches.
	ScatterStrategy UpdateScatterStrategy `json:"scatterStrategy,omitempty"`
}

// SidecarSetUpdateStrategyType is RollingUpdate or NotUpdate.
type SidecarSetUpdateStrategyType string

const (
	// NotUpdateSidecarSetStrategyType never upgrades existing pods.
	NotUpdateSidecarSetStrategyType SidecarSetUpdateStrategyType = "NotUpdate"
	// RollingUpdateSidecarSetStrategyType upgrades existing pods in place.
	RollingUpdateSidecarSetStrategyType SidecarSetUpdateStrategyType = "RollingUpdate"
)

// UpdatePriorityStrategy orders pods for upgrade. Only one of orderPriority and weightPriority can be set.
type UpdatePriorityStrategy struct {
	// OrderPriority sorts pods by the integer at the end of the value of the first ordered key they carry.
	// +listType=atomic
	OrderPriority []UpdatePriorityOrderTerm `json:"orderPriority,omitempty"`
	// WeightPriority sorts pods by the sum of the weights of the terms they match.
	// +listType=atomic
	WeightPriority []UpdatePriorityWeightTerm `json:"weightPriority,omitempty"`
}

// UpdatePriorityOrderTerm is an order priority term.
type UpdatePriorityOrderTerm struct {
	// OrderedKey is a pod label key; its value's last integer (5 in "sts-5") orders the pods.
	OrderedKey string `json:"orderedKey"`
}

// UpdatePriorityWeightTerm is a weight priority term.
type UpdatePriorityWeightTerm struct {
	// Weight of matching pods, 0-100.
	Weight int32 `json:"weight"`
	// MatchSelector selects pods by label.
	MatchSelector metav1.LabelSelector `json:"matchSelector"`
}

// UpdateScatterStrategy lists label key/value pairs whose pods are spread across upgrade batches.
// A value of "*" stands for every value of the key.
// +listType=atomic
type UpdateScatterStrategy []UpdateScatterTerm

// UpdateScatterTerm is a label key and value.
type UpdateScatterTerm struct {
	// Key of the label.
	Key string `json:"key"`
	// Value of the label, or "*".
	Value string `json:"value"`
}

// The condition types of a SidecarSet's status (status.conditions), which the server sets and
// tools read.
const (
	// SidecarSetInjected is True while new pods the SidecarSet selects get its sidecars, with the
	// admission path as its reason (Policy or Webhook); False when no new pod gets them.
	SidecarSetInjected = "Injected"
	// SidecarSetReady is True once the generation is observed and the rollout is done.
	SidecarSetReady = "Ready"
	// SidecarSetProgressing is True while the rollout goes on by itself.
	SidecarSetProgressing = "Progressing"
	// SidecarSetStalled is True while the rollout waits on pods whose new sidecar does not run.
	SidecarSetStalled = "Stalled"
	// SidecarSetPodsNotInjected is True while pods the SidecarSet selects run without its sidecars.
	SidecarSetPodsNotInjected = "PodsNotInjected"
	// SidecarSetWebhookReceivesEveryPod is True while the SidecarSet leaves the injection webhooks
	// without a label selector.
	SidecarSetWebhookReceivesEveryPod = "WebhookReceivesEveryPod"
	// SidecarSetReconciling is True from the create until the controller has observed a
	// generation (status.observedGeneration set): kstatus (Flux, kubectl wait's tools) reads a
	// status without it or observedGeneration as done.
	SidecarSetReconciling = "Reconciling"
)

// Reasons of the rollout conditions that tools read: Progressing False with ReasonRolloutPaused
// while updateStrategy.paused holds the rollout, Ready False with ReasonInjectionNotReady until
// the generation's injection is in place.
const (
	ReasonRolloutPaused     = "Paused"
	ReasonInjectionNotReady = "InjectionNotReady"
)

// SidecarSetStatus is the observed state of a SidecarSet.
type SidecarSetStatus struct {
	// ObservedGeneration is the generation the status was computed for.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// MatchedPods is the number of active pods this SidecarSet injected.
	MatchedPods int32 `json:"matchedPods"`

	// UpdatedPods is the number of matched pods running the latest sidecar spec.
	UpdatedPods int32 `json:"updatedPods"`

	// ReadyPods is the number of matched pods that are ready and whose sidecars run their spec image.
	ReadyPods int32 `json:"readyPods"`

	// UpdatedReadyPods is the number of matched pods that are both updated and ready.
	UpdatedReadyPods int32 `json:"updatedReadyPods,omitempty"`

	// NotInjectedPods is the number of active pods the SidecarSet selects that run without its
	// sidecars; the sidecarsets/rollout view lists them with state NotInjected.
	// +optional
	NotInjectedPods int32 `json:"notInjectedPods,omitempty"`

	// PreDownloadingPods is the number of pods whose upgrade waits for its new sidecar images to be
	// pulled onto its node (apps.kruise.io/image-predownload-*); PreDownloadedPods, of pods still to
	// upgrade whose node has them.
	// +optional
	PreDownloadingPods int32 `json:"preDownloadingPods,omitempty"`
	// +optional
	PreDownloadedPods int32 `json:"preDownloadedPods,omitempty"`

	// LatestRevision is the name of the SidecarSetRevision of the current spec.
	LatestRevision string `json:"latestRevision,omitempty"`

	// CollisionCount counts revision name collisions; it makes new revision names unique.
	CollisionCount *int32 `json:"collisionCount,omitempty"`

	// InFlightEvictions are the pods the controller evicted whose owners have not replaced them
	// with ready pods yet: each holds a place of maxUnavailable until then, for 10 minutes at
	// most. Kept in the status, as a Job keeps its uncounted pods, so that a new leader and every
	// replica's rollout view count them too.
	// +optional
	// +listType=atomic
	InFlightEvictions []InFlightEviction `json:"inFlightEvictions,omitempty"`

	// NamespaceHolds are the namespaces whose pods hold every place of a cluster SidecarSet's
	// maxUnavailable while pods of other namespaces wait, since when, and whether their hold has
	// lapsed (it does after 10 minutes): kept in the status, so that a leader change neither
	// restarts nor forgets the measure.
	// +optional
	// +listType=atomic
	NamespaceHolds []NamespaceHold `json:"namespaceHolds,omitempty"`

	// Backoffs are the pods whose last upgrade, resize or eviction kube-apiserver refused, left
	// alone until retryAfter (the 100 that retry last): kept in the status, so that a new leader
	// waits as the last one would have, and every replica's rollout view says so.
	// +optional
	// +listType=atomic
	Backoffs []PodBackoff `json:"backoffs,omitempty"`

	// Conditions are the latest observations of the SidecarSet's state: Injected (True while new
	// pods get its sidecars, with the path as reason: Policy, kube-apiserver itself through a
	// MutatingAdmissionPolicy, or Webhook), Ready and Progressing (the rollout), PodsNotInjected
	// and WebhookReceivesEveryPod.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// InFlightEviction is a pod the controller evicted whose owner has not replaced it yet.
type InFlightEviction struct {
	// Namespace and Name of the evicted pod.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// OwnerUID is the UID of the pod's controller (its ReplicaSet, StatefulSet...).
	OwnerUID types.UID `json:"ownerUID"`
	// OwnerPods is how many active pods of the owner the SidecarSet selected when the pod was
	// evicted: the eviction settles once the owner has as many again, every one ready.
	OwnerPods int32 `json:"ownerPods"`
	// Time is when the pod was evicted.
	Time metav1.Time `json:"time"`
}

// PodBackoff is a pod whose last upgrade, resize or eviction kube-apiserver refused.
type PodBackoff struct {
	// Namespace, Name and UID of the pod.
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`
	// Action is what was refused: Upgrade, Resize or Evict.
	Action string `json:"action"`
	// Revision is the SidecarSet's latest revision when it was refused: a new one tries again at
	// once.
	// +optional
	Revision string `json:"revision,omitempty"`
	// Attempts is how many times in a row it was refused.
	Attempts int32 `json:"attempts"`
	// RetryAfter is when the pod is tried again.
	RetryAfter metav1.Time `json:"retryAfter"`
	// Message is kube-apiserver's answer.
	// +optional
	Message string `json:"message,omitempty"`
}

// NamespaceHold is a namespace whose pods hold every place of a cluster SidecarSet's
// maxUnavailable while pods of other namespaces wait for one.
type NamespaceHold struct {
	// Namespace whose pods hold the places.
	Namespace string `json:"namespace"`
	// Since is when the controller first saw them hold every place.
	Since metav1.Time `json:"since"`
	// Lapsed: the hold lasted 10 minutes, and the namespace's pods now count against its share
	// alone.
	// +optional
	Lapsed bool `json:"lapsed,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SidecarSetList is a list of SidecarSets.
type SidecarSetList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items is the list of SidecarSets.
	Items []SidecarSet `json:"items"`
}

// +genclient
// +genclient:method=GetRevisions,verb=get,subresource=revisions,result=SidecarSetRevisionList
// +genclient:method=GetRollout,verb=get,subresource=rollout,result=SidecarSetRollout
// +genclient:method=Rollout,verb=create,subresource=rollout,input=SidecarSetRollout,result=SidecarSetRollout
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NamespacedSidecarSet is a SidecarSet that lives in a namespace and injects only the pods of that
// namespace: namespace owners can write it without the power to inject every namespace. Its spec
// is a SidecarSet's without namespace and namespaceSelector.
type NamespacedSidecarSet struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state, as for a SidecarSet; namespace and namespaceSelector must be empty.
	Spec SidecarSetSpec `json:"spec,omitempty"`
	// Status is the most recently observed state, written by the server's controller.
	Status SidecarSetStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NamespacedSidecarSetList is a list of NamespacedSidecarSets.
type NamespacedSidecarSetList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items is the list of NamespacedSidecarSets.
	Items []NamespacedSidecarSet `json:"items"`
}

// +genclient
// +genclient:nonNamespaced
// +genclient:onlyVerbs=create,get,list,watch
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SidecarSetRevision is an immutable snapshot of the injection-relevant part of a SidecarSet's spec.
// It is labelled apps.kruise.io/sidecarset-name=<name> and carries the SidecarSet's hash annotations.
// The server's controller records them; a client may create one to import a history (OpenKruise's
// ControllerRevisions: kubectl sidecarset migrate), never change or delete one.
type SidecarSetRevision struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// SidecarSetName is the SidecarSet this revision belongs to.
	SidecarSetName string `json:"sidecarSetName"`
	// Revision is the sequence number of this revision within its SidecarSet; higher is newer.
	Revision int64 `json:"revision"`
	// Spec is the recorded part of the SidecarSet spec.
	Spec SidecarSetRevisionSpec `json:"spec"`
}

// SidecarSetRevisionSpec is the part of a SidecarSet spec that a revision records.
type SidecarSetRevisionSpec struct {
	// InitContainers of the SidecarSet.
	// +listType=atomic
	InitContainers []SidecarContainer `json:"initContainers,omitempty"`
	// Containers of the SidecarSet.
	// +listType=atomic
	Containers []SidecarContainer `json:"containers,omitempty"`
	// Volumes of the SidecarSet.
	// +listType=atomic
	Volumes []corev1.Volume `json:"volumes,omitempty"`
	// ImagePullSecrets of the SidecarSet.
	// +listType=atomic
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// PatchPodMetadata of the SidecarSet.
	// +listType=atomic
	PatchPodMetadata []SidecarSetPatchPodMetadata `json:"patchPodMetadata,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SidecarSetRevisionList is a list of SidecarSetRevisions, newest first when returned by
// sidecarsets/revisions.
type SidecarSetRevisionList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items is the list of revisions.
	Items []SidecarSetRevision `json:"items"`
}

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
