package completion

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/cli"
)

// TestCompletionScript: completion kubectl writes kubectl_complete-sidecarset, which hands the
// words to the plugin's __complete.
func TestCompletionScript(t *testing.T) {
	var out bytes.Buffer
	root := cli.NewRoot(cli.NewOptions(strings.NewReader(""), &out, &bytes.Buffer{}))
	root.AddCommand(NewCommand(root))
	root.SetArgs([]string{"completion", "kubectl"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "#!/usr/bin/env sh\n") || !strings.Contains(out.String(), `kubectl-sidecarset __complete "$@"`) {
		t.Errorf("script:\n%s", out.String())
	}
}
