package check

import (
	"context"
	"errors"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/check/finding"
	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/cli"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/generated/clientset/versioned/fake"
)

func namespaced(ns, name string) v1alpha1.NamespacedSidecarSet {
	return v1alpha1.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

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
			shop, other := namespaced("shop", "agent"), namespaced("other", "agent")
			client := fake.NewSimpleClientset(&shop, &other)
			if tt.reactor != nil {
				client.PrependReactor("list", "namespacedsidecarsets", tt.reactor)
			}
			f := &finding.Facts{Unread: map[string]finding.Unread{}}
			gatherServer(context.Background(), &cli.Clients{Kube: kubefake.NewClientset(), SidecarSet: client, Namespace: "shop"}, checkTargets{}, f)
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

// TestGatherTerminatingNamespaces: check reads the Terminating Namespaces only; a user who may not
// list Namespaces gets the read recorded as forbidden, which makes the finding skipped.
func TestGatherTerminatingNamespaces(t *testing.T) {
	active := corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "active"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	stuck := corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	f := &finding.Facts{Unread: map[string]finding.Unread{}}
	gatherTerminatingNamespaces(context.Background(), kubefake.NewClientset(&active, &stuck), f)
	var names []string
	for _, ns := range f.TerminatingNamespaces {
		names = append(names, ns.Name)
	}
	if diff := cmp.Diff([]string{"shop"}, names); diff != "" {
		t.Errorf("Terminating Namespaces (-want +got):\n%s", diff)
	}

	client := kubefake.NewClientset()
	client.PrependReactor("list", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "", nil)
	})
	f = &finding.Facts{Unread: map[string]finding.Unread{}}
	gatherTerminatingNamespaces(context.Background(), client, f)
	if u := f.Unread[v1alpha1.FindingNamespaceDeletion]; !u.Forbidden || u.What != "namespaces" {
		t.Errorf("namespace-deletion without the right to list namespaces: %+v, want a forbidden read of namespaces", u)
	}
}
