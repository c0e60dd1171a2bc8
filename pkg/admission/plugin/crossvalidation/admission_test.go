package crossvalidation

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	listers "github.com/sidecarset/apiserver/pkg/generated/listers/apps/v1alpha1"
)

// newPlugin returns the plugin on listers holding sets (the informer's objects: SidecarSets and
// NamespacedSidecarSets in engine form) and revisions.
func newPlugin(t testing.TB, sets []*v1alpha1.SidecarSet, revisions []*v1alpha1.SidecarSetRevision) *Plugin {
	t.Helper()
	setIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{ConflictIndex: IndexConflictKeys})
	for _, ss := range sets {
		if err := setIndexer.Add(ss); err != nil {
			t.Fatal(err)
		}
	}
	revIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, r := range revisions {
		if err := revIndexer.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	p := &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update)}
	p.SetInputs(Inputs{
		SidecarSets:     listers.NewSidecarSetLister(setIndexer),
		SidecarSetIndex: setIndexer,
		Revisions:       listers.NewSidecarSetRevisionLister(revIndexer),
		Whitelist:       func() (*string, error) { return nil, nil },
		HasSynced:       func() bool { return true },
	})
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	return p
}

func spec(namespace, container string) apps.SidecarSetSpec {
	return apps.SidecarSetSpec{
		Namespace:      namespace,
		Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		UpdateStrategy: apps.SidecarSetUpdateStrategy{Type: apps.RollingUpdateSidecarSetStrategyType},
		Containers:     []apps.SidecarContainer{{Container: corev1.Container{Name: container, Image: container + ":1"}}},
	}
}

// cluster is a stored SidecarSet; namespace "" selects pods of every namespace.
func cluster(name, namespace, container string) *v1alpha1.SidecarSet {
	return wire(&apps.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec(namespace, container)})
}

// stored is a stored NamespacedSidecarSet as the informer holds it.
func stored(namespace, name, container string) *v1alpha1.SidecarSet {
	return wire(namespacedWrite(namespace, name, container).AsSidecarSet())
}

func wire(ss *apps.SidecarSet) *v1alpha1.SidecarSet {
	out := &v1alpha1.SidecarSet{}
	if err := v1alpha1.Convert_apps_SidecarSet_To_v1alpha1_SidecarSet(ss, out, nil); err != nil {
		panic(err)
	}
	return out
}

// namespacedWrite is a NamespacedSidecarSet as written.
func namespacedWrite(namespace, name, container string) *apps.NamespacedSidecarSet {
	return &apps.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: spec("", container)}
}

func revisionOf(name, sidecarSet string) *v1alpha1.SidecarSetRevision {
	return &v1alpha1.SidecarSetRevision{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{v1alpha1.SidecarSetNameLabel: sidecarSet}}, SidecarSetName: sidecarSet, Revision: 1}
}

// attributes returns the admission attributes of a create of obj, a SidecarSet or a
// NamespacedSidecarSet.
func attributes(obj runtime.Object) admission.Attributes {
	switch o := obj.(type) {
	case *apps.NamespacedSidecarSet:
		return admission.NewAttributesRecord(o, nil, apps.Kind("NamespacedSidecarSet").WithVersion(""), o.Namespace, o.Name,
			apps.Resource("namespacedsidecarsets").WithVersion(""), "", admission.Create, &metav1.CreateOptions{}, false, nil)
	case *apps.SidecarSet:
		return admission.NewAttributesRecord(o, nil, apps.Kind("SidecarSet").WithVersion(""), "", o.Name,
			apps.Resource("sidecarsets").WithVersion(""), "", admission.Create, &metav1.CreateOptions{}, false, nil)
	}
	panic("unexpected object")
}

// refusal is what a refusal says: the kind and name it names, and its causes' fields and messages.
type refusal struct {
	Kind, Name string
	Causes     []string // field: a part of the message
}

// checkRefusal compares the error of a Validate with want (nil: accepted).
func checkRefusal(t *testing.T, err error, want *refusal) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("error %v, want Invalid", err)
	}
	details := err.(apierrors.APIStatus).Status().Details
	got := &refusal{Kind: details.Kind, Name: details.Name}
	for i, c := range details.Causes {
		if i < len(want.Causes) {
			wantField, wantText, _ := strings.Cut(want.Causes[i], ": ")
			if c.Field == wantField && strings.Contains(c.Message, wantText) {
				got.Causes = append(got.Causes, want.Causes[i])
				continue
			}
		}
		got.Causes = append(got.Causes, c.Field+": "+c.Message)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("refusal (-want +got):\n%s", diff)
	}
}

