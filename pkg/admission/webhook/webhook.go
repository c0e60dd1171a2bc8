// Package webhook is the thin adapter between an AdmissionReview for a pod CREATE and the pure
// injector: it decodes the pod, gathers the candidate SidecarSets from the index, the namespace
// labels and the revisions from listers, calls injection.Inject and answers with its JSON patch.
package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/apis/apps/validation"
	listers "github.com/sidecarset/apiserver/pkg/generated/listers/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/injection"
	"github.com/sidecarset/apiserver/pkg/injection/revision"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

var podResource = metav1.GroupVersionResource{Version: "v1", Resource: "pods"}

// Reviewer injects sidecars into pods under creation.
type Reviewer struct {
	// Index holds the SidecarSets; keep it current with an Indexer.
	Index *injection.Index
	// Retired holds the versions of SidecarSets replaced or deleted a moment ago (an Indexer
	// records them); nil keeps none.
	Retired *injection.Retired
	// Namespaces lists the main cluster's namespaces.
	Namespaces corelisters.NamespaceLister
	// Revisions lists SidecarSetRevisions.
	Revisions listers.SidecarSetRevisionLister
	// Clock stamps the pod annotations.
	Clock clock.PassiveClock
	// Rand returns a uniform number in [0, 1) for the Partial revision policy with a percentage
	// partition (math/rand/v2's Float64 in the server).
	Rand func() float64
	// Options tune the injection.
	Options injection.Options
	// HasSynced reports whether the index and listers are filled; until then the call fails (see
	// Review).
	HasSynced func() bool
	// Fresh, when set, returns once the index has taken in every SidecarSet write stored before
	// the call began (or when that cannot be told): a pod created right after a write that
	// another replica stored is then injected with it.
	Fresh func(context.Context)
}

// Review answers one admission request: pod CREATEs are injected, everything else is allowed as
// is. A pod a SidecarSet cannot be injected into is denied, with the SidecarSet and field at fault.
// When the server cannot give the right answer (its caches not synced yet, an internal error, a
// request it cannot read), Review returns an error instead of a denial: the call then fails, and
// kube-apiserver applies the webhook's failurePolicy (Fail in application namespaces, Ignore in
// kube-system), which it never applies to a denial.
func (r *Reviewer) Review(ctx context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error) {
	if req.Operation != admissionv1.Create || req.Resource != podResource || req.SubResource != "" {
		return &admissionv1.AdmissionResponse{Allowed: true}, nil
	}
	if !r.HasSynced() {
		return nil, apierrors.NewServiceUnavailable("sidecar injection is not ready: SidecarSets are still loading")
	}
	if r.Fresh != nil {
		r.Fresh(ctx)
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("decoding pod: %v", err))
	}
	res, err := r.inject(pod, req.Namespace)
	if err != nil {
		var injErr *injection.Error
		if errors.As(err, &injErr) {
			return deny(http.StatusUnprocessableEntity, err), nil
		}
		return nil, apierrors.NewInternalError(err)
	}
	if len(res.Patch) == 0 {
		klog.V(4).InfoS("pod left as it is", "namespace", req.Namespace, "name", pod.Name, "generateName", pod.GenerateName, "decisions", res.Decisions)
		return &admissionv1.AdmissionResponse{Allowed: true, Warnings: warnings(res.Warnings)}, nil
	}
	patch, err := json.Marshal(res.Patch)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	klog.V(4).InfoS("injected pod", "namespace", req.Namespace, "name", pod.Name, "generateName", pod.GenerateName, "decisions", res.Decisions)
	pt := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{Allowed: true, Patch: patch, PatchType: &pt, Warnings: warnings(res.Warnings)}, nil
}

// warnings renders the injector's warnings as admission warnings (nil when there are none).
func warnings(ws []injection.Warning) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.String())
	}
	return out
}

