// Package migrate is `kubectl sidecarset migrate`: OpenKruise's SidecarSets and their
// ControllerRevisions, read from files or from the cluster, converted by the migration core
// (pkg/migrate) and written to this server.
package migrate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/apiservice"
	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/cli"
	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/manifest"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
	openkruise "github.com/sidecarset/apiserver/pkg/migrate"
)

// errMigrationIncomplete is returned when an object could not be migrated; it exits with cli.ExitError.
var errMigrationIncomplete = errors.New("migration incomplete")

// openKruiseCRD is the name of OpenKruise's SidecarSet CustomResourceDefinition.
const openKruiseCRD = "sidecarsets.apps.kruise.io"

type migrateFlags struct {
	files           []string
	fromCluster     bool
	kruiseNamespace string
	export          string
	dryRun          bool
	// settle is how long a SidecarSet write is retried while the server's admission does not see
	// yet the revision or canary base written just before it (its caches follow writes).
	settle time.Duration
}

// NewCommand returns `kubectl sidecarset migrate`.
func NewCommand(o *cli.Options) *cobra.Command {
	f := &migrateFlags{kruiseNamespace: openkruise.Namespace, settle: 15 * time.Second}
	cmd := &cobra.Command{
		Use:   "migrate (-f FILE... | --from-cluster --export FILE) [--dry-run]",
		Short: "Move OpenKruise's SidecarSets and their revisions to this server",
		Long: `Write OpenKruise's SidecarSets and their ControllerRevisions to this server, losing nothing: each
SidecarSet under its name with its labels, annotations and spec (no uid, resourceVersion,
creationTimestamp, generation, managedFields or status), and each ControllerRevision as a
SidecarSetRevision of the same name and revision number, recording the snapshot its data holds.
So injectionStrategy.revision keeps resolving, /rollout Rollback finds the old revisions, and the
pods OpenKruise injected are adopted with no upgrade: the server hashes the same spec as OpenKruise
did (the hash annotations on the pods match) and takes the imported revision equal to the spec as
its latest instead of recording another.

The objects come from files (-f, repeatable, - for stdin; YAML or JSON, a List or several
documents), as these print them while OpenKruise runs:

  kubectl get sidecarsets.apps.kruise.io -o yaml
  kubectl get controllerrevisions -n kruise-system -l kruise.io/sidecarset-name -o yaml

or from the cluster with --from-cluster, while OpenKruise's CRD is still served: once this server's
APIServices are applied, apps.kruise.io/v1alpha1 and v1beta1 are this server's and OpenKruise's
SidecarSets are out of reach. So --from-cluster goes with --export FILE, which writes what it read
to FILE (and checks that all of it converts), before the server is installed; migrate -f FILE then
writes it to the server.

Revisions are written first (a SidecarSet whose imported revision equals its spec takes it over;
one pinning a revision needs it to exist), then the SidecarSets, canaries last. Writing a revision
needs create on sidecarsetrevisions (the role sidecarsets-admin). An object that already exists as
it would be written is left alone (a second run changes nothing); one that differs is an error
naming it and what differs, and the SidecarSet of a revision that failed is not written. What
cannot be carried over as it is (a spec the server would hash differently, a SidecarSet without
its revisions, a SidecarSet whose sidecars ask for OpenKruise's container launch priority or Job
sidecar terminator, which this server does not provide) is a warning on stderr. --dry-run prints
the objects it would write (-o yaml or json) and writes nothing.`,
		Example: `  # Before installing the server: export, and check that everything converts.
  kubectl sidecarset migrate --from-cluster --export openkruise-sidecarsets.yaml
  # Once it is installed:
  kubectl sidecarset migrate -f openkruise-sidecarsets.yaml --dry-run
  kubectl sidecarset migrate -f openkruise-sidecarsets.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runMigrate(cmd.Context(), o, f) },
	}
	cmd.Flags().StringArrayVarP(&f.files, "filename", "f", nil, "OpenKruise's SidecarSets and ControllerRevisions (repeatable; - for stdin)")
	cmd.Flags().BoolVar(&f.fromCluster, "from-cluster", false, "read OpenKruise's SidecarSets and ControllerRevisions from the cluster (with --export or --dry-run)")
	cmd.Flags().StringVar(&f.kruiseNamespace, "kruise-namespace", f.kruiseNamespace, "the namespace of OpenKruise's ControllerRevisions (with --from-cluster)")
	cmd.Flags().StringVar(&f.export, "export", "", "write what --from-cluster read to this file, and nothing to the server")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "print the objects that would be written; write nothing")
	return cmd
}

func (f *migrateFlags) check() error {
	switch {
	case len(f.files) == 0 && !f.fromCluster:
		return errors.New("give OpenKruise's objects with -f FILE, or read them with --from-cluster --export FILE")
	case len(f.files) > 0 && f.fromCluster:
		return errors.New("-f and --from-cluster exclude each other")
	case f.export != "" && !f.fromCluster:
		return errors.New("--export writes what --from-cluster reads: without it, the files are the export")
	case f.fromCluster && f.export == "" && !f.dryRun:
		return errors.New("--from-cluster reads OpenKruise's CRD, which this server's APIServices hide once applied: " +
			"export with --from-cluster --export FILE before installing the server, then migrate -f FILE")
	}
	return nil
}

func runMigrate(ctx context.Context, o *cli.Options, f *migrateFlags) error {
	if err := f.check(); err != nil {
		return err
	}
	if err := o.CheckOutput(); err != nil {
		return err
	}
	var objs []*unstructured.Unstructured
	if f.fromCluster {
		var err error
		if objs, err = readOpenKruise(ctx, o, f.kruiseNamespace); err != nil {
			return err
		}
	}
	for _, file := range f.files {
		read, err := manifest.ReadFile(o.In, file)
		if err != nil {
			return err
		}
		objs = append(objs, read...)
	}
	plan, err := openkruise.Convert(objs)
	if err != nil {
		return err
	}
	for _, w := range plan.Warnings {
		fmt.Fprintln(o.ErrOut, "Warning:", w)
	}
	switch {
	case f.export != "":
		if err := writeExport(f.export, objs); err != nil {
			return err
		}
		_, err := fmt.Fprintf(o.Out, "exported %d SidecarSets and %d of their ControllerRevisions to %s\n", len(plan.SidecarSets), len(plan.Revisions), f.export)
		return err
	case f.dryRun:
		return o.PrintObjects(planObjects(plan))
	}
	c, err := o.NewClients()
	if err != nil {
		return err
	}
	w := &migration{client: c.SidecarSet, settle: f.settle}
	report := func(line string) { fmt.Fprintln(o.Out, line) }
	if o.Output != "" {
		report = func(string) {} // -o prints the objects as stored instead
	}
	written, failed := w.apply(ctx, plan, report, func(err error) { fmt.Fprintln(o.ErrOut, "error:", err) })
	if o.Output != "" {
		if err := o.PrintObjects(written); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%w: %d of %d objects not migrated", errMigrationIncomplete, failed, len(plan.Revisions)+len(plan.SidecarSets))
	}
	return nil
}

// planObjects returns the objects of plan in write order, as documents.
func planObjects(plan *openkruise.Plan) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, r := range plan.Revisions {
		out = append(out, toDocument(r))
	}
	for _, ss := range plan.SidecarSets {
		out = append(out, toDocument(ss))
	}
	return out
}

// toDocument returns obj as a document, without what a typed object always has but says nothing:
// an empty creationTimestamp and status, and the managedFields.
func toDocument(obj runtime.Object) *unstructured.Unstructured {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return &unstructured.Unstructured{Object: map[string]interface{}{"error": err.Error()}}
	}
	u := &unstructured.Unstructured{Object: content}
	unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	if ts := u.GetCreationTimestamp(); ts.IsZero() {
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	}
	if ss, ok := obj.(*v1alpha1.SidecarSet); ok && apiequality.Semantic.DeepEqual(ss.Status, v1alpha1.SidecarSetStatus{}) {
		delete(u.Object, "status")
	}
	return u
}

// migration writes a plan to the server.
type migration struct {
	client versioned.Interface
	settle time.Duration
}

// apply writes the revisions, then the SidecarSets; it reports each object written or left alone
// with report and each failure with fail, and returns the objects as stored and the number of
// failures. A SidecarSet with a revision that failed is not written: it would record its own.
func (m *migration) apply(ctx context.Context, plan *openkruise.Plan, report func(string), fail func(error)) ([]*unstructured.Unstructured, int) {
	var written []*unstructured.Unstructured
	failed := 0
	brokenSets := map[string]string{}
	for _, r := range plan.Revisions {
		got, created, err := m.revision(ctx, r)
		if err != nil {
			failed++
			fail(err)
			brokenSets[r.SidecarSetName] = r.Name
			continue
		}
		written = append(written, toDocument(got))
		report(fmt.Sprintf("sidecarsetrevision.apps.kruise.io/%s %s (revision %d of SidecarSet %s)", r.Name, verb(created), r.Revision, r.SidecarSetName))
	}
	for _, ss := range plan.SidecarSets {
		if rev, ok := brokenSets[ss.Name]; ok {
			failed++
			fail(fmt.Errorf("SidecarSet %s not written: its revision %s was not migrated (the server would record its own)", ss.Name, rev))
			continue
		}
		got, created, err := m.sidecarSet(ctx, ss)
		if err != nil {
			failed++
			fail(err)
			continue
		}
		written = append(written, toDocument(got))
		report(fmt.Sprintf("sidecarset.apps.kruise.io/%s %s", ss.Name, verb(created)))
	}
	return written, failed
}

func verb(created bool) string {
	if created {
		return "created"
	}
	return "unchanged"
}

// revision creates r, or checks that the stored revision of that name is r.
func (m *migration) revision(ctx context.Context, r *v1alpha1.SidecarSetRevision) (*v1alpha1.SidecarSetRevision, bool, error) {
	revisions := m.client.AppsV1alpha1().SidecarSetRevisions()
	got, err := revisions.Create(ctx, r, metav1.CreateOptions{})
	if err == nil {
		return got, true, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, false, fmt.Errorf("SidecarSetRevision %s (ControllerRevision %s of SidecarSet %s): %w", r.Name, r.Name, r.SidecarSetName, err)
	}
	if got, err = revisions.Get(ctx, r.Name, metav1.GetOptions{}); err != nil {
		return nil, false, fmt.Errorf("SidecarSetRevision %s exists and cannot be read: %w", r.Name, err)
	}
	if diff := openkruise.RevisionDiff(r, got); diff != "" {
		return nil, false, fmt.Errorf("SidecarSetRevision %s exists and differs from OpenKruise's ControllerRevision: %s", r.Name, diff)
	}
	return got, false, nil
}

// sidecarSet creates ss, or checks that the stored SidecarSet of that name is ss. While the
// server's admission does not see yet the revision ss pins or its canary base (written just
// before), the create is tried again.
func (m *migration) sidecarSet(ctx context.Context, ss *v1alpha1.SidecarSet) (*v1alpha1.SidecarSet, bool, error) {
	sets := m.client.AppsV1alpha1().SidecarSets()
	deadline := time.Now().Add(m.settle)
	for {
		got, err := sets.Create(ctx, ss, metav1.CreateOptions{})
		switch {
		case err == nil:
			return got, true, nil
		case apierrors.IsAlreadyExists(err):
			if got, err = sets.Get(ctx, ss.Name, metav1.GetOptions{}); err != nil {
				return nil, false, fmt.Errorf("SidecarSet %s exists and cannot be read: %w", ss.Name, err)
			}
			if diff := openkruise.SidecarSetDiff(ss, got); diff != "" {
				return nil, false, fmt.Errorf("SidecarSet %s exists and differs from OpenKruise's: %s", ss.Name, diff)
			}
			return got, false, nil
		case awaitsCaches(err) && time.Now().Before(deadline):
			select {
			case <-ctx.Done():
				return nil, false, ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
		default:
			return nil, false, fmt.Errorf("SidecarSet %s: %w", ss.Name, err)
		}
	}
}

// awaitsCaches reports whether the server refused a SidecarSet only for what its admission does
// not see yet: the revision injectionStrategy.revision names, the canary base, or its caches not
// loaded.
func awaitsCaches(err error) bool {
	if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "not yet ready to handle request") {
		return true
	}
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	causes := status.Status().Details.Causes
	for _, c := range causes {
		if !strings.HasPrefix(c.Field, "spec.injectionStrategy.revision") && c.Field != "metadata.annotations[apps.kruise.io/sidecarset-base]" {
			return false
		}
	}
	return len(causes) > 0
}

// writeExport writes the objects read as one YAML List, their managedFields left out.
func writeExport(path string, objs []*unstructured.Unstructured) error {
	items := make([]interface{}, len(objs))
	for i, obj := range objs {
		obj = obj.DeepCopy()
		unstructured.RemoveNestedField(obj.Object, "metadata", "managedFields")
		items[i] = obj.Object
	}
	data, err := yaml.Marshal(map[string]interface{}{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// readOpenKruise lists OpenKruise's SidecarSets, at the version its CRD stores and serves, and
// the ControllerRevisions of SidecarSets in namespace.
func readOpenKruise(ctx context.Context, o *cli.Options, namespace string) ([]*unstructured.Unstructured, error) {
	c, err := o.ClusterAPIs()
	if err != nil {
		return nil, err
	}
	crd, err := c.Extensions.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, openKruiseCRD, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("OpenKruise's SidecarSet CRD %s is not installed: nothing to read (migrate the files exported before it was removed with -f)", openKruiseCRD)
	}
	if err != nil {
		return nil, fmt.Errorf("reading CRD %s: %w", openKruiseCRD, err)
	}
	services, unread, err := apiservice.Get(ctx, c.Aggregator)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", unread, err)
	}
	version, err := openKruiseVersion(crd, services)
	if err != nil {
		return nil, err
	}
	list, err := c.Dynamic.Resource(schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing OpenKruise's SidecarSets (%s/%s): %w", crd.Spec.Group, version, err)
	}
	var out []*unstructured.Unstructured
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	revs, err := c.Kube.AppsV1().ControllerRevisions(namespace).List(ctx, metav1.ListOptions{LabelSelector: openkruise.SidecarSetNameLabel})
	if err != nil {
		return nil, fmt.Errorf("listing the ControllerRevisions of SidecarSets in %s: %w", namespace, err)
	}
	for i := range revs.Items {
		r := &revs.Items[i]
		r.APIVersion, r.Kind = "apps/v1", "ControllerRevision"
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(r)
		if err != nil {
			return nil, err
		}
		out = append(out, &unstructured.Unstructured{Object: content})
	}
	return out, nil
}

// openKruiseVersion returns the version to read OpenKruise's SidecarSets at: the CRD's storage
// version if it is served and not taken by an APIService of this server, else another such.
func openKruiseVersion(crd *apiextensionsv1.CustomResourceDefinition, services map[string]*apiregistrationv1.APIService) (string, error) {
	var readable []string
	var hidden []string
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		if apiservice.Takes(services, crd.Spec.Group, v.Name) {
			hidden = append(hidden, v.Name)
			continue
		}
		if v.Storage {
			return v.Name, nil
		}
		readable = append(readable, v.Name)
	}
	if len(readable) > 0 {
		return readable[0], nil
	}
	if len(hidden) > 0 {
		return "", fmt.Errorf("OpenKruise's SidecarSets are hidden: the APIServices of this server take %s of %s; "+
			"read them before installing it (--from-cluster --export FILE), or after deleting its APIServices", strings.Join(hidden, ", "), crd.Spec.Group)
	}
	return "", fmt.Errorf("CRD %s serves no version", crd.Name)
}
