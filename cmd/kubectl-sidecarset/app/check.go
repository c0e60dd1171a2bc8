package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// errCheckFailed is returned when a check finds an error; it exits with exitError.
var errCheckFailed = errors.New("check found problems")

// checkTargets are the names of the deployment's objects that check reads.
type checkTargets struct {
	webhooks, namespace, servingSecret string
}

func newCheckCommand(o *options) *cobra.Command {
	t := checkTargets{webhooks: "sidecarset-injector", namespace: "kruise-system", servingSecret: "sidecarset-apiserver-tls"}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check a cluster before installing the server and after",
		Long: `Before the server is installed: finds the custom resources of apps.kruise.io (OpenKruise's) at the
versions the server's APIServices take (v1alpha1, v1beta1), with their object counts, and says
whether installing would hide them (every kind but SidecarSet is an error).
After: also checks the APIServices (present, routed to the server, Available: the server is ready),
the server's storage (a quorum read of the SidecarSets and NamespacedSidecarSets through it), the
injection webhooks (the shipped template and the configuration the server writes) and the policies
it owns, the version it recorded, that every SidecarSet and NamespacedSidecarSet injects new pods
(condition Injected; a NamespacedSidecarSet is named "namespacedsidecarset NS/NAME"), which of them
ask for OpenKruise's container launch priority or Job sidecar terminator (a warning: this server
does not provide them), and the expiry of the CAs kube-apiserver trusts for it and of its serving
certificate (when its Secret is readable).
Exits 1 when any check is an error.`,
		Example: `  kubectl sidecarset check
  kubectl sidecarset check -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.checkOutput(); err != nil {
				return err
			}
			facts, err := o.gatherCluster(cmd.Context(), t)
			if err != nil {
				return err
			}
			report := assessCluster(facts)
			if err := o.print(report, report.human); err != nil {
				return err
			}
			if report.failed() {
				return errCheckFailed
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&t.webhooks, "webhook-configuration", t.webhooks, "the injection webhook configuration shipped with the deployment (the server writes NAME-active)")
	cmd.Flags().StringVar(&t.namespace, "server-namespace", t.namespace, "the namespace the server runs in")
	cmd.Flags().StringVar(&t.servingSecret, "serving-secret", t.servingSecret, "the Secret of the server's serving certificate (read when allowed)")
	return cmd
}

func (r checkReport) human(w io.Writer) error {
	for _, c := range r.Checks {
		if _, err := fmt.Fprintf(w, "[%s] %s: %s\n", c.Status, c.Name, c.Message); err != nil {
			return err
		}
	}
	return nil
}

// gatherCluster reads the facts the checks assess.
func (o *options) gatherCluster(ctx context.Context, t checkTargets) (*clusterFacts, error) {
	c, err := o.clusterAPIs()
	if err != nil {
		return nil, err
	}
	f := &clusterFacts{Now: time.Now(), Objects: map[string]int{}, APIServices: map[string]*apiregistrationv1.APIService{}}
	if err := gatherAPIServices(ctx, c.aggregator, f); err != nil {
		return nil, err
	}
	if err := gatherCRDs(ctx, c.extensions, c.metadata, f); err != nil {
		return nil, err
	}
	if !f.installed() {
		return f, nil
	}
	return f, o.gatherServer(ctx, c.clients, t, f)
}

func gatherAPIServices(ctx context.Context, agg aggregatorclient.Interface, f *clusterFacts) error {
	for _, name := range apiServiceNames {
		as, err := agg.ApiregistrationV1().APIServices().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("reading APIService %s: %w", name, err)
		default:
			f.APIServices[name] = as
		}
	}
	return nil
}

// gatherCRDs reads the CRDs of apps.kruise.io and counts the objects of those not hidden by an
// APIService of this server.
func gatherCRDs(ctx context.Context, ext apiextensionsclient.Interface, md metadata.Interface, f *clusterFacts) error {
	list, err := ext.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing CustomResourceDefinitions: %w", err)
	}
	for _, crd := range list.Items {
		if crd.Spec.Group != "apps.kruise.io" {
			continue
		}
		f.CRDs = append(f.CRDs, crd)
		for _, v := range crd.Spec.Versions {
			if !v.Served || takenByThisServer(f.APIServices, crd.Spec.Group, v.Name) {
				continue // hidden: a request reaches this server, not the CRD
			}
			n, err := countObjects(ctx, md, schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural})
			if err != nil {
				return fmt.Errorf("counting %s/%s: %w", crd.Name, v.Name, err)
			}
			f.Objects[crd.Name+"/"+v.Name] = n
		}
	}
	return nil
}

// takenByThisServer reports whether one of this server's APIServices (routed to its service, not
// served by kube-apiserver itself) takes group/version: a request there reaches this server, so a
// CRD of that group and version is hidden.
func takenByThisServer(services map[string]*apiregistrationv1.APIService, group, version string) bool {
	as := services[version+"."+group]
	return as != nil && as.Spec.Service != nil
}

// countObjects counts a resource's objects in every namespace from one page of metadata.
func countObjects(ctx context.Context, md metadata.Interface, gvr schema.GroupVersionResource) (int, error) {
	list, err := md.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 500})
	if err != nil {
		return 0, err
	}
	n := len(list.Items)
	if list.RemainingItemCount != nil {
		n += int(*list.RemainingItemCount)
	}
	return n, nil
}

// gatherServer reads what the installed server serves and writes.
func (o *options) gatherServer(ctx context.Context, c *clients, t checkTargets, f *clusterFacts) error {
	list, err := c.sidecarSet.AppsV1alpha1().SidecarSets().List(ctx, metav1.ListOptions{})
	if err == nil {
		f.SidecarSets = list.Items
	}
	f.SidecarSetsErr = err
	namespaced, err := c.sidecarSet.AppsV1alpha1().NamespacedSidecarSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	switch {
	case err == nil:
		f.NamespacedSidecarSets = namespaced.Items
	case !apierrors.IsNotFound(err): // NotFound: the server serves no NamespacedSidecarSet
		f.NamespacedSidecarSetsErr = err
	}
	hooks := c.kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if f.Template, err = getOrNil(hooks.Get(ctx, t.webhooks, metav1.GetOptions{})); err != nil {
		return err
	}
	if f.Active, err = getOrNil(hooks.Get(ctx, t.webhooks+"-active", metav1.GetOptions{})); err != nil {
		return err
	}
	policies, err := c.kube.AdmissionregistrationV1().MutatingAdmissionPolicies().List(ctx, metav1.ListOptions{LabelSelector: apps.ManagedByLabel + "=" + apps.ManagedByValue})
	switch {
	case apierrors.IsNotFound(err):
		f.Policies = -1
	case err != nil:
		return fmt.Errorf("listing MutatingAdmissionPolicies: %w", err)
	default:
		f.Policies = len(policies.Items)
	}
	if s, err := c.kube.CoreV1().Secrets(t.namespace).Get(ctx, t.servingSecret, metav1.GetOptions{}); err == nil {
		f.ServingCertificate = s.Data["tls.crt"]
	}
	return nil
}

// getOrNil is a Get's object, nil when it does not exist.
func getOrNil[T any](obj *T, err error) (*T, error) {
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}
