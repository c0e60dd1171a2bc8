package podvalidation

import (
	"reflect"
	"strings"
)

// Pools of values the generators draw from: valid values, the edge of validity and typical
// mistakes, by "Struct.Field", then by field name, then by type name.
var (
	names = []string{"", "a", "web", "x-1", "proxy", "conf", "scratch", "claim", "Bad_Name!", "-bad", "UPPER",
		"a.b", strings.Repeat("a", 63), strings.Repeat("a", 64), "1abc"}
	paths = []string{"", "/data", "/x/y", "data", "a/b", "../x", "a/../b", "..x", "..", "/", "./a", `a\..\b`, "a/..", "$(POD_NAME)"}
	keys  = []string{"", "k", "a.b", "bad key", "..", ".a", "a/b", "_k", strings.Repeat("k", 254)}
	env   = []string{"", "A", "ok_NAME", "1bad", "a=b", "a-b.c", "é", " "}

	stringPools = map[string][]string{
		"Container.Name":                                   append(names, "proxy", "proxy", "block", "native", "init"),
		"Container.Image":                                  {"", "nginx", " nginx", "nginx:latest", "a/b:1", "nginx "},
		"HTTPHeader.Name":                                  {"", "X-A", "bad header", "a:b", "Accept"},
		"EnvVar.Name":                                      env,
		"EnvFromSource.Prefix":                             env,
		"FileKeySelector.Key":                              env,
		"FileKeySelector.VolumeName":                       append(names, "scratch", "scratch"),
		"ContainerPort.Name":                               {"", "http", "a-b", "Bad", "1234", "toolongportname1", "-a", "a--b"},
		"ContainerPort.HostIP":                             {"", "127.0.0.1", "x", "::1"},
		"VolumeMount.Name":                                 append(names, "scratch", "conf", "host", "claim"),
		"VolumeDevice.Name":                                append(names, "claim", "scratch-claim", "scratch"),
		"Volume.Name":                                      names,
		"ResourceClaim.Name":                               {"", "gpu", "Bad!"},
		"ResourceClaim.Request":                            {"", "r1", "Bad!"},
		"ObjectFieldSelector.FieldPath":                    {"", "metadata.name", "metadata.labels", "metadata.annotations", "metadata.labels['a']", "metadata.annotations['A/b']", "metadata.labels['bad key']", "spec.nodeName", "spec.host", "status.podIP", "spec.restartPolicy", "spec.containers['x']", "bogus"},
		"ObjectFieldSelector.APIVersion":                   {"", "v1", "v2"},
		"ResourceFieldSelector.Resource":                   {"", "limits.cpu", "requests.memory", "limits.ephemeral-storage", "requests.hugepages-2Mi", "limits.gpu", "cpu"},
		"ResourceFieldSelector.ContainerName":              {"", "proxy", "nope"},
		"CSIVolumeSource.Driver":                           {"", "csi.example.com", "CSI.Example.com", "bad_driver", strings.Repeat("d", 64)},
		"FlexVolumeSource.Driver":                          {"", "example.com/flex"},
		"ISCSIVolumeSource.IQN":                            {"", "iqn.2001-04.com.example:storage", "eui.0123456789ABCDEF", "naa.60014055f7a1234567890123456789ab", "iqn.bad", "foo"},
		"ISCSIVolumeSource.InitiatorName":                  {"", "iqn.2001-04.com.example:node", "eui.0123456789ABCDEF", "eui.1", "foo"},
		"ISCSIVolumeSource.TargetPortal":                   {"", "10.0.0.1:3260", strings.Repeat("t", 70)},
		"QuobyteVolumeSource.Registry":                     {"", "q:7861", "q1:7861,q2", "noport"},
		"QuobyteVolumeSource.Tenant":                       {"", "t", strings.Repeat("t", 65)},
		"AzureDiskVolumeSource.DataDiskURI":                {"", "https://a.blob.core.windows.net/c/d.vhd", "/subscriptions/x", "ftp://x"},
		"FlockerVolumeSource.DatasetName":                  {"", "ds", "a/b"},
		"WindowsSecurityContextOptions.RunAsUserName":      {"", "user", `D\u`, `a\b\c`, "..", "us:er", `bad..domain!\u`, "\x01", strings.Repeat("u", 105)},
		"WindowsSecurityContextOptions.GMSACredentialSpec": {"", "{}"},
		"TypedLocalObjectReference.Kind":                   {"", "PersistentVolumeClaim", "VolumeSnapshot"},
		"TypedObjectReference.Kind":                        {"", "PersistentVolumeClaim", "VolumeSnapshot"},
		"TypedObjectReference.Namespace":                   {"", "ns", "Bad!"},
		"LabelSelectorRequirement.Operator":                {"", "In", "NotIn", "Exists", "DoesNotExist", "Like"},
		"Key":                                              keys,
		"Path":                                             paths,
		"MountPath":                                        paths,
		"DevicePath":                                       paths,
		"SubPath":                                          paths,
		"SubPathExpr":                                      paths,
		"Directory":                                        paths,
		"LocalhostProfile":                                 append(paths, " p", strings.Repeat("p", 4096)),
		"TerminationMessagePath":                           paths,
		"WorkingDir":                                       paths,
		"Name":                                             names,
		"SecretName":                                       names,
		"ClaimName":                                        names,
		"VolumeName":                                       names,
		"VolumeNamespace":                                  names,
		"StorageClassName":                                 names,
		"VolumeAttributesClassName":                        names,
		"GMSACredentialSpecName":                           names,
		"APIGroup":                                         {"", "snapshot.storage.k8s.io", "Bad!"},
		// enums
		"Protocol":                                {"", "TCP", "UDP", "SCTP", "HTTP"},
		"PullPolicy":                              {"", "Always", "IfNotPresent", "Never", "Sometimes"},
		"TerminationMessagePolicy":                {"", "File", "FallbackToLogsOnError", "Bogus"},
		"MountPropagationMode":                    {"None", "HostToContainer", "Bidirectional", "Bogus"},
		"RecursiveReadOnlyMode":                   {"Disabled", "IfPossible", "Enabled", "Bogus"},
		"URIScheme":                               {"", "HTTP", "HTTPS", "FTP"},
		"HostPathType":                            {"", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice", "Bogus"},
		"ProcMountType":                           {"Default", "Unmasked", "Bogus"},
		"SeccompProfileType":                      {"", "Localhost", "RuntimeDefault", "Unconfined", "Bogus"},
		"AppArmorProfileType":                     {"", "Localhost", "RuntimeDefault", "Unconfined", "Bogus"},
		"ResourceName":                            {"cpu", "memory", "ephemeral-storage", "hugepages-2Mi", "hugepages-1Gi", "hugepages-x", "example.com/gpu", "kubernetes.io/x", "gpu", "pods", "bad name", "requests.cpu", "requests.hugepages-2Mi", "example.com/bad name", "storage"},
		"ResourceResizeRestartPolicy":             {"", "NotRequired", "RestartContainer", "Bogus"},
		"StorageMedium":                           {"", "Memory", "HugePages", "Bogus"},
		"AzureDataDiskCachingMode":                {"None", "ReadOnly", "ReadWrite", "Bogus"},
		"AzureDataDiskKind":                       {"Shared", "Dedicated", "Managed", "Bogus"},
		"PersistentVolumeAccessMode":              {"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod", "Bogus"},
		"PersistentVolumeMode":                    {"Block", "Filesystem", "Bogus"},
		"Capability":                              {"NET_ADMIN", "CAP_SYS_ADMIN", "ALL"},
		"Signal":                                  {"SIGTERM", "SIGBOGUS"},
		"ContainerRestartRuleAction":              {"", "Restart", "RestartAllContainers", "Bogus"},
		"ContainerRestartRuleOnExitCodesOperator": {"", "In", "NotIn", "Bogus"},
	}

	intPools = map[string][]int64{
		"ContainerPort":                 {0, 1, 80, 65535, 65536, -1},
		"HostPort":                      {0, 1, 80, 65535, 65536, -1},
		"Port":                          {0, 1, 80, 65535, 65536, -1},
		"IntVal":                        {0, 1, 80, 65535, 65536, -1},
		"RunAsUser":                     {0, 1000, -1, 2147483647, 2147483648},
		"RunAsGroup":                    {0, 1000, -1, 2147483647, 2147483648},
		"Mode":                          {0, 0400, 0777, 01000, -1},
		"DefaultMode":                   {0, 0400, 0777, 01000, -1},
		"InitialDelaySeconds":           {0, 1, -1, 10},
		"TimeoutSeconds":                {0, 1, -1, 10},
		"PeriodSeconds":                 {0, 1, -1, 10},
		"SuccessThreshold":              {0, 1, 2, -1},
		"FailureThreshold":              {0, 1, -1, 3},
		"TerminationGracePeriodSeconds": {0, 1, -1, 30},
		"Seconds":                       {-1, 0, 5},
		"ExpirationSeconds":             {599, 600, 3600, 1 << 32, 1<<32 + 1, -1},
		"Lun":                           {-1, 0, 255, 256},
		"Partition":                     {-1, 0, 255, 256},
		"Values":                        {0, 1, 255},
	}

	quantities  = []string{"0", "1", "-1", "100m", "1.5", "0.5", "2Mi", "3Mi", "4Mi", "1Gi", "-1Gi", "1m", "1k", "1Ki", "1000m", "0.0001"}
	mapKeys     = []string{"a", "bad key", "example.com/x", "kubernetes.io/x", "k8s.io/y", "-a"}
	mapValues   = []string{"v", "bad value!", ""}
	defaultInts = []int64{-1, 0, 1, 2}
)

// stringPool returns the pool for field of parent with type t.
func stringPool(parent reflect.Type, field string, t reflect.Type) []string {
	if p, ok := stringPools[parent.Name()+"."+field]; ok {
		return p
	}
	if p, ok := stringPools[field]; ok {
		return p
	}
	if p, ok := stringPools[t.Name()]; ok {
		return p
	}
	return names
}

func intPool(field string) []int64 {
	if p, ok := intPools[field]; ok {
		return p
	}
	return defaultInts
}
