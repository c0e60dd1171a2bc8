package pull

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/event"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
	"github.com/sidecarset/apiserver/pkg/predownload"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// Reasons of the SidecarSet events of pre-download.
const (
	ReasonPreDownloadFailed   = "PreDownloadFailed"
	ReasonPreDownloadTimedOut = "PreDownloadTimedOut"
)

// PreDownloads pulls the new sidecar images of SidecarSets that ask for it
// (predownload.ParallelismAnnotation) onto the nodes of the pods their rollouts upgrade next,
// through short-lived pull pods in the server's namespace, and holds those pods' upgrades until
// the pulls end (package predownload plans it). It watches its pull pods and the nodes' image
// lists, and remembers how pulls ended, by SidecarSet, for as long as the images are in its spec
// (a new leader starts again: a pull of an image already there ends at once). The rollout view
// reads the states of the controller's last round.
type PreDownloads struct {
	namespace string
	kube      kubernetes.Interface
	clock     clock.Clock
	pulls     cache.SharedIndexInformer
	nodes     cache.SharedIndexInformer
	factories []kubeinformers.SharedInformerFactory

	mu     sync.Mutex
	ended  map[string]map[predownload.Key]predownload.Outcome // by SidecarSet
	states map[string]map[types.UID]predownload.State         // by SidecarSet, of the last round
	onPull func(sidecarSet string)                            // queues a round (the controller's)
}

// New returns the pre-download of a server whose namespace is namespace, on the main
// cluster's client.
func New(kube kubernetes.Interface, namespace string, clk clock.Clock) (*PreDownloads, error) {
	if clk == nil {
		clk = clock.RealClock{}
	}
	pulls := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithNamespace(namespace),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = predownload.Label + "=true" }))
	nodes := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithTransform(nodeImagesOnly))
	d := &PreDownloads{namespace: namespace, kube: kube, clock: clk,
		pulls: pulls.Core().V1().Pods().Informer(), nodes: nodes.Core().V1().Nodes().Informer(),
		factories: []kubeinformers.SharedInformerFactory{pulls, nodes},
		ended:     map[string]map[predownload.Key]predownload.Outcome{}, states: map[string]map[types.UID]predownload.State{}}
	_, err := d.pulls.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj interface{}) { d.changed(obj) },
		DeleteFunc: d.changed,
	})
	return d, err
}

// Start starts its informers.
func (d *PreDownloads) Start(stop <-chan struct{}) {
	for _, f := range d.factories {
		f.Start(stop)
	}
}

// HasSynced reports whether its informers have synced.
func (d *PreDownloads) HasSynced() bool { return d.pulls.HasSynced() && d.nodes.HasSynced() }

// nodeImagesOnly keeps of a node its name and the names of its images.
func nodeImagesOnly(obj interface{}) (interface{}, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	out := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, ResourceVersion: n.ResourceVersion, UID: n.UID}}
	for _, img := range n.Status.Images {
		names := make([]string, len(img.Names))
		for i, name := range img.Names {
			names[i] = predownload.Normalize(name)
		}
		out.Status.Images = append(out.Status.Images, corev1.ContainerImage{Names: names})
	}
	return out, nil
}

func (d *PreDownloads) changed(obj interface{}) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	d.mu.Lock()
	f := d.onPull
	d.mu.Unlock()
	if ss := pod.Annotations[predownload.SidecarSetAnnotation]; f != nil && ss != "" {
		f(ss)
	}
}

// onNode reports whether the node's status lists the image.
func (d *PreDownloads) onNode(node, image string) bool {
	obj, ok, err := d.nodes.GetStore().GetByKey(node)
	if err != nil || !ok {
		return false
	}
	want := predownload.Normalize(image)
	for _, img := range obj.(*corev1.Node).Status.Images {
		for _, name := range img.Names {
			if name == want {
				return true
			}
		}
	}
	return false
}

// pullsOf returns the pull pods of the named SidecarSet.
func (d *PreDownloads) pullsOf(name string) []predownload.Pull {
	var out []predownload.Pull
	for _, obj := range d.pulls.GetStore().List() {
		if p, ss, ok := predownload.Observe(obj.(*corev1.Pod)); ok && ss == name {
			out = append(out, p)
		}
	}
	return out
}

