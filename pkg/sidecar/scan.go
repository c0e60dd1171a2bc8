package sidecar

import (
	"strconv"
	"strings"
	"time"
)

// Planning reads the hash and in-place update annotations of every pod on every round, so the
// forms this package and OpenKruise write are scanned without decoding (LookupHash,
// LookupInPlaceUpdate). The scanner only accepts values whose JSON strings are the bytes between
// their quotes (plainJSON) and answers ok=false for anything it is not sure of; callers then decode
// with encoding/json, so that both paths accept and refuse the same values.

// plainJSON reports whether s has no escapes, control characters (so no whitespace but spaces)
// or non-ASCII bytes: JSON strings in it are exactly the bytes between their quotes.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\\' || c >= 0x80 || c < 0x20 {
			return false
		}
	}
	return true
}

// scanner scans a plainJSON value.
type scanner struct {
	in  string
	pos int
}

// members scans an object, calling member with each key while the scanner stands at its value;
// member scans the value and returns false to give up.
func (s *scanner) members(member func(key string) bool) bool {
	return s.sequence('{', '}', func() bool {
		key, ok := s.str()
		return ok && s.expect(':') && member(key)
	})
}

// strings scans an array of strings.
func (s *scanner) strings() bool {
	return s.sequence('[', ']', func() bool {
		_, ok := s.str()
		return ok
	})
}

// sequence scans open, elements separated by commas (each scanned by elem, false to give up),
// then closing.
func (s *scanner) sequence(open, closing byte, elem func() bool) bool {
	if !s.expect(open) {
		return false
	}
	if s.peek() == closing {
		s.pos++
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch s.next() {
		case ',':
		case closing:
			return true
		default:
			return false
		}
	}
}

// str scans a string (plainJSON guarantees it has no escapes).
func (s *scanner) str() (string, bool) {
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

// timestamp scans a string that metav1.Time decodes, and returns its time.
func (s *scanner) timestamp() (time.Time, bool) {
	ts, ok := s.str()
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, ts)
	return t, err == nil
}

// integer scans a JSON number written as a plain integer that fits in bits.
func (s *scanner) integer(bits int) (int64, bool) {
	s.skipSpace()
	start := s.pos
	if s.pos < len(s.in) && s.in[s.pos] == '-' {
		s.pos++
	}
	digits := s.pos
	for s.pos < len(s.in) && s.in[s.pos] >= '0' && s.in[s.pos] <= '9' {
		s.pos++
	}
	tok := s.in[start:s.pos]
	if s.pos == digits || (s.in[digits] == '0' && s.pos-digits > 1) {
		return 0, false // no digits, or a leading zero
	}
	if s.pos < len(s.in) && strings.IndexByte(".eE", s.in[s.pos]) >= 0 {
		return 0, false // a fraction or an exponent
	}
	n, err := strconv.ParseInt(tok, 10, bits)
	return n, err == nil
}

func (s *scanner) skipSpace() {
	for s.pos < len(s.in) && s.in[s.pos] == ' ' {
		s.pos++
	}
}

func (s *scanner) peek() byte {
	s.skipSpace()
	if s.pos >= len(s.in) {
		return 0
	}
	return s.in[s.pos]
}

func (s *scanner) next() byte {
	c := s.peek()
	if c != 0 {
		s.pos++
	}
	return c
}

func (s *scanner) expect(c byte) bool { return s.next() == c }

func (s *scanner) end() bool {
	s.skipSpace()
	return s.pos == len(s.in)
}

// fields remembers which fields of an object were seen, to refuse duplicates.
type fields uint8

// first records field i and reports whether it was not seen before.
func (f *fields) first(i uint) bool {
	if *f&(1<<i) != 0 {
		return false
	}
	*f |= 1 << i
	return true
}
