// Command testregistry serves an OCI registry in memory on a loopback address, holding images
// made of an image layout's image with a layer of random bytes appended: large images that a node
// has to pull (TestRealNodePreDownload, on the real node of hack/local-up.sh, whose containerd
// pulls from a loopback registry over plain HTTP). It prints "registry ADDRESS", then
// "image REFERENCE DIGEST" for each image pushed, then "ready", and serves until it is killed:
//
//	cd hack/release && go run ./cmd/testregistry -addr 127.0.0.1:0 -base ../../_output/local/node/images/test-v2.oci \
//	    -size 128 -image sidecar:big-a -image sidecar:big-b
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

type images []string

func (i *images) String() string     { return strings.Join(*i, ",") }
func (i *images) Set(v string) error { *i = append(*i, v); return nil }

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "the loopback address to listen on")
	base := flag.String("base", "", "an OCI image layout whose first image every image starts from")
	size := flag.Int64("size", 128, "the size of the random layer appended to each image, in MiB")
	var refs images
	flag.Var(&refs, "image", "an image to push, repository:tag (repeatable); each gets its own random layer")
	flag.Parse()
	if err := run(*addr, *base, *size<<20, refs); err != nil {
		fmt.Fprintln(os.Stderr, "testregistry:", err)
		os.Exit(1)
	}
}

func run(addr, base string, size int64, refs []string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if ip := l.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		return fmt.Errorf("%s is not a loopback address", l.Addr())
	}
	served := make(chan error, 1)
	go func() { served <- http.Serve(l, registry.New(registry.Logger(log.New(io.Discard, "", 0)))) }()
	host := l.Addr().String()
	fmt.Println("registry", host)
	img, err := baseImage(base)
	if err != nil {
		return err
	}
	for _, r := range refs {
		repo, tag, ok := strings.Cut(r, ":")
		if !ok {
			return fmt.Errorf("image %q: want repository:tag", r)
		}
		layer, err := random.Layer(size, types.OCILayer)
		if err != nil {
			return err
		}
		big, err := mutate.AppendLayers(img, layer)
		if err != nil {
			return err
		}
		if err := push("http://"+host, repo, tag, big); err != nil {
			return fmt.Errorf("pushing %s: %w", r, err)
		}
		digest, err := big.Digest()
		if err != nil {
			return err
		}
		fmt.Println("image", host+"/"+r, digest.String())
	}
	fmt.Println("ready")
	return <-served
}

// baseImage returns the first image of the layout at path.
func baseImage(path string) (v1.Image, error) {
	idx, err := layout.ImageIndexFromPath(path)
	if err != nil {
		return nil, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) == 0 {
		return nil, fmt.Errorf("no image in the layout %s", path)
	}
	return idx.Image(m.Manifests[0].Digest)
}

// push uploads the image's blobs (each in one request) and its manifest under tag, as the
// distribution API has a client do.
func push(base, repo, tag string, img v1.Image) error {
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		err = upload(base, repo, d, rc)
		rc.Close()
		if err != nil {
			return err
		}
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	cd, err := img.ConfigName()
	if err != nil {
		return err
	}
	if err := upload(base, repo, cd, bytes.NewReader(cfg)); err != nil {
		return err
	}
	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	mt, err := img.MediaType()
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPut, base+"/v2/"+repo+"/manifests/"+tag, bytes.NewReader(manifest))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", string(mt))
	return do(req, http.StatusCreated)
}

// upload uploads one blob: a POST for an upload, then a PUT of the whole blob.
func upload(base, repo string, digest v1.Hash, body io.Reader) error {
	resp, err := http.Post(base+"/v2/"+repo+"/blobs/uploads/", "", nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("starting the upload of %s: %s", digest, resp.Status)
	}
	loc := resp.Header.Get("Location")
	if !strings.HasPrefix(loc, "http") {
		loc = base + loc
	}
	sep := "?"
	if strings.Contains(loc, "?") {
		sep = "&"
	}
	req, err := http.NewRequest(http.MethodPut, loc+sep+"digest="+digest.String(), body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	return do(req, http.StatusCreated)
}

func do(req *http.Request, want int) error {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("%s %s: %s %s", req.Method, req.URL.Path, resp.Status, msg)
	}
	return nil
}
