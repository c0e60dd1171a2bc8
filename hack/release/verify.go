package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/hack/release/image"
)

// The platforms a release holds: the server's image and the plugin's archives.
var (
	ServerPlatforms = []string{"linux/amd64", "linux/arm64"}
	PluginPlatforms = []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64"}
)

// ChartName is the packaged chart's name.
const ChartName = "sidecarset-apiserver"

// Verify checks the release in dir and returns what it found, a line per artifact:
//   - SHA256SUMS lists every file of dir, each with its sha256;
//   - the layout's index.json names one image index by the version; the index has one image for
//     each of ServerPlatforms, each image's configuration says that platform, and the index, every
//     manifest and every configuration's labels carry the same OCI keys (version, revision, source,
//     licenses, created); every blob has its digest and size (go-containerregistry's validate);
//     each image's server is an ELF executable of its architecture;
//   - the oci-archive holds exactly the layout's files;
//   - the krew manifest has an archive for each of PluginPlatforms, whose sha256 is the archive's,
//     and each archive holds the plugin, an executable of its platform (ELF or Mach-O), and LICENSE;
//   - the chart package's version is the release's (without the v), its appVersion the release's.
func Verify(dir string) (string, error) {
	var report strings.Builder
	sums, err := verifyChecksums(dir)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(&report, "%s: %d files\n", Checksums, len(sums))
	version, line, err := verifyImage(joinDir(dir, LayoutDir))
	if err != nil {
		return report.String(), fmt.Errorf("image: %w", err)
	}
	report.WriteString(line)
	if err := verifyArchive(joinDir(dir, LayoutDir), joinDir(dir, ImageArchive)); err != nil {
		return report.String(), fmt.Errorf("%s: %w", ImageArchive, err)
	}
	line, err = verifyKrew(dir, version, sums)
	if err != nil {
		return report.String(), fmt.Errorf("%s: %w", KrewManifest, err)
	}
	report.WriteString(line)
	line, err = verifyChart(dir, version)
	if err != nil {
		return report.String(), fmt.Errorf("chart: %w", err)
	}
	report.WriteString(line)
	return report.String(), nil
}

// verifyChecksums checks that SHA256SUMS lists every regular file of dir but itself, each with
// its sha256, and returns the sums by name.
func verifyChecksums(dir string) (map[string]string, error) {
	data, err := os.ReadFile(joinDir(dir, Checksums))
	if err != nil {
		return nil, err
	}
	sums, err := readChecksums(data)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	listed := 0
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == Checksums {
			continue
		}
		want, ok := sums[e.Name()]
		if !ok {
			return nil, fmt.Errorf("%s does not list %s", Checksums, e.Name())
		}
		got, err := fileSHA256(joinDir(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		if got != want {
			return nil, fmt.Errorf("%s: sha256 %s, %s says %s", e.Name(), got, Checksums, want)
		}
		listed++
	}
	if listed != len(sums) {
		return nil, fmt.Errorf("%s lists %d files, the directory holds %d of them", Checksums, len(sums), listed)
	}
	return sums, nil
}

// verifyImage checks the layout's image index and returns its version.
func verifyImage(dir string) (string, string, error) {
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return "", "", err
	}
	rm, err := root.IndexManifest()
	if err != nil {
		return "", "", err
	}
	if len(rm.Manifests) != 1 || !rm.Manifests[0].MediaType.IsIndex() {
		return "", "", fmt.Errorf("index.json: want one image index, have %+v", rm.Manifests)
	}
	desc := rm.Manifests[0]
	version := desc.Annotations[image.AnnotationRefName]
	idx, err := root.ImageIndex(desc.Digest)
	if err != nil {
		return "", "", err
	}
	if err := validate.Index(idx); err != nil {
		return "", "", err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return "", "", err
	}
	if err := checkAnnotations(im.Annotations, version); err != nil {
		return "", "", fmt.Errorf("index %s: %w", desc.Digest, err)
	}
	var platforms []string
	for _, m := range im.Manifests {
		if m.Platform == nil {
			return "", "", fmt.Errorf("manifest %s: no platform", m.Digest)
		}
		if err := verifyPlatformImage(idx, m, im.Annotations); err != nil {
			return "", "", fmt.Errorf("%s: %w", m.Platform, err)
		}
		platforms = append(platforms, m.Platform.String())
	}
	slices.Sort(platforms)
	if !slices.Equal(platforms, ServerPlatforms) {
		return "", "", fmt.Errorf("index %s: platforms %v, want %v", desc.Digest, platforms, ServerPlatforms)
	}
	return version, fmt.Sprintf("image index %s (%s): %s, OCI annotations %s %s\n", desc.Digest, version,
		strings.Join(platforms, " "), im.Annotations[image.AnnotationRevision], im.Annotations[image.AnnotationCreated]), nil
}

