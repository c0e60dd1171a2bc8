// Command image writes one platform's OCI image of a static binary with go-containerregistry:
// an image layout directory and its tar (oci-archive), which crane, skopeo and
// `ctr images import` read. `make image` runs it for the server, hack/local-up.sh for the real
// node's test, pause and etcd images:
//
//	cd hack/release && go run ./cmd/image -binary ../../_output/image/sidecarset-apiserver -arch amd64 \
//	    -ref latest -version v1.2.3 -revision COMMIT -created 2026-01-02T03:04:05Z \
//	    -layout ../../_output/image/oci -archive ../../_output/image/sidecarset-apiserver.tar
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/sidecarset/apiserver/hack/release/image"
)

func main() {
	var o options
	flag.StringVar(&o.binary, "binary", "", "the static binary to put at -entrypoint")
	flag.StringVar(&o.arch, "arch", runtime.GOARCH, "the image's architecture (a GOARCH value)")
	flag.StringVar(&o.ref, "ref", "latest", "the name recorded in index.json (org.opencontainers.image.ref.name; also io.containerd.image.name when it names a repository)")
	flag.StringVar(&o.layout, "layout", "", "the OCI image layout directory to write (replaced)")
	flag.StringVar(&o.archive, "archive", "", "the tar of the layout to write (optional)")
	flag.StringVar(&o.entrypoint, "entrypoint", image.BinaryPath, "where the binary lives in the image, and its entrypoint")
	flag.StringVar(&o.user, "user", image.User, "the image's user, uid:gid")
	flag.Var(&o.links, "link", "a symbolic link to the binary under /usr/local/bin (repeatable); sets the image's PATH")
	flag.StringVar(&o.meta.Version, "version", "", "org.opencontainers.image.version")
	flag.StringVar(&o.meta.Revision, "revision", "", "org.opencontainers.image.revision (the commit)")
	flag.StringVar(&o.meta.Source, "source", "", "org.opencontainers.image.source (the repository's URL)")
	flag.StringVar(&o.meta.Licenses, "licenses", "", "org.opencontainers.image.licenses (an SPDX expression)")
	flag.StringVar(&o.meta.Title, "title", "", "org.opencontainers.image.title")
	flag.StringVar(&o.created, "created", "", "the image's creation time, RFC 3339 (the commit's time; default the Unix epoch)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

type options struct {
	binary, arch, ref, layout, archive, entrypoint, user, created string
	links                                                         linkList
	meta                                                          image.Metadata
}

type linkList []string

func (l *linkList) String() string     { return strings.Join(*l, ",") }
func (l *linkList) Set(v string) error { *l = append(*l, v); return nil }

func run(o options) error {
	if o.binary == "" || o.layout == "" {
		return fmt.Errorf("-binary and -layout are required")
	}
	if o.created != "" {
		t, err := time.Parse(time.RFC3339, o.created)
		if err != nil {
			return fmt.Errorf("-created: %w", err)
		}
		o.meta.Created = t
	}
	binary, err := os.ReadFile(o.binary)
	if err != nil {
		return err
	}
	img, err := image.Build(image.Spec{Binary: binary, Arch: o.arch, Entrypoint: o.entrypoint, User: o.user,
		Links: o.links, Labels: o.meta.Labels(), Created: o.meta.Created})
	if err != nil {
		return err
	}
	if err := image.WriteImageLayout(o.layout, img, o.ref); err != nil {
		return err
	}
	if o.archive != "" {
		if err := image.WriteArchiveFile(o.layout, o.archive); err != nil {
			return err
		}
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("image: %s (linux/%s, manifest %s)\n", o.layout, o.arch, digest)
	return nil
}
