package app

import (
	"context"
	"errors"
	"io"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/generated/clientset/versioned/fake"
)

// TestGatherNamespaced: check reads the NamespacedSidecarSets of every namespace beside the
// SidecarSets; a server without the kind has none, any other failure is kept for the storage check.
func TestGatherNamespaced(t *testing.T) {
	gr := schema.GroupResource{Group: v1alpha1.GroupName, Resource: "namespacedsidecarsets"}
	failing := func(err error) k8stesting.ReactionFunc {
		return func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, err }
	}
	tests := []struct {
		name    string
		reactor k8stesting.ReactionFunc
		want    []string
		wantErr string
	}{
		{"every namespace", nil, []string{"other/agent", "shop/agent"}, ""},
		{"no such kind", failing(apierrors.NewNotFound(gr, "")), nil, ""},
		{"a failure", failing(errors.New("etcdserver: request timed out")), nil, "etcdserver: request timed out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shop, other := namespacedInjected("shop", "agent", "True", "Webhook"), namespacedInjected("other", "agent", "True", "Webhook")
			client := fake.NewSimpleClientset(&shop, &other)
			if tt.reactor != nil {
				client.PrependReactor("list", "namespacedsidecarsets", tt.reactor)
			}
			o := newOptions(strings.NewReader(""), io.Discard, io.Discard)
			f := &clusterFacts{Unread: map[string]unreadFact{}}
			o.gatherServer(context.Background(), &clients{kube: kubefake.NewClientset(), sidecarSet: client, namespace: "shop"}, checkTargets{}, f)
			var got []string
			for _, n := range f.NamespacedSidecarSets {
				got = append(got, n.Namespace+"/"+n.Name)
			}
			sort.Strings(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("NamespacedSidecarSets (-want +got):\n%s", diff)
			}
			gotErr := ""
			if f.NamespacedSidecarSetsErr != nil {
				gotErr = f.NamespacedSidecarSetsErr.Error()
			}
			if gotErr != tt.wantErr {
				t.Errorf("error %q, want %q", gotErr, tt.wantErr)
			}
		})
	}
}
