package podvalidation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// baseline returns a valid SidecarSet content that sets most container fields and has a volume
// of every kind, so that mutating one of its values exercises every rule.
func baseline() sidecars {
	return sidecars{
		Containers:     []v1alpha1.SidecarContainer{{Container: fullContainer("proxy")}, {Container: deviceContainer()}},
		InitContainers: []v1alpha1.SidecarContainer{nativeSidecar("native", probed), container("init", initOnly)},
		Volumes:        allVolumes(),
	}
}

func fullContainer(name string) corev1.Container {
	c := corev1.Container{
		Name:       name,
		Image:      "example.com/proxy:1.0",
		Command:    []string{"proxy"},
		WorkingDir: "/work",
		Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
			{Name: "admin", ContainerPort: 9090, HostPort: 19090, HostIP: "127.0.0.1", Protocol: corev1.ProtocolUDP},
		},
		EnvFrom: []corev1.EnvFromSource{
			{Prefix: "CM_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "proxy-env"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "proxy-secret"}}},
		},
		Env: []corev1.EnvVar{
			{Name: "PLAIN", Value: "x"},
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
			{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
			{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "CM", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "k"}}},
			{Name: "SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "token"}}},
			{Name: "FROM_FILE", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "scratch", Path: "env/file", Key: "FROM_FILE"}}},
		},
		Resources: corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"), "example.com/gpu": resource.MustParse("1")},
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		},
		ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "scratch", MountPath: "/scratch", SubPathExpr: "$(POD_NAME)"},
			{Name: "conf", MountPath: "/etc/conf", ReadOnly: true, RecursiveReadOnly: ptr.To(corev1.RecursiveReadOnlyIfPossible)},
			{Name: "host", MountPath: "/host", SubPath: "logs", MountPropagation: ptr.To(corev1.MountPropagationHostToContainer)},
		},
		LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}},
			InitialDelaySeconds: 5, TerminationGracePeriodSeconds: ptr.To[int64](10)},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8080),
			Scheme: corev1.URISchemeHTTPS, HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "1"}}}}, PeriodSeconds: 3},
		StartupProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090}}, FailureThreshold: 30},
		Lifecycle: &corev1.Lifecycle{
			PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
			PreStop:   &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}},
		},
		TerminationMessagePath:   "/dev/termination-log",
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		SecurityContext: &corev1.SecurityContext{
			Capabilities:             &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}, Drop: []corev1.Capability{"ALL"}},
			Privileged:               ptr.To(false),
			SELinuxOptions:           &corev1.SELinuxOptions{Level: "s0:c123,c456"},
			WindowsOptions:           &corev1.WindowsSecurityContextOptions{GMSACredentialSpecName: ptr.To("spec"), RunAsUserName: ptr.To(`DOMAIN\user`)},
			RunAsUser:                ptr.To[int64](1000),
			RunAsGroup:               ptr.To[int64](1000),
			RunAsNonRoot:             ptr.To(true),
			ReadOnlyRootFilesystem:   ptr.To(true),
			AllowPrivilegeEscalation: ptr.To(false),
			ProcMount:                ptr.To(corev1.DefaultProcMount),
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("profiles/proxy.json")},
			AppArmorProfile:          &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("proxy")},
		},
	}
	return c
}

// deviceContainer uses the block volumes and claims.
func deviceContainer() corev1.Container {
	return corev1.Container{
		Name:          "block",
		Image:         "example.com/block@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		VolumeDevices: []corev1.VolumeDevice{{Name: "claim", DevicePath: "/dev/xvda"}, {Name: "scratch-claim", DevicePath: "/dev/xvdb"}},
		Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi"), "hugepages-2Mi": resource.MustParse("4Mi")},
		},
	}
}

func probed(c *corev1.Container) {
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(15000)}}}
	c.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	c.RestartPolicyRules = []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	c.Ports = []corev1.ContainerPort{{ContainerPort: 15000, HostPort: 15000}}
}

func initOnly(c *corev1.Container) {
	c.Args = []string{"--once"}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	c.Ports = []corev1.ContainerPort{{ContainerPort: 15000, HostPort: 15000}}
}

