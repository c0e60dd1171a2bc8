package podvalidation

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// container returns a valid sidecar container named name.
func container(name string, mutate ...func(*corev1.Container)) v1alpha1.SidecarContainer {
	c := corev1.Container{Name: name, Image: "example.com/sidecar:1.0"}
	for _, m := range mutate {
		m(&c)
	}
	return v1alpha1.SidecarContainer{Container: c}
}

// nativeSidecar returns a valid init container with restartPolicy Always.
func nativeSidecar(name string, mutate ...func(*corev1.Container)) v1alpha1.SidecarContainer {
	c := container(name, mutate...)
	c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	return c
}

// hotUpgrade makes c a HotUpgrade sidecar: injection adds it as two containers, <name>-1 and
// <name>-2.
func hotUpgrade(c v1alpha1.SidecarContainer) v1alpha1.SidecarContainer {
	c.UpgradeStrategy = v1alpha1.SidecarContainerUpgradeStrategy{UpgradeType: v1alpha1.SidecarContainerHotUpgrade,
		HotUpgradeEmptyImage: "example.com/empty:1.0"}
	return c
}

func volume(name string, src corev1.VolumeSource) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: src}
}

func withSecurityContext(sc corev1.SecurityContext) func(*corev1.Container) {
	return func(c *corev1.Container) { c.SecurityContext = &sc }
}

// handCase is a SidecarSet that kube-apiserver and this server must judge alike; reject says
// what both must decide.
type handCase struct {
	name   string
	in     sidecars
	reject bool
}

