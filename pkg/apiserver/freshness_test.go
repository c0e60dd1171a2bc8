package apiserver

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
	c := &coalescer{fetch: func(context.Context) (uint64, error) {
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
