package injectionsync

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sidecarset/apiserver/pkg/admission/policy"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	appsfake "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned/fake"
	appsinformers "github.com/sidecarset/apiserver/pkg/generated/informers/externalversions"
)

func sidecarSet(name, image string) *v1alpha1.SidecarSet {
	ss := &v1alpha1.SidecarSet{}
	ss.Name = name
	ss.Annotations = map[string]string{"kruise.io/sidecarset-hash": "h-" + image, "kruise.io/sidecarset-hash-without-image": "w"}
	ss.Status.LatestRevision = name + "-1"
	ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
	ss.Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: name + "-c", Image: image}, PodInjectPolicy: v1alpha1.AfterAppContainerType}}
	return ss
}

func webhookConfig() *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "sidecarset-injector"},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{{Name: "sidecarinjection.admission.kruise.io"}, {Name: "sidecarinjection-system.admission.kruise.io"}},
	}
}

type fixture struct {
	kube  *fake.Clientset
	apps  *appsfake.Clientset
	ctrl  *Controller
	clock *clocktesting.FakeClock
	stop  chan struct{}
}

// newFixture starts a controller on fake clients holding objs (main cluster) and sets.
func newFixture(t *testing.T, webhookOnly bool, sets []*v1alpha1.SidecarSet, objs ...any) *fixture {
	t.Helper()
	f := &fixture{kube: fake.NewClientset(), apps: appsfake.NewSimpleClientset(), clock: clocktesting.NewFakeClock(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)), stop: make(chan struct{})}
	t.Cleanup(func() { close(f.stop) })
	ctx := context.Background()
	for _, ss := range sets {
		if _, err := f.apps.AppsV1alpha1().SidecarSets().Create(ctx, ss, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ar := f.kube.AdmissionregistrationV1()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *admissionregistrationv1.MutatingAdmissionPolicy:
			_, err = ar.MutatingAdmissionPolicies().Create(ctx, o, metav1.CreateOptions{})
		case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
			_, err = ar.MutatingAdmissionPolicyBindings().Create(ctx, o, metav1.CreateOptions{})
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			_, err = ar.MutatingWebhookConfigurations().Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	kinf := kubeinformers.NewSharedInformerFactory(f.kube, 0)
	ainf := appsinformers.NewSharedInformerFactory(f.apps, 0)
	var err error
	f.ctrl, err = New(Options{
		Kube: f.kube, SidecarSets: ainf.Apps().V1alpha1().SidecarSets(),
		Policies:             kinf.Admissionregistration().V1().MutatingAdmissionPolicies(),
		Bindings:             kinf.Admissionregistration().V1().MutatingAdmissionPolicyBindings(),
		Webhooks:             kinf.Admissionregistration().V1().MutatingWebhookConfigurations(),
		WebhookConfiguration: "sidecarset-injector",
		Grace:                10 * time.Second, Clock: f.clock, WebhookOnly: webhookOnly, Version: "v1.2.3",
	})
	if err != nil {
		t.Fatal(err)
	}
	kinf.Start(f.stop)
	ainf.Start(f.stop)
	if !cache.WaitForCacheSync(f.stop, f.ctrl.synced...) {
		t.Fatal("caches not synced")
	}
	return f
}

// reconcile runs one reconcile on the current informer state, after the informers caught up.
func (f *fixture) reconcile(t *testing.T) {
	t.Helper()
	time.Sleep(100 * time.Millisecond)
	if err := f.ctrl.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) policies(t *testing.T) map[string]*admissionregistrationv1.MutatingAdmissionPolicy {
	t.Helper()
	list, err := f.kube.AdmissionregistrationV1().MutatingAdmissionPolicies().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*admissionregistrationv1.MutatingAdmissionPolicy{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// webhooks describes the injection webhooks of the application namespaces, one line each:
// "objectSelector | match condition". Every class of namespace has the same webhooks.
func (f *fixture) webhooks(t *testing.T) string {
	t.Helper()
	cfg, err := f.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), ActiveWebhooks("sidecarset-injector"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	classes := map[string][]string{}
	for _, w := range cfg.Webhooks {
		sel, err := metav1.LabelSelectorAsSelector(w.ObjectSelector)
		if err != nil {
			t.Fatal(err)
		}
		line := sel.String() + " | "
		if len(w.MatchConditions) == 1 {
			line += w.MatchConditions[0].Expression
		}
		class := w.Name
		if _, template, ok := strings.Cut(w.Name, "."); ok && strings.Trim(w.Name[:len(w.Name)-len(template)-1], "0123456789") == "" {
			class = template
		}
		classes[class] = append(classes[class], line)
	}
	app, system := strings.Join(classes["sidecarinjection.admission.kruise.io"], "\n"), strings.Join(classes["sidecarinjection-system.admission.kruise.io"], "\n")
	if app != system || len(classes) != 2 {
		t.Fatalf("the classes of namespace have different webhooks: %q", classes)
	}
	return app
}

func TestReconcileCreatesRepairsAndDeletes(t *testing.T) {
	leftover := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "sidecarset-gone",
		Labels: map[string]string{apps.ManagedByLabel: apps.ManagedByValue}}}
	foreign := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses"}}
	f := newFixture(t, false, []*v1alpha1.SidecarSet{sidecarSet("a", "busybox:1"), sidecarSet("b", "busybox:1")}, leftover, foreign, webhookConfig())
	f.reconcile(t)

	got := f.policies(t)
	// a and b select by the same label key: one group policy injects both.
	for _, name := range []string{"sidecarsets-app-v0", "someone-elses"} {
		if got[name] == nil {
			t.Errorf("policy %s missing", name)
		}
	}
	if got["sidecarset-gone"] != nil {
		t.Error("the leftover policy of a deleted SidecarSet was kept")
	}
	bindings, _ := f.kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().List(context.Background(), metav1.ListOptions{})
	if len(bindings.Items) != 1 {
		t.Errorf("%d bindings, want 1", len(bindings.Items))
	}
	if recs := got["sidecarsets-app-v0"].Annotations[apps.SidecarSetsAnnotation]; !contains(recs, `"a":`) || !contains(recs, `"b":`) {
		t.Errorf("the group policy does not record its SidecarSets: %s", recs)
	}
	// Within the grace period the webhook serves the new policy's pods: by label alone.
	if w := f.webhooks(t); w != "app in (a,b) | " {
		t.Errorf("webhooks in the grace period: %q", w)
	}

	// A hand edit is put back; an unchanged SidecarSet keeps its stamp.
	edited := got["sidecarsets-app-v0"].DeepCopy()
	stamp := edited.Annotations[apps.SidecarSetsAnnotation]
	edited.Spec.Mutations[0].JSONPatch.Expression = "[]"
	if _, err := f.kube.AdmissionregistrationV1().MutatingAdmissionPolicies().Update(context.Background(), edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(time.Hour)
	f.reconcile(t)
	repaired := f.policies(t)["sidecarsets-app-v0"]
	if repaired.Spec.Mutations[0].JSONPatch.Expression == "[]" {
		t.Error("the edited policy was not repaired")
	}
	if repaired.Annotations[apps.SidecarSetsAnnotation] != stamp {
		t.Errorf("stamps changed from %s to %s for unchanged SidecarSets", stamp, repaired.Annotations[apps.SidecarSetsAnnotation])
	}
	// While a policy is being repaired, and for the grace period after the controller first sees it
	// as planned, the webhook serves its pods; afterwards it receives, of the pods with the key,
	// only those that declare a sidecar's name.
	if w := f.webhooks(t); !strings.HasPrefix(w, "app in (a") {
		t.Errorf("webhooks while repairing: %q", w)
	}
	f.reconcile(t) // sees the repaired policy: its grace period starts
	f.clock.Step(time.Minute)
	f.reconcile(t)
	if w := f.webhooks(t); !strings.HasPrefix(w, "app in (a,b) | object.spec.containers.exists(") || contains(w, "object.metadata") {
		t.Errorf("webhooks after the grace period: %q", w)
	}
}

func TestReconcileWebhookOnly(t *testing.T) {
	owned := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "sidecarset-a",
		Labels: map[string]string{apps.ManagedByLabel: apps.ManagedByValue}}}
	f := newFixture(t, true, []*v1alpha1.SidecarSet{sidecarSet("a", "busybox:1")}, owned, webhookConfig())
	f.reconcile(t)
	if got := f.policies(t); len(got) != 0 {
		t.Errorf("webhook mode keeps %d policies", len(got))
	}
	if w := f.webhooks(t); w != "app in (a) | " {
		t.Errorf("webhook mode: the webhook should select the SidecarSet's pods by label: %q", w)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestReadyAfterApply(t *testing.T) {
	ss := sidecarSet("a", "busybox:1")
	ss.Generation = 3
	f := newFixture(t, false, []*v1alpha1.SidecarSet{ss}, webhookConfig())
	if f.ctrl.Ready(ss) {
		t.Fatal("ready before anything was applied")
	}
	f.reconcile(t)
	if !f.ctrl.Ready(ss) {
		t.Fatal("not ready after the policy and the webhook condition were applied")
	}
	newer := ss.DeepCopy()
	newer.Generation = 4
	if f.ctrl.Ready(newer) {
		t.Fatal("ready for a generation not applied yet")
	}
}

// TestReadyAfterReplacedPolicySettles: a SidecarSet whose policy was updated, or deleted because it
// moved to the webhook, is ready only once kube-apiserver has had the grace period to drop the
// previous policy; a first policy is ready at once (the webhook serves it meanwhile).
func TestReadyAfterReplacedPolicySettles(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*v1alpha1.SidecarSet)
		graces int // grace periods until ready
	}{
		{"updated", func(ss *v1alpha1.SidecarSet) { ss.Spec.Containers[0].Image = "busybox:2" }, 1},
		// The policy is deleted once the webhook that takes the SidecarSet over has been in place
		// for the grace period, and kube-apiserver may run it for one more.
		{"moved to the webhook", func(ss *v1alpha1.SidecarSet) {
			ss.Spec.InjectionStrategy.Revision = &v1alpha1.SidecarSetInjectRevision{CustomVersion: new(string)}
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := sidecarSet("a", "busybox:1")
			ss.Generation = 1
			f := newFixture(t, false, []*v1alpha1.SidecarSet{ss}, webhookConfig())
			f.reconcile(t)
			if !f.ctrl.Ready(ss) {
				t.Fatal("a first policy is not ready once applied")
			}
			changed := ss.DeepCopy()
			tc.change(changed)
			changed.Generation = 2
			if _, err := f.apps.AppsV1alpha1().SidecarSets().Update(context.Background(), changed, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			f.reconcile(t)
			if f.ctrl.Ready(changed) {
				t.Fatal("ready while kube-apiserver may still run the previous policy")
			}
			for i := 1; i < tc.graces; i++ {
				f.clock.Step(10 * time.Second)
				f.reconcile(t)
				if f.ctrl.Ready(changed) {
					t.Fatalf("ready after %d grace periods", i)
				}
			}
			f.clock.Step(10 * time.Second)
			if !f.ctrl.Ready(changed) {
				t.Fatalf("not ready after %d grace periods", tc.graces)
			}
		})
	}
}

// TestRunAgainForANewTerm: a replica that loses the controller Lease and wins it again runs the
// controller for a second term, which must react to changes as the first did; each term reports
// its own first plan (Planned).
func TestRunAgainForANewTerm(t *testing.T) {
	first := sidecarSet("a", "busybox:1")
	first.Generation = 1
	f := newFixture(t, false, []*v1alpha1.SidecarSet{first}, webhookConfig())
	for term, ss := range []*v1alpha1.SidecarSet{first, sidecarSet("b", "busybox:1")} {
		ss.Generation = 1
		if f.ctrl.Planned() {
			t.Fatalf("term %d: planned before it started", term+1)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); f.ctrl.Run(ctx) }()
		if term > 0 {
			if _, err := f.apps.AppsV1alpha1().SidecarSets().Create(context.Background(), ss, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return f.ctrl.Ready(ss), nil
		})
		if !f.ctrl.Planned() {
			t.Errorf("term %d: not planned once %s is ready", term+1, ss.Name)
		}
		cancel()
		<-done
		if err != nil {
			t.Fatalf("term %d: SidecarSet %s was never applied", term+1, ss.Name)
		}
	}
}

