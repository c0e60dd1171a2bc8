// Package image builds the server's OCI images with go-containerregistry: one image per platform
// (a single layer holding the static binary and an /etc/passwd and /etc/group that name uid and
// gid 65532 "nonroot"; no shell, nothing else), an image index over several platforms, and the
// image layout directory and its tar (the oci-archive format) that crane, skopeo and
// `ctr images import` read.
//
// Invariants: the output is a function of the inputs alone (fixed modification times and owners,
// gzip headers without name or time, the creation time given by the caller, sorted archive
// entries), so the same binary and labels always give the same digests; every image and index
// uses the OCI media types.
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// BinaryPath is where the server binary lives in the image, and its entrypoint.
	BinaryPath = "/sidecarset-apiserver"
	// User is the image's user: uid and gid 65532, "nonroot" in /etc/passwd and /etc/group.
	User = "65532:65532"
	// DefaultPath is the PATH of an image with links: where a container's command is looked up.
	DefaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

	passwd = "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group  = "nonroot:x:65532:\n"
)

// The OCI annotation keys (image-spec annotations.md) the images and the index carry, also set
// as the image configuration's labels.
const (
	AnnotationCreated  = "org.opencontainers.image.created"
	AnnotationVersion  = "org.opencontainers.image.version"
	AnnotationRevision = "org.opencontainers.image.revision"
	AnnotationSource   = "org.opencontainers.image.source"
	AnnotationLicenses = "org.opencontainers.image.licenses"
	AnnotationTitle    = "org.opencontainers.image.title"
	// AnnotationRefName names a manifest in a layout's index.json (its tag).
	AnnotationRefName = "org.opencontainers.image.ref.name"
	// AnnotationContainerdName is the name `ctr images import` gives the image.
	AnnotationContainerdName = "io.containerd.image.name"
)

// epoch is the modification time of every file the image and its archive hold.
var epoch = time.Unix(0, 0).UTC()

// Spec is one platform's image.
type Spec struct {
	// Binary is the static program the image runs.
	Binary []byte
	// Arch is its architecture, a GOARCH value; the OS is always linux.
	Arch string
	// Entrypoint is where the binary lives (a file at the image's root, e.g. /app), and the
	// image's entrypoint; BinaryPath when empty.
	Entrypoint string
	// User is the image's user, "uid:gid"; User when empty.
	User string
	// Links are symbolic links to the binary, each a file under /usr/local/bin (one binary that
	// picks its command by the name it runs as); with any, the image's PATH is DefaultPath.
	Links []string
	// Labels are the configuration's labels and the manifest's annotations (the OCI keys above).
	Labels map[string]string
	// Created is the configuration's creation time (the commit's time, for reproducible images).
	Created time.Time
}

// Metadata is what the OCI labels and annotations say of a release.
type Metadata struct {
	Version, Revision, Source, Licenses, Title string
	// Created is the commit's time (never the clock's: the same commit builds the same image).
	Created time.Time
}

// Labels returns the OCI keys of m that are set.
func (m Metadata) Labels() map[string]string {
	labels := map[string]string{}
	for k, v := range map[string]string{AnnotationVersion: m.Version, AnnotationRevision: m.Revision,
		AnnotationSource: m.Source, AnnotationLicenses: m.Licenses, AnnotationTitle: m.Title} {
		if v != "" {
			labels[k] = v
		}
	}
	if !m.Created.IsZero() {
		labels[AnnotationCreated] = m.Created.UTC().Format(time.RFC3339)
	}
	return labels
}

// Build returns the image of s.
func Build(s Spec) (v1.Image, error) {
	if s.Entrypoint == "" {
		s.Entrypoint = BinaryPath
	}
	if s.User == "" {
		s.User = User
	}
	if !strings.HasPrefix(s.Entrypoint, "/") || strings.HasSuffix(s.Entrypoint, "/") || strings.Count(s.Entrypoint, "/") != 1 {
		return nil, fmt.Errorf("entrypoint %q: want a file at the image's root, e.g. /app", s.Entrypoint)
	}
	if len(s.Binary) == 0 {
		return nil, fmt.Errorf("empty binary")
	}
	if s.Arch == "" {
		return nil, fmt.Errorf("no architecture")
	}
	layer, err := rootLayer(s)
	if err != nil {
		return nil, err
	}
	cfg := &v1.ConfigFile{
		Architecture: s.Arch,
		OS:           "linux",
		Created:      v1.Time{Time: s.Created.UTC()},
		Config: v1.Config{
			User:       s.User,
			Entrypoint: []string{s.Entrypoint},
			WorkingDir: "/",
			Labels:     s.Labels,
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
	if len(s.Links) > 0 {
		cfg.Config.Env = []string{DefaultPath}
	}
	img, err := mutate.ConfigFile(empty.Image, cfg)
	if err != nil {
		return nil, err
	}
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: s.Created.UTC()}, CreatedBy: "hack/release: " + s.Entrypoint + " and /etc/passwd",
	}})
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), types.OCIConfigJSON)
	if len(s.Labels) > 0 {
		img = mutate.Annotations(img, s.Labels).(v1.Image)
	}
	return img, nil
}

// rootLayer is the image's one layer, gzip-compressed at the best level.
func rootLayer(s Spec) (v1.Layer, error) {
	entries := []file{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: strings.TrimPrefix(s.Entrypoint, "/"), mode: 0o755, data: s.Binary},
	}
	if len(s.Links) > 0 {
		entries = append(entries, file{name: "usr/", mode: 0o755, dir: true}, file{name: "usr/local/", mode: 0o755, dir: true},
			file{name: "usr/local/bin/", mode: 0o755, dir: true})
		sorted := append([]string(nil), s.Links...)
		sort.Strings(sorted)
		for i, l := range sorted {
			if path.Dir(l) != "/usr/local/bin" || (i > 0 && sorted[i-1] == l) {
				return nil, fmt.Errorf("link %q: want one file under /usr/local/bin", l)
			}
			entries = append(entries, file{name: strings.TrimPrefix(l, "/"), mode: 0o777, link: s.Entrypoint})
		}
	}
	layerTar, err := tarFiles(entries)
	if err != nil {
		return nil, err
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	// gzip's header: no name, no time (ModTime and Name left zero).
	if _, err := zw.Write(layerTar); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	compressed := gz.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(compressed)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// Index returns the image index over images (each with its platform, linux/Arch of its
// configuration), annotated with annotations.
func Index(images []v1.Image, annotations map[string]string) (v1.ImageIndex, error) {
	var adds []mutate.IndexAddendum
	seen := map[string]bool{}
	for _, img := range images {
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		p := v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture, Variant: cfg.Variant}
		if seen[p.String()] {
			return nil, fmt.Errorf("two images for %s", p)
		}
		seen[p.String()] = true
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	if len(annotations) > 0 {
		idx = mutate.Annotations(idx, annotations).(v1.ImageIndex)
	}
	return idx, nil
}

// file is an entry of a tar archive writeTar writes.
type file struct {
	name string
	mode int64
	dir  bool
	link string // a symbolic link to this target
	data []byte
}

// tarFiles returns the tar of files, in the given order, owned by root with the fixed modification
// time.
func tarFiles(files []file) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		// Plain USTAR headers (no PAX records, no access or change times), owned by 0:0.
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: epoch, Format: tar.FormatUSTAR, Typeflag: tar.TypeReg, Size: int64(len(f.data))}
		if f.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if f.link != "" {
			h.Typeflag, h.Size, h.Linkname = tar.TypeSymlink, 0, f.link
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		if !f.dir && f.link == "" {
			if _, err := tw.Write(f.data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
