package podvalidation

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install" // v1 defaults and conversions in legacyscheme
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/capabilities"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/install"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/apis/apps/validation"
	"github.com/sidecarset/apiserver/pkg/injection"
)

const (
	// appContainer is the pod's own container.
	appContainer = "app-zz"
	// volumeUser is the container the harness adds to the SidecarSet so that every volume is
	// mounted, and so injected into the pod.
	volumeUser = "zz-volume-user"
	// indexEnv is the env var that carries the index of a sidecar in the SidecarSet.
	indexEnv = "ZZ_SIDECAR_INDEX"
)

// appsScheme decodes and defaults SidecarSets as this server does.
var appsScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

func init() {
	// Privileged containers are the cluster's policy (kube-apiserver --allow-privileged), which
	// the SidecarSet validation leaves to kube-apiserver; most clusters allow them.
	capabilities.Initialize(capabilities.Capabilities{AllowPrivileged: true})
}

// sidecars is what a case puts into a SidecarSet.
type sidecars struct {
	Containers     []v1alpha1.SidecarContainer
	InitContainers []v1alpha1.SidecarContainer
	Volumes        []corev1.Volume
}

// result is the outcome of one case on both sides, as canonical "path type" strings.
type result struct {
	ours, kube sets.Set[string]
	// podDependent are kube-apiserver's errors on sidecar fields that another pod would not
	// have; podLevel are its errors on the pod itself (not on a sidecar field).
	podDependent, podLevel []string
	oursRaw, kubeRaw       field.ErrorList
}

func (r result) rejectedByUs() bool   { return r.ours.Len() > 0 }
func (r result) rejectedByKube() bool { return r.kube.Len() > 0 }
func (r result) same() bool           { return r.ours.Equal(r.kube) && len(r.wordingDiffers()) == 0 }

// wordingDiffers lists kube-apiserver's errors whose words this server does not give: for each,
// no error of ours on the same path and of the same type has a detail that it begins with or that
// begins with it (kube-apiserver may add what depends on the pod, this server what only a
// SidecarSet explains). Users match on these words, as they do on OpenKruise's, which returns
// kube-apiserver's.
func (r result) wordingDiffers() []string {
	var out []string
	for _, k := range r.kubeRaw {
		if !slices.ContainsFunc(r.oursRaw, func(o *field.Error) bool { return sameWords(o, k) }) {
			out = append(out, k.Error())
		}
	}
	return out
}

func sameWords(ours, kube *field.Error) bool {
	return canonical(ours) == canonical(kube) && (strings.HasPrefix(ours.Detail, kube.Detail) || strings.HasPrefix(kube.Detail, ours.Detail))
}

func (r result) String() string {
	return fmt.Sprintf("ours: %v\nkube: %v\nkube's words we do not give: %v\nours (raw): %v\nkube (raw): %v\npod-dependent: %v\npod-level: %v",
		sets.List(r.ours), sets.List(r.kube), r.wordingDiffers(), r.oursRaw, r.kubeRaw, r.podDependent, r.podLevel)
}

// run validates the SidecarSet made of in with this server's validation, injects it into a pod
// and validates the pod as kube-apiserver does, and returns both sets of errors on the sidecar
// fields, canonicalized. The SidecarSet is validated whole (validation.ValidateSidecarSet, which
// validates its pod fields with package podfields), not with podfields alone: the SidecarSet
// rules on those fields count too (a HotUpgrade sidecar binds no host port, since the injector
// adds it twice), and the errors on the SidecarSet-only fields are left out.
func run(t testing.TB, in sidecars) result {
	t.Helper()
	wire := storedSidecarSet(t, in)
	var res result

	internal := &apps.SidecarSet{}
	if err := appsScheme.Convert(wire.DeepCopy(), internal, nil); err != nil {
		t.Fatalf("converting the SidecarSet: %v", err)
	}
	for _, e := range validation.ValidateSidecarSet(internal) {
		if sidecarField(e.Field) {
			res.oursRaw = append(res.oursRaw, e)
		}
	}
	res.ours = canonicalSet(res.oursRaw)

	pod := injectedPod(t, wire)
	opts := podutil.GetValidationOptionsFromPodSpecAndMeta(&pod.Spec, nil, &pod.ObjectMeta, nil)
	opts.ResourceIsPod = true
	m := newMapper(wire, pod)
	for _, e := range corevalidation.ValidatePodCreate(pod, opts) {
		mapped, ok := m.mapPath(initHostPortPath(e, pod))
		switch {
		case !ok:
			res.podLevel = append(res.podLevel, e.Error())
		case podDependent(e, mapped, wire):
			res.podDependent = append(res.podDependent, e.Error())
		default:
			me := *e
			me.Field = mapped
			res.kubeRaw = append(res.kubeRaw, &me)
		}
	}
	res.kube = canonicalSet(res.kubeRaw)
	return res
}

