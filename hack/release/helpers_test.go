package main

import (
	"archive/tar"
	"io"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// imageFiles returns the files of the image digest of the layout's index.json's one index.
func imageFiles(t *testing.T, root v1.ImageIndex, digest string) map[string][]byte {
	t.Helper()
	rm, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	idx, err := root.ImageIndex(rm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	h, err := v1.NewHash(digest)
	if err != nil {
		t.Fatal(err)
	}
	img, err := idx.Image(h)
	if err != nil {
		t.Fatal(err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(rc)
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
		files[h.Name] = data
	}
}
