package conformance

import (
	"fmt"
	"regexp"
	"strings"
)

// Meta is a scenario's meta.yaml (injection and validation).
type Meta struct {
	Title   string   `json:"title"`
	Sources []string `json:"sources,omitempty"`
	// Operation (validation only) is create or update.
	Operation string   `json:"operation,omitempty"`
	Requires  []string `json:"requires,omitempty"`
	Flags     []string `json:"flags,omitempty"`
	Notes     Text     `json:"notes,omitempty"`
}

// Validation operations (meta.operation).
const (
	OperationCreate = "create"
	OperationUpdate = "update"
)

// Validate checks the documented values of operation, requires and flags.
func (m Meta) Validate() error {
	switch m.Operation {
	case "", OperationCreate, OperationUpdate:
	default:
		return fmt.Errorf("meta.operation %q: want create or update", m.Operation)
	}
	if _, err := ParseRequirements(m.Requires); err != nil {
		return err
	}
	return ValidateFlags(m.Flags)
}

// Requirement is a documented requirement token (meta.requires / scenario.requires).
type Requirement string

// The requirement tokens of the README.
const (
	// PatchPodMetadataAllowed: SidecarSets may use patchPodMetadata for the keys the scenario uses
	// (satisfied by the whitelist ConfigMap common/patch-metadata-whitelist.yaml).
	PatchPodMetadataAllowed Requirement = "patch-pod-metadata-allowed"
	// PatchPodMetadataWhitelistConfigMap: the documented whitelist ConfigMap itself is in force.
	PatchPodMetadataWhitelistConfigMap Requirement = "patch-pod-metadata-whitelist-configmap"
	// PatchPodMetadataNotConfigured: no whitelist and the permissive feature gate off.
	PatchPodMetadataNotConfigured Requirement = "patch-pod-metadata-not-configured"
	// K8sNativeSidecars: the cluster accepts initContainers[].restartPolicy: Always.
	K8sNativeSidecars Requirement = "k8s-native-sidecars"
)

// Requirements is the parsed set of a scenario's requirement tokens.
type Requirements struct {
	// Whitelist is true when the whitelist ConfigMap must be in force, false when it must be absent
	// (no requirement about patchPodMetadata means the documented secure default: absent).
	Whitelist bool
	// NativeSidecars is true when the cluster must accept native sidecar initContainers.
	NativeSidecars bool
}

// ParseRequirements checks the tokens and says what the cluster must provide.
func ParseRequirements(tokens []string) (Requirements, error) {
	var r Requirements
	notConfigured := false
	for _, tok := range tokens {
		switch Requirement(tok) {
		case PatchPodMetadataAllowed, PatchPodMetadataWhitelistConfigMap:
			r.Whitelist = true
		case PatchPodMetadataNotConfigured:
			notConfigured = true
		case K8sNativeSidecars:
			r.NativeSidecars = true
		default:
			return r, fmt.Errorf("unknown requirement token %q", tok)
		}
	}
	if notConfigured && r.Whitelist {
		return r, fmt.Errorf("requirements %v contradict each other", tokens)
	}
	return r, nil
}

// The documented flags.
const (
	FlagVersionDependent = "version-dependent"
	FlagUndocumented     = "undocumented"
	// FlagSchemaValidation: Kruise enforces the behaviour through the CRD schema; a webhook-only
	// harness skips it (this project validates in the API server, so its runners do not).
	FlagSchemaValidation = "schema-validation"
)

// ValidateFlags rejects unknown flags.
func ValidateFlags(flags []string) error {
	for _, f := range flags {
		switch f {
		case FlagVersionDependent, FlagUndocumented, FlagSchemaValidation:
		default:
			return fmt.Errorf("unknown flag %q", f)
		}
	}
	return nil
}

// HasFlag reports whether flags contains flag.
func HasFlag(flags []string, flag string) bool {
	for _, f := range flags {
		if f == flag {
			return true
		}
	}
	return false
}

var nsInNotes = regexp.MustCompile("(?i)\\bnamespaces?\\b\\s*[:=]?\\s*[`'\"]?([a-z0-9]([-a-z0-9]*[a-z0-9])?)\\b")

// NamespaceFromNotes returns the namespace a pod without one is submitted in: per the README, the
// one named in meta.yaml notes ("... namespace `foo` ..."), or def when the notes name none.
// Candidates, when given, are the namespaces the scenario knows (namespace.yaml, the common one): a
// name among them wins over any other word that follows "namespace".
func NamespaceFromNotes(notes Text, candidates []string, def string) string {
	text := string(notes)
	for _, c := range candidates {
		for _, q := range []string{"`" + c + "`", "'" + c + "'", "\"" + c + "\"", " " + c} {
			if strings.Contains(text, q) {
				return c
			}
		}
	}
	for _, m := range nsInNotes.FindAllStringSubmatch(text, -1) {
		switch m[1] {
		case "a", "an", "the", "of", "is", "in", "as", "and", "selector", "namespaceselector", "labels", "label":
			continue
		}
		return m[1]
	}
	return def
}
