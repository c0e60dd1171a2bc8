package podfields

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// The rules below are kube-apiserver's for the same pod fields; test/podvalidation checks them
// against kube-apiserver's own code.

const (
	tooMany = field.ErrorTypeTooMany
	tooLong = field.ErrorTypeTooLong
)

// c0 mutates the first container.
func c0(f func(*corev1.Container)) func(*apps.SidecarSet) {
	return func(ss *apps.SidecarSet) { f(&ss.Spec.Containers[0].Container) }
}

// withVolume adds volume v, mounted by the first container.
func withVolume(v corev1.Volume) func(*apps.SidecarSet) {
	return func(ss *apps.SidecarSet) {
		ss.Spec.Volumes = append(ss.Spec.Volumes, v)
		c := &ss.Spec.Containers[0]
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: "/mnt/" + v.Name})
	}
}

// withInit adds an init container made by f from a valid one.
func withInit(f func(*apps.SidecarContainer)) func(*apps.SidecarSet) {
	return func(ss *apps.SidecarSet) {
		c := validContainer("init")
		f(&c)
		ss.Spec.InitContainers = append(ss.Spec.InitContainers, c)
	}
}

func TestValidateSidecarSetSecurityContext(t *testing.T) {
	sc := func(s corev1.SecurityContext) func(*apps.SidecarSet) {
		return c0(func(c *corev1.Container) { c.SecurityContext = &s })
	}
	p := "spec.containers[0].securityContext."
	runSpecCases(t, []specCase{
		{name: "runAsUser -1 (issue 11)", mutate: sc(corev1.SecurityContext{RunAsUser: ptr.To[int64](-1)}),
			want: []wantErr{{p + "runAsUser", invalid, "must be between 0 and 2147483647"}}},
		{name: "runAsGroup too large", mutate: sc(corev1.SecurityContext{RunAsGroup: ptr.To[int64](1 << 31)}),
			want: []wantErr{{p + "runAsGroup", invalid, ""}}},
		{name: "procMount", mutate: sc(corev1.SecurityContext{ProcMount: ptr.To(corev1.ProcMountType("Partial"))}),
			want: []wantErr{{p + "procMount", notSupported, ""}}},
		{name: "procMount Unmasked: the pod may set hostUsers false", mutate: sc(corev1.SecurityContext{ProcMount: ptr.To(corev1.UnmaskedProcMount)})},
		{name: "privileged: --allow-privileged is the cluster's", mutate: sc(corev1.SecurityContext{Privileged: ptr.To(true)})},
		{name: "no privilege escalation with privileged or CAP_SYS_ADMIN", mutate: sc(corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false), Privileged: ptr.To(true),
			Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"CAP_SYS_ADMIN"}}}),
			want: []wantErr{
				{"spec.containers[0].securityContext", invalid, "`privileged` to true"},
				{"spec.containers[0].securityContext", invalid, "CAP_SYS_ADMIN"},
			}},
		{name: "seccomp", mutate: sc(corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}}),
			want: []wantErr{{p + "seccompProfile.localhostProfile", required, "must be set when seccomp type is Localhost"}}},
		{name: "seccomp profile without Localhost", mutate: sc(corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{LocalhostProfile: ptr.To("../p")}}),
			want: []wantErr{
				{p + "seccompProfile.type", required, "type is required when seccompProfile is set"},
				{p + "seccompProfile.localhostProfile", invalid, "can only be set when seccomp type is Localhost"},
			}},
		{name: "seccomp Localhost profile path", mutate: sc(corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{
			Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("/abs/../p")}}),
			want: []wantErr{
				{p + "seccompProfile.localhostProfile", invalid, "must be a relative path"},
				{p + "seccompProfile.localhostProfile", invalid, "must not contain '..'"},
			}},
		{name: "AppArmor", mutate: sc(corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{
			Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To(" padded")}}),
			want: []wantErr{{p + "appArmorProfile.localhostProfile", invalid, "must not be padded with whitespace"}}},
		{name: "AppArmor profile too long", mutate: sc(corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{
			Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To(strings.Repeat("p", 4096))}}),
			want: []wantErr{{p + "appArmorProfile.localhostProfile", tooLong, ""}}},
		{name: "AppArmor type", mutate: sc(corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: "Bogus"}}),
			want: []wantErr{{p + "appArmorProfile.type", notSupported, ""}}},
		{name: "Windows options", mutate: sc(corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{
			GMSACredentialSpecName: ptr.To("Bad_Name"), GMSACredentialSpec: ptr.To(""), RunAsUserName: ptr.To(`a\b\c`),
			HostProcess: ptr.To(true), // the pod's hostNetwork and other containers decide
		}}), want: []wantErr{
			{p + "windowsOptions.gmsaCredentialSpecName", invalid, "RFC 1123 subdomain"},
			{p + "windowsOptions.gmsaCredentialSpec", invalid, "cannot be an empty string"},
			{p + "windowsOptions.runAsUserName", invalid, "more than one backslash"},
		}},
		{name: "Windows user name", mutate: sc(corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{
			RunAsUserName: ptr.To(`bad:domain\..`)}}),
			want: []wantErr{
				{p + "windowsOptions.runAsUserName", invalid, "Domain doesn't match the NetBios nor the DNS format"},
				{p + "windowsOptions.runAsUserName", invalid, "cannot contain only periods or spaces"},
			}},
	})
}

