package e2e

import (
	"encoding/json"

	"github.com/distribution/reference"
)

// What the suite reads of what the server writes, decoded here from the documented formats rather
// than by the packages under test, so that a fault in those packages cannot agree with itself.

// hashRecord is sidecarSetName's entry of a pod's kruise.io/sidecarset-hash annotation: a JSON
// object keyed by SidecarSet name whose entries hold the hash and the controllerRevision the pod
// was injected or upgraded with (the reference's §4.10).
func hashRecord(annotation, sidecarSetName string) (hash, revision string) {
	var entries map[string]struct {
		Hash               string `json:"hash"`
		ControllerRevision string `json:"controllerRevision"`
	}
	if err := json.Unmarshal([]byte(annotation), &entries); err != nil {
		return "", ""
	}
	e := entries[sidecarSetName]
	return e.Hash, e.ControllerRevision
}

// sameImage reports whether a container's spec image and the image its status reports are one
// image as a container runtime names it (docker.io/library/busybox:1.36 for busybox:1.36).
func sameImage(spec, status string) bool {
	normal := func(s string) string {
		if named, err := reference.ParseDockerRef(s); err == nil {
			return named.String()
		}
		return s
	}
	return spec == status || normal(spec) == normal(status)
}
