// Package app is the kubectl-sidecarset command: the root command and its wiring. Each command is
// a package beside it (check, completion, explain, inject, migrate, rollout, version), a thin
// adapter from the command line and the cluster to the pure cores (pkg/injection, pkg/explain,
// pkg/migrate, check/finding, the server's /rollout); package cli holds what they share.
package app

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/check"
	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/cli"
	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/completion"
	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/explain"
	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/inject"
	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/migrate"
	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/rollout"
	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/version"
)

// Main runs the command with args and returns the process exit code.
func Main(args []string, in io.Reader, out, errOut io.Writer) int {
	cmd := NewCommand(genericiooptions.IOStreams{In: in, Out: out, ErrOut: errOut})
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err == nil {
		return cli.ExitOK
	}
	fmt.Fprintln(errOut, "error:", err)
	if e := (*cli.ExitCodeError)(nil); errors.As(err, &e) {
		return e.Code
	}
	return cli.ExitError
}

// NewCommand returns the root command, kubectl-sidecarset, shown as `kubectl sidecarset`.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return newRoot(cli.NewOptions(streams.In, streams.Out, streams.ErrOut))
}

// Offline is the clock and the randomness of inject and explain (hash timestamps, the Partial
// revision policy): a test comparing them with the server's webhook fixes them (test/parity), as
// it fixes the webhook's.
type Offline struct {
	Now  func() time.Time
	Rand func() float64
}

// NewOfflineCommand returns the root command with the clock and the randomness of off, reaching
// no cluster.
func NewOfflineCommand(streams genericiooptions.IOStreams, off Offline) *cobra.Command {
	o := cli.NewOptions(streams.In, streams.Out, streams.ErrOut)
	o.Now, o.Rand = off.Now, off.Rand
	o.NewClients = func() (*cli.Clients, error) { return nil, errors.New("no cluster: the command runs offline") }
	return newRoot(o)
}

// newRoot is the root command of o with every command under it.
func newRoot(o *cli.Options) *cobra.Command {
	root := cli.NewRoot(o, inject.NewCommand(o), explain.NewCommand(o), rollout.NewCommand(o), version.NewCommand(o), check.NewCommand(o),
		migrate.NewCommand(o))
	root.AddCommand(completion.NewCommand(root))
	return root
}
