// Command image writes an OCI image of the server without a container daemon: an image layout
// directory (oci-layout, index.json, blobs/sha256/...) and a tar archive of that directory, which
// skopeo (oci-archive:) or crane can push. The image has one layer: the static binary at
// /sidecarset-apiserver and an /etc/passwd and /etc/group that name uid and gid 65532 "nonroot";
// no shell, nothing else. The output is reproducible: fixed modification times and owners, no
// creation date, sorted archive entries.
//
// The server's images (make image, make release) are written by hack/release with
// go-containerregistry; its cmd/image takes this program's flags. This one stays in the main
// module for hack/local-up.sh, which builds it for the real node's test, pause and etcd images.
//
//	go run ./hack/image -binary _output/image/sidecarset-apiserver -arch amd64 \
//	    -layout _output/image/oci -archive _output/image/sidecarset-apiserver.tar
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

const (
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"

	// BinaryPath is where the server binary lives in the image, and its entrypoint.
	BinaryPath = "/sidecarset-apiserver"
	// User is the image's user: uid and gid 65532, "nonroot" in /etc/passwd and /etc/group.
	User = "65532:65532"

	passwd = "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group  = "nonroot:x:65532:\n"
)

// epoch is the modification time of every file the image and its archive hold.
var epoch = time.Unix(0, 0).UTC()

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *platform         `json:"platform,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

type manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
}

type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

// ImageConfig is the part of the OCI image configuration this program writes.
type ImageConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		User       string   `json:"User"`
		Env        []string `json:"Env,omitempty"`
		Entrypoint []string `json:"Entrypoint"`
		WorkingDir string   `json:"WorkingDir"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// Layout builds the files of an OCI image layout holding binary as the server, for linux/arch,
// tagged ref (the index's org.opencontainers.image.ref.name). It returns them by path relative to
// the layout's root.
func Layout(binary []byte, arch, ref string) (map[string][]byte, error) {
	return LayoutOf(binary, arch, ref, BinaryPath, User)
}

// LayoutOf is Layout with the binary at entrypoint (an absolute path, also the image's entrypoint)
// run as user ("uid:gid"). A ref that names a repository (it holds a "/" or a ":" before its tag,
// e.g. sidecarset.dev/test:v1) is also recorded as io.containerd.image.name, the name
// `ctr images import` gives the image.
func LayoutOf(binary []byte, arch, ref, entrypoint, user string) (map[string][]byte, error) {
	return LayoutWithLinks(binary, arch, ref, entrypoint, user, nil)
}

// DefaultPath is the PATH of an image with links: where a container's command is looked up.
const DefaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// LayoutWithLinks is LayoutOf with symbolic links to the binary at each of links (absolute paths
// under /usr/local/bin, e.g. /usr/local/bin/etcd and /usr/local/bin/etcdctl: one binary that picks
// its command by the name it runs as), and then the image's PATH set to DefaultPath.
func LayoutWithLinks(binary []byte, arch, ref, entrypoint, user string, links []string) (map[string][]byte, error) {
	if !strings.HasPrefix(entrypoint, "/") || strings.HasSuffix(entrypoint, "/") || strings.Count(entrypoint, "/") != 1 {
		return nil, fmt.Errorf("entrypoint %q: want a file at the image's root, e.g. /app", entrypoint)
	}
	if len(binary) == 0 {
		return nil, fmt.Errorf("empty binary")
	}
	if arch == "" {
		return nil, fmt.Errorf("no architecture")
	}
	files := map[string][]byte{}
	blob := func(mediaType string, data []byte) descriptor {
		sum := sha256.Sum256(data)
		hexSum := hex.EncodeToString(sum[:])
		files["blobs/sha256/"+hexSum] = data
		return descriptor{MediaType: mediaType, Digest: "sha256:" + hexSum, Size: int64(len(data))}
	}

	entries := []file{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: strings.TrimPrefix(entrypoint, "/"), mode: 0o755, data: binary},
	}
	if len(links) > 0 {
		entries = append(entries, file{name: "usr/", mode: 0o755, dir: true}, file{name: "usr/local/", mode: 0o755, dir: true},
			file{name: "usr/local/bin/", mode: 0o755, dir: true})
		sorted := append([]string(nil), links...)
		sort.Strings(sorted)
		for i, l := range sorted {
			if filepath.Dir(l) != "/usr/local/bin" || (i > 0 && sorted[i-1] == l) {
				return nil, fmt.Errorf("link %q: want one file under /usr/local/bin", l)
			}
			entries = append(entries, file{name: strings.TrimPrefix(l, "/"), mode: 0o777, link: entrypoint})
		}
	}
	layerTar, err := tarball(entries)
	if err != nil {
		return nil, err
	}
	diffID := sha256.Sum256(layerTar)
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
	layer := blob(mediaTypeLayer, gz.Bytes())

	var cfg ImageConfig
	cfg.Architecture, cfg.OS = arch, "linux"
	cfg.Config.User = user
	if len(links) > 0 {
		cfg.Config.Env = []string{DefaultPath}
	}
	cfg.Config.Entrypoint = []string{entrypoint}
	cfg.Config.WorkingDir = "/"
	cfg.RootFS.Type = "layers"
	cfg.RootFS.DiffIDs = []string{"sha256:" + hex.EncodeToString(diffID[:])}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	config := blob(mediaTypeConfig, cfgJSON)

	mJSON, err := json.Marshal(manifest{SchemaVersion: 2, MediaType: mediaTypeManifest, Config: config, Layers: []descriptor{layer}})
	if err != nil {
		return nil, err
	}
	m := blob(mediaTypeManifest, mJSON)
	m.Platform = &platform{Architecture: arch, OS: "linux"}
	if ref != "" {
		m.Annotations = map[string]string{"org.opencontainers.image.ref.name": ref}
		if strings.Contains(ref, "/") {
			m.Annotations["io.containerd.image.name"] = ref
		}
	}
	if files["index.json"], err = json.Marshal(index{SchemaVersion: 2, MediaType: mediaTypeIndex, Manifests: []descriptor{m}}); err != nil {
		return nil, err
	}
	files["oci-layout"] = []byte(`{"imageLayoutVersion":"1.0.0"}`)
	return files, nil
}

