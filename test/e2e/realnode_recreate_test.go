package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// TestRealNodeRecreate: an env change of a sidecar cannot be applied in place; on a SidecarSet
// with apps.kruise.io/recreate-not-upgradable=true the controller evicts the pods of a
// Deployment (3 replicas) so that it recreates them with the new sidecar. The SidecarSet allows 2
// unavailable pods, the Deployment's PodDisruptionBudget 1: never are fewer than 2 of its pods
// ready and not terminating, and every pod ends with the new env. A bare pod is never evicted.
func TestRealNodeRecreate(t *testing.T) {
	parallelTest(t, fixtureRealNode)
	requireRealNode(t, false)
	ctx := context.Background()
	ss := &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "rn-recreate", Annotations: map[string]string{rollout.RecreateAnnotation: "true"}},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rn-recreate"}},
			UpdateStrategy: v1alpha1.SidecarSetUpdateStrategy{Type: v1alpha1.RollingUpdateSidecarSetStrategyType, MaxUnavailable: ptr.To(intstr.FromInt32(2))},
			Containers:     []v1alpha1.SidecarContainer{realSidecar("sidecar1", "v1", 8081, corev1.EnvVar{Name: "LEVEL", Value: "info"})},
		},
	}
	bare := realPod("rn-recreate-bare", "rn-recreate")
	setupRealNode(t, ss, bare)
	template := realPod("", "rn-recreate")
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "rn-recreate", Namespace: realNodeNamespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rn-recreate", "owner": "deployment"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "rn-recreate", "owner": "deployment"}}, Spec: template.Spec},
		},
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "rn-recreate", Namespace: realNodeNamespace},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: dep.Spec.Selector},
	}
	if _, err := kube.PolicyV1().PodDisruptionBudgets(realNodeNamespace).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.AppsV1().Deployments(realNodeNamespace).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.AppsV1().Deployments(realNodeNamespace).Delete(context.Background(), dep.Name, metav1.DeleteOptions{})
		_ = kube.PolicyV1().PodDisruptionBudgets(realNodeNamespace).Delete(context.Background(), pdb.Name, metav1.DeleteOptions{})
	})
	waitStatus(t, ss.Name, v1alpha1.SidecarSetStatus{MatchedPods: 4, UpdatedPods: 4, ReadyPods: 4, UpdatedReadyPods: 4})
	eventually(t, "the PodDisruptionBudget to allow a disruption", time.Minute, func(ctx context.Context) (bool, string) {
		got, err := kube.PolicyV1().PodDisruptionBudgets(realNodeNamespace).Get(ctx, pdb.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Status.DisruptionsAllowed == 1, fmt.Sprintf("%+v", got.Status)
	})
	bareBefore, err := kube.CoreV1().Pods(realNodeNamespace).Get(ctx, bare.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// healthy counts the Deployment's pods ready and not terminating; its minimum is watched.
	healthy := func(p *corev1.Pod) bool {
		return p.Labels["owner"] == "deployment" && p.DeletionTimestamp == nil && podIsReady(p)
	}
	stop := watchCounts(t, "app=rn-recreate", healthy)
	rev := waitSettled(t, ss.Name).Status.LatestRevision
	patchImage(t, ss.Name, `{"spec":{"containers":[{"name":"sidecar1","env":[{"name":"PORT","value":"8081"},{"name":"LEVEL","value":"debug"}]}]}}`)
	start := time.Now()
	eventually(t, "the Deployment's pods recreated with the new env", rolloutTimeout, func(ctx context.Context) (bool, string) {
		pods, err := kube.CoreV1().Pods(realNodeNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=rn-recreate,owner=deployment"})
		if err != nil {
			return false, err.Error()
		}
		fresh := 0
		for i := range pods.Items {
			p := &pods.Items[i]
			c := sidecar.FindPodContainer(p, "sidecar1")
			if p.DeletionTimestamp == nil && podIsReady(p) && c != nil && hasEnv(c, "LEVEL", "debug") {
				fresh++
			}
		}
		return fresh == 3 && len(pods.Items) == 3, fmt.Sprintf("%d of %d pods run the new sidecar", fresh, len(pods.Items))
	})
	t.Logf("3 pods of a Deployment recreated under a PodDisruptionBudget of 1: %v", time.Since(start).Round(100*time.Millisecond))
	if seen := stop(); seen.min < 2 {
		t.Errorf("only %d of the Deployment's 3 pods were ready and not terminating at one point (%s); the PodDisruptionBudget allows 1 disruption", seen.min, seen.minAt)
	}
	after, err := kube.CoreV1().Pods(realNodeNamespace).Get(ctx, bare.Name, metav1.GetOptions{})
	if err != nil || after.UID != bareBefore.UID {
		t.Errorf("the bare pod was evicted: %v", err)
	}
	view, err := sidecars.AppsV1alpha1().SidecarSets().GetRollout(ctx, ss.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range view.Status.Pods {
		if p.Name == bare.Name && (p.State != v1alpha1.PodRolloutNotUpgradable || !strings.Contains(p.Message, "without a controller")) {
			t.Errorf("bare pod in the view: %s/%s %q", p.State, p.Reason, p.Message)
		}
	}
	if cur := waitSettled(t, ss.Name); cur.Status.LatestRevision == rev || cur.Status.UpdatedPods != 3 {
		t.Errorf("status after the recreation: %+v", cur.Status)
	}
	events, err := kube.CoreV1().Events(realNodeNamespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=EvictedNotUpgradable"})
	if err != nil || len(events.Items) < 3 {
		t.Errorf("%d EvictedNotUpgradable events, want 3 or more: %v", len(events.Items), err)
	}
}

func hasEnv(c *corev1.Container, name, value string) bool {
	for _, e := range c.Env {
		if e.Name == name && e.Value == value {
			return true
		}
	}
	return false
}
