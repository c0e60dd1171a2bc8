package policy

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sidecarset/apiserver/pkg/admission/policy/policytest"
)

// TestCompileCorpus is the differential test: for generated cases, the compiled policies run in
// kube-apiserver's evaluator give the injector's pod, in name order, in reverse and in random
// orders, and a second pass (reinvocation) changes nothing.
func TestCompileCorpus(t *testing.T) {
	n := 600
	if testing.Short() {
		n = 100
	}
	g := policytest.New(1)
	injected := 0
	for id := 0; id < n; id++ {
		c := g.Next(id)
		for _, ss := range c.Sets {
			prepare(t, ss)
		}
		k := len(c.Sets)
		orders := [][]int{identity(k), reversed(k), g.Perm(k)}
		t.Run(fmt.Sprint(id), func(t *testing.T) {
			t.Parallel() // the cases share nothing: use every core
			checkSame(t, c.Sets, c.Pod, c.NS, orders)
		})
		if pod := webhookPod(t, c.Sets, c.Pod, c.NS); pod != c.Pod {
			injected++
		}
	}
	// The corpus must mostly inject, or it proves little.
	if injected*5 < n*2 {
		t.Fatalf("only %d of %d cases inject anything", injected, n)
	}
	t.Logf("%d cases, %d injected", n, injected)
}

// TestPlanCorpus is the differential test of the whole plan with tenants: cluster SidecarSets
// and NamespacedSidecarSets with mixed label keys, webhook-path neighbours of both kinds, and pods
// declaring their sidecars' names. The planned policies run in kube-apiserver's evaluator, then
// the webhook when the planned webhook configuration sends it the pod; the pod must be the
// injector's alone.
func TestPlanCorpus(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 60
	}
	g := policytest.New(7)
	injected := 0
	for id := 0; id < n; id++ {
		c := g.NextMixed(id)
		for _, ss := range c.Sets {
			prepare(t, ss)
		}
		want := normalize(webhookPod(t, c.Sets, c.Pod, c.NS))
		t.Run(fmt.Sprint(id), func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(want, normalize(admitted(t, c.Sets, c.Pod, c.NS))); diff != "" {
				t.Fatalf("differs from the injector alone (-injector +admitted):\n%s", diff)
			}
		})
		if len(want.Spec.Containers) != len(c.Pod.Spec.Containers) {
			injected++
		}
	}
	if injected*5 < n*2 {
		t.Fatalf("only %d of %d cases inject anything", injected, n)
	}
	t.Logf("%d cases, %d injected", n, injected)
}
