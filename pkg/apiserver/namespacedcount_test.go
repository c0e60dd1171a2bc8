package apiserver

import (
	"context"
	"testing"
)

// TestNearCapFromStorage: a create far from the per-namespace cap counts from the cache alone;
// within the margin (a tenth of the cap, plus 2) it reads storage, asking for one more than the cap.
func TestNearCapFromStorage(t *testing.T) {
	for _, tc := range []struct {
		name          string
		cached, limit int
		wantStored    bool
	}{
		{"far from the cap", 10, 200, false},
		{"just outside the margin", 177, 200, false},
		{"within the margin", 178, 200, true},
		{"at the cap", 200, 200, true},
		{"a small cap", 0, 2, true},
		{"no cap", 5000, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var limitAsked int64
			count := nearCapFromStorage(
				func(context.Context, string) (int, error) { return tc.cached, nil }, tc.limit,
				func(_ context.Context, _ string, limit int64) (int, error) { limitAsked = limit; return 1000, nil })
			n, err := count(context.Background(), "team-a")
			if err != nil {
				t.Fatal(err)
			}
			if stored := limitAsked != 0; stored != tc.wantStored || (stored && (n != 1000 || limitAsked != int64(tc.limit)+1)) {
				t.Errorf("count %d, storage read with limit %d; want storage read %v with limit %d", n, limitAsked, tc.wantStored, tc.limit+1)
			}
		})
	}
}
