package rollout

import (
	"strconv"
	"strings"
	"time"

	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// A plan reads the in-place update record of every pod whose runtime reports a sidecar image in
// another form than its spec, on every round; decoding it with encoding/json was a third of the
// cost of planning 10,000 pods. lookupRecord scans the form sidecar.RecordInPlaceUpdate writes
// without decoding, and hands anything unusual (escapes, whitespace other than spaces, unknown or
// differently cased fields, nulls, numbers that are not plain integers, a duplicated entry of the
// SidecarSet) to sidecar.ParseInPlaceUpdateStates, so that it accepts and refuses exactly what
// that function does.

// containerRecord is one container's recorded state.
type containerRecord struct {
	name   string
	status sidecar.InPlaceUpdateContainerStatus
}

// lookupRecord returns the recorded container states of SidecarSet sidecarSetName in an in-place
// update state annotation value, and bad=true when the value does not decode.
func lookupRecord(value, sidecarSetName string) (record []containerRecord, bad bool) {
	if plainASCII(value) {
		s := recordScanner{in: value}
		if rec, ok := s.lookup(sidecarSetName); ok {
			return rec, false
		}
	}
	states, err := sidecar.ParseInPlaceUpdateStates(value)
	if err != nil {
		return nil, true
	}
	if st := states[sidecarSetName]; st != nil {
		for name, status := range st.LastContainerStatuses {
			record = append(record, containerRecord{name: name, status: status})
		}
	}
	return record, false
}

// plainASCII reports whether s has no escapes, control characters (so no whitespace but spaces)
// or non-ASCII bytes: JSON strings in it are exactly the bytes between their quotes.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\\' || c >= 0x80 || c < 0x20 {
			return false
		}
	}
	return true
}

// recordScanner scans a map of SidecarSet name to InPlaceUpdateState. Its methods return ok=false
// for "not sure, decode it".
type recordScanner struct {
	in  string
	pos int
}

func (s *recordScanner) lookup(name string) (record []containerRecord, ok bool) {
	if !s.expect('{') {
		return nil, false
	}
	found := false
	if s.peek() == '}' {
		s.pos++
		return nil, s.end()
	}
	for {
		key, ok := s.str()
		if !ok || !s.expect(':') {
			return nil, false
		}
		rec, ok := s.state()
		if !ok {
			return nil, false
		}
		if key == name {
			if found {
				return nil, false // a duplicate: let the decoder decide which wins
			}
			found, record = true, rec
		}
		switch s.next() {
		case ',':
		case '}':
			return record, s.end()
		default:
			return nil, false
		}
	}
}

// state scans one InPlaceUpdateState object.
func (s *recordScanner) state() (record []containerRecord, ok bool) {
	if !s.expect('{') {
		return nil, false
	}
	if s.peek() == '}' {
		s.pos++
		return nil, true
	}
	var seen [3]bool
	for {
		key, ok := s.str()
		if !ok || !s.expect(':') {
			return nil, false
		}
		var field int
		switch key {
		case "revision":
			field = 0
			_, ok = s.str()
		case "updateTimestamp":
			field = 1
			var ts string
			if ts, ok = s.str(); ok {
				_, err := time.Parse(time.RFC3339, ts)
				ok = err == nil
			}
		case "lastContainerStatuses":
			field = 2
			record, ok = s.statuses()
		default:
			return nil, false
		}
		if !ok || seen[field] {
			return nil, false
		}
		seen[field] = true
		switch s.next() {
		case ',':
		case '}':
			return record, true
		default:
			return nil, false
		}
	}
}

// statuses scans the map of container name to InPlaceUpdateContainerStatus; of duplicate names
// the last wins, as in encoding/json.
func (s *recordScanner) statuses() (record []containerRecord, ok bool) {
	if !s.expect('{') {
		return nil, false
	}
	if s.peek() == '}' {
		s.pos++
		return []containerRecord{}, true
	}
	for {
		name, ok := s.str()
		if !ok || !s.expect(':') {
			return nil, false
		}
		st, ok := s.status()
		if !ok {
			return nil, false
		}
		replaced := false
		for i := range record {
			if record[i].name == name {
				record[i].status, replaced = st, true
			}
		}
		if !replaced {
			record = append(record, containerRecord{name: name, status: st})
		}
		switch s.next() {
		case ',':
		case '}':
			return record, true
		default:
			return nil, false
		}
	}
}

// status scans one InPlaceUpdateContainerStatus object.
func (s *recordScanner) status() (st sidecar.InPlaceUpdateContainerStatus, ok bool) {
	if !s.expect('{') {
		return st, false
	}
	if s.peek() == '}' {
		s.pos++
		return st, true
	}
	var seen [4]bool
	for {
		key, ok := s.str()
		if !ok || !s.expect(':') {
			return st, false
		}
		var field int
		switch key {
		case "imageID":
			field = 0
			st.ImageID, ok = s.str()
		case "containerID":
			field = 1
			st.ContainerID, ok = s.str()
		case "restartCount":
			field = 2
			var n int64
			n, ok = s.integer(32)
			st.RestartCount = int32(n)
		case "podGeneration":
			field = 3
			st.PodGeneration, ok = s.integer(64)
		default:
			return st, false
		}
		if !ok || seen[field] {
			return st, false
		}
		seen[field] = true
		switch s.next() {
		case ',':
		case '}':
			return st, true
		default:
			return st, false
		}
	}
}

// integer scans a JSON number written as a plain integer that fits in bits.
func (s *recordScanner) integer(bits int) (int64, bool) {
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

// str scans a string without escapes (plainASCII guarantees there are none).
func (s *recordScanner) str() (string, bool) {
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

func (s *recordScanner) skipSpace() {
	for s.pos < len(s.in) && s.in[s.pos] == ' ' {
		s.pos++
	}
}

func (s *recordScanner) peek() byte {
	s.skipSpace()
	if s.pos >= len(s.in) {
		return 0
	}
	return s.in[s.pos]
}

func (s *recordScanner) next() byte {
	c := s.peek()
	if c != 0 {
		s.pos++
	}
	return c
}

func (s *recordScanner) expect(c byte) bool { return s.next() == c }

func (s *recordScanner) end() bool {
	s.skipSpace()
	return s.pos == len(s.in)
}
