package validation

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

const (
	required     = field.ErrorTypeRequired
	invalid      = field.ErrorTypeInvalid
	forbidden    = field.ErrorTypeForbidden
	duplicate    = field.ErrorTypeDuplicate
	notFound     = field.ErrorTypeNotFound
	notSupported = field.ErrorTypeNotSupported
)

// specCase mutates a valid SidecarSet and lists the errors ValidateSidecarSet must return.
type specCase struct {
	name   string
	mutate func(ss *apps.SidecarSet)
	want   []wantErr
}

func runSpecCases(t *testing.T, cases []specCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ss := validSidecarSet("test-sidecarset")
			tc.mutate(ss)
			checkErrors(t, tc.want, ValidateSidecarSet(ss))
		})
	}
}

func TestValidateSidecarSetMetadata(t *testing.T) {
	runSpecCases(t, []specCase{
		{name: "valid", mutate: func(*apps.SidecarSet) {}},
		{name: "name with dots (validation/73)", mutate: func(ss *apps.SidecarSet) { ss.Name = "val.with.dots" },
			want: []wantErr{{"metadata.name", invalid, "sidecarset name must consist of alphanumeric characters or '-'"}}},
		{name: "name of 64 characters", mutate: func(ss *apps.SidecarSet) { ss.Name = strings.Repeat("a", 64) },
			want: []wantErr{{"metadata.name", invalid, "must be no more than 63 characters"}}},
		{name: "upper case name", mutate: func(ss *apps.SidecarSet) { ss.Name = "Upper" },
			want: []wantErr{{"metadata.name", invalid, "lowercase RFC 1123 subdomain"}}},
		{name: "namespaced", mutate: func(ss *apps.SidecarSet) { ss.Namespace = "default" },
			want: []wantErr{{"metadata.namespace", forbidden, "not allowed on this type"}}},
		{name: "bad label", mutate: func(ss *apps.SidecarSet) { ss.Labels = map[string]string{"a": "-x"} },
			want: []wantErr{{"metadata.labels", invalid, ""}}},
	})
}

func TestValidateSidecarSetSelectors(t *testing.T) {
	runSpecCases(t, []specCase{
		{name: "missing selector (validation/03)", mutate: func(ss *apps.SidecarSet) { ss.Spec.Selector = nil },
			want: []wantErr{{"spec.selector", required, "no selector defined for SidecarSet"}}},
		{name: "empty selector", mutate: func(ss *apps.SidecarSet) { ss.Spec.Selector = &metav1.LabelSelector{} },
			want: []wantErr{{"spec.selector", invalid, "empty selector is not valid for sidecarset."}}},
		{name: "invalid selector value (validation/05)", mutate: func(ss *apps.SidecarSet) {
			ss.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{
				{Key: "app-name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"app-group", "app-risk-"}}}
		}, want: []wantErr{{"spec.selector.matchExpressions[0].values[1]", invalid, "app-risk-"}}},
		{name: "invalid namespaceSelector", mutate: func(ss *apps.SidecarSet) {
			ss.Spec.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "app-name", Operator: "Like"}}}
		}, want: []wantErr{{"spec.namespaceSelector.matchExpressions[0].operator", invalid, "not a valid selector operator"}}},
		{name: "empty namespaceSelector", mutate: func(ss *apps.SidecarSet) { ss.Spec.NamespaceSelector = &metav1.LabelSelector{} },
			want: []wantErr{{"spec.namespaceSelector", invalid, "empty selector"}}},
		{name: "namespace and namespaceSelector (validation/07)", mutate: func(ss *apps.SidecarSet) {
			ss.Spec.Namespace = "ns-test"
			ss.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
		}, want: []wantErr{{"spec.namespace", invalid, "namespace and namespaceSelector are mutually exclusive"}}},
		{name: "namespace alone", mutate: func(ss *apps.SidecarSet) { ss.Spec.Namespace = "ns-test" }},
		{name: "invalid namespace", mutate: func(ss *apps.SidecarSet) { ss.Spec.Namespace = "Not_A_Namespace" },
			want: []wantErr{{"spec.namespace", invalid, "RFC 1123 label"}}},
	})
}