func TestValidateSidecarSetContainerRules(t *testing.T) {
	p := "spec.containers[0]."
	rule := corev1.ContainerRestartRule{Action: corev1.ContainerRestartRuleActionRestart,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{1}}}
	runSpecCases(t, []specCase{
		{name: "image with whitespace", mutate: c0(func(c *corev1.Container) { c.Image = "nginx " }),
			want: []wantErr{{p + "image", invalid, "must not have leading or trailing whitespace"}}},
		{name: "relaxed env var names", mutate: c0(func(c *corev1.Container) {
			c.Env = []corev1.EnvVar{{Name: "1.a-b:c"}}
			c.EnvFrom = []corev1.EnvFromSource{{Prefix: "p.", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s-"}}}}
		})},
		{name: "envFrom names", mutate: c0(func(c *corev1.Container) {
			c.EnvFrom = []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{}},
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "Bad"}}},
			}
		}), want: []wantErr{
			{p + "envFrom[0].configMapRef.name", required, ""},
			{p + "envFrom[1].secretRef.name", invalid, "RFC 1123 subdomain"},
		}},
		{name: "fileKeyRef (the volume is the pod's business)", mutate: c0(func(c *corev1.Container) {
			c.Env = []corev1.EnvVar{
				{Name: "A", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "from-pod", Path: "env", Key: "A"}}},
				{Name: "B", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "Bad", Path: "../env", Key: "a=b"}}},
			}
		}), want: []wantErr{
			{p + "env[1].valueFrom.fileKeyRef.key", invalid, ""},
			{p + "env[1].valueFrom.fileKeyRef.volumeName", invalid, "RFC 1123 label"},
			{p + "env[1].valueFrom.fileKeyRef.path", invalid, "must not contain '..'"},
		}},
		{name: "downward API subscripts", mutate: c0(func(c *corev1.Container) {
			c.Env = []corev1.EnvVar{
				{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.annotations['Example.com/Key']"}}},
				{Name: "B", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels['bad key']"}}},
				{Name: "C", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.containers['x']"}}},
				{Name: "D", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v2", FieldPath: "metadata.name"}}},
				{Name: "E", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.host"}}},
			}
		}), want: []wantErr{
			{p + "env[1].valueFrom.fieldRef", invalid, "bad key"},
			{p + "env[2].valueFrom.fieldRef.fieldPath", invalid, "does not support subscript"},
			{p + "env[3].valueFrom.fieldRef.fieldPath", invalid, "unsupported pod version: v2"},
		}},
		{name: "readiness probe grace period, startup probe threshold", mutate: c0(func(c *corev1.Container) {
			exec := corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: exec, TerminationGracePeriodSeconds: ptr.To[int64](5)}
			c.StartupProbe = &corev1.Probe{ProbeHandler: exec, SuccessThreshold: 3, TerminationGracePeriodSeconds: ptr.To[int64](0)}
		}), want: []wantErr{
			{p + "readinessProbe.terminationGracePeriodSeconds", invalid, "must not be set for readinessProbes"},
			{p + "startupProbe.terminationGracePeriodSeconds", invalid, "must be greater than 0"},
			{p + "startupProbe.successThreshold", invalid, "must be 1"},
		}},
		{name: "lifecycle sleep", mutate: c0(func(c *corev1.Container) {
			c.Lifecycle = &corev1.Lifecycle{
				PostStart: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 86400}}, // bounded by the pod's grace period
				PreStop:   &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: -1}},
			}
		}), want: []wantErr{{p + "lifecycle.preStop.sleep.seconds", invalid, "must be non-negative"}}},
		{name: "stop signal: dropped by kube-apiserver 1.36 (ContainerStopSignals off)", mutate: withInit(func(c *apps.SidecarContainer) {
			c.Lifecycle = &corev1.Lifecycle{StopSignal: ptr.To(corev1.Signal("SIGBOGUS"))}
		})},
		{name: "resize policy", mutate: c0(func(c *corev1.Container) {
			c.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
				{ResourceName: corev1.ResourceCPU, RestartPolicy: "Sometimes"}, {ResourceName: "gpu"}}
		}), want: []wantErr{
			{p + "resizePolicy[1]", duplicate, ""},
			{p + "resizePolicy[1].restartPolicy", notSupported, ""},
			{p + "resizePolicy[2].resourceName", notSupported, ""},
			{p + "resizePolicy[2].restartPolicy", required, ""},
		}},
		{name: "RestartContainer on a plain init container", mutate: withInit(func(c *apps.SidecarContainer) {
			c.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
		}), want: []wantErr{{"spec.initContainers[0].resizePolicy[0].restartPolicy", invalid, "non-sidecar initContainers"}}},
		{name: "restart rules on a native sidecar", mutate: withInit(func(c *apps.SidecarContainer) {
			c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
			c.RestartPolicyRules = []corev1.ContainerRestartRule{rule, {Action: "Stop"}}
		}), want: []wantErr{
			{"spec.initContainers[0].restartPolicyRules[1].action", notSupported, ""},
			{"spec.initContainers[0].restartPolicyRules[1].exitCodes", required, ""},
		}},
		{name: "too many restart rules", mutate: withInit(func(c *apps.SidecarContainer) {
			c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
			for range 21 {
				c.RestartPolicyRules = append(c.RestartPolicyRules, rule)
			}
		}), want: []wantErr{{"spec.initContainers[0].restartPolicyRules", tooMany, ""}}},
		{name: "restart rules without restartPolicy", mutate: withInit(func(c *apps.SidecarContainer) {
			c.RestartPolicyRules = []corev1.ContainerRestartRule{rule}
		}), want: []wantErr{{"spec.initContainers[0].restartPolicy", required, "must specify restartPolicy when restart rules are used"}}},
		{name: "restart rules on a container", mutate: c0(func(c *corev1.Container) { c.RestartPolicyRules = []corev1.ContainerRestartRule{rule} }),
			want: []wantErr{{p + "restartPolicyRules", forbidden, "may not be set for non-init containers"}}},
		{name: "host ports shared by containers, not by init containers", mutate: func(ss *apps.SidecarSet) {
			port := []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP}}
			a, b := validContainer("a"), validContainer("b")
			a.Ports, b.Ports = port, port
			ss.Spec.Containers = append(ss.Spec.Containers, a, b)
			ss.Spec.InitContainers = []apps.SidecarContainer{validContainer("i"), validContainer("j")}
			ss.Spec.InitContainers[0].Ports, ss.Spec.InitContainers[1].Ports = port, port
		}, want: []wantErr{{"spec.containers[2].ports[0].hostPort", duplicate, "TCP//8080"}}},
	})
}

