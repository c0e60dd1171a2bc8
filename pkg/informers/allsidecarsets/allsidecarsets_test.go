package allsidecarsets

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/generated/clientset/versioned/fake"
)

// waitTime bounds every wait for an event; the events come at once or never.
const waitTime = 5 * time.Second

func clusterSet(name string) *v1alpha1.SidecarSet {
	return &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "3"},
		Spec: v1alpha1.SidecarSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
}

func namespacedSet(namespace, name string) *v1alpha1.NamespacedSidecarSet {
	return &v1alpha1.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, ResourceVersion: "4"},
		Spec: v1alpha1.SidecarSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}
}

// next returns the next event of w, failing the test after waitTime.
func next(t *testing.T, w watch.Interface) (watch.Event, bool) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		return ev, ok
	case <-time.After(waitTime):
		t.Fatal("no event from the merged watch")
	}
	return watch.Event{}, false
}

// drainUntilClosed reads w until its channel closes and returns what it read.
func drainUntilClosed(t *testing.T, w watch.Interface) []watch.Event {
	t.Helper()
	var evs []watch.Event
	for {
		ev, ok := next(t, w)
		if !ok {
			return evs
		}
		evs = append(evs, ev)
	}
}

// TestMergedWatchForwards: the events of both sources arrive, a NamespacedSidecarSet's as the
// SidecarSet it takes part as.
func TestMergedWatchForwards(t *testing.T) {
	sets, namespaced := watch.NewFake(), watch.NewFake()
	m := mergeWatches(sets, namespaced)
	defer m.Stop()

	asSet := namespacedSet("team-a", "logs").AsSidecarSet()
	for _, tc := range []struct {
		name string
		src  *watch.FakeWatcher
		in   watch.Event
		want watch.Event
	}{
		{"SidecarSet added", sets, watch.Event{Type: watch.Added, Object: clusterSet("logs")},
			watch.Event{Type: watch.Added, Object: clusterSet("logs")}},
		{"NamespacedSidecarSet added", namespaced, watch.Event{Type: watch.Added, Object: namespacedSet("team-a", "logs")},
			watch.Event{Type: watch.Added, Object: asSet}},
		{"NamespacedSidecarSet modified", namespaced, watch.Event{Type: watch.Modified, Object: namespacedSet("team-a", "logs")},
			watch.Event{Type: watch.Modified, Object: asSet}},
		{"SidecarSet deleted", sets, watch.Event{Type: watch.Deleted, Object: clusterSet("logs")},
			watch.Event{Type: watch.Deleted, Object: clusterSet("logs")}},
		{"NamespacedSidecarSet deleted", namespaced, watch.Event{Type: watch.Deleted, Object: namespacedSet("team-a", "logs")},
			watch.Event{Type: watch.Deleted, Object: asSet}},
	} {
		go tc.src.Action(tc.in.Type, tc.in.Object)
		got, ok := next(t, m)
		if !ok {
			t.Fatalf("%s: the merged watch closed", tc.name)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: event (-want +got):\n%s", tc.name, diff)
		}
		if ss, ok := got.Object.(*v1alpha1.SidecarSet); !ok {
			t.Errorf("%s: object %T, want *v1alpha1.SidecarSet", tc.name, got.Object)
		} else if tc.src == namespaced && (ss.Name != "team-a.logs" || ss.Namespace != "" || ss.Spec.Namespace != "team-a") {
			t.Errorf("%s: %s/%s with spec.namespace %q, want team-a.logs, cluster-scoped, in team-a", tc.name, ss.Namespace, ss.Name, ss.Spec.Namespace)
		}
	}
}

// TestMergedWatchStop: stopping the merged watch stops both sources and closes its channel,
// with no error event.
func TestMergedWatchStop(t *testing.T) {
	sets, namespaced := watch.NewFake(), watch.NewFake()
	m := mergeWatches(sets, namespaced)
	m.Stop()
	m.Stop() // twice is fine
	if evs := drainUntilClosed(t, m); len(evs) != 0 {
		t.Errorf("events after Stop: %+v", evs)
	}
	if !sets.IsStopped() || !namespaced.IsStopped() {
		t.Errorf("sources stopped: SidecarSets %v, NamespacedSidecarSets %v; want both", sets.IsStopped(), namespaced.IsStopped())
	}
}

