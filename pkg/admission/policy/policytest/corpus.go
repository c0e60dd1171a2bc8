// Package policytest generates cases for differential tests of the policy compiler against the
// injector: SidecarSets that a policy can serve and pods to inject, covering every policy-path
// feature. Both the unit tests (kube-apiserver's evaluator, offline) and the end-to-end tests (a
// real kube-apiserver) draw from it.
package policytest

import (
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// Corpus generates (SidecarSets, pod, namespace) cases covering every policy-path feature:
// selectors (labels, expressions, spec.namespace, namespaceSelector), several SidecarSets per pod
// with Before/After containers, plain and native init containers on both sides, referenced and
// unreferenced volumes (some the pod already has), imagePullSecrets (some the pod already has),
// pod containers and init containers that carry a sidecar's name, and pods with or without
// annotations, init containers, volumes and secrets.
type Corpus struct {
	r *rand.Rand
	// Namespaces are the two namespaces cases use, labelled env=prod and env=dev.
	Namespaces [2]string
	// CaseLabel, when set, is a pod label every SidecarSet selects with the case's id as value, so
	// that the cases of one corpus can live side by side in one cluster.
	CaseLabel string
}

// New returns a corpus drawing from a generator seeded with seed, with namespaces ns0 and ns1.
func New(seed uint64) *Corpus {
	return &Corpus{r: rand.New(rand.NewPCG(seed, 2)), Namespaces: [2]string{"ns0", "ns1"}}
}

// Case is one generated case: SidecarSets (not defaulted), a pod and its namespace.
type Case struct {
	ID   int
	Sets []*v1alpha1.SidecarSet
	Pod  *corev1.Pod
	NS   *corev1.Namespace
}

func (g *Corpus) chance(p float64) bool { return g.r.Float64() < p }

// Perm returns a random permutation of n, from the corpus's generator.
func (g *Corpus) Perm(n int) []int { return g.r.Perm(n) }

// Namespace returns namespace i (0 or 1) of the corpus with its labels.
func (g *Corpus) Namespace(i int) *corev1.Namespace {
	ns := &corev1.Namespace{}
	ns.Name = g.Namespaces[i]
	ns.Labels = map[string]string{corev1.LabelMetadataName: ns.Name, "env": []string{"prod", "dev"}[i]}
	return ns
}

// Next returns case id, in one of the corpus's namespaces.
func (g *Corpus) Next(id int) Case {
	n := 1 + g.r.IntN(4)
	c := Case{ID: id, NS: g.Namespace(g.r.IntN(2))}
	for i := 0; i < n; i++ {
		c.Sets = append(c.Sets, g.sidecarSet(id, i))
	}
	c.Pod = g.pod(c.Sets)
	c.Pod.Namespace = c.NS.Name
	if g.CaseLabel != "" {
		c.Pod.Labels[g.CaseLabel] = fmt.Sprint(id)
		for _, ss := range c.Sets {
			if ss.Spec.Selector.MatchLabels == nil {
				ss.Spec.Selector.MatchLabels = map[string]string{}
			}
			ss.Spec.Selector.MatchLabels[g.CaseLabel] = fmt.Sprint(id)
		}
	}
	return c
}

// letters give names whose sort order is unrelated to the SidecarSet order.
func (g *Corpus) name(prefix string, set, i int) string {
	return fmt.Sprintf("%c%s%d-%d", 'a'+rune(g.r.IntN(6)), prefix, set, i)
}

func (g *Corpus) sidecarSet(id, i int) *v1alpha1.SidecarSet {
	ss := &v1alpha1.SidecarSet{}
	ss.Name = fmt.Sprintf("%c-set%d-%d", 'a'+rune(g.r.IntN(5)), id, i)
	ss.Spec.Selector = g.selector()
	switch g.r.IntN(4) {
	case 0:
		ss.Spec.Namespace = g.Namespaces[0]
	case 1:
		ss.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	}
	nVolumes := g.r.IntN(3)
	for v := 0; v < nVolumes; v++ {
		ss.Spec.Volumes = append(ss.Spec.Volumes, g.volume(fmt.Sprintf("vol%d-%d", i, v)))
	}
	if g.chance(0.3) {
		// Overlapping SidecarSets may only share identical volumes.
		ss.Spec.Volumes = append(ss.Spec.Volumes, corev1.Volume{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	for c, nc := 0, 1+g.r.IntN(2); c < nc; c++ {
		ss.Spec.Containers = append(ss.Spec.Containers, g.sidecar(g.name("c", i, c), ss.Spec.Volumes, false))
	}
	for c, nc := 0, g.r.IntN(3); c < nc; c++ {
		ss.Spec.InitContainers = append(ss.Spec.InitContainers, g.sidecar(g.name("i", i, c), ss.Spec.Volumes, true))
	}
	if g.chance(0.4) {
		ss.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: fmt.Sprintf("secret%d", g.r.IntN(3))}}
	}
	return ss
}

func (g *Corpus) selector() *metav1.LabelSelector {
	switch g.r.IntN(4) {
	case 0:
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "db"}}}}
	case 1:
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}, MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "canary", Operator: metav1.LabelSelectorOpDoesNotExist}}}
	case 2:
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}}
	}
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
}

