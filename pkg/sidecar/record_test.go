package sidecar

import (
	"reflect"
	"testing"
	"time"
)

// referenceRecord is what LookupInPlaceUpdate must return: the decoding of ParseInPlaceUpdateStates.
func referenceRecord(value, name string) (map[string]InPlaceUpdateContainerStatus, bool) {
	states, err := ParseInPlaceUpdateStates(value)
	if err != nil {
		return nil, true
	}
	out := map[string]InPlaceUpdateContainerStatus{}
	if st := states[name]; st != nil {
		for c, s := range st.LastContainerStatuses {
			out[c] = s
		}
	}
	return out, false
}

func checkRecordParity(t *testing.T, value string) {
	t.Helper()
	for _, name := range []string{"ss", "other", ""} {
		want, wantBad := referenceRecord(value, name)
		rec, err := LookupInPlaceUpdate(value, name)
		if bad := err != nil; bad != wantBad {
			t.Fatalf("LookupInPlaceUpdate(%q, %q): error %v, the decoder says bad=%v", value, name, err, wantBad)
		}
		if wantBad {
			continue
		}
		got := map[string]InPlaceUpdateContainerStatus{}
		for _, r := range rec {
			if _, dup := got[r.Name]; dup {
				t.Fatalf("LookupInPlaceUpdate(%q, %q): container %s twice", value, name, r.Name)
			}
			got[r.Name] = r.Status
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("LookupInPlaceUpdate(%q, %q) = %v, the decoder says %v", value, name, got, want)
		}
	}
}