// handCases are the examples and one valid and invalid case per rule family.
var handCases = []handCase{
	{name: "valid", in: sidecars{
		Containers: []v1alpha1.SidecarContainer{container("proxy", func(c *corev1.Container) {
			c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
			c.Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
			c.VolumeMounts = []corev1.VolumeMount{{Name: "conf", MountPath: "/etc/conf"}}
			c.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}}}
			c.SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000)}
		})},
		InitContainers: []v1alpha1.SidecarContainer{nativeSidecar("native"), container("init")},
		Volumes:        []corev1.Volume{volume("conf", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}})},
	}},
	{name: "issue: runAsUser -1", reject: true, in: sidecars{Containers: []v1alpha1.SidecarContainer{
		container("proxy", withSecurityContext(corev1.SecurityContext{RunAsUser: ptr.To[int64](-1)}))}}},
	{name: "issue: hostPath type Bogus", reject: true, in: sidecars{Volumes: []corev1.Volume{
		volume("host", corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log", Type: ptr.To(corev1.HostPathType("Bogus"))}})}}},
	{name: "issue: ConfigMap volume named Bad_Name!", reject: true, in: sidecars{Volumes: []corev1.Volume{
		volume("Bad_Name!", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}})}}},

	{name: "relaxed env var names", in: one(func(c *corev1.Container) {
		c.Env = []corev1.EnvVar{{Name: "1-starts.with:digit"}}
		c.EnvFrom = []corev1.EnvFromSource{{Prefix: "my.prefix-", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-"}}}}
	})},
	{name: "env var name with '='", reject: true, in: one(func(c *corev1.Container) { c.Env = []corev1.EnvVar{{Name: "A=B"}} })},
	{name: "value and valueFrom", reject: true, in: one(func(c *corev1.Container) {
		c.Env = []corev1.EnvVar{{Name: "A", Value: "x", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}
	})},
	{name: "downward API label subscripts", in: one(func(c *corev1.Container) {
		c.Env = []corev1.EnvVar{
			{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['Example.com/Key']"}}},
			{Name: "B", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.host"}}},
		}
	})},
	{name: "downward API field not for env", reject: true, in: one(func(c *corev1.Container) {
		c.Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}
	})},
	{name: "cpu divisor", reject: true, in: one(func(c *corev1.Container) {
		c.Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1Mi")}}}}
	})},
	{name: "hugepages without cpu or memory", reject: true, in: one(func(c *corev1.Container) {
		c.Resources.Limits = corev1.ResourceList{"hugepages-2Mi": resource.MustParse("2Mi")}
	})},
	{name: "extended resource request without limit", reject: true, in: one(func(c *corev1.Container) {
		c.Resources.Requests = corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}
	})},
	{name: "fractional extended resource", reject: true, in: one(func(c *corev1.Container) {
		c.Resources.Limits = corev1.ResourceList{"example.com/gpu": resource.MustParse("500m")}
	})},
	{name: "resource in a kubernetes.io domain", in: one(func(c *corev1.Container) {
		c.Resources.Limits = corev1.ResourceList{"kubernetes.io/anything": resource.MustParse("1")}
	})},
	{name: "resource claims (in the pod's resourceClaims or not, the pod's business)", in: one(func(c *corev1.Container) {
		c.Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}, {Name: "nic", Request: "fast"}}
	})},
	{name: "resource claim referenced twice", reject: true, in: one(func(c *corev1.Container) {
		c.Resources.Claims = []corev1.ResourceClaim{{Name: "gpu", Request: "a"}, {Name: "gpu"}}
	})},
	{name: "bidirectional propagation needs privileged", reject: true, in: sidecars{
		Containers: []v1alpha1.SidecarContainer{container("proxy", func(c *corev1.Container) {
			c.VolumeMounts = []corev1.VolumeMount{{Name: "host", MountPath: "/host", MountPropagation: ptr.To(corev1.MountPropagationBidirectional)}}
		})},
		Volumes: []corev1.Volume{volume("host", corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}})},
	}},
	{name: "privileged with bidirectional propagation (--allow-privileged is the cluster's)", in: sidecars{
		Containers: []v1alpha1.SidecarContainer{container("proxy", withSecurityContext(corev1.SecurityContext{Privileged: ptr.To(true)}), func(c *corev1.Container) {
			c.VolumeMounts = []corev1.VolumeMount{{Name: "host", MountPath: "/host", MountPropagation: ptr.To(corev1.MountPropagationBidirectional)}}
		})},
		Volumes: []corev1.Volume{volume("host", corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}})},
	}},
	{name: "procMount Unmasked (hostUsers false is the pod's)", in: one(withSecurityContext(corev1.SecurityContext{ProcMount: ptr.To(corev1.UnmaskedProcMount)}))},
	{name: "no privilege escalation but privileged", reject: true, in: one(withSecurityContext(corev1.SecurityContext{
		Privileged: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false)}))},
	{name: "seccomp Localhost without profile", reject: true, in: one(withSecurityContext(corev1.SecurityContext{
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}}))},
	{name: "AppArmor profile too long", reject: true, in: one(withSecurityContext(corev1.SecurityContext{
		AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To(strings.Repeat("p", 4096))}}))},
	{name: "GMSA credential spec too large", reject: true, in: one(withSecurityContext(corev1.SecurityContext{
		WindowsOptions: &corev1.WindowsSecurityContextOptions{GMSACredentialSpec: ptr.To(strings.Repeat("x", 64*1024+1))}}))},
	{name: "hostProcess (hostNetwork and all containers are the pod's)", in: one(withSecurityContext(corev1.SecurityContext{
		WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}}))},
	{name: "lifecycle sleep of any length (the pod's grace period bounds it)", in: one(func(c *corev1.Container) {
		c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 100000}}}
	})},
	{name: "negative lifecycle sleep", reject: true, in: one(func(c *corev1.Container) {
		c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: -1}}}
	})},
	{name: "stop signal (dropped: ContainerStopSignals is off)", in: one(func(c *corev1.Container) {
		c.Lifecycle = &corev1.Lifecycle{StopSignal: ptr.To(corev1.Signal("SIGBOGUS"))}
	})},
	{name: "readiness probe with a grace period", reject: true, in: one(func(c *corev1.Container) {
		c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, TerminationGracePeriodSeconds: ptr.To[int64](5)}
	})},
	{name: "startup probe succeeding twice", reject: true, in: one(func(c *corev1.Container) {
		c.StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090}}, SuccessThreshold: 2}
	})},
	{name: "resize policy RestartContainer on a plain init container", reject: true, in: sidecars{InitContainers: []v1alpha1.SidecarContainer{
		container("init", func(c *corev1.Container) {
			c.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}}
		})}}},
	{name: "restart rules on a native sidecar", in: sidecars{InitContainers: []v1alpha1.SidecarContainer{nativeSidecar("native", func(c *corev1.Container) {
		c.RestartPolicyRules = []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestartAllContainers,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpNotIn, Values: []int32{0}}}}
	})}}},
	{name: "too many restart rules and exit codes", reject: true, in: sidecars{InitContainers: []v1alpha1.SidecarContainer{nativeSidecar("native", func(c *corev1.Container) {
		rule := corev1.ContainerRestartRule{Action: corev1.ContainerRestartRuleActionRestart,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: make([]int32, 256)}}
		c.RestartPolicyRules = slices.Repeat([]corev1.ContainerRestartRule{rule}, 21)
	})}}},
	{name: "host port used by two containers", reject: true, in: sidecars{Containers: []v1alpha1.SidecarContainer{
		container("a", func(c *corev1.Container) { c.Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}} }),
		container("b", func(c *corev1.Container) { c.Ports = []corev1.ContainerPort{{ContainerPort: 81, HostPort: 8080}} }),
	}}},
	{name: "host port on a HotUpgrade sidecar (its two containers bind it twice)", reject: true, in: sidecars{Containers: []v1alpha1.SidecarContainer{
		hotUpgrade(container("hot", func(c *corev1.Container) { c.Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}} })),
	}}},
	{name: "container port on a HotUpgrade sidecar", in: sidecars{Containers: []v1alpha1.SidecarContainer{
		hotUpgrade(container("hot", func(c *corev1.Container) { c.Ports = []corev1.ContainerPort{{ContainerPort: 80}} })),
	}}},
	{name: "host port used by two init containers (they run one by one)", in: sidecars{InitContainers: []v1alpha1.SidecarContainer{
		container("a", func(c *corev1.Container) { c.Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}} }),
		container("b", func(c *corev1.Container) { c.Ports = []corev1.ContainerPort{{ContainerPort: 81, HostPort: 8080}} }),
	}}},
	{name: "container name in containers and initContainers", reject: true, in: sidecars{
		Containers: []v1alpha1.SidecarContainer{container("same")}, InitContainers: []v1alpha1.SidecarContainer{container("same")}}},
	{name: "two volume sources", reject: true, in: sidecars{Volumes: []corev1.Volume{volume("two", corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{}, HostPath: &corev1.HostPathVolumeSource{Path: "/x"}})}}},
	{name: "projected volume with duplicate paths", reject: true, in: sidecars{Volumes: []corev1.Volume{volume("p", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}, Items: []corev1.KeyToPath{{Key: "k", Path: "same"}}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "b"}, Items: []corev1.KeyToPath{{Key: "k", Path: "same"}}}},
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "../token", ExpirationSeconds: ptr.To[int64](60)}},
		}}})}}},
	{name: "azure disk blob URI by default kind", reject: true, in: sidecars{Volumes: []corev1.Volume{volume("d", corev1.VolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{
		DiskName: "d", DataDiskURI: "/subscriptions/s/disks/d"}})}}},
	{name: "ephemeral volume without access mode nor size", reject: true, in: sidecars{Volumes: []corev1.Volume{volume("e", corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "not-allowed"}}}})}}},
	{name: "iSCSI initiator with a long volume name and portal", reject: true, in: sidecars{Volumes: []corev1.Volume{volume(strings.Repeat("v", 40), corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{
		TargetPortal: strings.Repeat("1", 30), IQN: "iqn.2001-04.com.example:storage", InitiatorName: ptr.To("iqn.2001-04.com.example:node")}})}}},
	{name: "image volume without reference", reject: true, in: sidecars{Volumes: []corev1.Volume{volume("img", corev1.VolumeSource{Image: &corev1.ImageVolumeSource{}})}}},
	{name: "volume device on a PVC, mount of an emptyDir", in: sidecars{
		Containers: []v1alpha1.SidecarContainer{container("proxy", func(c *corev1.Container) {
			c.VolumeDevices = []corev1.VolumeDevice{{Name: "claim", DevicePath: "/dev/xvda"}}
			c.VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
		})},
		Volumes: []corev1.Volume{volume("claim", corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}),
			volume("scratch", corev1.VolumeSource{})},
	}},
}

