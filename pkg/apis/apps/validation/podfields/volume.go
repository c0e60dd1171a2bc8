package podfields

import (
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxFileMode is the largest file mode a volume may set (0777).
const maxFileMode = 0777

const fileModeMsg = "must be a number between 0 and 0777 (octal), both inclusive"

// ValidateVolumes validates volumes (at path, spec.volumes of a SidecarSet) as kube-apiserver
// validates a pod's volumes and returns the valid ones by name, for ValidateContainers: a volume
// with any error is left out (its mounts are then reported as not found), and a name is a
// duplicate only of a valid volume. That an ephemeral volume's PVC name (<pod name>-<volume name>)
// is valid, and that no persistentVolumeClaim volume names it, depend on the pod's name and are
// the pod's problem.
func ValidateVolumes(volumes []corev1.Volume, path *field.Path) (map[string]*corev1.Volume, field.ErrorList) {
	byName := map[string]*corev1.Volume{}
	var allErrs field.ErrorList
	for i := range volumes {
		v := &volumes[i]
		p := path.Index(i)
		errs := validateVolumeSource(&v.VolumeSource, v.Name, p)
		errs = append(errs, validateDNSLabel(v.Name, p.Child("name"))...)
		if byName[v.Name] != nil {
			errs = append(errs, field.Duplicate(p.Child("name"), v.Name))
		}
		if len(errs) == 0 {
			byName[v.Name] = v
		}
		allErrs = append(allErrs, errs...)
	}
	return byName, allErrs
}

// validateDNSLabel requires a DNS-1123 label.
func validateDNSLabel(value string, path *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	return validateDNSLabelValue(value, path)
}

// validateDNSLabelValue reports why value is not a DNS-1123 label, the empty value included.
func validateDNSLabelValue(value string, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Label(value) {
		allErrs = append(allErrs, field.Invalid(path, value, msg))
	}
	return allErrs
}

// validateDNSSubdomainName reports why name is not an object name (a DNS-1123 subdomain; prefix
// allows a trailing '-'), the empty name included.
func validateDNSSubdomainName(name string, prefix bool, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, prefix) {
		allErrs = append(allErrs, field.Invalid(path, name, msg))
	}
	return allErrs
}

// validateQualifiedName reports why value is not a qualified name ([prefix/]name).
func validateQualifiedName(value string, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsQualifiedName(value) {
		allErrs = append(allErrs, field.Invalid(path, value, msg))
	}
	return allErrs
}

func validateRequired(value string, path *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	return nil
}

func validateFileMode(mode *int32, path *field.Path) field.ErrorList {
	if mode != nil && (*mode < 0 || *mode > maxFileMode) {
		return field.ErrorList{field.Invalid(path, *mode, fileModeMsg)}
	}
	return nil
}

// validateLocalDescendingPath requires a relative path without "..".
func validateLocalDescendingPath(p string, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if strings.HasPrefix(p, "/") {
		allErrs = append(allErrs, field.Invalid(path, p, "must be a relative path"))
	}
	return append(allErrs, validatePathNoBacksteps(p, path)...)
}

// validateLocalNonReservedPath requires a relative path without ".." that does not start with "..".
func validateLocalNonReservedPath(p string, path *field.Path) field.ErrorList {
	allErrs := validateLocalDescendingPath(p, path)
	if strings.HasPrefix(p, "..") && !strings.HasPrefix(p, "../") {
		allErrs = append(allErrs, field.Invalid(path, p, "must not start with '..'"))
	}
	return allErrs
}

// validatePathNoBacksteps rejects a ".." path element (of the server's OS, as kube-apiserver).
func validatePathNoBacksteps(p string, path *field.Path) field.ErrorList {
	for _, item := range strings.Split(filepath.ToSlash(p), "/") {
		if item == ".." {
			return field.ErrorList{field.Invalid(path, p, "must not contain '..'")}
		}
	}
	return nil
}