func TestValidateSidecarSetInjectionStrategy(t *testing.T) {
	runSpecCases(t, []specCase{
		{name: "custom version", mutate: func(ss *apps.SidecarSet) {
			ss.Spec.InjectionStrategy.Revision = &apps.SidecarSetInjectRevision{CustomVersion: ptr.To("v1"), Policy: apps.PartialSidecarSetInjectRevisionPolicy}
		}},
		{name: "neither name nor version (validation/27)", mutate: func(ss *apps.SidecarSet) {
			ss.Spec.InjectionStrategy.Revision = &apps.SidecarSetInjectRevision{Policy: apps.AlwaysSidecarSetInjectRevisionPolicy}
		}, want: []wantErr{{"spec.injectionStrategy.revision", required, "revisionName and customVersion cannot be empty simultaneously"}}},
		{name: "unknown policy", mutate: func(ss *apps.SidecarSet) {
			ss.Spec.InjectionStrategy.Revision = &apps.SidecarSetInjectRevision{RevisionName: ptr.To("r"), Policy: "Sometimes"}
		}, want: []wantErr{{"spec.injectionStrategy.revision.policy", notSupported, `"Always", "Partial"`}}},
		{name: "negative revisionHistoryLimit", mutate: func(ss *apps.SidecarSet) { ss.Spec.RevisionHistoryLimit = ptr.To[int32](-1) },
			want: []wantErr{{"spec.revisionHistoryLimit", invalid, "must be greater than or equal to 0"}}},
	})
}

func TestValidateSidecarSetUpdateStrategy(t *testing.T) {
	us := func(f func(*apps.SidecarSetUpdateStrategy)) func(*apps.SidecarSet) {
		return func(ss *apps.SidecarSet) { f(&ss.Spec.UpdateStrategy) }
	}
	runSpecCases(t, []specCase{
		{name: "unknown type", mutate: us(func(s *apps.SidecarSetUpdateStrategy) { s.Type = "OnDelete" }),
			want: []wantErr{{"spec.updateStrategy.type", notSupported, ""}}},
		{name: "partition with selector (validation/67)", mutate: us(func(s *apps.SidecarSetUpdateStrategy) {
			s.Partition = ptr.To(intstr.FromString("50%"))
			s.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
		}), want: []wantErr{{"spec.updateStrategy.partition", forbidden, "Partition and Selector cannot be used together"}}},
		{name: "partition 0% with selector", mutate: us(func(s *apps.SidecarSetUpdateStrategy) {
			s.Partition = ptr.To(intstr.FromString("0%"))
			s.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
		}), want: []wantErr{{"spec.updateStrategy.partition", forbidden, ""}}},
		{name: "default partition with selector", mutate: us(func(s *apps.SidecarSetUpdateStrategy) {
			s.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
		})},
		{name: "empty update selector", mutate: us(func(s *apps.SidecarSetUpdateStrategy) { s.Selector = &metav1.LabelSelector{} }),
			want: []wantErr{{"spec.updateStrategy.selector", invalid, "empty selector"}}},
		{name: "maxUnavailable abc% (validation/69)", mutate: us(func(s *apps.SidecarSetUpdateStrategy) {
			s.MaxUnavailable = ptr.To(intstr.FromString("abc%"))
		}), want: []wantErr{{"spec.updateStrategy.maxUnavailable", invalid, "maxUnavailable"}}},
		{name: "fractional percent", mutate: us(func(s *apps.SidecarSetUpdateStrategy) { s.Partition = ptr.To(intstr.FromString("1.5%")) }),
			want: []wantErr{{"spec.updateStrategy.partition", invalid, "percent"}}},
		{name: "negative partition", mutate: us(func(s *apps.SidecarSetUpdateStrategy) { s.Partition = ptr.To(intstr.FromInt32(-1)) }),
			want: []wantErr{{"spec.updateStrategy.partition", invalid, "must be greater than or equal to 0"}}},
		{name: "maxUnavailable 0 and 150% are accepted", mutate: us(func(s *apps.SidecarSetUpdateStrategy) {
			s.MaxUnavailable = ptr.To(intstr.FromInt32(0))
			s.Partition = ptr.To(intstr.FromString("150%"))
		})},
		{name: "NotUpdate skips the knobs", mutate: us(func(s *apps.SidecarSetUpdateStrategy) {
			s.Type = apps.NotUpdateSidecarSetStrategyType
			s.MaxUnavailable = ptr.To(intstr.FromString("abc%"))
		})},
		{name: "weight 101 (validation/71) and empty selector", mutate: us(func(s *apps.SidecarSetUpdateStrategy) {
			s.PriorityStrategy = &apps.UpdatePriorityStrategy{WeightPriority: []apps.UpdatePriorityWeightTerm{{Weight: 101}}}
		}), want: []wantErr{
			{"spec.updateStrategy.priorityStrategy.weightPriority[0].weight", invalid, "weight must be valid number in the range 1-100"},
			{"spec.updateStrategy.priorityStrategy.weightPriority[0].matchSelector", required, "selector can not be empty"},
		}},
		{name: "weight 0 is accepted", mutate: us(func(s *apps.SidecarSetUpdateStrategy) {
			s.PriorityStrategy = &apps.UpdatePriorityStrategy{WeightPriority: []apps.UpdatePriorityWeightTerm{
				{Weight: 0, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"k": "v"}}}}}
		})},
		{name: "weight and order", mutate: us(func(s *apps.SidecarSetUpdateStrategy) {
			s.PriorityStrategy = &apps.UpdatePriorityStrategy{
				WeightPriority: []apps.UpdatePriorityWeightTerm{{Weight: 1, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"k": "v"}}}},
				OrderPriority:  []apps.UpdatePriorityOrderTerm{{OrderedKey: ""}},
			}
		}), want: []wantErr{
			{"spec.updateStrategy.priorityStrategy", forbidden, "only one of weightPriority and orderPriority can be used"},
			{"spec.updateStrategy.priorityStrategy.orderPriority[0].orderedKey", required, "order key can not be empty"},
		}},
		{name: "scatter empty key (validation/09) and duplicate", mutate: us(func(s *apps.SidecarSetUpdateStrategy) {
			s.ScatterStrategy = apps.UpdateScatterStrategy{{Key: "", Value: "x"}, {Key: "k", Value: "v"}, {Key: "k", Value: "v"}}
		}), want: []wantErr{
			{"spec.updateStrategy.scatterStrategy[0].key", required, "key should not be empty"},
			{"spec.updateStrategy.scatterStrategy[2]", duplicate, "duplicated key=k value=v"},
		}},
	})
}

