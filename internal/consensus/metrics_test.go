package consensus

import (
	"testing"
	"time"
)

func TestHistogram(t *testing.T) {
	var h Histogram
	for _, d := range []time.Duration{0, 10 * time.Microsecond, 16 * time.Microsecond, 17 * time.Microsecond, time.Millisecond, time.Minute} {
		h.Observe(d)
	}
	s := h.Snapshot()
	if s.Count != 6 || s.Sum != time.Minute+time.Millisecond+43*time.Microsecond {
		t.Fatalf("count %d sum %v", s.Count, s.Sum)
	}
	for _, tc := range []struct {
		bound time.Duration
		want  uint64
	}{{16 * time.Microsecond, 3}, {32 * time.Microsecond, 4}, {512 * time.Microsecond, 4}, {1024 * time.Microsecond, 5}, {LatencyBuckets[len(LatencyBuckets)-1], 5}} {
		for i, b := range s.Bounds {
			if b == tc.bound && s.Counts[i] != tc.want {
				t.Errorf("le %v: %d, want %d", b, s.Counts[i], tc.want)
			}
		}
	}
}