// one returns a SidecarSet with one container made by mutate.
func one(mutate ...func(*corev1.Container)) sidecars {
	return sidecars{Containers: []v1alpha1.SidecarContainer{container("proxy", mutate...)}}
}

// TestStricterThanKube lists what this server rejects on purpose although kube-apiserver 1.36
// accepts the pod it would inject: OpenKruise's restartPolicy rule (a sidecar is either a
// container or a native sidecar init container) and duplicate volume names (the injector would
// silently keep the last one).
func TestStricterThanKube(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   sidecars
	}{
		{"restartPolicy on a container", one(func(c *corev1.Container) { c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyNever) })},
		{"restartPolicyRules on a container", one(func(c *corev1.Container) {
			c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
			c.RestartPolicyRules = []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart,
				ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{1}}}}
		})},
		{"restartPolicy OnFailure on an init container", sidecars{InitContainers: []v1alpha1.SidecarContainer{container("init", func(c *corev1.Container) {
			c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyOnFailure)
		})}}},
		{"two volumes of one name", sidecars{Volumes: []corev1.Volume{volume("v", corev1.VolumeSource{}), volume("v", corev1.VolumeSource{})}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.in)
			if !r.rejectedByUs() || r.rejectedByKube() {
				t.Fatalf("want rejected by this server only:\n%s", r)
			}
		})
	}
}

func TestHandCases(t *testing.T) {
	for _, tc := range handCases {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.in)
			if !r.same() {
				t.Fatalf("this server and kube-apiserver disagree:\n%s", r)
			}
			if r.rejectedByKube() != tc.reject {
				t.Fatalf("rejected = %v, want %v:\n%s", r.rejectedByKube(), tc.reject, r)
			}
			t.Logf("%s", r)
		})
	}
}

func TestBaselineIsValid(t *testing.T) {
	r := run(t, baseline())
	if r.rejectedByUs() || r.rejectedByKube() || len(r.podDependent)+len(r.podLevel) > 0 {
		t.Fatalf("the baseline must be valid:\n%s", r)
	}
}