func TestValidateSidecarSetContainers(t *testing.T) {
	c0 := func(f func(*apps.SidecarContainer)) func(*apps.SidecarSet) {
		return func(ss *apps.SidecarSet) { f(&ss.Spec.Containers[0]) }
	}
	always := ptr.To(corev1.ContainerRestartPolicyAlways)
	runSpecCases(t, []specCase{
		{name: "no containers (validation/11)", mutate: func(ss *apps.SidecarSet) { ss.Spec.Containers = nil },
			want: []wantErr{{"spec.containers", required, "no initContainer or container defined for SidecarSet"}}},
		{name: "init container only", mutate: func(ss *apps.SidecarSet) {
			ss.Spec.InitContainers, ss.Spec.Containers = ss.Spec.Containers, nil
		}},
		{name: "native sidecar with RollingUpdate is allowed here", mutate: func(ss *apps.SidecarSet) {
			init := validContainer("native")
			init.RestartPolicy = always
			ss.Spec.InitContainers = []apps.SidecarContainer{init}
		}},
		{name: "names unique across init and containers (on the init container, as in a pod)", mutate: func(ss *apps.SidecarSet) {
			ss.Spec.InitContainers = []apps.SidecarContainer{validContainer("test-sidecar")}
		}, want: []wantErr{{"spec.initContainers[0].name", duplicate, ""}}},
		{name: "bad name and missing image", mutate: c0(func(c *apps.SidecarContainer) { c.Name, c.Image = "Bad_Name", "" }),
			want: []wantErr{{"spec.containers[0].name", invalid, "RFC 1123 label"}, {"spec.containers[0].image", required, ""}}},
		{name: "pod inject policy (validation/13)", mutate: c0(func(c *apps.SidecarContainer) { c.PodInjectPolicy = "Middle" }),
			want: []wantErr{{"spec.containers[0].podInjectPolicy", invalid, "unsupported pod inject policy"}}},
		{name: "share volume policy", mutate: c0(func(c *apps.SidecarContainer) { c.ShareVolumePolicy.Type = "sometimes" }),
			want: []wantErr{{"spec.containers[0].shareVolumePolicy.type", invalid, "unsupported share volume policy"}}},
		{name: "hot upgrade without empty image", mutate: c0(func(c *apps.SidecarContainer) {
			c.UpgradeStrategy.UpgradeType = apps.SidecarContainerHotUpgrade
		}), want: []wantErr{{"spec.containers[0].upgradeStrategy.hotUpgradeEmptyImage", required, ""}}},
		{name: "hot upgrade with a host port (the twins would bind it twice)", mutate: c0(func(c *apps.SidecarContainer) {
			c.UpgradeStrategy = apps.SidecarContainerUpgradeStrategy{UpgradeType: apps.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "empty:1"}
			c.Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP},
				{ContainerPort: 9090, HostPort: 9090, Protocol: corev1.ProtocolTCP}}
		}), want: []wantErr{{"spec.containers[0].ports[1].hostPort", duplicate, "HotUpgrade sidecar runs as two containers"}}},
		{name: "hot upgrade with container ports only", mutate: c0(func(c *apps.SidecarContainer) {
			c.UpgradeStrategy = apps.SidecarContainerUpgradeStrategy{UpgradeType: apps.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "empty:1"}
			c.Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
		})},
		{name: "unknown upgrade type", mutate: c0(func(c *apps.SidecarContainer) { c.UpgradeStrategy.UpgradeType = "Warm" }),
			want: []wantErr{{"spec.containers[0].upgradeStrategy.upgradeType", notSupported, ""}}},
		{name: "restartPolicy on a container", mutate: c0(func(c *apps.SidecarContainer) { c.RestartPolicy = always }),
			want: []wantErr{{"spec.containers[0].restartPolicy", forbidden, "may not be set for non-init containers"}}},
		{name: "init restartPolicy Never", mutate: func(ss *apps.SidecarSet) {
			init := validContainer("init")
			init.RestartPolicy = ptr.To(corev1.ContainerRestartPolicy("Never"))
			ss.Spec.InitContainers = []apps.SidecarContainer{init}
		}, want: []wantErr{{"spec.initContainers[0].restartPolicy", notSupported, `"Always"`}}},
		{name: "probes on a plain init container", mutate: func(ss *apps.SidecarSet) {
			init := validContainer("init")
			init.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
			ss.Spec.InitContainers = []apps.SidecarContainer{init}
		}, want: []wantErr{{"spec.initContainers[0].readinessProbe", forbidden, "restartPolicy=Always"}}},
		{name: "pull and termination policies", mutate: c0(func(c *apps.SidecarContainer) {
			c.ImagePullPolicy, c.TerminationMessagePolicy = "Sometimes", ""
		}), want: []wantErr{
			{"spec.containers[0].terminationMessagePolicy", required, ""},
			{"spec.containers[0].imagePullPolicy", notSupported, ""},
		}},
	})
}