func TestValidateSidecarSetResources(t *testing.T) {
	p := "spec.containers[0].resources."
	res := func(r corev1.ResourceRequirements) func(*apps.SidecarSet) {
		return c0(func(c *corev1.Container) { c.Resources = r })
	}
	q := resource.MustParse
	runSpecCases(t, []specCase{
		{name: "limits alone (requests default to them)", mutate: res(corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceMemory: q("1Gi"), "hugepages-2Mi": q("2Mi"), "example.com/gpu": q("1")}})},
		{name: "names", mutate: res(corev1.ResourceRequirements{Limits: corev1.ResourceList{
			"pods": q("1"), "kubernetes.io/anything": q("1"), "example.com/bad name": q("1"), "requests.example.com/x": q("1")}}),
			want: []wantErr{
				{p + "limits[example.com/bad name]", invalid, "name part must consist of"},
				{p + "limits[example.com/bad name]", invalid, "doesn't follow extended resource name standard"},
				{p + "limits[pods]", invalid, "must be a standard resource for containers"},
				{p + "limits[requests.example.com/x]", invalid, "doesn't follow extended resource name standard"},
			}},
		{name: "extended resources", mutate: res(corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{"example.com/a": q("500m"), "example.com/b": q("2")},
			Requests: corev1.ResourceList{"example.com/b": q("1"), "example.com/c": q("1")}}),
			want: []wantErr{
				{p + "limits[example.com/a]", invalid, "must be an integer"},
				{p + "requests[example.com/b]", invalid, "must be equal to example.com/b limit of 2"},
				{p + "limits[example.com/c]", required, "Limit must be set for non overcommitable resources"},
			}},
		{name: "hugepages", mutate: res(corev1.ResourceRequirements{Limits: corev1.ResourceList{"hugepages-2Mi": q("3Mi")}}),
			want: []wantErr{
				{p + "limits[hugepages-2Mi]", invalid, "is not positive integer multiple of hugepages-2Mi"},
				{"spec.containers[0].resources", forbidden, "HugePages require cpu or memory"},
			}},
		{name: "claims (in the pod's resourceClaims or not, the pod's business)", mutate: res(corev1.ResourceRequirements{
			Claims: []corev1.ResourceClaim{{Name: "gpu"}, {Name: "nic", Request: "fast"}}})},
		{name: "claims", mutate: res(corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{
			{Name: "gpu", Request: "a"}, {Name: "gpu"}, {}, {Name: "nic", Request: "Bad"}, {Name: "nic", Request: "Bad"}}}),
			want: []wantErr{
				{p + "claims[1]", duplicate, "gpu"},
				{p + "claims[2]", required, ""},
				{p + "claims[3].request", invalid, "RFC 1123 label"},
				{p + "claims[4].request", invalid, "RFC 1123 label"},
				{p + "claims[4]", duplicate, "nic/Bad"},
			}},
	})
}

