package apiserver

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// TestStoredCount: the count reads one object and takes the rest from the page's
// remainingItemCount; only a page without one is read again, up to the limit.
func TestStoredCount(t *testing.T) {
	remaining := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		name      string
		first     metav1.ListMeta
		firstLen  int
		want      int
		wantReads []int64
	}{
		{"empty namespace", metav1.ListMeta{}, 0, 0, []int64{1}},
		{"one object", metav1.ListMeta{}, 1, 1, []int64{1}},
		{"the rest counted by storage", metav1.ListMeta{Continue: "c", RemainingItemCount: remaining(199)}, 1, 200, []int64{1}},
		{"no count given: read up to the limit", metav1.ListMeta{Continue: "c"}, 1, 42, []int64{1, 201}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reads []int64
			n, err := storedCount(context.Background(), func(_ context.Context, opts metav1.ListOptions) (metav1.ListInterface, int, error) {
				reads = append(reads, opts.Limit)
				if len(reads) == 1 {
					return &tc.first, tc.firstLen, nil
				}
				return &metav1.ListMeta{}, 42, nil
			}, 201)
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.want || !slices.Equal(reads, tc.wantReads) {
				t.Errorf("count %d with reads of %v, want %d with reads of %v", n, reads, tc.want, tc.wantReads)
			}
		})
	}
}