// Holding returns the pods (by UID) of the SidecarSet whose upgrades wait for a pull, as the
// controller's last round planned them; nil without pre-download.
func (d *PreDownloads) Holding(ss *v1alpha1.SidecarSet) map[types.UID]bool {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var out map[types.UID]bool
	for uid, st := range d.states[ss.Name] {
		if st == predownload.Downloading {
			if out == nil {
				out = map[types.UID]bool{}
			}
			out[uid] = true
		}
	}
	return out
}

// Annotate sets the pods' PreDownload states of a rollout view of ss from the controller's last
// round, and their counts.
func (d *PreDownloads) Annotate(ss *v1alpha1.SidecarSet, plan *rollout.Result, st *v1alpha1.SidecarSetRolloutStatus) {
	if d == nil {
		return
	}
	byKey := d.statesOf(ss, plan)
	for i := range st.Pods {
		p := &st.Pods[i]
		s := byKey[p.Namespace+"/"+p.Name]
		p.PreDownload = string(s)
		switch s {
		case predownload.Downloading:
			st.PreDownloading++
		case predownload.Downloaded:
			st.PreDownloaded++
		}
	}
}

// Round plans and starts the pulls of a round of ss from its plan (whose Upcoming pods the pulls
// are for), deletes the pull pods that ended or are not needed, and sets in opts the pods whose
// upgrades wait for a pull. It returns the events of failed and timed-out pulls, and whether
// opts holds pods (the round plans again with them). A nil PreDownloads does nothing.
func (d *PreDownloads) Round(ctx context.Context, ss *v1alpha1.SidecarSet, plan *rollout.Result, opts *rollout.Options) ([]event.Pending, bool) {
	if d == nil {
		return nil, false
	}
	cfg, errs := predownload.Parse(ss.Annotations, field.NewPath("metadata", "annotations"))
	if cfg == nil || len(errs) > 0 || v1alpha1.AsNamespaced(ss) != nil {
		d.Forget(ctx, ss.Name)
		return nil, false
	}
	d.mu.Lock()
	ended := maps.Clone(d.prune(ss)) // the plan reads it while other rounds may forget
	d.mu.Unlock()
	res := predownload.Plan(predownload.Input{
		Config: *cfg, Now: d.clock.Now(), Needs: needs(ss, plan.Upcoming), OnNode: d.onNode,
		Pulls: d.pullsOf(ss.Name), Ended: ended, UpdatedReady: plan.Counts.UpdatedReady, Matched: plan.Counts.Matched,
	})
	d.mu.Lock()
	if kept := d.ended[ss.Name]; kept != nil {
		for _, o := range res.Ended {
			kept[o.Key] = o
		}
	}
	d.mu.Unlock()
	var events []event.Pending
	for _, o := range res.Ended {
		switch o.Result {
		case predownload.ResultFailed:
			events = append(events, event.Warning(ss, ReasonPreDownloadFailed, fmt.Sprintf(
				"pre-download of %s onto node %s failed (the upgrades of its pods go on without): %s", o.Image, o.Node, o.Message)))
		case predownload.ResultTimedOut:
			events = append(events, event.Warning(ss, ReasonPreDownloadTimedOut, fmt.Sprintf(
				"pre-download of %s onto node %s did not end within %s (the upgrades of its pods go on without)", o.Image, o.Node, cfg.Timeout)))
		}
	}
	for _, p := range res.Delete {
		d.deletePull(ctx, p.Name)
	}
	for _, k := range res.Create {
		pod := predownload.NewPod(d.namespace, ss.Name, k, ss.Spec.ImagePullSecrets, *cfg)
		if _, err := d.kube.CoreV1().Pods(d.namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			klog.ErrorS(err, "creating a pull pod", "sidecarset", ss.Name, "node", k.Node, "image", k.Image)
			events = append(events, event.Warning(ss, ReasonPreDownloadFailed, fmt.Sprintf(
				"could not create the pull pod of %s onto node %s (retried): %v", k.Image, k.Node, err)))
		}
	}
	d.mu.Lock()
	d.states[ss.Name] = res.States
	d.mu.Unlock()
	opts.PreDownloading = nil
	for uid, st := range res.States {
		if st == predownload.Downloading {
			if opts.PreDownloading == nil {
				opts.PreDownloading = map[types.UID]bool{}
			}
			opts.PreDownloading[uid] = true
		}
	}
	return events, len(opts.PreDownloading) > 0
}

