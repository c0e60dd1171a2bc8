// Command release assembles a release's artifacts in one directory (make release runs it through
// hack/release/release.sh, which builds the binaries and packages the chart first):
//
//   - oci/ and sidecarset-apiserver-oci.tar: the server's image index for every -server platform
//     (an image layout and its oci-archive), with the OCI annotations and labels of -version,
//     -revision, -source, -licenses and -created;
//   - kubectl-sidecarset-OS-ARCH.tar.gz for every -plugin platform: the plugin and LICENSE;
//   - sidecarset.yaml: the krew manifest of those archives, each at -url/NAME with its sha256;
//   - SHA256SUMS: the sha256 of every file of the directory (the packaged chart among them).
//
// Then, or alone with -verify, it checks what the directory holds (Verify).
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/sidecarset/apiserver/hack/release/image"
)

// Names of the release's files.
const (
	LayoutDir    = "oci"
	ImageArchive = "sidecarset-apiserver-oci.tar"
	KrewManifest = "sidecarset.yaml"
	Checksums    = "SHA256SUMS"
	PluginName   = "kubectl-sidecarset"
)

// Options is what a release is made of.
type Options struct {
	// Dir is the release's directory.
	Dir string
	// Meta is the release's version, commit, source, licenses and time.
	Meta image.Metadata
	// Servers are the server binaries by platform, "linux/ARCH".
	Servers map[string]string
	// Plugins are the plugin binaries by platform, "OS/ARCH".
	Plugins map[string]string
	// License is the LICENSE file every plugin archive holds.
	License string
	// URL is where the plugin archives are downloaded from (the krew manifest's uri base).
	URL string
}

func main() {
	o := Options{Servers: map[string]string{}, Plugins: map[string]string{}}
	verifyOnly := flag.Bool("verify", false, "only check the release in -dir")
	created := flag.String("created", "", "the release's time, RFC 3339 (the commit's time)")
	flag.StringVar(&o.Dir, "dir", "", "the release directory (holds the packaged chart; the rest is written here)")
	flag.StringVar(&o.Meta.Version, "version", "", "the release's version, e.g. v1.2.3 (the image's ref name and the krew manifest's version)")
	flag.StringVar(&o.Meta.Revision, "revision", "", "the commit")
	flag.StringVar(&o.Meta.Source, "source", "", "the repository's URL (also the krew manifest's homepage)")
	flag.StringVar(&o.Meta.Licenses, "licenses", "Apache-2.0", "the SPDX license expression")
	flag.Var(platformFiles(o.Servers), "server", "PLATFORM=PATH: a server binary for linux/ARCH (repeatable)")
	flag.Var(platformFiles(o.Plugins), "plugin", "PLATFORM=PATH: a plugin binary for OS/ARCH (repeatable)")
	flag.StringVar(&o.License, "license", "LICENSE", "the license file the plugin archives hold")
	flag.StringVar(&o.URL, "url", "", "the base URL of the plugin archives in the krew manifest")
	flag.Parse()
	o.Meta.Title = "sidecarset-apiserver"
	err := func() error {
		if o.Dir == "" {
			return fmt.Errorf("-dir is required")
		}
		if !*verifyOnly {
			t, err := time.Parse(time.RFC3339, *created)
			if err != nil {
				return fmt.Errorf("-created: %w", err)
			}
			o.Meta.Created = t
			if err := Assemble(o); err != nil {
				return err
			}
		}
		report, err := Verify(o.Dir)
		fmt.Print(report)
		return err
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

// platformFiles is a repeatable PLATFORM=PATH flag.
type platformFiles map[string]string

func (p platformFiles) String() string {
	var s []string
	for k, v := range p {
		s = append(s, k+"="+v)
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

func (p platformFiles) Set(v string) error {
	platform, path, ok := strings.Cut(v, "=")
	if os, arch, okp := strings.Cut(platform, "/"); !ok || !okp || os == "" || arch == "" || path == "" {
		return fmt.Errorf("%q: want OS/ARCH=PATH", v)
	}
	p[platform] = path
	return nil
}

// Assemble writes the release's image, plugin archives, krew manifest and checksums into o.Dir.
func Assemble(o Options) error {
	if o.Meta.Version == "" || o.URL == "" || len(o.Servers) == 0 || len(o.Plugins) == 0 {
		return fmt.Errorf("a version, a URL, server binaries and plugin binaries are required")
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	if err := writeImage(o); err != nil {
		return err
	}
	archives, err := writePluginArchives(o)
	if err != nil {
		return err
	}
	manifest, err := krewManifest(o, archives)
	if err != nil {
		return err
	}
	if err := os.WriteFile(joinDir(o.Dir, KrewManifest), manifest, 0o644); err != nil {
		return err
	}
	return writeChecksums(o.Dir)
}

// writeImage writes the server's image index: one image per server binary, the index and each
// image annotated with the release's OCI keys, named by the version in the layout.
func writeImage(o Options) error {
	labels := o.Meta.Labels()
	var images []v1.Image
	for _, platform := range sortedKeys(o.Servers) {
		osName, arch, _ := strings.Cut(platform, "/")
		if osName != "linux" {
			return fmt.Errorf("server for %s: the image is for linux only", platform)
		}
		binary, err := os.ReadFile(o.Servers[platform])
		if err != nil {
			return err
		}
		img, err := image.Build(image.Spec{Binary: binary, Arch: arch, Labels: labels, Created: o.Meta.Created})
		if err != nil {
			return fmt.Errorf("image for %s: %w", platform, err)
		}
		images = append(images, img)
	}
	idx, err := image.Index(images, labels)
	if err != nil {
		return err
	}
	layoutDir := joinDir(o.Dir, LayoutDir)
	if err := image.WriteIndexLayout(layoutDir, idx, o.Meta.Version); err != nil {
		return err
	}
	return image.WriteArchiveFile(layoutDir, joinDir(o.Dir, ImageArchive))
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
