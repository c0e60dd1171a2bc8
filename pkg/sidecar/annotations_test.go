package sidecar

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var now = time.Date(2026, 7, 1, 12, 30, 45, 987654321, time.FixedZone("CEST", 2*3600))

// The golden strings are what OpenKruise's json.Marshal of map[string]SidecarSetUpgradeSpec
// produces: keys sorted, struct field order, UTC second-precision timestamps, controllerRevision
// omitted when empty, sidecarList always present.
func TestHashMapString(t *testing.T) {
	tests := []struct {
		name string
		m    HashMap
		want string
	}{
		{
			name: "two entries, sorted, with and without revision",
			m: HashMap{
				"b-set": NewHashEntry("b-set", "hb", "", nil, now),
				"a-set": NewHashEntry("a-set", "ha", "a-set-7d9f", []string{"z", "envoy"}, now),
			},
			want: `{"a-set":{"updateTimestamp":"2026-07-01T10:30:45Z","hash":"ha","sidecarSetName":"a-set","sidecarList":["envoy","z"],"controllerRevision":"a-set-7d9f"},` +
				`"b-set":{"updateTimestamp":"2026-07-01T10:30:45Z","hash":"hb","sidecarSetName":"b-set","sidecarList":[]}}`,
		},
		{name: "empty", m: HashMap{}, want: `{}`},
		{name: "nil", m: nil, want: `{}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.m.String()); diff != "" {
				t.Errorf("String() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseHashMap(t *testing.T) {
	ts := metav1.NewTime(time.Date(2026, 7, 1, 10, 30, 45, 0, time.UTC))
	tests := []struct {
		name    string
		value   string
		want    HashMap
		wantErr bool
	}{
		{name: "empty", value: "", want: HashMap{}},
		{name: "null", value: "null", want: HashMap{}},
		{
			name:  "struct form",
			value: `{"a":{"updateTimestamp":"2026-07-01T10:30:45Z","hash":"h","sidecarSetName":"a","sidecarList":["c"],"controllerRevision":"r"}}`,
			want:  HashMap{"a": {UpdateTimestamp: ts, Hash: "h", SidecarSetName: "a", SidecarList: []string{"c"}, ControllerRevision: "r"}},
		},
		{
			name:  "legacy flat form",
			value: `{"a":"h1","b":"h2"}`,
			want:  HashMap{"a": {Hash: "h1", SidecarSetName: "a"}, "b": {Hash: "h2", SidecarSetName: "b"}},
		},
		{name: "not json", value: `{"a":`, wantErr: true},
		{name: "array", value: `["a"]`, wantErr: true},
		{name: "mixed forms", value: `{"a":"h","b":{"hash":"x"}}`, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseHashMap(tc.value)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseHashMap() error = %v, wantErr %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseHashMap() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHashMapRoundTrip(t *testing.T) {
	in := `{"a":{"updateTimestamp":"2026-07-01T10:30:45Z","hash":"h","sidecarSetName":"a","sidecarList":["c","d"],"controllerRevision":"r"},"b":{"updateTimestamp":"2026-07-01T10:30:45Z","hash":"h2","sidecarSetName":"b","sidecarList":[]}}`
	m, err := ParseHashMap(in)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, m.String()); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestSetHashEntryConvertsLegacy(t *testing.T) {
	a := map[string]string{HashAnnotation: `{"old":"h0"}`}
	if err := SetHashEntry(a, HashAnnotation, NewHashEntry("new", "h1", "new-1", []string{"s"}, now)); err != nil {
		t.Fatal(err)
	}
	want := `{"new":{"updateTimestamp":"2026-07-01T10:30:45Z","hash":"h1","sidecarSetName":"new","sidecarList":["s"],"controllerRevision":"new-1"},` +
		`"old":{"updateTimestamp":null,"hash":"h0","sidecarSetName":"old","sidecarList":null}}`
	if diff := cmp.Diff(want, a[HashAnnotation]); diff != "" {
		t.Errorf("annotation (-want +got):\n%s", diff)
	}
	bad := map[string]string{HashAnnotation: `nope`}
	if err := SetHashEntry(bad, HashAnnotation, HashEntry{SidecarSetName: "x"}); err == nil || bad[HashAnnotation] != "nope" {
		t.Errorf("SetHashEntry on malformed value: err = %v, value = %q; want error and unchanged value", err, bad[HashAnnotation])
	}
}

func TestPodHashEntry(t *testing.T) {
	a := map[string]string{HashAnnotation: `{"a":"h"}`, HashWithoutImageAnnotation: `garbage`}
	if e, ok := PodHashEntry(a, HashAnnotation, "a"); !ok || e.Hash != "h" {
		t.Errorf("PodHashEntry(a) = %+v, %v", e, ok)
	}
	if _, ok := PodHashEntry(a, HashAnnotation, "b"); ok {
		t.Error("PodHashEntry(b) found")
	}
	if _, ok := PodHashEntry(a, HashWithoutImageAnnotation, "a"); ok {
		t.Error("PodHashEntry on malformed annotation found an entry")
	}
}

func TestSameContent(t *testing.T) {
	a := NewHashEntry("s", "h", "r", []string{"b", "a"}, now)
	b := NewHashEntry("s", "h", "r", []string{"a", "b"}, now.Add(time.Hour))
	if !a.SameContent(b) {
		t.Error("entries differing only by timestamp are not SameContent")
	}
	for _, o := range []HashEntry{
		NewHashEntry("s", "h2", "r", []string{"a", "b"}, now),
		NewHashEntry("s", "h", "r2", []string{"a", "b"}, now),
		NewHashEntry("s", "h", "r", []string{"a"}, now),
		NewHashEntry("s", "h", "r", []string{"a", "c"}, now),
	} {
		if a.SameContent(o) {
			t.Errorf("%+v SameContent %+v", a, o)
		}
	}
}

func TestInjectedList(t *testing.T) {
	if diff := cmp.Diff([]string{"a", "b", "c"}, ParseInjectedList("c,a,,b,a")); diff != "" {
		t.Errorf("ParseInjectedList (-want +got):\n%s", diff)
	}
	if got := ParseInjectedList(""); got != nil {
		t.Errorf("ParseInjectedList(\"\") = %v", got)
	}
	if got, want := RenderInjectedList([]string{"log-sidecarset", "envoy-sidecarset", "log-sidecarset"}), "envoy-sidecarset,log-sidecarset"; got != want {
		t.Errorf("RenderInjectedList = %q, want %q", got, want)
	}
	if !InjectedListHas("a,bb", "bb") || InjectedListHas("a,bb", "b") || InjectedListHas("a,bb", "") {
		t.Error("InjectedListHas wrong")
	}
}

// TestInjectedListHas: the lookup agrees with the decoded list on lists with empty names, spaces
// and names that prefix others.
func TestInjectedListHas(t *testing.T) {
	for _, list := range []string{"", "ss", "a,ss", "ss,b", "a,ss,b", "ss-2", "xss", "a,,ss", "ss,", ",", ",,ss,,", " ss"} {
		for _, name := range []string{"ss", "", "a"} {
			want := slices.Contains(ParseInjectedList(list), name)
			if got := InjectedListHas(list, name); got != want {
				t.Errorf("InjectedListHas(%q, %q) = %v, ParseInjectedList says %v", list, name, got, want)
			}
		}
	}
}

func TestWorkingContainers(t *testing.T) {
	tests := []struct {
		value string
		want  map[string]string
	}{
		{value: `{"envoy":"envoy-1","mesh":"mesh-2"}`, want: map[string]string{"envoy": "envoy-1", "mesh": "mesh-2"}},
		{value: `not json`, want: map[string]string{}},
		{value: `null`, want: map[string]string{}},
	}
	for _, tc := range tests {
		got := WorkingContainers(map[string]string{WorkingHotUpgradeContainerAnnotation: tc.value})
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("WorkingContainers(%q) (-want +got):\n%s", tc.value, diff)
		}
	}
	if got := WorkingContainers(nil); got == nil {
		t.Error("WorkingContainers(nil) = nil")
	}
	if got, want := RenderWorkingContainers(map[string]string{"z": "z-2", "a": "a-1"}), `{"a":"a-1","z":"z-2"}`; got != want {
		t.Errorf("RenderWorkingContainers = %s, want %s", got, want)
	}
}

func TestRecordInPlaceUpdate(t *testing.T) {
	a := map[string]string{}
	RecordInPlaceUpdate(a, "s", "h1", now, []string{"envoy"}, map[string]InPlaceUpdateContainerStatus{"envoy": {ImageID: "docker://sha256:1"}})
	later := now.Add(time.Hour)
	RecordInPlaceUpdate(a, "s", "h2", later, []string{"log"}, map[string]InPlaceUpdateContainerStatus{
		"log": {ImageID: "docker://sha256:2", ContainerID: "containerd://a", RestartCount: 2, PodGeneration: 3}})
	want := `{"s":{"revision":"h1","updateTimestamp":"2026-07-01T10:30:45Z","lastContainerStatuses":{"envoy":{"imageID":"docker://sha256:1"},"log":{"imageID":"docker://sha256:2","containerID":"containerd://a","restartCount":2,"podGeneration":3}}}}`
	if diff := cmp.Diff(want, a[InPlaceUpdateStateAnnotation]); diff != "" {
		t.Errorf("annotation (-want +got):\n%s", diff)
	}
	states, err := ParseInPlaceUpdateStates(a[InPlaceUpdateStateAnnotation])
	if err != nil || states["s"].Revision != "h1" || len(states["s"].LastContainerStatuses) != 2 {
		t.Errorf("ParseInPlaceUpdateStates = %+v, %v", states, err)
	}
	if _, err := ParseInPlaceUpdateStates("{"); err == nil {
		t.Error("ParseInPlaceUpdateStates accepted malformed JSON")
	}
}

// TestRenderMatchesEncodingJSON pins the hand-written renderers to encoding/json's output, which
// is what OpenKruise writes.
func TestRenderMatchesEncodingJSON(t *testing.T) {
	odd := []string{"", "plain", `q"uote\`, "<tag>&amp;", "tab\tnl\n\x01", "é ü 日本", "\u2028\u2029", "bad\xffutf8", "\x7f"}
	for _, s := range odd {
		m := HashMap{s: {UpdateTimestamp: metav1.NewTime(now), Hash: s, SidecarSetName: s, SidecarList: []string{s, "x"}, ControllerRevision: s}}
		m["legacy"+s] = HashEntry{Hash: s, SidecarSetName: "legacy"}
		want, err := json.Marshal(map[string]HashEntry(m))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), m.String()); diff != "" {
			t.Errorf("HashMap.String(%q) (-encoding/json +got):\n%s", s, diff)
		}
		w := map[string]string{s: s, "b": "b-1"}
		want, _ = json.Marshal(w)
		if diff := cmp.Diff(string(want), RenderWorkingContainers(w)); diff != "" {
			t.Errorf("RenderWorkingContainers(%q) (-encoding/json +got):\n%s", s, diff)
		}
	}
	if got := RenderWorkingContainers(nil); got != "{}" {
		t.Errorf("RenderWorkingContainers(nil) = %s", got)
	}
}