func TestValidateSidecarSetMounts(t *testing.T) {
	emptyDir := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	mounts := func(m ...corev1.VolumeMount) func(*apps.SidecarSet) {
		return func(ss *apps.SidecarSet) {
			ss.Spec.Volumes = []corev1.Volume{emptyDir}
			ss.Spec.Containers[0].VolumeMounts = m
		}
	}
	p := "spec.containers[0].volumeMounts"
	runSpecCases(t, []specCase{
		{name: "Bidirectional needs a privileged container", mutate: mounts(corev1.VolumeMount{Name: "data", MountPath: "/d",
			MountPropagation: ptr.To(corev1.MountPropagationBidirectional)}),
			want: []wantErr{{p + "[0].mountPropagation", forbidden, "available only to privileged containers"}}},
		{name: "recursive read-only", mutate: mounts(corev1.VolumeMount{Name: "data", MountPath: "/d",
			RecursiveReadOnly: ptr.To(corev1.RecursiveReadOnlyEnabled), MountPropagation: ptr.To(corev1.MountPropagationHostToContainer)}),
			want: []wantErr{
				{p + "[0].recursiveReadOnly", forbidden, "may only be specified when readOnly is true"},
				{p + "[0].recursiveReadOnly", forbidden, "mountPropagation is None"},
			}},
		{name: "no name", mutate: mounts(corev1.VolumeMount{MountPath: "/d"}),
			want: []wantErr{{p + "[0].name", required, ""}, {p + "[0].name", notFound, ""}}},
		{name: "sub-paths", mutate: mounts(corev1.VolumeMount{Name: "data", MountPath: "/d", SubPath: "/abs", SubPathExpr: "$(A)"}),
			want: []wantErr{
				{p + "[0].subPath", invalid, "must be a relative path"},
				{p + "[0].subPathExpr", invalid, "mutually exclusive"},
			}},
		{name: "a volume with errors is not mountable", mutate: func(ss *apps.SidecarSet) {
			ss.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: "/var/log", Type: ptr.To(corev1.HostPathType("Bogus"))}}}}
			ss.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "host", MountPath: "/host"}}
		}, want: []wantErr{
			{"spec.volumes[0].hostPath.type", notSupported, `"Bogus"`},
			{p + "[0].name", notFound, "host"},
		}},
	})
}

