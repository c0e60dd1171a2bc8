package injectionsync

import (
	"testing"
	"time"
)

func TestPaceDelay(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name       string
		start, end time.Duration // after t0; negative end: none ran
		now        time.Duration
		want       time.Duration
	}{
		{"none ran yet", 0, -1, 0, 0},
		{"a 100 ms reconcile just ended: 9 times its length", 0, ms(100), ms(100), ms(900)},
		{"asked for during the wait", 0, ms(100), ms(300), ms(700)},
		{"after the wait: at once", 0, ms(100), ms(1100), 0},
		{"a 2 s reconcile (tens of thousands stored): 9 times its length", 0, ms(2000), ms(2000), ms(18000)},
		{"a long reconcile waits at most 30 s", 0, ms(5000), ms(5000), 30 * time.Second},
		{"an instant reconcile: at once", ms(50), ms(50), ms(50), 0},
		{"a clock that went back", ms(100), ms(50), ms(60), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var end time.Time
			if tc.end >= 0 {
				end = t0.Add(tc.end)
			}
			if got := paceDelay(t0.Add(tc.now), t0.Add(tc.start), end); got != tc.want {
				t.Errorf("paceDelay = %v, want %v", got, tc.want)
			}
		})
	}
}
