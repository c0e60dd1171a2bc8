package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/test/conformance"
)

// The conformance scenarios run again with NamespacedSidecarSets where they apply: every
// SidecarSet of the scenario is v1alpha1, selects every namespace (no namespace or
// namespaceSelector), pins no revision (revision names carry the SidecarSet's name) and has a
// name that fits with the namespace. Each becomes a NamespacedSidecarSet of one namespace, which
// keeps which SidecarSets select the same pods. The outcome must be the cluster-wide one: the
// same acceptance, the same fields in error, the same stored spec, the same injected pod (with
// the SidecarSets named <namespace>.<name> in its annotations).

// asNamespaced returns the SidecarSets as NamespacedSidecarSets of namespace, or false where the
// scenario does not apply.
func asNamespaced(sets []*v1alpha1.SidecarSet, namespace string) ([]*v1alpha1.NamespacedSidecarSet, bool) {
	var out []*v1alpha1.NamespacedSidecarSet
	for _, ss := range sets {
		if ss.APIVersion != v1alpha1.SchemeGroupVersion.String() || ss.Spec.Namespace != "" || ss.Spec.NamespaceSelector != nil ||
			ss.Spec.InjectionStrategy.Revision != nil || len(v1alpha1.NamespacedName(namespace, ss.Name)) > 63 {
			return nil, false
		}
		n := &v1alpha1.NamespacedSidecarSet{ObjectMeta: *ss.ObjectMeta.DeepCopy(), Spec: *ss.Spec.DeepCopy()}
		n.Namespace = namespace
		out = append(out, n)
	}
	return out, true
}

// applyNamespaced creates n, or replaces the stored one of the same name.
func applyNamespaced(ctx context.Context, n *v1alpha1.NamespacedSidecarSet) error {
	client := sidecars.AppsV1alpha1().NamespacedSidecarSets(n.Namespace)
	_, err := client.Create(ctx, n.DeepCopy(), metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	// The controller writes the status between the read and the write at times: read again.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := client.Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		update := n.DeepCopy()
		update.ResourceVersion = current.ResourceVersion
		_, err = client.Update(ctx, update, metav1.UpdateOptions{})
		return err
	})
}

// errorFields returns the sorted field paths of an Invalid error's causes ("" for none), or the
// reason of another error.
func errorFields(err error) []string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return []string{err.Error()}
	}
	st := status.Status()
	if st.Details == nil || len(st.Details.Causes) == 0 {
		return []string{string(st.Reason)}
	}
	var fields []string
	for _, c := range st.Details.Causes {
		fields = append(fields, string(c.Type)+" "+c.Field)
	}
	sort.Strings(fields)
	return fields
}

// validationOutcome is what a validation scenario gave: the fields in error, or the stored spec.
type validationOutcome struct {
	rejected []string
	stored   *v1alpha1.SidecarSetSpec
}

// runNamespacedValidation runs a validation scenario with NamespacedSidecarSets and compares the
// outcome with the cluster-wide one; false where the scenario does not apply.
func runNamespacedValidation(t *testing.T, dir string, clusterWide validationOutcome) bool {
	t.Helper()
	ctx := context.Background()
	var meta conformance.Meta
	mustRead(t, filepath.Join(dir, "meta.yaml"), false, &meta)
	existing, ok := asNamespaced(readSidecarSets(t, filepath.Join(dir, "existing.yaml")), commonNamespace)
	docs, docOK := asNamespaced(readSidecarSets(t, filepath.Join(dir, "sidecarset.yaml")), commonNamespace)
	if !ok || !docOK || len(docs) != 1 {
		return false
	}
	deleteAllSidecarSets(t)
	applyRequirements(t, meta.Requires)
	applyNamespaces(t, filepath.Join(conformanceDir, "common", "namespace.yaml"))
	for _, n := range existing {
		if err := applyNamespaced(ctx, n); err != nil {
			t.Fatalf("existing NamespacedSidecarSet %s: %v", n.Name, err)
		}
		waitRecorded(t, n.Name, func(ctx context.Context) (string, error) {
			got, err := sidecars.AppsV1alpha1().NamespacedSidecarSets(n.Namespace).Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return "", err
			}
			return got.Status.LatestRevision, nil
		})
	}
	doc := docs[0]
	client := sidecars.AppsV1alpha1().NamespacedSidecarSets(doc.Namespace)
	var err error
	if meta.Operation == conformance.OperationCreate {
		_, err = client.Create(ctx, doc.DeepCopy(), metav1.CreateOptions{})
	} else {
		err = applyNamespaced(ctx, doc)
	}
	got := validationOutcome{}
	if err != nil {
		got.rejected = errorFields(err)
	} else {
		stored, err := client.Get(ctx, doc.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got.stored = &stored.Spec
	}
	if diff := cmp.Diff(clusterWide, got, cmp.AllowUnexported(validationOutcome{})); diff != "" {
		t.Errorf("%s: the NamespacedSidecarSet's outcome differs from the SidecarSet's (-SidecarSet +NamespacedSidecarSet):\n%s", meta.Title, diff)
	}
	return true
}

