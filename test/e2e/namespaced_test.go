package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	clientset "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
)

// TestNamespacedSidecarSet: with the shipped user roles, a user bound to edit in one namespace
// cannot write a SidecarSet but can write a NamespacedSidecarSet there (not in another
// namespace). It injects the pods of its namespace only, in both injection modes, upgrades them
// in place, reports its status, revisions and rollout on its own resource, and a cluster-wide
// SidecarSet whose container name clashes with it on the same pods is refused.
func TestNamespacedSidecarSet(t *testing.T) {
	deleteAllSidecarSets(t)
	t.Cleanup(func() { deleteAllSidecarSets(t) })
	defer restartServer(t, "policy")
	ctx := context.Background()
	if out, err := runKubectl(t, "", "apply", "-f", filepath.Join(root, "artifacts/deploy/base/user-roles.yaml")); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	own, other := tempNamespace(t, "e2e-team-"), tempNamespace(t, "e2e-other-")
	editor := namespaceEditor(t, "e2e-team-editor", own)

	// The editor may write a NamespacedSidecarSet in its namespace only, and no SidecarSet.
	nss := &v1alpha1.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "team-agent"},
		Spec: simpleSidecarSet("team-agent", "busybox:1.35", nil).Spec}
	var stored *v1alpha1.NamespacedSidecarSet
	// Role aggregation and the authorization cache take a moment: retry until it is allowed.
	eventually(t, "a namespace editor allowed to create a NamespacedSidecarSet in its namespace", 30*time.Second, func(ctx context.Context) (bool, string) {
		var err error
		stored, err = editor.AppsV1alpha1().NamespacedSidecarSets(own).Create(ctx, nss, metav1.CreateOptions{})
		return err == nil, fmt.Sprintf("create: %v", err)
	})
	if _, err := editor.AppsV1alpha1().NamespacedSidecarSets(other).Create(ctx, nss, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("a namespace editor created a NamespacedSidecarSet in another namespace: %v", err)
	}
	cluster := simpleSidecarSet("team-agent-wide", "busybox:1.35", nil)
	if _, err := editor.AppsV1alpha1().SidecarSets().Create(ctx, cluster, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("a namespace editor created a SidecarSet: %v", err)
	}
	engineName := v1alpha1.NamespacedName(own, stored.Name)
	waitNamespacedSettled(t, editor, own, stored.Name)
	// A cluster-wide SidecarSet injecting a container of the same name into the same pods is
	// accepted (a name a namespace editor took first does not bind the administrator) and wins
	// there; the NamespacedSidecarSet says so, and is injected again once it is gone.
	cluster.Spec.Selector = nss.Spec.Selector
	if _, err := sidecars.AppsV1alpha1().SidecarSets().Create(ctx, cluster, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a SidecarSet with the name of a NamespacedSidecarSet's container: %v", err)
	}
	waitNamespacedShadowed(t, editor, own, stored.Name, true)
	if err := sidecars.AppsV1alpha1().SidecarSets().Delete(ctx, cluster.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNamespacedShadowed(t, editor, own, stored.Name, false)
	eventually(t, "the deleted SidecarSet's policy gone from kube-apiserver", time.Minute, func(context.Context) (bool, string) {
		got, err := createPodDryRun(teamPod(other, "team-agent", "web-gone"))
		if err != nil {
			return false, err.Error()
		}
		return len(got.Spec.Containers) == 1, fmt.Sprint(containerNames(got))
	})

	for _, mode := range []string{"policy", "webhook"} {
		t.Run(mode+" injection", func(t *testing.T) {
			if mode == "webhook" {
				restartServer(t, mode)
				waitNamespacedSettled(t, editor, own, stored.Name)
			}
			mine := teamPod(own, "team-agent", "web-"+mode)
			got := waitInjected(t, mine, "sidecar1")
			var hashes map[string]json.RawMessage
			if err := json.Unmarshal([]byte(got.Annotations[v1alpha1.SidecarSetHashAnnotation]), &hashes); err != nil || hashes[engineName] == nil {
				t.Errorf("the injected pod's %s does not name %s: %v %s", v1alpha1.SidecarSetHashAnnotation, engineName, err,
					got.Annotations[v1alpha1.SidecarSetHashAnnotation])
			}
			elsewhere, err := createPodDryRun(teamPod(other, "team-agent", "web-"+mode))
			if err != nil {
				t.Fatal(err)
			}
			if len(elsewhere.Spec.Containers) != 1 {
				t.Errorf("a pod with the same labels in namespace %s was injected: %v", other, containerNames(elsewhere))
			}
		})
	}

	// In place upgrade of a running pod of the namespace, driven by the editor.
	pod, err := kube.CoreV1().Pods(own).Create(ctx, teamPod(own, "team-agent", "web-0"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitPodRunning(t, own, pod.Name, true)
	waitNamespacedStatus(t, editor, own, stored.Name, func(st v1alpha1.SidecarSetStatus) bool {
		return st.MatchedPods == 1 && st.UpdatedPods == 1 && st.ReadyPods == 1
	})
	patch := `{"spec":{"containers":[{"name":"sidecar1","image":"busybox:1.36"}]}}`
	if _, err := editor.AppsV1alpha1().NamespacedSidecarSets(own).Patch(ctx, stored.Name, types.StrategicMergePatchType,
		[]byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, own, pod.Name, func(p *corev1.Pod) bool {
		for _, c := range p.Status.ContainerStatuses {
			if c.Name == "sidecar1" {
				return c.Image == "busybox:1.36" && p.UID == pod.UID
			}
		}
		return false
	})
	waitNamespacedStatus(t, editor, own, stored.Name, func(st v1alpha1.SidecarSetStatus) bool {
		return st.MatchedPods == 1 && st.UpdatedPods == 1 && st.UpdatedReadyPods == 1
	})

	// Its revisions and rollout, through its own subresources, for the editor.
	revs, err := editor.AppsV1alpha1().NamespacedSidecarSets(own).GetRevisions(ctx, stored.Name, metav1.GetOptions{})
	if err != nil || len(revs.Items) != 2 || revs.Items[0].SidecarSetName != engineName {
		t.Errorf("revisions of the NamespacedSidecarSet: want 2 of %s, got %v %+v", engineName, err, revs)
	}
	target := "namespacedsidecarset/" + stored.Name
	if out, stderr, err := plugin(t, "rollout", "status", target, "-n", own); err != nil || !strings.Contains(out, target+" successfully rolled out") {
		t.Errorf("kubectl sidecarset rollout status %s: %v\n%s%s", target, err, out, stderr)
	}
	view, err := editor.AppsV1alpha1().NamespacedSidecarSets(own).Rollout(ctx, stored.Name,
		&v1alpha1.SidecarSetRollout{Spec: v1alpha1.SidecarSetRolloutSpec{Action: v1alpha1.RolloutActionPause}}, metav1.CreateOptions{})
	if err != nil || !view.Status.Paused || view.Name != stored.Name || view.Namespace != own {
		t.Errorf("pause through namespacedsidecarsets/rollout: %v %+v", err, view)
	}
	if out, stderr, err := plugin(t, "rollout", "resume", target, "-n", own); err != nil || !strings.Contains(out, "resumed") {
		t.Errorf("kubectl sidecarset rollout resume %s: %v\n%s%s", target, err, out, stderr)
	}
	events, err := kube.CoreV1().Events(own).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=NamespacedSidecarSet"})
	if err != nil || len(events.Items) == 0 {
		t.Errorf("no events on the NamespacedSidecarSet in its namespace: %v", err)
	}

	// Deleting it deletes its revisions.
	if err := editor.AppsV1alpha1().NamespacedSidecarSets(own).Delete(ctx, stored.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if last, ok := poll(30*time.Second, func(ctx context.Context) (bool, string) {
		list, err := sidecars.AppsV1alpha1().SidecarSetRevisions().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.SidecarSetNameLabel + "=" + engineName})
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 0, fmt.Sprintf("%d revisions", len(list.Items))
	}); !ok {
		t.Errorf("waited 30s for the revisions of a deleted NamespacedSidecarSet to go; last seen: %s", last)
	}

	// Deleting a namespace deletes its NamespacedSidecarSets: kube-controller-manager's namespace
	// controller deletes them with a metadata client that asks for protobuf first, then JSON.
	if _, err := sidecars.AppsV1alpha1().NamespacedSidecarSets(other).Create(ctx, nss, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := metadata.ConfigFor(restConfig)
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	gvr := v1alpha1.SchemeGroupVersion.WithResource("namespacedsidecarsets")
	if err := metadata.NewForConfigOrDie(cfg).Resource(gvr).Namespace(other).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Errorf("deleting the NamespacedSidecarSets of a namespace as the namespace controller does: %v", err)
	}
	if _, err := sidecars.AppsV1alpha1().NamespacedSidecarSets(other).Create(ctx, nss, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().Namespaces().Delete(ctx, other, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNamespaceGone(t, other)
}

// tempNamespace creates a namespace deleted at the end of the test.
func tempNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns, err := kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	return ns.Name
}

// namespaceEditor binds user to the edit ClusterRole in namespace and returns its client.
func namespaceEditor(t *testing.T, user, namespace string) clientset.Interface {
	t.Helper()
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: namespace},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
	if _, err := kube.RbacV1().RoleBindings(namespace).Create(context.Background(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// kube-apiserver's RBAC authorizer sees the binding through its informer, a moment later.
	eventually(t, "RBAC to grant "+user+" edit in "+namespace, 30*time.Second, func(ctx context.Context) (bool, string) {
		review, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "create", Group: "apps", Resource: "deployments"}}},
			metav1.CreateOptions{})
		if err != nil {
			return false, err.Error()
		}
		return review.Status.Allowed, fmt.Sprintf("allowed %v: %s", review.Status.Allowed, review.Status.Reason)
	})
	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return clientset.NewForConfigOrDie(cfg)
}