// TestConflictsAcrossKinds: the container of a NamespacedSidecarSet conflicts with the one of a
// cluster SidecarSet that selects pods of its namespace, not the other way round (a tenant cannot
// refuse an administrator's write); SidecarSets of namespaces that do not overlap never conflict.
func TestConflictsAcrossKinds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stored []*v1alpha1.SidecarSet
		write  runtime.Object
		want   *refusal
	}{
		{name: "NamespacedSidecarSet against a SidecarSet of every namespace",
			stored: []*v1alpha1.SidecarSet{cluster("mesh", "", "proxy")},
			write:  namespacedWrite("team-a", "logs", "proxy"),
			want: &refusal{Kind: "NamespacedSidecarSet", Name: "logs",
				Causes: []string{"spec.containers[0].name: container proxy already exist in mesh"}}},
		{name: "NamespacedSidecarSet against a SidecarSet of its namespace",
			stored: []*v1alpha1.SidecarSet{cluster("mesh", "team-a", "proxy")},
			write:  namespacedWrite("team-a", "logs", "proxy"),
			want: &refusal{Kind: "NamespacedSidecarSet", Name: "logs",
				Causes: []string{"spec.containers[0].name: container proxy already exist in mesh"}}},
		{name: "NamespacedSidecarSet against a SidecarSet of another namespace",
			stored: []*v1alpha1.SidecarSet{cluster("mesh", "team-a", "proxy")},
			write:  namespacedWrite("team-b", "logs", "proxy")},
		{name: "NamespacedSidecarSet against one of another namespace",
			stored: []*v1alpha1.SidecarSet{stored("team-a", "logs", "proxy")},
			write:  namespacedWrite("team-b", "logs", "proxy")},
		{name: "NamespacedSidecarSet against another of its namespace",
			stored: []*v1alpha1.SidecarSet{stored("team-a", "mesh", "proxy")},
			write:  namespacedWrite("team-a", "logs", "proxy"),
			want: &refusal{Kind: "NamespacedSidecarSet", Name: "logs",
				Causes: []string{"spec.containers[0].name: container proxy already exist in team-a.mesh"}}},
		{name: "NamespacedSidecarSet updated: not in conflict with itself",
			stored: []*v1alpha1.SidecarSet{stored("team-a", "logs", "proxy")},
			write:  namespacedWrite("team-a", "logs", "proxy")},
		{name: "NamespacedSidecarSet with another container",
			stored: []*v1alpha1.SidecarSet{cluster("mesh", "", "proxy")},
			write:  namespacedWrite("team-a", "logs", "log")},
		// A name a namespace editor took first never refuses an administrator's write: the
		// cluster SidecarSet wins in the pods both select.
		{name: "SidecarSet of every namespace against a NamespacedSidecarSet",
			stored: []*v1alpha1.SidecarSet{stored("team-a", "logs", "proxy")},
			write:  &apps.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "mesh"}, Spec: spec("", "proxy")}},
		{name: "SidecarSet against a SidecarSet and a NamespacedSidecarSet",
			stored: []*v1alpha1.SidecarSet{stored("team-a", "logs", "proxy"), cluster("edge", "", "proxy")},
			write:  &apps.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "mesh"}, Spec: spec("", "proxy")},
			want: &refusal{Kind: "SidecarSet", Name: "mesh",
				Causes: []string{"spec.containers[0].name: container proxy already exist in edge"}}},
		{name: "SidecarSet of another namespace than a NamespacedSidecarSet",
			stored: []*v1alpha1.SidecarSet{stored("team-a", "logs", "proxy")},
			write:  &apps.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "mesh"}, Spec: spec("team-b", "proxy")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin(t, tc.stored, nil)
			checkRefusal(t, p.Validate(context.Background(), attributes(tc.write), nil), tc.want)
		})
	}
}

