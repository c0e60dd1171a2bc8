package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// KrewPlugin is the krew plugin manifest (krew.googlecontainertools.github.com/v1alpha2 Plugin),
// with the fields this release writes.
type KrewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec KrewSpec `json:"spec"`
}

// KrewSpec is a krew plugin's spec.
type KrewSpec struct {
	Version          string         `json:"version"`
	Homepage         string         `json:"homepage,omitempty"`
	ShortDescription string         `json:"shortDescription"`
	Description      string         `json:"description,omitempty"`
	Platforms        []KrewPlatform `json:"platforms"`
}

// KrewPlatform is one platform's archive in a krew manifest.
type KrewPlatform struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	URI    string     `json:"uri"`
	SHA256 string     `json:"sha256"`
	Bin    string     `json:"bin"`
	Files  []KrewFile `json:"files"`
}

// KrewFile is a file krew copies out of an archive.
type KrewFile struct {
	From string `json:"from"`
	To   string `json:"to"`
}

const (
	krewAPIVersion = "krew.googlecontainertools.github.com/v1alpha2"
	krewName       = "sidecarset"
)

// pluginArchive is a written plugin archive.
type pluginArchive struct {
	platform, name, sha256 string
}

// PluginArchiveName is the name of the plugin's archive for platform "OS/ARCH".
func PluginArchiveName(platform string) string {
	return PluginName + "-" + strings.ReplaceAll(platform, "/", "-") + ".tar.gz"
}

// writePluginArchives writes, for every plugin binary, a .tar.gz holding it as kubectl-sidecarset
// (mode 0755) and LICENSE, owned by root with the fixed modification time.
func writePluginArchives(o Options) ([]pluginArchive, error) {
	license, err := os.ReadFile(o.License)
	if err != nil {
		return nil, err
	}
	var archives []pluginArchive
	for _, platform := range sortedKeys(o.Plugins) {
		binary, err := os.ReadFile(o.Plugins[platform])
		if err != nil {
			return nil, err
		}
		data, err := tarGz([]tarEntry{{PluginName, 0o755, binary}, {"LICENSE", 0o644, license}})
		if err != nil {
			return nil, err
		}
		name := PluginArchiveName(platform)
		if err := os.WriteFile(joinDir(o.Dir, name), data, 0o644); err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		archives = append(archives, pluginArchive{platform: platform, name: name, sha256: hex.EncodeToString(sum[:])})
	}
	return archives, nil
}

type tarEntry struct {
	name string
	mode int64
	data []byte
}

// tarGz is the gzip-compressed tar of files (gzip's header without name or time).
func tarGz(files []tarEntry) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: time.Unix(0, 0).UTC(),
			Typeflag: tar.TypeReg, Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// krewManifest is the krew manifest of the archives, each at o.URL/NAME.
func krewManifest(o Options, archives []pluginArchive) ([]byte, error) {
	p := KrewPlugin{APIVersion: krewAPIVersion, Kind: "Plugin"}
	p.Metadata.Name = krewName
	p.Spec = KrewSpec{
		Version:          o.Meta.Version,
		Homepage:         o.Meta.Source,
		ShortDescription: "Inject, explain and roll out SidecarSets",
		Description: "The kubectl plugin of the SidecarSet API server (OpenKruise-compatible SidecarSets):\n" +
			"`inject` renders pods with their sidecars offline or against a cluster, `explain` says why a\n" +
			"pod is or is not injected, `rollout` drives SidecarSet rollouts, and `migrate` and `check`\n" +
			"help move from OpenKruise.\n",
	}
	base := strings.TrimSuffix(o.URL, "/")
	for _, a := range archives {
		osName, arch, _ := strings.Cut(a.platform, "/")
		kp := KrewPlatform{URI: base + "/" + a.name, SHA256: a.sha256, Bin: PluginName,
			Files: []KrewFile{{From: PluginName, To: "."}, {From: "LICENSE", To: "."}}}
		kp.Selector.MatchLabels = map[string]string{"os": osName, "arch": arch}
		p.Spec.Platforms = append(p.Spec.Platforms, kp)
	}
	data, err := yaml.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("krew manifest: %w", err)
	}
	return data, nil
}

func joinDir(dir, name string) string { return filepath.Join(dir, name) }
