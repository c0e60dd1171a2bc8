package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	listers "github.com/sidecarset/apiserver/pkg/generated/listers/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/injection"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// failingNamespaces is a namespace lister whose reads fail (an internal error).
type failingNamespaces struct{ corelisters.NamespaceLister }

func (failingNamespaces) Get(string) (*corev1.Namespace, error) {
	return nil, errors.New("cache broken")
}
func (failingNamespaces) List(labels.Selector) ([]*corev1.Namespace, error) {
	return nil, errors.New("cache broken")
}

// TestReview: a pod a SidecarSet cannot be injected into is denied with the SidecarSet named; a
// pod nothing selects is allowed; whenever the server cannot give the right answer (not synced, an
// internal error, an unreadable request) the call fails instead, so that kube-apiserver applies
// the webhook's failurePolicy, which it never applies to a denial.
func TestReview(t *testing.T) {
	selecting := func(name, app string, revision bool) *v1alpha1.SidecarSet {
		ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			sidecar.HashAnnotation: "h-" + name, sidecar.HashWithoutImageAnnotation: "w-" + name}},
			Spec: v1alpha1.SidecarSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
				Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: name, Image: "busybox"},
					PodInjectPolicy: v1alpha1.AfterAppContainerType, UpgradeStrategy: v1alpha1.SidecarContainerUpgradeStrategy{UpgradeType: v1alpha1.SidecarContainerColdUpgrade}}}}}
		if revision {
			missing := "missing-revision"
			ss.Spec.InjectionStrategy.Revision = &v1alpha1.SidecarSetInjectRevision{RevisionName: &missing, Policy: v1alpha1.AlwaysSidecarSetInjectRevisionPolicy}
		}
		return ss
	}
	index := injection.NewIndex()
	index.Add(selecting("log", "web", false))
	index.Add(selecting("pinned", "db", true))
	nsIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = nsIndexer.Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})
	_ = nsIndexer.Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kruise", Labels: map[string]string{"control-plane": "controller-manager"}}})
	revisions := listers.NewSidecarSetRevisionLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}))
	reviewer := func(synced bool, namespaces corelisters.NamespaceLister) *Reviewer {
		return &Reviewer{Index: index, Namespaces: namespaces, Revisions: revisions,
			Clock: clocktesting.NewFakePassiveClock(time.Unix(0, 0)), Rand: func() float64 { return 0 },
			HasSynced: func() bool { return synced }}
	}
	podRequestIn := func(namespace, app string) *admissionv1.AdmissionRequest {
		raw, _ := json.Marshal(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: namespace, Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}})
		return &admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: namespace,
			Resource: podResource, Object: runtime.RawExtension{Raw: raw}}
	}
	podRequest := func(app string) *admissionv1.AdmissionRequest { return podRequestIn("shop", app) }
	good := corelisters.NewNamespaceLister(nsIndexer)
	for _, tc := range []struct {
		name       string
		r          *Reviewer
		req        *admissionv1.AdmissionRequest
		allowed    bool
		patched    bool
		denied     string // a denial naming this
		failStatus int32  // the call fails with this code
	}{
		{name: "injected", r: reviewer(true, good), req: podRequest("web"), allowed: true, patched: true},
		{name: "selected by none", r: reviewer(true, good), req: podRequest("other"), allowed: true},
		{name: "a SidecarSet that cannot inject denies only its pods", r: reviewer(true, good), req: podRequest("db"), denied: `SidecarSet "pinned"`},
		{name: "a namespace labelled control-plane is left alone", r: reviewer(true, good), req: podRequestIn("kruise", "web"), allowed: true},
		{name: "a namespace labelled control-plane is never denied", r: reviewer(true, good), req: podRequestIn("kruise", "db"), allowed: true},
		{name: "not synced", r: reviewer(false, good), req: podRequest("web"), failStatus: http.StatusServiceUnavailable},
		{name: "not synced, other resources pass", r: reviewer(false, good),
			req: &admissionv1.AdmissionRequest{Operation: admissionv1.Create, Resource: metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"}}, allowed: true},
		{name: "internal error", r: reviewer(true, failingNamespaces{}), req: podRequest("web"), failStatus: http.StatusInternalServerError},
		{name: "unreadable pod", r: reviewer(true, good), req: &admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "shop",
			Resource: podResource, Object: runtime.RawExtension{Raw: []byte("{")}}, failStatus: http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := tc.r.Review(context.Background(), tc.req)
			if tc.failStatus != 0 {
				var status apierrors.APIStatus
				if !errors.As(err, &status) || status.Status().Code != tc.failStatus || resp != nil {
					t.Fatalf("got response %v, error %v; want the call to fail with %d", resp, err, tc.failStatus)
				}
				return
			}
			if err != nil {
				t.Fatalf("the call failed: %v", err)
			}
			if resp.Allowed != tc.allowed || (len(resp.Patch) > 0) != tc.patched {
				t.Fatalf("allowed %v, patch %s; want allowed %v, patched %v", resp.Allowed, resp.Patch, tc.allowed, tc.patched)
			}
			if tc.denied != "" && (resp.Result == nil || !strings.Contains(resp.Result.Message, tc.denied)) {
				t.Errorf("denial %v does not name %s", resp.Result, tc.denied)
			}
		})
	}
}

