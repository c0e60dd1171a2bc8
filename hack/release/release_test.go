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
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/hack/release/image"
)

const testVersion = "v1.2.3-rc.1"

// assembleFake assembles a release of small fake binaries (each an executable header of its
// platform followed by its name) and a fake chart package into a new directory, and returns the
// directory. edit, when not nil, changes the options first.
func assembleFake(t *testing.T, edit func(o *Options)) string {
	t.Helper()
	src, dir := t.TempDir(), t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(src, name)
		if err := os.WriteFile(p, data, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	o := Options{
		Dir: dir,
		Meta: image.Metadata{Version: testVersion, Revision: "0123456789abcdef", Source: "https://example.com/sidecarset",
			Licenses: "Apache-2.0", Title: "sidecarset-apiserver", Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		Servers: map[string]string{}, Plugins: map[string]string{},
		License: write("LICENSE", []byte("Apache License\nVersion 2.0\n")),
		URL:     "https://example.com/releases/download/" + testVersion + "/",
	}
	for _, p := range ServerPlatforms {
		o.Servers[p] = write("server-"+strings.ReplaceAll(p, "/", "-"), fakeBinary(p, "server for "+p))
	}
	for _, p := range PluginPlatforms {
		o.Plugins[p] = write("plugin-"+strings.ReplaceAll(p, "/", "-"), fakeBinary(p, "plugin for "+p))
	}
	chart := tgz(t, map[string]string{ChartName + "/Chart.yaml": "apiVersion: v2\nname: " + ChartName +
		"\nversion: 1.2.3-rc.1\nappVersion: " + testVersion + "\n"})
	if err := os.WriteFile(filepath.Join(dir, ChartName+"-1.2.3-rc.1.tgz"), chart, 0o644); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&o)
	}
	if err := Assemble(o); err != nil {
		t.Fatal(err)
	}
	return dir
}

