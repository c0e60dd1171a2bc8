package apiserver

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	admissionlisters "k8s.io/client-go/listers/admissionregistration/v1"
	"k8s.io/klog/v2"

	"github.com/sidecarset/apiserver/pkg/admission/policy/webhookconfig"
	"github.com/sidecarset/apiserver/pkg/admission/webhook"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// Every replica answers pod admissions from its own informer, which a write stored through
// another replica reaches a few milliseconds later. A write waits for its own replica's index
// (writeSettler); a pod created right after it may still be sent to another one. So, before it
// answers, the webhook of a replica reads how far the storage is (a linearizable read of etcd's
// revision), has its own watch of the SidecarSet keys report everything up to there (an etcd
// progress request), and waits until its injection index has taken in the newest SidecarSet
// write: the pod is then injected with every SidecarSet whose write returned before the pod's
// create was sent, whichever replica stored it.

// Timeouts of the barrier: how long the storage may take to say how far it is, and how long the
// index may take to catch up. Past either, the pod is answered from the cache as it is (the
// server injects from its caches while its etcd is down).
const (
	storageReadTimeout = time.Second
	indexCatchUpWait   = 2 * time.Second
	progressRetry      = 50 * time.Millisecond
	storageRetry       = 5 * time.Second
)

// kinds are the kinds of SidecarSet, each with its keys in etcd and its stream in the informer
// (webhook.Marks): the SidecarSets, then the NamespacedSidecarSets.
var kinds = [2]struct {
	resource string
	example  runtime.Object
}{{"sidecarsets", &apps.SidecarSet{}}, {"namespacedsidecarsets", &apps.NamespacedSidecarSet{}}}

// namespacedKind is the index of the NamespacedSidecarSets in kinds.
const namespacedKind = 1

// newestWrites are the newest revisions that wrote a key of each kind (in the order of kinds).
type newestWrites [len(kinds)]uint64

// keyWrites follows the writes of the SidecarSet keys (both kinds) in the server's etcd.
type keyWrites struct {
	client   *clientv3.Client
	watched  string             // the prefix watched: the longest common folder of prefixes
	prefixes [len(kinds)]string // the keys of each kind
	mu       sync.Mutex
	watch    context.Context // the watch's context, which names its gRPC stream; nil while none runs
	synced   uint64          // the watch has delivered every write up to this revision
	latest   newestWrites
	changed  chan struct{} // closed and replaced when synced or latest grows
	reads    coalescer[newestWrites]
	// failedAt is when a read last failed: for storageRetry after it, Latest fails at once (an
	// etcd outage must not slow every pod's admission by storageReadTimeout).
	failedAt time.Time
}

