package policy

import (
	"encoding/json"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/sidecarset/apiserver/pkg/admission/policy/celpatch"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// group is one group policy being planned: its members (see celpatch.Group) and what its
// apps.SidecarSetsAnnotation records of each.
type group struct {
	celpatch.Group
	records map[string]record
}

// add makes ss, compiled as m, a member recorded as rec.
func (g *group) add(ss *v1alpha1.SidecarSet, m *celpatch.Member, rec record) {
	g.Add(ss, m)
	g.records[ss.Name] = rec
}

// objects renders the group's policy and binding: its objectSelector lists the values of its key
// its members require (keyValues), and it needs no match conditions when that says it all
// (exactSelector).
func (g *group) objects(excluded []string) (*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding, error) {
	recs, err := json.Marshal(g.records)
	if err != nil {
		return nil, nil, err
	}
	values := keyValues(g.Key, g.Sets())
	policy, binding := g.Objects(string(recs), values, exactSelector(g.Key, values, g.Sets()), excluded)
	return policy, binding, nil
}

// maxOverflow is the number of policies a bucket's members fill, one after the other, when one
// policy has no room for them all (see fits).
const maxOverflow = 8

// place returns the group m joins: the bucket's policy name, or when it is full, the first of its
// overflow policies name-1, name-2, ... with room; nil when they are all full. SidecarSets are
// placed in name order, so each policy holds a run of names.
func place(groups map[string]*group, name, key string, m *celpatch.Member) *group {
	for i := 0; i < maxOverflow; i++ {
		n := name
		if i > 0 {
			n = fmt.Sprintf("%s-%d", name, i)
		}
		g := groups[n]
		if g == nil {
			g = &group{Group: celpatch.Group{Name: n, Key: key}, records: map[string]record{}}
		}
		if g.Fits(m) {
			groups[n] = g
			return g
		}
	}
	return nil
}

// groupFull is the result of a SidecarSet its group policy and the overflow policies have no
// room for.
func groupFull(policy string) Result {
	return Result{Path: apps.PathWebhook, Reason: apps.ReasonTooLarge, Message: fmt.Sprintf(
		"group policy %s and its %d overflow policies hold as many SidecarSets as kube-apiserver compiles quickly (about %d characters of CEL, %d members each)",
		policy, maxOverflow-1, celpatch.MaxPolicySize, celpatch.MaxMembers)}
}
