package sidecar

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HashEntry is one SidecarSet's entry in the HashAnnotation and HashWithoutImageAnnotation pod
// annotations. The field order and JSON names are OpenKruise's SidecarSetUpgradeSpec.
type HashEntry struct {
	// UpdateTimestamp is when the entry was written (RFC 3339, second precision).
	UpdateTimestamp metav1.Time `json:"updateTimestamp"`
	// Hash is the SidecarSet's kruise.io/sidecarset-hash (or -hash-without-image) at that time.
	Hash string `json:"hash"`
	// SidecarSetName is the name of the SidecarSet.
	SidecarSetName string `json:"sidecarSetName"`
	// SidecarList is the sorted list of the SidecarSet's container names and native-sidecar init
	// container names (base names, never the hot-upgrade twins ).
	SidecarList []string `json:"sidecarList"`
	// ControllerRevision is the name of the SidecarSetRevision the sidecars come from; never set
	// in the without-image annotation.
	ControllerRevision string `json:"controllerRevision,omitempty"`
}

// NewHashEntry returns an entry stamped at now. sidecarList is copied and sorted; a nil list
// renders as [].
func NewHashEntry(sidecarSetName, hash, controllerRevision string, sidecarList []string, now time.Time) HashEntry {
	list := append(make([]string, 0, len(sidecarList)), sidecarList...)
	sort.Strings(list)
	return HashEntry{
		UpdateTimestamp:    metav1.NewTime(now),
		Hash:               hash,
		SidecarSetName:     sidecarSetName,
		SidecarList:        list,
		ControllerRevision: controllerRevision,
	}
}

// SameContent reports whether e and o are equal except for their timestamps.
func (e HashEntry) SameContent(o HashEntry) bool {
	if e.Hash != o.Hash || e.SidecarSetName != o.SidecarSetName || e.ControllerRevision != o.ControllerRevision ||
		len(e.SidecarList) != len(o.SidecarList) {
		return false
	}
	for i := range e.SidecarList {
		if e.SidecarList[i] != o.SidecarList[i] {
			return false
		}
	}
	return true
}

// HashMap is the decoded value of HashAnnotation or HashWithoutImageAnnotation: SidecarSet name
// to entry.
type HashMap map[string]HashEntry

// ParseHashMap decodes a hash annotation value. "" decodes to an empty map. The legacy flat form
// {"<sidecarset>": "<hash>"} is accepted and converted to entries with only Hash and
// SidecarSetName set, as OpenKruise's webhook does. Anything else is an error.
func ParseHashMap(value string) (HashMap, error) {
	m := HashMap{}
	if value == "" {
		return m, nil
	}
	if err := json.Unmarshal([]byte(value), &m); err == nil {
		if m == nil {
			m = HashMap{}
		}
		return m, nil
	}
	legacy := map[string]string{}
	if err := json.Unmarshal([]byte(value), &legacy); err != nil {
		return nil, fmt.Errorf("invalid sidecarset hash annotation %q: %w", value, err)
	}
	m = make(HashMap, len(legacy))
	for name, hash := range legacy {
		m[name] = HashEntry{Hash: hash, SidecarSetName: name}
	}
	return m, nil
}

// String renders the map as OpenKruise does: encoding/json, keys sorted.
func (m HashMap) String() string {
	size := 2
	for k, e := range m {
		size += 2*len(k) + len(e.Hash) + len(e.ControllerRevision) + 128
		for _, s := range e.SidecarList {
			size += len(s) + 3
		}
	}
	var w strings.Builder
	w.Grow(size)
	writeHashMap(&w, m)
	return w.String()
}

// PodHashEntry returns the entry of sidecarSetName in the pod annotation key (HashAnnotation or
// HashWithoutImageAnnotation). A missing or malformed annotation reads as no entry.
func PodHashEntry(annotations map[string]string, key, sidecarSetName string) (HashEntry, bool) {
	m, err := ParseHashMap(annotations[key])
	if err != nil {
		return HashEntry{}, false
	}
	e, ok := m[sidecarSetName]
	return e, ok
}

// SetHashEntry sets the entry of e.SidecarSetName in the annotation key of annotations, keeping
// the other SidecarSets' entries (a legacy flat value is converted). It fails, leaving
// annotations unchanged, when the existing value is malformed.
func SetHashEntry(annotations map[string]string, key string, e HashEntry) error {
	m, err := ParseHashMap(annotations[key])
	if err != nil {
		return err
	}
	m[e.SidecarSetName] = e
	annotations[key] = m.String()
	return nil
}

// ParseInjectedList decodes InjectedListAnnotation: the names, sorted, without duplicates or
// empty names.
func ParseInjectedList(value string) []string {
	if value == "" {
		return nil
	}
	return normalizeNames(strings.Split(value, ","))
}

// RenderInjectedList renders names as InjectedListAnnotation: sorted, deduplicated, comma-joined.
func RenderInjectedList(names []string) string {
	return strings.Join(normalizeNames(append([]string(nil), names...)), ",")
}

// InjectedListHas reports, without allocating, whether list, a value of InjectedListAnnotation,
// names sidecarSetName as injected.
func InjectedListHas(list, sidecarSetName string) bool {
	if sidecarSetName == "" {
		return false
	}
	for list != "" {
		var n string
		n, list, _ = strings.Cut(list, ",")
		if n == sidecarSetName {
			return true
		}
	}
	return false
}

