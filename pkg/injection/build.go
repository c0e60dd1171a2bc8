package injection

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// injectedContainer is a rendered sidecar with its placement policy and SidecarSet.
type injectedContainer struct {
	c      *corev1.Container // points into a sidecar.Rendered's Containers
	policy v1alpha1.PodInjectPolicyType
	set    string
}

// builder collects what the SidecarSets inject into one pod (§4.6), then merges it (§4.9).
type builder struct {
	pod   *corev1.Pod // the pod after patchPodMetadata; its containers are still the submitted ones
	views []view
	now   time.Time
	eval  ResourceEvaluator

	hashes             sidecar.HashMap
	hashesWithoutImage sidecar.HashMap
	working            map[string]string
	workingChanged     bool
	names              []string
	annotations        map[string]string

	initContainers []injectedContainer
	containers     []injectedContainer
	volumes        []corev1.Volume
	secrets        []corev1.LocalObjectReference

	targets   []*corev1.Container // resourcesPolicy targets, computed on first use
	isSidecar func(string) bool   // isSidecarName, bound once
	injected  map[string]bool
	warnings  []Warning
	any       bool
	present   []*v1alpha1.SidecarSet // matching SidecarSets already injected (Options.SkipInjected)
}

func build(pod *corev1.Pod, views []view, present []*v1alpha1.SidecarSet, in *Input) (*builder, error) {
	b := &builder{pod: pod, views: views, present: present, now: in.Now, eval: in.Options.Evaluator, injected: make(map[string]bool, len(views))}
	var nInit, nContainers int
	for i := range views {
		for j := range views[i].initContainers {
			nInit += podContainerCount(&views[i].initContainers[j], true)
		}
		for j := range views[i].containers {
			nContainers += podContainerCount(&views[i].containers[j], false)
		}
	}
	b.initContainers = make([]injectedContainer, 0, nInit)
	b.containers = make([]injectedContainer, 0, nContainers)
	var err error
	if b.hashes, err = sidecar.ParseHashMap(pod.Annotations[sidecar.HashAnnotation]); err != nil {
		return nil, newError("", "metadata.annotations["+sidecar.HashAnnotation+"]", err)
	}
	if b.hashesWithoutImage, err = sidecar.ParseHashMap(pod.Annotations[sidecar.HashWithoutImageAnnotation]); err != nil {
		return nil, newError("", "metadata.annotations["+sidecar.HashWithoutImageAnnotation+"]", err)
	}
	b.isSidecar = b.isSidecarName
	b.hashes, b.hashesWithoutImage = presized(b.hashes, len(views)), presized(b.hashesWithoutImage, len(views))
	b.working = sidecar.WorkingContainers(pod.Annotations)
	b.names = sidecar.ParseInjectedList(pod.Annotations[sidecar.InjectedListAnnotation])
	for i := range views {
		if err := b.add(&views[i]); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// add renders one SidecarSet: init containers (with its imagePullSecrets), then containers.
func (b *builder) add(v *view) error {
	name := v.ss.Name
	b.names = append(b.names, name)
	injecting := false
	for i := range v.initContainers {
		if err := b.render(v, &v.initContainers[i], true, i); err != nil {
			return err
		}
		injecting = true
	}
	b.secrets = append(b.secrets, v.imagePullSecrets...)
	for i := range v.containers {
		if err := b.render(v, &v.containers[i], false, i); err != nil {
			return err
		}
		injecting = true
	}
	if !injecting {
		return nil
	}
	b.any, b.injected[name] = true, true
	list := sidecar.SidecarList(v.containers, v.initContainers) // sorted, shared by both entries
	ts := metav1.NewTime(b.now)
	setEntry(b.hashes, sidecar.HashEntry{UpdateTimestamp: ts, Hash: v.hash, SidecarSetName: name, SidecarList: list, ControllerRevision: v.controllerRevision})
	setEntry(b.hashesWithoutImage, sidecar.HashEntry{UpdateTimestamp: ts, Hash: v.hashWithoutImage, SidecarSetName: name, SidecarList: list})
	return nil
}

// podContainerCount is len(sidecar.PodContainerNames(sc, init)), without allocating.
func podContainerCount(sc *v1alpha1.SidecarContainer, init bool) int {
	if sidecar.HasTwins(sc, init) {
		return 2
	}
	return 1
}

// presized returns m, or an empty map with room for n entries when m is empty.
func presized(m sidecar.HashMap, n int) sidecar.HashMap {
	if len(m) > 0 {
		return m
	}
	return make(sidecar.HashMap, n)
}

// setEntry records e unless the map holds an entry with the same content, whose timestamp is
// then kept (so that reinvocation changes nothing).
func setEntry(m sidecar.HashMap, e sidecar.HashEntry) {
	if old, ok := m[e.SidecarSetName]; ok && old.SameContent(e) {
		return
	}
	m[e.SidecarSetName] = e
}

func (b *builder) render(v *view, sc *v1alpha1.SidecarContainer, init bool, index int) error {
	var resources *corev1.ResourceRequirements
	if sc.ResourcesPolicy != nil {
		var err error
		if resources, err = sidecar.PolicyResources(sc.ResourcesPolicy, b.resourceTargets(), b.eval); err != nil {
			kind := "containers"
			if init {
				kind = "initContainers"
			}
			return newError(v.ss.Name, fmt.Sprintf("spec.%s[%d].resourcesPolicy", kind, index), err)
		}
	}
	r := sidecar.Render(sc, b.pod, sidecar.RenderOptions{Init: init, Resources: resources, IsSidecar: b.isSidecar})
	b.warnSkipped(v, sc, init, index, &r)
	for _, n := range r.VolumeNames {
		if vol := findVolume(v.volumes, n); vol != nil {
			b.volumes = append(b.volumes, *vol)
		}
	}
	dst := &b.containers
	if init {
		dst = &b.initContainers
	}
	for i := range r.Containers {
		*dst = append(*dst, injectedContainer{c: &r.Containers[i], policy: sc.PodInjectPolicy, set: v.ss.Name})
	}
	if r.Working != "" {
		b.working[sc.Name] = r.Working
		b.workingChanged = true
		if b.annotations == nil {
			b.annotations = map[string]string{}
		}
		for k, val := range r.Annotations {
			b.annotations[k] = val
		}
	}
	return nil
}

// warnSkipped records a warning for each part of sc that the pod does not get as the SidecarSet
// says: transferEnv sources the pod lacks, SidecarSet volumes whose name a different pod volume
// already has (the pod's wins), and pod containers of the pod's own that the sidecar replaces.
func (b *builder) warnSkipped(v *view, sc *v1alpha1.SidecarContainer, init bool, index int, r *sidecar.Rendered) {
	path := func() string { // formatted only for a warning: this runs for every injected pod
		if init {
			return fmt.Sprintf("spec.initContainers[%d]", index)
		}
		return fmt.Sprintf("spec.containers[%d]", index)
	}
	for _, skip := range sidecar.SkippedTransferEnvs(sc, b.pod) {
		b.warn(v.ss.Name, fmt.Sprintf("%s.transferEnv[%d]", path(), skip.Index), skip.Message+"; nothing copied")
	}
	for _, n := range r.VolumeNames {
		vol := findVolume(v.volumes, n)
		if own := findVolume(b.pod.Spec.Volumes, n); vol != nil && own != nil && !equality.Semantic.DeepEqual(vol, own) {
			b.warn(v.ss.Name, fmt.Sprintf("spec.volumes[%d]", volumeIndex(v.volumes, vol)),
				fmt.Sprintf("the pod already has a different volume %q, which the sidecar mounts instead", n))
		}
	}
	for i := range r.Containers {
		name := r.Containers[i].Name
		if c := findContainer(b.pod.Spec.Containers, b.pod.Spec.InitContainers, name, init); c != nil && !sidecar.IsInjected(c) {
			b.warn(v.ss.Name, path(), fmt.Sprintf("replaces the pod's own container %q", name))
		}
	}
}

func (b *builder) warn(set, field, message string) {
	b.warnings = append(b.warnings, Warning{SidecarSet: set, Field: field, Message: message})
}

// volumeIndex returns the index of vol, a pointer into volumes.
func volumeIndex(volumes []corev1.Volume, vol *corev1.Volume) int {
	for i := range volumes {
		if &volumes[i] == vol {
			return i
		}
	}
	return -1
}

// findContainer returns the pod container (or init container, when init) named name, or nil.
func findContainer(containers, initContainers []corev1.Container, name string, init bool) *corev1.Container {
	list := containers
	if init {
		list = initContainers
	}
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// findVolume returns the last volume named name (OpenKruise indexes them in a map).
func findVolume(volumes []corev1.Volume, name string) *corev1.Volume {
	for i := len(volumes) - 1; i >= 0; i-- {
		if volumes[i].Name == name {
			return &volumes[i]
		}
	}
	return nil
}

// resourceTargets returns the pod's native sidecar init containers and containers that are not
// sidecars of any injected SidecarSet (by name, hot-upgrade twins included), as submitted.
func (b *builder) resourceTargets() []*corev1.Container {
	if b.targets != nil {
		return b.targets
	}
	b.targets = make([]*corev1.Container, 0, len(b.pod.Spec.InitContainers)+len(b.pod.Spec.Containers))
	for i := range b.pod.Spec.InitContainers {
		if c := &b.pod.Spec.InitContainers[i]; sidecar.IsNativeSidecar(c) && !b.isSidecarName(c.Name) {
			b.targets = append(b.targets, c)
		}
	}
	for i := range b.pod.Spec.Containers {
		if c := &b.pod.Spec.Containers[i]; !b.isSidecarName(c.Name) {
			b.targets = append(b.targets, c)
		}
	}
	return b.targets
}

// isSidecarName reports whether name is the name of a container or init container of an
// injected SidecarSet, or of one of its hot-upgrade twins, including the SidecarSets already
// injected earlier in the admission (Options.SkipInjected).
func (b *builder) isSidecarName(name string) bool {
	for i := range b.views {
		if sidecarOf(name, b.views[i].initContainers, b.views[i].containers) {
			return true
		}
	}
	for _, ss := range b.present {
		if sidecarOf(name, ss.Spec.InitContainers, ss.Spec.Containers) {
			return true
		}
	}
	return false
}

// sidecarOf reports whether name is one of the sidecars or their hot-upgrade twins.
func sidecarOf(name string, lists ...[]v1alpha1.SidecarContainer) bool {
	for _, list := range lists {
		for j := range list {
			if name == list[j].Name || (sidecar.IsHotUpgrade(&list[j]) && sidecar.IsTwinName(name, list[j].Name)) {
				return true
			}
		}
	}
	return false
}

// apply merges what was collected into pod (§4.9).
func (b *builder) apply(pod *corev1.Pod, sortContainersByName bool) {
	sort.SliceStable(b.initContainers, func(i, j int) bool { return b.initContainers[i].c.Name < b.initContainers[j].c.Name })
	containers, initContainers := b.presentSidecars()
	pod.Spec.InitContainers = mergeContainers(pod.Spec.InitContainers, b.initContainers, initContainers, true)
	if sortContainersByName {
		sort.SliceStable(b.containers, func(i, j int) bool { return b.containers[i].c.Name < b.containers[j].c.Name })
	}
	pod.Spec.Containers = mergeContainers(pod.Spec.Containers, b.containers, containers, sortContainersByName)
	pod.Spec.Volumes = mergeVolumes(pod.Spec.Volumes, b.volumes)
	pod.Spec.ImagePullSecrets = mergeSecrets(pod.Spec.ImagePullSecrets, b.secrets)

	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	for k, v := range b.annotations {
		pod.Annotations[k] = v
	}
	if b.workingChanged {
		pod.Annotations[sidecar.WorkingHotUpgradeContainerAnnotation] = sidecar.RenderWorkingContainers(b.working)
	}
	pod.Annotations[sidecar.HashAnnotation] = b.hashes.String()
	pod.Annotations[sidecar.HashWithoutImageAnnotation] = b.hashesWithoutImage.String()
	pod.Annotations[sidecar.InjectedListAnnotation] = sidecar.RenderInjectedList(b.names)
}

// owner says which SidecarSet a sidecar already in the pod belongs to, and on which side.
type owner struct {
	set    string
	before bool
}

// presentSidecars maps the names of the containers and init containers of the SidecarSets
// already injected to their owner.
func (b *builder) presentSidecars() (containers, initContainers map[string]owner) {
	if len(b.present) == 0 {
		return nil, nil
	}
	containers, initContainers = map[string]owner{}, map[string]owner{}
	for _, ss := range b.present {
		for _, list := range []struct {
			items []v1alpha1.SidecarContainer
			into  map[string]owner
		}{{ss.Spec.Containers, containers}, {ss.Spec.InitContainers, initContainers}} {
			for i := range list.items {
				sc := &list.items[i]
				list.into[sc.Name] = owner{set: ss.Name, before: sc.PodInjectPolicy == v1alpha1.BeforeAppContainerType}
			}
		}
	}
	return containers, initContainers
}

// slot is a container of the merged list: the pod's own (own), or a sidecar of SidecarSet set
// injected before or after the pod's own.
type slot struct {
	c      *corev1.Container
	own    bool
	set    string
	before bool
}

// mergeContainers merges the injected sidecars into the pod's containers. A pod container with a
// sidecar's name is replaced in place; the other sidecars go in front of the pod's own containers
// (BeforeAppContainer) or after them. Among the sidecars on one side, the order is SidecarSet
// name then spec order, or the container name when byName. present names the sidecars the pod
// already carries (injected earlier in the admission, see Options.SkipInjected), which the new
// ones are placed among by the same order.
func mergeContainers(pod []corev1.Container, injected []injectedContainer, present map[string]owner, byName bool) []corev1.Container {
	if len(injected) == 0 {
		return pod
	}
	slots := make([]slot, 0, len(pod)+len(injected))
	for i := range pod {
		o, ok := present[pod[i].Name]
		if ok && sidecar.IsInjected(&pod[i]) {
			slots = append(slots, slot{c: &pod[i], set: o.set, before: o.before})
		} else {
			slots = append(slots, slot{c: &pod[i], own: true})
		}
	}
	for k := range injected {
		s := &injected[k]
		if i := ownSlot(slots, s.c.Name); i >= 0 {
			slots[i].c = s.c
			continue
		}
		n := slot{c: s.c, set: s.set, before: s.policy == v1alpha1.BeforeAppContainerType}
		i := insertAt(slots, &n, byName)
		slots = append(slots, slot{})
		copy(slots[i+1:], slots[i:])
		slots[i] = n
	}
	out := make([]corev1.Container, len(slots))
	for i := range slots {
		out[i] = *slots[i].c
	}
	return out
}

// ownSlot returns the index of the pod's own container named name, or -1.
func ownSlot(slots []slot, name string) int {
	for i := range slots {
		if slots[i].own && slots[i].c.Name == name {
			return i
		}
	}
	return -1
}

// insertAt returns where sidecar n goes: a Before one after the leading sidecars that precede it,
// another one in front of the first sidecar behind the pod's last own container that follows it.
func insertAt(slots []slot, n *slot, byName bool) int {
	precedes := func(s *slot) bool { // s comes before n on the same side
		if byName {
			return s.c.Name < n.c.Name
		}
		return s.set <= n.set
	}
	if n.before {
		i := 0
		for i < len(slots) && !slots[i].own && slots[i].before && precedes(&slots[i]) {
			i++
		}
		return i
	}
	i := len(slots)
	for i > 0 && !slots[i-1].own {
		i--
	}
	for i < len(slots) && (slots[i].before || precedes(&slots[i])) {
		i++
	}
	return i
}

// mergeVolumes appends the SidecarSet volumes whose name the pod (or an earlier one) lacks.
func mergeVolumes(pod, additional []corev1.Volume) []corev1.Volume {
	if len(additional) == 0 {
		return pod
	}
	seen := make(map[string]bool, len(pod)+len(additional))
	for i := range pod {
		seen[pod[i].Name] = true
	}
	for _, v := range additional {
		if !seen[v.Name] {
			pod = append(pod, v)
			seen[v.Name] = true
		}
	}
	return pod
}

// mergeSecrets returns the pod's pull secrets deduplicated by name, then the SidecarSets' ones
// not present yet.
func mergeSecrets(pod, additional []corev1.LocalObjectReference) []corev1.LocalObjectReference {
	if len(pod)+len(additional) == 0 {
		return pod
	}
	seen := make(map[string]bool, len(pod)+len(additional))
	var out []corev1.LocalObjectReference
	for _, s := range append(append([]corev1.LocalObjectReference(nil), pod...), additional...) {
		if !seen[s.Name] {
			seen[s.Name] = true
			out = append(out, s)
		}
	}
	return out
}