func (r *Reviewer) inject(pod *corev1.Pod, namespace string) (injection.Result, error) {
	if namespace == "" {
		namespace = pod.Namespace
	}
	candidates := r.Index.Candidates(namespace, pod.Labels)
	now := r.Clock.Now()
	retired := r.retired(pod, now)
	if len(candidates) == 0 && len(retired) == 0 {
		return injection.Result{}, nil
	}
	var nsLabels map[string]string
	if ns, err := r.Namespaces.Get(namespace); err == nil {
		nsLabels = ns.Labels
	} else if !apierrors.IsNotFound(err) {
		return injection.Result{}, err
	}
	if apps.SkipsControlPlane(nsLabels) {
		// The webhooks' namespaceSelectors leave such namespaces out; a call that gets here
		// anyway (a template edited by hand, a namespace relabelled meanwhile) injects nothing.
		return injection.Result{}, nil
	}
	res, err := injection.Inject(injection.Input{
		Pod:             pod,
		Namespace:       namespace,
		NamespaceLabels: nsLabels,
		SidecarSets:     candidates,
		Retired:         retired,
		Revisions:       revision.Lister{Revisions: r.Revisions},
		Now:             now,
		Rand:            r.Rand,
		Options:         r.Options,
	})
	if err == nil && validation.EnforcesBaseline(nsLabels) {
		res.Warnings = append(res.Warnings, podSecurityWarnings(res.Decisions, candidates, namespace)...)
	}
	return res, err
}

// retired returns the versions retired a moment ago of the SidecarSets the pod carries (its hash
// annotation names them; a pod being created carries them when a policy injected them earlier
// in the admission): the injector takes out those that no longer apply to it.
func (r *Reviewer) retired(pod *corev1.Pod, now time.Time) []*v1alpha1.SidecarSet {
	v, ok := pod.Annotations[sidecar.HashAnnotation]
	if r.Retired == nil || !ok {
		return nil
	}
	hashes, err := sidecar.ParseHashMap(v)
	if err != nil {
		return nil // the injector refuses the pod for it when a SidecarSet applies
	}
	var out []*v1alpha1.SidecarSet
	for name := range hashes {
		out = append(out, r.Retired.Versions(name, now)...)
	}
	return out
}

// podSecurityWarnings name the injected SidecarSets whose sidecars break the Pod Security
// Standard baseline, in a namespace that enforces it: kube-apiserver refuses the pod after
// injection, with an error about containers its owner never wrote, and these warnings (which
// kubectl prints beside that error) say where they come from.
func podSecurityWarnings(decisions []injection.Decision, candidates []*v1alpha1.SidecarSet, namespace string) []injection.Warning {
	byName := make(map[string]*v1alpha1.SidecarSet, len(candidates))
	for _, ss := range candidates {
		byName[ss.Name] = ss
	}
	var out []injection.Warning
	for _, d := range decisions {
		ss := byName[d.SidecarSet]
		if !d.Injected || ss == nil {
			continue
		}
		if v := validation.StoredPodSecurityViolations(ss); len(v) > 0 {
			out = append(out, injection.Warning{SidecarSet: ss.Name, Field: "spec.containers", Message: fmt.Sprintf(
				"its sidecars break the Pod Security Standard \"baseline\" that namespace %s enforces (%s): kube-apiserver refuses this pod for them",
				namespace, strings.Join(v, "; "))})
		}
	}
	return out
}

func deny(code int32, err error) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{
		Allowed: false,
		Result:  &metav1.Status{Status: metav1.StatusFailure, Code: code, Message: err.Error()},
	}
}

// Indexer keeps the webhook's view of the SidecarSets in step with a SidecarSet informer (see
// Handler).
type Indexer struct {
	// Index holds the SidecarSets.
	Index *injection.Index
	// Seen, when not nil, advances past each event taken in, in the watermark of its stream.
	Seen *Marks
	// Retired, when not nil, records the versions updates replace (injection.Retires) and
	// deletes remove, at the time of Clock.
	Retired *injection.Retired
	Clock   clock.PassiveClock
}

// Handler returns the informer's event handler.
func (x Indexer) Handler() cache.ResourceEventHandler {
	advance := func(ss *v1alpha1.SidecarSet) {
		if x.Seen != nil {
			x.Seen.Of(ss).Advance(ss.ResourceVersion)
		}
	}
	retire := func(ss *v1alpha1.SidecarSet) {
		if x.Retired != nil {
			x.Retired.Retire(ss, x.Clock.Now())
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			ss := obj.(*v1alpha1.SidecarSet)
			x.Index.Add(ss)
			advance(ss)
		},
		UpdateFunc: func(oldObj, obj interface{}) {
			ss := obj.(*v1alpha1.SidecarSet)
			// Retired before the index has the new version: a pod the webhook serves in between
			// finds the old version in the index or in Retired.
			if old, ok := oldObj.(*v1alpha1.SidecarSet); ok && injection.Retires(old, ss) {
				retire(old)
			}
			x.Index.Update(ss)
			advance(ss)
		},
		DeleteFunc: func(obj interface{}) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if ss, ok := obj.(*v1alpha1.SidecarSet); ok {
				retire(ss)
				x.Index.Delete(ss)
				advance(ss)
			}
		},
	}
}