// TestMergedWatchStopInFlight: stopping the merged watch while its sources still have events to
// forward neither panics nor blocks: its channel closes with at most the events already queued
// (never an error: the consumer stopped, nothing failed), and both sources are stopped.
func TestMergedWatchStopInFlight(t *testing.T) {
	for range 50 {
		sets := watch.NewFakeWithOptions(watch.FakeOptions{ChannelSize: 20})
		namespaced := watch.NewFakeWithOptions(watch.FakeOptions{ChannelSize: 20})
		for range 20 {
			sets.Add(clusterSet("logs"))
			namespaced.Add(namespacedSet("team-a", "logs"))
		}
		m := mergeWatches(sets, namespaced)
		next(t, m)
		m.Stop()
		evs := drainUntilClosed(t, m)
		if len(evs) > 39 {
			t.Fatalf("%d events after Stop, more than the 39 queued", len(evs))
		}
		for _, ev := range evs {
			if ev.Type == watch.Error {
				t.Fatalf("an error event after Stop: %+v", ev.Object)
			}
		}
		if !sets.IsStopped() || !namespaced.IsStopped() {
			t.Fatalf("sources stopped: SidecarSets %v, NamespacedSidecarSets %v; want both", sets.IsStopped(), namespaced.IsStopped())
		}
	}
}

// TestMergedWatchEnds: when either source ends (its channel closes, or it sends an error), the
// merged watch sends 410 Gone, so that the reflector lists again, then closes; both sources are
// stopped.
func TestMergedWatchEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(sets, namespaced *watch.FakeWatcher)
	}{
		{"SidecarSet watch closed", func(sets, _ *watch.FakeWatcher) { sets.Stop() }},
		{"NamespacedSidecarSet watch closed", func(_, namespaced *watch.FakeWatcher) { namespaced.Stop() }},
		{"SidecarSet watch error", func(sets, _ *watch.FakeWatcher) {
			sets.Error(&metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError})
		}},
		{"NamespacedSidecarSet watch error", func(_, namespaced *watch.FakeWatcher) {
			namespaced.Error(&metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sets, namespaced := watch.NewFake(), watch.NewFake()
			m := mergeWatches(sets, namespaced)
			defer m.Stop()
			go tc.end(sets, namespaced)
			evs := drainUntilClosed(t, m)
			if len(evs) != 1 || evs[0].Type != watch.Error {
				t.Fatalf("events %+v, want one error", evs)
			}
			st, ok := evs[0].Object.(*metav1.Status)
			if !ok {
				t.Fatalf("error object %T, want *metav1.Status", evs[0].Object)
			}
			if st.Code != http.StatusGone || st.Reason != metav1.StatusReasonExpired {
				t.Errorf("error %d %s (%s), want 410 Expired", st.Code, st.Reason, st.Message)
			}
			if !sets.IsStopped() || !namespaced.IsStopped() {
				t.Errorf("sources stopped: SidecarSets %v, NamespacedSidecarSets %v; want both", sets.IsStopped(), namespaced.IsStopped())
			}
		})
	}
}

