package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
)

// writeChecksums writes SHA256SUMS: the sha256 of every regular file of dir but itself, one
// "HEX  NAME" line each (sha256sum's format, `sha256sum -c SHA256SUMS` checks them), by name.
func writeChecksums(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	for _, e := range entries { // sorted by name
		if !e.Type().IsRegular() || e.Name() == Checksums {
			continue
		}
		sum, err := fileSHA256(joinDir(dir, e.Name()))
		if err != nil {
			return err
		}
		fmt.Fprintf(&buf, "%s  %s\n", sum, e.Name())
	}
	return os.WriteFile(joinDir(dir, Checksums), buf.Bytes(), 0o644)
}

// fileSHA256 is the hex sha256 of a file.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// readChecksums parses a SHA256SUMS file into sums by name.
func readChecksums(data []byte) (map[string]string, error) {
	sums := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 || name == "" || sums[name] != "" {
			return nil, fmt.Errorf("%s: bad line %q", Checksums, sc.Text())
		}
		sums[name] = sum
	}
	return sums, sc.Err()
}
