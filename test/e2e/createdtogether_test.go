package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestPodsCreatedWithTheirSidecarSet applies SidecarSets and the pods they select in one request
// stream (one kubectl apply of one file, as a Helm chart or an Argo CD sync of a SidecarSet and
// its workload does), 0 s apart, in the server's current injection mode: a SidecarSet selecting a
// label key no other selects, one selecting a new value of a common key, a NamespacedSidecarSet,
// and then a new image of the SidecarSets applied with more pods. Every pod must carry the
// version of its SidecarSet applied before it. Then a canary SidecarSet and its base, created
// together or the base first, both settled, and a pod both select: it carries the canary's
// sidecar once.
// TestPodsCreatedWithTheirSidecarSetInWebhookMode runs the same in webhook mode (a restart: the
// serial phase).
func TestPodsCreatedWithTheirSidecarSet(t *testing.T) {
	parallelTest(t)
	createdTogether(t)
}

// TestPodsCreatedWithTheirSidecarSetInWebhookMode is TestPodsCreatedWithTheirSidecarSet with the
// server in webhook mode.
func TestPodsCreatedWithTheirSidecarSetInWebhookMode(t *testing.T) {
	restartServer(t, "webhook")
	defer restartServer(t, "policy")
	createdTogether(t)
}

func createdTogether(t *testing.T) {
	ns := tempNamespace(t, "together-")
	id := strings.TrimPrefix(ns, "together-")
	cleanupSidecarSets(t, "together-"+id+"-key", "together-"+id+"-value", "together-"+id+"-base", "together-"+id+"-canary")

	const pods = 5
	var stream []string
	want := map[string]string{} // pod -> sidecar container name:image
	add := func(doc string) { stream = append(stream, doc) }
	version := func(image string) {
		add(clusterSidecarSet("together-"+id+"-key", fmt.Sprintf(`{matchLabels: {together-%s: "yes"}}`, id), "key-sidecar", image))
		add(clusterSidecarSet("together-"+id+"-value", fmt.Sprintf(`{matchLabels: {app: together-%s}}`, id), "value-sidecar", image))
		add(fmt.Sprintf(`apiVersion: apps.kruise.io/v1alpha1
kind: NamespacedSidecarSet
metadata: {name: team, namespace: %s}
spec:
  selector: {matchLabels: {team: together-%s}}
  updateStrategy: {type: NotUpdate}
  containers: [{name: team-sidecar, image: %q}]`, ns, id, image))
		for i := 0; i < pods; i++ {
			for _, p := range []struct{ kind, labels, sidecar string }{
				{"key", fmt.Sprintf(`{together-%s: "yes"}`, id), "key-sidecar"},
				{"value", fmt.Sprintf(`{app: together-%s}`, id), "value-sidecar"},
				{"team", fmt.Sprintf(`{team: together-%s}`, id), "team-sidecar"},
			} {
				name := fmt.Sprintf("%s-%s-%d", p.kind, strings.ReplaceAll(strings.TrimSuffix(image, ":1"), ":", "-"), i)
				add(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: %s, labels: %s}
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 0
  containers: [{name: app, image: "nginx:1.15.1"}]`, name, ns, p.labels))
				want[name] = p.sidecar + " " + image
			}
		}
	}
	version("busybox:1")
	apply(t, stream)
	stream = nil
	version("busybox:2") // an update of all three, and its pods, in one stream again
	apply(t, stream)

	list, err := kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for i := range list.Items {
		got[list.Items[i].Name] = sidecarsOf(&list.Items[i])
	}
	var missed []string
	for name, w := range want {
		if got[name] != w {
			missed = append(missed, fmt.Sprintf("%s: %q, want %q", name, got[name], w))
		}
	}
	if len(missed) > 0 {
		t.Errorf("%d of %d pods created right after their SidecarSet lack its version:\n%s", len(missed), len(want), strings.Join(missed, "\n"))
	}

	t.Run("dry-run pods right after each create", func(t *testing.T) {
		ctx := context.Background()
		var missed []string
		for i := 0; i < 5; i++ {
			name := fmt.Sprintf("together-%s-dry-%d", id, i)
			key := fmt.Sprintf("together-%s-dry", id)
			cleanupSidecarSets(t, name)
			ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: v1alpha1.SidecarSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{key: fmt.Sprint(i)}},
					Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "dry-sidecar", Image: "busybox:1"}}}}}
			if _, err := sidecars.AppsV1alpha1().SidecarSets().Create(ctx, ss, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			nss := &v1alpha1.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("dry-%d", i), Namespace: ns},
				Spec: v1alpha1.SidecarSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team-dry": fmt.Sprint(i)}},
					Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "team-dry-sidecar", Image: "busybox:1"}}}}}
			if _, err := sidecars.AppsV1alpha1().NamespacedSidecarSets(ns).Create(ctx, nss, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			for j := 0; j < 5; j++ {
				for _, c := range []struct {
					labels  map[string]string
					sidecar string
				}{
					{map[string]string{key: fmt.Sprint(i)}, "dry-sidecar"},
					{map[string]string{"team-dry": fmt.Sprint(i)}, "team-dry-sidecar"},
				} {
					pod := nginxPod(ns, fmt.Sprintf("dry-%d-%d", i, j))
					pod.Labels = c.labels
					got, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
					if err != nil {
						t.Fatal(err)
					}
					if !hasContainer(got, c.sidecar) {
						missed = append(missed, fmt.Sprintf("%v: no %s", c.labels, c.sidecar))
					}
				}
			}
		}
		if len(missed) > 0 {
			t.Errorf("%d of 50 dry-run pods created right after their SidecarSet's create returned lack it:\n%s", len(missed), strings.Join(missed, "\n"))
		}
	})

	t.Run("canary and base", func(t *testing.T) {
		for trial := 0; trial < 3; trial++ {
			base, canary := fmt.Sprintf("together-%s-base", id), fmt.Sprintf("together-%s-canary", id)
			value := fmt.Sprintf("canary-%s-%d", id, trial)
			if trial > 0 {
				_ = sidecars.AppsV1alpha1().SidecarSets().Delete(context.Background(), base, metav1.DeleteOptions{})
				_ = sidecars.AppsV1alpha1().SidecarSets().Delete(context.Background(), canary, metav1.DeleteOptions{})
				eventually(t, "base and canary deleted", time.Minute, func(ctx context.Context) (bool, string) {
					_, e1 := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, base, metav1.GetOptions{})
					_, e2 := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, canary, metav1.GetOptions{})
					return e1 != nil && e2 != nil, "still there"
				})
			}
			baseDoc := clusterSidecarSet(base, fmt.Sprintf(`{matchLabels: {app: %s}}`, value), "proxy", "envoy:1")
			canaryDoc := strings.Replace(clusterSidecarSet(canary, fmt.Sprintf(`{matchLabels: {app: %s, track: canary}}`, value), "proxy", "envoy:2"),
				"metadata: {name: "+canary+"}",
				fmt.Sprintf(`metadata: {name: %s, annotations: {apps.kruise.io/sidecarset-canary: "true", apps.kruise.io/sidecarset-base: %s}}`, canary, base), 1)
			if trial == 0 {
				apply(t, []string{baseDoc, canaryDoc}) // created together
			} else {
				apply(t, []string{baseDoc}) // the base first: it may have a policy before its canary exists
				waitSettled(t, base)
				apply(t, []string{canaryDoc})
			}
			waitSettled(t, base)
			waitSettled(t, canary)
			pod := nginxPod(ns, fmt.Sprintf("canary-%d", trial))
			pod.Labels = map[string]string{"app": value, "track": "canary"}
			created, err := kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("trial %d: the pod both select was refused: %v", trial, err)
			}
			if got := sidecarsOf(created); got != "proxy envoy:2" {
				t.Errorf("trial %d: sidecars %q, want the canary's alone: %q", trial, got, "proxy envoy:2")
			}
		}
	})
}

// clusterSidecarSet is a SidecarSet document with one sidecar.
func clusterSidecarSet(name, selector, container, image string) string {
	return fmt.Sprintf(`apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata: {name: %s}
spec:
  selector: %s
  updateStrategy: {type: NotUpdate}
  containers: [{name: %s, image: %q}]`, name, selector, container, image)
}

// apply sends docs to kubectl apply as one stream, in order.
func apply(t *testing.T, docs []string) {
	t.Helper()
	if out, err := runKubectl(t, strings.Join(docs, "\n---\n"), "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
}

// sidecarsOf lists the pod's containers but "app", as "name image", comma-separated.
func sidecarsOf(pod *corev1.Pod) string {
	var out []string
	for _, c := range pod.Spec.Containers {
		if c.Name != "app" {
			out = append(out, c.Name+" "+c.Image)
		}
	}
	return strings.Join(out, ",")
}

// cleanupSidecarSets deletes the named SidecarSets when t ends.
func cleanupSidecarSets(t *testing.T, names ...string) {
	t.Cleanup(func() {
		for _, n := range names {
			_ = sidecars.AppsV1alpha1().SidecarSets().Delete(context.Background(), n, metav1.DeleteOptions{})
		}
	})
}
