package crossvalidation

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/tools/cache"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/revision"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/bytebudget"
	listers "github.com/sidecarset/apiserver/pkg/generated/listers/apps/v1alpha1"
)

// padded is a NamespacedSidecarSet as written, its sidecar with the image and an env value of pad
// bytes.
func padded(namespace, name, image string, pad int) *apps.NamespacedSidecarSet {
	n := namespacedWrite(namespace, name, "agent-"+name)
	n.UID, n.ResourceVersion = types.UID("uid-"+namespace+"-"+name), "5"
	n.Spec.Containers[0].Image = image
	n.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "PAD", Value: strings.Repeat("p", pad)}}
	return n
}

// recordedFor is the revision the controller records for n.
func recordedFor(t *testing.T, n *apps.NamespacedSidecarSet, number int64) *v1alpha1.SidecarSetRevision {
	t.Helper()
	ss := wire(n.AsSidecarSet())
	name, err := revision.Name(ss.Name, revision.Snapshot(ss), 0)
	if err != nil {
		t.Fatal(err)
	}
	r := revision.New(ss, name, number)
	r.UID, r.ResourceVersion = types.UID("uid-"+name), "3"
	return r
}

// newBudgetPlugin returns the plugin on informer stores holding sets and revisions, measuring
// namespaces with a bytebudget.Meter on them as the server does.
func newBudgetPlugin(t *testing.T, budget int64, sets []*apps.NamespacedSidecarSet, revisions []*v1alpha1.SidecarSetRevision) *Plugin {
	t.Helper()
	setIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{ConflictIndex: IndexConflictKeys,
		"namespaced": func(obj any) ([]string, error) {
			if ns, _, ok := v1alpha1.SplitNamespacedName(obj.(*v1alpha1.SidecarSet).Name); ok {
				return []string{ns}, nil
			}
			return nil, nil
		}})
	for _, n := range sets {
		if err := setIndexer.Add(wire(n.AsSidecarSet())); err != nil {
			t.Fatal(err)
		}
	}
	revIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{bytebudget.RevisionIndex: bytebudget.IndexRevisionNamespace})
	for _, r := range revisions {
		if err := revIndexer.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	meter := &bytebudget.Meter{Objects: setIndexer, ObjectIndex: "namespaced", Revisions: revIndexer}
	p := &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update)}
	p.SetInputs(Inputs{
		SidecarSets:          listers.NewSidecarSetLister(setIndexer),
		SidecarSetIndex:      setIndexer,
		Revisions:            listers.NewSidecarSetRevisionLister(revIndexer),
		Whitelist:            func() (*string, error) { return nil, nil },
		HasSynced:            func() bool { return true },
		MaxBytesPerNamespace: budget,
		NamespaceUsage:       meter.Usage,
	})
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNamespaceBytes: namespace team-a holds "big" (a 20,000-byte env value) and "small", whose
// revisions are recorded (small has an older one too, image :0). A write is refused when the
// namespace's use after it passes the budget and grows: a create counts the object and the
// revision it is to get; an update its new size in place of the old, plus a revision when its
// injected part is none of its recorded revisions'. Writes that do not grow pass whatever the
// budget.
func TestNamespaceBytes(t *testing.T) {
	big, small, smallOld := padded("team-a", "big", "agent:1", 20000), padded("team-a", "small", "agent:1", 100), padded("team-a", "small", "agent:0", 100)
	stored := []*apps.NamespacedSidecarSet{big, small}
	revisions := []*v1alpha1.SidecarSetRevision{recordedFor(t, big, 1), recordedFor(t, smallOld, 1), recordedFor(t, small, 2)}
	measure := func(n *apps.NamespacedSidecarSet) bytebudget.Object {
		m, err := measureNamespaced(n)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	var use int64
	for _, n := range stored {
		use += measure(n).Bytes
	}
	for _, r := range revisions {
		m, err := bytebudget.MeasureRevision(r)
		if err != nil {
			t.Fatal(err)
		}
		use += m.Bytes
	}

	smallBumped := padded("team-a", "small", "agent:2", 100)
	smallLabelled := padded("team-a", "small", "agent:1", 100)
	smallLabelled.Labels = map[string]string{"team": "a"}
	smallBack := padded("team-a", "small", "agent:0", 100)
	bigShrunk := padded("team-a", "big", "agent:2", 100)
	created := padded("team-a", "new", "agent:1", 1000)
	ghost, ghostLabelled := padded("team-a", "ghost", "agent:1", 3000), padded("team-a", "ghost", "agent:1", 3000)
	ghostLabelled.Labels = map[string]string{"team": "a"}
	elsewhere := padded("team-b", "new", "agent:1", 1000)

	growth := func(old, new *apps.NamespacedSidecarSet, revision bool) int64 {
		g := measure(new).Bytes
		if old != nil {
			g -= measure(old).Bytes
		}
		if revision {
			g += measure(new).RevisionBytes
		}
		return g
	}
	for _, tc := range []struct {
		name     string
		old, new *apps.NamespacedSidecarSet
		// budget is the budget the write fits exactly; one byte less refuses it, unless
		// alwaysPasses (a write that does not grow the namespace).
		budget       int64
		alwaysPasses bool
	}{
		{name: "create: the object and its revision", new: created, budget: use + growth(nil, created, true)},
		{name: "image change: a revision", old: small, new: smallBumped, budget: use + growth(small, smallBumped, true)},
		{name: "label: no revision", old: small, new: smallLabelled, budget: use + growth(small, smallLabelled, false)},
		{name: "back to a recorded revision", old: small, new: smallBack, alwaysPasses: true},
		{name: "the same object", old: small, new: small, alwaysPasses: true},
		{name: "shrinking with a new revision", old: big, new: bigShrunk, alwaysPasses: true},
		{name: "another namespace counts its own", new: elsewhere, budget: growth(nil, elsewhere, true)},
		{name: "an object this replica has not seen: counted as stored", old: ghost, new: ghostLabelled,
			budget: use + growth(nil, ghost, true) + growth(ghost, ghostLabelled, false)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			budgets := []int64{tc.budget, tc.budget - 1}
			if tc.alwaysPasses {
				budgets = []int64{1}
			}
			for i, budget := range budgets {
				p := newBudgetPlugin(t, budget, stored, revisions)
				a := admission.NewAttributesRecord(tc.new, nil, apps.Kind("NamespacedSidecarSet").WithVersion(""), tc.new.Namespace, tc.new.Name,
					apps.Resource("namespacedsidecarsets").WithVersion(""), "", admission.Create, &metav1.CreateOptions{}, false, nil)
				if tc.old != nil {
					a = admission.NewAttributesRecord(tc.new, tc.old, apps.Kind("NamespacedSidecarSet").WithVersion(""), tc.new.Namespace, tc.new.Name,
						apps.Resource("namespacedsidecarsets").WithVersion(""), "", admission.Update, &metav1.UpdateOptions{}, false, nil)
				}
				err := p.Validate(context.Background(), a, nil)
				if refuse := i == 1; !refuse {
					if err != nil {
						t.Errorf("budget %d: refused: %v", budget, err)
					}
					continue
				}
				if !apierrors.IsForbidden(err) {
					t.Fatalf("budget %d, one byte short: got %v, want Forbidden", budget, err)
				}
				for _, want := range []string{"namespace " + tc.new.Namespace + " stores", bytebudget.Flag + "=" + bytebudget.Budget(budget).String()} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("refusal %q does not say %q", err, want)
					}
				}
			}
		})
	}

	t.Run("no budget", func(t *testing.T) {
		p := newBudgetPlugin(t, 0, stored, revisions)
		if err := p.Validate(context.Background(), attributes(created), nil); err != nil {
			t.Errorf("refused: %v", err)
		}
	})
	t.Run("cluster SidecarSets are not counted", func(t *testing.T) {
		p := newBudgetPlugin(t, 1, stored, revisions)
		ss := &apps.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "audit"}, Spec: spec("", "audit")}
		if err := p.Validate(context.Background(), attributes(ss), nil); err != nil {
			t.Errorf("refused: %v", err)
		}
	})
}
