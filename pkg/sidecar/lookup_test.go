package sidecar

import (
	"testing"
	"time"
)

func TestLookupHash(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	rendered := map[string]string{}
	_ = SetHashEntry(rendered, HashAnnotation, NewHashEntry("a", "ha", "a-rev", []string{"s1", "s2"}, now))
	_ = SetHashEntry(rendered, HashAnnotation, NewHashEntry("b", "hb", "", nil, now))
	tests := []struct {
		name, value, lookup string
		hash, revision      string
		ok                  bool
	}{
		{name: "rendered first", value: rendered[HashAnnotation], lookup: "a", hash: "ha", revision: "a-rev", ok: true},
		{name: "rendered second", value: rendered[HashAnnotation], lookup: "b", hash: "hb", ok: true},
		{name: "missing", value: rendered[HashAnnotation], lookup: "c"},
		{name: "empty", value: "", lookup: "a"},
		{name: "empty object", value: "{}", lookup: "a"},
		{name: "legacy flat", value: `{"a":"h1","b":"h2"}`, lookup: "b", hash: "h2", ok: true},
		{name: "whitespace", value: ` { "a" : { "hash" : "h" , "sidecarList" : [ "x" ] } } `, lookup: "a", hash: "h", ok: true},
		{name: "duplicate key last wins", value: `{"a":{"hash":"h1"},"a":{"hash":"h2"}}`, lookup: "a", hash: "h2", ok: true},
		{name: "case-insensitive field", value: `{"a":{"Hash":"h"}}`, lookup: "a", hash: "h", ok: true},
		{name: "escaped", value: `{"a":{"hash":"h\u0031"}}`, lookup: "a", hash: "h1", ok: true},
		{name: "bad timestamp", value: `{"a":{"hash":"h","updateTimestamp":"yesterday"}}`, lookup: "a"},
		{name: "truncated", value: `{"a":{"hash":"h"`, lookup: "a"},
		{name: "trailing garbage", value: `{"a":{"hash":"h"}}x`, lookup: "a"},
		{name: "null entry", value: `{"a":null}`, lookup: "a", ok: true},
		{name: "mixed legacy and entries", value: `{"a":"h","b":{"hash":"x"}}`, lookup: "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hash, revision, ok := LookupHash(tt.value, tt.lookup)
			if hash != tt.hash || revision != tt.revision || ok != tt.ok {
				t.Errorf("LookupHash = %q, %q, %v; want %q, %q, %v", hash, revision, ok, tt.hash, tt.revision, tt.ok)
			}
		})
	}
}

// FuzzLookupHash checks the scanner against the full decoder on arbitrary values.
func FuzzLookupHash(f *testing.F) {
	a := map[string]string{}
	_ = SetHashEntry(a, HashAnnotation, NewHashEntry("a", "ha", "rev", []string{"x"}, time.Unix(1700000000, 0)))
	for _, seed := range []string{a[HashAnnotation], `{"a":"h"}`, `{}`, `{"a":{"hash":"h"},"a":{}}`, ` {"a" :{"sidecarList":null}}`} {
		f.Add(seed, "a")
	}
	f.Fuzz(func(t *testing.T, value, name string) {
		hash, revision, ok := LookupHash(value, name)
		e, want := PodHashEntry(map[string]string{HashAnnotation: value}, HashAnnotation, name)
		if hash != e.Hash || revision != e.ControllerRevision || ok != want {
			t.Fatalf("LookupHash(%q, %q) = %q, %q, %v; decoder says %q, %q, %v", value, name, hash, revision, ok, e.Hash, e.ControllerRevision, want)
		}
		if got, _ := LookupHashEntry(value, name); !got.UpdateTimestamp.Equal(&e.UpdateTimestamp) {
			t.Fatalf("LookupHashEntry(%q, %q) updateTimestamp %v; decoder says %v", value, name, got.UpdateTimestamp, e.UpdateTimestamp)
		}
	})
}

func BenchmarkLookupHash(b *testing.B) {
	a := map[string]string{}
	_ = SetHashEntry(a, HashAnnotation, NewHashEntry("ss-a", "bxz24c8w99v5bx8db2w7df2c48wd9w2c5dbfcfb5vw8x6v2fb9vx6c2c7dw7vx5z", "ss-a-5d8f7", []string{"sidecar1"}, time.Now()))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		LookupHash(a[HashAnnotation], "ss-a")
	}
}
