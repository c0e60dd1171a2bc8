package sidecar

import (
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// RenderOptions tune Render.
type RenderOptions struct {
	// Init renders a SidecarSet init container: hot-upgrade twins are then produced only for a
	// native sidecar (restartPolicy Always), as OpenKruise does.
	Init bool
	// Resources, when non-nil, replaces the container's resources: the result of its
	// resourcesPolicy, computed by the caller at pod creation.
	Resources *corev1.ResourceRequirements
	// IsSidecar, when set, reports pod container names that are sidecars about to be replaced
	// by injection; like containers carrying IS_INJECTED=true, they share no volume mounts or
	// devices. Without it a pod container that a sidecar overwrites would share its mounts on
	// the first injection but not on a reinvocation.
	IsSidecar func(name string) bool
}

// Rendered is one SidecarSet container as it appears in a given pod.
type Rendered struct {
	// Containers are the pod containers: the sidecar itself, or for a hot-upgrade sidecar X the
	// working twin X-1 (the real image) followed by the idle twin X-2 (hotUpgradeEmptyImage).
	Containers []corev1.Container
	// Annotations are the pod annotations the containers need: the version and versionalt
	// annotations of hot-upgrade twins; nil for other sidecars.
	Annotations map[string]string
	// Working is the working twin of a hot-upgrade sidecar, "" for other sidecars; the
	// caller records it in WorkingHotUpgradeContainerAnnotation under the sidecar's name.
	Working string
	// VolumeNames are the names referenced by the container's own volumeMounts then volumeDevices,
	// in order (shared mounts and devices excluded): the SidecarSet volumes the pod needs.
	VolumeNames []string
}

// Render turns SidecarSet container sc into the pod container(s) it becomes in pod, which is
// the pod as submitted (after patchPodMetadata, before any sidecar is merged). Neither input is
// modified. The pipeline is OpenKruise's (§4.6-4.7):
//
//  1. resources replaced by opts.Resources when set;
//  2. with shareVolumePolicy enabled, every volumeMount of the pod's containers that are not
//     sidecars (no IS_INJECTED=true env, not opts.IsSidecar), plus the env vars their
//     subPathExpr references;
//  3. transferEnv: for each entry, the sorted union of envName and envNames copied (whole EnvVar)
//     from the source container, named directly or read from a pod label/annotation; missing
//     sources are skipped;
//  4. mounts: own mounts, then shared mounts whose mountPath is not used by an own mount or device;
//  5. env: own env, IS_INJECTED=true appended, then transferred then subPathExpr env whose names
//     are not present yet;
//  6. with shareVolumeDevicePolicy enabled, the app containers' volumeDevices whose devicePath is
//     not used yet;
//  7. hot upgrade: twins with SIDECARSET_VERSION and SIDECARSET_VERSION_ALT appended.
func Render(sc *v1alpha1.SidecarContainer, pod *corev1.Pod, opts RenderOptions) Rendered {
	var c corev1.Container
	sc.Container.DeepCopyInto(&c) // env is copied again below, with room to grow
	if opts.Resources != nil {
		c.Resources = corev1.ResourceRequirements{}
		opts.Resources.DeepCopyInto(&c.Resources)
	}
	out := Rendered{VolumeNames: ownVolumeNames(&c)}

	sharedMounts, subPathEnvs := sharedVolumeMounts(sc, pod, opts.IsSidecar)
	transfer := mergeEnv(TransferEnvs(sc, pod), subPathEnvs)
	c.VolumeMounts = mergeVolumeMounts(&c, sharedMounts)
	env := make([]corev1.EnvVar, len(c.Env), len(c.Env)+1+len(transfer)+2) // +2: hot-upgrade version env
	copy(env, c.Env)
	c.Env = append(env, corev1.EnvVar{Name: InjectedEnv, Value: "true"})
	c.Env = mergeEnv(c.Env, transfer)
	c.VolumeDevices = mergeVolumeDevices(&c, sharedVolumeDevices(sc, pod, opts.IsSidecar))

	if !HasTwins(sc, opts.Init) {
		out.Containers = []corev1.Container{c}
		return out
	}
	name1, name2 := HotUpgradeNames(sc.Name)
	c1, c2 := c, corev1.Container{}
	c.DeepCopyInto(&c2)
	c1.Name, c2.Name = name1, name2
	c2.Image = sc.UpgradeStrategy.HotUpgradeEmptyImage
	c1.Env = appendVersionEnv(c1.Env, name1)
	c2.Env = appendVersionEnv(c2.Env, name2)
	out.Containers = []corev1.Container{c1, c2}
	out.Working = name1
	out.Annotations = map[string]string{
		VersionAnnotation(name1):    "1",
		VersionAltAnnotation(name1): "0",
		VersionAnnotation(name2):    "0",
		VersionAltAnnotation(name2): "1",
	}
	return out
}

// appendVersionEnv appends SIDECARSET_VERSION and SIDECARSET_VERSION_ALT reading the twin's own
// version annotations. The fieldRef apiVersion is set to v1, the value kube-apiserver defaults
// OpenKruise's empty one to, so that re-running injection on the stored pod changes nothing.
func appendVersionEnv(env []corev1.EnvVar, container string) []corev1.EnvVar {
	refs := &struct { // one allocation for the four referenced objects
		src [2]corev1.EnvVarSource
		sel [2]corev1.ObjectFieldSelector
	}{}
	refs.sel[0] = corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.annotations['" + VersionAnnotationPrefix + container + "']"}
	refs.sel[1] = corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.annotations['" + VersionAltAnnotationPrefix + container + "']"}
	refs.src[0].FieldRef, refs.src[1].FieldRef = &refs.sel[0], &refs.sel[1]
	return append(env,
		corev1.EnvVar{Name: VersionEnv, ValueFrom: &refs.src[0]},
		corev1.EnvVar{Name: VersionAltEnv, ValueFrom: &refs.src[1]},
	)
}

func ownVolumeNames(c *corev1.Container) []string {
	if len(c.VolumeMounts)+len(c.VolumeDevices) == 0 {
		return nil
	}
	names := make([]string, 0, len(c.VolumeMounts)+len(c.VolumeDevices))
	for i := range c.VolumeMounts {
		names = append(names, c.VolumeMounts[i].Name)
	}
	for i := range c.VolumeDevices {
		names = append(names, c.VolumeDevices[i].Name)
	}
	return names
}

// subPathExprEnv matches the $(NAME) references of a subPathExpr.
var subPathExprEnv = regexp.MustCompile(`\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)`)

// sharedVolumeMounts returns the app containers' volumeMounts and the env vars their
// subPathExpr references, when sc shares volumes.
func sharedVolumeMounts(sc *v1alpha1.SidecarContainer, pod *corev1.Pod, isSidecar func(string) bool) ([]corev1.VolumeMount, []corev1.EnvVar) {
	if sc.ShareVolumePolicy.Type != v1alpha1.ShareVolumePolicyEnabled {
		return nil, nil
	}
	var mounts []corev1.VolumeMount
	var envs []corev1.EnvVar
	for i := range pod.Spec.Containers {
		app := &pod.Spec.Containers[i]
		if !isApp(app, isSidecar) {
			continue
		}
		for _, m := range app.VolumeMounts {
			mounts = append(mounts, m)
			if !strings.Contains(m.SubPathExpr, "$(") {
				continue
			}
			for _, ref := range subPathExprEnv.FindAllStringSubmatch(m.SubPathExpr, -1) {
				if e := findEnv(app.Env, ref[1]); e != nil {
					envs = append(envs, *e)
				}
			}
		}
	}
	return mounts, envs
}

// sharedVolumeDevices returns the app containers' volumeDevices when sc shares devices.
func sharedVolumeDevices(sc *v1alpha1.SidecarContainer, pod *corev1.Pod, isSidecar func(string) bool) []corev1.VolumeDevice {
	if sc.ShareVolumeDevicePolicy == nil || sc.ShareVolumeDevicePolicy.Type != v1alpha1.ShareVolumePolicyEnabled {
		return nil
	}
	var devices []corev1.VolumeDevice
	for i := range pod.Spec.Containers {
		if app := &pod.Spec.Containers[i]; isApp(app, isSidecar) {
			devices = append(devices, app.VolumeDevices...)
		}
	}
	return devices
}

// isApp reports whether pod container c is an app container whose volumes sidecars may share.
func isApp(c *corev1.Container, isSidecar func(string) bool) bool {
	return !IsInjected(c) && (isSidecar == nil || !isSidecar(c.Name))
}

// TransferEnvs returns the env vars sc's transferEnv copies from pod's containers, in entry
// order and, within an entry, in sorted name order. The source container is sourceContainerName
// or, when sourceContainerNameFrom.fieldRef is set, the value of the pod label or annotation it
// addresses (metadata.labels['k'] or metadata.annotations['k']; any other path skips the entry).
// Missing containers and env vars are skipped. The whole EnvVar, valueFrom included, is copied.
func TransferEnvs(sc *v1alpha1.SidecarContainer, pod *corev1.Pod) []corev1.EnvVar {
	if len(sc.TransferEnv) == 0 {
		return nil
	}
	type key struct{ container, env string }
	inPod := map[key]corev1.EnvVar{}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		for _, e := range c.Env {
			inPod[key{c.Name, e.Name}] = e
		}
	}
	var out []corev1.EnvVar
	for _, t := range sc.TransferEnv {
		source := t.SourceContainerName
		if t.SourceContainerNameFrom != nil && t.SourceContainerNameFrom.FieldRef != nil {
			name, ok := containerNameFromFieldPath(t.SourceContainerNameFrom.FieldRef.FieldPath, pod)
			if !ok {
				continue
			}
			source = name
		}
		for _, name := range transferEnvNames(&t) {
			if e, ok := inPod[key{source, name}]; ok {
				out = append(out, e)
			}
		}
	}
	return out
}

