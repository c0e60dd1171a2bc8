package image

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// RefAnnotations are the annotations that name a layout's entry ref: its tag
// (org.opencontainers.image.ref.name) and, when ref names a repository (it holds a "/", e.g.
// sidecarset.dev/sidecarset-apiserver:local), also io.containerd.image.name, the name
// `ctr images import` gives it.
func RefAnnotations(ref string) map[string]string {
	if ref == "" {
		return nil
	}
	a := map[string]string{AnnotationRefName: ref}
	if strings.Contains(ref, "/") {
		a[AnnotationContainerdName] = ref
	}
	return a
}

// WriteImageLayout replaces dir with an image layout whose index.json lists img alone, with its
// platform and the annotations naming it ref (RefAnnotations).
func WriteImageLayout(dir string, img v1.Image, ref string) error {
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	p, err := newLayout(dir)
	if err != nil {
		return err
	}
	opts := []layout.Option{layout.WithPlatform(v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture, Variant: cfg.Variant})}
	if a := RefAnnotations(ref); a != nil {
		opts = append(opts, layout.WithAnnotations(a))
	}
	if err := p.AppendImage(img, opts...); err != nil {
		return err
	}
	return normalizeModes(dir)
}

// WriteIndexLayout replaces dir with an image layout whose index.json lists idx alone, with the
// annotations naming it ref (RefAnnotations).
func WriteIndexLayout(dir string, idx v1.ImageIndex, ref string) error {
	p, err := newLayout(dir)
	if err != nil {
		return err
	}
	var opts []layout.Option
	if a := RefAnnotations(ref); a != nil {
		opts = append(opts, layout.WithAnnotations(a))
	}
	if err := p.AppendIndex(idx, opts...); err != nil {
		return err
	}
	return normalizeModes(dir)
}

// normalizeModes makes a layout's files 0644 and its directories 0755, whatever the writer's
// temporary files had (every reader of the layout may read it, as of its archive).
func normalizeModes(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(p, mode)
	})
}

func newLayout(dir string) (layout.Path, error) {
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	return layout.Write(dir, empty.Index)
}

// WriteArchive writes the tar of the layout directory dir to w (the oci-archive format):
// entries sorted by name (a directory before what it holds), mode 0755 or 0644, owned by root,
// with the fixed modification time.
func WriteArchive(dir string, w io.Writer) error {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if d.IsDir() {
			name += "/"
		} else if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		names = append(names, name)
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	tw := tar.NewWriter(w)
	for _, name := range names {
		if err := archiveEntry(tw, dir, name); err != nil {
			return err
		}
	}
	return tw.Close()
}

func archiveEntry(tw *tar.Writer, dir, name string) error {
	h := &tar.Header{Name: name, Mode: 0o755, ModTime: epoch, Format: tar.FormatUSTAR, Typeflag: tar.TypeDir}
	if strings.HasSuffix(name, "/") {
		return tw.WriteHeader(h)
	}
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	h.Mode, h.Typeflag, h.Size = 0o644, tar.TypeReg, st.Size()
	if err := tw.WriteHeader(h); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	_, err = io.Copy(tw, f)
	return err
}

// WriteArchiveFile writes the tar of the layout directory dir to the file archive.
func WriteArchiveFile(dir, archive string) error {
	f, err := os.Create(archive)
	if err != nil {
		return err
	}
	if err := WriteArchive(dir, f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
