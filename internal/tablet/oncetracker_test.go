package tablet

import (
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/hlc"
)

// TestOnceTrackerExpiry: an applied id is remembered for onceWindow of
// hybrid time after it, and the buckets on disk older than the window are
// dropped once each, as the applies move past them.
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
	if len(o.order) != 2 || len(o.done) != 2 {
		t.Fatalf("%d ids in order, %d remembered; want 2 and 2", len(o.order), len(o.done))
	}

	keep, ok := o.drop(t0.Add(onceWindow + onceBucket))
	if !ok || keep != onceBucketOf(t0.Add(onceBucket)) {
		t.Fatalf("first drop: keep %d %v, want %d", keep, ok, onceBucketOf(t0.Add(onceBucket)))
	}
	if _, ok := o.drop(t0.Add(onceWindow + onceBucket + time.Second)); ok {
		t.Fatal("dropped the same buckets twice")
	}
	if keep2, ok := o.drop(t0.Add(onceWindow + 2*onceBucket)); !ok || keep2 != keep+1 {
		t.Fatalf("next bucket: keep %d %v, want %d", keep2, ok, keep+1)
	}
}
