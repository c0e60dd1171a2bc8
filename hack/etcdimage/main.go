// Command etcdimage is etcd's own server (go.etcd.io/etcd/server/v3/etcdmain) and etcdctl
// (go.etcd.io/etcd/etcdctl/v3/ctlv3) in one static binary, chosen by the name it runs as: the
// binary of the etcd image the real-node deployment test builds (TestRealNodeDeployment), which
// holds it as /usr/local/bin/etcd and /usr/local/bin/etcdctl, what artifacts/deploy's StatefulSet
// (`etcd` with a 3-member TLS cluster's flags) and its backup CronJobs (`etcdctl snapshot save`)
// run. The same etcd version as the server's client and hack/tools/etcd. Its own module, so that
// etcd's proxy and etcdctl dependencies stay out of the server's and the tools' modules.
//
//	cd hack/etcdimage && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o ../../_output/etcd-image/etcd .
package main

import (
	"os"
	"path/filepath"

	"go.etcd.io/etcd/etcdctl/v3/ctlv3"
	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	if filepath.Base(os.Args[0]) == "etcdctl" {
		ctlv3.MustStart()
		return
	}
	etcdmain.Main(os.Args)
}
