package source

import (
	"context"
	"errors"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/cli"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/generated/clientset/versioned/fake"
)

// TestClusterSources: inject and explain read the cluster's SidecarSets and NamespacedSidecarSets,
// the latter as the SidecarSets NS.NAME they take part as; of the command's namespace only when
// they may not be listed in all, none (with a warning) when not even those may be, none when the
// server serves no such kind.
func TestClusterSources(t *testing.T) {
	namespaced := func(ns, name string) *v1alpha1.NamespacedSidecarSet {
		return &v1alpha1.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	listAll := func(err error) k8stesting.ReactionFunc {
		return func(a k8stesting.Action) (bool, runtime.Object, error) {
			return a.GetNamespace() == metav1.NamespaceAll, nil, err
		}
	}
	gr := schema.GroupResource{Group: v1alpha1.GroupName, Resource: "namespacedsidecarsets"}
	forbidden := apierrors.NewForbidden(gr, "", errors.New("no rule"))
	tests := []struct {
		name     string
		reactor  k8stesting.ReactionFunc // on lists of namespacedsidecarsets, before the tracker
		want     []string
		warnings int
	}{
		{"every namespace", nil, []string{"logging", "other.log-agent", "shop.log-agent"}, 0},
		{"only the command's namespace readable", listAll(forbidden), []string{"logging", "shop.log-agent"}, 0},
		{"none readable", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, forbidden }, []string{"logging"}, 1},
		{"no such kind", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, apierrors.NewNotFound(gr, "") },
			[]string{"logging"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewSimpleClientset(&v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "logging"}},
				namespaced("shop", "log-agent"), namespaced("other", "log-agent"))
			if tt.reactor != nil {
				client.PrependReactor("list", "namespacedsidecarsets", tt.reactor)
			}
			src, err := clusterSources(context.Background(), &cli.Clients{Kube: kubefake.NewClientset(), SidecarSet: client, Namespace: "shop"})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ss := range src.SidecarSets {
				got = append(got, ss.Name)
				if _, _, ok := v1alpha1.SplitNamespacedName(ss.Name); ok && ss.Spec.Namespace == "" {
					t.Errorf("%s selects pods of every namespace", ss.Name)
				}
			}
			sort.Strings(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("SidecarSets (-want +got):\n%s", diff)
			}
			if len(src.Warnings) != tt.warnings {
				t.Errorf("warnings %q, want %d", src.Warnings, tt.warnings)
			}
		})
	}
}
