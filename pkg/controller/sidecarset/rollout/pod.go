package rollout

import (
	"hash/maphash"
	"sort"
	"time"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// Pod is what planning reads of a pod, and all the controller's pod cache keeps of one: tens of
// thousands of pods must stay small. The SidecarSet annotations are decoded once, when the pod
// enters the cache, for the SidecarSets it lists as injected; strings many pods repeat (names of
// namespaces and containers, images, image IDs, label keys and values, hashes, revisions) are
// stored once (see text); container IDs are kept as hashes, since planning only compares them.
type Pod struct {
	Namespace, Name string
	UID             types.UID
	ResourceVersion string
	Created         time.Time
	// Deleting is set once the pod has a deletionTimestamp.
	Deleting  bool
	Scheduled bool // spec.nodeName is set
	// Ready is the Ready condition; ReadySince its last transition when True.
	Ready      bool
	ReadySince time.Time
	Phase      corev1.PodPhase
	// ObservedGeneration is status.observedGeneration.
	ObservedGeneration int64
	Labels             Labels
	// Hashes and HashesWithoutImage are the entries of the injected SidecarSets in the hash
	// annotations.
	Hashes, HashesWithoutImage []HashRef
	// states are the injected SidecarSets' entries in the upgrade-state annotation.
	states []stateRef
	// Records are the in-place update records of the injected SidecarSets; RecordsMalformed
	// says the record annotation does not decode (nothing recorded in it can be trusted).
	Records          []Record
	RecordsMalformed bool
	// Containers are the regular containers, then the init containers, with their statuses.
	Containers []Container
	// upgradable is the SidecarSetUpgradable condition, nil when the pod has none (see Upgradable).
	upgradable *condition
	// resize is the kubelet's pending or in-progress resize of the pod, nil when none (see Resize).
	resize *condition

	namespace text // holds Namespace's shared copy
	node      text // spec.nodeName (see Node)
	injected  text // the injected-list annotation
	owner     text // the UID of the pod's controller, which its many pods share (see Owner)
	// working is the working hot-upgrade container annotation, decoded: pairs of a sidecar name
	// and its working twin, sorted by sidecar (see Working).
	working Labels
}

// Working returns the working twin of hot-upgrade sidecar name the pod's annotation records.
func (p *Pod) Working(name string) (string, bool) { return p.working.Lookup(name) }

// HotUpgradeTwins returns the working and the idle twin of hot-upgrade sidecar name
// (sidecar.HotUpgradeTwins).
func (p *Pod) HotUpgradeTwins(name string) (working, idle string) {
	w, _ := p.Working(name)
	return sidecar.HotUpgradeTwinsOf(name, w)
}

// Node is the name of the pod's node, "" before it is scheduled.
func (p *Pod) Node() string { return p.node.String() }

// Owner is the UID of the pod's controller (a workload that recreates it), "" for a bare pod.
func (p *Pod) Owner() types.UID { return types.UID(p.owner.String()) }

// condition is what the cache keeps of a pod condition: its texts are the same in most pods
// (the SidecarSetUpgradable condition of the pods of one SidecarSet says the same).
type condition struct {
	kind, status, reason, message text
	since                         time.Time
}

func newCondition(c *corev1.PodCondition) *condition {
	return &condition{kind: newText(string(c.Type)), status: newText(string(c.Status)), reason: newText(c.Reason),
		message: newText(c.Message), since: c.LastTransitionTime.Time}
}

// Upgradable returns the SidecarSetUpgradable condition, nil when the pod has none.
func (p *Pod) Upgradable() *corev1.PodCondition {
	if p.upgradable == nil {
		return nil
	}
	c := p.upgradable
	return &corev1.PodCondition{Type: sidecar.UpgradableCondition, Status: corev1.ConditionStatus(c.status.String()),
		Reason: c.reason.String(), Message: c.message.String(), LastTransitionTime: metav1.NewTime(c.since)}
}

// UpgradableMessage is the message of the SidecarSetUpgradable condition, "" when the pod has none.
func (p *Pod) UpgradableMessage() string {
	if p.upgradable == nil {
		return ""
	}
	return p.upgradable.message.String()
}

// text is a string many pods share, stored once for as long as a pod holds it. Two texts are
// equal iff their strings are.
type text struct{ h unique.Handle[string] }

func newText(s string) text { return text{unique.Make(s)} }

func (t text) String() string {
	if t == (text{}) {
		return ""
	}
	return t.h.Value()
}

// Container is a pod container (regular or init) and its status.
type Container struct {
	name, image text
	// resources is the spec's resources (resourcesText), shared by the containers that ask the same.
	resources text
	Init      bool
	// Injected says the container is a sidecar (its env has IS_INJECTED=true); NativeSidecar
	// that it is an init container with restartPolicy Always.
	Injected, NativeSidecar bool
	// Resized says the status reports the spec's cpu and memory (or reports no resources): no
	// resize of the container is outstanding. NoStatusResources says the status reports the
	// container without resources: its kubelet cannot resize it (kube-apiserver refuses a resize
	// of such a running container).
	Resized, NoStatusResources bool
	// HasStatus says whether the pod status reports the container; the fields below are its.
	HasStatus    bool
	Ready        bool
	RestartCount int32
	statusImage  text
	imageID      text
	ContainerID  ContainerID
	waiting      text
}

// Name is the container's name.
func (c *Container) Name() string { return c.name.String() }

// Image is the spec image.
func (c *Container) Image() string { return c.image.String() }

// StatusImage is the image the status reports.
func (c *Container) StatusImage() string { return c.statusImage.String() }

// ImageID is the status imageID.
func (c *Container) ImageID() string { return c.imageID.String() }

// Waiting is the reason of a waiting state, "" when not waiting.
func (c *Container) Waiting() string { return c.waiting.String() }

// ContainerID identifies a container instance (a hash of its containerID, 0 for none).
type ContainerID uint64

var containerIDSeed = maphash.MakeSeed()

// ContainerIDOf returns the ContainerID of a containerID string.
func ContainerIDOf(id string) ContainerID {
	if id == "" {
		return 0
	}
	return ContainerID(maphash.String(containerIDSeed, id) | 1)
}

// HashRef is one SidecarSet's entry in a hash annotation.
type HashRef struct {
	sidecarSet, hash, revision text
	// atCreation: the entry was written when the pod was created (its injection), not by an
	// in-place upgrade since (see InjectedAtCreation).
	atCreation bool
}

// AtCreation reports whether the entry was written when the pod was created: by its injection,
// not by an in-place upgrade.
func (r HashRef) AtCreation() bool { return r.atCreation }

// creationSkew is how much later than a pod's creation its injection's entry may be dated and
// still count as written at its creation: the injection happens before kube-apiserver stores the
// pod (and dates it), both times are in whole seconds, and the server's clock and kube-apiserver's
// may differ a little. An in-place upgrade comes later: it needs the pod running.
const creationSkew = 2 * time.Second

// Hash is the entry's hash.
func (r HashRef) Hash() string { return r.hash.String() }

// Revision is the entry's controllerRevision.
func (r HashRef) Revision() string { return r.revision.String() }

// stateRef is one SidecarSet's entry in the upgrade-state annotation.
type stateRef struct {
	sidecarSet, revision, state, reason text
	notReadyBefore                      bool
}

// UpgradeState returns the SidecarSet's entry in the upgrade-state annotation.
func (p *Pod) UpgradeState(sidecarSet string) (sidecar.UpgradeState, bool) {
	for _, s := range p.states {
		if s.sidecarSet.String() == sidecarSet {
			return sidecar.UpgradeState{Revision: s.revision.String(), State: s.state.String(), Reason: s.reason.String(),
				NotReadyBefore: s.notReadyBefore}, true
		}
	}
	return sidecar.UpgradeState{}, false
}

// Record is one container's state recorded before an in-place upgrade by a SidecarSet.
type Record struct {
	sidecarSet, container text
	imageID               text
	ContainerID           ContainerID
	RestartCount          int32
	PodGeneration         int64
	// ImageIDOnly marks a record holding only an imageID, as OpenKruise writes.
	ImageIDOnly bool
}

// Labels are a pod's labels as key, value pairs sorted by key; they implement labels.Labels.
type Labels []text

// Map returns the labels as a map.
func (l Labels) Map() map[string]string {
	m := make(map[string]string, len(l)/2)
	for i := 0; i+1 < len(l); i += 2 {
		m[l[i].String()] = l[i+1].String()
	}
	return m
}

// Lookup returns the value of key and whether it is set.
func (l Labels) Lookup(key string) (string, bool) {
	i := sort.Search(len(l)/2, func(i int) bool { return l[2*i].String() >= key })
	if i < len(l)/2 && l[2*i].String() == key {
		return l[2*i+1].String(), true
	}
	return "", false
}

// Has reports whether key is set.
func (l Labels) Has(key string) bool { _, ok := l.Lookup(key); return ok }

// Get returns the value of key, "" when unset.
func (l Labels) Get(key string) string { v, _ := l.Lookup(key); return v }

// NewLabels returns the pairs of m.
func NewLabels(m map[string]string) Labels {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(Labels, 0, 2*len(keys))
	for _, k := range keys {
		out = append(out, newText(k), newText(m[k]))
	}
	return out
}

// GetObjectMeta returns the pod's identity, for the cache's keys and namespace index.
func (p *Pod) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID, ResourceVersion: p.ResourceVersion}
}

