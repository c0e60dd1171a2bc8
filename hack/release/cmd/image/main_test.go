package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/sidecarset/apiserver/hack/release/image"
)

// TestRun: the flags hack/local-up.sh passes (an etcd-like image with links, user and entrypoint, named for
// ctr) and the release's labels reach the layout; the archive is written beside it.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "etcd")
	if err := os.WriteFile(bin, []byte("etcd binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := options{binary: bin, arch: "arm64", ref: "sidecarset.dev/etcd:local", layout: filepath.Join(dir, "oci"),
		archive: filepath.Join(dir, "etcd.tar"), entrypoint: "/etcd", user: "0:0", created: "2026-01-02T03:04:05Z",
		links: linkList{"/usr/local/bin/etcd", "/usr/local/bin/etcdctl"}, meta: image.Metadata{Version: "v1.2.3"}}
	if err := run(o); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(o.layout)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Platform.String() != "linux/arm64" ||
		m.Manifests[0].Annotations[image.AnnotationContainerdName] != "sidecarset.dev/etcd:local" {
		t.Fatalf("index.json: %+v", m.Manifests)
	}
	img, err := p.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{image.AnnotationVersion: "v1.2.3", image.AnnotationCreated: "2026-01-02T03:04:05Z"}
	if diff := cmp.Diff(want, cfg.Config.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if cfg.Config.User != "0:0" || cfg.Config.Entrypoint[0] != "/etcd" || len(cfg.Config.Env) != 1 {
		t.Errorf("config: %+v", cfg.Config)
	}
	if st, err := os.Stat(o.archive); err != nil || st.Size() == 0 {
		t.Errorf("archive: %v", err)
	}
	o.created = "yesterday"
	if err := run(o); err == nil {
		t.Error("no error for -created yesterday")
	}
}