// TestPodSecurityWarnings: in a namespace that enforces baseline (or restricted), a pod injected
// with a privileged sidecar gets a warning naming the SidecarSet (kube-apiserver then refuses it);
// not in a privileged or unlabelled namespace, nor for sidecars that keep to baseline.
func TestPodSecurityWarnings(t *testing.T) {
	sidecarSet := func(name string, privileged bool) *v1alpha1.SidecarSet {
		c := corev1.Container{Name: name, Image: "busybox"}
		if privileged {
			c.SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		}
		return &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			sidecar.HashAnnotation: "h-" + name, sidecar.HashWithoutImageAnnotation: "w-" + name}},
			Spec: v1alpha1.SidecarSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Containers: []v1alpha1.SidecarContainer{{Container: c, PodInjectPolicy: v1alpha1.AfterAppContainerType,
					UpgradeStrategy: v1alpha1.SidecarContainerUpgradeStrategy{UpgradeType: v1alpha1.SidecarContainerColdUpgrade}}}}}
	}
	index := injection.NewIndex()
	index.Add(sidecarSet("agent", true))
	index.Add(sidecarSet("log", false))
	nsIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for name, level := range map[string]string{"baseline": "baseline", "restricted": "restricted", "privileged": "privileged", "open": ""} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if level != "" {
			ns.Labels = map[string]string{"pod-security.kubernetes.io/enforce": level}
		}
		_ = nsIndexer.Add(ns)
	}
	r := &Reviewer{Index: index, Namespaces: corelisters.NewNamespaceLister(nsIndexer),
		Revisions: listers.NewSidecarSetRevisionLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})),
		Clock:     clocktesting.NewFakePassiveClock(time.Unix(0, 0)), Rand: func() float64 { return 0 }, HasSynced: func() bool { return true }}
	for _, tc := range []struct {
		namespace string
		warned    bool
	}{{"baseline", true}, {"restricted", true}, {"privileged", false}, {"open", false}} {
		t.Run(tc.namespace, func(t *testing.T) {
			raw, _ := json.Marshal(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: tc.namespace, Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}})
			resp, err := r.Review(context.Background(), &admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: tc.namespace,
				Resource: podResource, Object: runtime.RawExtension{Raw: raw}})
			if err != nil || !resp.Allowed || len(resp.Patch) == 0 {
				t.Fatalf("response %+v, error %v; want the pod injected", resp, err)
			}
			var got []string
			for _, w := range resp.Warnings {
				if strings.Contains(w, "Pod Security") {
					got = append(got, w)
				}
			}
			want := 0
			if tc.warned {
				want = 1
			}
			if len(got) != want || (want == 1 && (!strings.HasPrefix(got[0], `SidecarSet "agent"`) || !strings.Contains(got[0], "namespace "+tc.namespace+" enforces") ||
				!strings.Contains(got[0], "privileged"))) {
				t.Errorf("Pod Security warnings %q; want %d naming SidecarSet agent, the namespace and the violation", got, want)
			}
		})
	}
}

