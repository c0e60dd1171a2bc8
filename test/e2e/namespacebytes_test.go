package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/bytebudget"
	clientset "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
)

// localNamespacedBytes is the byte budget per namespace of the local cluster's server:
// hack/local-up.sh sets --max-namespaced-bytes-per-namespace to SERVER_NAMESPACED_BYTES, 4Mi
// unless set.
func localNamespacedBytes(t *testing.T) (int64, string) {
	t.Helper()
	s := os.Getenv("SERVER_NAMESPACED_BYTES")
	if s == "" {
		s = "4Mi"
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		t.Fatalf("SERVER_NAMESPACED_BYTES=%s: %v", s, err)
	}
	return q.Value(), bytebudget.Budget(q.Value()).String()
}

// TestNamespaceByteBudget: a namespace editor fills a namespace with NamespacedSidecarSets of a
// 100 KiB env value each, and their revisions (image changes), up to the local server's byte
// budget. Every write the server lets through leaves the namespace within the budget; the next
// create, and later the next image change, are refused (Forbidden, naming the namespace, what it
// stores, the budget and the flag), when what the namespace stores (measured here as the server
// stores it) plus what they add would pass the budget. Shrinking an object, even with a new
// image, and deleting one pass; of ten creates at once, only those that fit pass.
func TestNamespaceByteBudget(t *testing.T) {
	parallelTest(t)
	ctx := context.Background()
	budget, budgetFlag := localNamespacedBytes(t)
	if out, err := runKubectl(t, "", "apply", "-f", filepath.Join(root, "artifacts/deploy/base/user-roles.yaml")); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	own := tempNamespace(t, "e2e-bytes-")
	editor := namespaceEditor(t, "e2e-bytes-editor", own)
	const pad = 100 << 10
	// One object adds itself and its revision, a little more than twice the pad; an image change
	// its revision.
	const perCreate, perImage = 2*pad + 4<<10, pad + 2<<10
	client := editor.AppsV1alpha1().NamespacedSidecarSets(own)

	// Four objects with two image changes each: 12 revisions.
	for i := 0; i < 4; i++ {
		name := fmt.Sprintf("fill-%d", i)
		createAsEditor(t, editor, own, bytesObject(name, pad))
		waitRevisionsRecorded(t, own, name, 1)
		for j := 1; j <= 2; j++ {
			if err := setNamespacedImage(ctx, editor, own, name, fmt.Sprintf("busybox:1.%d", 36+j), nil); err != nil {
				t.Fatalf("image change %d of %s: %v", j, name, err)
			}
			waitRevisionsRecorded(t, own, name, 1+j)
		}
	}
	checkWithinBudget(t, own, budget)

	// Creates until one is refused.
	var refused error
	for i := 4; refused == nil; i++ {
		name := fmt.Sprintf("fill-%d", i)
		_, err := client.Create(ctx, bytesObject(name, pad), metav1.CreateOptions{})
		switch {
		case apierrors.IsForbidden(err):
			refused = err
			continue
		case err != nil:
			t.Fatalf("create %s: %v", name, err)
		}
		waitRevisionsRecorded(t, own, name, 1)
		if use := checkWithinBudget(t, own, budget); use > budget+2*perCreate {
			t.Fatalf("%d NamespacedSidecarSets store %d bytes, past the budget of %d, and no create was refused", i+1, use, budget)
		}
	}
	use := namespaceStores(t, own)
	t.Logf("create refused at %d bytes stored (budget %d): %v", use, budget, refused)
	checkBudgetRefusal(t, refused, own, use, budgetFlag)
	if use+perCreate <= budget {
		t.Errorf("a create refused at %d bytes stored, %d below the budget of %d: it adds about %d", use, budget-use, budget, perCreate)
	}

	// Image changes until one is refused: each adds a revision of about the pad.
	refused = nil
	for j := 3; refused == nil; j++ {
		err := setNamespacedImage(ctx, editor, own, "fill-0", fmt.Sprintf("busybox:1.%d", 36+j), nil)
		switch {
		case apierrors.IsForbidden(err):
			refused = err
			continue
		case err != nil:
			t.Fatalf("image change %d: %v", j, err)
		case j > 3+perCreate/perImage:
			t.Fatalf("image change %d passed with %d bytes stored, budget %d: the room a refused create left is gone", j, namespaceStores(t, own), budget)
		}
		waitRevisionsRecorded(t, own, "fill-0", 1+j)
		checkWithinBudget(t, own, budget)
	}
	use = namespaceStores(t, own)
	t.Logf("image change refused at %d bytes stored: %v", use, refused)
	checkBudgetRefusal(t, refused, own, use, budgetFlag)
	if use+perImage <= budget {
		t.Errorf("an image change refused at %d bytes stored, %d below the budget of %d: it adds about %d", use, budget-use, budget, perImage)
	}

	// Shrinking passes: the pad gone, with a new image (a new, small revision).
	if err := setNamespacedImage(ctx, editor, own, "fill-0", "busybox:1.99", func(n *v1alpha1.NamespacedSidecarSet) {
		n.Spec.Containers[0].Env = nil
	}); err != nil {
		t.Errorf("shrinking fill-0 with a new image: %v", err)
	}
	if err := client.Delete(ctx, "fill-1", metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete: %v", err)
	}

	// A burst of creates at once, with room for a few: the server's writes of one namespace take
	// turns, each counting the ones before it.
	const burst = 10
	errs := make([]error, burst)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = client.Create(ctx, bytesObject(fmt.Sprintf("burst-%d", i), pad), metav1.CreateOptions{})
		}()
	}
	wg.Wait()
	passed := 0
	for i, err := range errs {
		switch {
		case err == nil:
			passed++
			waitRevisionsRecorded(t, own, fmt.Sprintf("burst-%d", i), 1)
		case !apierrors.IsForbidden(err):
			t.Errorf("burst-%d: %v", i, err)
		}
	}
	use = checkWithinBudget(t, own, budget)
	t.Logf("%d of %d creates at once passed: %d bytes stored", passed, burst, use)
	if passed == burst {
		t.Errorf("all %d creates at once passed", burst)
	}
}