// TestRefusedWriteIsIsolated: a policy whose write fails (its name is held by an object this
// server does not own, so the create is refused) holds back only the SidecarSets it serves: the
// other SidecarSets' objects are written and they are ready; the held one is not ready until its
// policy is written, and the webhook keeps selecting its pods meanwhile.
func TestRefusedWriteIsIsolated(t *testing.T) {
	sets := []*v1alpha1.SidecarSet{sidecarSet("a", "v1"), sidecarSet("b", "v1")}
	sets[1].Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}
	foreign := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "sidecarsets-team-v0"}}
	f := newFixture(t, false, sets, webhookConfig(), foreign)
	time.Sleep(100 * time.Millisecond)
	if err := f.ctrl.Reconcile(context.Background()); err == nil || !strings.Contains(err.Error(), "does not own") {
		t.Fatalf("reconcile: %v; want the refused write reported", err)
	}
	if _, ok := f.policies(t)["sidecarsets-app-v0"]; !ok {
		t.Error("the other SidecarSet's policy was not written")
	}
	bindings, _ := f.kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().List(context.Background(), metav1.ListOptions{})
	if len(bindings.Items) != 1 || bindings.Items[0].Name != "sidecarsets-app-v0" {
		t.Errorf("bindings %v, want only the other SidecarSet's", bindings.Items)
	}
	if !f.ctrl.Ready(sets[0]) || f.ctrl.Ready(sets[1]) {
		t.Errorf("ready: a %v, b %v; want a only", f.ctrl.Ready(sets[0]), f.ctrl.Ready(sets[1]))
	}
	if w := f.webhooks(t); !strings.Contains(w, "team") {
		t.Errorf("the webhook no longer selects the held SidecarSet's pods:\n%s", w)
	}
	if err := f.kube.AdmissionregistrationV1().MutatingAdmissionPolicies().Delete(context.Background(), foreign.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t)
	if !f.ctrl.Ready(sets[1]) {
		t.Error("b is not ready once its policy could be written")
	}
}

