package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/test/conformance"
)

// TestValidationConformance runs every validation scenario of testdata/conformance and
// testdata/extra-conformance through kube-apiserver and the aggregation layer.
func TestValidationConformance(t *testing.T) {
	dirs := scenarioDirs(t, "validation")
	for _, name := range sortedNames(dirs) {
		var outcome validationOutcome
		if !t.Run(name, func(t *testing.T) { outcome = runValidationScenario(t, dirs[name]) }) {
			continue
		}
		t.Run(name+"/namespaced", func(t *testing.T) {
			if !runNamespacedValidation(t, dirs[name], outcome) {
				t.Skip("does not apply to NamespacedSidecarSets")
			}
		})
	}
}

// runValidationScenario runs the scenario and returns its outcome, for the NamespacedSidecarSet run.
func runValidationScenario(t *testing.T, dir string) validationOutcome {
	ctx := context.Background()
	var meta conformance.Meta
	var want conformance.ValidationExpect
	mustRead(t, filepath.Join(dir, "meta.yaml"), false, &meta)
	mustRead(t, filepath.Join(dir, "expect.yaml"), false, &want)
	if err := meta.Validate(); err != nil {
		t.Fatalf("meta.yaml: %v", err)
	}
	if err := want.Validate(); err != nil {
		t.Fatalf("expect.yaml: %v", err)
	}
	if conformance.HasFlag(meta.Flags, conformance.FlagSchemaValidation) {
		t.Logf("flag %s: run, since this server validates in the API server, not in a webhook", conformance.FlagSchemaValidation)
	}
	deleteAllSidecarSets(t)
	applyRequirements(t, meta.Requires)
	existing := readSidecarSets(t, filepath.Join(dir, "existing.yaml"))
	for _, ss := range existing {
		if err := applySidecarSet(t, ss); err != nil {
			t.Fatalf("existing SidecarSet %s: %v", ss.Name, err)
		}
		waitRecorded(t, ss.Name, func(ctx context.Context) (string, error) {
			got, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, ss.Name, metav1.GetOptions{})
			if err != nil {
				return "", err
			}
			return got.Status.LatestRevision, nil
		})
	}
	docs := readSidecarSets(t, filepath.Join(dir, "sidecarset.yaml"))
	if len(docs) != 1 {
		t.Fatalf("want one SidecarSet in sidecarset.yaml, got %d", len(docs))
	}
	ss := docs[0]
	var err error
	switch meta.Operation {
	case conformance.OperationCreate:
		err = createSidecarSet(ctx, ss)
	case conformance.OperationUpdate:
		found := false
		for _, e := range existing {
			found = found || e.Name == ss.Name
		}
		if !found {
			t.Fatalf("operation update: existing.yaml has no SidecarSet %s", ss.Name)
		}
		err = updateSidecarSet(ctx, ss)
	default:
		err = applySidecarSet(t, ss)
	}
	cands, mismatch := want.Match(err)
	if mismatch != nil {
		t.Fatalf("%s: %v", meta.Title, mismatch)
	}
	if err != nil {
		if cands[0].Alternative {
			t.Logf("%s: the documented alternative outcome (%s)", meta.Title, cands[0].When)
		}
		return validationOutcome{rejected: errorFields(err)}
	}
	got, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, ss.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	outcome := validationOutcome{stored: &got.Spec}
	// The first candidate whose stored assertions hold wins; otherwise report the main one's.
	var first error
	for _, c := range cands {
		err := c.Stored.Evaluate(toDoc(got), false).Err()
		if err == nil {
			if c.Alternative {
				t.Logf("%s: the documented alternative outcome (%s)", meta.Title, c.When)
			}
			return outcome
		}
		if first == nil {
			first = err
		}
	}
	t.Errorf("%s: stored: %v", meta.Title, first)
	return outcome
}

// waitRecorded waits until the controller recorded the latest revision of an existing SidecarSet:
// the server's SidecarSet cache, which the admission checks read, then has it, and its revision
// exists. Validation needs no more (its injection need not be in place).
func waitRecorded(t *testing.T, name string, latestRevision func(context.Context) (string, error)) {
	t.Helper()
	// Every 50 ms: the catalogue waits so for each of its many SidecarSets.
	eventuallyEvery(t, "the revision of "+name+" recorded", 50*time.Millisecond, time.Minute, func(ctx context.Context) (bool, string) {
		rev, err := latestRevision(ctx)
		if err != nil {
			return false, err.Error()
		}
		return rev != "", "no latest revision"
	})
}

