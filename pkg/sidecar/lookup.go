package sidecar

// LookupHash returns the hash and controllerRevision of sidecarSetName's entry in a hash
// annotation value (HashAnnotation or HashWithoutImageAnnotation), with the same result as
// PodHashEntry. The common form is scanned (see scan.go); anything unusual (escapes, non-ASCII,
// legacy or unknown fields) goes through the full decoder.
func LookupHash(value, sidecarSetName string) (hash, revision string, ok bool) {
	if value == "" {
		return "", "", false
	}
	if plainJSON(value) {
		s := scanner{in: value}
		if e, found, valid := s.hashEntry(sidecarSetName); valid {
			return e.Hash, e.ControllerRevision, found
		}
	}
	e, ok := PodHashEntry(map[string]string{HashAnnotation: value}, HashAnnotation, sidecarSetName)
	return e.Hash, e.ControllerRevision, ok
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
			ok = s.timestamp()
		case "sidecarList":
			ok = s.strings()
		}
		return ok
	})
	return e, ok
}