// storedSidecarSet returns the SidecarSet of in as the server stores it: sent as JSON, decoded
// and defaulted. A container mounting every volume is added first.
func storedSidecarSet(t testing.TB, in sidecars) *v1alpha1.SidecarSet {
	t.Helper()
	ss := &v1alpha1.SidecarSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "SidecarSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "diff"},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "diff"}},
			Containers:     slices.Clone(in.Containers),
			InitContainers: slices.Clone(in.InitContainers),
			Volumes:        in.Volumes,
		},
	}
	user := v1alpha1.SidecarContainer{Container: corev1.Container{Name: volumeUser, Image: "busybox:1.36"}}
	used := sets.New[string]()
	for _, list := range [][]v1alpha1.SidecarContainer{in.Containers, in.InitContainers} {
		for _, c := range list {
			for _, m := range c.VolumeMounts {
				used.Insert(m.Name)
			}
			for _, d := range c.VolumeDevices {
				used.Insert(d.Name)
			}
		}
	}
	for i, v := range in.Volumes {
		if !used.Has(v.Name) {
			used.Insert(v.Name)
			user.VolumeMounts = append(user.VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: "/" + volumeUser + "/" + strconv.Itoa(i)})
		}
	}
	if len(user.VolumeMounts) > 0 || len(ss.Spec.Containers) == 0 {
		ss.Spec.Containers = append(ss.Spec.Containers, user)
	}
	// Mark each container with its index: the injector may reorder containers of one name.
	for _, list := range []*[]v1alpha1.SidecarContainer{&ss.Spec.Containers, &ss.Spec.InitContainers} {
		*list = slices.Clone(*list)
		for i := range *list {
			c := &(*list)[i]
			c.Env = append(slices.Clone(c.Env), corev1.EnvVar{Name: indexEnv, Value: strconv.Itoa(i)})
		}
	}
	data, err := json.Marshal(ss)
	if err != nil {
		t.Fatalf("encoding the SidecarSet: %v", err)
	}
	wire := &v1alpha1.SidecarSet{}
	if err := json.Unmarshal(data, wire); err != nil {
		t.Fatalf("decoding the SidecarSet: %v", err)
	}
	appsScheme.Default(wire)
	return wire
}

// injectedPod injects ss into a pod that matches it and returns the pod as kube-apiserver
// validates it: decoded from JSON, defaulted, converted and stripped of disabled fields.
func injectedPod(t testing.TB, ss *v1alpha1.SidecarSet) *core.Pod {
	t.Helper()
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "diff-pod", Namespace: "default", Labels: map[string]string{"app": "diff"}},
		Spec: corev1.PodSpec{
			Containers:                   []corev1.Container{{Name: appContainer, Image: "nginx:1.27"}},
			ServiceAccountName:           "default",
			AutomountServiceAccountToken: ptr.To(false),
			// Long enough for any lifecycle sleep: that bound is the pod's, not the sidecar's.
			TerminationGracePeriodSeconds: ptr.To[int64](math.MaxInt64),
		},
	}
	res, err := injection.Inject(injection.Input{Pod: pod, SidecarSets: []*v1alpha1.SidecarSet{ss.DeepCopy()}, Now: time.Unix(0, 0)})
	if err != nil {
		t.Fatalf("injecting: %v", err)
	}
	data, err := json.Marshal(res.Pod)
	if err != nil {
		t.Fatalf("encoding the pod: %v", err)
	}
	v1pod := &corev1.Pod{}
	if err := json.Unmarshal(data, v1pod); err != nil {
		t.Fatalf("decoding the pod: %v", err)
	}
	legacyscheme.Scheme.Default(v1pod)
	out := &core.Pod{}
	if err := legacyscheme.Scheme.Convert(v1pod, out, nil); err != nil {
		t.Fatalf("converting the pod: %v", err)
	}
	podutil.DropDisabledPodFields(out, nil)
	return out
}

