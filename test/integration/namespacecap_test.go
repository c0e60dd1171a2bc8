package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"

	"github.com/sidecarset/apiserver/cmd/apiserver/app"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	clientset "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
	"github.com/sidecarset/apiserver/test/integration/framework"
)

// TestNamespaceCapUnderConcurrentCreates: two replicas on one etcd, a cap of 5, a namespace
// holding 4; 50 creates fired at once, alternately at each replica. Exactly 5 objects are stored
// afterwards, and every refused create got Forbidden naming the flag.
func TestNamespaceCapUnderConcurrentCreates(t *testing.T) {
	const limit, ns, burst = 5, "team-a", 50
	replicas := framework.StartReplicas(t, 2, func(o *app.Options) { o.MaxNamespacedPerNamespace = limit })
	ctx := context.Background()
	clients := make([]clientset.Interface, len(replicas))
	for i, s := range replicas {
		cfg := rest.CopyConfig(s.Config)
		cfg.QPS = -1 // no client-side rate limit: the creates leave at once
		clients[i] = clientset.NewForConfigOrDie(cfg)
	}
	stored := sets.New[string]()
	for i := 0; i < limit-1; i++ {
		obj, err := clients[0].AppsV1alpha1().NamespacedSidecarSets(ns).Create(ctx, capSidecarSet(fmt.Sprintf("before-%d", i)), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stored.Insert(obj.Name)
	}

	errs := make([]error, burst)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = clients[i%len(clients)].AppsV1alpha1().NamespacedSidecarSets(ns).Create(ctx, capSidecarSet(fmt.Sprintf("burst-%02d", i)), metav1.CreateOptions{})
		}()
	}
	close(start)
	wg.Wait()

	flag := fmt.Sprintf("--max-namespaced-sidecarsets-per-namespace=%d", limit)
	for i, err := range errs {
		switch {
		case err == nil:
			stored.Insert(fmt.Sprintf("burst-%02d", i))
		case !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), flag):
			t.Errorf("create burst-%02d: want Forbidden naming %s, got %v", i, flag, err)
		}
	}
	if stored.Len() != limit {
		t.Errorf("%d creates succeeded besides the %d before, want %d", stored.Len()-(limit-1), limit-1, 1)
	}
	for i, c := range clients {
		list, err := c.AppsV1alpha1().NamespacedSidecarSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := sets.New[string]()
		for _, o := range list.Items {
			got.Insert(o.Name)
		}
		if !got.Equal(stored) {
			t.Errorf("replica %d stores %d NamespacedSidecarSets %v, want the %d created %v", i, got.Len(), sets.List(got), stored.Len(), sets.List(stored))
		}
	}
}

// capSidecarSet is a NamespacedSidecarSet with a sidecar of its own name.
func capSidecarSet(name string) *v1alpha1.NamespacedSidecarSet {
	return &v1alpha1.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: name, Image: "busybox:1.36"}}},
		}}
}