// bytesObject is a NamespacedSidecarSet whose sidecar carries an env value of pad bytes; its
// injection is paused (it selects no pod anyway), so that no policy carries the value.
func bytesObject(name string, pad int) *v1alpha1.NamespacedSidecarSet {
	return &v1alpha1.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{"app": "e2e-bytes-" + name}},
			InjectionStrategy: v1alpha1.SidecarSetInjectionStrategy{Paused: true},
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "agent", Image: "busybox:1.36",
				Env: []corev1.EnvVar{{Name: "PADDING", Value: strings.Repeat("x", pad)}}}}},
		}}
}

// setNamespacedImage sets the image of the NamespacedSidecarSet's sidecar, and makes change too; it returns
// the update's error (a conflict is tried again).
func setNamespacedImage(ctx context.Context, editor clientset.Interface, namespace, name, image string, change func(*v1alpha1.NamespacedSidecarSet)) error {
	for {
		got, err := editor.AppsV1alpha1().NamespacedSidecarSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got.Spec.Containers[0].Image = image
		if change != nil {
			change(got)
		}
		_, err = editor.AppsV1alpha1().NamespacedSidecarSets(namespace).Update(ctx, got, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			return err
		}
	}
}

// waitRevisionsRecorded waits until the NamespacedSidecarSet has n revisions, the latest of its spec.
func waitRevisionsRecorded(t *testing.T, namespace, name string, n int) {
	t.Helper()
	engine := v1alpha1.NamespacedName(namespace, name)
	eventually(t, fmt.Sprintf("%d revisions of %s recorded", n, engine), time.Minute, func(ctx context.Context) (bool, string) {
		got, err := sidecars.AppsV1alpha1().NamespacedSidecarSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		stored, err := storedRevisions(ctx, engine)
		return err == nil && stored == n && got.Status.ObservedGeneration == got.Generation,
			fmt.Sprintf("%d revisions (%v), generation %d observed %d", stored, err, got.Generation, got.Status.ObservedGeneration)
	})
}

// namespaceStores measures what the namespace's NamespacedSidecarSets and their revisions store, as
// the server stores them: each object's v1alpha1 JSON.
func namespaceStores(t *testing.T, namespace string) int64 {
	t.Helper()
	ctx := context.Background()
	objs, err := sidecars.AppsV1alpha1().NamespacedSidecarSets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	revs, err := sidecars.AppsV1alpha1().SidecarSetRevisions().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	size := func(obj any) {
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		n += int64(len(b))
	}
	// As the budget measures them: stored, without their managedFields (docs/tenancy.md).
	for i := range objs.Items {
		o := objs.Items[i]
		o.APIVersion, o.Kind = v1alpha1.SchemeGroupVersion.String(), "NamespacedSidecarSet"
		o.ManagedFields = nil
		size(&o)
	}
	for i := range revs.Items {
		r := revs.Items[i]
		if ns, _, ok := v1alpha1.SplitNamespacedName(r.SidecarSetName); !ok || ns != namespace {
			continue
		}
		r.APIVersion, r.Kind = v1alpha1.SchemeGroupVersion.String(), "SidecarSetRevision"
		r.ManagedFields = nil
		size(&r)
	}
	return n
}

// checkWithinBudget fails the test when the namespace stores more than budget, and returns what it stores.
func checkWithinBudget(t *testing.T, namespace string, budget int64) int64 {
	t.Helper()
	use := namespaceStores(t, namespace)
	if use > budget {
		t.Errorf("namespace %s stores %d bytes, past the budget of %d", namespace, use, budget)
	}
	return use
}

var storesBytes = regexp.MustCompile(`stores (\d+) bytes`)

// checkBudgetRefusal checks a refusal of the byte budget: it names the namespace, the flag with the
// budget, and what the namespace stores, within 1 KiB of what was measured here.
func checkBudgetRefusal(t *testing.T, err error, namespace string, use int64, budget string) {
	t.Helper()
	msg := err.Error()
	for _, want := range []string{"namespace " + namespace + " stores", bytebudget.Flag + "=" + budget} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q does not say %q", msg, want)
		}
	}
	m := storesBytes.FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("refusal %q does not say what the namespace stores", msg)
	}
	said, _ := strconv.ParseInt(m[1], 10, 64)
	if d := said - use; d < -1<<10 || d > 1<<10 {
		t.Errorf("the refusal says the namespace stores %d bytes, measured here %d", said, use)
	}
}