func TestValidateSidecarSetVolumeSources(t *testing.T) {
	vol := func(name string, src corev1.VolumeSource) func(*apps.SidecarSet) {
		return withVolume(corev1.Volume{Name: name, VolumeSource: src})
	}
	notFoundMount := wantErr{"spec.containers[0].volumeMounts[0].name", notFound, ""}
	ref := &corev1.LocalObjectReference{}
	runSpecCases(t, []specCase{
		{name: "hostPath type Bogus (issue 11)", mutate: vol("host", corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
			Path: "/var/../log", Type: ptr.To(corev1.HostPathType("Bogus"))}}),
			want: []wantErr{
				{"spec.volumes[0].hostPath.path", invalid, "must not contain '..'"},
				{"spec.volumes[0].hostPath.type", notSupported, ""},
				notFoundMount,
			}},
		{name: "configMap volume named Bad_Name! (issue 11)", mutate: vol("Bad_Name!", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}),
			want: []wantErr{{"spec.volumes[0].name", invalid, "RFC 1123 label"}, notFoundMount}},
		{name: "emptyDir size", mutate: vol("e", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("-1"))}}),
			want: []wantErr{{"spec.volumes[0].emptyDir.sizeLimit", forbidden, ""}, notFoundMount}},
		{name: "items", mutate: vol("s", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr.To[int32](01000),
			Items: []corev1.KeyToPath{{Key: "k", Path: "..data"}, {Path: "/abs", Mode: ptr.To[int32](-1)}}}}),
			want: []wantErr{
				{"spec.volumes[0].secret.defaultMode", invalid, "0777"},
				{"spec.volumes[0].secret.items[0].path", invalid, "must not start with '..'"},
				{"spec.volumes[0].secret.items[1].key", required, ""},
				{"spec.volumes[0].secret.items[1].path", invalid, "must be a relative path"},
				{"spec.volumes[0].secret.items[1].mode", invalid, "0777"},
				notFoundMount,
			}},
		{name: "nfs", mutate: vol("n", corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Path: "rel"}}),
			want: []wantErr{{"spec.volumes[0].nfs.server", required, ""}, {"spec.volumes[0].nfs.path", invalid, "must be an absolute path"}, notFoundMount}},
		{name: "iscsi", mutate: vol(strings.Repeat("v", 40), corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{
			TargetPortal: strings.Repeat("1", 30), IQN: "iqn.bad", Lun: 256, SessionCHAPAuth: true, InitiatorName: ptr.To("foo")}}),
			want: []wantErr{
				{"spec.volumes[0].iscsi.iqn", invalid, "must be valid format"},
				{"spec.volumes[0].iscsi.lun", invalid, "between 0 and 255"},
				{"spec.volumes[0].iscsi.secretRef", required, ""},
				{"spec.volumes[0].iscsi.initiatorName", invalid, "starting with iqn, eui, or naa"},
				{"spec.volumes[0].name", invalid, "must be under 64 characters"},
				notFoundMount,
			}},
		{name: "azure disk of the default (shared) kind", mutate: vol("d", corev1.VolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{
			DiskName: "d", DataDiskURI: "/subscriptions/s", CachingMode: ptr.To(corev1.AzureDataDiskCachingMode("Some"))}}),
			want: []wantErr{
				{"spec.volumes[0].azureDisk.cachingMode", notSupported, ""},
				{"spec.volumes[0].azureDisk.diskURI", notSupported, "blob.core.windows.net"},
				notFoundMount,
			}},
		{name: "flex options and csi driver", mutate: func(ss *apps.SidecarSet) {
			vol("f", corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{Driver: "d", Options: map[string]string{"kubernetes.io/x": "1"}}})(ss)
			vol("c", corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "bad_driver", NodePublishSecretRef: ref}})(ss)
		}, want: []wantErr{
			{"spec.volumes[0].flexVolume.options[kubernetes.io/x]", invalid, "reserved"},
			{"spec.volumes[1].csi.driver", invalid, "RFC 1123 subdomain"},
			{"spec.volumes[1].csi.nodePublishSecretRef.name", required, ""},
			notFoundMount,
			{"spec.containers[0].volumeMounts[1].name", notFound, ""},
		}},
		{name: "projected", mutate: vol("p", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{Items: []corev1.KeyToPath{{Key: "k", Path: "same"}}},
				Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Items: []corev1.KeyToPath{{Key: "k", Path: "same"}}}},
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](60)}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "f", FieldRef: &corev1.ObjectFieldSelector{
				APIVersion: "v1", FieldPath: "spec.nodeName"}}}}},
		}}}), want: []wantErr{
			{"spec.volumes[0].projected.sources[0].configMap.name", required, ""},
			{"spec.volumes[0].projected", invalid, "conflicting duplicate paths"},
			{"spec.volumes[0].projected.sources[0]", forbidden, "more than 1 volume type per source"},
			{"spec.volumes[0].projected.sources[1].serviceAccountToken.expirationSeconds", invalid, "less than 10 minutes"},
			{"spec.volumes[0].projected.sources[1].serviceAccountToken.path", required, ""},
			{"spec.volumes[0].projected.sources[2].downwardAPI.items[0].fieldRef.fieldPath", notSupported, ""},
			notFoundMount,
		}},
		{name: "downward API volume", mutate: vol("d", corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "a", ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}},
			{Path: "b"},
		}}}), want: []wantErr{
			{"spec.volumes[0].downwardAPI.items[0].resourceFieldRef.containerName", required, ""},
			{"spec.volumes[0].downwardAPI.items[1]", required, "one of fieldRef and resourceFieldRef is required"},
			notFoundMount,
		}},
		{name: "ephemeral", mutate: vol("e", corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: "not-allowed"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod, corev1.ReadWriteOnce},
				DataSource:  &corev1.TypedLocalObjectReference{Kind: "Snapshot", Name: "s"},
			},
		}}}), want: []wantErr{
			{"spec.volumes[0].ephemeral.volumeClaimTemplate.metadata.name", forbidden, "cannot be set"},
			{"spec.volumes[0].ephemeral.volumeClaimTemplate.spec.accessModes", forbidden, "ReadWriteOncePod"},
			{"spec.volumes[0].ephemeral.volumeClaimTemplate.spec.resources[storage]", required, ""},
			{"spec.volumes[0].ephemeral.volumeClaimTemplate.spec.dataSource", invalid, "must be 'PersistentVolumeClaim'"},
			notFoundMount,
		}},
		{name: "image", mutate: vol("i", corev1.VolumeSource{Image: &corev1.ImageVolumeSource{PullPolicy: "Sometimes"}}),
			want: []wantErr{
				{"spec.volumes[0].image.reference", required, ""},
				{"spec.volumes[0].image.pullPolicy", notSupported, ""},
				notFoundMount,
			}},
		{name: "two sources", mutate: vol("two", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}, CephFS: &corev1.CephFSVolumeSource{}}),
			want: []wantErr{{"spec.volumes[0].cephfs", forbidden, "may not specify more than 1 volume type"}, notFoundMount}},
		{name: "every kind, valid", mutate: func(ss *apps.SidecarSet) {
			for _, v := range []corev1.VolumeSource{
				{GitRepo: &corev1.GitRepoVolumeSource{Repository: "r"}},
				{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: "p"}},
				{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "v"}},
				{Glusterfs: &corev1.GlusterfsVolumeSource{EndpointsName: "e", Path: "p"}},
				{Flocker: &corev1.FlockerVolumeSource{DatasetUUID: "u"}},
				{RBD: &corev1.RBDVolumeSource{CephMonitors: []string{"m"}, RBDImage: "i"}},
				{Cinder: &corev1.CinderVolumeSource{VolumeID: "v"}},
				{Quobyte: &corev1.QuobyteVolumeSource{Registry: "q:1", Volume: "v"}},
				{FC: &corev1.FCVolumeSource{WWIDs: []string{"w"}}},
				{AzureFile: &corev1.AzureFileVolumeSource{SecretName: "s", ShareName: "s"}},
				{VsphereVolume: &corev1.VsphereVirtualDiskVolumeSource{VolumePath: "p"}},
				{PhotonPersistentDisk: &corev1.PhotonPersistentDiskVolumeSource{PdID: "p"}},
				{PortworxVolume: &corev1.PortworxVolumeSource{VolumeID: "v"}},
				{StorageOS: &corev1.StorageOSVolumeSource{VolumeName: "v"}},
				{ScaleIO: &corev1.ScaleIOVolumeSource{Gateway: "g", System: "s", VolumeName: "v", SecretRef: ref}},
			} {
				vol(string(rune('a'+len(ss.Spec.Volumes))), v)(ss)
			}
		}},
	})
}

// The embedded probe port may name a port of another container: kube-apiserver does not check it.
func TestValidateSidecarSetProbePortName(t *testing.T) {
	runSpecCases(t, []specCase{{name: "probe on a named port", mutate: c0(func(c *corev1.Container) {
		c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("app-port")}}}
	})}})
}
