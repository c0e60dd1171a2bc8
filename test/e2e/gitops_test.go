package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/test/gitops"
)

// gitopsRestartDelay is how long the fake kubelet takes to restart a sidecar whose image changed
// in the pods of TestGitOpsHealth: long enough for a rollout to be seen in progress.
const gitopsRestartDelay = "15s"

// TestGitOpsHealth: a SidecarSet and a NamespacedSidecarSet read from the cluster, as Argo CD (the
// shipped health script, run as Argo CD runs it) and Flux (kstatus) read them, in each state of a
// rollout: Healthy and Current once settled, Progressing and InProgress while a new image rolls
// out, Suspended (kstatus: InProgress, not Failed) while the rollout is paused, Degraded and Failed
// while it is stalled on an image that cannot be pulled, and Healthy and Current again once the
// image is put back.
func TestGitOpsHealth(t *testing.T) {
	parallelTest(t)
	script, err := os.ReadFile(filepath.Join(root, gitops.ScriptPath))
	if err != nil {
		t.Fatal(err)
	}
	ns := tempNamespace(t, "e2e-gitops-")
	for _, s := range []gitopsSubject{clusterSubject(ns), namespacedSubject(ns)} {
		t.Run(s.kind, func(t *testing.T) {
			t.Parallel()
			checkGitOpsHealth(t, string(script), s)
		})
	}
}

// gitopsSubject is one object of TestGitOpsHealth and how to write and read it.
type gitopsSubject struct {
	kind, namespace, app string
	create               func(ctx context.Context, spec v1alpha1.SidecarSetSpec) error
	patch                func(ctx context.Context, patch string) error
	resource             func() *rest.Request // a request on the object, for a raw GET
	delete               func(ctx context.Context) error
	settled              func(t *testing.T) // waits until the server serves it
}

// clusterSubject is a SidecarSet confined to namespace ns.
func clusterSubject(ns string) gitopsSubject {
	client := sidecars.AppsV1alpha1().SidecarSets()
	const name = "e2e-gitops-health"
	return gitopsSubject{kind: "SidecarSet", namespace: ns, app: "gitops-cluster",
		create: func(ctx context.Context, spec v1alpha1.SidecarSetSpec) error {
			spec.Namespace = ns
			_, err := client.Create(ctx, &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{})
			return err
		},
		patch: func(ctx context.Context, patch string) error {
			_, err := client.Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
			return err
		},
		resource: func() *rest.Request {
			return sidecars.AppsV1alpha1().RESTClient().Get().Resource("sidecarsets").Name(name)
		},
		delete:  func(ctx context.Context) error { return client.Delete(ctx, name, metav1.DeleteOptions{}) },
		settled: func(t *testing.T) { waitSettled(t, name) },
	}
}

// namespacedSubject is a NamespacedSidecarSet in namespace ns.
func namespacedSubject(ns string) gitopsSubject {
	client := sidecars.AppsV1alpha1().NamespacedSidecarSets(ns)
	const name = "gitops-health"
	return gitopsSubject{kind: "NamespacedSidecarSet", namespace: ns, app: "gitops-namespaced",
		create: func(ctx context.Context, spec v1alpha1.SidecarSetSpec) error {
			_, err := client.Create(ctx, &v1alpha1.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{})
			return err
		},
		patch: func(ctx context.Context, patch string) error {
			_, err := client.Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
			return err
		},
		resource: func() *rest.Request {
			return sidecars.AppsV1alpha1().RESTClient().Get().Namespace(ns).Resource("namespacedsidecarsets").Name(name)
		},
		delete:  func(ctx context.Context) error { return client.Delete(ctx, name, metav1.DeleteOptions{}) },
		settled: func(t *testing.T) { waitNamespacedSettled(t, sidecars, ns, name) },
	}
}

