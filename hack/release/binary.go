package main

import (
	"bytes"
	"debug/elf"
	"debug/macho"
	"fmt"
	"strings"
)

// checkBinary checks that data is an executable of platform "OS/ARCH": ELF for linux, Mach-O for
// darwin, each of its architecture (amd64 or arm64).
func checkBinary(data []byte, platform string) error {
	osName, arch, _ := strings.Cut(platform, "/")
	switch osName {
	case "linux":
		want, ok := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
		f, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("%s binary: not ELF: %w", platform, err)
		}
		if !ok || f.Class != elf.ELFCLASS64 || f.Machine != want {
			return fmt.Errorf("%s binary: ELF for %s, %s", platform, f.Machine, f.Class)
		}
	case "darwin":
		want, ok := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[arch]
		f, err := macho.NewFile(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("%s binary: not Mach-O: %w", platform, err)
		}
		if !ok || f.Cpu != want || f.Type != macho.TypeExec {
			return fmt.Errorf("%s binary: Mach-O %s for %s", platform, f.Type, f.Cpu)
		}
	default:
		return fmt.Errorf("%s: no check for its binaries", platform)
	}
	return nil
}
