package migrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	k8stesting "k8s.io/client-go/testing"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/cli"
	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/manifest"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/stored"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/generated/clientset/versioned/fake"
)

var migrateFiles = []string{"-f", "../../../../pkg/migrate/testdata/openkruise-sidecarsets.yaml", "-f", "../../../../pkg/migrate/testdata/openkruise-revisions.yaml"}

// runMigrateCommand runs kubectl sidecarset with args against client and returns its stdout,
// stderr and error.
func runMigrateCommand(t *testing.T, client *fake.Clientset, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	o := cli.NewOptions(strings.NewReader(""), &out, &errOut)
	o.NewClients = func() (*cli.Clients, error) { return &cli.Clients{SidecarSet: client}, nil }
	cmd := cli.NewRoot(o, NewCommand(o))
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), errOut.String(), err
}

// serverLike makes the fake store SidecarSets as the server does: defaulted, hashes stamped.
func serverLike() *fake.Clientset {
	client := fake.NewSimpleClientset()
	client.PrependReactor("create", "sidecarsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ss := a.(k8stesting.CreateAction).GetObject().(*v1alpha1.SidecarSet)
		held, err := stored.SidecarSet(ss)
		if err != nil {
			return true, nil, err
		}
		if err := client.Tracker().Create(v1alpha1.SchemeGroupVersion.WithResource("sidecarsets"), held, ""); err != nil {
			return true, nil, err
		}
		return true, held, nil
	})
	return client
}

// writes returns the creates the fake received, as resource/name.
func writes(client *fake.Clientset) []string {
	var out []string
	for _, a := range client.Actions() {
		if c, ok := a.(k8stesting.CreateAction); ok {
			out = append(out, a.GetResource().Resource+"/"+c.GetObject().(metav1.Object).GetName())
		}
	}
	return out
}

// TestMigrateFlags: the command says what it needs.
func TestMigrateFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"migrate"}, "give OpenKruise's objects with -f FILE, or read them with --from-cluster --export FILE"},
		{[]string{"migrate", "-f", "x.yaml", "--from-cluster"}, "-f and --from-cluster exclude each other"},
		{[]string{"migrate", "-f", "x.yaml", "--export", "y.yaml"}, "--export writes what --from-cluster reads"},
		{[]string{"migrate", "--from-cluster"}, "this server's APIServices hide once applied: export with --from-cluster --export FILE before installing the server"},
		{[]string{"migrate", "-f", "missing.yaml"}, "missing.yaml: no such file"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			client := fake.NewSimpleClientset()
			if _, _, err := runMigrateCommand(t, client, tc.args...); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
			if len(client.Actions()) != 0 {
				t.Errorf("it reached the server: %v", client.Actions())
			}
		})
	}
}

// TestMigrateDryRun: --dry-run prints the objects in write order and writes nothing.
func TestMigrateDryRun(t *testing.T) {
	for _, format := range []string{"yaml", "json"} {
		t.Run(format, func(t *testing.T) {
			client := fake.NewSimpleClientset()
			out, errOut, err := runMigrateCommand(t, client, append([]string{"migrate", "--dry-run", "-o", format}, migrateFiles...)...)
			if err != nil || errOut != "" {
				t.Fatalf("dry run: %v\n%s", err, errOut)
			}
			if len(client.Actions()) != 0 {
				t.Errorf("a dry run reached the server: %v", client.Actions())
			}
			var kinds []string
			if format == "json" {
				var list struct {
					Items []metav1.PartialObjectMetadata
				}
				if err := json.Unmarshal([]byte(out), &list); err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				for _, item := range list.Items {
					kinds = append(kinds, item.Kind+"/"+item.Name)
				}
			} else {
				for _, doc := range strings.Split(out, "\n---\n") {
					kind := strings.TrimPrefix(strings.Split(doc, "\n")[1], "kind: ")
					name := doc[strings.Index(doc, "\n  name: ")+9:]
					kinds = append(kinds, kind+"/"+name[:strings.Index(name, "\n")])
				}
			}
			want := "SidecarSetRevision/migrate-56bdc8874 SidecarSetRevision/migrate-cf96db497 SidecarSet/migrate"
			if got := strings.Join(kinds, " "); got != want {
				t.Errorf("printed %s, want %s\n%s", got, want, out)
			}
			for _, absent := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "status", "ownerReferences", "generation"} {
				if strings.Contains(out, absent) {
					t.Errorf("the dry run prints %s:\n%s", absent, out)
				}
			}
		})
	}
}