func (g *Corpus) volume(name string) corev1.Volume {
	v := corev1.Volume{Name: name}
	switch g.r.IntN(3) {
	case 0:
		v.EmptyDir = &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}
	case 1:
		mode := int32(0o644)
		v.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-" + name}, DefaultMode: &mode,
			Items: []corev1.KeyToPath{{Key: "a", Path: "a.conf"}}}
	default:
		v.HostPath = &corev1.HostPathVolumeSource{Path: "/var/log/" + name}
	}
	return v
}

func (g *Corpus) sidecar(name string, volumes []corev1.Volume, init bool) v1alpha1.SidecarContainer {
	sc := v1alpha1.SidecarContainer{Container: corev1.Container{
		Name:    name,
		Image:   "busybox:1." + fmt.Sprint(g.r.IntN(3)),
		Command: []string{"sh", "-c", `echo "quoted \\ text"; sleep 1d`},
		Env:     []corev1.EnvVar{{Name: "MODE", Value: "x"}},
	}}
	sc.PodInjectPolicy = v1alpha1.BeforeAppContainerType // the default
	if g.chance(0.5) {
		sc.PodInjectPolicy = v1alpha1.AfterAppContainerType
	}
	if g.chance(0.4) {
		sc.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	}
	probe := g.chance(0.3)
	if probe {
		sc.Ports = []corev1.ContainerPort{{Name: "p-" + name, ContainerPort: 9000 + int32(g.r.IntN(100))}}
	}
	if g.chance(0.3) {
		sc.Env = append(sc.Env, corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}})
	}
	if init && g.chance(0.4) {
		always := corev1.ContainerRestartPolicyAlways
		sc.RestartPolicy = &always
	}
	if probe && (!init || sc.RestartPolicy != nil) { // plain init containers take no probes
		sc.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("p-" + name)}}, PeriodSeconds: 5}
	}
	for _, v := range volumes {
		if g.chance(0.6) {
			sc.VolumeMounts = append(sc.VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: "/mnt/" + v.Name, ReadOnly: g.chance(0.5)})
		}
	}
	return sc
}

