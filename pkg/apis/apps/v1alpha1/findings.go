package v1alpha1

// The names of the findings of `kubectl sidecarset check`: each finding of its report (the name
// field of -o yaml|json, and the name after the status in its human report) is one of these. Users
// and scripts match them, and docs/plugin.md explains each under its category, so a name is part of
// the API: never renamed, only added.
const (
	// FindingConnectivity is the finding of whether kube-apiserver answers discovery.
	FindingConnectivity = "connectivity"
	// FindingKubernetesVersion is the finding of whether the cluster runs a Kubernetes release the server installs on.
	FindingKubernetesVersion = "kubernetes-version"
	// FindingPolicyAPI is the finding of whether the cluster serves admissionregistration.k8s.io/v1
	// MutatingAdmissionPolicies, which policy injection uses.
	FindingPolicyAPI = "policy-api"
	// FindingOpenKruiseCRDs is the finding of the custom resources of apps.kruise.io that the server's APIServices hide.
	FindingOpenKruiseCRDs = "openkruise-crds"
	// FindingOpenKruiseWebhooks is the finding of OpenKruise's webhook configurations, active or left behind.
	FindingOpenKruiseWebhooks = "openkruise-webhooks"
	// FindingOpenKruiseManager is the finding of OpenKruise's manager Deployment.
	FindingOpenKruiseManager = "openkruise-manager"
	// FindingAPIServiceConflicts is the finding of the APIServices of apps.kruise.io that route to another service.
	FindingAPIServiceConflicts = "apiservice-conflicts"
	// FindingOpenKruiseFeatures is the finding of the SidecarSets relying on OpenKruise features this server lacks.
	FindingOpenKruiseFeatures = "openkruise-features"
	// FindingServer is the finding of whether the server is installed at all.
	FindingServer = "server"
	// FindingAPIServices is the finding of whether the server's APIServices exist, route to a service and are Available.
	FindingAPIServices = "apiservices"
	// FindingNamespaceDeletion is the finding of the Namespaces stuck Terminating on the server's APIServices.
	FindingNamespaceDeletion = "namespace-deletion"
	// FindingServerHealth is the finding of the server's own checks on /healthz.
	FindingServerHealth = "server-health"
	// FindingWebhooks is the finding of the shipped injection webhook configuration and the one the server writes.
	FindingWebhooks = "webhooks"
	// FindingVersion is the finding of the version the server's leader recorded.
	FindingVersion = "version"
	// FindingStorage is the finding of a quorum read of the SidecarSets through the server to its etcd.
	FindingStorage = "storage"
	// FindingEtcdHealth is the finding of the server's etcd check on /healthz.
	FindingEtcdHealth = "etcd-health"
	// FindingEtcdQuota is the finding of the etcd database size against its quota.
	FindingEtcdQuota = "etcd-quota"
	// FindingInstallerRBAC is the finding of the permissions the installation needs, granted or not to the user.
	FindingInstallerRBAC = "installer-rbac"
	// FindingStorageClass is the finding of a StorageClass for etcd's claims.
	FindingStorageClass = "storage-class"
	// FindingFrontProxyCA is the finding of the aggregation layer's front-proxy CA, published by kube-apiserver.
	FindingFrontProxyCA = "front-proxy-ca"
	// FindingCertManager is the finding of cert-manager's API, when the installation's certificates come from it.
	FindingCertManager = "cert-manager"
	// FindingVersionSkew is the finding of the plugin's version against the server's.
	FindingVersionSkew = "version-skew"
	// FindingCertificates is the finding of the CAs kube-apiserver trusts for the server and the
	// installation's certificates: none expired or about to.
	FindingCertificates = "certificates"
	// FindingInjection is the finding of every SidecarSet's and NamespacedSidecarSet's Injected condition.
	FindingInjection = "injection"
	// FindingOutage is the finding of which SidecarSets a pod create depends on the server for.
	FindingOutage = "outage"
	// FindingSidecarSetConditions is the finding of stalled rollouts, pods without their sidecars and webhooks
	// receiving every pod.
	FindingSidecarSetConditions = "sidecarset-conditions"
)
