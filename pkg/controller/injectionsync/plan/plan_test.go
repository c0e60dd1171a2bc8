package plan

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

const grace = 10 * time.Second

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// sidecarSet returns a policy-path SidecarSet selecting pods labelled key=name.
func sidecarSet(name, key, image string) *v1alpha1.SidecarSet {
	ss := &v1alpha1.SidecarSet{}
	ss.Name = name
	ss.Generation = 1
	ss.Annotations = map[string]string{"kruise.io/sidecarset-hash": "h-" + image, "kruise.io/sidecarset-hash-without-image": "w"}
	ss.Status.LatestRevision = name + "-1"
	ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{key: name}}
	ss.Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: name + "-c", Image: image}, PodInjectPolicy: v1alpha1.AfterAppContainerType}}
	return ss
}

// toWebhook moves ss to the webhook path (a custom revision is the webhook's alone).
func toWebhook(ss *v1alpha1.SidecarSet) *v1alpha1.SidecarSet {
	ss = ss.DeepCopy()
	ss.Spec.InjectionStrategy.Revision = &v1alpha1.SidecarSetInjectRevision{CustomVersion: new(string)}
	ss.Generation++
	return ss
}

func template() *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "sidecarset-injector", ResourceVersion: "1"},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{{Name: "sidecarinjection.admission.kruise.io"}, {Name: "sidecarinjection-system.admission.kruise.io"}},
	}
}

// cluster is the main cluster's injection objects, by key, as kube-apiserver stores them.
type cluster struct {
	objects map[string]metav1.Object
	rv      int
}

func newCluster() *cluster {
	c := &cluster{objects: map[string]metav1.Object{}}
	c.objects[WebhooksKey("sidecarset-injector")] = template()
	return c
}

// apply does w at now, as kube-apiserver would; it reports whether w was done (its condition held).
func (c *cluster) apply(w Write, now time.Time, failed map[string]bool) bool {
	if !w.If.Holds(failed) {
		failed[w.Key()] = true
		return false
	}
	if w.Op == Delete {
		delete(c.objects, w.Key())
		return true
	}
	c.rv++
	var o metav1.Object
	switch x := w.Object.(type) {
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		o = x.DeepCopy()
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		o = x.DeepCopy()
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		o = x.DeepCopy()
	}
	o.SetResourceVersion(strconv.Itoa(c.rv))
	if w.Op == Create {
		o.SetCreationTimestamp(metav1.NewTime(now.Truncate(time.Second)))
	}
	o.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "sidecarset-apiserver", Time: &metav1.Time{Time: now.Truncate(time.Second)}}})
	c.objects[w.Key()] = o
	return true
}

// input is the plan's input on c at now, each object seen as it is since since(key).
func (c *cluster) input(sets []*v1alpha1.SidecarSet, now time.Time, since map[string]time.Time) Input {
	in := Input{SidecarSets: sets, Now: now, Grace: grace, Since: since, Version: "v1"}
	for _, key := range sortedKeys(c.objects) {
		switch o := c.objects[key].(type) {
		case *admissionregistrationv1.MutatingAdmissionPolicy:
			in.Policies = append(in.Policies, o)
		case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
			in.Bindings = append(in.Bindings, o)
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			switch o.Name {
			case "sidecarset-injector":
				in.Template = o
			case IntakeWebhooks("sidecarset-injector"):
				in.Intake = o
			default:
				in.Active = o
			}
		}
	}
	return in
}

// longAgo has every object of c as it is for an hour.
func (c *cluster) longAgo(now time.Time) map[string]time.Time {
	out := map[string]time.Time{}
	for key, o := range c.objects {
		out[key] = now.Add(-time.Hour)
		if _, ok := o.(*admissionregistrationv1.MutatingWebhookConfiguration); ok {
			out[SelectiveWebhooksKey(o.GetName())] = now.Add(-time.Hour)
		}
	}
	return out
}

