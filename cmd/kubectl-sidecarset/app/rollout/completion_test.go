package rollout

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/cli"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/generated/clientset/versioned/fake"
)

// TestCompleteTargets: the rollout commands complete SidecarSet names and
// namespacedsidecarset/NAME of the command's namespace, a typed kind prefix only that kind, as
// kubectl's __complete protocol answers.
func TestCompleteTargets(t *testing.T) {
	client := fake.NewSimpleClientset(
		&v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "logging"}},
		&v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "mesh"}},
		&v1alpha1.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "log-agent", Namespace: "shop"}},
		&v1alpha1.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "other-agent", Namespace: "other"}})
	tests := []struct {
		typed string
		want  []string
	}{
		{"", []string{"logging", "mesh", "namespacedsidecarset/log-agent"}},
		{"lo", []string{"logging"}},
		{"namespacedsidecarset/", []string{"namespacedsidecarset/log-agent"}},
		{"sidecarsets/m", []string{"sidecarsets/mesh"}},
		{"deployment/", nil},
	}
	for _, tt := range tests {
		t.Run(tt.typed, func(t *testing.T) {
			var out bytes.Buffer
			o := cli.NewOptions(strings.NewReader(""), &out, &bytes.Buffer{})
			o.NewClients = func() (*cli.Clients, error) { return &cli.Clients{SidecarSet: client, Namespace: "shop"}, nil }
			cmd := cli.NewRoot(o, NewCommand(o))
			cmd.SetArgs([]string{"__complete", "rollout", "status", tt.typed})
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if !strings.HasPrefix(line, ":") && !strings.HasPrefix(line, "Completion ended") {
					got = append(got, line)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("completions (-want +got):\n%s", diff)
			}
		})
	}
}
