// Package allsidecarsets merges the SidecarSets and the NamespacedSidecarSets (each as the
// SidecarSet it takes part as) into one informer, so that every reader sees both kinds keyed by
// SidecarSet name. Its list reads both resources at one resource version; its watch merges both
// streams and ends with 410 Gone as soon as either ends.
package allsidecarsets

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	clientset "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
)

// NewInformer returns the informer of every SidecarSet injection and upgrades act on: the
// cluster-wide SidecarSets, and each NamespacedSidecarSet as the SidecarSet it takes part as
// (v1alpha1.NamespacedSidecarSet.AsSidecarSet). The informer factory serves it as its SidecarSet
// informer, so the webhook, the policies, the controller and the admission plugins all see both
// kinds, keyed by the SidecarSet name.
//
// Both resources live in this server's etcd, so their resource versions are one sequence: the two
// lists are read at the same resource version, and both watches start from the version the
// reflector asks for. When either watch ends, the merged watch ends with 410 Gone: the reflector
// lists again rather than resume from a version one of the two streams may not have reached.
func NewInformer(client clientset.Interface, resync time.Duration) cache.SharedIndexInformer {
	lw := &listWatch{client: client}
	return cache.NewSharedIndexInformer(lw, &v1alpha1.SidecarSet{}, resync, cache.Indexers{})
}

type listWatch struct {
	client clientset.Interface
}

var _ cache.ListerWatcherWithContext = &listWatch{}

// IsWatchListSemanticsUnSupported is true: the merged stream has no single end of initial events.
func (*listWatch) IsWatchListSemanticsUnSupported() bool { return true }

func (lw *listWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

func (lw *listWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

// pageSize is the most objects one list request asks for: thousands of SidecarSets and
// NamespacedSidecarSets are read in pages, not in one response each side must hold whole.
const pageSize = 500

// ListWithContext lists the SidecarSets, then the NamespacedSidecarSets at exactly the same
// resource version, each in pages of pageSize, into one list.
func (lw *listWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	opts.Limit, opts.Continue = pageSize, ""
	if rv := opts.ResourceVersion; rv != "" && rv != "0" && opts.ResourceVersionMatch == "" {
		// A relist at the last version seen: any version as new (with a limit and no match, a
		// version would be read as exactly that one, which compaction removes).
		opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	}
	sets, err := lw.client.AppsV1alpha1().SidecarSets().List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for next := sets.Continue; next != ""; {
		page, err := lw.client.AppsV1alpha1().SidecarSets().List(ctx, continued(opts, next))
		if err != nil {
			return nil, err
		}
		sets.Items, next = append(sets.Items, page.Items...), page.Continue
	}
	sets.Continue = ""
	opts.ResourceVersion, opts.ResourceVersionMatch = sets.ResourceVersion, metav1.ResourceVersionMatchExact
	namespaced := lw.client.AppsV1alpha1().NamespacedSidecarSets(metav1.NamespaceAll)
	for next, first := "", true; first || next != ""; first = false {
		o := opts
		if !first {
			o = continued(opts, next)
		}
		page, err := namespaced.List(ctx, o)
		if err != nil {
			return nil, err
		}
		for i := range page.Items {
			sets.Items = append(sets.Items, *page.Items[i].AsSidecarSet())
		}
		next = page.Continue
	}
	return sets, nil
}

// continued returns the options of the page after the one that returned token: the same
// selectors and size, the resource version carried by the token.
func continued(opts metav1.ListOptions, token string) metav1.ListOptions {
	opts.Continue, opts.ResourceVersion, opts.ResourceVersionMatch = token, "", ""
	return opts
}

// WatchWithContext watches both resources from the same resource version.
func (lw *listWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.AllowWatchBookmarks = false // a bookmark of one stream says nothing of the other
	// The reflector lists again whenever either stream ends, so each lasts as long as the server
	// lets a watch (its --min-request-timeout, 30 to 60 minutes) rather than the reflector's 5 to
	// 10: a list of 50,000 SidecarSets costs seconds of the server's CPU and, while it lasts, a
	// second copy of them in memory.
	opts.TimeoutSeconds = nil
	sets, err := lw.client.AppsV1alpha1().SidecarSets().Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	namespaced, err := lw.client.AppsV1alpha1().NamespacedSidecarSets(metav1.NamespaceAll).Watch(ctx, opts)
	if err != nil {
		sets.Stop()
		return nil, err
	}
	return mergeWatches(sets, namespaced), nil
}

// mergedWatch forwards the events of both watches, NamespacedSidecarSets as the SidecarSets they
// take part as, and ends with 410 Gone as soon as either ends.
type mergedWatch struct {
	sources []watch.Interface
	out     chan watch.Event
	// done is closed once the sources are stopped: by Stop, or because one of them ended.
	done     chan struct{}
	doneOnce sync.Once
	// stopped is closed by Stop: the consumer reads no more.
	stopped  chan struct{}
	stopOnce sync.Once
}

func mergeWatches(sources ...watch.Interface) *mergedWatch {
	m := &mergedWatch{sources: sources, out: make(chan watch.Event), done: make(chan struct{}), stopped: make(chan struct{})}
	ended := make(chan struct{}, len(sources))
	var forwarders sync.WaitGroup
	for _, src := range sources {
		forwarders.Add(1)
		go func() {
			defer forwarders.Done()
			m.forward(src, ended)
		}()
	}
	go func() {
		defer close(m.out)
		select {
		case <-ended:
		case <-m.stopped:
		}
		m.end()
		// No forwarder may send on m.out once it is closed, and none sends after the error.
		forwarders.Wait()
		select {
		case <-m.stopped: // the consumer stopped the watch: no error for it
			return
		default:
		}
		gone := apierrors.NewResourceExpired("the SidecarSet or NamespacedSidecarSet watch ended: list again").Status()
		select {
		case m.out <- watch.Event{Type: watch.Error, Object: &gone}:
		case <-m.stopped:
		case <-time.After(time.Second): // nobody reads any more
		}
	}()
	return m
}

func (m *mergedWatch) forward(src watch.Interface, ended chan<- struct{}) {
	defer func() { ended <- struct{}{} }()
	for {
		select {
		case ev, ok := <-src.ResultChan():
			if !ok || ev.Type == watch.Error {
				return
			}
			if n, isNamespaced := ev.Object.(*v1alpha1.NamespacedSidecarSet); isNamespaced {
				ev.Object = n.AsSidecarSet()
			}
			select {
			case m.out <- ev:
			case <-m.done:
				return
			}
		case <-m.done:
			return
		}
	}
}

// end stops both watches.
func (m *mergedWatch) end() {
	m.doneOnce.Do(func() {
		close(m.done)
		for _, src := range m.sources {
			src.Stop()
		}
	})
}

// Stop stops both watches and closes the result channel, with no error event.
func (m *mergedWatch) Stop() {
	m.stopOnce.Do(func() { close(m.stopped) })
	m.end()
}

// ResultChan returns the merged events.
func (m *mergedWatch) ResultChan() <-chan watch.Event { return m.out }
