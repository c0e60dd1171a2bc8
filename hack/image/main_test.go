package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// blobOf returns the layout's blob for a descriptor, checking its digest and size.
func blobOf(t *testing.T, files map[string][]byte, d descriptor) []byte {
	t.Helper()
	data, ok := files["blobs/sha256/"+strings.TrimPrefix(d.Digest, "sha256:")]
	if !ok {
		t.Fatalf("no blob for %s", d.Digest)
	}
	if digestOf(data) != d.Digest || int64(len(data)) != d.Size {
		t.Fatalf("blob %s: digest %s, size %d (descriptor size %d)", d.Digest, digestOf(data), len(data), d.Size)
	}
	return data
}

type entry struct {
	hdr  *tar.Header
	data []byte
}

func readTar(t *testing.T, data []byte) ([]string, map[string]entry) {
	t.Helper()
	var names []string
	entries := map[string]entry{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names, entries
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		entries[h.Name] = entry{h, b}
	}
}

func TestLayout(t *testing.T) {
	binary := []byte("\x7fELF fake server binary")
	files, err := Layout(binary, "arm64", "v1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(files["oci-layout"]); got != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %s", got)
	}
	var idx index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil {
		t.Fatal(err)
	}
	if idx.SchemaVersion != 2 || idx.MediaType != mediaTypeIndex || len(idx.Manifests) != 1 {
		t.Fatalf("index = %+v", idx)
	}
	md := idx.Manifests[0]
	if md.MediaType != mediaTypeManifest || md.Platform == nil || *md.Platform != (platform{Architecture: "arm64", OS: "linux"}) ||
		md.Annotations["org.opencontainers.image.ref.name"] != "v1.2.3" {
		t.Errorf("index manifest descriptor = %+v", md)
	}
	var m manifest
	if err := json.Unmarshal(blobOf(t, files, md), &m); err != nil {
		t.Fatal(err)
	}
	if m.SchemaVersion != 2 || m.MediaType != mediaTypeManifest || m.Config.MediaType != mediaTypeConfig || len(m.Layers) != 1 ||
		m.Layers[0].MediaType != mediaTypeLayer {
		t.Fatalf("manifest = %+v", m)
	}
	var cfg ImageConfig
	if err := json.Unmarshal(blobOf(t, files, m.Config), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != "arm64" || cfg.Config.User != "65532:65532" ||
		!reflect.DeepEqual(cfg.Config.Entrypoint, []string{"/sidecarset-apiserver"}) || cfg.RootFS.Type != "layers" {
		t.Errorf("config = %+v", cfg)
	}

	zr, err := gzip.NewReader(bytes.NewReader(blobOf(t, files, m.Layers[0])))
	if err != nil {
		t.Fatal(err)
	}
	if !zr.ModTime.IsZero() || zr.Name != "" {
		t.Errorf("gzip header: time %v, name %q", zr.ModTime, zr.Name)
	}
	layer, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.RootFS.DiffIDs, []string{digestOf(layer)}) {
		t.Errorf("diff_ids = %v, want the uncompressed layer's digest %s", cfg.RootFS.DiffIDs, digestOf(layer))
	}
	names, entries := readTar(t, layer)
	if want := []string{"etc/", "etc/group", "etc/passwd", "sidecarset-apiserver"}; !reflect.DeepEqual(names, want) {
		t.Errorf("layer entries = %v, want %v (nothing else: no shell)", names, want)
	}
	for name, e := range entries {
		if !e.hdr.ModTime.Equal(epoch) || e.hdr.Uid != 0 || e.hdr.Gid != 0 {
			t.Errorf("%s: time %v, owner %d:%d", name, e.hdr.ModTime, e.hdr.Uid, e.hdr.Gid)
		}
	}
	if e := entries["sidecarset-apiserver"]; !bytes.Equal(e.data, binary) || e.hdr.Mode != 0o755 || e.hdr.Typeflag != tar.TypeReg {
		t.Errorf("binary entry: mode %o, type %c, %d bytes", e.hdr.Mode, e.hdr.Typeflag, len(e.data))
	}
	if got := string(entries["etc/passwd"].data); !strings.Contains(got, "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd = %q", got)
	}
	if got := string(entries["etc/group"].data); !strings.HasPrefix(got, "nonroot:x:65532:") {
		t.Errorf("/etc/group = %q", got)
	}
	if len(files) != 5 { // oci-layout, index.json, manifest, config, layer
		t.Errorf("%d layout files, want 5", len(files))
	}
}

func TestLayoutReproducible(t *testing.T) {
	a, err := Layout([]byte("binary"), "amd64", "latest")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Layout([]byte("binary"), "amd64", "latest")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("two builds of the same binary differ")
	}
	c, err := Layout([]byte("binary 2"), "amd64", "latest")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a["index.json"], c["index.json"]) {
		t.Error("a different binary gives the same index")
	}
	ta, _ := Archive(a)
	tb, _ := Archive(b)
	if !bytes.Equal(ta, tb) {
		t.Error("two archives of the same layout differ")
	}
}