// runNamespacedInjection runs an injection scenario with NamespacedSidecarSets in the pod's
// namespace and compares the pod with the one the SidecarSets gave (nil: rejected); false where the
// scenario does not apply.
func runNamespacedInjection(t *testing.T, dir string, clusterWide *corev1.Pod) bool {
	t.Helper()
	ctx := context.Background()
	var meta conformance.Meta
	mustRead(t, filepath.Join(dir, "meta.yaml"), false, &meta)
	if _, err := os.Stat(filepath.Join(dir, "procedure.yaml")); err == nil {
		return false // procedures capture and substitute names
	}
	var sets []*v1alpha1.SidecarSet
	for i, doc := range readSidecarSetDocs(t, filepath.Join(dir, "sidecarsets.yaml")) {
		ss, err := decodeSidecarSet(doc)
		if err != nil || ss.Kind != "SidecarSet" {
			t.Fatalf("sidecarsets.yaml document %d: %v", i+1, err)
		}
		sets = append(sets, ss)
	}
	deleteAllSidecarSets(t)
	applyNamespaces(t, filepath.Join(conformanceDir, "common", "namespace.yaml"))
	applyRequirements(t, meta.Requires)
	namespaces := applyNamespaces(t, filepath.Join(dir, "namespace.yaml"))
	data, err := os.ReadFile(filepath.Join(dir, "pod.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	if err := conformance.DecodeStrict(data, pod); err != nil {
		t.Fatalf("pod.yaml: %v", err)
	}
	if pod.Namespace == "" {
		pod.Namespace = conformance.NamespaceFromNotes(meta.Notes, append(namespaces, commonNamespace), commonNamespace)
	}
	namespaced, ok := asNamespaced(sets, pod.Namespace)
	if !ok {
		return false
	}
	for _, n := range namespaced {
		if err := applyNamespaced(ctx, n); err != nil {
			t.Fatalf("NamespacedSidecarSet %s: %v", n.Name, err)
		}
		waitNamespacedSettled(t, sidecars, n.Namespace, n.Name)
	}
	got, err := createPodDryRun(pod)
	switch {
	case clusterWide == nil && err == nil:
		t.Errorf("%s: the pod the SidecarSets refused is admitted with NamespacedSidecarSets", meta.Title)
	case clusterWide != nil && err != nil:
		t.Errorf("%s: the pod is refused with NamespacedSidecarSets: %v", meta.Title, err)
	case err == nil:
		if diff := cmp.Diff(comparablePod(clusterWide), unprefixed(comparablePod(got), pod.Namespace)); diff != "" {
			t.Errorf("%s: the pod differs with NamespacedSidecarSets (-SidecarSet +NamespacedSidecarSet):\n%s", meta.Title, diff)
		}
	}
	return true
}

// unprefixed drops "<namespace>." from the SidecarSet names the pod's annotations record.
func unprefixed(pod *corev1.Pod, namespace string) *corev1.Pod {
	for k, v := range pod.Annotations {
		pod.Annotations[k] = strings.ReplaceAll(v, namespace+".", "")
	}
	return pod
}