// TestMigrateWarnsOfOpenKruiseFeatures: a SidecarSet whose sidecars ask for OpenKruise's container
// launch priority or Job sidecar terminator is migrated all the same, with a warning on stderr
// naming it, the fields and what stops working; a dry run warns alike.
func TestMigrateWarnsOfOpenKruiseFeatures(t *testing.T) {
	file := filepath.Join(t.TempDir(), "job-proxy.yaml")
	if err := os.WriteFile(file, []byte(`apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata: {name: job-proxy}
spec:
  selector: {matchLabels: {app: batch}}
  containers: [{name: proxy, image: proxy:1, env: [{name: KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT, value: "true"}]}]
  patchPodMetadata: [{annotations: {apps.kruise.io/container-launch-priority: Ordered}}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"dry run", []string{"migrate", "--dry-run"}},
		{"write", []string{"migrate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := serverLike()
			_, errOut, err := runMigrateCommand(t, client, append(append(tc.args, "-f", file), migrateFiles...)...)
			if err != nil {
				t.Fatalf("migrate: %v\n%s", err, errOut)
			}
			for _, want := range []string{
				"Warning: SidecarSet job-proxy relies on OpenKruise features outside the SidecarSet API, which stop working after the cutover: " +
					"OpenKruise's Job sidecar terminator (spec.containers[proxy].env[KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT]): the sidecar is not stopped",
				"; OpenKruise's container launch priority (spec.patchPodMetadata[0].annotations[apps.kruise.io/container-launch-priority]): no container start order",
			} {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
			if strings.Contains(errOut, "SidecarSet migrate relies") {
				t.Errorf("a warning for the SidecarSet that relies on nothing:\n%s", errOut)
			}
		})
	}
}

// TestMigrateWritesRevisionsFirstThenNothingMore: revisions are written before their SidecarSet,
// with OpenKruise's names and numbers; a second run finds everything as it would write it and
// changes nothing.
func TestMigrateWritesRevisionsFirstThenNothingMore(t *testing.T) {
	client := serverLike()
	out, errOut, err := runMigrateCommand(t, client, append([]string{"migrate"}, migrateFiles...)...)
	if err != nil || errOut != "" {
		t.Fatalf("migrate: %v\n%s", err, errOut)
	}
	want := `sidecarsetrevision.apps.kruise.io/migrate-56bdc8874 created (revision 1 of SidecarSet migrate)
sidecarsetrevision.apps.kruise.io/migrate-cf96db497 created (revision 2 of SidecarSet migrate)
sidecarset.apps.kruise.io/migrate created
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	if got := strings.Join(writes(client), " "); got != "sidecarsetrevisions/migrate-56bdc8874 sidecarsetrevisions/migrate-cf96db497 sidecarsets/migrate" {
		t.Errorf("writes in the order %s", got)
	}
	rev, err := client.AppsV1alpha1().SidecarSetRevisions().Get(t.Context(), "migrate-cf96db497", metav1.GetOptions{})
	if err != nil || rev.Revision != 2 || rev.Labels[v1alpha1.SidecarSetNameLabel] != "migrate" || len(rev.OwnerReferences) != 0 {
		t.Errorf("revision 2 stored as %+v, %v", rev, err)
	}

	client.ClearActions()
	out, errOut, err = runMigrateCommand(t, client, append([]string{"migrate"}, migrateFiles...)...)
	if err != nil || errOut != "" {
		t.Fatalf("second migrate: %v\n%s", err, errOut)
	}
	if strings.Count(out, " unchanged") != 3 || strings.Contains(out, "created") {
		t.Errorf("second run:\n%s\nwant every object unchanged", out)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() != "create" && a.GetVerb() != "get" {
			t.Errorf("the second run wrote: %v", a)
		}
	}
}

// TestMigrateConflict: an object of the same name that differs is an error naming it and what
// differs; the SidecarSet of a revision that failed is not written; the run fails.
func TestMigrateConflict(t *testing.T) {
	client := serverLike()
	other := &v1alpha1.SidecarSetRevision{ObjectMeta: metav1.ObjectMeta{Name: "migrate-cf96db497",
		Labels: map[string]string{v1alpha1.SidecarSetNameLabel: "migrate"}}, SidecarSetName: "migrate", Revision: 5}
	if err := client.Tracker().Create(v1alpha1.SchemeGroupVersion.WithResource("sidecarsetrevisions"), other, ""); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runMigrateCommand(t, client, append([]string{"migrate"}, migrateFiles...)...)
	if !errors.Is(err, errMigrationIncomplete) || !strings.Contains(err.Error(), "2 of 3 objects not migrated") {
		t.Errorf("error %v, want 2 of 3 objects not migrated", err)
	}
	for _, want := range []string{
		"error: SidecarSetRevision migrate-cf96db497 exists and differs from OpenKruise's ControllerRevision: revision 5 (want 2), spec, label controller.kubernetes.io/hash missing, label kruise.io/sidecarset-name missing",
		"error: SidecarSet migrate not written: its revision migrate-cf96db497 was not migrated",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if !strings.Contains(out, "migrate-56bdc8874 created") || strings.Contains(out, "sidecarset.apps.kruise.io/migrate") {
		t.Errorf("output:\n%s", out)
	}
}

// TestMigrateWaitsForTheServersCaches: a SidecarSet refused only because the server's admission
// does not see yet the revision it pins (written just before) is written again.
func TestMigrateWaitsForTheServersCaches(t *testing.T) {
	client := serverLike()
	refusals := 1
	client.PrependReactor("create", "sidecarsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if refusals == 0 {
			return false, nil, nil
		}
		refusals--
		return true, nil, apierrors.NewInvalid(apps.Kind("SidecarSet"), "migrate", field.ErrorList{field.Invalid(
			field.NewPath("spec", "injectionStrategy", "revision", "revisionName"), "migrate-56bdc8874", "Cannot find specific ControllerRevision")})
	})
	start := time.Now()
	out, errOut, err := runMigrateCommand(t, client, append([]string{"migrate"}, migrateFiles...)...)
	if err != nil || !strings.Contains(out, "sidecarset.apps.kruise.io/migrate created") {
		t.Fatalf("migrate: %v\n%s%s", err, out, errOut)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("it took %v", time.Since(start))
	}
	if !awaitsCaches(apierrors.NewForbidden(apps.Resource("sidecarsets"), "x", errors.New("not yet ready to handle request"))) ||
		awaitsCaches(apierrors.NewInvalid(apps.Kind("SidecarSet"), "x", field.ErrorList{field.Required(field.NewPath("spec", "selector"), "")})) {
		t.Error("awaitsCaches: a server not ready awaits, an invalid selector does not")
	}
}

// TestMigrateExport: --export writes what was read as one List that migrate -f reads back.
func TestMigrateExport(t *testing.T) {
	o := cli.NewOptions(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	read, err := manifest.ReadFile(o.In, "../../../../pkg/migrate/testdata/openkruise-sidecarsets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "export.yaml")
	if err := writeExport(path, read); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "managedFields") || !strings.Contains(string(data), "kind: List") {
		t.Errorf("export:\n%s", data)
	}
	back, err := manifest.ReadFile(o.In, path)
	if err != nil || len(back) != 1 || back[0].GetUID() != read[0].GetUID() {
		t.Errorf("read back %d objects, %v", len(back), err)
	}
}

// TestOpenKruiseVersion: --from-cluster reads the CRD's storage version unless this server's
// APIService takes it, and says why it cannot read when they take every version.
func TestOpenKruiseVersion(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: openKruiseCRD}}
	crd.Spec.Group = "apps.kruise.io"
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Served: true}, {Name: "v1beta1", Served: true, Storage: true}}
	ours := func(names ...string) map[string]*apiregistrationv1.APIService {
		out := map[string]*apiregistrationv1.APIService{}
		for _, n := range names {
			out[n] = &apiregistrationv1.APIService{Spec: apiregistrationv1.APIServiceSpec{Service: &apiregistrationv1.ServiceReference{Name: "sidecarset-apiserver"}}}
		}
		return out
	}
	local := map[string]*apiregistrationv1.APIService{"v1beta1.apps.kruise.io": {}} // kube-apiserver's own, for the CRD
	for _, tc := range []struct {
		name     string
		services map[string]*apiregistrationv1.APIService
		want     string
		wantErr  string
	}{
		{"the server not installed", nil, "v1beta1", ""},
		{"the CRD's own APIService", local, "v1beta1", ""},
		{"only v1beta1 taken", ours("v1beta1.apps.kruise.io"), "v1alpha1", ""},
		{"both taken", ours("v1alpha1.apps.kruise.io", "v1beta1.apps.kruise.io"), "",
			"OpenKruise's SidecarSets are hidden: the APIServices of this server take v1alpha1, v1beta1 of apps.kruise.io"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := openKruiseVersion(crd, tc.services)
			if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("got %q, %v; want %q, %q", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