// statesOf returns the PreDownload states of the pods of plan still to upgrade, by
// namespace/name, from the controller's last round of ss.
func (d *PreDownloads) statesOf(ss *v1alpha1.SidecarSet, plan *rollout.Result) map[string]predownload.State {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	states := d.states[ss.Name]
	d.mu.Unlock()
	byKey := make(map[string]predownload.State, len(states))
	for _, pp := range plan.Pods {
		if s, ok := states[pp.Pod.UID]; ok && pp.State != v1alpha1.PodRolloutUpdated {
			byKey[pp.Pod.Namespace+"/"+pp.Pod.Name] = s
		}
	}
	return byKey
}

// Counts returns how many pods of plan still to upgrade wait for their pull, and how many have
// their images on their node (status.preDownloadingPods, status.preDownloadedPods).
func (d *PreDownloads) Counts(ss *v1alpha1.SidecarSet, plan *rollout.Result) (downloading, downloaded int32) {
	for _, s := range d.statesOf(ss, plan) {
		switch s {
		case predownload.Downloading:
			downloading++
		case predownload.Downloaded:
			downloaded++
		}
	}
	return downloading, downloaded
}

// prune returns the remembered outcomes of ss, without those of images its spec no longer has.
// d.mu is held.
func (d *PreDownloads) prune(ss *v1alpha1.SidecarSet) map[predownload.Key]predownload.Outcome {
	images := specImages(ss)
	ended := d.ended[ss.Name]
	if ended == nil {
		ended = map[predownload.Key]predownload.Outcome{}
		d.ended[ss.Name] = ended
	}
	for k := range ended {
		if !images[k.Image] {
			delete(ended, k)
		}
	}
	return ended
}

// Forget deletes the pull pods of the named SidecarSet and what it remembers of it: the
// SidecarSet is gone, or does not ask for pre-download (any more).
func (d *PreDownloads) Forget(ctx context.Context, name string) {
	if d == nil {
		return
	}
	d.mu.Lock()
	delete(d.ended, name)
	delete(d.states, name)
	d.mu.Unlock()
	for _, p := range d.pullsOf(name) {
		d.deletePull(ctx, p.Name)
	}
}

func (d *PreDownloads) deletePull(ctx context.Context, name string) {
	err := d.kube.CoreV1().Pods(d.namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	if err != nil && !apierrors.IsNotFound(err) {
		klog.ErrorS(err, "deleting a pull pod", "pod", klog.KRef(d.namespace, name))
	}
}

// specImages returns the images of the SidecarSet's sidecars that run in pods.
func specImages(ss *v1alpha1.SidecarSet) map[string]bool {
	out := map[string]bool{}
	for sc := range sidecar.RunningContainers(ss.Spec.Containers, ss.Spec.InitContainers) {
		out[sc.Image] = true
	}
	return out
}

// needs returns, for each pod still to upgrade, its node and the images of ss it runs no
// container of.
func needs(ss *v1alpha1.SidecarSet, pods []*rollout.Pod) []predownload.Need {
	images := specImages(ss)
	out := make([]predownload.Need, 0, len(pods))
	for _, p := range pods {
		running := map[string]bool{}
		for i := range p.Containers {
			running[p.Containers[i].Image()] = true
		}
		var missing []string
		for image := range images {
			if !running[image] {
				missing = append(missing, image)
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			out = append(out, predownload.Need{UID: p.UID, Node: p.Node(), Images: missing})
		}
	}
	return out
}

// WatchPulls has the controller's rounds follow the pull pods: a pull that ends queues a round of
// its SidecarSet.
func (d *PreDownloads) WatchPulls(add func(name string)) {
	d.mu.Lock()
	d.onPull = add
	d.mu.Unlock()
}