func transferEnvNames(t *v1alpha1.TransferEnvVar) []string {
	names := make([]string, 0, 1+len(t.EnvNames))
	if t.EnvName != "" {
		names = append(names, t.EnvName)
	}
	names = append(names, t.EnvNames...)
	return normalizeNames(names)
}

// containerNameFromFieldPath reads metadata.labels['k'] or metadata.annotations['k'] of pod. It
// fails for other paths and for keys that are not qualified names (annotation keys are checked
// lower-cased), like OpenKruise's ExtractContainerNameFromFieldPath.
func containerNameFromFieldPath(fieldPath string, pod *corev1.Pod) (string, bool) {
	path, subscript, ok := apps.SplitSubscriptedPath(fieldPath)
	if !ok {
		return "", false
	}
	switch path {
	case "metadata.annotations":
		if len(validation.IsQualifiedName(strings.ToLower(subscript))) != 0 {
			return "", false
		}
		return pod.Annotations[subscript], true
	case "metadata.labels":
		if len(validation.IsQualifiedName(subscript)) != 0 {
			return "", false
		}
		return pod.Labels[subscript], true
	}
	return "", false
}

func findEnv(env []corev1.EnvVar, name string) *corev1.EnvVar {
	for i := range env {
		if env[i].Name == name {
			return &env[i]
		}
	}
	return nil
}

