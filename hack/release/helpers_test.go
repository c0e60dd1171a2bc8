package main

import (
	"archive/tar"
	"debug/elf"
	"debug/macho"
	"encoding/binary"
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

// fakeBinary is the smallest executable header debug/elf or debug/macho reads for platform
// ("OS/ARCH"), followed by text: no sections, no program headers, no load commands.
func fakeBinary(platform, text string) []byte {
	var b []byte
	le16 := func(v uint16) { b = binary.LittleEndian.AppendUint16(b, v) }
	le32 := func(v uint32) { b = binary.LittleEndian.AppendUint32(b, v) }
	le64 := func(v uint64) { b = binary.LittleEndian.AppendUint64(b, v) }
	switch platform {
	case "linux/amd64", "linux/arm64":
		machine := map[string]elf.Machine{"linux/amd64": elf.EM_X86_64, "linux/arm64": elf.EM_AARCH64}[platform]
		b = append(b, 0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT), 0, 0, 0, 0, 0, 0, 0, 0, 0)
		le16(uint16(elf.ET_EXEC))
		le16(uint16(machine))
		le32(uint32(elf.EV_CURRENT))
		le64(0)                     // entry
		le64(0)                     // program headers' offset
		le64(0)                     // section headers' offset
		le32(0)                     // flags
		le16(64)                    // header size
		le16(56)                    // program header size
		le16(0)                     // program headers
		le16(64)                    // section header size
		le16(0)                     // sections
		le16(uint16(elf.SHN_UNDEF)) // section names' section
	case "darwin/amd64", "darwin/arm64":
		cpu := map[string]macho.Cpu{"darwin/amd64": macho.CpuAmd64, "darwin/arm64": macho.CpuArm64}[platform]
		le32(macho.Magic64)
		le32(uint32(cpu))
		le32(0) // cpu subtype
		le32(uint32(macho.TypeExec))
		le32(0) // load commands
		le32(0) // their size
		le32(0) // flags
		le32(0) // reserved
	}
	return append(b, text...)
}