func TestValidateSidecarSetContainerFields(t *testing.T) {
	c0 := func(f func(*corev1.Container)) func(*apps.SidecarSet) {
		return func(ss *apps.SidecarSet) { f(&ss.Spec.Containers[0].Container) }
	}
	p := "spec.containers[0]."
	runSpecCases(t, []specCase{
		{name: "ports", mutate: c0(func(c *corev1.Container) {
			c.Ports = []corev1.ContainerPort{
				{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP},
				{Name: "http", ContainerPort: 70000, Protocol: "HTTP"},
				{Name: "Not-IANA", Protocol: corev1.ProtocolUDP, HostIP: "x"}, // kube-apiserver does not check hostIP
			}
		}), want: []wantErr{
			{p + "ports[1].name", duplicate, ""},
			{p + "ports[1].containerPort", invalid, "between 1 and 65535"},
			{p + "ports[1].protocol", notSupported, ""},
			{p + "ports[2].name", invalid, ""},
			{p + "ports[2].containerPort", required, ""},
		}},
		{name: "env", mutate: c0(func(c *corev1.Container) {
			c.Env = []corev1.EnvVar{
				{Name: "A", Value: "x"},
				{Name: "1-relaxed.name"},
				{Name: "B", Value: "x", ValueFrom: &corev1.EnvVarSource{}},
				{Name: "C", ValueFrom: &corev1.EnvVarSource{
					FieldRef:        &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"},
					ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "k"}}},
				{Name: "D", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.other"}}},
				{Name: "E", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels['app']"}}},
				{Name: "F", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.gpu"}}},
				{Name: "G", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.phase"}}},
				{Name: "H=I"},
				{Name: "J", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1Mi")}}},
			}
		}), want: []wantErr{
			{p + "env[2].valueFrom", invalid, "must specify one of"},
			{p + "env[3].valueFrom.configMapKeyRef.name", invalid, "RFC 1123 subdomain"},
			{p + "env[3].valueFrom", invalid, "may not have more than one field specified at a time"},
			{p + "env[4].valueFrom.fieldRef.fieldPath", invalid, "field label not supported: spec.other"},
			{p + "env[6].valueFrom.resourceFieldRef.resource", notSupported, ""},
			{p + "env[7].valueFrom.fieldRef.fieldPath", notSupported, ""},
			{p + "env[8].name", invalid, "other than '='"},
			{p + "env[9].valueFrom.resourceFieldRef.divisor", invalid, "only divisor's values 1m and 1"},
		}},
		{name: "envFrom", mutate: c0(func(c *corev1.Container) {
			c.EnvFrom = []corev1.EnvFromSource{
				{Prefix: "P_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
				{},
			}
		}), want: []wantErr{{p + "envFrom[1]", invalid, "must specify one of"}}},
		{name: "resources", mutate: c0(func(c *corev1.Container) {
			c.Resources = corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), "example.com/gpu": resource.MustParse("1")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("-1"), "gpu": resource.MustParse("1")},
			}
		}), want: []wantErr{
			{p + "resources.requests[cpu]", invalid, "must be less than or equal to cpu limit of 100m"},
			{p + "resources.requests[gpu]", invalid, "must be a standard resource type or fully qualified"},
			{p + "resources.requests[gpu]", invalid, "must be a standard resource for containers"},
			{p + "resources.requests[memory]", invalid, "must be greater than or equal to 0"},
		}},
		{name: "probes and lifecycle", mutate: c0(func(c *corev1.Container) {
			c.LivenessProbe = &corev1.Probe{SuccessThreshold: 2, PeriodSeconds: -1}
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(0), Scheme: "FTP"}, TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}}}
			c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{}}}
		}), want: []wantErr{
			{p + "lifecycle.preStop.exec.command", required, ""},
			{p + "livenessProbe", required, "must specify a handler type"},
			{p + "livenessProbe.periodSeconds", invalid, ""},
			{p + "livenessProbe.successThreshold", invalid, "must be 1"},
			{p + "readinessProbe.httpGet.port", invalid, ""},
			{p + "readinessProbe.httpGet.scheme", notSupported, ""},
			{p + "readinessProbe.tcpSocket", forbidden, "may not specify more than 1 handler type"},
		}},
	})
}

