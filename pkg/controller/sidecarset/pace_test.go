package sidecarset

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestPacerDelay(t *testing.T) {
	tests := []struct {
		name    string
		started []time.Duration // rounds begun, as offsets from t0
		at      time.Duration
		want    time.Duration
	}{
		{name: "never synced", at: 0, want: 0},
		{name: "synced long ago", started: []time.Duration{0}, at: time.Second, want: 0},
		{name: "synced exactly interval ago", started: []time.Duration{0}, at: 100 * time.Millisecond, want: 0},
		{name: "synced just now", started: []time.Duration{0}, at: 0, want: 100 * time.Millisecond},
		{name: "within the interval", started: []time.Duration{0}, at: 30 * time.Millisecond, want: 70 * time.Millisecond},
		{name: "the last round counts", started: []time.Duration{0, 250 * time.Millisecond}, at: 300 * time.Millisecond, want: 50 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(t0)
			p := newPacer(100*time.Millisecond, clk)
			for _, s := range tc.started {
				clk.SetTime(t0.Add(s))
				p.started("ss")
			}
			clk.SetTime(t0.Add(tc.at))
			if got := p.delay("ss"); got != tc.want {
				t.Errorf("delay = %v, want %v", got, tc.want)
			}
			if got := p.delay("other"); got != 0 {
				t.Errorf("another SidecarSet waits %v", got)
			}
			p.forget("ss")
			if got := p.delay("ss"); got != 0 {
				t.Errorf("after forget: delay %v", got)
			}
		})
	}
}
