package apiserver

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/generated/clientset/versioned/fake"
)

// fakeStore is a store that returns list and records what it was asked.
type fakeStore struct {
	list      runtime.Object
	events    *watch.FakeWatcher
	namespace string
	options   *metainternalversion.ListOptions
}

func (f *fakeStore) NewList() runtime.Object { return nil }
func (f *fakeStore) ConvertToTable(context.Context, runtime.Object, runtime.Object) (*metav1.Table, error) {
	return nil, nil
}

func (f *fakeStore) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	f.namespace, _ = genericapirequest.NamespaceFrom(ctx)
	f.options = opts
	return f.list, nil
}

func (f *fakeStore) Watch(ctx context.Context, opts *metainternalversion.ListOptions) (watch.Interface, error) {
	f.namespace, _ = genericapirequest.NamespaceFrom(ctx)
	f.options = opts
	return f.events, nil
}

// TestDirectClient: once the stores are set, the informers' lists and watches read them, with
// the options and namespace they were given, and get v1alpha1 objects; before, they go to the
// loopback client.
func TestDirectClient(t *testing.T) {
	ctx := context.Background()
	sets := &fakeStore{list: &apps.SidecarSetList{ListMeta: metav1.ListMeta{ResourceVersion: "12", Continue: "next"},
		Items: []apps.SidecarSet{{ObjectMeta: metav1.ObjectMeta{Name: "log", ResourceVersion: "11"}}}}, events: watch.NewFake()}
	namespaced := &fakeStore{list: &apps.NamespacedSidecarSetList{Items: []apps.NamespacedSidecarSet{{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "agent"}}}}}
	revisions := &fakeStore{list: &apps.SidecarSetRevisionList{Items: []apps.SidecarSetRevision{{ObjectMeta: metav1.ObjectMeta{Name: "log-1"}}}}}
	loopback := fake.NewClientset(&v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "through-the-loopback"}})
	var stores atomic.Pointer[directStores]
	c := directClient{Interface: loopback, stores: &stores, scheme: Scheme}

	before, err := c.AppsV1alpha1().SidecarSets().List(ctx, metav1.ListOptions{})
	if err != nil || len(before.Items) != 1 || before.Items[0].Name != "through-the-loopback" {
		t.Fatalf("before the stores are set: %v, %v; want the loopback's list", before, err)
	}

	stores.Store(&directStores{sets: sets, namespaced: namespaced, revisions: revisions})
	list, err := c.AppsV1alpha1().SidecarSets().List(ctx, metav1.ListOptions{Limit: 500, ResourceVersion: "10", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, LabelSelector: "a=b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "log" || list.ResourceVersion != "12" || list.Continue != "next" {
		t.Errorf("list %+v, want the store's, converted", list)
	}
	if o := sets.options; o.Limit != 500 || o.ResourceVersion != "10" || o.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan || o.LabelSelector.String() != "a=b" {
		t.Errorf("the store was asked %+v", o)
	}
	if _, err := c.AppsV1alpha1().SidecarSets().List(ctx, metav1.ListOptions{LabelSelector: "a b"}); err == nil {
		t.Error("a label selector that does not parse was listed")
	}

	nl, err := c.AppsV1alpha1().NamespacedSidecarSets("team").List(ctx, metav1.ListOptions{})
	if err != nil || len(nl.Items) != 1 || nl.Items[0].Namespace != "team" || namespaced.namespace != "team" {
		t.Errorf("namespaced list %+v (%v), asked in namespace %q; want team's", nl, err, namespaced.namespace)
	}
	rl, err := c.AppsV1alpha1().SidecarSetRevisions().List(ctx, metav1.ListOptions{})
	if err != nil || len(rl.Items) != 1 || rl.Items[0].Name != "log-1" {
		t.Errorf("revision list %+v (%v)", rl, err)
	}

	w, err := c.AppsV1alpha1().SidecarSets().Watch(ctx, metav1.ListOptions{ResourceVersion: "12"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if sets.options.ResourceVersion != "12" {
		t.Errorf("the store was watched from %q, want 12", sets.options.ResourceVersion)
	}
	gone := metav1.Status{Status: metav1.StatusFailure, Code: 410}
	go func() {
		sets.events.Modify(&apps.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "log", ResourceVersion: "13"}})
		sets.events.Error(&gone)
	}()
	for _, want := range []watch.EventType{watch.Modified, watch.Error} {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != want {
				t.Fatalf("event %s, want %s", ev.Type, want)
			}
			switch o := ev.Object.(type) {
			case *v1alpha1.SidecarSet:
				if o.Name != "log" || o.ResourceVersion != "13" {
					t.Errorf("event object %+v", o.ObjectMeta)
				}
			case *metav1.Status:
				if o.Code != 410 {
					t.Errorf("error event %+v, want the store's", o)
				}
			default:
				t.Errorf("event object %T, want a v1alpha1 SidecarSet or a Status", o)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s event", want)
		}
	}
}
