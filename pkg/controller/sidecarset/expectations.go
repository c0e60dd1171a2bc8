package sidecarset

import (
	"strconv"
	"sync"

	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

// expectations remembers the resourceVersions of the pods the controller wrote, so that a round
// never plans on a cache that does not show them yet (which could exceed maxUnavailable).
type expectations struct {
	mu      sync.Mutex
	pending map[string]uint64
}

func newExpectations() *expectations { return &expectations{pending: map[string]uint64{}} }

// expect records that pod (namespace/name) was written at resourceVersion rv.
func (e *expectations) expect(key, rv string) {
	v, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pending[key] = v
}

func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.pending, key)
}

// satisfied reports whether the cache shows every write to the given pods; it forgets the writes
// it sees.
func (e *expectations) satisfied(src *PodSource, pods []*rollout.Pod) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.pending) == 0 {
		return true
	}
	ok := true
	for _, p := range pods {
		key := p.Namespace + "/" + p.Name
		want, found := e.pending[key]
		if !found {
			continue
		}
		got, err := strconv.ParseUint(p.ResourceVersion, 10, 64)
		if err != nil || got >= want || src.get(p.Namespace, p.Name) == nil {
			delete(e.pending, key)
			continue
		}
		ok = false
	}
	return ok
}
