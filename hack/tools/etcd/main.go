// Command etcd runs a single-member etcd for the local cluster: etcd -data-dir DIR -listen-client-urls URL.
package main

import (
	"flag"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	dataDir := flag.String("data-dir", "default.etcd", "data directory")
	client := flag.String("listen-client-urls", "http://127.0.0.1:2379", "client URL")
	peer := flag.String("listen-peer-urls", "http://127.0.0.1:2380", "peer URL")
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
