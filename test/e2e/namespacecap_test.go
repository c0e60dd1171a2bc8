package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"

	clientset "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
)

// TestNamespaceCapUnderConcurrentCreates: with --max-namespaced-sidecarsets-per-namespace=5 and two
// replicas on the server's one etcd, a namespace editor fires 50 creates at once, alternately at
// each replica, in a namespace holding 4. Exactly 5 NamespacedSidecarSets are stored afterwards,
// and every refused create got Forbidden naming the flag (the admission check, or the settling
// after the write). Serial: it restarts the server with the flag and starts a second replica.
func TestNamespaceCapUnderConcurrentCreates(t *testing.T) {
	serialOnly(t, "restarting the server with a cap")
	const limit, burst = 5, 50
	flag := fmt.Sprintf("--max-namespaced-sidecarsets-per-namespace=%d", limit)
	ctx := context.Background()
	if out, err := runKubectl(t, "", "apply", "-f", filepath.Join(root, "artifacts/deploy/base/user-roles.yaml")); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	ns := tempNamespace(t, "e2e-cap-")
	const user = "e2e-cap-editor"
	editor := namespaceEditor(t, user, ns)
	restartServerWithArgs(t, flag)
	startSecondReplica(t)
	t.Cleanup(func() { deleteNamespacedSidecarSets(t, ns) })

	stored := sets.New[string]()
	for i := range limit - 1 {
		name := fmt.Sprintf("before-%d", i)
		createAsEditor(t, editor, ns, tenantSidecarSet(name, map[string]string{"e2e-cap": name}, name))
		stored.Insert(name)
	}
	// The editor, straight at each replica (the APIService routes to replica 1 only).
	replicas := make([]clientset.Interface, 2)
	for i := range replicas {
		cfg := serverConfig(i + 1)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		cfg.QPS = -1 // the creates leave at once
		replicas[i] = clientset.NewForConfigOrDie(cfg)
	}
	// Each replica's connection and the editor's authorization of creates are ready before the
	// burst: a dry run (admitted, not stored) through each.
	for i, c := range replicas {
		eventually(t, fmt.Sprintf("the editor's dry-run create on replica %d", i+1), 30*time.Second, func(ctx context.Context) (bool, string) {
			_, err := c.AppsV1alpha1().NamespacedSidecarSets(ns).Create(ctx, tenantSidecarSet("warm-up", map[string]string{"e2e-cap": "warm-up"}, "warm-up"),
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err == nil, fmt.Sprint(err)
		})
	}
	errs := make([]error, burst)
	took := make([]time.Duration, burst)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("burst-%02d", i)
			<-start
			began := time.Now()
			_, errs[i] = replicas[i%2].AppsV1alpha1().NamespacedSidecarSets(ns).Create(ctx,
				tenantSidecarSet(name, map[string]string{"e2e-cap": name}, name), metav1.CreateOptions{})
			took[i] = time.Since(began)
		}()
	}
	began := time.Now()
	close(start)
	wg.Wait()
	t.Logf("the burst took %v; the creates took %v", time.Since(began), took)

	for i, err := range errs {
		switch {
		case err == nil:
			stored.Insert(fmt.Sprintf("burst-%02d", i))
		case !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), flag):
			t.Errorf("create burst-%02d on replica %d: want Forbidden naming %s, got %v", i, i%2+1, flag, err)
		}
	}
	if stored.Len() != limit {
		t.Errorf("%d of the %d creates succeeded, want 1", stored.Len()-(limit-1), burst)
	}
	for i, c := range replicas {
		list, err := c.AppsV1alpha1().NamespacedSidecarSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := sets.New[string]()
		for _, o := range list.Items {
			got.Insert(o.Name)
		}
		if !got.Equal(stored) {
			t.Errorf("replica %d lists %d NamespacedSidecarSets %v, want the %d created %v", i+1, got.Len(), sets.List(got), stored.Len(), sets.List(stored))
		}
	}
}