// mergeEnv appends the vars of additional whose names are not in original (nor added before).
// Duplicates already in original are kept, as OpenKruise's MergeEnvVar does.
func mergeEnv(original, additional []corev1.EnvVar) []corev1.EnvVar {
	if len(additional) == 0 {
		return original
	}
	seen := make(map[string]struct{}, len(original)+len(additional))
	for i := range original {
		seen[original[i].Name] = struct{}{}
	}
	for _, e := range additional {
		if _, ok := seen[e.Name]; ok {
			continue
		}
		original = append(original, e)
		seen[e.Name] = struct{}{}
	}
	return original
}

// mergeVolumeMounts returns c's mounts followed by the additional mounts whose mountPath is not
// used by c's mounts, c's devices or an earlier additional mount.
func mergeVolumeMounts(c *corev1.Container, additional []corev1.VolumeMount) []corev1.VolumeMount {
	if len(additional) == 0 {
		return c.VolumeMounts
	}
	used := make(map[string]struct{}, len(c.VolumeMounts)+len(c.VolumeDevices)+len(additional))
	for i := range c.VolumeMounts {
		used[c.VolumeMounts[i].MountPath] = struct{}{}
	}
	for i := range c.VolumeDevices {
		used[c.VolumeDevices[i].DevicePath] = struct{}{}
	}
	out := c.VolumeMounts
	for _, m := range additional {
		if _, ok := used[m.MountPath]; ok {
			continue
		}
		out = append(out, m)
		used[m.MountPath] = struct{}{}
	}
	return out
}