// checkAnnotations checks that a holds every OCI key a release sets, its version being version.
func checkAnnotations(a map[string]string, version string) error {
	for _, k := range []string{image.AnnotationVersion, image.AnnotationRevision, image.AnnotationSource,
		image.AnnotationLicenses, image.AnnotationCreated} {
		if a[k] == "" {
			return fmt.Errorf("no annotation %s", k)
		}
	}
	if version == "" || a[image.AnnotationVersion] != version {
		return fmt.Errorf("version %q, named %q in index.json", a[image.AnnotationVersion], version)
	}
	_, err := time.Parse(time.RFC3339, a[image.AnnotationCreated])
	return err
}

// verifyPlatformImage checks that the image of m is for m's platform, runs the server as nonroot,
// and carries want as its annotations and labels.
func verifyPlatformImage(idx v1.ImageIndex, m v1.Descriptor, want map[string]string) error {
	img, err := idx.Image(m.Digest)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	if cfg.OS != m.Platform.OS || cfg.Architecture != m.Platform.Architecture {
		return fmt.Errorf("configuration says %s/%s", cfg.OS, cfg.Architecture)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{image.BinaryPath}) || cfg.Config.User != image.User {
		return fmt.Errorf("entrypoint %v, user %q", cfg.Config.Entrypoint, cfg.Config.User)
	}
	if !reflect.DeepEqual(cfg.Config.Labels, want) {
		return fmt.Errorf("labels %v, want the index's %v", cfg.Config.Labels, want)
	}
	man, err := img.Manifest()
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(man.Annotations, want) {
		return fmt.Errorf("annotations %v, want the index's %v", man.Annotations, want)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	files, err := readTar(rc)
	if err != nil {
		return err
	}
	server := files[strings.TrimPrefix(image.BinaryPath, "/")]
	if server == nil || server.mode&0o111 == 0 {
		return fmt.Errorf("no executable %s in the image", image.BinaryPath)
	}
	return checkBinary(server.data, m.Platform.String())
}

// verifyArchive checks that the tar archive holds exactly the files of the layout dir.
func verifyArchive(dir, archive string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	seen := map[string]bool{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		h256 := sha256.New()
		if _, err := io.Copy(h256, tr); err != nil {
			return err
		}
		want, err := fileSHA256(filepath.Join(dir, filepath.FromSlash(h.Name)))
		if err != nil || want != hex.EncodeToString(h256.Sum(nil)) {
			return fmt.Errorf("%s differs from the layout's (%v)", h.Name, err)
		}
		seen[h.Name] = true
	}
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err == nil && !seen[filepath.ToSlash(rel)] {
			err = fmt.Errorf("the layout's %s is missing", rel)
		}
		return err
	})
}

