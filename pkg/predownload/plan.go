package predownload

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// State is a pod's pre-download state.
type State string

// States of a pod.
const (
	// Downloading: a pull of a new image onto the pod's node runs or waits for a place of the
	// parallelism; the pod's upgrade waits for it (at most the timeout once it runs).
	Downloading State = "PreDownloading"
	// Downloaded: the pod's node has every new image (its status lists it, or a pull of it
	// ended); the pod's upgrade waits for no pull.
	Downloaded State = "PreDownloaded"
)

// Key is a pull: an image onto a node.
type Key struct {
	Node, Image string
}

// Phase is where a pull pod stands.
type Phase string

// Phases of a pull pod.
const (
	Pulling Phase = "Pulling"
	Pulled  Phase = "Pulled"
	Failed  Phase = "Failed"
)

// Pull is a pull pod as observed.
type Pull struct {
	Key
	// Name is the pull pod's name.
	Name    string
	Created time.Time
	Phase   Phase
	// Message says why a pull failed.
	Message string
}

// Results of an ended pull.
const (
	ResultPulled   = "Pulled"
	ResultFailed   = "Failed"
	ResultTimedOut = "TimedOut"
)

// Outcome is how a pull ended.
type Outcome struct {
	Key
	// Result is ResultPulled, ResultFailed or ResultTimedOut.
	Result  string
	Message string
}

// Need is a pod still to upgrade: the new images it does not run yet, and its node.
type Need struct {
	UID    types.UID
	Node   string
	Images []string
}

// Input is what a plan reads.
type Input struct {
	Config Config
	Now    time.Time
	// Needs are the pods the rollout will upgrade, this round or later, in its order (partition
	// and pause already applied: the pods they keep are not there).
	Needs []Need
	// OnNode reports whether the node's status lists the image (normalized names, Normalize).
	OnNode func(node, image string) bool
	// Pulls are the SidecarSet's pull pods.
	Pulls []Pull
	// Ended are the outcomes of the SidecarSet's earlier pulls, whose pods are gone.
	Ended map[Key]Outcome
	// UpdatedReady and Matched are the rollout's counters (MinUpdatedReady).
	UpdatedReady, Matched int32
}

// Result is a plan.
type Result struct {
	// States are the pods' states, by UID; a pod without one waits for no pull and has not all
	// its images on its node (no node yet, its pulls ended without them, or none started).
	States map[types.UID]State
	// Create are the pulls to start now, in the rollout's order.
	Create []Key
	// Delete are the pull pods to delete: ended, timed out, or needed by no pod.
	Delete []Pull
	// Ended are the pulls that ended now, to remember (Input.Ended) and report.
	Ended []Outcome
	// Running counts the pulls that run once Create are created.
	Running int32
}

// Holds reports whether the pod's upgrade waits for a pull.
func (r *Result) Holds(uid types.UID) bool { return r.States[uid] == Downloading }

// Plan plans the pulls of one round.
func Plan(in Input) *Result {
	res := &Result{States: map[types.UID]State{}}
	running := map[Key]Pull{}
	ended := func(k Key) (Outcome, bool) {
		o, ok := in.Ended[k]
		return o, ok
	}
	fresh := map[Key]Outcome{}
	for _, p := range in.Pulls {
		if o, done := p.outcome(in.Now, in.Config.Timeout); done {
			res.Delete = append(res.Delete, p)
			res.Ended = append(res.Ended, o)
			fresh[p.Key] = o
			continue
		}
		if _, dup := running[p.Key]; dup { // two pods of one pull (a name collision): keep one
			res.Delete = append(res.Delete, p)
			continue
		}
		running[p.Key] = p
	}
	started := in.Config.Parallelism > 0 && in.UpdatedReady >= in.Config.MinUpdatedReadyOf(in.Matched)
	slots := int(in.Config.Parallelism) - len(running)
	needed := map[Key]bool{}
	queued := map[Key]bool{}
	for _, n := range in.Needs {
		if n.Node == "" {
			continue
		}
		present, waiting := 0, false
		for _, image := range n.Images {
			k := Key{Node: n.Node, Image: image}
			needed[k] = true
			if o, ok := fresh[k]; ok && o.Result == ResultPulled || in.OnNode != nil && in.OnNode(n.Node, image) {
				present++
				continue
			}
			if o, ok := ended(k); ok {
				present += b2i(o.Result == ResultPulled)
				continue
			}
			if _, ok := fresh[k]; ok {
				continue // failed or timed out now: not tried again
			}
			if _, ok := running[k]; ok {
				waiting = true
				continue
			}
			if !started {
				continue
			}
			waiting = true
			if !queued[k] && slots > 0 {
				res.Create = append(res.Create, k)
				slots--
			}
			queued[k] = true
		}
		switch {
		case waiting:
			res.States[n.UID] = Downloading
		case present == len(n.Images):
			res.States[n.UID] = Downloaded
		}
	}
	for k, p := range running {
		if !needed[k] {
			res.Delete = append(res.Delete, p)
			delete(running, k)
		}
	}
	res.Running = int32(len(running) + len(res.Create))
	return res
}

// outcome returns how the pull ended, if it did: pulled, failed, or timed out (running for
// timeout or more).
func (p *Pull) outcome(now time.Time, timeout time.Duration) (Outcome, bool) {
	switch {
	case p.Phase == Pulled:
		return Outcome{Key: p.Key, Result: ResultPulled}, true
	case p.Phase == Failed:
		return Outcome{Key: p.Key, Result: ResultFailed, Message: p.Message}, true
	case !now.Before(p.Created.Add(timeout)):
		return Outcome{Key: p.Key, Result: ResultTimedOut, Message: "the pull ran for " + timeout.String()}, true
	}
	return Outcome{}, false
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
