// Package e2e runs end-to-end tests against the local cluster of hack/local-up.sh: a real etcd and
// kube-apiserver with this server behind the aggregation layer. Run with E2E=1 (make e2e); set
// E2E_KEEP=1 to leave the cluster running afterwards.
package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	clientset "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
)

var (
	root       string
	kubectl    string
	kubeconfig string
	restConfig *rest.Config
	kube       kubernetes.Interface
	sidecars   clientset.Interface
)

// serverNamespace is the server's own namespace in the local cluster: hack/local-up.sh's
// --namespace, the rendered base's (artifacts/deploy), left out by the injection webhooks. Not
// OpenKruise's kruise-system, which the tests name only as OpenKruise's.
const serverNamespace = "sidecarset-system"

func TestMain(m *testing.M) {
	if os.Getenv("E2E") != "1" {
		fmt.Println("skipping end-to-end tests: set E2E=1 (make e2e) to run them against a local cluster")
		os.Exit(0)
	}
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	var err error
	if root, err = filepath.Abs("../.."); err != nil {
		return 0, err
	}
	out, err := localUp("up")
	if err != nil {
		if os.Getenv("E2E_KEEP") != "1" {
			_, _ = localUp("down") // what did start must not outlive the run
		}
		return 0, err
	}
	if os.Getenv("E2E_KEEP") != "1" {
		defer func() { _, _ = localUp("down") }()
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "export KUBECONFIG="); ok {
			kubeconfig = v
		}
		if v, ok := strings.CutPrefix(line, "kubectl: "); ok {
			kubectl = v
		}
	}
	if restConfig, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		return 0, err
	}
	restConfig.QPS, restConfig.Burst = 200, 400 // tests poll a lot; client throttling only slows them
	kube = kubernetes.NewForConfigOrDie(restConfig)
	sidecars = clientset.NewForConfigOrDie(restConfig)
	phases.start = time.Now()
	code := m.Run()
	reportPhases(time.Now())
	return code, nil
}

func localUp(args ...string) (string, error) {
	if inParallelPhase() && args[0] != "down" {
		return "", fmt.Errorf("hack/local-up.sh %s in the parallel phase would disturb the tests running there; run it in the serial phase", strings.Join(args, " "))
	}
	cmd := exec.Command(filepath.Join(root, "hack/local-up.sh"), args...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = os.Stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("hack/local-up.sh %s: %w", strings.Join(args, " "), err)
	}
	return stdout.String(), err
}

// localState is the local cluster's folder (hack/local-up.sh's LOCAL_STATE): its run/ holds the
// pid files, logs/ the logs of its processes.
func localState() string {
	if dir := os.Getenv("LOCAL_STATE"); dir != "" {
		return dir
	}
	return filepath.Join(root, "_output", "local")
}

// serverPort returns the port server replica n listens on, as hack/local-up.sh sets it: replica 1
// (up, restart-server; the one the APIServices route to) on SERVER_PORT (default 38443), replica 2
// (start-replica) on SERVER_REPLICA_PORT (default SERVER_PORT+1).
func serverPort(replica int) int {
	port := envInt("SERVER_PORT", 38443)
	if replica == 1 {
		return port
	}
	return envInt("SERVER_REPLICA_PORT", port+1)
}

// serverProcess returns hack/local-up.sh's name for server replica n: its pid file is
// _output/local/run/<name>.pid and its log _output/local/logs/<name>.log.
func serverProcess(replica int) string {
	if replica == 1 {
		return "sidecarset-apiserver"
	}
	return "sidecarset-apiserver-" + strconv.Itoa(replica)
}

// serverConfig returns a client configuration that reaches server replica n directly, not through
// kube-apiserver, as cluster admin (the server delegates authentication to kube-apiserver).
func serverConfig(replica int) *rest.Config {
	cfg := rest.CopyConfig(restConfig)
	cfg.Host = fmt.Sprintf("https://127.0.0.1:%d", serverPort(replica))
	cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CAFile, cfg.TLSClientConfig.Insecure = nil, "", true
	return cfg
}

// runKubectl runs the cluster's kubectl and returns its combined output.
func runKubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