// TestOwner: every policy and binding carries the owner reference (the garbage collector deletes
// them with the owner), follows a new owner, and nothing is written while the owner is gone.
func TestOwner(t *testing.T) {
	f := newFixture(t, false, []*v1alpha1.SidecarSet{sidecarSet("a", "v1")}, webhookConfig())
	owner := &metav1.OwnerReference{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService", Name: "v1alpha1.apps.kruise.io", UID: "uid-1"}
	var ownerErr error
	f.ctrl.opts.Owner = func(context.Context) (*metav1.OwnerReference, error) { return owner, ownerErr }
	owned := func() []metav1.OwnerReference {
		t.Helper()
		p := f.policies(t)["sidecarsets-app-v0"]
		b, err := f.kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Get(context.Background(), "sidecarsets-app-v0", metav1.GetOptions{})
		if p == nil || err != nil {
			t.Fatalf("policy %v, binding: %v", p, err)
		}
		if !reflect.DeepEqual(p.OwnerReferences, b.OwnerReferences) {
			t.Errorf("policy owners %v, binding owners %v", p.OwnerReferences, b.OwnerReferences)
		}
		return p.OwnerReferences
	}
	f.reconcile(t)
	if got := owned(); len(got) != 1 || got[0].UID != "uid-1" {
		t.Fatalf("owners %v", got)
	}
	owner = &metav1.OwnerReference{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService", Name: "v1alpha1.apps.kruise.io", UID: "uid-2"}
	f.reconcile(t)
	if got := owned(); len(got) != 1 || got[0].UID != "uid-2" {
		t.Fatalf("owners after the owner was re-created: %v", got)
	}
	ownerErr = apierrors.NewNotFound(schema.GroupResource{Group: "apiregistration.k8s.io", Resource: "apiservices"}, "v1alpha1.apps.kruise.io")
	before := len(f.kube.Actions())
	time.Sleep(100 * time.Millisecond)
	if err := f.ctrl.Reconcile(context.Background()); !apierrors.IsNotFound(err) {
		t.Errorf("reconcile without the owner: %v", err)
	}
	if after := len(f.kube.Actions()); after != before {
		t.Errorf("%d writes while the owner is gone", after-before)
	}
}

// TestNewLeaderKnowsLoadedPolicies: a controller that starts (a new leader) and finds the policies
// and bindings it plans already in the cluster, last written long ago, knows kube-apiserver runs
// them: the webhook does not widen to their SidecarSets' pods for a grace period.
func TestNewLeaderKnowsLoadedPolicies(t *testing.T) {
	sets := []*v1alpha1.SidecarSet{sidecarSet("a", "busybox:1")}
	first := newFixture(t, false, sets, webhookConfig())
	first.reconcile(t)
	written := first.policies(t)["sidecarsets-app-v0"]
	binding, err := first.kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Get(context.Background(), "sidecarsets-app-v0", metav1.GetOptions{})
	if written == nil || err != nil {
		t.Fatalf("policy %v, binding %v", written, err)
	}
	for _, tc := range []struct {
		name   string
		age    time.Duration
		widens bool
	}{{"written long ago", time.Minute, false}, {"written just now", 0, true}} {
		t.Run(tc.name, func(t *testing.T) {
			p, b := written.DeepCopy(), binding.DeepCopy()
			p.ResourceVersion, b.ResourceVersion = "", ""
			f := newFixture(t, false, sets, webhookConfig(), p, b) // written now, as their managed fields say
			f.clock.SetTime(time.Now().Add(tc.age))                // the new leader starts age later
			f.reconcile(t)
			if w := f.webhooks(t); (w == "app in (a) | ") != tc.widens {
				t.Errorf("webhooks after the new leader's first reconcile: %q (widened for the grace period: want %v)", w, tc.widens)
			}
		})
	}
}

// TestWithdrawalWaitsForWebhooks: a policy that would stop injecting a SidecarSet stays until the
// webhook that takes the SidecarSet over has been in place for the grace period (kube-apiserver
// loads each asynchronously), then goes.
func TestWithdrawalWaitsForWebhooks(t *testing.T) {
	ss := sidecarSet("a", "busybox:1")
	f := newFixture(t, false, []*v1alpha1.SidecarSet{ss}, webhookConfig())
	for i := 0; i < 3; i++ { // created, first seen, loaded
		f.reconcile(t)
		f.clock.Step(10 * time.Second)
	}
	if len(f.policies(t)) != 1 || !strings.HasPrefix(f.webhooks(t), "app in (a) | object.spec.containers.exists") {
		t.Fatalf("%d policies, webhooks %q: want one policy, and the webhook for declared names only", len(f.policies(t)), f.webhooks(t))
	}
	moved := ss.DeepCopy()
	moved.Spec.InjectionStrategy.Revision = &v1alpha1.SidecarSetInjectRevision{CustomVersion: new(string)}
	if _, err := f.apps.AppsV1alpha1().SidecarSets().Update(context.Background(), moved, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		after    time.Duration
		policies int
	}{{0, 1}, {5 * time.Second, 1}, {5 * time.Second, 0}} {
		f.clock.Step(step.after)
		f.reconcile(t)
		if got := len(f.policies(t)); got != step.policies || f.webhooks(t) != "app in (a) | " {
			t.Errorf("%v later: %d policies (want %d), webhooks %q", step.after, got, step.policies, f.webhooks(t))
		}
	}
}

// TestActiveWebhooksFromTemplate: the server writes its selection into its own configuration,
// rendered from the shipped template, which it leaves as applied (but for webhooks an earlier
// version expanded into it): applying the template again changes nothing that injects.
func TestActiveWebhooksFromTemplate(t *testing.T) {
	tmpl := webhookConfig()
	legacy := tmpl.Webhooks[0]
	legacy.Name = "1." + legacy.Name
	legacy.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "old"}}
	tmpl.Webhooks = append(tmpl.Webhooks, legacy)
	f := newFixture(t, true, []*v1alpha1.SidecarSet{sidecarSet("a", "busybox:1")}, tmpl)
	f.reconcile(t)
	ar := f.kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	got, err := ar.Get(context.Background(), "sidecarset-injector", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Webhooks) != 2 || got.Webhooks[0].ObjectSelector != nil || got.Webhooks[1].ObjectSelector != nil {
		t.Errorf("template after reconcile: %+v, want its two webhooks as applied", got.Webhooks)
	}
	active, err := ar.Get(context.Background(), ActiveWebhooks("sidecarset-injector"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if active.Labels[apps.ManagedByLabel] != apps.ManagedByValue || active.Annotations[apps.ServerVersionAnnotation] != "v1.2.3" {
		t.Errorf("active configuration labels %v, annotations %v; want managed-by and the server's version", active.Labels, active.Annotations)
	}
	// A server of another version takes over: it records its version, and nothing else changes.
	f.ctrl.opts.Version = "v1.3.0"
	f.reconcile(t)
	if active, err = ar.Get(context.Background(), active.Name, metav1.GetOptions{}); err != nil || active.Annotations[apps.ServerVersionAnnotation] != "v1.3.0" {
		t.Errorf("after an upgrade: annotations %v (%v), want the new version", active.Annotations, err)
	}
	if w := f.webhooks(t); w != "app in (a) | " {
		t.Errorf("active webhooks %q", w)
	}
}

// TestInjectionIsThePlan: the path reported for a SidecarSet is the one the last plan of the term
// gave it, and nothing between terms.
func TestInjectionIsThePlan(t *testing.T) {
	for _, tc := range []struct {
		name        string
		webhookOnly bool
		path        apps.InjectionPath
		policyName  string
	}{{"policy mode", false, apps.PathPolicy, "sidecarsets-app-v0"}, {"webhook mode", true, apps.PathWebhook, ""}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.webhookOnly, []*v1alpha1.SidecarSet{sidecarSet("a", "busybox:1")}, webhookConfig())
			if _, ok := f.ctrl.Injection("a"); ok {
				t.Fatal("a path before any plan")
			}
			f.reconcile(t)
			inj, ok := f.ctrl.Injection("a")
			if !ok || inj.Path != string(tc.path) || inj.Policy != tc.policyName {
				t.Errorf("injection %+v (%v), want path %s policy %q", inj, ok, tc.path, tc.policyName)
			}
			if _, ok := f.ctrl.Injection("b"); ok {
				t.Error("a path for a SidecarSet the plan did not see")
			}
		})
	}
}

