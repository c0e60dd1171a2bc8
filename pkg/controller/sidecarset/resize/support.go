package resize

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/sidecarset/apiserver/pkg/apis/apps/hash"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/history"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

// Support tells the planner what it needs to resize sidecars in place: whether the cluster can
// (the pod resize subresource), and which of a SidecarSet's revisions differ from its spec in
// images and resources only. The controller and the rollout view share one.
type Support struct {
	support   func() (string, error)
	revisions func(sidecarSet string) []*v1alpha1.SidecarSetRevision

	mu          sync.Mutex
	known       bool
	unsupported string
	hashes      map[types.UID]string // by revision UID: revisions' sidecars never change
}

// NewSupport returns the Support of a cluster that discovery describes, reading each SidecarSet's
// revisions from the revision informer's index (added when missing, as the controller does).
func NewSupport(d discovery.DiscoveryInterface, revisions cache.SharedIndexInformer) (*Support, error) {
	index, err := history.IndexRevisions(revisions)
	if err != nil {
		return nil, err
	}
	return &Support{
		support:   func() (string, error) { return discover(d) },
		revisions: func(name string) []*v1alpha1.SidecarSetRevision { return history.RevisionsOf(index, name) },
		hashes:    map[types.UID]string{},
	}, nil
}

// discover says why the cluster cannot resize pods in place, "" when it can: kube-apiserver
// serves pods/resize from Kubernetes 1.33 (beta, on by default; GA in 1.35).
func discover(d discovery.DiscoveryInterface) (string, error) {
	list, err := d.ServerResourcesForGroupVersion("v1")
	if err != nil {
		return "", err
	}
	for _, r := range list.APIResources {
		if r.Name == "pods/resize" {
			return "", nil
		}
	}
	return "this cluster cannot resize pods in place (kube-apiserver serves no pods/resize subresource: Kubernetes 1.33 or newer with InPlacePodVerticalScaling enabled is needed)", nil
}

// Options returns what the planner knows of resizes for ss.
func (r *Support) Options(ss *v1alpha1.SidecarSet) rollout.Options {
	if r == nil {
		return rollout.Options{}
	}
	opts := rollout.Options{ResizeUnsupported: r.unsupportedReason()}
	current, err := hash.WithoutImagesAndResources(ss.Spec.Containers, ss.Spec.InitContainers)
	if err != nil {
		return opts
	}
	for _, rev := range r.revisions(ss.Name) {
		if h := r.hash(rev); h != "" && h == current {
			if opts.ResizableRevisions == nil {
				opts.ResizableRevisions = map[string]bool{}
			}
			opts.ResizableRevisions[rev.Name] = true
		}
	}
	return opts
}

// unsupportedReason discovers once whether the cluster resizes pods (again after a failed
// discovery, which counts as unsupported meanwhile).
func (r *Support) unsupportedReason() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.known {
		return r.unsupported
	}
	why, err := r.support()
	if err != nil {
		klog.ErrorS(err, "discovering whether the cluster resizes pods in place")
		return fmt.Sprintf("whether this cluster can resize pods in place is not known yet (discovery failed: %v)", err)
	}
	r.known, r.unsupported = true, why
	return why
}

func (r *Support) hash(rev *v1alpha1.SidecarSetRevision) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h, ok := r.hashes[rev.UID]; ok {
		return h
	}
	h, err := hash.WithoutImagesAndResources(rev.Spec.Containers, rev.Spec.InitContainers)
	if err != nil {
		return ""
	}
	if len(r.hashes) > 100_000 { // revisions of deleted SidecarSets: start over
		r.hashes = map[types.UID]string{}
	}
	r.hashes[rev.UID] = h
	return h
}
