package webhook

import (
	"context"
	"testing"
	"time"
)

func TestWatermark(t *testing.T) {
	for _, tc := range []struct {
		name     string
		advances []string
		wait     string
		reached  bool
	}{
		{name: "nothing taken in", wait: "5"},
		{name: "exactly the write", advances: []string{"5"}, wait: "5", reached: true},
		{name: "past the write", advances: []string{"9"}, wait: "5", reached: true},
		{name: "an older event after a newer one keeps the newer", advances: []string{"9", "3"}, wait: "7", reached: true},
		{name: "short of the write", advances: []string{"4"}, wait: "5"},
		// resourceVersions are compared as numbers, not as strings.
		{name: "numeric order", advances: []string{"10"}, wait: "9", reached: true},
		{name: "numeric order, short", advances: []string{"9"}, wait: "10"},
		{name: "a version that is not a number is not waited for", advances: nil, wait: "x", reached: true},
		{name: "an event that is not a number is ignored", advances: []string{"x"}, wait: "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWatermark()
			for _, rv := range tc.advances {
				w.Advance(rv)
			}
			if got := w.Reached(tc.wait); got != tc.reached {
				t.Errorf("Reached(%s) = %v, want %v", tc.wait, got, tc.reached)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			if err := w.Wait(ctx, tc.wait); (err == nil) != tc.reached {
				t.Errorf("Wait(%s) = %v, want reached=%v", tc.wait, err, tc.reached)
			}
		})
	}
}

// TestWatermarkWakesWaiters: a write waiting for its event returns when the event is taken in,
// not at its deadline.
func TestWatermarkWakesWaiters(t *testing.T) {
	w := NewWatermark()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		done <- w.Wait(ctx, "12")
	}()
	w.Advance("11")
	select {
	case err := <-done:
		t.Fatalf("Wait returned before its event was taken in: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	w.Advance("12")
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return once its event was taken in")
	}
}
