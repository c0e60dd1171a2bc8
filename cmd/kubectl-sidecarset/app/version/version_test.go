package version

import (
	"bytes"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/cli"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// TestVersionCommand: the plugin's version always; the server's from the annotation its leader
// writes, an error naming what is missing when it is not there.
func TestVersionCommand(t *testing.T) {
	active := func(annotations map[string]string) runtime.Object {
		return &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{
			Name: "sidecarset-injector-active", Annotations: annotations}}
	}
	for _, tc := range []struct {
		name    string
		args    []string
		objects []runtime.Object
		want    []string // lines of the output, in order, each a prefix
		wantErr string
	}{
		{"client only", []string{"version", "--client"}, nil, []string{"Client Version: v"}, ""},
		{"both", []string{"version"}, []runtime.Object{active(map[string]string{apps.ServerVersionAnnotation: "v9.8.7"})},
			[]string{"Client Version: v", "Server Version: v9.8.7"}, ""},
		{"json", []string{"version", "-o", "json"}, []runtime.Object{active(map[string]string{apps.ServerVersionAnnotation: "v9.8.7"})},
			[]string{"{", `  "clientVersion": {`}, ""},
		{"not recorded", []string{"version"}, []runtime.Object{active(nil)}, []string{"Client Version: v"}, "has not recorded its version"},
		{"no server", []string{"version"}, nil, []string{"Client Version: v"}, "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			o := cli.NewOptions(strings.NewReader(""), &out, &errOut)
			o.NewClients = func() (*cli.Clients, error) { return &cli.Clients{Kube: kubefake.NewClientset(tc.objects...)}, nil }
			cmd := cli.NewRoot(o, NewCommand(o))
			cmd.SetArgs(tc.args)
			err := cmd.Execute()
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
			lines := strings.Split(out.String(), "\n")
			for i, w := range tc.want {
				if i >= len(lines) || !strings.HasPrefix(lines[i], w) {
					t.Errorf("output line %d: want prefix %q in\n%s", i, w, out.String())
				}
			}
			if tc.name == "json" && !strings.Contains(out.String(), `"serverVersion": "v9.8.7"`) {
				t.Errorf("json lacks the server's version:\n%s", out.String())
			}
		})
	}
}
