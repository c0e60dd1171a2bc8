package injection

import (
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// Retired keeps, for Keep, the versions of SidecarSets that an update replaced or a delete
// removed. kube-apiserver may still run a policy compiled from such a version for a while after
// the write (it loads policies asynchronously, and a policy that stops injecting a SidecarSet
// is kept until the webhooks that take it over are loaded), so a pod reaches the webhook with it
// injected, though the SidecarSet as stored now does not select the pod or no longer exists; the
// webhook passes the versions to Inject (Input.Retired), which takes what they injected out.
// Only what was retired within Keep counts: a pod created carrying an older injection (a copy
// of another pod) is left as it is. Retired reads no clock: callers pass the times. Safe for
// concurrent use.
type Retired struct {
	// Keep is how long a version is kept once retired.
	Keep time.Duration

	mu     sync.Mutex
	byName map[string][]retiredVersion
	order  []retiredVersion // by time retired, to drop the expired ones first
}

type retiredVersion struct {
	ss *v1alpha1.SidecarSet
	at time.Time
}

// Retire records ss, replaced or deleted at at: its name, hash and spec (shared, not copied),
// what a withdrawal reads.
func (r *Retired) Retire(ss *v1alpha1.SidecarSet, at time.Time) {
	if r == nil || ss == nil {
		return
	}
	kept := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: ss.Name,
		Annotations: map[string]string{sidecar.HashAnnotation: ss.Annotations[sidecar.HashAnnotation]}}, Spec: ss.Spec}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expire(at)
	if r.byName == nil {
		r.byName = map[string][]retiredVersion{}
	}
	v := retiredVersion{ss: kept, at: at}
	r.byName[ss.Name] = append(r.byName[ss.Name], v)
	r.order = append(r.order, v)
}

// Versions returns the versions of the SidecarSet named name retired within Keep before now,
// oldest first.
func (r *Retired) Versions(name string, now time.Time) []*v1alpha1.SidecarSet {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expire(now)
	var out []*v1alpha1.SidecarSet
	for _, v := range r.byName[name] {
		out = append(out, v.ss)
	}
	return out
}

// expire drops the versions retired more than Keep before now.
func (r *Retired) expire(now time.Time) {
	n := 0
	for n < len(r.order) && now.Sub(r.order[n].at) > r.Keep {
		name := r.order[n].ss.Name
		if vs := r.byName[name][1:]; len(vs) > 0 {
			r.byName[name] = vs
		} else {
			delete(r.byName, name)
		}
		n++
	}
	if n > 0 {
		r.order = append(r.order[:0:0], r.order[n:]...)
	}
}

// Retires reports whether an update of a SidecarSet from old to cur retires old: it changes what
// the SidecarSet injects or into which pods (its spec, hence its generation, or its hash).
func Retires(old, cur *v1alpha1.SidecarSet) bool {
	return old.Generation != cur.Generation || old.Annotations[sidecar.HashAnnotation] != cur.Annotations[sidecar.HashAnnotation]
}

// staleRetired returns the versions of in.Retired that the pod carries (its hash annotation has
// an entry of their name at their hash) although their SidecarSet does not apply to the pod now:
// no candidate of that name matched it (it was deleted, or no longer selects the pod, or is
// paused). A policy compiled from that version injected it earlier in the admission; the webhook
// alone would not have. The last such version of a name in retired counts; the result is in name
// order.
func staleRetired(pod *corev1.Pod, retired []*v1alpha1.SidecarSet, decisions []Decision) ([]*v1alpha1.SidecarSet, error) {
	if len(retired) == 0 || pod.Annotations[sidecar.HashAnnotation] == "" {
		return nil, nil
	}
	hashes, err := sidecar.ParseHashMap(pod.Annotations[sidecar.HashAnnotation])
	if err != nil {
		return nil, newError("", "metadata.annotations["+sidecar.HashAnnotation+"]", err)
	}
	applies := map[string]bool{}
	for _, d := range decisions {
		if d.Matched || d.Reason == ReasonAlreadyInjected {
			applies[d.SidecarSet] = true
		}
	}
	byName := map[string]*v1alpha1.SidecarSet{}
	var names []string
	for _, ss := range retired {
		e, ok := hashes[ss.Name]
		if !ok || applies[ss.Name] || e.Hash != ss.Annotations[sidecar.HashAnnotation] {
			continue
		}
		if byName[ss.Name] == nil {
			names = append(names, ss.Name)
		}
		byName[ss.Name] = ss
	}
	slices.Sort(names)
	out := make([]*v1alpha1.SidecarSet, 0, len(names))
	for _, name := range names {
		out = append(out, byName[name])
	}
	return out, nil
}

// sharingNames splits present into the SidecarSets that have a container or an init container
// named like one of stale's, and the others. In the pod, a stale version's containers cannot be
// told from theirs (a canary names its base's sidecars so, and a stale version's policy, if an
// earlier version wrote it with reinvocationPolicy IfNeeded, may have run again after them):
// withdrawing the stale version takes both out, and those are injected again.
func sharingNames(stale, present []*v1alpha1.SidecarSet) (sharing, rest []*v1alpha1.SidecarSet) {
	if len(stale) == 0 {
		return nil, present
	}
	names := map[string]bool{}
	for _, ss := range stale {
		for n := range podNames(ss) {
			names[n] = true
		}
	}
	for _, ss := range present {
		shares := false
		for n := range podNames(ss) {
			shares = shares || names[n]
		}
		if shares {
			sharing = append(sharing, ss)
		} else {
			rest = append(rest, ss)
		}
	}
	return sharing, rest
}
