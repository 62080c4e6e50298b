package tablet

import (
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/hlc"
)

// TestOnceTrackerExpiry: an applied id is remembered for onceWindow of
// hybrid time after it, and the ids on disk older than the window are
// dropped a bucket at a time, once each, as the applies move past them.
func TestOnceTrackerExpiry(t *testing.T) {
	var o onceTracker
	t0 := hlc.FromTime(time.Unix(1_800_000_000, 0))
	o.record(RequestID{1}, onceResult{ht: t0})
	o.record(RequestID{2}, onceResult{ht: t0.Add(30 * time.Second), missing: []int{0}})
	if r, ok := o.get(RequestID{1}); !ok || r.ht != t0 {
		t.Fatalf("id 1: %v %v", r, ok)
	}
	o.record(RequestID{3}, onceResult{ht: t0.Add(onceWindow + time.Second)})
	if _, ok := o.get(RequestID{1}); ok {
		t.Fatal("id 1 remembered past the window")
	}
	if r, ok := o.get(RequestID{2}); !ok || len(r.missing) != 1 {
		t.Fatalf("id 2, within the window: %v %v", r, ok)
	}
	if len(o.order)-o.head != 2 || len(o.done) != 2 {
		t.Fatalf("%d ids in order, %d remembered; want 2 and 2", len(o.order)-o.head, len(o.done))
	}
	// A window's worth of ids, one a millisecond: each expires in turn,
	// and the order stays about one window long.
	var p onceTracker
	for i := range 5 * 60_000 {
		p.record(RequestID{byte(i), byte(i >> 8), byte(i >> 16)}, onceResult{ht: t0.Add(time.Duration(i) * time.Millisecond)})
	}
	if n := len(p.done); n < 59_000 || n > 61_000 {
		t.Fatalf("%d ids remembered at one a millisecond, want a minute's (60,000)", n)
	}
	if len(p.order) > 2*61_000 {
		t.Fatalf("order holds %d entries for %d ids", len(p.order), len(p.done))
	}

	before, ok := o.drop(t0.Add(onceWindow + onceBucket))
	if want := hlc.FromMicros(int64(onceBucketOf(t0.Add(onceBucket)))*onceBucket.Microseconds(), 0); !ok || before != want || before > t0.Add(onceBucket) {
		t.Fatalf("first drop: before %v %v, want %v (a bucket start, at most one bucket past t0)", before, ok, want)
	}
	if _, ok := o.drop(t0.Add(onceWindow + onceBucket + time.Second)); ok {
		t.Fatal("dropped the same bucket twice")
	}
	if before2, ok := o.drop(t0.Add(onceWindow + 2*onceBucket)); !ok || before2 != before.Add(onceBucket) {
		t.Fatalf("next bucket: before %v %v, want %v", before2, ok, before.Add(onceBucket))
	}
}