// settled returns a cluster where every object sets needs is in place, loaded long ago.
func settled(t *testing.T, sets ...*v1alpha1.SidecarSet) *cluster {
	t.Helper()
	c := newCluster()
	for i := 0; i < 5; i++ {
		r, err := Sync(c.input(sets, t0, c.longAgo(t0)))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Writes) == 0 {
			return c
		}
		failed := map[string]bool{}
		for _, w := range r.Writes {
			c.apply(w, t0.Add(-time.Hour), failed)
		}
	}
	t.Fatal("the plan does not converge")
	return nil
}

// summary is what the tables compare of a Result.
type summary struct {
	Writes       []string
	Held         []string
	Settling     []string
	Withdrawing  []string
	RecheckAfter time.Duration
}

func summarize(r Result) summary {
	s := summary{Held: sortedKeys(r.Held), Settling: sortedKeys(r.Settling), Withdrawing: r.Withdrawing, RecheckAfter: r.RecheckAfter}
	for _, w := range r.Writes {
		line := fmt.Sprintf("%s %s", w.Op, w.Key())
		if w.If != nil {
			line += fmt.Sprintf(" if %s failed=%v", w.If.Key, w.If.Failed)
		}
		s.Writes = append(s.Writes, line)
	}
	return s
}

const (
	app      = "sidecarsets-app-v0"
	active   = "MutatingWebhookConfiguration/sidecarset-injector-active"
	intake   = "MutatingWebhookConfiguration/sidecarset-injector-intake"
	appP     = "MutatingAdmissionPolicy/" + app
	appB     = "MutatingAdmissionPolicyBinding/" + app
	teamName = "sidecarsets-team-v0"
)