func TestValidateSidecarSetVolumes(t *testing.T) {
	pvc := corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "pvc-0"}}
	emptyDir := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	p := "spec.containers[0]."
	runSpecCases(t, []specCase{
		{name: "volume device on a PVC (validation/15)", mutate: func(ss *apps.SidecarSet) {
			ss.Spec.Volumes = []corev1.Volume{{Name: "disk0", VolumeSource: pvc}}
			ss.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "disk0", DevicePath: "/dev/nvme1"}}
		}},
		{name: "volume device without volume", mutate: func(ss *apps.SidecarSet) {
			ss.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "disk0", DevicePath: "/dev/nvme1"}}
		}, want: []wantErr{{p + "volumeDevices[0].name", notFound, "disk0"}}},
		{name: "volume device on an emptyDir", mutate: func(ss *apps.SidecarSet) {
			ss.Spec.Volumes = []corev1.Volume{{Name: "disk0", VolumeSource: emptyDir}}
			ss.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "disk0", DevicePath: "/dev/nvme1"}}
		}, want: []wantErr{{p + "volumeDevices[0].name", invalid, "PersistentVolumeClaim or Ephemeral"}}},
		{name: "device path equals a mount path", mutate: func(ss *apps.SidecarSet) {
			ss.Spec.Volumes = []corev1.Volume{{Name: "disk0", VolumeSource: pvc}, {Name: "log", VolumeSource: emptyDir}}
			ss.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "disk0", DevicePath: "/home/admin/log"}}
			ss.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "log", MountPath: "/home/admin/log"}}
		}, want: []wantErr{
			{p + "volumeMounts[0].mountPath", invalid, "must not already exist as a path in volumeDevices"},
			{p + "volumeDevices[0].devicePath", invalid, "must not already exist as a path in volumeMounts"},
		}},
		{name: "undeclared mount (validation/17)", mutate: func(ss *apps.SidecarSet) {
			ss.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "not-declared", MountPath: "/data"}}
		}, want: []wantErr{{p + "volumeMounts[0].name", notFound, "not-declared"}}},
		{name: "mount paths", mutate: func(ss *apps.SidecarSet) {
			ss.Spec.Volumes = []corev1.Volume{{Name: "log", VolumeSource: emptyDir}}
			ss.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
				{Name: "log", MountPath: "/a"}, {Name: "log", MountPath: "/a", SubPath: "../x"}, {Name: "log"},
			}
		}, want: []wantErr{
			{p + "volumeMounts[1].mountPath", invalid, "must be unique"},
			{p + "volumeMounts[1].subPath", invalid, "must not contain '..'"},
			{p + "volumeMounts[2].mountPath", required, ""},
		}},
		{name: "volumes", mutate: func(ss *apps.SidecarSet) {
			ss.Spec.Volumes = []corev1.Volume{
				{Name: "a", VolumeSource: emptyDir},
				{Name: "a", VolumeSource: emptyDir},
				{Name: "Bad_Name", VolumeSource: emptyDir},
				{Name: "none"},
				{Name: "two", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}, HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}},
				{Name: "hostpath", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{}}},
			}
		}, want: []wantErr{
			{"spec.volumes[1].name", duplicate, ""},
			{"spec.volumes[2].name", invalid, ""},
			{"spec.volumes[3]", required, "must specify a volume type"},
			{"spec.volumes[4].hostPath", forbidden, "may not specify more than 1 volume type"},
			{"spec.volumes[5].hostPath.path", required, ""},
		}},
	})
}

