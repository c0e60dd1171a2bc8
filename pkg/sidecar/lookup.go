package sidecar

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LookupHash returns the hash and controllerRevision of sidecarSetName's entry in a hash
// annotation value (HashAnnotation or HashWithoutImageAnnotation), with the same result as
// PodHashEntry. The common form is scanned (see scan.go); anything unusual (escapes, non-ASCII,
// legacy or unknown fields) goes through the full decoder.
func LookupHash(value, sidecarSetName string) (hash, revision string, ok bool) {
	e, ok := LookupHashEntry(value, sidecarSetName)
	return e.Hash, e.ControllerRevision, ok
}

// LookupHashEntry returns sidecarSetName's entry in a hash annotation value as LookupHash finds
// it: its hash, controllerRevision and updateTimestamp (its sidecarList is left out).
func LookupHashEntry(value, sidecarSetName string) (HashEntry, bool) {
	if value == "" {
		return HashEntry{}, false
	}
	if plainJSON(value) {
		s := scanner{in: value}
		if e, found, valid := s.hashEntry(sidecarSetName); valid {
			return e, found
		}
	}
	e, ok := PodHashEntry(map[string]string{HashAnnotation: value}, HashAnnotation, sidecarSetName)
	e.SidecarSetName, e.SidecarList = "", nil
	return e, ok
}

// hashEntry scans a HashMap for name's entry; valid=false means "not sure, decode it".
func (s *scanner) hashEntry(name string) (entry HashEntry, found, valid bool) {
	valid = s.members(func(key string) bool {
		if s.peek() != '{' {
			return false // a legacy flat value or garbage: decode it
		}
		e, ok := s.hashFields()
		if ok && key == name { // the last duplicate wins, as in encoding/json
			entry, found = e, true
		}
		return ok
	}) && s.end()
	return entry, found && valid, valid
}

// hashFields scans one HashEntry object whose fields all have their exact JSON names.
func (s *scanner) hashFields() (e HashEntry, ok bool) {
	ok = s.members(func(key string) bool {
		var ok bool
		switch key {
		case "hash":
			e.Hash, ok = s.str()
		case "controllerRevision":
			e.ControllerRevision, ok = s.str()
		case "sidecarSetName":
			_, ok = s.str()
		case "updateTimestamp":
			var t time.Time
			t, ok = s.timestamp()
			e.UpdateTimestamp = metav1.NewTime(t)
		case "sidecarList":
			ok = s.strings()
		}
		return ok
	})
	return e, ok
}
