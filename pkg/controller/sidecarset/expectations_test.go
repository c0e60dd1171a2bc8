package sidecarset

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/podcache"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

func TestExpectations(t *testing.T) {
	pod := func(rv string) *rollout.Pod {
		return rollout.NewPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: rv}})
	}
	for _, tc := range []struct {
		name   string
		expect func(*expectations)
		cached string        // the cache's resourceVersion of the pod; "" when the pod is gone
		after  time.Duration // time passed since the write
		want   bool
	}{
		{name: "nothing written", expect: func(*expectations) {}, cached: "10", want: true},
		{name: "written, cache older", expect: func(e *expectations) { e.written("ns/p", "12") }, cached: "10", want: false},
		{name: "written, cache shows it", expect: func(e *expectations) { e.written("ns/p", "12") }, cached: "12", want: true},
		{name: "written, cache newer", expect: func(e *expectations) { e.written("ns/p", "12") }, cached: "15", want: true},
		{name: "maybe written, cache as read", expect: func(e *expectations) { e.maybeWritten("ns/p", "10") }, cached: "10", want: false},
		{name: "maybe written, cache newer", expect: func(e *expectations) { e.maybeWritten("ns/p", "10") }, cached: "11", want: true},
		{name: "written, pod gone", expect: func(e *expectations) { e.written("ns/p", "12") }, want: true},
		{name: "written, expired", expect: func(e *expectations) { e.written("ns/p", "12") }, cached: "10", after: expectationTTL + time.Second, want: true},
		{name: "written, not yet expired", expect: func(e *expectations) { e.written("ns/p", "12") }, cached: "10", after: expectationTTL, want: false},
		{name: "forgotten", expect: func(e *expectations) { e.written("ns/p", "12"); e.forget("ns/p") }, cached: "10", want: true},
		{name: "unparsable version", expect: func(e *expectations) { e.written("ns/p", "x") }, cached: "10", want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			e := newExpectations(clk)
			tc.expect(e)
			clk.Step(tc.after)
			pods := kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0).Core().V1().Pods()
			src, err := podcache.NewSource(pods, kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0).Core().V1().Namespaces())
			if err != nil {
				t.Fatal(err)
			}
			p := pod(tc.cached)
			if tc.cached != "" {
				if err := pods.Informer().GetIndexer().Add(p); err != nil {
					t.Fatal(err)
				}
			}
			if got := !e.unseen(src, []*rollout.Pod{p})["ns/p"]; got != tc.want {
				t.Fatalf("seen = %v, want %v", got, tc.want)
			}
			if tc.want && len(e.pending) != 0 {
				t.Errorf("a met expectation is kept: %v", e.pending)
			}
		})
	}
}

func TestAmbiguous(t *testing.T) {
	gr := corev1.Resource("pods")
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{apierrors.NewTimeoutError("timed out", 1), true},
		{apierrors.NewServerTimeout(gr, "patch", 1), true},
		{apierrors.NewInternalError(errors.New("boom")), true},
		{context.DeadlineExceeded, true},
		{fmt.Errorf("patch: %w", errors.New("connection reset by peer")), true},
		{apierrors.NewBadRequest("no"), false},
		{apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), "p", nil), false},
		{apierrors.NewForbidden(gr, "p", errors.New("no")), false},
		{apierrors.NewConflict(gr, "p", errors.New("stale")), false},
		{apierrors.NewTooManyRequests("slow down", 1), false},
	} {
		if got := ambiguous(tc.err); got != tc.want {
			t.Errorf("ambiguous(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestAmbiguousWhenKubeAPIServerIsDown: a pod write through client-go to a port nothing listens
// on (kube-apiserver restarting) was not applied, and a write whose connection broke after the
// request was sent may have been.
func TestAmbiguousWhenKubeAPIServerIsDown(t *testing.T) {
	patch := func(host string) error {
		client, err := kubernetes.NewForConfig(&rest.Config{Host: host, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		_, err = client.CoreV1().Pods("ns").Patch(context.Background(), "p", types.StrategicMergePatchType, []byte(`{}`), metav1.PatchOptions{})
		if err == nil {
			t.Fatal("the patch succeeded")
		}
		return err
	}
	// A port nothing listens on: listen, note the port, close.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := closed.Addr().String()
	closed.Close()
	if err := patch("http://" + addr); ambiguous(err) {
		t.Errorf("connection refused: ambiguous(%v) = true, want false", err)
	}
	// A server that reads the request and drops the connection without answering.
	dropping, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer dropping.Close()
	go func() {
		for {
			conn, err := dropping.Accept()
			if err != nil {
				return
			}
			_, _ = conn.Read(make([]byte, 4096))
			conn.Close()
		}
	}()
	if err := patch("http://" + dropping.Addr().String()); !ambiguous(err) {
		t.Errorf("connection dropped after the request: ambiguous(%v) = false, want true", err)
	}
}