func normalizeNames(names []string) []string {
	sort.Strings(names)
	out := names[:0]
	for i, n := range names {
		if n == "" || (i > 0 && n == names[i-1]) {
			continue
		}
		out = append(out, n)
	}
	return out
}

// WorkingContainers decodes WorkingHotUpgradeContainerAnnotation: hot-upgrade sidecar name to
// the working twin's name. A missing or malformed value reads as an empty map (OpenKruise does
// the same), so the result is never nil and may be modified by the caller.
func WorkingContainers(annotations map[string]string) map[string]string {
	m := map[string]string{}
	if v, ok := annotations[WorkingHotUpgradeContainerAnnotation]; ok {
		if err := json.Unmarshal([]byte(v), &m); err != nil || m == nil {
			return map[string]string{}
		}
	}
	return m
}

// RenderWorkingContainers renders a working-container map (keys sorted).
func RenderWorkingContainers(m map[string]string) string {
	var w strings.Builder
	w.Grow(32*len(m) + 2)
	writeStringMap(&w, m)
	return w.String()
}

// InPlaceUpdateState is one SidecarSet's entry in InPlaceUpdateStateAnnotation (the fields of
// OpenKruise's pub.InPlaceUpdateState that SidecarSets use).
type InPlaceUpdateState struct {
	// Revision is the SidecarSet hash at the first in-place update of the pod.
	Revision string `json:"revision"`
	// UpdateTimestamp is the time of the first in-place update.
	UpdateTimestamp metav1.Time `json:"updateTimestamp"`
	// LastContainerStatuses records, per changed pod container, its status before the update.
	LastContainerStatuses map[string]InPlaceUpdateContainerStatus `json:"lastContainerStatuses"`
}

// InPlaceUpdateContainerStatus is a container status recorded before an in-place update. ImageID
// is OpenKruise's field; the others are ours (OpenKruise ignores them) and let completion be
// decided by the container's restart rather than by an imageID change, which never comes when old
// and new images share a digest.
type InPlaceUpdateContainerStatus struct {
	// ImageID is the container status imageID (raw, with its scheme) before the update.
	ImageID string `json:"imageID,omitempty"`
	// ContainerID is the container status containerID before the update.
	ContainerID string `json:"containerID,omitempty"`
	// RestartCount is the container status restartCount before the update.
	RestartCount int32 `json:"restartCount,omitempty"`
	// PodGeneration is the pod's metadata.generation before the update: the kubelet has seen the
	// update once status.observedGeneration exceeds it.
	PodGeneration int64 `json:"podGeneration,omitempty"`
}

// ParseInPlaceUpdateStates decodes InPlaceUpdateStateAnnotation. "" decodes to an empty map.
func ParseInPlaceUpdateStates(value string) (map[string]*InPlaceUpdateState, error) {
	m := map[string]*InPlaceUpdateState{}
	if value == "" {
		return m, nil
	}
	if err := json.Unmarshal([]byte(value), &m); err != nil {
		return nil, fmt.Errorf("invalid sidecarset in-place update state %q: %w", value, err)
	}
	if m == nil {
		m = map[string]*InPlaceUpdateState{}
	}
	return m, nil
}

// RecordInPlaceUpdate records an in-place update of sidecarSetName in the annotations, in place:
// the SidecarSet's entry is created on its first update (revision = hash, timestamp = now) and
// otherwise kept; before[c] is recorded for every changed container c. A malformed existing
// value is replaced, as OpenKruise does.
func RecordInPlaceUpdate(annotations map[string]string, sidecarSetName, hash string, now time.Time,
	changed []string, before map[string]InPlaceUpdateContainerStatus) {
	states, err := ParseInPlaceUpdateStates(annotations[InPlaceUpdateStateAnnotation])
	if err != nil {
		states = map[string]*InPlaceUpdateState{}
	}
	st := states[sidecarSetName]
	if st == nil {
		st = &InPlaceUpdateState{Revision: hash, UpdateTimestamp: metav1.NewTime(now)}
		states[sidecarSetName] = st
	}
	if st.LastContainerStatuses == nil {
		st.LastContainerStatuses = map[string]InPlaceUpdateContainerStatus{}
	}
	for _, c := range changed {
		st.LastContainerStatuses[c] = before[c]
	}
	data, err := json.Marshal(states)
	if err != nil {
		panic(fmt.Sprintf("sidecar: marshal in-place update state: %v", err)) // unreachable
	}
	annotations[InPlaceUpdateStateAnnotation] = string(data)
}

// StatusBefore returns what RecordInPlaceUpdate keeps of a pod container's current state.
func StatusBefore(pod *corev1.Pod, container string) InPlaceUpdateContainerStatus {
	out := InPlaceUpdateContainerStatus{PodGeneration: pod.Generation}
	if st := ContainerStatus(pod, container); st != nil {
		out.ImageID, out.ContainerID, out.RestartCount = st.ImageID, st.ContainerID, st.RestartCount
	}
	return out
}

// ContainerStatus returns the status of the pod container (regular, then init) named name, or nil.
func ContainerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}