// TestNamespacedRevisionName: a NamespacedSidecarSet injects only its own revisions; a cluster
// SidecarSet may name any revision, as in OpenKruise.
func TestNamespacedRevisionName(t *testing.T) {
	revisions := []*v1alpha1.SidecarSetRevision{
		revisionOf("mesh-1", "mesh"),
		revisionOf("team-a.logs-1", "team-a.logs"),
		revisionOf("team-b.logs-1", "team-b.logs"),
	}
	withRevision := func(obj runtime.Object, name string) runtime.Object {
		r := &apps.SidecarSetInjectRevision{RevisionName: ptr.To(name), Policy: apps.AlwaysSidecarSetInjectRevisionPolicy}
		switch o := obj.(type) {
		case *apps.NamespacedSidecarSet:
			o.Spec.InjectionStrategy.Revision = r
		case *apps.SidecarSet:
			o.Spec.InjectionStrategy.Revision = r
		}
		return obj
	}
	notOwn := "spec.injectionStrategy.revision.revisionName: is not a revision of this NamespacedSidecarSet"
	for _, tc := range []struct {
		name  string
		write runtime.Object
		want  *refusal
	}{
		{name: "its own", write: withRevision(namespacedWrite("team-a", "logs", "log"), "team-a.logs-1")},
		{name: "a cluster SidecarSet's", write: withRevision(namespacedWrite("team-a", "logs", "log"), "mesh-1"),
			want: &refusal{Kind: "NamespacedSidecarSet", Name: "logs", Causes: []string{notOwn}}},
		{name: "one of the same name in another namespace", write: withRevision(namespacedWrite("team-a", "logs", "log"), "team-b.logs-1"),
			want: &refusal{Kind: "NamespacedSidecarSet", Name: "logs", Causes: []string{notOwn}}},
		{name: "missing", write: withRevision(namespacedWrite("team-a", "logs", "log"), "team-a.logs-9"),
			want: &refusal{Kind: "NamespacedSidecarSet", Name: "logs",
				Causes: []string{"spec.injectionStrategy.revision.revisionName: Cannot find specific ControllerRevision"}}},
		{name: "a cluster SidecarSet naming another's", write: withRevision(&apps.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: spec("", "log")}, "mesh-1")},
		{name: "a cluster SidecarSet naming a NamespacedSidecarSet's", write: withRevision(&apps.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: spec("", "log")}, "team-a.logs-1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin(t, nil, revisions)
			checkRefusal(t, p.Validate(context.Background(), attributes(tc.write), nil), tc.want)
		})
	}
}

// TestNamespacedCanary: a NamespacedSidecarSet's canary base is the NamespacedSidecarSet of that
// name in its own namespace, whose containers it may share.
func TestNamespacedCanary(t *testing.T) {
	canary := func(namespace string) *apps.NamespacedSidecarSet {
		n := namespacedWrite(namespace, "logs-canary", "log")
		n.Annotations = map[string]string{apps.SidecarSetCanaryAnnotation: "true", apps.SidecarSetBaseAnnotation: "logs"}
		n.Spec.UpdateStrategy.Type = apps.NotUpdateSidecarSetStrategyType
		return n
	}
	p := newPlugin(t, []*v1alpha1.SidecarSet{stored("team-a", "logs", "log")}, nil)
	checkRefusal(t, p.Validate(context.Background(), attributes(canary("team-a")), nil), nil)
	checkRefusal(t, p.Validate(context.Background(), attributes(canary("team-b")), nil), &refusal{Kind: "NamespacedSidecarSet", Name: "logs-canary",
		Causes: []string{"metadata.annotations[apps.kruise.io/sidecarset-base]: not found"}})
}

// TestIgnored: the plugin checks writes of the two kinds only, not of their subresources.
func TestIgnored(t *testing.T) {
	p := newPlugin(t, []*v1alpha1.SidecarSet{cluster("mesh", "", "proxy")}, nil)
	n := namespacedWrite("team-a", "logs", "proxy")
	status := admission.NewAttributesRecord(n, n, apps.Kind("NamespacedSidecarSet").WithVersion(""), n.Namespace, n.Name,
		apps.Resource("namespacedsidecarsets").WithVersion(""), "status", admission.Update, &metav1.UpdateOptions{}, false, nil)
	if err := p.Validate(context.Background(), status, nil); err != nil {
		t.Errorf("status update refused: %v", err)
	}
	other := admission.NewAttributesRecord(n, nil, apps.Kind("NamespacedSidecarSet").WithVersion(""), n.Namespace, n.Name,
		apps.Resource("sidecarsetrevisions").WithVersion(""), "", admission.Create, &metav1.CreateOptions{}, false, nil)
	if err := p.Validate(context.Background(), other, nil); err != nil {
		t.Errorf("write of another resource refused: %v", err)
	}
}