// Ref returns a reference to the pod, to record events on.
func (p *Pod) Ref() *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: p.Namespace, Name: p.Name,
		UID: p.UID, ResourceVersion: p.ResourceVersion}
}

// Container returns the container (regular first, then init) named name, or nil.
func (p *Pod) Container(name string) *Container {
	for i := range p.Containers {
		if p.Containers[i].name.String() == name {
			return &p.Containers[i]
		}
	}
	return nil
}

// InjectedList is the injected-list annotation as written.
func (p *Pod) InjectedList() string { return p.injected.String() }

// Hash returns the SidecarSet's entry in the hash annotation.
func (p *Pod) Hash(sidecarSet string) (HashRef, bool) { return findHash(p.Hashes, sidecarSet) }

// HashWithoutImage returns the SidecarSet's entry in the hash-without-image annotation.
func (p *Pod) HashWithoutImage(sidecarSet string) (HashRef, bool) {
	return findHash(p.HashesWithoutImage, sidecarSet)
}

func findHash(refs []HashRef, sidecarSet string) (HashRef, bool) {
	for _, r := range refs {
		if r.sidecarSet.String() == sidecarSet {
			return r, true
		}
	}
	return HashRef{}, false
}

// Record returns the SidecarSet's record of container c.
func (p *Pod) Record(sidecarSet, c string) (Record, bool) {
	for _, r := range p.Records {
		if r.sidecarSet.String() == sidecarSet && r.container.String() == c {
			return r, true
		}
	}
	return Record{}, false
}