func TestValidateSidecarSetTransferEnv(t *testing.T) {
	ref := func(apiVersion, fieldPath string) func(*apps.SidecarSet) {
		return func(ss *apps.SidecarSet) {
			ss.Spec.Containers[0].TransferEnv = []apps.TransferEnvVar{{EnvName: "PROXY_IP",
				SourceContainerNameFrom: &apps.SourceContainerNameSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: apiVersion, FieldPath: fieldPath}}}}
		}
	}
	p := "spec.containers[0].transferEnv[0].sourceContainerNameFrom.fieldRef."
	runSpecCases(t, []specCase{
		{name: "label", mutate: ref("v1", "metadata.labels['biz']")},
		{name: "annotation is lower-cased", mutate: ref("v1", "metadata.annotations['Example.com/Biz']")},
		{name: "apiVersion v2 (validation/75)", mutate: ref("v2", "metadata.labels['biz']"),
			want: []wantErr{{p + "fieldPath", invalid, "error converting fieldPath: unsupported pod version: v2"}}},
		{name: "missing apiVersion and fieldPath", mutate: ref("", ""),
			want: []wantErr{{p + "apiVersion", required, ""}, {p + "fieldPath", required, ""}}},
		{name: "bad label key (validation/77)", mutate: ref("v1", "metadata.labels['bad key!']"),
			want: []wantErr{{p + "fieldPath", invalid, "bad key!"}}},
		{name: "metadata.name is not supported", mutate: ref("v1", "metadata.name"),
			want: []wantErr{{p + "fieldPath", invalid, "error converting fieldPath: field label not supported: metadata.name"}}},
		{name: "subscript of another field", mutate: ref("v1", "spec.containers['x']"),
			want: []wantErr{{p + "fieldPath", invalid, "error converting fieldPath: field path not supported: spec.containers"}}},
	})
}

