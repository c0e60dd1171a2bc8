package podfields

import (
	"net"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The iSCSI qualified name formats kube-apiserver accepts.
var (
	iscsiIQN = regexp.MustCompile(`iqn\.\d{4}-\d{2}\.([[:alnum:]-.]+)(:[^,;*&$|\s]+)$`)
	iscsiEUI = regexp.MustCompile(`^eui.[[:alnum:]]{16}$`)
	iscsiNAA = regexp.MustCompile(`^naa.[[:alnum:]]{32}$`)
)

var (
	azureCachingModes = sets.New(corev1.AzureDataDiskCachingNone, corev1.AzureDataDiskCachingReadOnly, corev1.AzureDataDiskCachingReadWrite)
	azureDiskKinds    = sets.New(corev1.AzureSharedBlobDisk, corev1.AzureDedicatedBlobDisk, corev1.AzureManagedDisk)
)

func validateGCEPersistentDisk(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	pd := src.GCEPersistentDisk
	allErrs := validateRequired(pd.PDName, path.Child("pdName"))
	return append(allErrs, validatePartition(pd.Partition, path.Child("partition"))...)
}

func validateAWSElasticBlockStore(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	ebs := src.AWSElasticBlockStore
	allErrs := validateRequired(ebs.VolumeID, path.Child("volumeID"))
	return append(allErrs, validatePartition(ebs.Partition, path.Child("partition"))...)
}

func validateNFS(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	nfs := src.NFS
	allErrs := validateRequired(nfs.Server, path.Child("server"))
	allErrs = append(allErrs, validateRequired(nfs.Path, path.Child("path"))...)
	if !strings.HasPrefix(nfs.Path, "/") {
		allErrs = append(allErrs, field.Invalid(path.Child("path"), nfs.Path, "must be an absolute path"))
	}
	return allErrs
}

// validateISCSI validates an iSCSI volume: target portal, a qualified name (iqn, eui or naa), LUN,
// the secret CHAP authentication needs and the initiator name. (The length of the volume name
// with the target portal is checked with the volume name.)
func validateISCSI(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	iscsi := src.ISCSI
	allErrs := validateRequired(iscsi.TargetPortal, path.Child("targetPortal"))
	if iscsi.IQN == "" {
		allErrs = append(allErrs, field.Required(path.Child("iqn"), ""))
	} else if msg := iscsiNameError(iscsi.IQN); msg != "" {
		allErrs = append(allErrs, field.Invalid(path.Child("iqn"), iscsi.IQN, msg))
	}
	allErrs = append(allErrs, validateLun(iscsi.Lun, path.Child("lun"))...)
	if (iscsi.DiscoveryCHAPAuth || iscsi.SessionCHAPAuth) && iscsi.SecretRef == nil {
		allErrs = append(allErrs, field.Required(path.Child("secretRef"), ""))
	}
	if name := iscsi.InitiatorName; name != nil {
		if msg := iscsiNameError(*name); msg != "" {
			allErrs = append(allErrs, field.Invalid(path.Child("initiatorName"), *name, msg))
		}
	}
	return allErrs
}

// iscsiNameError says why name is not an iSCSI qualified name.
func iscsiNameError(name string) string {
	switch {
	case !strings.HasPrefix(name, "iqn") && !strings.HasPrefix(name, "eui") && !strings.HasPrefix(name, "naa"):
		return "must be valid format starting with iqn, eui, or naa"
	case strings.HasPrefix(name, "iqn") && !iscsiIQN.MatchString(name),
		strings.HasPrefix(name, "eui") && !iscsiEUI.MatchString(name),
		strings.HasPrefix(name, "naa") && !iscsiNAA.MatchString(name):
		return "must be valid format"
	}
	return ""
}

func validateGlusterfs(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	allErrs := validateRequired(src.Glusterfs.EndpointsName, path.Child("endpoints"))
	return append(allErrs, validateRequired(src.Glusterfs.Path, path.Child("path"))...)
}

func validateFlocker(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	f := src.Flocker
	var allErrs field.ErrorList
	if f.DatasetName == "" && f.DatasetUUID == "" {
		allErrs = append(allErrs, field.Required(path, "one of datasetName and datasetUUID is required"))
	}
	if f.DatasetName != "" && f.DatasetUUID != "" {
		allErrs = append(allErrs, field.Invalid(path, "resource", "datasetName and datasetUUID can not be specified simultaneously"))
	}
	if strings.Contains(f.DatasetName, "/") {
		allErrs = append(allErrs, field.Invalid(path.Child("datasetName"), f.DatasetName, "must not contain '/'"))
	}
	return allErrs
}

func validateRBD(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(src.RBD.CephMonitors) == 0 {
		allErrs = append(allErrs, field.Required(path.Child("monitors"), ""))
	}
	return append(allErrs, validateRequired(src.RBD.RBDImage, path.Child("image"))...)
}

func validateCinder(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	allErrs := validateRequired(src.Cinder.VolumeID, path.Child("volumeID"))
	if ref := src.Cinder.SecretRef; ref != nil {
		allErrs = append(allErrs, validateRequired(ref.Name, path.Child("secretRef", "name"))...)
	}
	return allErrs
}

func validateCephFS(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	if len(src.CephFS.Monitors) == 0 {
		return field.ErrorList{field.Required(path.Child("monitors"), "")}
	}
	return nil
}

// validateQuobyte requires a registry of host:port pairs (and, then, a tenant of at most 64
// characters) and a volume.
func validateQuobyte(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	q := src.Quobyte
	const registryMsg = "must be a host:port pair or multiple pairs separated by commas"
	var allErrs field.ErrorList
	switch {
	case q.Registry == "":
		allErrs = append(allErrs, field.Required(path.Child("registry"), registryMsg))
	case len(q.Tenant) >= 65:
		allErrs = append(allErrs, field.Required(path.Child("tenant"), "must be a UUID and may not exceed a length of 64 characters"))
	default:
		for _, pair := range strings.Split(q.Registry, ",") {
			if _, _, err := net.SplitHostPort(pair); err != nil {
				allErrs = append(allErrs, field.Invalid(path.Child("registry"), q.Registry, registryMsg))
			}
		}
	}
	return append(allErrs, validateRequired(q.Volume, path.Child("volume"))...)
}

// validateFC requires targetWWNs (with a LUN) or wwids, not both.
func validateFC(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	fc := src.FC
	var allErrs field.ErrorList
	if len(fc.TargetWWNs) == 0 && len(fc.WWIDs) == 0 {
		allErrs = append(allErrs, field.Required(path.Child("targetWWNs"), "must specify either targetWWNs or wwids, but not both"))
	}
	if len(fc.TargetWWNs) != 0 && len(fc.WWIDs) != 0 {
		allErrs = append(allErrs, field.Invalid(path.Child("targetWWNs"), fc.TargetWWNs, "targetWWNs and wwids can not be specified simultaneously"))
	}
	if len(fc.TargetWWNs) != 0 {
		if fc.Lun == nil {
			allErrs = append(allErrs, field.Required(path.Child("lun"), "lun is required if targetWWNs is specified"))
		} else {
			allErrs = append(allErrs, validateLun(*fc.Lun, path.Child("lun"))...)
		}
	}
	return allErrs
}

// validateFlexVolume requires a driver and options outside the kubernetes.io and k8s.io domains.
func validateFlexVolume(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	fv := src.FlexVolume
	allErrs := validateRequired(fv.Driver, path.Child("driver"))
	for _, k := range sets.List(sets.KeySet(fv.Options)) {
		domain, _, _ := strings.Cut(k, "/")
		normalized := "." + strings.ToLower(domain)
		if strings.HasSuffix(normalized, ".kubernetes.io") || strings.HasSuffix(normalized, ".k8s.io") {
			allErrs = append(allErrs, field.Invalid(path.Child("options").Key(k), k, "kubernetes.io and k8s.io namespaces are reserved"))
		}
	}
	return allErrs
}

func validateAzureFile(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	allErrs := validateRequired(src.AzureFile.SecretName, path.Child("secretName"))
	return append(allErrs, validateRequired(src.AzureFile.ShareName, path.Child("shareName"))...)
}

// validateAzureDisk requires a disk name and URI, known caching mode and kind, and a URI that
// suits the kind (a shared blob disk by default).
func validateAzureDisk(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	d := src.AzureDisk
	allErrs := validateRequired(d.DiskName, path.Child("diskName"))
	allErrs = append(allErrs, validateRequired(d.DataDiskURI, path.Child("diskURI"))...)
	if d.CachingMode != nil && !azureCachingModes.Has(*d.CachingMode) {
		allErrs = append(allErrs, field.NotSupported(path.Child("cachingMode"), *d.CachingMode, sets.List(azureCachingModes)))
	}
	kind := corev1.AzureSharedBlobDisk
	if d.Kind != nil {
		kind = *d.Kind
	}
	if !azureDiskKinds.Has(kind) {
		allErrs = append(allErrs, field.NotSupported(path.Child("kind"), kind, sets.List(azureDiskKinds)))
	}
	if kind == corev1.AzureManagedDisk && !strings.HasPrefix(d.DataDiskURI, "/subscriptions/") {
		allErrs = append(allErrs, field.NotSupported(path.Child("diskURI"), d.DataDiskURI,
			[]string{"/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}"}))
	}
	if kind != corev1.AzureManagedDisk && !strings.HasPrefix(d.DataDiskURI, "https://") {
		allErrs = append(allErrs, field.NotSupported(path.Child("diskURI"), d.DataDiskURI,
			[]string{"https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"}))
	}
	return allErrs
}

func validateVsphereVolume(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	return validateRequired(src.VsphereVolume.VolumePath, path.Child("volumePath"))
}

func validatePhotonPersistentDisk(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	return validateRequired(src.PhotonPersistentDisk.PdID, path.Child("pdID"))
}

func validatePortworxVolume(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	return validateRequired(src.PortworxVolume.VolumeID, path.Child("volumeID"))
}

func validateStorageOS(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	s := src.StorageOS
	allErrs := validateDNSLabel(s.VolumeName, path.Child("volumeName"))
	if s.VolumeNamespace != "" {
		allErrs = append(allErrs, validateDNSLabelValue(s.VolumeNamespace, path.Child("volumeNamespace"))...)
	}
	if ref := s.SecretRef; ref != nil {
		allErrs = append(allErrs, validateRequired(ref.Name, path.Child("secretRef", "name"))...)
	}
	return allErrs
}

func validateScaleIO(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	s := src.ScaleIO
	allErrs := validateRequired(s.Gateway, path.Child("gateway"))
	allErrs = append(allErrs, validateRequired(s.System, path.Child("system"))...)
	return append(allErrs, validateRequired(s.VolumeName, path.Child("volumeName"))...)
}

// validateCSI requires a driver name (a DNS subdomain of at most 63 characters, any case) and a
// valid secret name for nodePublishSecretRef.
func validateCSI(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	csi := src.CSI
	allErrs := validateCSIDriverName(csi.Driver, path.Child("driver"))
	if ref := csi.NodePublishSecretRef; ref != nil {
		p := path.Child("nodePublishSecretRef", "name")
		if ref.Name == "" {
			allErrs = append(allErrs, field.Required(p, ""))
		} else {
			allErrs = append(allErrs, validateDNSSubdomainName(ref.Name, false, p)...)
		}
	}
	return allErrs
}

func validateCSIDriverName(driver string, path *field.Path) field.ErrorList {
	if driver == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	var allErrs field.ErrorList
	if len(driver) > 63 {
		allErrs = append(allErrs, field.TooLong(path, "", 63))
	}
	for _, msg := range utilvalidation.IsDNS1123Subdomain(strings.ToLower(driver)) {
		allErrs = append(allErrs, field.Invalid(path, driver, msg))
	}
	return allErrs
}