// newKeyWrites connects to the etcd of storage, for the keys under prefixes.
func newKeyWrites(storage storagebackend.Config, prefixes [len(kinds)]string) (*keyWrites, error) {
	tlsInfo := transport.TLSInfo{CertFile: storage.Transport.CertFile, KeyFile: storage.Transport.KeyFile, TrustedCAFile: storage.Transport.TrustedCAFile}
	tlsConfig, err := tlsInfo.ClientConfig()
	if err != nil {
		return nil, err
	}
	if tlsInfo.CertFile == "" && tlsInfo.KeyFile == "" && tlsInfo.TrustedCAFile == "" {
		tlsConfig = nil // a plain connection
	}
	client, err := clientv3.New(clientv3.Config{Endpoints: storage.Transport.ServerList, TLS: tlsConfig,
		DialTimeout: 20 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	w := &keyWrites{client: client, watched: commonFolder(prefixes[:]), prefixes: prefixes, changed: make(chan struct{})}
	w.reads.fetch = w.fetchLatest
	return w, nil
}

// sidecarSetKeys returns the etcd key prefixes of each kind, from the storage's options.
func sidecarSetKeys(getter generic.RESTOptionsGetter) (storagebackend.Config, [len(kinds)]string, error) {
	var cfg storagebackend.Config
	var out [len(kinds)]string
	for i, k := range kinds {
		opts, err := getter.GetRESTOptions(apps.Resource(k.resource), k.example)
		if err != nil {
			return cfg, out, err
		}
		cfg = opts.StorageConfig.Config
		out[i] = path.Join("/", opts.StorageConfig.Prefix, opts.ResourcePrefix) + "/"
	}
	return cfg, out, nil
}

// commonFolder is the longest prefix of every key in prefixes that ends with a slash.
func commonFolder(prefixes []string) string {
	common := prefixes[0]
	for _, p := range prefixes[1:] {
		for !strings.HasPrefix(p, common) {
			common = common[:len(common)-1]
		}
	}
	return common[:strings.LastIndex(common, "/")+1]
}

// kindOf returns the kind whose key key is (its index in kinds), or false for another key.
func (w *keyWrites) kindOf(key string) (int, bool) {
	for i, p := range w.prefixes {
		if strings.HasPrefix(key, p) {
			return i, true
		}
	}
	return 0, false
}

// Run watches until ctx ends, starting again after a failure.
func (w *keyWrites) Run(ctx context.Context) {
	defer w.client.Close()
	for ctx.Err() == nil {
		if err := w.follow(ctx); err != nil && ctx.Err() == nil {
			klog.V(2).InfoS("following the SidecarSet writes in etcd failed; starting again", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// follow reads the newest SidecarSet write, then watches from there.
func (w *keyWrites) follow(ctx context.Context) error {
	rev, latest, err := w.newest(ctx)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w.advance(wctx, rev, latest)
	defer w.stopped()
	for resp := range w.client.Watch(wctx, w.watched, clientv3.WithPrefix(), clientv3.WithRev(int64(rev+1)), clientv3.WithProgressNotify()) {
		if err := resp.Err(); err != nil {
			return err
		}
		synced, latest := uint64(0), newestWrites{}
		if resp.IsProgressNotify() {
			synced = uint64(resp.Header.Revision)
		}
		for _, ev := range resp.Events {
			rev := uint64(ev.Kv.ModRevision)
			synced = max(synced, rev)
			if kind, ok := w.kindOf(string(ev.Kv.Key)); ok {
				latest[kind] = max(latest[kind], rev)
			}
		}
		w.advance(wctx, synced, latest)
	}
	return errors.New("the watch closed")
}

// newest returns etcd's revision and the newest revision that wrote a key of each kind still
// stored.
func (w *keyWrites) newest(ctx context.Context) (rev uint64, latest newestWrites, err error) {
	now, err := w.client.Get(ctx, w.watched, clientv3.WithCountOnly())
	if err != nil {
		return 0, latest, err
	}
	rev = uint64(now.Header.Revision)
	for i, p := range w.prefixes {
		resp, err := w.client.Get(ctx, p, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(1), clientv3.WithRev(now.Header.Revision),
			clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortDescend))
		if err != nil {
			return 0, latest, err
		}
		for _, kv := range resp.Kvs {
			latest[i] = max(latest[i], uint64(kv.ModRevision))
		}
	}
	return rev, latest, nil
}

// advance records what the watch delivered.
func (w *keyWrites) advance(watch context.Context, synced uint64, latest newestWrites) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watch = watch
	w.synced = max(w.synced, synced)
	for i := range latest {
		w.latest[i] = max(w.latest[i], latest[i])
	}
	w.wake()
}

// stopped records that the watch ended.
func (w *keyWrites) stopped() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watch, w.synced = nil, 0
	w.wake()
}

// wake wakes the readers waiting for a change (w.mu held).
func (w *keyWrites) wake() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// Latest returns the newest revision that wrote a key of each kind, as of a read of etcd made
// after the call began. Concurrent calls share reads.
func (w *keyWrites) Latest(ctx context.Context) (newestWrites, error) {
	w.mu.Lock()
	failed := w.failedAt
	w.mu.Unlock()
	if since := time.Since(failed); since < storageRetry {
		return newestWrites{}, fmt.Errorf("reading etcd failed %v ago", since.Round(time.Millisecond))
	}
	return w.reads.do(ctx)
}

// fetchLatest reads etcd's revision and waits until the watch has delivered every write up to it;
// a failure is recorded (failedAt).
func (w *keyWrites) fetchLatest(ctx context.Context) (newestWrites, error) {
	latest, err := w.readLatest(ctx)
	if err != nil {
		w.mu.Lock()
		w.failedAt = time.Now()
		w.mu.Unlock()
	}
	return latest, err
}

func (w *keyWrites) readLatest(ctx context.Context) (newestWrites, error) {
	ctx, cancel := context.WithTimeout(ctx, storageReadTimeout)
	defer cancel()
	resp, err := w.client.Get(ctx, w.watched, clientv3.WithCountOnly()) // one key: O(1), linearizable
	if err != nil {
		return newestWrites{}, err
	}
	rev := uint64(resp.Header.Revision)
	// etcd answers a progress request only once the watch has caught up: ask again until then.
	var again <-chan time.Time
	for {
		w.mu.Lock()
		watch, synced, latest, changed := w.watch, w.synced, w.latest, w.changed
		w.mu.Unlock()
		switch {
		case watch == nil:
			return newestWrites{}, errors.New("the SidecarSet writes are not followed (the watch of etcd is starting)")
		case synced >= rev:
			return latest, nil
		case again == nil:
			if err := w.client.RequestProgress(watch); err != nil {
				return newestWrites{}, err
			}
			again = time.After(progressRetry)
		}
		select {
		case <-ctx.Done():
			return newestWrites{}, fmt.Errorf("etcd did not report the SidecarSet writes up to revision %d: %w", rev, ctx.Err())
		case <-changed:
		case <-again:
			again = nil
		}
	}
}

// coalescer has concurrent callers share one fetch, always one that began after they called: a
// caller joins the fetch waiting to start, never one under way.
type coalescer[T any] struct {
	fetch   func(context.Context) (T, error)
	mu      sync.Mutex
	pending *fetchCall[T]
	running bool
}

type fetchCall[T any] struct {
	done chan struct{}
	rev  T
	err  error
}

func (c *coalescer[T]) do(ctx context.Context) (T, error) {
	c.mu.Lock()
	if c.pending == nil {
		c.pending = &fetchCall[T]{done: make(chan struct{})}
	}
	call := c.pending
	if !c.running {
		c.running = true
		go c.loop()
	}
	c.mu.Unlock()
	select {
	case <-call.done:
		return call.rev, call.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// loop runs the pending fetches one after another, until none is pending.
func (c *coalescer[T]) loop() {
	for {
		c.mu.Lock()
		call := c.pending
		c.pending = nil
		if call == nil {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		call.rev, call.err = c.fetch(context.Background())
		close(call.done)
	}
}

// freshness is the webhook's barrier (webhook.Reviewer.Fresh): it returns once this replica's
// index has taken in the newest write of each kind, each in the watermark of its stream
// (webhook.Marks), or when it cannot tell (the pod is then
// answered from the cache as it is). It waits only while writes may be that recent: while the
// intake webhooks are in place (intakeOpen; every write adds them, and waits for kube-apiserver
// to load them, before it is stored, and the leader removes them only seconds after the last),
// so that a pod created while no SidecarSet is written pays no read of etcd. Without a main
// cluster (intakeOpen nil) it always waits.
func freshness(writes *keyWrites, seen *webhook.Marks, intakeOpen func() bool) func(context.Context) {
	return func(ctx context.Context) {
		if intakeOpen != nil && !intakeOpen() {
			return
		}
		latest, err := writes.Latest(ctx)
		if err != nil {
			klog.V(2).InfoS("answering a pod from the cache without knowing the newest SidecarSet write", "err", err)
			return
		}
		ctx, cancel := context.WithTimeout(ctx, indexCatchUpWait)
		defer cancel()
		for i, rev := range latest {
			if err := seen.Lane(i == namespacedKind).Wait(ctx, strconv.FormatUint(rev, 10)); err != nil {
				klog.InfoS("answering a pod from a cache behind the newest SidecarSet write", "resource", kinds[i].resource, "revision", rev, "err", err)
			}
		}
	}
}

// intakeInPlace reports whether one of the webhook configurations named (the intake one, and the
// active one, which held them before this version), as the lister has it, holds intake webhooks;
// true while the lister has not synced or cannot tell (the barrier then waits).
func intakeInPlace(lister admissionlisters.MutatingWebhookConfigurationLister, synced func() bool, names ...string) func() bool {
	return func() bool {
		if !synced() {
			return true
		}
		for _, name := range names {
			cfg, err := lister.Get(name)
			if apierrors.IsNotFound(err) {
				continue // no webhooks there to send pods the server
			}
			if err != nil {
				return true
			}
			if _, intake := webhookconfig.SplitIntake(cfg.Webhooks); len(intake) > 0 {
				return true
			}
		}
		return false
	}
}