// TestLayoutOf: a test image (hack/testimage) with its own entrypoint and user, named for
// `ctr images import`.
func TestLayoutOf(t *testing.T) {
	files, err := LayoutOf([]byte("test binary"), "amd64", "sidecarset.dev/test:v1", "/testimage", "0:0")
	if err != nil {
		t.Fatal(err)
	}
	var idx index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil {
		t.Fatal(err)
	}
	md := idx.Manifests[0]
	if md.Annotations["io.containerd.image.name"] != "sidecarset.dev/test:v1" || md.Annotations["org.opencontainers.image.ref.name"] != "sidecarset.dev/test:v1" {
		t.Errorf("annotations %v", md.Annotations)
	}
	var m manifest
	if err := json.Unmarshal(blobOf(t, files, md), &m); err != nil {
		t.Fatal(err)
	}
	var cfg ImageConfig
	if err := json.Unmarshal(blobOf(t, files, m.Config), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != "0:0" || !reflect.DeepEqual(cfg.Config.Entrypoint, []string{"/testimage"}) {
		t.Errorf("config = %+v", cfg.Config)
	}
	zr, err := gzip.NewReader(bytes.NewReader(blobOf(t, files, m.Layers[0])))
	if err != nil {
		t.Fatal(err)
	}
	layer, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if names, _ := readTar(t, layer); !reflect.DeepEqual(names, []string{"etc/", "etc/group", "etc/passwd", "testimage"}) {
		t.Errorf("layer entries %v", names)
	}
	for _, bad := range []string{"testimage", "/bin/testimage", "/", ""} {
		if _, err := LayoutOf([]byte("x"), "amd64", "", bad, "0:0"); err == nil {
			t.Errorf("entrypoint %q: no error", bad)
		}
	}
}

func TestLayoutErrors(t *testing.T) {
	if _, err := Layout(nil, "amd64", ""); err == nil {
		t.Error("no error for an empty binary")
	}
	if _, err := Layout([]byte("x"), "", ""); err == nil {
		t.Error("no error without an architecture")
	}
}

func TestRunWritesLayoutAndArchive(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "server")
	if err := os.WriteFile(bin, []byte("server binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	layout, archive := filepath.Join(dir, "oci"), filepath.Join(dir, "image.tar")
	// A stale blob from an earlier build must not survive.
	if err := os.MkdirAll(filepath.Join(layout, "blobs/sha256"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(layout, "blobs/sha256/stale"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(bin, "amd64", "latest", layout, archive, BinaryPath, User, nil); err != nil {
		t.Fatal(err)
	}
	want, err := Layout([]byte("server binary"), "amd64", "latest")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	err = filepath.Walk(layout, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(layout, p)
		got[filepath.ToSlash(rel)], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("layout directory holds %d files, want the %d of Layout", len(got), len(want))
	}
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	names, entries := readTar(t, data)
	if names[0] != "blobs/" || names[1] != "blobs/sha256/" {
		t.Errorf("archive starts with %v, want its directories first", names[:2])
	}
	for name, content := range want {
		if e, ok := entries[name]; !ok || !bytes.Equal(e.data, content) || !e.hdr.ModTime.Equal(epoch) {
			t.Errorf("archive entry %s missing or different", name)
		}
	}
	if len(entries) != len(want)+2 {
		t.Errorf("archive has %d entries, want %d files and 2 directories", len(entries), len(want))
	}
}

// TestLayoutWithLinks: the etcd image's layout, one binary reached under two names on PATH.
func TestLayoutWithLinks(t *testing.T) {
	files, err := LayoutWithLinks([]byte("etcd"), "amd64", "sidecarset.dev/etcd:local", "/etcd", User,
		[]string{"/usr/local/bin/etcdctl", "/usr/local/bin/etcd"})
	if err != nil {
		t.Fatal(err)
	}
	var idx index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(files["blobs/sha256/"+strings.TrimPrefix(idx.Manifests[0].Digest, "sha256:")], &m); err != nil {
		t.Fatal(err)
	}
	var cfg ImageConfig
	if err := json.Unmarshal(files["blobs/sha256/"+strings.TrimPrefix(m.Config.Digest, "sha256:")], &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Config.Env) != 1 || cfg.Config.Env[0] != DefaultPath {
		t.Errorf("Env = %v, want [%s]", cfg.Config.Env, DefaultPath)
	}
	zr, err := gzip.NewReader(bytes.NewReader(files["blobs/sha256/"+strings.TrimPrefix(m.Layers[0].Digest, "sha256:")]))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	links := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeSymlink {
			links[h.Name] = h.Linkname
		}
	}
	want := map[string]string{"usr/local/bin/etcd": "/etcd", "usr/local/bin/etcdctl": "/etcd"}
	if !reflect.DeepEqual(links, want) {
		t.Errorf("links = %v, want %v", links, want)
	}
	for _, bad := range [][]string{{"/bin/etcd"}, {"/usr/local/bin/a", "/usr/local/bin/a"}} {
		if _, err := LayoutWithLinks([]byte("x"), "amd64", "", "/etcd", User, bad); err == nil {
			t.Errorf("links %v: no error", bad)
		}
	}
	// Without links, no Env: the server's image keeps its digest.
	plain, err := Layout([]byte("etcd"), "amd64", "latest")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range plain {
		if strings.HasPrefix(name, "blobs/") && bytes.Contains(data, []byte(`"Env"`)) {
			t.Errorf("%s has an Env", name)
		}
	}
}