func TestSync(t *testing.T) {
	a, b := sidecarSet("a", "app", "v1"), sidecarSet("b", "app", "v1")
	// moved: a leaves the group policy for the webhook; the webhooks already select its pods
	// (applied is what the previous pass wrote), as observed since webhooksAge.
	movedFrom := func(before, sets []*v1alpha1.SidecarSet, webhooksAge time.Duration, mutate func(*Input)) func(*testing.T) Input {
		return func(t *testing.T) Input {
			c := settled(t, before...)
			first, err := Sync(c.input(sets, t0, c.longAgo(t0)))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range first.Writes {
				if w.Kind == Webhooks {
					c.apply(w, t0, map[string]bool{})
				}
			}
			since := c.longAgo(t0)
			since[Key(Webhooks, "sidecarset-injector-active")] = t0.Add(-webhooksAge)
			in := c.input(sets, t0, since)
			if mutate != nil {
				mutate(&in)
			}
			return in
		}
	}
	moved := func(webhooksAge time.Duration, mutate func(*Input)) func(*testing.T) Input {
		return movedFrom([]*v1alpha1.SidecarSet{a, b}, []*v1alpha1.SidecarSet{toWebhook(a), b}, webhooksAge, mutate)
	}
	for _, tc := range []struct {
		name string
		in   func(*testing.T) Input
		want summary
	}{{
		name: "first pass: the webhooks, then the policy, then its binding once the policy is written",
		in:   func(*testing.T) Input { return newCluster().input([]*v1alpha1.SidecarSet{a}, t0, nil) },
		want: summary{Writes: []string{"Create " + active, "Create " + intake, "Create " + appP, "Create " + appB + " if " + appP + " failed=false"}, RecheckAfter: grace},
	}, {
		name: "a SidecarSet without a recorded revision: the webhooks serve it, held until its policy does",
		in: func(*testing.T) Input {
			fresh := a.DeepCopy()
			fresh.Status.LatestRevision = ""
			return newCluster().input([]*v1alpha1.SidecarSet{fresh}, t0, nil)
		},
		want: summary{Writes: []string{"Create " + active, "Create " + intake}, Held: []string{"a"}},
	}, {
		name: "settled: nothing to write",
		in: func(t *testing.T) Input {
			c := settled(t, a, b)
			return c.input([]*v1alpha1.SidecarSet{a, b}, t0, c.longAgo(t0))
		},
		want: summary{},
	}, {
		name: "withdrawal waits while the webhooks that take over are written",
		in: func(t *testing.T) Input {
			c := settled(t, a, b)
			return c.input([]*v1alpha1.SidecarSet{toWebhook(a), b}, t0, c.longAgo(t0))
		},
		want: summary{Writes: []string{"Update " + active}, Held: []string{"a", "b"}, Settling: []string{"a"}, Withdrawing: []string{app}, RecheckAfter: grace},
	}, {
		name: "withdrawal waits until the webhooks have been in place for the grace period",
		in:   moved(4*time.Second, nil),
		want: summary{Held: []string{"a", "b"}, Settling: []string{"a"}, Withdrawing: []string{app}, RecheckAfter: 6 * time.Second},
	}, {
		name: "withdrawal after the grace period: the policy drops a, which settles",
		in:   moved(grace, nil),
		want: summary{Writes: []string{"Update " + appP}, Settling: []string{"a"}, RecheckAfter: grace},
	}, {
		name: "a new leader's first look does not trust the webhooks' last write",
		in: moved(time.Hour, func(in *Input) {
			var tr Tracker
			in.Since = tr.Observe(in.Now, Observations(in.Now, in.Policies, in.Bindings, in.Active))
		}),
		want: summary{Held: []string{"a", "b"}, Settling: []string{"a"}, Withdrawing: []string{app}, RecheckAfter: grace},
	}, {
		name: "the last member leaves: policy and binding are deleted only after the grace period",
		in: func(t *testing.T) Input {
			c := settled(t, a)
			return c.input([]*v1alpha1.SidecarSet{toWebhook(a)}, t0, c.longAgo(t0))
		},
		want: summary{Writes: []string{"Update " + active}, Held: []string{"a"}, Settling: []string{"a"}, Withdrawing: []string{app}, RecheckAfter: grace},
	}, {
		name: "the last member leaves: after the grace period, its policy and binding are deleted",
		in:   movedFrom([]*v1alpha1.SidecarSet{a}, []*v1alpha1.SidecarSet{toWebhook(a)}, grace, nil),
		want: summary{Writes: []string{"Delete " + appP, "Delete " + appB}, Settling: []string{"a"}},
	}, {
		name: "without webhooks to wait for, withdrawal is at once",
		in: moved(0, func(in *Input) {
			in.Template = nil
		}),
		want: summary{Writes: []string{"Update " + appP}, Settling: []string{"a"}, RecheckAfter: grace},
	}, {
		name: "without a grace period, withdrawal is at once",
		in: func(t *testing.T) Input {
			c := settled(t, a, b)
			in := c.input([]*v1alpha1.SidecarSet{toWebhook(a), b}, t0, c.longAgo(t0))
			in.Grace = 0
			return in
		},
		want: summary{Writes: []string{"Update " + active, "Update " + appP}, Settling: []string{"a"}},
	}, {
		name: "a binding whose policy is missing waits for it, and goes if it is not written",
		in: func(t *testing.T) Input {
			c := settled(t, a)
			delete(c.objects, appP)
			return c.input([]*v1alpha1.SidecarSet{a}, t0, c.longAgo(t0))
		},
		want: summary{Writes: []string{"Update " + active, "Create " + appP, "Delete " + appB + " if " + appP + " failed=true"}, RecheckAfter: grace},
	}, {
		name: "a changed SidecarSet settles: kube-apiserver may run its previous policy",
		in: func(t *testing.T) Input {
			c := settled(t, a, b)
			return c.input([]*v1alpha1.SidecarSet{sidecarSet("a", "app", "v2"), b}, t0, c.longAgo(t0))
		},
		want: summary{Writes: []string{"Update " + active, "Update " + appP}, Settling: []string{"a"}, RecheckAfter: grace},
	}, {
		name: "webhooks an earlier version expanded into the template go first, and the active ones wait for that",
		in: func(t *testing.T) Input {
			c := newCluster()
			tmpl := c.objects[WebhooksKey("sidecarset-injector")].(*admissionregistrationv1.MutatingWebhookConfiguration)
			tmpl.Webhooks = append(tmpl.Webhooks, admissionregistrationv1.MutatingWebhook{Name: "1.sidecarinjection.admission.kruise.io"})
			in := c.input([]*v1alpha1.SidecarSet{a}, t0, nil)
			in.WebhookOnly = true
			return in
		},
		want: summary{Writes: []string{"Update MutatingWebhookConfiguration/sidecarset-injector",
			"Create " + active + " if MutatingWebhookConfiguration/sidecarset-injector failed=false", "Create " + intake}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Sync(tc.in(t))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, summarize(r), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNext: a failed write holds the SidecarSets it serves at the generation applied before;
// settling ends a grace period after the writes.
func TestNext(t *testing.T) {
	a, team := sidecarSet("a", "app", "v1"), sidecarSet("t", "team", "v1")
	c := newCluster()
	r, err := Sync(c.input([]*v1alpha1.SidecarSet{a, team}, t0, nil))
	if err != nil {
		t.Fatal(err)
	}
	prev := State{Applied: map[string]int64{"t": 0}, Settling: map[string]time.Time{"gone": t0, "x": t0.Add(time.Second)}}
	failed := map[string]bool{Key(Policy, teamName): true}
	for _, w := range r.Writes {
		c.apply(w, t0, failed)
	}
	if diff := cmp.Diff(map[string]bool{"t": true}, r.HeldAfter(failed)); diff != "" {
		t.Errorf("held (-want +got):\n%s", diff)
	}
	if _, ok := c.objects[Key(Binding, teamName)]; ok {
		t.Error("the binding of a policy that was not written was created")
	}
	want := State{Applied: map[string]int64{"a": 1, "t": 0}, Settling: map[string]time.Time{"x": t0.Add(time.Second)}}
	if diff := cmp.Diff(want, r.Next(prev, failed, t0)); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}

// TestTracker: the first look trusts the objects' last write (rounded up to the second they are
// stored in); anything that appears after a first look, even a first look at nothing, was written
// since and is seen only from now; a write is seen from when it was made; a failed one is forgotten.
func TestTracker(t *testing.T) {
	now := t0
	written := now.Add(-2500 * time.Millisecond) // 09:59:57.5, stored as 09:59:57
	p := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: "1",
		CreationTimestamp: metav1.NewTime(written.Truncate(time.Second))}}
	obs := func(ps ...*admissionregistrationv1.MutatingAdmissionPolicy) []Observation {
		return Observations(now, ps, nil, nil)
	}
	for _, tc := range []struct {
		name   string
		before func(*Tracker)
		want   time.Time
	}{
		{"first look: last write, rounded up", func(*Tracker) {}, now.Add(-2 * time.Second)},
		{"after a first look at nothing: now", func(tr *Tracker) { tr.Observe(now.Add(-time.Minute), nil) }, now},
		{"seen before at that version: first sight", func(tr *Tracker) { tr.Observe(now.Add(-time.Minute), obs(p)) }, now.Add(-2 * time.Second)},
		{"seen at another version: now", func(tr *Tracker) {
			old := p.DeepCopy()
			old.ResourceVersion = "0"
			tr.Observe(now.Add(-time.Minute), obs(old))
		}, now},
		{"written: when written", func(tr *Tracker) {
			tr.Observe(now.Add(-time.Minute), nil)
			tr.Wrote(PolicyKey("p"), "1", now.Add(-time.Second))
		}, now.Add(-time.Second)},
		{"written, then failed: now", func(tr *Tracker) {
			tr.Observe(now.Add(-time.Minute), nil)
			tr.Wrote(PolicyKey("p"), "1", now.Add(-time.Second))
			tr.Forget(PolicyKey("p"))
		}, now},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr Tracker
			tc.before(&tr)
			if got := tr.Observe(now, obs(p))[PolicyKey("p")]; !got.Equal(tc.want) {
				t.Errorf("seen since %v, want %v", got, tc.want)
			}
		})
	}
	// The active webhooks are never trusted on a first look.
	var tr Tracker
	w := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "w-active", ResourceVersion: "1",
		CreationTimestamp: metav1.NewTime(written.Truncate(time.Second))}}
	if got := tr.Observe(now, Observations(now, nil, nil, w))[WebhooksKey("w-active")]; !got.Equal(now) {
		t.Errorf("webhooks seen since %v on a first look, want now", got)
	}
}
