package check

import (
	"context"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/check/finding"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// gatherPrerequisites reads what the prerequisite checks assess (finding/prerequisites.go): the
// server's namespace, the user's permissions for what the installation creates
// (SelfSubjectAccessReviews), the StorageClasses, the front-proxy CA's ConfigMap and, when the
// certificates come from cert-manager, what cert-manager.io/v1 serves.
func gatherPrerequisites(ctx context.Context, kube kubernetes.Interface, t checkTargets, f *finding.Facts) {
	f.Install = finding.InstallTargets{Namespace: t.namespace, Certificates: t.certificates, PriorityClass: t.priorityClass}
	f.EtcdStorageClass = t.etcdStorageClass
	_, err := kube.CoreV1().Namespaces().Get(ctx, t.namespace, metav1.GetOptions{})
	f.Install.NamespaceExists = err == nil // unreadable: reviewed as if the install created it
	gatherInstallerAccess(ctx, kube, f)

	if list, err := kube.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{}); err != nil {
		unread(f, v1alpha1.FindingStorageClass, "storageclasses.storage.k8s.io", err)
	} else {
		f.StorageClasses = list.Items
	}
	cm, err := kube.CoreV1().ConfigMaps(finding.FrontProxyNamespace).Get(ctx, finding.FrontProxyName, metav1.GetOptions{})
	switch {
	case err == nil:
		f.FrontProxy = cm
	case !apierrors.IsNotFound(err):
		unread(f, v1alpha1.FindingFrontProxyCA, "configmaps "+finding.FrontProxyNamespace+"/"+finding.FrontProxyName, err)
	}
	if t.certificates == finding.CertificatesCertManager {
		gatherCertManager(kube.Discovery(), f)
	}
}

// gatherInstallerAccess asks kube-apiserver, for each permission the installation needs, whether
// the user running check has it.
func gatherInstallerAccess(ctx context.Context, kube kubernetes.Interface, f *finding.Facts) {
	reviews := kube.AuthorizationV1().SelfSubjectAccessReviews()
	access := []finding.AccessReview{}
	for _, p := range finding.InstallerPermissions(f.Install) {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: p.Verb, Group: p.Group, Resource: p.Resource, Namespace: p.Namespace}}}
		got, err := reviews.Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			unread(f, v1alpha1.FindingInstallerRBAC, "selfsubjectaccessreviews.authorization.k8s.io", err)
			return
		}
		access = append(access, finding.AccessReview{Permission: p, Allowed: got.Status.Allowed, Reason: got.Status.Reason})
	}
	f.InstallerAccess = access
}

// gatherCertManager reads the resources cert-manager.io/v1 serves (none: the group is not
// served).
func gatherCertManager(d discovery.DiscoveryInterface, f *finding.Facts) {
	list, err := d.ServerResourcesForGroupVersion(finding.CertManagerGroupVersion)
	switch {
	case apierrors.IsNotFound(err):
		return
	case err != nil:
		unread(f, v1alpha1.FindingCertManager, "discovery of "+finding.CertManagerGroupVersion, err)
		return
	}
	f.CertManagerResources = []string{}
	for _, r := range list.APIResources {
		if !slices.Contains(f.CertManagerResources, r.Name) {
			f.CertManagerResources = append(f.CertManagerResources, r.Name)
		}
	}
}