// teamPod is a one-container pod labelled app=<app> in namespace.
func teamPod(namespace, app, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false), TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "999d"}}}},
	}
}

// waitNamespacedSettled waits until the controller observed the NamespacedSidecarSet's generation
// (its injection is in place).
func waitNamespacedSettled(t *testing.T, client clientset.Interface, namespace, name string) {
	t.Helper()
	eventually(t, fmt.Sprintf("NamespacedSidecarSet %s/%s settled", namespace, name), 90*time.Second, func(ctx context.Context) (bool, string) {
		got, err := client.AppsV1alpha1().NamespacedSidecarSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Status.ObservedGeneration == got.Generation, fmt.Sprintf("generation %d, status %+v", got.Generation, got.Status)
	})
}

// waitNamespacedShadowed waits until the NamespacedSidecarSet's Injected condition says, or no
// longer says, that a cluster SidecarSet shadows it (the webhook path's reason is in the message).
func waitNamespacedShadowed(t *testing.T, client clientset.Interface, namespace, name string, shadowed bool) {
	t.Helper()
	eventually(t, fmt.Sprintf("NamespacedSidecarSet %s/%s shadowed: %v", namespace, name, shadowed), time.Minute, func(ctx context.Context) (bool, string) {
		got, err := client.AppsV1alpha1().NamespacedSidecarSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.SidecarSetInjected)
		return c != nil && strings.Contains(c.Message, apps.ReasonShadowed) == shadowed, fmt.Sprintf("%+v", c)
	})
}

func waitNamespacedStatus(t *testing.T, client clientset.Interface, namespace, name string, ok func(v1alpha1.SidecarSetStatus) bool) {
	t.Helper()
	eventually(t, fmt.Sprintf("NamespacedSidecarSet %s/%s status as wanted", namespace, name), rolloutTimeout, func(ctx context.Context) (bool, string) {
		got, err := client.AppsV1alpha1().NamespacedSidecarSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return ok(got.Status), fmt.Sprintf("generation %d, status %+v", got.Generation, got.Status)
	})
}