// mergeVolumeDevices returns c's devices followed by the additional devices whose devicePath is
// not used by c's devices, c's mounts or an earlier additional device.
func mergeVolumeDevices(c *corev1.Container, additional []corev1.VolumeDevice) []corev1.VolumeDevice {
	if len(additional) == 0 {
		return c.VolumeDevices
	}
	used := make(map[string]struct{}, len(c.VolumeMounts)+len(c.VolumeDevices)+len(additional))
	for i := range c.VolumeDevices {
		used[c.VolumeDevices[i].DevicePath] = struct{}{}
	}
	for i := range c.VolumeMounts {
		used[c.VolumeMounts[i].MountPath] = struct{}{}
	}
	out := c.VolumeDevices
	for _, d := range additional {
		if _, ok := used[d.DevicePath]; ok {
			continue
		}
		out = append(out, d)
		used[d.DevicePath] = struct{}{}
	}
	return out
}

// SidecarList returns the sorted names a SidecarSet manages in a pod, as recorded in the hash
// annotation's sidecarList: every container name plus the native-sidecar init container names.
func SidecarList(containers, initContainers []v1alpha1.SidecarContainer) []string {
	names := make([]string, 0, len(containers)+len(initContainers))
	for sc := range RunningContainers(containers, initContainers) {
		names = append(names, sc.Name)
	}
	return normalizeNames(names)
}

// TransferEnvSkip is a part of a transferEnv entry that copies nothing into the sidecar.
type TransferEnvSkip struct {
	// Index is the entry's index in the sidecar's transferEnv.
	Index int
	// Message says what is missing: the source container, or one of its env vars.
	Message string
}

// SkippedTransferEnvs returns what TransferEnvs skips for sc in pod, in entry order: entries
// whose source container name cannot be read or is absent from the pod, and env names the
// source container lacks.
func SkippedTransferEnvs(sc *v1alpha1.SidecarContainer, pod *corev1.Pod) []TransferEnvSkip {
	var out []TransferEnvSkip
	for i := range sc.TransferEnv {
		t := &sc.TransferEnv[i]
		source := t.SourceContainerName
		if t.SourceContainerNameFrom != nil && t.SourceContainerNameFrom.FieldRef != nil {
			path := t.SourceContainerNameFrom.FieldRef.FieldPath
			name, ok := containerNameFromFieldPath(path, pod)
			if !ok {
				out = append(out, TransferEnvSkip{Index: i, Message: "sourceContainerNameFrom " + path + " cannot be read"})
				continue
			}
			source = name
		}
		c := findContainer(pod.Spec.Containers, source)
		if c == nil {
			out = append(out, TransferEnvSkip{Index: i, Message: "source container \"" + source + "\" is not in the pod"})
			continue
		}
		for _, name := range transferEnvNames(t) {
			if findEnv(c.Env, name) == nil {
				out = append(out, TransferEnvSkip{Index: i, Message: "container \"" + source + "\" has no env var \"" + name + "\""})
			}
		}
	}
	return out
}

func findContainer(containers []corev1.Container, name string) *corev1.Container {
	for i := range containers {
		if containers[i].Name == name {
			return &containers[i]
		}
	}
	return nil
}