// checkGitOpsHealth takes s through the states of a rollout of two pods and waits, in each, for
// the health script and kstatus to read the object read from the server as they should.
func checkGitOpsHealth(t *testing.T, script string, s gitopsSubject) {
	ctx := context.Background()
	if err := s.create(ctx, simpleSidecarSet(s.app, "busybox:1.36", nil).Spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.delete(context.Background()) })
	s.settled(t) // pods created before it is served would be created without its sidecar
	for i := range 2 {
		pod := teamPod(s.namespace, s.app, fmt.Sprintf("%s-%d", s.app, i))
		pod.Annotations = map[string]string{"kwok.x-k8s.io/image-change-delay": gitopsRestartDelay}
		if _, err := kube.CoreV1().Pods(s.namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		p := waitPodRunning(t, s.namespace, fmt.Sprintf("%s-%d", s.app, i), true)
		if len(p.Spec.Containers) != 2 {
			t.Fatalf("pod %s not injected: %d containers", p.Name, len(p.Spec.Containers))
		}
	}
	image := func(image string) string {
		return `"containers":[{"name":"sidecar1","image":"` + image + `"}]`
	}
	for _, step := range []struct {
		name, patch string
		argo        string
		kstatus     status.Status
		message     string // in the health script's message
		stalled     metav1.ConditionStatus
	}{
		{"settled", "", gitops.Healthy, status.CurrentStatus, "2 of 2 pods updated", ""},
		{"rolling out", `{"spec":{` + image("busybox:1.37") + `}}`, gitops.Progressing, status.InProgressStatus, "rollout", ""},
		{"rolled out", "", gitops.Healthy, status.CurrentStatus, "2 of 2 pods updated", ""},
		{"paused", `{"spec":{"updateStrategy":{"paused":true},` + image("busybox:1.38") + `}}`, gitops.Suspended, status.InProgressStatus, "paused", ""},
		{"stalled", `{"spec":{"updateStrategy":{"paused":false},` + image("busybox:bad") + `}}`, gitops.Degraded, status.FailedStatus,
			"ImagePullBackOff", metav1.ConditionTrue},
		{"recovered", `{"spec":{` + image("busybox:1.37") + `}}`, gitops.Healthy, status.CurrentStatus, "2 of 2 pods updated", metav1.ConditionFalse},
	} {
		if step.patch != "" {
			if err := s.patch(ctx, step.patch); err != nil {
				t.Fatalf("%s: patch: %v", step.name, err)
			}
		}
		var evalErr error
		eventually(t, fmt.Sprintf("%s %s: Argo CD %s, kstatus %s", s.kind, step.name, step.argo, step.kstatus), rolloutTimeout,
			func(ctx context.Context) (bool, string) {
				obj, err := readGitOpsObject(ctx, s)
				if err != nil {
					return false, err.Error()
				}
				v, err := gitops.Evaluate(script, obj)
				if err != nil {
					evalErr = err
					return true, ""
				}
				observed, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
				stalled := stalledStatus(obj)
				ok := v.ArgoCD.Status == step.argo && v.Kstatus == step.kstatus && strings.Contains(v.ArgoCD.Message, step.message) &&
					observed == obj.GetGeneration() && stalled == step.stalled
				return ok, fmt.Sprintf("Argo CD %s (%s), kstatus %s (%s), generation %d observed %d, Stalled %q",
					v.ArgoCD.Status, v.ArgoCD.Message, v.Kstatus, v.KstatusMessage, obj.GetGeneration(), observed, stalled)
			})
		if evalErr != nil {
			t.Fatalf("%s: %v", step.name, evalErr)
		}
	}
}

// readGitOpsObject reads s as the server returns it, as GitOps tools read it.
func readGitOpsObject(ctx context.Context, s gitopsSubject) (*unstructured.Unstructured, error) {
	data, err := s.resource().DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	if obj.GetKind() != s.kind {
		return nil, fmt.Errorf("read a %q, want a %s", obj.GetKind(), s.kind)
	}
	return obj, nil
}

// stalledStatus is the status of obj's Stalled condition, "" when it has none.
func stalledStatus(obj *unstructured.Unstructured) metav1.ConditionStatus {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var list []metav1.Condition
	for _, c := range conditions {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		t, _ := m["type"].(string)
		s, _ := m["status"].(string)
		list = append(list, metav1.Condition{Type: t, Status: metav1.ConditionStatus(s)})
	}
	if c := apimeta.FindStatusCondition(list, "Stalled"); c != nil {
		return c.Status
	}
	return ""
}