func (g *Corpus) pod(sets []*v1alpha1.SidecarSet) *corev1.Pod {
	pod := &corev1.Pod{}
	pod.Name = "pod"
	pod.Spec.AutomountServiceAccountToken = new(bool)
	pod.Labels = map[string]string{"app": []string{"web", "web", "db", "other"}[g.r.IntN(4)]}
	if g.chance(0.3) {
		pod.Labels["tier"] = "front"
	}
	if g.chance(0.2) {
		pod.Labels["canary"] = "true"
	}
	if g.chance(0.5) {
		pod.Annotations = map[string]string{"team": "a"}
	}
	for i, n := 0, 1+g.r.IntN(3); i < n; i++ {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: fmt.Sprintf("app%d", i), Image: "nginx",
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}})
	}
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	if g.chance(0.3) {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptrQuantity("1Gi")}}})
	}
	if g.chance(0.2) {
		pod.Spec.Volumes = nil
		pod.Spec.Containers[0].VolumeMounts = nil
		for i := range pod.Spec.Containers {
			pod.Spec.Containers[i].VolumeMounts = nil
		}
	}
	for i, n := 0, g.r.IntN(3); i < n; i++ {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: fmt.Sprintf("%cinit%d", 'a'+rune(g.r.IntN(6)), i), Image: "busybox"})
	}
	if g.chance(0.3) {
		pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: fmt.Sprintf("secret%d", g.r.IntN(3))}}
	}
	// A pod container that has a sidecar's name is replaced in place.
	if s := sets[g.r.IntN(len(sets))]; g.chance(0.05) {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: s.Spec.Containers[0].Name, Image: "own", Env: []corev1.EnvVar{{Name: "OWN", Value: "1"}}})
	}
	if s := sets[g.r.IntN(len(sets))]; len(s.Spec.InitContainers) > 0 && g.chance(0.05) {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: s.Spec.InitContainers[0].Name, Image: "own"})
	}
	return pod
}

func ptrQuantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

// NextMixed returns case id of the tenancy corpus: cluster SidecarSets and NamespacedSidecarSets
// (as the SidecarSets "<namespace>.<name>" they take part as, in either namespace of the corpus)
// selecting by different label keys, some of them served by the webhook (shareVolumePolicy, or a
// selector that requires no label), and a pod, in one of the namespaces, whose containers often
// carry the name of a sidecar of any of them.
func (g *Corpus) NextMixed(id int) Case {
	n := 2 + g.r.IntN(4)
	c := Case{ID: id, NS: g.Namespace(g.r.IntN(2))}
	for i := 0; i < n; i++ {
		ss := g.sidecarSet(id, i)
		ss.Spec.Selector = g.mixedSelector()
		ss.Spec.Namespace, ss.Spec.NamespaceSelector = "", nil
		if g.chance(0.25) {
			ss.Spec.Containers[0].ShareVolumePolicy.Type = v1alpha1.ShareVolumePolicyEnabled
		}
		if g.chance(0.5) {
			tenant := &v1alpha1.NamespacedSidecarSet{ObjectMeta: ss.ObjectMeta, Spec: ss.Spec}
			tenant.Namespace = g.Namespaces[g.r.IntN(2)]
			ss = tenant.AsSidecarSet()
		}
		c.Sets = append(c.Sets, ss)
	}
	c.Pod = g.pod(c.Sets)
	c.Pod.Namespace = c.NS.Name
	for _, k := range mixedKeys {
		if g.chance(0.4) {
			c.Pod.Labels[k] = []string{"x", "web"}[g.r.IntN(2)]
		}
	}
	for i := 0; i < 2; i++ {
		if s := c.Sets[g.r.IntN(len(c.Sets))]; g.chance(0.4) {
			c.Pod.Spec.Containers = append(c.Pod.Spec.Containers, corev1.Container{Name: s.Spec.Containers[0].Name, Image: "own"})
		}
	}
	return c
}

// mixedKeys are the label keys of the tenancy corpus, sorting before and after "app".
var mixedKeys = []string{"aaa", "tier", "zzz"}

func (g *Corpus) mixedSelector() *metav1.LabelSelector {
	keys := append([]string{"app"}, mixedKeys...)
	k := keys[g.r.IntN(len(keys))]
	switch g.r.IntN(5) {
	case 0:
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: k, Operator: metav1.LabelSelectorOpDoesNotExist}}}
	case 1:
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: k, Operator: metav1.LabelSelectorOpExists}}}
	case 2:
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{"x", "web"}}}}
	}
	return &metav1.LabelSelector{MatchLabels: map[string]string{k: []string{"x", "web"}[g.r.IntN(2)]}}
}
