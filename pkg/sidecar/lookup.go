package sidecar

import (
	"strings"
	"time"
)

// LookupHash returns the hash and controllerRevision of sidecarSetName's entry in a hash
// annotation value (HashAnnotation or HashWithoutImageAnnotation), with the same result as
// PodHashEntry. Planning reads two such values per pod on every round, so the common form (what
// this package and OpenKruise write) is scanned without decoding; anything unusual (escapes,
// non-ASCII, legacy or unknown fields) goes through the full decoder.
func LookupHash(value, sidecarSetName string) (hash, revision string, ok bool) {
	if value == "" {
		return "", "", false
	}
	if s := (hashScanner{in: value}); plainASCII(value) {
		if e, found, valid := s.lookup(sidecarSetName); valid {
			return e.Hash, e.ControllerRevision, found
		}
	}
	e, ok := PodHashEntry(map[string]string{HashAnnotation: value}, HashAnnotation, sidecarSetName)
	return e.Hash, e.ControllerRevision, ok
}

// plainASCII reports whether s has no escapes, control characters or non-ASCII bytes, so that
// JSON strings in it are exactly the bytes between their quotes.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\\' || c >= 0x80 || c < 0x20 {
			return false
		}
	}
	return true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// hashScanner scans a HashMap rendered as JSON. valid=false means "not sure, decode it".
type hashScanner struct {
	in  string
	pos int
}

func (s *hashScanner) lookup(name string) (entry HashEntry, found, valid bool) {
	if !s.expect('{') {
		return entry, false, false
	}
	if s.peek() == '}' {
		s.pos++
		return entry, false, s.end()
	}
	for {
		key, ok := s.str()
		if !ok || !s.expect(':') || s.peek() != '{' {
			return entry, false, false // a legacy flat value or garbage: decode it
		}
		e, ok := s.entry()
		if !ok {
			return entry, false, false
		}
		if key == name { // the last duplicate wins, as in encoding/json
			entry, found = e, true
		}
		switch s.next() {
		case ',':
			continue
		case '}':
			return entry, found, s.end()
		default:
			return entry, false, false
		}
	}
}

// entry scans one HashEntry object whose fields all have their exact JSON names.
func (s *hashScanner) entry() (e HashEntry, ok bool) {
	if !s.expect('{') {
		return e, false
	}
	if s.peek() == '}' {
		s.pos++
		return e, true
	}
	for {
		key, ok := s.str()
		if !ok || !s.expect(':') {
			return e, false
		}
		switch key {
		case "hash":
			e.Hash, ok = s.str()
		case "controllerRevision":
			e.ControllerRevision, ok = s.str()
		case "sidecarSetName":
			_, ok = s.str()
		case "updateTimestamp":
			var ts string
			if ts, ok = s.str(); ok {
				_, err := time.Parse(time.RFC3339, ts)
				ok = err == nil
			}
		case "sidecarList":
			ok = s.strings()
		default:
			return e, false
		}
		if !ok {
			return e, false
		}
		switch s.next() {
		case ',':
		case '}':
			return e, true
		default:
			return e, false
		}
	}
}

// strings scans an array of strings.
func (s *hashScanner) strings() bool {
	if !s.expect('[') {
		return false
	}
	if s.peek() == ']' {
		s.pos++
		return true
	}
	for {
		if _, ok := s.str(); !ok {
			return false
		}
		switch s.next() {
		case ',':
		case ']':
			return true
		default:
			return false
		}
	}
}

// str scans a string without escapes (plainASCII guarantees there are none).
func (s *hashScanner) str() (string, bool) {
	if !s.expect('"') {
		return "", false
	}
	end := strings.IndexByte(s.in[s.pos:], '"')
	if end < 0 {
		return "", false
	}
	v := s.in[s.pos : s.pos+end]
	s.pos += end + 1
	return v, true
}

func (s *hashScanner) skipSpace() {
	for s.pos < len(s.in) && isSpace(s.in[s.pos]) {
		s.pos++
	}
}

func (s *hashScanner) peek() byte {
	s.skipSpace()
	if s.pos >= len(s.in) {
		return 0
	}
	return s.in[s.pos]
}

func (s *hashScanner) next() byte {
	c := s.peek()
	if c != 0 {
		s.pos++
	}
	return c
}

func (s *hashScanner) expect(c byte) bool { return s.next() == c }

func (s *hashScanner) end() bool {
	s.skipSpace()
	return s.pos == len(s.in)
}
