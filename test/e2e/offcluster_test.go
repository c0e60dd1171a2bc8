package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The local object store's bucket and key (test/objectstore/s3server).
const (
	drillBucket    = "sidecarset-backups"
	drillAccessKey = "drill"
	drillSecretKey = "drill-secret-0123456789"
)

// copyOffCluster copies snapshot to a local S3-compatible object store (test/objectstore/s3server,
// gofakes3 checking every request's signature) with the server binary's `snapshot upload`, as the
// backup CronJobs' upload container runs it, downloads it back with `snapshot download` into a file
// of its own, and returns that file's path: what a restore from the off-cluster copy starts from.
func copyOffCluster(t *testing.T, snapshot string) string {
	t.Helper()
	endpoint := startObjectStore(t)
	server := filepath.Join(root, "_output/bin/sidecarset-apiserver")
	flags := []string{"--endpoint", endpoint, "--bucket", drillBucket, "--prefix", "drill/"}
	out := runSnapshotCommand(t, server, append([]string{"snapshot", "upload", snapshot}, flags...)...)
	m := regexp.MustCompile(`as (drill/snapshot-\d{8}T\d{6}Z\.db)\n$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("snapshot upload printed %q, want the key drill/snapshot-<UTC time>.db", out)
	}
	copied := filepath.Join(t.TempDir(), "downloaded.db")
	runSnapshotCommand(t, server, append([]string{"snapshot", "download", m[1], copied}, flags...)...)
	want, err := os.ReadFile(snapshot)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(copied); err != nil || string(got) != string(want) {
		t.Fatalf("the downloaded copy: %d bytes (%v), the snapshot %d", len(got), err, len(want))
	}
	return copied
}

// runSnapshotCommand runs the server binary with args and the store's credentials in its
// environment, and returns its output; it fails t if the command fails.
func runSnapshotCommand(t *testing.T, server string, args ...string) string {
	t.Helper()
	cmd := exec.Command(server, args...)
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+drillAccessKey, "AWS_SECRET_ACCESS_KEY="+drillSecretKey)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sidecarset-apiserver %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// startObjectStore builds and starts test/objectstore/s3server on a loopback port, stopped when
// the test ends, and returns its URL.
func startObjectStore(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "s3server")
	build := exec.Command("go", "build", "-o", bin, "./s3server")
	build.Dir = filepath.Join(root, "test/objectstore")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building test/objectstore/s3server: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-listen", "127.0.0.1:0", "-bucket", drillBucket, "-access-key", drillAccessKey, "-secret-key", drillSecretKey)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "s3server: listening on ")
	if err != nil || !ok {
		t.Fatalf("s3server's first line %q (%v), want its address", line, err)
	}
	return url
}