// sidecarOnlyFields are the SidecarContainer fields that are not corev1.Container fields.
var sidecarOnlyFields = sets.New("podInjectPolicy", "upgradeStrategy", "shareVolumePolicy",
	"shareVolumeDevicePolicy", "transferEnv", "resourcesPolicy")

var itemPath = regexp.MustCompile(`^spec\.(containers|initContainers|volumes)\[(\d+)\](.*)$`)

// sidecarField reports whether path is a corev1.Container field of a sidecar or a volume field.
func sidecarField(path string) bool {
	m := itemPath.FindStringSubmatch(path)
	if m == nil {
		return false
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(m[3], "."), ".")
	first, _, _ = strings.Cut(first, "[")
	return !sidecarOnlyFields.Has(first)
}

// mapper maps the field paths of the injected pod to the SidecarSet's.
type mapper struct {
	// containers and initContainers give, for each pod container index, the SidecarSet index
	// (-1 for the pod's own container).
	containers, initContainers []int
	volumes                    map[string]int
	podVolumes                 []string
}

func newMapper(ss *v1alpha1.SidecarSet, pod *core.Pod) *mapper {
	m := &mapper{volumes: map[string]int{}}
	m.containers = mapContainers(pod.Spec.Containers)
	m.initContainers = mapContainers(pod.Spec.InitContainers)
	for i, v := range ss.Spec.Volumes {
		m.volumes[v.Name] = i // the injector takes the last volume of a name
	}
	for _, v := range pod.Spec.Volumes {
		m.podVolumes = append(m.podVolumes, v.Name)
	}
	return m
}

// mapContainers returns, for each pod container, the index of the SidecarSet container it was
// made from (its indexEnv), -1 for the pod's own.
func mapContainers(pod []core.Container) []int {
	out := make([]int, len(pod))
	for k, c := range pod {
		out[k] = -1
		for _, e := range c.Env {
			if e.Name == indexEnv {
				out[k], _ = strconv.Atoi(e.Value)
			}
		}
	}
	return out
}

func (m *mapper) mapPath(path string) (string, bool) {
	sm := itemPath.FindStringSubmatch(path)
	if sm == nil {
		return "", false
	}
	k, _ := strconv.Atoi(sm[2])
	i := -1
	switch sm[1] {
	case "containers":
		if k < len(m.containers) {
			i = m.containers[k]
		}
	case "initContainers":
		if k < len(m.initContainers) {
			i = m.initContainers[k]
		}
	case "volumes":
		if k < len(m.podVolumes) {
			if j, ok := m.volumes[m.podVolumes[k]]; ok {
				i = j
			}
		}
	}
	if i < 0 {
		return "", false
	}
	return fmt.Sprintf("spec.%s[%d]%s", sm[1], i, sm[3]), true
}

var initHostPort = regexp.MustCompile(`^spec\.initContainers\[0\]\.ports\[(\d+)\]\.hostPort$`)

// initHostPortPath returns the path of e, with the init container index kube-apiserver leaves
// out (it checks each init container alone, as a list of one) put back for a duplicate host port.
func initHostPortPath(e *field.Error, pod *core.Pod) string {
	m := initHostPort.FindStringSubmatch(e.Field)
	if m == nil || e.Type != field.ErrorTypeDuplicate {
		return e.Field
	}
	j, _ := strconv.Atoi(m[1])
	for k, c := range pod.Spec.InitContainers {
		if j >= len(c.Ports) || hostPortKey(c.Ports[j]) != e.BadValue {
			continue
		}
		for i := 0; i < j; i++ {
			if c.Ports[i].HostPort != 0 && hostPortKey(c.Ports[i]) == e.BadValue {
				return fmt.Sprintf("spec.initContainers[%d].ports[%d].hostPort", k, j)
			}
		}
	}
	return e.Field
}

func hostPortKey(p core.ContainerPort) string {
	return fmt.Sprintf("%s/%s/%d", p.Protocol, p.HostIP, p.HostPort)
}

