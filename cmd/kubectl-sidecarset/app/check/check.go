// Package check is `kubectl sidecarset check`: it gathers what the findings need from the
// cluster (each read that fails recorded, not fatal), has the pure core (package finding) assess
// it, and prints the report, again every 2 seconds with --wait until no finding is an error.
package check

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/apiservice"
	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/check/finding"
	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/cli"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	buildversion "github.com/sidecarset/apiserver/pkg/version"
)

// errCheckFailed is returned when a check finds an error; it exits with cli.ExitError.
var errCheckFailed = errors.New("check found problems")

// checkTargets are the names of the deployment's objects that check reads, and its options.
type checkTargets struct {
	webhooks, namespace, service, servingSecret string
	etcdQuota                                   int64
	pre                                         bool
	wait                                        time.Duration
	// What the installation will create, for the prerequisites: the chart's certificates.source,
	// etcd's StorageClass ("" for the default) and whether it creates its PriorityClass.
	certificates, etcdStorageClass string
	priorityClass                  bool
}

// NewCommand returns `kubectl sidecarset check`.
func NewCommand(o *cli.Options) *cobra.Command {
	t := checkTargets{webhooks: "sidecarset-injector", namespace: "sidecarset-system", service: "sidecarset-apiserver",
		servingSecret: "sidecarset-apiserver-tls", etcdQuota: 4 << 30, certificates: finding.CertificatesSelfManaged, priorityClass: true}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check a cluster before installing the server (--pre) and after",
		Long: `Check a cluster before installing the server (--pre) and after, as linkerd check and istioctl
precheck do. Each finding belongs to a category and carries a hint and a link to
docs/plugin.md#CATEGORY:

  kubernetes-api        kube-apiserver answers
  kubernetes-version    Kubernetes 1.30 or later; v1 MutatingAdmissionPolicy for policy injection
  openkruise            OpenKruise's CRDs of apps.kruise.io (hidden by the server's APIServices),
                        its webhook configurations and manager, APIServices routed elsewhere, and
                        SidecarSets relying on OpenKruise features this server lacks
  prerequisites         (--pre, or before the install) your permissions for what the install
                        creates, a StorageClass for etcd's claims, the aggregation layer's
                        front-proxy CA, cert-manager's API with --certificates cert-manager
  sidecarset-apiserver  the APIServices Available, no namespace stuck Terminating on them,
                        the server's /healthz, its webhook configurations, its recorded version
                        and its skew from the plugin's
  etcd                  a quorum read through the server, its etcd check, the database size
                        against the quota
  certificates          the CAs kube-apiserver trusts for the server and the installation's certificates (60 days ahead)
  sidecarsets           every SidecarSet and NamespacedSidecarSet injects; no rollout stalled,
                        no PodsNotInjected, no WebhookReceivesEveryPod

A read the user may not make is reported as a skipped finding; check goes on.
Exit codes: 0 no error (warnings and skipped findings allowed), 1 errors found, 2 check could not
run (no kubeconfig, kube-apiserver unreachable). --wait DURATION runs the checks again every 2
seconds until none is an error or DURATION passes.`,
		Example: `  kubectl sidecarset check --pre
  kubectl sidecarset check --wait 5m
  kubectl sidecarset check -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.CheckOutput(); err != nil {
				return &cli.ExitCodeError{Code: cli.ExitCouldNotRun, Err: err}
			}
			if !slices.Contains(finding.CertificateSources, t.certificates) {
				return &cli.ExitCodeError{Code: cli.ExitCouldNotRun, Err: fmt.Errorf("--certificates: %q is not one of %s", t.certificates, strings.Join(finding.CertificateSources, ", "))}
			}
			return runCheck(cmd.Context(), o, t)
		},
	}
	flags := cmd.Flags()
	flags.BoolVar(&t.pre, "pre", false, "run the pre-install checks only (Kubernetes version, OpenKruise's leftovers, APIService conflicts, the prerequisites)")
	flags.DurationVar(&t.wait, "wait", 0, "run the checks again until none is an error, for at most this long (e.g. right after an install)")
	flags.StringVar(&t.webhooks, "webhook-configuration", t.webhooks, "the injection webhook configuration shipped with the deployment (the server writes NAME-active)")
	flags.StringVar(&t.namespace, "server-namespace", t.namespace, "the namespace the server runs in")
	flags.StringVar(&t.service, "server-service", t.service, "the Service of the server, which its APIServices route to")
	flags.StringVar(&t.servingSecret, "serving-secret", t.servingSecret, "the Secret of the server's serving certificate (read when allowed)")
	flags.Int64Var(&t.etcdQuota, "etcd-quota-bytes", t.etcdQuota, "the server's etcd --quota-backend-bytes, which the database size is compared with")
	flags.StringVar(&t.certificates, "certificates", t.certificates, "where the installation's certificates come from, as the chart's certificates.source: "+strings.Join(finding.CertificateSources, ", ")+
		" (cert-manager: its API must be served)")
	flags.StringVar(&t.etcdStorageClass, "etcd-storage-class", t.etcdStorageClass, "the StorageClass of etcd's claims (etcd.persistence.storageClassName); empty: the cluster's default")
	flags.BoolVar(&t.priorityClass, "priority-class", t.priorityClass, "whether the installation creates its PriorityClass (priorityClass.create)")
	return cmd
}

// runCheck gathers, assesses and prints, again every 2 seconds with --wait until no check is an
// error.
func runCheck(ctx context.Context, o *cli.Options, t checkTargets) error {
	deadline := time.Now().Add(t.wait)
	var last []string
	for {
		facts, err := gatherCluster(ctx, o, t)
		if err != nil {
			return &cli.ExitCodeError{Code: cli.ExitCouldNotRun, Err: err}
		}
		report := finding.Assess(facts)
		problems := report.Problems()
		if len(problems) == 0 || !time.Now().Add(2*time.Second).Before(deadline) {
			if err := o.Print(report, func(w io.Writer) error { return printHuman(w, report) }); err != nil {
				return err
			}
			if len(problems) > 0 {
				return errCheckFailed
			}
			return nil
		}
		if !slices.Equal(problems, last) {
			fmt.Fprintf(o.ErrOut, "waiting for: %s\n", strings.Join(problems, ", "))
			last = problems
		}
		select {
		case <-ctx.Done():
			return &cli.ExitCodeError{Code: cli.ExitCouldNotRun, Err: ctx.Err()}
		case <-time.After(2 * time.Second):
		}
	}
}

// statusMarks are the human report's marks, as linkerd check's.
var statusMarks = map[finding.Status]string{finding.StatusOK: "√", finding.StatusWarning: "‼", finding.StatusError: "×", finding.StatusSkipped: "-"}

// printHuman writes the report for people, as linkerd check does.
func printHuman(w io.Writer, r finding.Report) error {
	var b strings.Builder
	category := ""
	for _, c := range r.Checks {
		if c.Category != category {
			if category != "" {
				b.WriteString("\n")
			}
			category = c.Category
			fmt.Fprintf(&b, "%s\n%s\n", category, strings.Repeat("-", len(category)))
		}
		fmt.Fprintf(&b, "%s [%s] %s: %s\n", statusMarks[c.Status], c.Status, c.Name, c.Message)
		if c.Status != finding.StatusOK {
			fmt.Fprintf(&b, "    hint: %s\n    see %s\n", c.Hint, c.Docs)
		}
	}
	fmt.Fprintf(&b, "\nStatus check results: %d ok, %d warnings, %d errors, %d skipped\n",
		r.Counts[finding.StatusOK], r.Counts[finding.StatusWarning], r.Counts[finding.StatusError], r.Counts[finding.StatusSkipped])
	_, err := io.WriteString(w, b.String())
	return err
}

// gatherCluster reads the facts the checks assess. Only a cluster that cannot be reached at all
// is an error (exit 2); every other failed read is recorded in facts.Unread.
func gatherCluster(ctx context.Context, o *cli.Options, t checkTargets) (*finding.Facts, error) {
	c, err := o.ClusterAPIs()
	if err != nil {
		return nil, err
	}
	f := &finding.Facts{Now: time.Now(), Pre: t.pre, Objects: map[string]int{}, APIServices: map[string]*apiregistrationv1.APIService{},
		Unread: map[string]finding.Unread{}, StorageBytes: -1, EtcdQuota: t.etcdQuota, ServerService: t.namespace + "/" + t.service,
		PluginVersion: buildversion.Get().GitVersion}
	if err := gatherDiscovery(c.Clients.Kube.Discovery(), f); err != nil {
		return nil, fmt.Errorf("kube-apiserver cannot be reached: %w", err)
	}
	gatherAPIServices(ctx, c, f)
	gatherCRDs(ctx, c, f)
	gatherOpenKruise(ctx, c, f)
	if f.Pre || !f.Installed() {
		gatherPrerequisites(ctx, c.Kube, t, f)
		return f, nil
	}
	gatherServer(ctx, c.Clients, t, f)
	gatherHealth(ctx, c, f)
	gatherTerminatingNamespaces(ctx, c.Kube, f)
	return f, nil
}

// gatherTerminatingNamespaces reads the Namespaces being deleted (namespace-deletion).
func gatherTerminatingNamespaces(ctx context.Context, kube kubernetes.Interface, f *finding.Facts) {
	list, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{FieldSelector: "status.phase=" + string(corev1.NamespaceTerminating)})
	if err != nil {
		unread(f, v1alpha1.FindingNamespaceDeletion, "namespaces", err)
		return
	}
	for _, ns := range list.Items {
		if ns.Status.Phase == corev1.NamespaceTerminating { // the field selector, where a client ignores it
			f.TerminatingNamespaces = append(f.TerminatingNamespaces, ns)
		}
	}
}

// unread records in f a failed read of what for the check name.
func unread(f *finding.Facts, name, what string, err error) {
	f.Unread[name] = finding.Unread{What: what, Err: err.Error(), Forbidden: apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)}
}

// unreadOptional records in f a failed read that makes the check skipped whatever the failure.
func unreadOptional(f *finding.Facts, name, what string, err error) {
	unread(f, name, what, err)
	u := f.Unread[name]
	u.Optional = true
	f.Unread[name] = u
}

// gatherDiscovery reads kube-apiserver's version and whether it serves v1 MutatingAdmissionPolicies
// and this server's rollout subresource; an error here means the cluster cannot be reached.
func gatherDiscovery(d discovery.DiscoveryInterface, f *finding.Facts) error {
	v, err := d.ServerVersion()
	if err != nil {
		return err
	}
	f.KubernetesVersion = v.Major + "." + strings.TrimSuffix(v.Minor, "+")
	if v.GitVersion != "" {
		f.KubernetesVersion = strings.TrimPrefix(v.GitVersion, "v")
	}
	if list, err := d.ServerResourcesForGroupVersion("admissionregistration.k8s.io/v1"); err == nil {
		served := slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "mutatingadmissionpolicies" })
		f.PolicyAPI = &served
	}
	if list, err := d.ServerResourcesForGroupVersion("apps.kruise.io/v1alpha1"); err == nil {
		f.ServedByServer = slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "sidecarsets/rollout" })
	}
	return nil
}

// gatherAPIServices reads this server's APIServices.
func gatherAPIServices(ctx context.Context, c *cli.ClusterAPIs, f *finding.Facts) {
	services, what, err := apiservice.Get(ctx, c.Aggregator)
	for name, as := range services {
		f.APIServices[name] = as
	}
	if err != nil {
		for _, check := range []string{v1alpha1.FindingAPIServices, v1alpha1.FindingAPIServiceConflicts} {
			unread(f, check, what, err)
		}
	}
}

// gatherCRDs reads the CRDs of apps.kruise.io and counts the objects of those not hidden by an
// APIService of this server.
func gatherCRDs(ctx context.Context, c *cli.ClusterAPIs, f *finding.Facts) {
	list, err := c.Extensions.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	if err != nil {
		unread(f, v1alpha1.FindingOpenKruiseCRDs, "customresourcedefinitions.apiextensions.k8s.io", err)
		return
	}
	for _, crd := range list.Items {
		if crd.Spec.Group != "apps.kruise.io" {
			continue
		}
		f.CRDs = append(f.CRDs, crd)
		for _, v := range crd.Spec.Versions {
			if !v.Served || apiservice.Takes(f.APIServices, crd.Spec.Group, v.Name) {
				continue // hidden: a request reaches this server, not the CRD
			}
			gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural}
			if n, err := countObjects(ctx, c.Metadata, gvr); err == nil {
				f.Objects[crd.Name+"/"+v.Name] = n
			}
		}
	}
}

// gatherOpenKruise reads OpenKruise's webhook configurations and manager Deployment.
func gatherOpenKruise(ctx context.Context, c *cli.ClusterAPIs, f *finding.Facts) {
	reg := c.Kube.AdmissionregistrationV1()
	if _, err := reg.MutatingWebhookConfigurations().Get(ctx, finding.OpenKruiseMutatingWebhook, metav1.GetOptions{}); err == nil {
		f.OpenKruiseWebhooks = append(f.OpenKruiseWebhooks, "mutatingwebhookconfiguration/"+finding.OpenKruiseMutatingWebhook)
	} else if !apierrors.IsNotFound(err) {
		unread(f, v1alpha1.FindingOpenKruiseWebhooks, "mutatingwebhookconfigurations.admissionregistration.k8s.io", err)
	}
	if _, err := reg.ValidatingWebhookConfigurations().Get(ctx, finding.OpenKruiseValidatingWebhook, metav1.GetOptions{}); err == nil {
		f.OpenKruiseWebhooks = append(f.OpenKruiseWebhooks, "validatingwebhookconfiguration/"+finding.OpenKruiseValidatingWebhook)
	} else if !apierrors.IsNotFound(err) {
		unread(f, v1alpha1.FindingOpenKruiseWebhooks, "validatingwebhookconfigurations.admissionregistration.k8s.io", err)
	}
	d, err := c.Kube.AppsV1().Deployments(finding.OpenKruiseNamespace).Get(ctx, finding.OpenKruiseManager, metav1.GetOptions{})
	switch {
	case err == nil:
		f.OpenKruiseManager = d
	case !apierrors.IsNotFound(err):
		unread(f, v1alpha1.FindingOpenKruiseManager, "deployments.apps in "+finding.OpenKruiseNamespace, err)
		if _, ok := f.Unread[v1alpha1.FindingOpenKruiseWebhooks]; !ok && len(f.OpenKruiseWebhooks) > 0 {
			unread(f, v1alpha1.FindingOpenKruiseWebhooks, "deployments.apps in "+finding.OpenKruiseNamespace+" (whether OpenKruise's manager runs)", err)
		}
	}
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

// gatherServer reads what the installed server serves and writes. NamespacedSidecarSets are read
// in every namespace, else in the command's namespace when only that one may be read.
func gatherServer(ctx context.Context, c *cli.Clients, t checkTargets, f *finding.Facts) {
	list, err := c.SidecarSet.AppsV1alpha1().SidecarSets().List(ctx, metav1.ListOptions{})
	switch {
	case err == nil:
		f.SidecarSets = list.Items
	case apierrors.IsForbidden(err):
		unread(f, v1alpha1.FindingStorage, "sidecarsets.apps.kruise.io", err)
		unread(f, v1alpha1.FindingOpenKruiseFeatures, "sidecarsets.apps.kruise.io", err)
	default:
		f.SidecarSetsErr = err
	}
	api := c.SidecarSet.AppsV1alpha1()
	namespaced, err := api.NamespacedSidecarSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) && c.Namespace != "" {
		f.NamespacedScope = c.Namespace
		namespaced, err = api.NamespacedSidecarSets(c.Namespace).List(ctx, metav1.ListOptions{})
	}
	switch {
	case err == nil:
		f.NamespacedSidecarSets = namespaced.Items
	case apierrors.IsNotFound(err): // the server serves no NamespacedSidecarSet
	case apierrors.IsForbidden(err):
		f.NamespacedScope = ""
	default:
		f.NamespacedSidecarSetsErr = err
	}
	hooks := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if f.Template, err = getOrNil(hooks.Get(ctx, t.webhooks, metav1.GetOptions{})); err != nil {
		unread(f, v1alpha1.FindingWebhooks, "mutatingwebhookconfigurations.admissionregistration.k8s.io", err)
	}
	if f.Active, err = getOrNil(hooks.Get(ctx, t.webhooks+"-active", metav1.GetOptions{})); err != nil {
		unread(f, v1alpha1.FindingWebhooks, "mutatingwebhookconfigurations.admissionregistration.k8s.io", err)
		unread(f, v1alpha1.FindingVersion, "mutatingwebhookconfigurations.admissionregistration.k8s.io", err)
	}
	policies, err := c.Kube.AdmissionregistrationV1().MutatingAdmissionPolicies().List(ctx, metav1.ListOptions{LabelSelector: apps.ManagedByLabel + "=" + apps.ManagedByValue})
	switch {
	case apierrors.IsNotFound(err):
		f.Policies = -1
	case err != nil:
		unread(f, v1alpha1.FindingWebhooks, "mutatingadmissionpolicies.admissionregistration.k8s.io", err)
	default:
		f.Policies = len(policies.Items)
	}
	f.Certificates = readCertificates(ctx, c, t.namespace, t.servingSecret)
}

// certificateSecrets are the installation's certificate Secrets besides the serving one: etcd's
// leaves (kubernetes.io/tls with ca.crt) and, with self-managed certificates or cert-manager's own
// CAs, the CAs.
var certificateSecrets = []string{"sidecarset-etcd-server", "sidecarset-etcd-peer", "sidecarset-etcd-client", "sidecarset-etcd-ca", "sidecarset-serving-ca"}

// readCertificates reads the certificates and trust bundles of the installation's Secrets in
// namespace, those that exist and may be read.
func readCertificates(ctx context.Context, c *cli.Clients, namespace, serving string) []finding.NamedPEM {
	var out []finding.NamedPEM
	for _, name := range append([]string{serving}, certificateSecrets...) {
		s, err := c.Kube.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			continue
		}
		if len(s.Data["tls.crt"]) > 0 {
			out = append(out, finding.NamedPEM{Name: "Secret " + name, PEM: s.Data["tls.crt"]})
		}
		if len(s.Data["ca.crt"]) > 0 {
			out = append(out, finding.NamedPEM{Name: "Secret " + name + " ca.crt", PEM: s.Data["ca.crt"], Bundle: true})
		}
	}
	return out
}

// gatherHealth reads the server's verbose /healthz and its /metrics through kube-apiserver's
// service proxy to the Service its APIService routes to (get on services/proxy).
func gatherHealth(ctx context.Context, c *cli.ClusterAPIs, f *finding.Facts) {
	as := f.APIServices[apiservice.Names[0]]
	if as == nil || as.Spec.Service == nil {
		return
	}
	svc := as.Spec.Service
	port := "443"
	if svc.Port != nil {
		port = strconv.Itoa(int(*svc.Port))
	}
	proxy := c.Kube.CoreV1().Services(svc.Namespace)
	via := " through services/proxy " + svc.Namespace + "/" + svc.Name + ":" + port
	body, err := proxy.ProxyGet("https", svc.Name, port, "/healthz", map[string]string{"verbose": "true"}).DoRaw(ctx)
	// A failing /healthz answers 500 with its verbose lines.
	if h := parseHealth(body); err == nil || len(h.Checks) > 0 {
		f.Health = h
	} else {
		unreadOptional(f, v1alpha1.FindingServerHealth, "the server's /healthz"+via, err)
		unreadOptional(f, v1alpha1.FindingEtcdHealth, "the server's /healthz"+via, err)
	}
	metrics, err := proxy.ProxyGet("https", svc.Name, port, "/metrics", nil).DoRaw(ctx)
	if err != nil {
		unreadOptional(f, v1alpha1.FindingEtcdQuota, "the server's /metrics"+via, err)
		return
	}
	f.StorageBytes = storageBytes(metrics)
}

// parseHealth reads a verbose health answer: "[+]name ok" and "[-]name failed: reason" lines.
func parseHealth(body []byte) *finding.Health {
	h := &finding.Health{Checks: map[string]bool{}}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		rest, ok := strings.CutPrefix(line, "[+]")
		failed := false
		if !ok {
			if rest, ok = strings.CutPrefix(line, "[-]"); !ok {
				continue
			}
			failed = true
		}
		name, _, _ := strings.Cut(rest, " ")
		h.Checks[name] = !failed
		if failed {
			h.Failed = append(h.Failed, rest)
		}
	}
	return h
}

// storageBytes is the largest etcd database size among the server's storage metrics
// (apiserver_storage_size_bytes, or the older apiserver_storage_db_total_size_in_bytes), -1 when
// it reports none.
func storageBytes(metrics []byte) int64 {
	size := int64(-1)
	sc := bufio.NewScanner(bytes.NewReader(metrics))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_storage_size_bytes") && !strings.HasPrefix(line, "apiserver_storage_db_total_size_in_bytes") {
			continue
		}
		fields := strings.Fields(line)
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil && int64(v) > size {
			size = int64(v)
		}
	}
	return size
}

// getOrNil is a Get's object, nil when it does not exist.
func getOrNil[T any](obj *T, err error) (*T, error) {
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}