// TestListBothKinds: the list holds the SidecarSets and, as SidecarSets, the NamespacedSidecarSets
// of every namespace, whole (no pages), the second list at the resource version of the first.
func TestListBothKinds(t *testing.T) {
	client := fake.NewClientset(clusterSet("logs"), clusterSet("mesh"), namespacedSet("team-a", "logs"), namespacedSet("team-b", "proxy"))
	client.PrependReactor("list", "sidecarsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		list := &v1alpha1.SidecarSetList{ListMeta: metav1.ListMeta{ResourceVersion: "17"}}
		for _, name := range []string{"logs", "mesh"} {
			list.Items = append(list.Items, *clusterSet(name))
		}
		return true, list, nil
	})
	lw := &listWatch{client: client}
	obj, err := lw.ListWithContext(context.Background(), metav1.ListOptions{Limit: 1, Continue: "token", ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	list, ok := obj.(*v1alpha1.SidecarSetList)
	if !ok {
		t.Fatalf("list %T, want *v1alpha1.SidecarSetList", obj)
	}
	if list.ResourceVersion != "17" {
		t.Errorf("list resourceVersion %q, want 17 (the SidecarSet list's)", list.ResourceVersion)
	}
	got := map[string]string{}
	for _, ss := range list.Items {
		got[ss.Name] = ss.Spec.Namespace
	}
	want := map[string]string{"logs": "", "mesh": "", "team-a.logs": "team-a", "team-b.proxy": "team-b"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SidecarSet name to spec.namespace (-want +got):\n%s", diff)
	}

	var opts []metav1.ListOptions
	for _, a := range client.Actions() {
		if l, ok := a.(k8stesting.ListActionImpl); ok {
			if a.GetResource().Resource == "namespacedsidecarsets" && a.GetNamespace() != metav1.NamespaceAll {
				t.Errorf("NamespacedSidecarSets listed in namespace %q, want all", a.GetNamespace())
			}
			opts = append(opts, l.ListOptions)
		}
	}
	wantOpts := []metav1.ListOptions{
		{ResourceVersion: "0", Limit: pageSize},
		{ResourceVersion: "17", ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: pageSize},
	}
	if diff := cmp.Diff(wantOpts, opts); diff != "" {
		t.Errorf("list options (-want +got):\n%s", diff)
	}
}

// TestListPages: both kinds are read in pages, each continued with its token (and the selectors,
// without a resource version), into one list.
func TestListPages(t *testing.T) {
	client := fake.NewClientset()
	var opts []metav1.ListOptions
	pages := func(resource string, names [][]string, item func(string) runtime.Object) {
		client.PrependReactor("list", resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
			o := a.(k8stesting.ListActionImpl).ListOptions
			opts = append(opts, o)
			i := 0
			if o.Continue != "" {
				fmt.Sscan(o.Continue, &i)
			}
			meta := metav1.ListMeta{ResourceVersion: "17"}
			if i+1 < len(names) {
				meta.Continue = fmt.Sprint(i + 1)
			}
			if resource == "sidecarsets" {
				list := &v1alpha1.SidecarSetList{ListMeta: meta}
				for _, n := range names[i] {
					list.Items = append(list.Items, *item(n).(*v1alpha1.SidecarSet))
				}
				return true, list, nil
			}
			list := &v1alpha1.NamespacedSidecarSetList{ListMeta: meta}
			for _, n := range names[i] {
				list.Items = append(list.Items, *item(n).(*v1alpha1.NamespacedSidecarSet))
			}
			return true, list, nil
		})
	}
	pages("sidecarsets", [][]string{{"a", "b"}, {"c"}}, func(n string) runtime.Object { return clusterSet(n) })
	pages("namespacedsidecarsets", [][]string{{"x"}, {"y"}, {"z"}}, func(n string) runtime.Object { return namespacedSet("team", n) })
	lw := &listWatch{client: client}
	obj, err := lw.ListWithContext(context.Background(), metav1.ListOptions{FieldSelector: "metadata.namespace!=kube-system", ResourceVersion: ""})
	if err != nil {
		t.Fatal(err)
	}
	list := obj.(*v1alpha1.SidecarSetList)
	var names []string
	for _, ss := range list.Items {
		names = append(names, ss.Name)
	}
	if diff := cmp.Diff([]string{"a", "b", "c", "team.x", "team.y", "team.z"}, names); diff != "" {
		t.Errorf("listed (-want +got):\n%s", diff)
	}
	if list.Continue != "" || list.ResourceVersion != "17" {
		t.Errorf("list meta %+v, want resourceVersion 17 and no continue", list.ListMeta)
	}
	exact := metav1.ResourceVersionMatchExact
	wantOpts := []metav1.ListOptions{
		{FieldSelector: "metadata.namespace!=kube-system", Limit: pageSize},
		{FieldSelector: "metadata.namespace!=kube-system", Limit: pageSize, Continue: "1"},
		{FieldSelector: "metadata.namespace!=kube-system", Limit: pageSize, ResourceVersion: "17", ResourceVersionMatch: exact},
		{FieldSelector: "metadata.namespace!=kube-system", Limit: pageSize, Continue: "1"},
		{FieldSelector: "metadata.namespace!=kube-system", Limit: pageSize, Continue: "2"},
	}
	if diff := cmp.Diff(wantOpts, opts); diff != "" {
		t.Errorf("list options (-want +got):\n%s", diff)
	}
}

