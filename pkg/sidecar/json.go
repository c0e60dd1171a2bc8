package sidecar

import (
	"encoding/json"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The annotation values are rendered by hand for speed (injection renders them for every pod);
// the output is byte-identical to encoding/json's, which the tests and fuzz targets check.

// writeHashMap writes m as encoding/json renders a map[string]HashEntry.
func writeHashMap(w *strings.Builder, m HashMap) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	w.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			w.WriteByte(',')
		}
		writeJSONString(w, k)
		w.WriteByte(':')
		writeHashEntry(w, m[k])
	}
	w.WriteByte('}')
}

func writeHashEntry(w *strings.Builder, e HashEntry) {
	w.WriteString(`{"updateTimestamp":`)
	writeTime(w, e.UpdateTimestamp)
	w.WriteString(`,"hash":`)
	writeJSONString(w, e.Hash)
	w.WriteString(`,"sidecarSetName":`)
	writeJSONString(w, e.SidecarSetName)
	w.WriteString(`,"sidecarList":`)
	if e.SidecarList == nil {
		w.WriteString("null")
	} else {
		w.WriteByte('[')
		for i, s := range e.SidecarList {
			if i > 0 {
				w.WriteByte(',')
			}
			writeJSONString(w, s)
		}
		w.WriteByte(']')
	}
	if e.ControllerRevision != "" {
		w.WriteString(`,"controllerRevision":`)
		writeJSONString(w, e.ControllerRevision)
	}
	w.WriteByte('}')
}

// writeTime writes t as metav1.Time.MarshalJSON does.
func writeTime(w *strings.Builder, t metav1.Time) {
	if t.IsZero() {
		w.WriteString("null")
		return
	}
	var scratch [48]byte
	b := append(scratch[:0], '"')
	b = t.UTC().AppendFormat(b, time.RFC3339)
	w.Write(append(b, '"'))
}

// writeStringMap writes m as encoding/json renders a map[string]string.
func writeStringMap(w *strings.Builder, m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	w.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			w.WriteByte(',')
		}
		writeJSONString(w, k)
		w.WriteByte(':')
		writeJSONString(w, m[k])
	}
	w.WriteByte('}')
}

// writeJSONString writes s quoted as encoding/json does (HTML-safe escaping): printable ASCII
// other than " \ < > & is copied, anything else goes through encoding/json.
func writeJSONString(w *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			quoted, _ := json.Marshal(s) // a string always marshals
			w.Write(quoted)
			return
		}
	}
	w.WriteByte('"')
	w.WriteString(s)
	w.WriteByte('"')
}
