package apiserver

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionlisters "k8s.io/client-go/listers/admissionregistration/v1"
	"k8s.io/client-go/tools/cache"
)

func TestCommonFolder(t *testing.T) {
	for _, tc := range []struct {
		prefixes []string
		want     string
	}{
		{[]string{"/registry/apps.kruise.io/namespacedsidecarsets/", "/registry/apps.kruise.io/sidecarsets/"}, "/registry/apps.kruise.io/"},
		{[]string{"/registry/apps.kruise.io/sidecarsets/"}, "/registry/apps.kruise.io/sidecarsets/"},
		// A common start that is not a whole folder is cut back to one.
		{[]string{"/r/sidecarsets/", "/r/sidecarsetrevisions/"}, "/r/"},
		{[]string{"/a/x/", "/b/x/"}, "/"},
	} {
		if got := commonFolder(tc.prefixes); got != tc.want {
			t.Errorf("commonFolder(%q) = %q, want %q", tc.prefixes, got, tc.want)
		}
	}
}

// TestCoalescerReadsAfterEachCall: callers share fetches, and each gets one that began after it
// called: a caller arriving while a fetch is under way waits for the next one.
func TestCoalescerReadsAfterEachCall(t *testing.T) {
	var fetches atomic.Uint64
	release := make(chan struct{})
	c := &coalescer[uint64]{fetch: func(context.Context) (uint64, error) {
		n := fetches.Add(1)
		<-release
		return n, nil
	}}
	first := make(chan uint64)
	go func() { n, _ := c.do(context.Background()); first <- n }()
	for fetches.Load() == 0 { // the first fetch is under way
		time.Sleep(time.Millisecond)
	}
	// Three callers arrive while it runs: they share the second fetch, not the first.
	var wg sync.WaitGroup
	got := make([]uint64, 3)
	for i := range got {
		wg.Add(1)
		go func() { defer wg.Done(); got[i], _ = c.do(context.Background()) }()
	}
	time.Sleep(100 * time.Millisecond)
	close(release)
	if n := <-first; n != 1 {
		t.Errorf("the first caller got fetch %d, want 1", n)
	}
	wg.Wait()
	for i, n := range got {
		if n < 2 {
			t.Errorf("caller %d arriving during fetch 1 got fetch %d, one that began before it called", i, n)
		}
	}
	// They share: one more fetch, two if one of them was scheduled only after it began.
	if n := fetches.Load(); n > 3 {
		t.Errorf("%d fetches for 4 callers in two waves, want at most 3", n)
	}
}

// TestIntakeInPlace: the barrier waits while the active configuration holds intake webhooks, or
// while that cannot be told; not once they are gone.
func TestIntakeInPlace(t *testing.T) {
	const active = "sidecarset-injector-active"
	selective := admissionregistrationv1.MutatingWebhook{Name: "0.pods.sidecarset.apps.kruise.io"}
	intake := admissionregistrationv1.MutatingWebhook{Name: "intake.pods.sidecarset.apps.kruise.io"}
	for _, tc := range []struct {
		name     string
		stored   []admissionregistrationv1.MutatingWebhook
		missing  bool
		unsynced bool
		want     bool
	}{
		{name: "intake webhooks in place", stored: []admissionregistrationv1.MutatingWebhook{selective, intake}, want: true},
		{name: "selective webhooks alone", stored: []admissionregistrationv1.MutatingWebhook{selective}, want: false},
		{name: "no active configuration", missing: true, want: false},
		{name: "lister not synced", stored: []admissionregistrationv1.MutatingWebhook{selective}, unsynced: true, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			if !tc.missing {
				if err := indexer.Add(&admissionregistrationv1.MutatingWebhookConfiguration{
					ObjectMeta: metav1.ObjectMeta{Name: active}, Webhooks: tc.stored}); err != nil {
					t.Fatal(err)
				}
			}
			open := intakeInPlace(admissionlisters.NewMutatingWebhookConfigurationLister(indexer), func() bool { return !tc.unsynced }, active)
			if got := open(); got != tc.want {
				t.Errorf("intake in place = %v, want %v", got, tc.want)
			}
		})
	}
}