// TestRelistNotOlderThan: a relist at a version the reflector last saw reads any version as new,
// then the NamespacedSidecarSets at exactly the one it got.
func TestRelistNotOlderThan(t *testing.T) {
	client := fake.NewClientset()
	var opts []metav1.ListOptions
	client.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		opts = append(opts, a.(k8stesting.ListActionImpl).ListOptions)
		if a.GetResource().Resource == "sidecarsets" {
			return true, &v1alpha1.SidecarSetList{ListMeta: metav1.ListMeta{ResourceVersion: "40"}}, nil
		}
		return true, &v1alpha1.NamespacedSidecarSetList{}, nil
	})
	lw := &listWatch{client: client}
	if _, err := lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "31"}); err != nil {
		t.Fatal(err)
	}
	want := []metav1.ListOptions{
		{ResourceVersion: "31", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: pageSize},
		{ResourceVersion: "40", ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: pageSize},
	}
	if diff := cmp.Diff(want, opts); diff != "" {
		t.Errorf("list options (-want +got):\n%s", diff)
	}
}

// TestWatchOutlastsTheReflectorsTimeout: both streams are opened without the reflector's watch
// timeout and without bookmarks; the rest of the options are passed on.
func TestWatchOutlastsTheReflectorsTimeout(t *testing.T) {
	client := fake.NewClientset()
	var opts []metav1.ListOptions
	client.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		opts = append(opts, a.(k8stesting.WatchActionImpl).ListOptions)
		return true, watch.NewFake(), nil
	})
	lw := &listWatch{client: client}
	timeout := int64(347)
	w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "31", TimeoutSeconds: &timeout, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	want := []metav1.ListOptions{{Watch: true, ResourceVersion: "31"}, {Watch: true, ResourceVersion: "31"}}
	if diff := cmp.Diff(want, opts); diff != "" {
		t.Errorf("watch options (-want +got):\n%s", diff)
	}
}

// TestInformerOfBothKinds: the informer lists both kinds and follows the writes of both, keyed by
// the SidecarSet name.
func TestInformerOfBothKinds(t *testing.T) {
	// NewSimpleClientset: the field-managed tracker of NewClientset finds no schema for the kinds'
	// OpenAPI model names, and refuses creates.
	client := fake.NewSimpleClientset(clusterSet("logs"), namespacedSet("team-a", "logs"))
	inf := NewInformer(client, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer not synced")
	}
	waitKeys := func(want ...string) {
		t.Helper()
		deadline := time.Now().Add(waitTime)
		for {
			got := inf.GetStore().ListKeys()
			sort.Strings(got)
			if cmp.Equal(want, got) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("keys %v, want %v", got, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitKeys("logs", "team-a.logs")
	if _, err := client.AppsV1alpha1().NamespacedSidecarSets("team-b").Create(ctx, namespacedSet("team-b", "proxy"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitKeys("logs", "team-a.logs", "team-b.proxy")
	if err := client.AppsV1alpha1().NamespacedSidecarSets("team-a").Delete(ctx, "logs", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitKeys("logs", "team-b.proxy")
	obj, exists, err := inf.GetStore().GetByKey("team-b.proxy")
	if err != nil || !exists {
		t.Fatalf("team-b.proxy: %v, %v", exists, err)
	}
	if ss := obj.(*v1alpha1.SidecarSet); ss.Spec.Namespace != "team-b" {
		t.Errorf("team-b.proxy selects pods of namespace %q, want team-b", ss.Spec.Namespace)
	}
}