// TestReviewWithdrawsRetired: the Indexer keeps the version an update replaces (when its spec
// changed) and the one a delete removes, and the Reviewer takes out of a pod what such a version
// injected earlier in the admission (a policy kube-apiserver had not reloaded) where the stored
// SidecarSet no longer applies: after a selector change, after a delete. A status update retires
// nothing; a version retired longer ago than Retired.Keep is forgotten.
func TestReviewWithdrawsRetired(t *testing.T) {
	set := func(app string, generation int64) *v1alpha1.SidecarSet {
		return &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "x", Generation: generation, ResourceVersion: "1", Annotations: map[string]string{
			sidecar.HashAnnotation: "h-x", sidecar.HashWithoutImageAnnotation: "w-x"}},
			Spec: v1alpha1.SidecarSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
				Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "x", Image: "busybox"},
					PodInjectPolicy: v1alpha1.AfterAppContainerType, UpgradeStrategy: v1alpha1.SidecarContainerUpgradeStrategy{UpgradeType: v1alpha1.SidecarContainerColdUpgrade}}}}}
	}
	web := set("web", 1)
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "shop", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}
	byPolicy, err := injection.Inject(injection.Input{Pod: bare, SidecarSets: []*v1alpha1.SidecarSet{web}, Now: time.Unix(0, 0)})
	if err != nil || len(byPolicy.Patch) == 0 {
		t.Fatalf("injecting x into the pod as its policy does: %v, %v", byPolicy.Patch, err)
	}
	for _, tc := range []struct {
		name      string
		events    func(h cache.ResourceEventHandler)
		after     time.Duration
		withdrawn bool
	}{
		{"selector changed", func(h cache.ResourceEventHandler) { h.OnUpdate(web, set("db", 2)) }, time.Second, true},
		{"deleted", func(h cache.ResourceEventHandler) { h.OnDelete(web) }, time.Second, true},
		{"deleted long ago", func(h cache.ResourceEventHandler) { h.OnDelete(web) }, time.Minute, false},
		// The same generation and hash: a status write, which retires nothing (the selector here
		// only shows that the old version is not kept).
		{"status written", func(h cache.ResourceEventHandler) { h.OnUpdate(web, set("db", 1)) }, time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Unix(100, 0))
			r := &Reviewer{Index: injection.NewIndex(), Retired: &injection.Retired{Keep: 30 * time.Second}, Clock: clk,
				Namespaces: corelisters.NewNamespaceLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})),
				Rand:       func() float64 { return 0 }, HasSynced: func() bool { return true }}
			h := Indexer{Index: r.Index, Retired: r.Retired, Clock: clk}.Handler()
			h.OnAdd(web, false)
			tc.events(h)
			clk.SetTime(clk.Now().Add(tc.after))
			raw, _ := json.Marshal(byPolicy.Pod)
			resp, err := r.Review(context.Background(), &admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "shop",
				Resource: podResource, Object: runtime.RawExtension{Raw: raw}})
			if err != nil || !resp.Allowed {
				t.Fatalf("review: %v, %v", resp, err)
			}
			if withdrawn := strings.Contains(string(resp.Patch), `"op":"remove","path":"/metadata/annotations/kruise.io~1sidecarset-hash"`); withdrawn != tc.withdrawn {
				t.Errorf("x withdrawn %v, want %v; patch %s", withdrawn, tc.withdrawn, resp.Patch)
			}
		})
	}
}
