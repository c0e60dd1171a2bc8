// Command etcd runs a single-member etcd for the local cluster, with etcd's own flag names:
//
//	etcd -data-dir DIR -listen-client-urls URL [-listen-peer-urls URL]
//	     [-cert-file F -key-file F [-client-cert-auth -trusted-ca-file F]]
//	     [-peer-cert-file F -peer-key-file F [-peer-client-cert-auth -peer-trusted-ca-file F]]
//
// It advertises the URLs it listens on. https URLs need the certificate flags.
package main

import (
	"flag"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	dataDir := flag.String("data-dir", "default.etcd", "data directory")
	client := flag.String("listen-client-urls", "http://127.0.0.1:2379", "client URL")
	peer := flag.String("listen-peer-urls", "http://127.0.0.1:2380", "peer URL")
	clientTLS, peerTLS := tlsFlags(""), tlsFlags("peer-")
	flag.Parse()
	cfg := embed.NewConfig()
	cfg.Dir = *dataDir
	cu, err := url.Parse(*client)
	if err != nil {
		log.Fatal(err)
	}
	pu, err := url.Parse(*peer)
	if err != nil {
		log.Fatal(err)
	}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	cfg.ClientTLSInfo, cfg.PeerTLSInfo = *clientTLS, *peerTLS
	cfg.LogLevel = "error"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	<-e.Server.ReadyNotify()
	log.Printf("etcd ready on %s", cu)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case err := <-e.Err():
		log.Fatal(err)
	case <-sig:
	}
}

// tlsFlags registers etcd's TLS flags with the given prefix ("" for clients, "peer-" for peers).
func tlsFlags(prefix string) *transport.TLSInfo {
	info := &transport.TLSInfo{}
	flag.StringVar(&info.CertFile, prefix+"cert-file", "", "TLS certificate")
	flag.StringVar(&info.KeyFile, prefix+"key-file", "", "TLS key")
	flag.StringVar(&info.TrustedCAFile, prefix+"trusted-ca-file", "", "CA of the client certificates")
	flag.BoolVar(&info.ClientCertAuth, prefix+"client-cert-auth", false, "require client certificates")
	return info
}