func allVolumes() []corev1.Volume {
	ref := corev1.LocalObjectReference{Name: "secret"}
	return []corev1.Volume{
		volume("scratch", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("1Gi"))}}),
		volume("conf", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"},
			Items: []corev1.KeyToPath{{Key: "a", Path: "conf/a", Mode: ptr.To[int32](0400)}}, DefaultMode: ptr.To[int32](0644), Optional: ptr.To(true)}}),
		volume("host", corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log", Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}),
		volume("claim", corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data", ReadOnly: true}}),
		volume("scratch-claim", corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "proxy"}, Annotations: map[string]string{"example.com/a": "b"}},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				StorageClassName: ptr.To("fast"),
				VolumeMode:       ptr.To(corev1.PersistentVolumeBlock),
				Selector:         &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "fast"}},
				DataSource:       &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "origin"},
				DataSourceRef:    &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "origin"},
			},
		}}}),
		volume("secret", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", Items: []corev1.KeyToPath{{Key: "k", Path: "k"}}}}),
		volume("projected", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{Secret: &corev1.SecretProjection{LocalObjectReference: ref, Items: []corev1.KeyToPath{{Key: "k", Path: "secret/k"}}}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Items: []corev1.KeyToPath{{Key: "k", Path: "cm/k"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}},
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "api", ExpirationSeconds: ptr.To[int64](7200), Path: "token"}},
		}}}),
		volume("downward", corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
			{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "proxy", Resource: "requests.cpu", Divisor: resource.MustParse("1m")}},
		}}}),
		volume("git", corev1.VolumeSource{GitRepo: &corev1.GitRepoVolumeSource{Repository: "https://example.com/repo.git", Directory: "repo"}}),
		volume("gce", corev1.VolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: "disk", Partition: 1}}),
		volume("ebs", corev1.VolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1", Partition: 2}}),
		volume("nfs", corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs.example.com", Path: "/exports"}}),
		volume("iscsi", corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "10.0.0.1:3260", IQN: "iqn.2001-04.com.example:storage", Lun: 1,
			InitiatorName: ptr.To("iqn.2001-04.com.example:node"), SessionCHAPAuth: true, SecretRef: &ref}}),
		volume("gluster", corev1.VolumeSource{Glusterfs: &corev1.GlusterfsVolumeSource{EndpointsName: "ep", Path: "vol"}}),
		volume("flocker", corev1.VolumeSource{Flocker: &corev1.FlockerVolumeSource{DatasetName: "ds"}}),
		volume("rbd", corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{CephMonitors: []string{"10.0.0.2:6789"}, RBDImage: "img"}}),
		volume("cinder", corev1.VolumeSource{Cinder: &corev1.CinderVolumeSource{VolumeID: "vol", SecretRef: &ref}}),
		volume("cephfs", corev1.VolumeSource{CephFS: &corev1.CephFSVolumeSource{Monitors: []string{"10.0.0.3:6789"}}}),
		volume("quobyte", corev1.VolumeSource{Quobyte: &corev1.QuobyteVolumeSource{Registry: "q1:7861,q2:7861", Volume: "vol", Tenant: "t"}}),
		volume("fc", corev1.VolumeSource{FC: &corev1.FCVolumeSource{TargetWWNs: []string{"500a0982991b8dc5"}, Lun: ptr.To[int32](2)}}),
		volume("flex", corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{Driver: "example.com/flex", Options: map[string]string{"example.com/opt": "1"}}}),
		volume("azurefile", corev1.VolumeSource{AzureFile: &corev1.AzureFileVolumeSource{SecretName: "azure", ShareName: "share"}}),
		volume("vsphere", corev1.VolumeSource{VsphereVolume: &corev1.VsphereVirtualDiskVolumeSource{VolumePath: "[ds] vol.vmdk"}}),
		volume("photon", corev1.VolumeSource{PhotonPersistentDisk: &corev1.PhotonPersistentDiskVolumeSource{PdID: "pd"}}),
		volume("portworx", corev1.VolumeSource{PortworxVolume: &corev1.PortworxVolumeSource{VolumeID: "px"}}),
		volume("azuredisk", corev1.VolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{DiskName: "d", DataDiskURI: "/subscriptions/s/resourcegroups/g/providers/microsoft.compute/disks/d",
			Kind: ptr.To(corev1.AzureManagedDisk), CachingMode: ptr.To(corev1.AzureDataDiskCachingReadOnly)}}),
		volume("storageos", corev1.VolumeSource{StorageOS: &corev1.StorageOSVolumeSource{VolumeName: "vol", VolumeNamespace: "ns", SecretRef: &ref}}),
		volume("scaleio", corev1.VolumeSource{ScaleIO: &corev1.ScaleIOVolumeSource{Gateway: "https://gw", System: "sys", VolumeName: "vol", SecretRef: &ref}}),
		volume("csi", corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "csi.example.com", NodePublishSecretRef: &ref, VolumeAttributes: map[string]string{"a": "b"}}}),
		volume("image", corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "example.com/data:1", PullPolicy: corev1.PullIfNotPresent}}),
	}
}
