package app

import (
	"context"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
)

// gatherPrerequisites reads what the prerequisite checks assess (checks_prerequisites.go): the
// server's namespace, the user's permissions for what the installation creates
// (SelfSubjectAccessReviews), the StorageClasses, the front-proxy CA's ConfigMap and, when the
// certificates come from cert-manager, what cert-manager.io/v1 serves.
func gatherPrerequisites(ctx context.Context, kube kubernetes.Interface, t checkTargets, f *clusterFacts) {
	f.Install = installTargets{Namespace: t.namespace, Certificates: t.certificates, PriorityClass: t.priorityClass}
	f.EtcdStorageClass = t.etcdStorageClass
	_, err := kube.CoreV1().Namespaces().Get(ctx, t.namespace, metav1.GetOptions{})
	f.Install.NamespaceExists = err == nil // unreadable: reviewed as if the install created it
	gatherInstallerAccess(ctx, kube, f)

	if list, err := kube.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{}); err != nil {
		f.unread("storage-class", "storageclasses.storage.k8s.io", err)
	} else {
		f.StorageClasses = list.Items
	}
	cm, err := kube.CoreV1().ConfigMaps(frontProxyNamespace).Get(ctx, frontProxyName, metav1.GetOptions{})
	switch {
	case err == nil:
		f.FrontProxy = cm
	case !apierrors.IsNotFound(err):
		f.unread("front-proxy-ca", "configmaps "+frontProxyNamespace+"/"+frontProxyName, err)
	}
	if t.certificates == certificatesCertManager {
		gatherCertManager(kube.Discovery(), f)
	}
}

// gatherInstallerAccess asks kube-apiserver, for each permission the installation needs, whether
// the user running check has it.
func gatherInstallerAccess(ctx context.Context, kube kubernetes.Interface, f *clusterFacts) {
	reviews := kube.AuthorizationV1().SelfSubjectAccessReviews()
	access := []accessReview{}
	for _, p := range installerPermissions(f.Install) {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: p.Verb, Group: p.Group, Resource: p.Resource, Namespace: p.Namespace}}}
		got, err := reviews.Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			f.unread("installer-rbac", "selfsubjectaccessreviews.authorization.k8s.io", err)
			return
		}
		access = append(access, accessReview{Permission: p, Allowed: got.Status.Allowed, Reason: got.Status.Reason})
	}
	f.InstallerAccess = access
}

// gatherCertManager reads the resources cert-manager.io/v1 serves (none: the group is not
// served).
func gatherCertManager(d discovery.DiscoveryInterface, f *clusterFacts) {
	list, err := d.ServerResourcesForGroupVersion(certManagerGroupVersion)
	switch {
	case apierrors.IsNotFound(err):
		return
	case err != nil:
		f.unread("cert-manager", "discovery of "+certManagerGroupVersion, err)
		return
	}
	f.CertManagerResources = []string{}
	for _, r := range list.APIResources {
		if !slices.Contains(f.CertManagerResources, r.Name) {
			f.CertManagerResources = append(f.CertManagerResources, r.Name)
		}
	}
}
