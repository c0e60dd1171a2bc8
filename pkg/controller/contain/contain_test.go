package contain

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/component-base/metrics/testutil"
)

func count(t *testing.T, where string) float64 {
	t.Helper()
	register()
	v, err := testutil.GetCounterMetricValue(panics.WithLabelValues(where))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestRun(t *testing.T) {
	if err := Run("test-ok", func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	want := errors.New("plain")
	if err := Run("test-err", func() error { return want }); err != want {
		t.Fatalf("error %v, want %v", err, want)
	}
	before := count(t, "test-panic")
	err := Run("test-panic", func() error {
		var m map[string]int
		//lint:ignore SA5000 the runtime panic is what is contained
		m["x"] = 1
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "recovered from a panic in test-panic") {
		t.Fatalf("error %v", err)
	}
	if got := count(t, "test-panic"); got != before+1 {
		t.Errorf("counted %v panics, want %v", got, before+1)
	}
}