func TestValidateSidecarSetResourcesPolicy(t *testing.T) {
	policy := func(mode apps.TargetContainersModeType, regex string, expr apps.ResourcesExpr) *apps.ResourcesPolicy {
		return &apps.ResourcesPolicy{TargetContainersMode: mode, TargetContainersNameRegex: &regex, ResourcesExpr: expr}
	}
	limitsCPU := func(e string) apps.ResourcesExpr { return apps.ResourcesExpr{Limits: &apps.ResourceExprLimits{CPU: e}} }
	c0 := func(p *apps.ResourcesPolicy) func(*apps.SidecarSet) {
		return func(ss *apps.SidecarSet) { ss.Spec.Containers[0].ResourcesPolicy = p }
	}
	native := func(restart *corev1.ContainerRestartPolicy) func(*apps.SidecarSet) {
		return func(ss *apps.SidecarSet) {
			init := validContainer("init")
			init.RestartPolicy = restart
			init.ResourcesPolicy = policy(apps.TargetContainersModeSum, ".*", limitsCPU("cpu*50%"))
			ss.Spec.InitContainers = []apps.SidecarContainer{init}
		}
	}
	p := "spec.containers[0].resourcesPolicy."
	runSpecCases(t, []specCase{
		{name: "complex expressions (validation/45)", mutate: c0(policy(apps.TargetContainersModeSum, "^app.*$", apps.ResourcesExpr{
			Limits:   &apps.ResourceExprLimits{CPU: "0.5*cpu - 0.3*max(0, cpu-4) + 0.3*max(0, cpu-8)", Memory: "max(memory*50%, 100Mi)"},
			Requests: &apps.ResourceExprRequests{CPU: "max(cpu*50%, 50m)", Memory: "100Mi"},
		}))},
		{name: "with resources (validation/33)", mutate: func(ss *apps.SidecarSet) {
			c0(policy(apps.TargetContainersModeSum, ".*", limitsCPU("cpu*50%")))(ss)
			ss.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}
		}, want: []wantErr{{"spec.containers[0].resourcesPolicy", forbidden, "resourcesPolicy and resources cannot be configured together"}}},
		{name: "plain init container (validation/35)", mutate: native(nil),
			want: []wantErr{{"spec.initContainers[0].resourcesPolicy", forbidden, "resourcesPolicy is only supported for containers with RestartPolicy Always"}}},
		{name: "native sidecar", mutate: native(ptr.To(corev1.ContainerRestartPolicyAlways))},
		{name: "invalid regex (validation/37)", mutate: c0(policy(apps.TargetContainersModeSum, "[invalid(regex", limitsCPU("cpu*50%"))),
			want: []wantErr{{p + "targetContainersNameRegex", invalid, "invalid regex pattern"}}},
		{name: "empty regex (validation/43) and unknown mode", mutate: c0(policy("avg", "", limitsCPU("cpu*50%"))),
			want: []wantErr{{p + "targetContainersMode", notSupported, ""}, {p + "targetContainersNameRegex", required, "invalid empty regex"}}},
		{name: "bad expression (validation/39)", mutate: c0(policy(apps.TargetContainersModeSum, ".*", limitsCPU("invalid expression @#$"))),
			want: []wantErr{{p + "resourcesExpr.limits.cpu", invalid, "invalid expression"}}},
		{name: "unknown variable (validation/41)", mutate: c0(policy(apps.TargetContainersModeSum, ".*", limitsCPU("invalidvar * 50%"))),
			want: []wantErr{{p + "resourcesExpr.limits.cpu", invalid, "invalid expression: undefined variable: invalidvar"}}},
		{name: "wrong variable", mutate: c0(policy(apps.TargetContainersModeMax, ".*", apps.ResourcesExpr{
			Requests: &apps.ResourceExprRequests{CPU: "memory", Memory: "cpu * 2"}})),
			want: []wantErr{
				{p + "resourcesExpr.requests.cpu", invalid, "undefined variable: memory"},
				{p + "resourcesExpr.requests.memory", invalid, "undefined variable: cpu"},
			}},
		{name: "quantity times variable", mutate: c0(policy(apps.TargetContainersModeSum, ".*", limitsCPU("cpu * 100m"))),
			want: []wantErr{{p + "resourcesExpr.limits.cpu", invalid, "multiplication of two quantities"}}},
		{name: "no limits nor requests", mutate: c0(policy(apps.TargetContainersModeSum, ".*", apps.ResourcesExpr{})),
			want: []wantErr{{p + "resourcesExpr", required, "at least one of limits or requests must be configured"}}},
	})
}