// TestOnChange: the SidecarSets whose path a plan changes are reported (every one on the first
// plan), so that their conditions are written again; a plan that changes nothing reports none.
func TestOnChange(t *testing.T) {
	a, b := sidecarSet("a", "busybox:1"), sidecarSet("b", "busybox:1")
	a.Generation, b.Generation = 1, 1
	f := newFixture(t, false, []*v1alpha1.SidecarSet{a, b}, webhookConfig())
	var got [][]string
	f.ctrl.OnChange(func(names ...string) { got = append(got, names) })
	f.reconcile(t)
	f.reconcile(t)
	moved := b.DeepCopy()
	moved.Spec.InjectionStrategy.Revision = &v1alpha1.SidecarSetInjectRevision{CustomVersion: new(string)}
	moved.Generation = 2
	if _, err := f.apps.AppsV1alpha1().SidecarSets().Update(context.Background(), moved, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t)
	want := [][]string{{"a", "b"}, {"b"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("reported %v, want %v", got, want)
	}
}

// TestPolicyWritesThatOnlyAddWait: after a policy write that kube-apiserver took 300 ms to admit,
// a write that only adds a SidecarSet to a policy waits writeFactor times that (the webhook
// injects the SidecarSet meanwhile, and it is not applied yet), while a write that changes what a
// policy injects goes at once.
func TestPolicyWritesThatOnlyAddWait(t *testing.T) {
	f := newFixture(t, false, []*v1alpha1.SidecarSet{sidecarSet("a", "busybox:1")}, webhookConfig())
	const admission = 300 * time.Millisecond
	admitting := func(clienttesting.Action) (bool, runtime.Object, error) {
		f.clock.Step(admission) // kube-apiserver compiles the policy
		return false, nil, nil
	}
	f.kube.PrependReactor("create", "mutatingadmissionpolicies", admitting)
	f.kube.PrependReactor("update", "mutatingadmissionpolicies", admitting)
	members := func() string {
		p := f.policies(t)["sidecarsets-app-v0"]
		if p == nil {
			return "none"
		}
		return strings.Join(sets.List(sets.KeySet(policy.Members(p))), ",")
	}
	f.reconcile(t) // a's policy is created at once (nothing written before)
	if got := members(); got != "a" {
		t.Fatalf("members after the first write: %s, want a", got)
	}

	f.clock.Step(time.Second)
	b := sidecarSet("b", "busybox:1")
	b.Generation = 1
	if _, err := f.apps.AppsV1alpha1().SidecarSets().Create(context.Background(), b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t)
	if got := members(); got != "a" {
		t.Errorf("members 1 s after a write of 300 ms: %s, want a (adding b waits 2.4 s)", got)
	}
	if w := f.webhooks(t); w != "app in (a,b) | " {
		t.Errorf("the webhook does not inject b while its policy waits: %q", w)
	}
	if f.ctrl.Ready(b) {
		t.Error("b is ready before a policy injects it")
	}

	var told []string
	f.ctrl.OnChange(func(names ...string) { told = append(told, names...) })
	f.clock.Step(1500 * time.Millisecond) // 2.5 s after the write ended
	f.reconcile(t)
	if got := members(); got != "a,b" {
		t.Errorf("members 2.5 s after a write of 300 ms: %s, want a,b", got)
	}
	if !f.ctrl.Ready(b) || !slices.Contains(told, "b") {
		t.Errorf("b ready %v once its policy is written, and the SidecarSet controller told of %v, want b among them", f.ctrl.Ready(b), told)
	}

	a := sidecarSet("a", "busybox:2") // a new revision of a: the policy changes what it injects
	if _, err := f.apps.AppsV1alpha1().SidecarSets().Update(context.Background(), a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := f.policies(t)["sidecarsets-app-v0"].Annotations[apps.SidecarSetsAnnotation]
	f.reconcile(t)
	if after := f.policies(t)["sidecarsets-app-v0"].Annotations[apps.SidecarSetsAnnotation]; after == before || !contains(after, "h-busybox:2") {
		t.Errorf("a's new revision waited for the budget: records %s", after)
	}
}

// TestPaceTimesThePlan: a reconcile whose policy write kube-apiserver takes a second to admit
// does not make the next reconcile wait: the pace counts the plan (the server's CPU), not the
// writes that wait on kube-apiserver.
func TestPaceTimesThePlan(t *testing.T) {
	f := newFixture(t, false, []*v1alpha1.SidecarSet{sidecarSet("a", "busybox:1")}, webhookConfig())
	f.kube.PrependReactor("create", "mutatingadmissionpolicies", func(clienttesting.Action) (bool, runtime.Object, error) {
		f.clock.Step(time.Second) // kube-apiserver compiles the policy
		return false, nil, nil
	})
	time.Sleep(100 * time.Millisecond) // the informers catch up
	retries := workqueue.DefaultTypedControllerRateLimiter[string]()
	q := workqueue.NewTypedRateLimitingQueueWithConfig(retries, workqueue.TypedRateLimitingQueueConfig[string]{Clock: f.clock})
	defer q.ShutDown()
	q.Add(key)
	f.ctrl.processNext(context.Background(), q, retries)
	if len(f.policies(t)) == 0 {
		t.Fatal("no policy written")
	}
	if d := f.ctrl.pace.delay(); d != 0 {
		t.Errorf("after a plan of no time and a write of 1 s, the next reconcile waits %v, want 0", d)
	}
}
