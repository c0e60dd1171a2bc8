// Package bytebudget is the rule of the per-namespace byte budget on NamespacedSidecarSets
// (--max-namespaced-bytes-per-namespace): what a namespace's NamespacedSidecarSets store, and which
// of their writes may grow it.
//
// A namespace's use is the size, as stored (v1alpha1 JSON, the measure of the spec's 128 KiB
// limit), of its NamespacedSidecarSets, of the SidecarSetRevisions recorded for them, and of the
// revision each object is still to get: an object whose injected part none of its recorded
// revisions holds (just written, the controller not there yet) counts the revision the controller
// will record for it (revision.New's, measured before it exists). A write is admitted when the
// namespace's use after it, with the written object in place of the old one, is within the budget,
// or is no more than before it: shrinking writes, and writes that do not grow the namespace, always
// pass (deletes are not checked).
//
// The rule counts what the cache of one replica holds. In one replica the writes of a namespace
// take turns (the storage's NamespaceLimits), each counting those before it; writes racing through
// several replicas, each counted without the others, can pass the budget together. The revisions
// the controller records are counted before they exist, and the oldest ones it prunes until they
// are gone (docs/tenancy.md has the bound).
//
// Meter measures a namespace from the server's informers, keeping each object's measure by UID and
// resourceVersion: a write costs a sum over the namespace's objects and revisions, and measures
// only the objects written since the last one.
package bytebudget

import (
	"encoding/json"
	"fmt"
	"hash/fnv"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// Flag is the server flag setting the budget.
const Flag = "--max-namespaced-bytes-per-namespace"

// Budget is the most bytes the NamespacedSidecarSets of one namespace and their revisions may
// store; zero or less is no budget.
type Budget int64

// Enabled reports whether there is a budget.
func (b Budget) Enabled() bool { return b > 0 }

// Admits reports whether a write taking a namespace's use from before to after may pass: within
// the budget, or not growing it.
func (b Budget) Admits(before, after int64) bool {
	return !b.Enabled() || after <= before || after <= int64(b)
}

// String is the budget as a quantity (16Mi).
func (b Budget) String() string { return resource.NewQuantity(int64(b), resource.BinarySI).String() }

// Refusal is the reason a write in namespace, which stores use bytes and would store after, is
// refused.
func (b Budget) Refusal(namespace string, use, after int64) error {
	return fmt.Errorf("namespace %s stores %s in NamespacedSidecarSets and their revisions; this write would take it to %s, "+
		"past the %s this server allows one namespace (%s=%s): delete or shrink NamespacedSidecarSets, or lower their revisionHistoryLimit",
		namespace, bytes(use), bytes(after), bytes(int64(b)), Flag, b)
}

// bytes writes n in bytes and, from 1 KiB, in KiB or MiB too.
func bytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%d bytes (%.1f MiB)", n, float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d bytes (%.1f KiB)", n, float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// Object is what one NamespacedSidecarSet stores, and the revision it is to have.
type Object struct {
	// Name is the SidecarSet name it takes part as, <namespace>.<name>.
	Name string
	// Bytes is its size as stored.
	Bytes int64
	// Injected identifies its injected part (a digest of the snapshot its revision records).
	Injected uint64
	// RevisionBytes is the size of the revision the controller records for its injected part.
	RevisionBytes int64
}

// Revision is what one recorded SidecarSetRevision stores.
type Revision struct {
	// SidecarSet is the SidecarSet name it belongs to.
	SidecarSet string
	// Bytes is its size as stored.
	Bytes int64
	// Injected identifies the injected part it records.
	Injected uint64
}

type recorded struct {
	sidecarSet string
	injected   uint64
}

// Usage is what one namespace stores: its objects, their recorded revisions, and the revisions
// still to be recorded.
type Usage struct {
	// Bytes is the whole.
	Bytes int64
	// shares are each object's part of Bytes by SidecarSet name: itself, and its revision when
	// not recorded yet.
	shares   map[string]int64
	recorded map[recorded]bool
}

// Measure adds up a namespace's objects and revisions.
func Measure(objects []Object, revisions []Revision) Usage {
	u := Usage{shares: make(map[string]int64, len(objects)), recorded: make(map[recorded]bool, len(revisions))}
	for _, r := range revisions {
		u.Bytes += r.Bytes
		u.recorded[recorded{r.SidecarSet, r.Injected}] = true
	}
	for _, o := range objects {
		share := u.share(o)
		u.shares[o.Name] = share
		u.Bytes += share
	}
	return u
}

// Has reports whether the usage counts an object of this SidecarSet name.
func (u Usage) Has(name string) bool {
	_, ok := u.shares[name]
	return ok
}

// With returns the usage with o counted too (an object the cache does not show yet), in place of
// the object of its name if there is one.
func (u Usage) With(o Object) Usage {
	shares := make(map[string]int64, len(u.shares)+1)
	for k, v := range u.shares {
		shares[k] = v
	}
	out := Usage{Bytes: u.After(o), shares: shares, recorded: u.recorded}
	out.shares[o.Name] = u.share(o)
	return out
}

// After returns the namespace's use once w is written: w's share in place of the share of the
// object of its name (none for a create).
func (u Usage) After(w Object) int64 {
	return u.Bytes - u.shares[w.Name] + u.share(w)
}

// share is what o adds to the namespace: itself, and the revision of its injected part unless
// one of its revisions records it already.
func (u Usage) share(o Object) int64 {
	if u.recorded[recorded{o.Name, o.Injected}] {
		return o.Bytes
	}
	return o.Bytes + o.RevisionBytes
}

// digest identifies a revision snapshot by its JSON.
func digest(spec v1alpha1.SidecarSetRevisionSpec) (uint64, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return 0, err
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	return h.Sum64(), nil
}