// validateKeyToPaths validates the items of a configMap or secret volume or projection.
func validateKeyToPaths(items []corev1.KeyToPath, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, item := range items {
		p := path.Index(i)
		allErrs = append(allErrs, validateRequired(item.Key, p.Child("key"))...)
		allErrs = append(allErrs, validateRequired(item.Path, p.Child("path"))...)
		allErrs = append(allErrs, validateLocalNonReservedPath(item.Path, p.Child("path"))...)
		allErrs = append(allErrs, validateFileMode(item.Mode, p.Child("mode"))...)
	}
	return allErrs
}

// volumeSourceValidator validates one kind of volume source when it is set.
type volumeSourceValidator struct {
	name     string
	set      func(*corev1.VolumeSource) bool
	validate func(src *corev1.VolumeSource, volName string, path *field.Path) field.ErrorList
}

// volumeSourceValidators lists the volume sources in kube-apiserver's order: the first one set is
// validated, every further one is forbidden.
var volumeSourceValidators = []volumeSourceValidator{
	{"hostPath", func(s *corev1.VolumeSource) bool { return s.HostPath != nil }, validateHostPath},
	{"gitRepo", func(s *corev1.VolumeSource) bool { return s.GitRepo != nil }, validateGitRepo},
	{"gcePersistentDisk", func(s *corev1.VolumeSource) bool { return s.GCEPersistentDisk != nil }, validateGCEPersistentDisk},
	{"awsElasticBlockStore", func(s *corev1.VolumeSource) bool { return s.AWSElasticBlockStore != nil }, validateAWSElasticBlockStore},
	{"secret", func(s *corev1.VolumeSource) bool { return s.Secret != nil }, validateSecretVolume},
	{"nfs", func(s *corev1.VolumeSource) bool { return s.NFS != nil }, validateNFS},
	{"iscsi", func(s *corev1.VolumeSource) bool { return s.ISCSI != nil }, validateISCSI},
	{"glusterfs", func(s *corev1.VolumeSource) bool { return s.Glusterfs != nil }, validateGlusterfs},
	{"flocker", func(s *corev1.VolumeSource) bool { return s.Flocker != nil }, validateFlocker},
	{"persistentVolumeClaim", func(s *corev1.VolumeSource) bool { return s.PersistentVolumeClaim != nil }, validatePersistentVolumeClaim},
	{"rbd", func(s *corev1.VolumeSource) bool { return s.RBD != nil }, validateRBD},
	{"cinder", func(s *corev1.VolumeSource) bool { return s.Cinder != nil }, validateCinder},
	{"cephfs", func(s *corev1.VolumeSource) bool { return s.CephFS != nil }, validateCephFS},
	{"quobyte", func(s *corev1.VolumeSource) bool { return s.Quobyte != nil }, validateQuobyte},
	{"downwardAPI", func(s *corev1.VolumeSource) bool { return s.DownwardAPI != nil }, validateDownwardAPIVolume},
	{"fc", func(s *corev1.VolumeSource) bool { return s.FC != nil }, validateFC},
	{"flexVolume", func(s *corev1.VolumeSource) bool { return s.FlexVolume != nil }, validateFlexVolume},
	{"configMap", func(s *corev1.VolumeSource) bool { return s.ConfigMap != nil }, validateConfigMapVolume},
	{"azureFile", func(s *corev1.VolumeSource) bool { return s.AzureFile != nil }, validateAzureFile},
	{"vsphereVolume", func(s *corev1.VolumeSource) bool { return s.VsphereVolume != nil }, validateVsphereVolume},
	{"photonPersistentDisk", func(s *corev1.VolumeSource) bool { return s.PhotonPersistentDisk != nil }, validatePhotonPersistentDisk},
	{"portworxVolume", func(s *corev1.VolumeSource) bool { return s.PortworxVolume != nil }, validatePortworxVolume},
	{"azureDisk", func(s *corev1.VolumeSource) bool { return s.AzureDisk != nil }, validateAzureDisk},
	{"storageos", func(s *corev1.VolumeSource) bool { return s.StorageOS != nil }, validateStorageOS},
	{"projected", func(s *corev1.VolumeSource) bool { return s.Projected != nil }, validateProjected},
	{"scaleIO", func(s *corev1.VolumeSource) bool { return s.ScaleIO != nil }, validateScaleIO},
	{"csi", func(s *corev1.VolumeSource) bool { return s.CSI != nil }, validateCSI},
	{"ephemeral", func(s *corev1.VolumeSource) bool { return s.Ephemeral != nil }, validateEphemeral},
	{"image", func(s *corev1.VolumeSource) bool { return s.Image != nil }, validateImageVolume},
}