func tgz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sha256Of(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// TestAssemble reads what Assemble wrote on its own (not through Verify): the files, the image
// index's platforms and annotations, each image's configuration, the checksums and the krew
// manifest; then Verify agrees.
func TestAssemble(t *testing.T) {
	dir := assembleFake(t, nil)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{Checksums, "kubectl-sidecarset-darwin-amd64.tar.gz", "kubectl-sidecarset-darwin-arm64.tar.gz",
		"kubectl-sidecarset-linux-amd64.tar.gz", "kubectl-sidecarset-linux-arm64.tar.gz", LayoutDir,
		ImageArchive, ChartName + "-1.2.3-rc.1.tgz", KrewManifest}
	slices.Sort(want)
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	checkIndex(t, filepath.Join(dir, LayoutDir))
	checkChecksums(t, dir, want)
	checkKrew(t, dir)
	report, err := Verify(dir)
	if err != nil {
		t.Fatalf("Verify: %v\n%s", err, report)
	}
	t.Logf("Verify:\n%s", report)
}

// wantAnnotations are the OCI keys of assembleFake's release.
var wantAnnotations = map[string]string{
	"org.opencontainers.image.version":  testVersion,
	"org.opencontainers.image.revision": "0123456789abcdef",
	"org.opencontainers.image.source":   "https://example.com/sidecarset",
	"org.opencontainers.image.licenses": "Apache-2.0",
	"org.opencontainers.image.title":    "sidecarset-apiserver",
	"org.opencontainers.image.created":  "2026-01-02T03:04:05Z",
}

// checkIndex: index.json names one index by the version; the index lists linux/amd64 and
// linux/arm64; the index, each manifest and each configuration's labels carry the annotations;
// each configuration says its platform and holds its platform's binary.
func checkIndex(t *testing.T, dir string) {
	t.Helper()
	var top struct {
		Manifests []struct {
			MediaType   string            `json:"mediaType"`
			Digest      string            `json:"digest"`
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	readJSON(t, filepath.Join(dir, "index.json"), &top)
	if len(top.Manifests) != 1 || top.Manifests[0].MediaType != "application/vnd.oci.image.index.v1+json" ||
		top.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != testVersion {
		t.Fatalf("index.json = %+v, want one image index named %s", top, testVersion)
	}
	var idx struct {
		Manifests []struct {
			MediaType string `json:"mediaType"`
			Digest    string `json:"digest"`
			Platform  struct{ OS, Architecture string }
		} `json:"manifests"`
		Annotations map[string]string `json:"annotations"`
	}
	readJSON(t, blobPath(dir, top.Manifests[0].Digest), &idx)
	if diff := cmp.Diff(wantAnnotations, idx.Annotations); diff != "" {
		t.Errorf("index annotations (-want +got):\n%s", diff)
	}
	var platforms []string
	for _, m := range idx.Manifests {
		platforms = append(platforms, m.Platform.OS+"/"+m.Platform.Architecture)
		checkPlatformImage(t, dir, m.Digest, m.Platform.OS, m.Platform.Architecture)
	}
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, platforms); diff != "" {
		t.Errorf("index platforms (-want +got):\n%s", diff)
	}
}

func checkPlatformImage(t *testing.T, dir, digest, osName, arch string) {
	t.Helper()
	var m struct {
		MediaType   string            `json:"mediaType"`
		Annotations map[string]string `json:"annotations"`
		Config      struct{ Digest string }
	}
	readJSON(t, blobPath(dir, digest), &m)
	var cfg struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
		Config       struct {
			Labels     map[string]string
			User       string
			Entrypoint []string
		} `json:"config"`
	}
	readJSON(t, blobPath(dir, m.Config.Digest), &cfg)
	if m.MediaType != "application/vnd.oci.image.manifest.v1+json" || cfg.OS != osName || cfg.Architecture != arch {
		t.Errorf("%s/%s: manifest %s, configuration for %s/%s", osName, arch, m.MediaType, cfg.OS, cfg.Architecture)
	}
	if diff := cmp.Diff(wantAnnotations, m.Annotations); diff != "" {
		t.Errorf("%s/%s manifest annotations (-want +got):\n%s", osName, arch, diff)
	}
	if diff := cmp.Diff(wantAnnotations, cfg.Config.Labels); diff != "" {
		t.Errorf("%s/%s labels (-want +got):\n%s", osName, arch, diff)
	}
	// The binary in the image is this platform's.
	l, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	root, err := l.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	files := imageFiles(t, root, digest)
	if got, want := files["sidecarset-apiserver"], fakeBinary(osName+"/"+arch, "server for "+osName+"/"+arch); !bytes.Equal(got, want) {
		t.Errorf("%s/%s: /sidecarset-apiserver is %q, want %q", osName, arch, got, want)
	}
}

func blobPath(dir, digest string) string {
	return filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:"))
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// checkChecksums: SHA256SUMS lists every file but itself (not the layout directory), each with
// its sha256, in sha256sum's format.
func checkChecksums(t *testing.T, dir string, names []string) {
	t.Helper()
	var want []string
	for _, n := range names {
		if n != Checksums && n != LayoutDir {
			want = append(want, sha256Of(t, filepath.Join(dir, n))+"  "+n)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, Checksums))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(strings.Join(want, "\n")+"\n", string(data)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", Checksums, diff)
	}
}

// checkKrew: the krew manifest names each archive at the URL with its sha256; each archive holds
// the platform's plugin, executable, and LICENSE.
func checkKrew(t *testing.T, dir string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, KrewManifest))
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := yaml.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	if p["apiVersion"] != "krew.googlecontainertools.github.com/v1alpha2" || p["kind"] != "Plugin" ||
		p["metadata"].(map[string]any)["name"] != "sidecarset" {
		t.Fatalf("krew manifest:\n%s", data)
	}
	spec := p["spec"].(map[string]any)
	if spec["version"] != testVersion {
		t.Errorf("krew version %v, want %s", spec["version"], testVersion)
	}
	platforms := spec["platforms"].([]any)
	if len(platforms) != 4 {
		t.Fatalf("krew platforms: %d, want 4", len(platforms))
	}
	for _, x := range platforms {
		kp := x.(map[string]any)
		labels := kp["selector"].(map[string]any)["matchLabels"].(map[string]any)
		osName, arch := labels["os"].(string), labels["arch"].(string)
		name := "kubectl-sidecarset-" + osName + "-" + arch + ".tar.gz"
		if kp["uri"] != "https://example.com/releases/download/"+testVersion+"/"+name || kp["sha256"] != sha256Of(t, filepath.Join(dir, name)) {
			t.Errorf("%s/%s: uri %v sha256 %v", osName, arch, kp["uri"], kp["sha256"])
		}
		got := readArchive(t, filepath.Join(dir, name))
		want := map[string]string{"kubectl-sidecarset": "-rwxr-xr-x " + string(fakeBinary(osName+"/"+arch, "plugin for "+osName+"/"+arch)),
			"LICENSE": "-rw-r--r-- Apache License\nVersion 2.0\n"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

// readArchive returns each file of a .tar.gz as "MODE CONTENT".
func readArchive(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h.FileInfo().Mode().String() + " " + string(data)
	}
}

// TestAssembleReproducible: the same inputs give the same files, byte for byte.
func TestAssembleReproducible(t *testing.T) {
	a, b := assembleFake(t, nil), assembleFake(t, nil)
	for _, name := range []string{Checksums, ImageArchive, KrewManifest} {
		if sha256Of(t, filepath.Join(a, name)) != sha256Of(t, filepath.Join(b, name)) {
			t.Errorf("%s differs between two runs", name)
		}
	}
}

// TestVerifyFindsTampering: Verify fails on each kind of damage to a release.
func TestVerifyFindsTampering(t *testing.T) {
	for name, tamper := range map[string]func(t *testing.T, dir string){
		"archive changed": func(t *testing.T, dir string) {
			appendTo(t, filepath.Join(dir, "kubectl-sidecarset-linux-arm64.tar.gz"), "x")
		},
		"file not in SHA256SUMS": func(t *testing.T, dir string) { appendTo(t, filepath.Join(dir, "extra.txt"), "x") },
		"krew sha256 wrong": func(t *testing.T, dir string) {
			replaceIn(t, filepath.Join(dir, KrewManifest), "sha256: ", "sha256: 0")
			if err := writeChecksums(dir); err != nil {
				t.Fatal(err)
			}
		},
		"oci archive differs from the layout": func(t *testing.T, dir string) {
			replaceIn(t, filepath.Join(dir, LayoutDir, "oci-layout"), "1.0.0", "1.0.1")
		},
		"chart version not the release's": func(t *testing.T, dir string) {
			if err := os.Rename(filepath.Join(dir, ChartName+"-1.2.3-rc.1.tgz"), filepath.Join(dir, ChartName+"-1.2.3.tgz")); err != nil {
				t.Fatal(err)
			}
			if err := writeChecksums(dir); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := assembleFake(t, nil)
			tamper(t, dir)
			if report, err := Verify(dir); err == nil {
				t.Fatalf("Verify found nothing:\n%s", report)
			} else {
				t.Logf("Verify: %v", err)
			}
		})
	}
}

// TestVerifyFindsWrongBinaries: a binary built for another platform than the one it is packed
// for fails Verify.
func TestVerifyFindsWrongBinaries(t *testing.T) {
	for name, edit := range map[string]func(o *Options){
		"servers swapped": func(o *Options) {
			o.Servers["linux/amd64"], o.Servers["linux/arm64"] = o.Servers["linux/arm64"], o.Servers["linux/amd64"]
		},
		"linux plugin for darwin":              func(o *Options) { o.Plugins["darwin/arm64"] = o.Plugins["linux/arm64"] },
		"darwin/amd64 plugin for darwin/arm64": func(o *Options) { o.Plugins["darwin/arm64"] = o.Plugins["darwin/amd64"] },
	} {
		t.Run(name, func(t *testing.T) {
			dir := assembleFake(t, edit)
			if report, err := Verify(dir); err == nil {
				t.Fatalf("Verify found nothing:\n%s", report)
			} else {
				t.Logf("Verify: %v", err)
			}
		})
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func replaceIn(t *testing.T, path, old, new string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(old)) {
		t.Fatalf("%s holds no %q", path, old)
	}
	if err := os.WriteFile(path, bytes.Replace(data, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}
