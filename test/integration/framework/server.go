// Package framework starts the SidecarSet API server in process, on an embedded etcd, for
// integration tests. Authentication and authorization are off (every request is privileged); and so is
// the admission chain, which needs a main cluster: the end-to-end tier covers both.
package framework

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/util/wait"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/rest"

	"github.com/sidecarset/apiserver/cmd/apiserver/app"
	clientset "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
)

// Server is a running in-process server.
type Server struct {
	// Config reaches the server as a privileged loopback client.
	Config *rest.Config
	// Client is the generated clientset on Config.
	Client clientset.Interface
	// Etcd reaches the server's etcd directly, to read and write what is stored.
	Etcd *clientv3.Client
	// EtcdPrefix is the prefix of every key the server stores.
	EtcdPrefix string
}

// Option changes the server's options before it starts (a flag the test sets).
type Option func(*app.Options)

// StartServer starts the server and stops it when the test ends.
func StartServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	return StartReplicas(t, 1, opts...)[0]
}

// StartReplicas starts n servers sharing one etcd, as the replicas of one deployment are (each
// with its own caches and controllers), and stops them when the test ends.
func StartReplicas(t testing.TB, n int, opts ...Option) []*Server {
	t.Helper()
	etcdServer, etcdConfig := etcd3testing.NewUnsecuredEtcd3TestClientServer(t)
	servers := make([]*Server, n)
	for i := range servers {
		servers[i] = start(t, *etcdConfig, opts)
		servers[i].Etcd, servers[i].EtcdPrefix = etcdServer.V3Client.Client, etcdConfig.Prefix
	}
	return servers
}

// start starts one server on etcdConfig.
func start(t testing.TB, etcdConfig storagebackend.Config, opts []Option) *Server {
	t.Helper()
	o := app.NewOptions()
	o.LeaderElect = false
	o.RecommendedOptions.Etcd.StorageConfig.Transport = etcdConfig.Transport
	o.RecommendedOptions.Etcd.StorageConfig.Prefix = etcdConfig.Prefix
	o.RecommendedOptions.Authentication = nil
	o.RecommendedOptions.Authorization = nil
	o.RecommendedOptions.CoreAPI = nil
	o.RecommendedOptions.Features.EnablePriorityAndFairness = false
	// The admission chain needs the main cluster's informers; the end-to-end tier exercises it.
	o.RecommendedOptions.Admission = nil
	listener, port, err := genericoptions.CreateListener("tcp", "127.0.0.1:0", net.ListenConfig{})
	if err != nil {
		t.Fatal(err)
	}
	o.RecommendedOptions.SecureServing.Listener = listener
	o.RecommendedOptions.SecureServing.BindPort = port
	o.RecommendedOptions.SecureServing.ServerCert.CertDirectory = t.TempDir()
	for _, opt := range opts {
		opt(o)
	}

	cfg, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := cfg.Complete().New()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Run(ctx); err != nil {
			t.Errorf("server stopped: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })

	loopback := rest.CopyConfig(cfg.GenericConfig.LoopbackClientConfig)
	waitReady(t, loopback)
	return &Server{Config: loopback, Client: clientset.NewForConfigOrDie(loopback)}
}

func waitReady(t testing.TB, cfg *rest.Config) {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true,
		func(ctx context.Context) (bool, error) {
			resp, err := client.Get(cfg.Host + "/readyz")
			if err != nil {
				return false, nil
			}
			defer resp.Body.Close()
			return resp.StatusCode == http.StatusOK, nil
		})
	if err != nil {
		t.Fatal(fmt.Errorf("server not ready: %w", err))
	}
}