// validateVolumeSource requires exactly one source and validates it (the first one set; each
// further one is forbidden on its own path).
func validateVolumeSource(src *corev1.VolumeSource, volName string, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	n := 0
	if src.EmptyDir != nil {
		n++
		if l := src.EmptyDir.SizeLimit; l != nil && l.Sign() < 0 {
			allErrs = append(allErrs, field.Forbidden(path.Child("emptyDir", "sizeLimit"), "SizeLimit field must be a valid resource quantity"))
		}
	}
	for _, v := range volumeSourceValidators {
		switch {
		case !v.set(src):
		case n > 0:
			allErrs = append(allErrs, field.Forbidden(path.Child(v.name), "may not specify more than 1 volume type"))
		default:
			n++
			allErrs = append(allErrs, v.validate(src, volName, path.Child(v.name))...)
		}
	}
	if iscsi := src.ISCSI; iscsi != nil && iscsi.InitiatorName != nil && len(volName+":"+iscsi.TargetPortal) > 64 {
		allErrs = append(allErrs, field.Invalid(path.Child("name"), volName,
			"Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified."))
	}
	if n == 0 {
		allErrs = append(allErrs, field.Required(path, "must specify a volume type"))
	}
	return allErrs
}

// supportedHostPathTypes are the hostPath types ("" is the default, no check).
var supportedHostPathTypes = sets.New(
	corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory, corev1.HostPathFileOrCreate,
	corev1.HostPathFile, corev1.HostPathSocket, corev1.HostPathCharDev, corev1.HostPathBlockDev,
)

func validateHostPath(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	hp := src.HostPath
	if hp.Path == "" {
		return field.ErrorList{field.Required(path.Child("path"), "")}
	}
	allErrs := validatePathNoBacksteps(hp.Path, path.Child("path"))
	if hp.Type != nil && !supportedHostPathTypes.Has(*hp.Type) {
		allErrs = append(allErrs, field.NotSupported(path.Child("type"), *hp.Type, sets.List(supportedHostPathTypes)))
	}
	return allErrs
}

func validateGitRepo(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	allErrs := validateRequired(src.GitRepo.Repository, path.Child("repository"))
	return append(allErrs, validateLocalDescendingPath(src.GitRepo.Directory, path.Child("directory"))...)
}

func validateSecretVolume(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	s := src.Secret
	allErrs := validateRequired(s.SecretName, path.Child("secretName"))
	allErrs = append(allErrs, validateFileMode(s.DefaultMode, path.Child("defaultMode"))...)
	return append(allErrs, validateKeyToPaths(s.Items, path.Child("items"))...)
}

func validateConfigMapVolume(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	cm := src.ConfigMap
	allErrs := validateRequired(cm.Name, path.Child("name"))
	allErrs = append(allErrs, validateFileMode(cm.DefaultMode, path.Child("defaultMode"))...)
	return append(allErrs, validateKeyToPaths(cm.Items, path.Child("items"))...)
}

func validatePersistentVolumeClaim(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	return validateRequired(src.PersistentVolumeClaim.ClaimName, path.Child("claimName"))
}

func validateImageVolume(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	allErrs := validateRequired(src.Image.Reference, path.Child("reference"))
	return append(allErrs, validateOptionalEnum(src.Image.PullPolicy, pullPolicies, path.Child("pullPolicy"))...)
}

// partitionMsg is kube-apiserver's message for a partition outside 0-255.
var partitionMsg = utilvalidation.InclusiveRangeError(1, 255)

func validatePartition(partition int32, path *field.Path) field.ErrorList {
	if partition < 0 || partition > 255 {
		return field.ErrorList{field.Invalid(path, partition, partitionMsg)}
	}
	return nil
}

func validateLun(lun int32, path *field.Path) field.ErrorList {
	if lun < 0 || lun > 255 {
		return field.ErrorList{field.Invalid(path, lun, utilvalidation.InclusiveRangeError(0, 255))}
	}
	return nil
}