var recordSamples = []string{
	``,
	`{}`,
	` { } `,
	`null`,
	`[]`,
	`"x"`,
	`{} x`,
	`{"ss":null}`,
	`{"ss":{}}`,
	`{"ss":{"lastContainerStatuses":null}}`,
	`{"ss":{"lastContainerStatuses":{}}}`,
	`{"ss":{"lastContainerStatuses":{"c":null}}}`,
	`{"ss":{"lastContainerStatuses":{"c":{}}}}`,
	`{"ss":{"revision":"h2","updateTimestamp":"2026-03-01T12:00:00Z","lastContainerStatuses":{"sidecar":{"imageID":"docker-pullable://x@sha256:ab","containerID":"containerd://1","restartCount":2,"podGeneration":7}}}}`,
	`{"ss":{"revision":"h2","updateTimestamp":"2026-03-01T12:00:00+02:00","lastContainerStatuses":{"a":{"imageID":"i"},"b":{"containerID":"c","podGeneration":1}}},"other":{"revision":"x","updateTimestamp":"2026-03-01T12:00:00Z","lastContainerStatuses":{"a":{"restartCount":5}}}}`,
	// OpenKruise writes more fields.
	`{"ss":{"revision":"h","updateTimestamp":"2026-03-01T12:00:00Z","lastContainerStatuses":{"sidecar":{"imageID":"i"}},"nextContainerImages":{}}}`,
	// Whitespace, escapes, case-insensitive field names.
	"{\n  \"ss\": {\"lastContainerStatuses\": {\"c\": {\"restartCount\": 1}}}\n}",
	`{"ss":{"lastContainerStatuses":{"c":{"imageID":"a\u0041"}}}}`,
	`{"ss":{"lastContainerStatuses":{"c":{"RestartCount":3}}}}`,
	`{"ss":{"LastContainerStatuses":{"c":{"restartCount":3}}}}`,
	`{"ß":{},"ss":{"lastContainerStatuses":{"c":{"restartCount":3}}}}`,
	// Timestamps.
	`{"ss":{"updateTimestamp":null}}`,
	`{"ss":{"updateTimestamp":"2026-13-01T00:00:00Z"}}`,
	`{"ss":{"updateTimestamp":"yesterday"}}`,
	`{"ss":{"updateTimestamp":12}}`,
	`{"ss":{"updateTimestamp":""}}`,
	// Numbers.
	`{"ss":{"lastContainerStatuses":{"c":{"restartCount":-1}}}}`,
	`{"ss":{"lastContainerStatuses":{"c":{"restartCount":-0}}}}`,
	`{"ss":{"lastContainerStatuses":{"c":{"restartCount":0}}}}`,
	`{"ss":{"lastContainerStatuses":{"c":{"restartCount":01}}}}`,
	`{"ss":{"lastContainerStatuses":{"c":{"restartCount":1.0}}}}`,
	`{"ss":{"lastContainerStatuses":{"c":{"restartCount":1e2}}}}`,
	`{"ss":{"lastContainerStatuses":{"c":{"restartCount":"1"}}}}`,
	`{"ss":{"lastContainerStatuses":{"c":{"restartCount":null}}}}`,
	`{"ss":{"lastContainerStatuses":{"c":{"restartCount":2147483647}}}}`,
	`{"ss":{"lastContainerStatuses":{"c":{"restartCount":2147483648}}}}`,
	`{"ss":{"lastContainerStatuses":{"c":{"podGeneration":9223372036854775807}}}}`,
	`{"ss":{"lastContainerStatuses":{"c":{"podGeneration":9223372036854775808}}}}`,
	`{"ss":{"lastContainerStatuses":{"c":{"podGeneration":-}}}}`,
	`{"ss":{"lastContainerStatuses":{"c":{"imageID":5}}}}`,
	`{"ss":{"revision":5}}`,
	// Duplicates: the last wins, maps merge.
	`{"ss":{"lastContainerStatuses":{"c":{"restartCount":1}}},"ss":{"lastContainerStatuses":{"d":{"restartCount":2}}}}`,
	`{"ss":{"lastContainerStatuses":{"c":{"restartCount":1},"c":{"imageID":"i"}}}}`,
	`{"ss":{"lastContainerStatuses":{"c":{"restartCount":1,"restartCount":2}}}}`,
	`{"ss":{"lastContainerStatuses":{"c":{"restartCount":1}},"lastContainerStatuses":{"d":{"restartCount":2}}}}`,
	// Truncated or broken.
	`{"ss":{"revision":"h2"`,
	`{"ss":{"revision":"h2"}`,
	`{"ss":{"revision":"h2"}}}`,
	`{"ss":{"revision":"h2",}}`,
	`{"ss" {"revision":"h2"}}`,
	`{ss:{}}`,
	`{"ss":{"lastContainerStatuses":{"c":{"imageID":"i"}x}}}`,
	`{"ss":{"lastContainerStatuses":[]}}`,
}

func TestLookupRecordParity(t *testing.T) {
	for _, v := range recordSamples {
		checkRecordParity(t, v)
	}
}

// TestLookupRecordFastPath: what RecordInPlaceUpdate writes is scanned, not decoded.
func TestLookupRecordFastPath(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	ann := map[string]string{}
	RecordInPlaceUpdate(ann, "ss", "h1", t0, []string{"sidecar", "proxy-2"}, map[string]InPlaceUpdateContainerStatus{
		"sidecar": {ImageID: "docker.io/library/sidecar@sha256:01", ContainerID: "containerd://abc", RestartCount: 3, PodGeneration: 12},
		"proxy-2": {ImageID: "docker.io/library/empty@sha256:02", ContainerID: "containerd://def"},
	})
	RecordInPlaceUpdate(ann, "other", "h9", t0, []string{"x"}, map[string]InPlaceUpdateContainerStatus{"x": {ImageID: "i"}})
	v := ann[InPlaceUpdateStateAnnotation]
	s := scanner{in: v}
	rec, ok := s.inPlaceUpdate("ss")
	if !plainJSON(v) || !ok {
		t.Fatalf("the scanner gives up on %s", v)
	}
	if len(rec) != 2 {
		t.Fatalf("record %v", rec)
	}
	checkRecordParity(t, v)
}

func FuzzLookupRecord(f *testing.F) {
	for _, v := range recordSamples {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		checkRecordParity(t, v)
	})
}