// verifyKrew checks the krew manifest against the archives and the checksums.
func verifyKrew(dir, version string, sums map[string]string) (string, error) {
	data, err := os.ReadFile(joinDir(dir, KrewManifest))
	if err != nil {
		return "", err
	}
	var p KrewPlugin
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return "", err
	}
	if p.APIVersion != krewAPIVersion || p.Kind != "Plugin" || p.Metadata.Name != krewName || p.Spec.Version != version {
		return "", fmt.Errorf("%s %s %s version %s, want %s Plugin %s version %s", p.APIVersion, p.Kind, p.Metadata.Name,
			p.Spec.Version, krewAPIVersion, krewName, version)
	}
	var platforms []string
	for _, kp := range p.Spec.Platforms {
		platform := kp.Selector.MatchLabels["os"] + "/" + kp.Selector.MatchLabels["arch"]
		name := PluginArchiveName(platform)
		if !strings.HasSuffix(kp.URI, "/"+name) || kp.Bin != PluginName {
			return "", fmt.Errorf("%s: uri %s, bin %s; want .../%s, %s", platform, kp.URI, kp.Bin, name, PluginName)
		}
		got, err := fileSHA256(joinDir(dir, name))
		if err != nil {
			return "", err
		}
		if kp.SHA256 != got || sums[name] != got {
			return "", fmt.Errorf("%s: sha256 %s, %s's is %s (%s: %s)", platform, kp.SHA256, name, got, Checksums, sums[name])
		}
		if err := verifyPluginArchive(joinDir(dir, name), platform); err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		platforms = append(platforms, platform)
	}
	slices.Sort(platforms)
	if !slices.Equal(platforms, PluginPlatforms) {
		return "", fmt.Errorf("platforms %v, want %v", platforms, PluginPlatforms)
	}
	return fmt.Sprintf("krew manifest %s: %s, %s\n", version, strings.Join(platforms, " "), strings.TrimSuffix(p.Spec.Platforms[0].URI, "/"+PluginArchiveName(platforms[0]))), nil
}

// verifyPluginArchive checks that a plugin archive holds the plugin, an executable for platform,
// and LICENSE.
func verifyPluginArchive(path, platform string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	files, err := readTar(zr)
	if err != nil {
		return err
	}
	bin, lic := files[PluginName], files["LICENSE"]
	if bin == nil || bin.mode&0o111 == 0 || lic == nil || len(lic.data) == 0 || len(files) != 2 {
		return fmt.Errorf("want an executable %s and LICENSE, have %v", PluginName, slices.Sorted(maps.Keys(files)))
	}
	return checkBinary(bin.data, platform)
}

// tarFile is a regular file of a tar archive.
type tarFile struct {
	mode int64
	data []byte
}

// readTar returns the regular files of a tar archive by name.
func readTar(r io.Reader) (map[string]*tarFile, error) {
	files := map[string]*tarFile{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files[h.Name] = &tarFile{mode: h.Mode, data: data}
	}
}

// verifyChart checks the one chart package of dir (NAME-VERSION.tgz): its Chart.yaml says the
// release's version and appVersion.
func verifyChart(dir, version string) (string, error) {
	name := ChartName + "-" + strings.TrimPrefix(version, "v") + ".tgz"
	data, err := chartYAML(joinDir(dir, name))
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	var chart struct {
		Name       string `json:"name"`
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(data, &chart); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if chart.Name != ChartName || chart.Version != strings.TrimPrefix(version, "v") || chart.AppVersion != version {
		return "", fmt.Errorf("%s: %s version %s appVersion %s, want %s %s %s", name, chart.Name, chart.Version, chart.AppVersion,
			ChartName, strings.TrimPrefix(version, "v"), version)
	}
	return fmt.Sprintf("chart %s: version %s, appVersion %s\n", name, chart.Version, chart.AppVersion), nil
}

// chartYAML returns the Chart.yaml of a chart package (NAME/Chart.yaml in the archive).
func chartYAML(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, fmt.Errorf("no %s/Chart.yaml: %w", ChartName, err)
		}
		if h.Name == ChartName+"/Chart.yaml" {
			return io.ReadAll(tr)
		}
	}
}
