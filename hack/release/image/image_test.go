package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// layerEntries returns the names of the image's one layer in order, and each file as "MODE CONTENT"
// or "MODE -> LINK".
func layerEntries(t *testing.T, img v1.Image) (names []string, entries map[string]string) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	rc, err := layers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	zr, err := gzip.NewReader(rc)
	if err != nil {
		t.Fatal(err)
	}
	if !zr.ModTime.IsZero() || zr.Name != "" {
		t.Errorf("gzip header: time %v, name %q", zr.ModTime, zr.Name)
	}
	entries = map[string]string{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names, entries
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(epoch) || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: time %v, owner %d:%d", h.Name, h.ModTime, h.Uid, h.Gid)
		}
		names = append(names, h.Name)
		e := h.FileInfo().Mode().String() + " " + string(data)
		if h.Linkname != "" {
			e = h.FileInfo().Mode().String() + " -> " + h.Linkname
		}
		entries[h.Name] = e
	}
}

// roundTrip writes img to a layout and returns the image read back from it, validated.
func roundTrip(t *testing.T, img v1.Image) v1.Image {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "oci")
	if err := WriteImageLayout(dir, img, ""); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	back, err := p.Image(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(back); err != nil {
		t.Fatal(err)
	}
	return back
}

func TestBuild(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	labels := Metadata{Version: "v1.2.3", Revision: "abc", Created: created}.Labels()
	built, err := Build(Spec{Binary: []byte("\x7fELF server"), Arch: "arm64", Labels: labels, Created: created})
	if err != nil {
		t.Fatal(err)
	}
	img := roundTrip(t, built)
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != "application/vnd.oci.image.manifest.v1+json" || m.Config.MediaType != "application/vnd.oci.image.config.v1+json" ||
		m.Layers[0].MediaType != "application/vnd.oci.image.layer.v1.tar+gzip" {
		t.Errorf("media types: manifest %s, config %s, layer %s", m.MediaType, m.Config.MediaType, m.Layers[0].MediaType)
	}
	wantLabels := map[string]string{AnnotationVersion: "v1.2.3", AnnotationRevision: "abc", AnnotationCreated: "2026-01-02T03:04:05Z"}
	if diff := cmp.Diff(wantLabels, m.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	wantConfig := v1.Config{User: "65532:65532", Entrypoint: []string{"/sidecarset-apiserver"}, WorkingDir: "/", Labels: wantLabels}
	if diff := cmp.Diff(wantConfig, cfg.Config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if cfg.OS != "linux" || cfg.Architecture != "arm64" || !cfg.Created.Time.Equal(created) {
		t.Errorf("configuration for %s/%s created %v", cfg.OS, cfg.Architecture, cfg.Created)
	}
	names, entries := layerEntries(t, img)
	if diff := cmp.Diff([]string{"etc/", "etc/group", "etc/passwd", "sidecarset-apiserver"}, names); diff != "" {
		t.Errorf("layer entries (-want +got; nothing else: no shell):\n%s", diff)
	}
	if got := entries["sidecarset-apiserver"]; got != "-rwxr-xr-x \x7fELF server" {
		t.Errorf("binary: %q", got)
	}
	if got := entries["etc/passwd"]; !strings.Contains(got, "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd: %q", got)
	}
}

// TestBuildWithLinks: the etcd image, one binary reached under two names on PATH.
func TestBuildWithLinks(t *testing.T) {
	built, err := Build(Spec{Binary: []byte("etcd"), Arch: "amd64", Entrypoint: "/etcd", User: "0:0",
		Links: []string{"/usr/local/bin/etcdctl", "/usr/local/bin/etcd"}})
	if err != nil {
		t.Fatal(err)
	}
	img := roundTrip(t, built)
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v1.Config{User: "0:0", Entrypoint: []string{"/etcd"}, WorkingDir: "/", Env: []string{DefaultPath}}, cfg.Config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	_, entries := layerEntries(t, img)
	for name, want := range map[string]string{"usr/local/bin/etcd": "Lrwxrwxrwx -> /etcd", "usr/local/bin/etcdctl": "Lrwxrwxrwx -> /etcd"} {
		if entries[name] != want {
			t.Errorf("%s: %q, want %q", name, entries[name], want)
		}
	}
	for _, bad := range []Spec{
		{Binary: []byte("x"), Arch: "amd64", Links: []string{"/bin/etcd"}},
		{Binary: []byte("x"), Arch: "amd64", Links: []string{"/usr/local/bin/a", "/usr/local/bin/a"}},
		{Binary: []byte("x"), Arch: "amd64", Entrypoint: "/bin/app"},
		{Binary: []byte("x"), Arch: "amd64", Entrypoint: "app"},
		{Binary: nil, Arch: "amd64"},
		{Binary: []byte("x")},
	} {
		if _, err := Build(bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// TestImageLayout: the layout `make image` writes and the real-node tests import into containerd:
// index.json lists the image itself (not an index) with its platform and the names ctr reads;
// the archive holds the layout's files, directories first; the same binary gives the same bytes.
func TestImageLayout(t *testing.T) {
	write := func(binary string) (string, []byte) {
		dir := t.TempDir()
		img, err := Build(Spec{Binary: []byte(binary), Arch: "amd64"})
		if err != nil {
			t.Fatal(err)
		}
		// A stale blob from an earlier build must not survive.
		if err := os.MkdirAll(filepath.Join(dir, "oci/blobs/sha256"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "oci/blobs/sha256/stale"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := WriteImageLayout(filepath.Join(dir, "oci"), img, "sidecarset.dev/sidecarset-apiserver:local"); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := WriteArchive(filepath.Join(dir, "oci"), &buf); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(dir, "oci"), buf.Bytes()
	}
	dir, archive := write("server")
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var idx v1.IndexManifest
	if err := json.Unmarshal(data, &idx); err != nil {
		t.Fatal(err)
	}
	if len(idx.Manifests) != 1 || !idx.Manifests[0].MediaType.IsImage() || idx.Manifests[0].Platform.String() != "linux/amd64" {
		t.Fatalf("index.json: %s", data)
	}
	want := map[string]string{AnnotationRefName: "sidecarset.dev/sidecarset-apiserver:local", AnnotationContainerdName: "sidecarset.dev/sidecarset-apiserver:local"}
	if diff := cmp.Diff(want, idx.Manifests[0].Annotations); diff != "" {
		t.Errorf("index.json annotations (-want +got):\n%s", diff)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "blobs/sha256/stale")); !os.IsNotExist(err) {
		t.Errorf("a stale blob survived: %v", err)
	}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err == nil && info.Mode().Perm() != 0o644 && !(d.IsDir() && info.Mode().Perm() == 0o755) {
			t.Errorf("%s: mode %v, want 0644 (files) or 0755 (directories)", p, info.Mode())
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if img, err := p.Image(idx.Manifests[0].Digest); err != nil {
		t.Fatal(err)
	} else if err := validate.Image(img); err != nil {
		t.Error(err)
	}
	var names []string
	tr := tar.NewReader(bytes.NewReader(archive))
	for h, err := tr.Next(); err == nil; h, err = tr.Next() {
		names = append(names, h.Name)
	}
	if len(names) != 7 || names[0] != "blobs/" || names[1] != "blobs/sha256/" || names[5] != "index.json" || names[6] != "oci-layout" {
		t.Errorf("archive entries %v, want the 2 directories, the 3 blobs, index.json and oci-layout", names)
	}
	if _, again := write("server"); !bytes.Equal(archive, again) {
		t.Error("two archives of the same binary differ")
	}
	if _, other := write("server 2"); bytes.Equal(archive, other) {
		t.Error("another binary gives the same archive")
	}
}

func TestIndexRefusesTwoImagesOfAPlatform(t *testing.T) {
	a, err := Build(Spec{Binary: []byte("a"), Arch: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Index([]v1.Image{a, a}, nil); err == nil {
		t.Error("no error for two linux/amd64 images")
	}
}