// TestNamespaceCap: with MaxPerNamespace 2, the third NamespacedSidecarSet of a namespace (team-a
// stores 2, team-b 1) is refused, naming the flag; other namespaces, cluster SidecarSets and a
// cap of 0 are not.
func TestNamespaceCap(t *testing.T) {
	storedSets := []*v1alpha1.SidecarSet{cluster("mesh", "", "proxy")}
	for _, tc := range []struct {
		name    string
		max     int
		obj     runtime.Object
		refused bool
	}{
		{"at the cap", 2, namespacedWrite("team-a", "a3", "c9"), true},
		{"below the cap", 3, namespacedWrite("team-a", "a3", "c9"), false},
		{"another namespace", 2, namespacedWrite("team-b", "b2", "c9"), false},
		{"an empty namespace", 2, namespacedWrite("team-c", "c1", "c9"), false},
		{"no cap", 0, namespacedWrite("team-a", "a3", "c9"), false},
		{"a cluster SidecarSet", 1, &apps.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "audit"}, Spec: spec("", "audit")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin(t, storedSets, nil)
			p.in.MaxPerNamespace = tc.max
			p.in.CountNamespaced = func(_ context.Context, ns string) (int, error) {
				return map[string]int{"team-a": 2, "team-b": 1}[ns], nil
			}
			err := p.Validate(context.Background(), attributes(tc.obj), nil)
			switch {
			case tc.refused && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "--max-namespaced-sidecarsets-per-namespace=2")):
				t.Errorf("got %v, want Forbidden naming the flag", err)
			case !tc.refused && err != nil:
				t.Errorf("refused: %v", err)
			}
		})
	}
}

// TestNamespacedUpdateWithKnownConflict: a NamespacedSidecarSet a cluster SidecarSet written
// after it collides with may still be updated (an image, or renaming the colliding sidecar); a
// conflict the update brings is refused.
func TestNamespacedUpdateWithKnownConflict(t *testing.T) {
	withContainers := func(names ...string) *apps.NamespacedSidecarSet {
		n := namespacedWrite("team-a", "logs", names[0])
		for _, c := range names[1:] {
			n.Spec.Containers = append(n.Spec.Containers, apps.SidecarContainer{Container: corev1.Container{Name: c, Image: c + ":1"}})
		}
		return n
	}
	bumped := withContainers("proxy")
	bumped.Spec.Containers[0].Image = "proxy:2"
	for _, tc := range []struct {
		name     string
		old, new *apps.NamespacedSidecarSet
		want     *refusal
	}{
		{"an image bump of the colliding sidecar", withContainers("proxy"), bumped, nil},
		{"the colliding sidecar renamed", withContainers("proxy"), withContainers("proxy-tenant"), nil},
		{"a new collision", withContainers("proxy"), withContainers("proxy", "logs"), &refusal{Kind: "NamespacedSidecarSet", Name: "logs",
			Causes: []string{"spec.containers[1].name: container logs already exist in edge"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin(t, []*v1alpha1.SidecarSet{wire(tc.old.AsSidecarSet()), cluster("mesh", "", "proxy"), cluster("edge", "", "logs")}, nil)
			a := admission.NewAttributesRecord(tc.new, tc.old, apps.Kind("NamespacedSidecarSet").WithVersion(""), "team-a", "logs",
				apps.Resource("namespacedsidecarsets").WithVersion(""), "", admission.Update, &metav1.UpdateOptions{}, false, nil)
			checkRefusal(t, p.Validate(context.Background(), a, nil), tc.want)
		})
	}
}

// BenchmarkCreate checks the create of one more SidecarSet against 1,000 and 10,000 stored ones,
// each selecting its own value of one key (the manual's shape): each with a sidecar of its own
// ("distinct"), and all with the same sidecar name ("shared", one sidecar for many workloads).
func BenchmarkCreate(b *testing.B) {
	for _, shape := range []string{"distinct", "shared"} {
		set := func(i int) *apps.SidecarSet {
			container := "log-agent"
			if shape == "distinct" {
				container = fmt.Sprintf("log-%d", i)
			}
			s := spec("", container)
			s.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("app-%d", i)}}
			return &apps.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("agent-%05d", i)}, Spec: s}
		}
		for _, n := range []int{1000, 10000} {
			sets := make([]*v1alpha1.SidecarSet, n)
			for i := range sets {
				sets[i] = wire(set(i))
				sets[i].UID, sets[i].ResourceVersion = types.UID(sets[i].Name), "1"
			}
			p := newPlugin(b, sets, nil)
			write := set(n)
			b.Run(fmt.Sprintf("%s/%d", shape, n), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if err := p.Validate(context.Background(), attributes(write), nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