// UpgradedInPlaceBy reports whether the pod records an in-place image upgrade by sidecarSet.
func (p *Pod) UpgradedInPlaceBy(sidecarSet string) bool {
	for _, r := range p.Records {
		if r.sidecarSet.String() == sidecarSet {
			return true
		}
	}
	return false
}

// NewPod returns what planning reads of pod.
func NewPod(pod *corev1.Pod) *Pod {
	p := &Pod{
		Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion, namespace: newText(pod.Namespace),
		Created: pod.CreationTimestamp.Time, Deleting: pod.DeletionTimestamp != nil, Scheduled: pod.Spec.NodeName != "",
		Phase: phase(pod.Status.Phase), ObservedGeneration: pod.Status.ObservedGeneration, Labels: NewLabels(pod.Labels),
	}
	if pod.Spec.NodeName != "" {
		p.node = newText(pod.Spec.NodeName)
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		p.owner = newText(string(ref.UID))
	}
	p.Namespace = p.namespace.String()
	seenReady := false
	for i := range pod.Status.Conditions { // the first condition of a type counts
		switch c := &pod.Status.Conditions[i]; {
		case isResizeCondition(c) && c.Status == corev1.ConditionTrue && (p.resize == nil || c.Type == corev1.PodResizePending):
			p.resize = newCondition(c) // pending says more than in progress: a newer resize waits
		case c.Type == corev1.PodReady && !seenReady:
			seenReady = true
			if p.Ready = c.Status == corev1.ConditionTrue; p.Ready {
				p.ReadySince = c.LastTransitionTime.Time
			}
		case c.Type == sidecar.UpgradableCondition && p.upgradable == nil:
			p.upgradable = newCondition(c)
		}
	}
	p.Containers = make([]Container, 0, len(pod.Spec.Containers)+len(pod.Spec.InitContainers))
	p.Containers = appendContainers(p.Containers, pod.Spec.Containers, pod.Status.ContainerStatuses, false)
	p.Containers = appendContainers(p.Containers, pod.Spec.InitContainers, pod.Status.InitContainerStatuses, true)
	p.decodeAnnotations(pod.Annotations)
	return p
}

