package tablet_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/tablet"
)

// TestFollowerReadsMatchLeaderHistory: while writers overwrite a few rows,
// every follower read at a safe point returns exactly what the leader
// reads at that point's time, and never misses an acknowledged write
// stamped at or below it.
func TestFollowerReadsMatchLeaderHistory(t *testing.T) {
	h := newHarness(t, 3, []uint64{1, 2, 3})
	l := h.waitLeader(t)
	var followers []*tablet.Tablet
	for _, n := range h.Nodes() {
		if tb := h.tablet(n.ID); tb != nil && tb != l {
			followers = append(followers, tb)
		}
	}
	// The deadline only guards against a hang: under the race detector on
	// a loaded 2-core machine a follower read can wait seconds for the
	// follower to apply up to its safe point.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := l.Write(ctx, putBatch(w, w+1, "v"+string(rune('a'+i%26)))); err != nil {
					t.Errorf("write: %v", err)
					return
				}
			}
		}()
	}
	checks := 0
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); checks++ {
		sp, err := l.SafePoint()
		if err != nil {
			t.Fatal(err)
		}
		f := followers[checks%len(followers)]
		for k := 0; k < 4; k++ {
			frow, ffound, rt, err := f.FollowerGet(ctx, rowKey(k), nil, sp, 0)
			if err != nil {
				t.Fatal(err)
			}
			if rt != sp.Time {
				t.Fatalf("read at %s, want the safe time %s", rt, sp.Time)
			}
			lrow, lfound, err := l.GetAt(ctx, rowKey(k), nil, sp.Time)
			if err != nil {
				t.Fatal(err)
			}
			if ffound != lfound || (ffound && (frow.WriteTime != lrow.WriteTime || frow.Columns[0].Value.String() != lrow.Columns[0].Value.String())) {
				t.Fatalf("row %d at %s: follower %v %v, leader %v %v", k, sp.Time, ffound, frow, lfound, lrow)
			}
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d safe points checked against the leader", checks)
	// A read past the safe point is refused, not served stale.
	sp, _ := l.SafePoint()
	if _, _, _, err := followers[0].FollowerGet(ctx, rowKey(0), nil, sp, sp.Time.Add(time.Second)); err == nil {
		t.Fatal("a follower served a read past its safe point")
	}
}