// podDependentErrors are kube-apiserver's errors on sidecar fields that depend on the rest of the
// pod, which the SidecarSet validation must not report: another pod makes them go away.
var podDependentErrors = []struct {
	field  *regexp.Regexp
	typ    field.ErrorType
	detail string
}{
	// procMount Unmasked needs the pod's hostUsers false.
	{regexp.MustCompile(`\.securityContext\.procMount$`), field.ErrorTypeInvalid, "`hostUsers` must be false"},
	// A claim must be one of the pod's resourceClaims.
	{regexp.MustCompile(`\.resources\.claims\[\d+\]$`), field.ErrorTypeNotFound, "must be one of the names in pod.spec.resourceClaims"},
	// fileKeyRef names an emptyDir volume of the pod.
	{regexp.MustCompile(`\.valueFrom\.fileKeyRef\.volumeName$`), field.ErrorTypeNotFound, ""},
	{regexp.MustCompile(`\.valueFrom\.fileKeyRef\.volumeName$`), field.ErrorTypeInvalid, "referenced volume must be of type emptyDir"},
	// An ephemeral volume's claim is named after the pod and the volume.
	{regexp.MustCompile(`^spec\.volumes\[\d+\]\.name$`), field.ErrorTypeInvalid, `PVC name "`},
}

func podDependent(e *field.Error, mapped string, ss *v1alpha1.SidecarSet) bool {
	for _, d := range podDependentErrors {
		if d.field.MatchString(mapped) && e.Type == d.typ && strings.Contains(e.Detail, d.detail) {
			return true
		}
	}
	return defaultedRequest(mapped, ss)
}

var requestKey = regexp.MustCompile(`^spec\.(containers|initContainers)\[(\d+)\]\.resources\.requests\[(.*)\]$`)

// defaultedRequest reports an error on a request the pod defaults copied from the limit: the same
// error is reported on the limit.
func defaultedRequest(path string, ss *v1alpha1.SidecarSet) bool {
	m := requestKey.FindStringSubmatch(path)
	if m == nil {
		return false
	}
	list := ss.Spec.Containers
	if m[1] == "initContainers" {
		list = ss.Spec.InitContainers
	}
	i, _ := strconv.Atoi(m[2])
	r := list[i].Resources
	_, requested := r.Requests[corev1.ResourceName(m[3])]
	_, limited := r.Limits[corev1.ResourceName(m[3])]
	return !requested && limited
}

var (
	subscript = regexp.MustCompile(`\[[^\]]*\]`)
	// kubeQuirks rewrite, after subscripts are removed, the field paths kube-apiserver reports
	// imprecisely (a wrong name, an index or a key left out) to the precise ones this server
	// reports.
	kubeQuirks = []struct {
		re   *regexp.Regexp
		with string
	}{
		{regexp.MustCompile(`^\.persistentDisk\b`), ".gcePersistentDisk"},
		{regexp.MustCompile(`^\.downwarAPI$`), ".downwardAPI"},
		{regexp.MustCompile(`^\.cephFS$`), ".cephfs"},
		{regexp.MustCompile(`^\.iscsi\.initiatorname$`), ".iscsi.initiatorName"},
		{regexp.MustCompile(`^\.csi\.name$`), ".csi.nodePublishSecretRef.name"},
		{regexp.MustCompile(`^\.projected\.path$`), ".projected.sources.serviceAccountToken.path"},
		{regexp.MustCompile(`\.downwardAPI((\.(path|fieldRef|resourceFieldRef|mode))|$)`), ".downwardAPI.items$1"},
		// The finer paths this server reports where kube-apiserver stops one level up.
		{regexp.MustCompile(`\.httpHeaders\.name$`), ".httpHeaders"},
		{regexp.MustCompile(`\.resizePolicy\.(resourceName|restartPolicy)$`), ".resizePolicy"},
		{regexp.MustCompile(`\.sleep\.seconds$`), ".sleep"},
	}
)

// canonical returns path without subscripts below the container or volume, the kube-apiserver
// quirks rewritten, followed by the error type. A duplicate container name is identified by
// the name.
func canonical(e *field.Error) string {
	m := itemPath.FindStringSubmatch(e.Field)
	if e.Type == field.ErrorTypeDuplicate && m[3] == ".name" && m[1] != "volumes" {
		// Which of two containers of one name is the duplicate depends on the order the injector
		// puts them in (init containers are sorted by name).
		return fmt.Sprintf("spec.%s[name=%v].name %s", m[1], e.BadValue, e.Type)
	}
	rest := subscript.ReplaceAllString(m[3], "")
	for _, q := range kubeQuirks {
		rest = q.re.ReplaceAllString(rest, q.with)
	}
	return fmt.Sprintf("spec.%s[%s]%s %s", m[1], m[2], rest, e.Type)
}

func canonicalSet(errs field.ErrorList) sets.Set[string] {
	out := sets.New[string]()
	for _, e := range errs {
		out.Insert(canonical(e))
	}
	return out
}