// phase returns the constant of a known phase, so that pods do not each hold a copy.
func phase(ph corev1.PodPhase) corev1.PodPhase {
	for _, known := range []corev1.PodPhase{corev1.PodRunning, corev1.PodPending, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown} {
		if ph == known {
			return known
		}
	}
	return ph
}

func appendContainers(out []Container, spec []corev1.Container, statuses []corev1.ContainerStatus, init bool) []Container {
	for i := range spec {
		c := Container{name: newText(spec[i].Name), image: newText(spec[i].Image), Init: init,
			resources: newText(resourcesText(&spec[i].Resources)), Injected: sidecar.IsInjected(&spec[i]),
			NativeSidecar: init && sidecar.IsNativeSidecar(&spec[i]), Resized: true}
		for j := range statuses {
			if st := &statuses[j]; st.Name == spec[i].Name {
				c.Resized = sidecar.ResizeSettled(&spec[i].Resources, st.Resources)
				c.NoStatusResources = st.Resources == nil && st.State.Running != nil
				c.HasStatus, c.Ready, c.RestartCount = true, st.Ready, st.RestartCount
				c.statusImage, c.imageID, c.ContainerID = newText(st.Image), newText(st.ImageID), ContainerIDOf(st.ContainerID)
				if st.State.Waiting != nil {
					c.waiting = newText(st.State.Waiting.Reason)
				}
				break
			}
		}
		out = append(out, c)
	}
	return out
}

// decodeAnnotations keeps the SidecarSet annotations: the injected list, and the entries of the
// SidecarSets it names in the hash annotations and the in-place update record.
func (p *Pod) decodeAnnotations(a map[string]string) {
	p.injected = newText(a[sidecar.InjectedListAnnotation])
	if v, ok := a[sidecar.WorkingHotUpgradeContainerAnnotation]; ok {
		p.working = NewLabels(sidecar.WorkingContainers(map[string]string{sidecar.WorkingHotUpgradeContainerAnnotation: v}))
	}
	record := a[sidecar.InPlaceUpdateStateAnnotation]
	var states map[string]sidecar.UpgradeState
	if v := a[sidecar.UpgradeStateAnnotation]; v != "" {
		states = sidecar.UpgradeStates(v)
	}
	for _, name := range sidecar.ParseInjectedList(p.InjectedList()) {
		ss := newText(name)
		if st, ok := states[name]; ok {
			p.states = append(p.states, stateRef{sidecarSet: ss, revision: newText(st.Revision), state: newText(st.State), reason: newText(st.Reason), notReadyBefore: st.NotReadyBefore})
		}
		if e, ok := sidecar.LookupHashEntry(a[sidecar.HashAnnotation], name); ok {
			atCreation := !p.Created.IsZero() && !e.UpdateTimestamp.Time.After(p.Created.Add(creationSkew))
			p.Hashes = append(p.Hashes, HashRef{sidecarSet: ss, hash: newText(e.Hash), revision: newText(e.ControllerRevision), atCreation: atCreation})
		}
		if hash, rev, ok := sidecar.LookupHash(a[sidecar.HashWithoutImageAnnotation], name); ok {
			p.HashesWithoutImage = append(p.HashesWithoutImage, HashRef{sidecarSet: ss, hash: newText(hash), revision: newText(rev)})
		}
		if record == "" || p.RecordsMalformed {
			continue
		}
		recs, err := sidecar.LookupInPlaceUpdate(record, name)
		if err != nil {
			p.RecordsMalformed, p.Records = true, nil
			continue
		}
		for _, r := range recs {
			st := r.Status
			p.Records = append(p.Records, Record{sidecarSet: ss, container: newText(r.Name), imageID: newText(st.ImageID),
				ContainerID: ContainerIDOf(st.ContainerID), RestartCount: st.RestartCount, PodGeneration: st.PodGeneration,
				ImageIDOnly: st.ContainerID == "" && st.RestartCount == 0 && st.PodGeneration == 0})
		}
	}
}