// applySidecarSet creates the SidecarSet or replaces the stored one of the same name.
func applySidecarSet(t *testing.T, ss *v1alpha1.SidecarSet) error {
	t.Helper()
	ctx := context.Background()
	err := createSidecarSet(ctx, ss)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	return updateSidecarSet(ctx, ss)
}

// createSidecarSet creates the SidecarSet, at v1beta1 when the runner converts to it.
func createSidecarSet(ctx context.Context, ss *v1alpha1.SidecarSet) error {
	if beta := asV1beta1(ss); beta != nil {
		_, err := sidecars.AppsV1beta1().SidecarSets().Create(ctx, beta, metav1.CreateOptions{})
		return err
	}
	_, err := sidecars.AppsV1alpha1().SidecarSets().Create(ctx, ss.DeepCopy(), metav1.CreateOptions{})
	return err
}

// updateSidecarSet replaces the stored SidecarSet of the same name with ss, at its current
// resourceVersion (kubectl replace), at v1beta1 when the runner converts to it. The controller
// writes the status between the read and the write at times: on a conflict, read again.
func updateSidecarSet(ctx context.Context, ss *v1alpha1.SidecarSet) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if beta := asV1beta1(ss); beta != nil {
			client := sidecars.AppsV1beta1().SidecarSets()
			current, err := client.Get(ctx, ss.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			beta.ResourceVersion = current.ResourceVersion
			_, err = client.Update(ctx, beta, metav1.UpdateOptions{})
			return err
		}
		client := sidecars.AppsV1alpha1().SidecarSets()
		current, err := client.Get(ctx, ss.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		update := ss.DeepCopy()
		update.ResourceVersion = current.ResourceVersion
		_, err = client.Update(ctx, update, metav1.UpdateOptions{})
		return err
	})
}

// settleDiagnostics describes, for a SidecarSet that did not settle, its generation and status and
// the end of the server's log.
func settleDiagnostics(ss *v1alpha1.SidecarSet) string {
	var b strings.Builder
	if ss != nil {
		status, _ := yaml.Marshal(ss.Status)
		fmt.Fprintf(&b, "generation %d, status:\n%s", ss.Generation, status)
	}
	if log, err := readServerLog(1); err == nil {
		lines := strings.Split(strings.TrimSpace(log), "\n")
		fmt.Fprintf(&b, "the server's log, last lines:\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
	}
	return b.String()
}

func deleteAllSidecarSets(t *testing.T) {
	t.Helper()
	serialOnly(t, "deleting every SidecarSet")
	client := sidecars.AppsV1alpha1().SidecarSets()
	// Deleting a thousand SidecarSets can outlast kube-apiserver's request timeout, which ends the
	// deletion where it is: delete again what is left until nothing is.
	eventually(t, "every SidecarSet deleted", 5*time.Minute, func(ctx context.Context) (bool, string) {
		list, err := client.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		if len(list.Items) == 0 {
			return true, ""
		}
		err = client.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		if err != nil && !apierrors.IsTimeout(err) && !apierrors.IsServerTimeout(err) { // no use waiting
			t.Fatalf("deleting every SidecarSet: %v", err)
		}
		return false, fmt.Sprintf("%d SidecarSets left (delete: %v)", len(list.Items), err)
	})
	deleteAllNamespacedSidecarSets(t)
	// The admission plugin's SidecarSet cache follows the deletions a watch event behind.
	waitServerGauge(t, `sidecarset_cached_objects{resource="sidecarsets"}`, "0")
}

// deleteAllNamespacedSidecarSets deletes the NamespacedSidecarSets of every namespace.
func deleteAllNamespacedSidecarSets(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	list, err := sidecars.AppsV1alpha1().NamespacedSidecarSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing NamespacedSidecarSets: %v", err)
	}
	for _, n := range list.Items {
		err := sidecars.AppsV1alpha1().NamespacedSidecarSets(n.Namespace).Delete(ctx, n.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("deleting NamespacedSidecarSet %s/%s: %v", n.Namespace, n.Name, err)
		}
	}
}