type file struct {
	name string
	mode int64
	dir  bool
	link string // a symbolic link to this target
	data []byte
}

// tarball writes files, in the given order, owned by root with the fixed modification time.
func tarball(files []file) ([]byte, error) {
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

// Archive returns a tar of the layout files (the oci-archive format): directories first, entries
// sorted, fixed times and owners.
func Archive(files map[string][]byte) ([]byte, error) {
	var names []string
	dirs := map[string]bool{}
	for name := range files {
		names = append(names, name)
		for d := filepath.Dir(name); d != "."; d = filepath.Dir(d) {
			dirs[d+"/"] = true
		}
	}
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	entries := make([]file, 0, len(names))
	for _, name := range names {
		if dirs[name] {
			entries = append(entries, file{name: name, mode: 0o755, dir: true})
		} else {
			entries = append(entries, file{name: name, mode: 0o644, data: files[name]})
		}
	}
	return tarball(entries)
}

// writeLayout replaces dir with the layout files.
func writeLayout(dir string, files map[string][]byte) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
		if err := os.Chtimes(p, epoch, epoch); err != nil {
			return err
		}
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return os.Chtimes(p, epoch, epoch)
	})
}

func main() {
	binary := flag.String("binary", "", "the static server binary to put at "+BinaryPath)
	arch := flag.String("arch", runtime.GOARCH, "the image's architecture (a GOARCH value)")
	ref := flag.String("ref", "latest", "the tag recorded in index.json (org.opencontainers.image.ref.name)")
	layout := flag.String("layout", "", "the OCI image layout directory to write (replaced)")
	archive := flag.String("archive", "", "the tar of the layout to write (optional)")
	entrypoint := flag.String("entrypoint", BinaryPath, "where the binary lives in the image, and its entrypoint")
	user := flag.String("user", User, "the image's user, uid:gid")
	var links linkList
	flag.Var(&links, "link", "a symbolic link to the binary under /usr/local/bin (repeatable); sets the image's PATH")
	flag.Parse()
	if err := run(*binary, *arch, *ref, *layout, *archive, *entrypoint, *user, links); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

type linkList []string

func (l *linkList) String() string     { return strings.Join(*l, ",") }
func (l *linkList) Set(v string) error { *l = append(*l, v); return nil }

func run(binaryPath, arch, ref, layout, archive, entrypoint, user string, links []string) error {
	if binaryPath == "" || layout == "" {
		return fmt.Errorf("-binary and -layout are required")
	}
	binary, err := os.ReadFile(binaryPath)
	if err != nil {
		return err
	}
	files, err := LayoutWithLinks(binary, arch, ref, entrypoint, user, links)
	if err != nil {
		return err
	}
	if err := writeLayout(layout, files); err != nil {
		return err
	}
	if archive != "" {
		data, err := Archive(files)
		if err != nil {
			return err
		}
		if err := os.WriteFile(archive, data, 0o644); err != nil {
			return err
		}
	}
	var idx index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil {
		return err
	}
	fmt.Printf("image: %s (linux/%s, manifest %s)\n", layout, arch, idx.Manifests[0].Digest)
	return nil
}
