// Command etcdimage is etcd's own server (go.etcd.io/etcd/server/v3/etcdmain), etcdctl
// (go.etcd.io/etcd/etcdctl/v3/ctlv3) and etcdutl (go.etcd.io/etcd/etcdutl/v3/etcdutl) in one
// static binary, chosen by the name it runs as, as registry.k8s.io/etcd ships the three: the
// binary of the etcd image the real-node deployment test builds (TestRealNodeDeployment), which
// holds it as /usr/local/bin/etcd, etcdctl and etcdutl, what artifacts/deploy's StatefulSet (`etcd`
// with a 3-member TLS cluster's flags), its backup CronJobs (`etcdctl snapshot save`) and the
// restore procedure (`etcdutl snapshot restore`) run; hack/local-up.sh's snapshot-server-etcd and
// restore-server-etcd run it as etcdctl and etcdutl. The same etcd version as the server's client
// and hack/tools/etcd. Its own module, so that etcd's proxy, etcdctl and etcdutl dependencies stay
// out of the server's and the tools' modules.
//
//	cd hack/etcdimage && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o ../../_output/etcd-image/etcd .
package main

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/etcdctl/v3/ctlv3"
	"go.etcd.io/etcd/etcdutl/v3/etcdutl"
	"go.etcd.io/etcd/pkg/v3/cobrautl"
	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	switch filepath.Base(os.Args[0]) {
	case "etcdctl":
		ctlv3.MustStart()
	case "etcdutl":
		if err := etcdutlCommand().Execute(); err != nil {
			cobrautl.ExitWithError(cobrautl.ExitError, err)
		}
	default:
		etcdmain.Main(os.Args)
	}
}

// etcdutlCommand is etcdutl's root command as its own main package builds it (etcdutl/ctl.go at
// the same version): the package holds the subcommands, the root is the binary's.
func etcdutlCommand() *cobra.Command {
	root := &cobra.Command{Use: "etcdutl", Short: "An administrative command line tool for etcd3."}
	root.PersistentFlags().StringVarP(&etcdutl.OutputFormat, "write-out", "w", "simple", "set the output format (fields, json, protobuf, simple, table)")
	root.AddCommand(
		etcdutl.NewDefragCommand(),
		etcdutl.NewSnapshotCommand(),
		etcdutl.NewHashKVCommand(),
		etcdutl.NewVersionCommand(),
		etcdutl.NewCompletionCommand(),
		etcdutl.NewMigrateCommand(),
	)
	root.SetHelpTemplate(`{{.UsageString}}`)
	return root
}
