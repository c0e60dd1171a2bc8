package storage

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// NamespaceLimits are the per-namespace limits on NamespacedSidecarSets the storage holds under
// concurrent writes.
type NamespaceLimits struct {
	// Cap is the cap on the objects of one namespace.
	Cap NamespaceCap
	// Bytes has the writes of each namespace take turns in this replica, for the byte budget
	// (--max-namespaced-bytes-per-namespace, checked in admission from the replica's cache).
	Bytes bool
}

// namespaceTurns has the writes of each namespace's NamespacedSidecarSets (creates, updates and the
// /rollout actions) take turns in this replica, from their admission to their return. A write
// returns once this replica's cache holds it (the stores' AfterCreate and AfterUpdate), so the
// admission check of the byte budget, which sums the namespace from that cache, counts every write
// of the namespace this replica made before: concurrent writes of one namespace cannot each be
// counted without the others and pass the budget together. Only writes of the same namespace
// wait for each other, and a write alone in its namespace does not wait; dry runs take no turn.
type namespaceTurns struct {
	mu   sync.Mutex
	byNS map[string]*namespaceTurn
}

// namespaceTurn is one namespace's turn: a token held by the write whose turn it is.
type namespaceTurn struct {
	writes int // in flight or waiting
	token  chan struct{}
}

func newNamespaceTurns(on bool) *namespaceTurns {
	if !on {
		return nil
	}
	return &namespaceTurns{byNS: map[string]*namespaceTurn{}}
}

// take waits for the turn of the request's namespace and returns the function ending it; without
// turns, for a dry run or a request without a namespace, it returns at once.
func (t *namespaceTurns) take(ctx context.Context, dryRun []string) (func(), error) {
	namespace, ok := genericapirequest.NamespaceFrom(ctx)
	if t == nil || len(dryRun) > 0 || !ok || namespace == "" {
		return func() {}, nil
	}
	t.mu.Lock()
	turn := t.byNS[namespace]
	if turn == nil {
		turn = &namespaceTurn{token: make(chan struct{}, 1)}
		t.byNS[namespace] = turn
	}
	turn.writes++
	t.mu.Unlock()
	leave := func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if turn.writes--; turn.writes == 0 {
			delete(t.byNS, namespace)
		}
	}
	select {
	case turn.token <- struct{}{}:
		return func() {
			<-turn.token
			leave()
		}, nil
	case <-ctx.Done():
		leave()
		return nil, apierrors.NewTimeoutError("waiting for the other writes of the namespace's NamespacedSidecarSets (its byte budget counts them in turn)", 1)
	}
}