func TestValidateSidecarSetPatchPodMetadata(t *testing.T) {
	runSpecCases(t, []specCase{
		{name: "duplicate key (validation/19)", mutate: func(ss *apps.SidecarSet) {
			ss.Spec.PatchPodMetadata = []apps.SidecarSetPatchPodMetadata{
				{PatchPolicy: apps.SidecarSetMergePatchJsonPatchPolicy, Annotations: map[string]string{"acc.example.com/key1": `{"a":1}`}},
				{PatchPolicy: apps.SidecarSetOverwritePatchPolicy, Annotations: map[string]string{"acc.example.com/key1": "value1"}},
			}
		}, want: []wantErr{{"spec.patchPodMetadata[1].annotations[acc.example.com/key1]", duplicate, "patch annotation[acc.example.com/key1] already exist"}}},
		{name: "empty, bad key, policies", mutate: func(ss *apps.SidecarSet) {
			ss.Spec.PatchPodMetadata = []apps.SidecarSetPatchPodMetadata{
				{PatchPolicy: apps.SidecarSetRetainPatchPolicy},
				{PatchPolicy: "", Annotations: map[string]string{"bad key": "v"}},
				{PatchPolicy: "Merge", Annotations: map[string]string{"k": "v"}},
			}
		}, want: []wantErr{
			{"spec.patchPodMetadata[0].annotations", required, "no annotations defined for SidecarSet"},
			{"spec.patchPodMetadata[1].annotations", invalid, "bad key"},
			{"spec.patchPodMetadata[1].patchPolicy", required, ""},
			{"spec.patchPodMetadata[2].patchPolicy", notSupported, ""},
		}},
	})
}

// A SidecarSet using most fields, decoded and defaulted like a request, is valid.
func TestValidateSidecarSetFullExample(t *testing.T) {
	ss := decode(t, newScheme(t), []byte(`
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata:
  name: full
  labels: {sidecar: log-agent}
spec:
  selector: {matchLabels: {app: nginx}}
  namespaceSelector: {matchExpressions: [{key: env, operator: In, values: [prod]}]}
  updateStrategy:
    type: RollingUpdate
    maxUnavailable: 20%
    priorityStrategy: {weightPriority: [{weight: 50, matchSelector: {matchLabels: {tier: a}}}]}
    scatterStrategy: [{key: zone, value: "*"}]
  injectionStrategy: {revision: {revisionName: full-abc}}
  imagePullSecrets: [{name: secret}]
  initContainers:
  - name: init
    image: busybox
    command: [sh, -c, "true"]
  - name: native
    image: envoy:v1
    restartPolicy: Always
    readinessProbe: {httpGet: {port: 15021, path: /ready}}
    resourcesPolicy:
      targetContainersMode: max
      targetContainersNameRegex: ^app$
      resourcesExpr: {requests: {cpu: "cpu*10%", memory: "memory*10%"}}
  containers:
  - name: agent
    image: agent:1.0
    ports: [{name: metrics, containerPort: 9100}]
    env:
    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: LIMIT, valueFrom: {resourceFieldRef: {resource: limits.memory}}}
    - {name: TOKEN, valueFrom: {secretKeyRef: {name: s, key: token}}}
    envFrom: [{configMapRef: {name: cm}}]
    volumeMounts: [{name: logs, mountPath: /var/log, subPathExpr: $(POD)}]
    volumeDevices: [{name: disk, devicePath: /dev/xvda}]
    livenessProbe: {tcpSocket: {port: metrics}}
    lifecycle: {preStop: {sleep: {seconds: 5}}}
    resources: {limits: {cpu: "1", memory: 1Gi}, requests: {cpu: 100m, memory: 128Mi}}
    upgradeStrategy: {upgradeType: HotUpgrade, hotUpgradeEmptyImage: empty:1}
    shareVolumePolicy: {type: enabled}
    transferEnv: [{sourceContainerNameFrom: {fieldRef: {fieldPath: "metadata.labels['main']"}}, envNames: [A, B]}]
  volumes:
  - {name: logs, emptyDir: {}}
  - {name: disk, persistentVolumeClaim: {claimName: data}}
  - {name: conf, configMap: {name: conf, items: [{key: a, path: conf/a}]}}
  patchPodMetadata:
  - annotations: {oom-score: '{"agent": 1}'}
    patchPolicy: MergePatchJson
`))
	checkErrors(t, nil, ValidateSidecarSet(ss))
}
