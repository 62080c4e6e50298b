package tablet_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/tablet"
)

// TestTimedOutWriteKeepsItsLatch: a write whose caller gives up while its
// proposal is in flight may still apply at its hybrid time, so its row stays
// latched until the outcome is known; a read of the row waits rather than
// reading around it.
func TestTimedOutWriteKeepsItsLatch(t *testing.T) {
	h := newHarness(t, 3, []uint64{1, 2, 3})
	l := h.waitLeader(t)
	if _, err := l.Write(context.Background(), putBatch(0, 1, "a")); err != nil {
		t.Fatal(err)
	}
	// Cut the leader off: its next proposal cannot commit.
	leaderID := l.Group().Status().Node
	for _, n := range h.Nodes() {
		if n.ID != leaderID {
			h.Partition(leaderID, n.ID, true)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := l.Write(ctx, putBatch(0, 1, "b"))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("write on an isolated leader: %v, want a timeout", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, _, err = l.Get(ctx, rowKey(0), nil)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read of a row with a write in flight: %v, want to wait on the latch", err)
	}
	// A read that must not wait says so at once.
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	_, _, _, err = l.GetTxn(tablet.WithoutWaiting(ctx), rowKey(0), nil, tablet.TxnRead{})
	cancel()
	if !errors.Is(err, tablet.ErrWouldWait) {
		t.Fatalf("read without waiting of a row with a write in flight: %v, want ErrWouldWait", err)
	}
	// Once the old leader steps down the proposal is resolved (ambiguous)
	// and the latch is released: the row is readable again where it leads.
	for _, n := range h.Nodes() {
		if n.ID != leaderID {
			h.Partition(leaderID, n.ID, false)
		}
	}
	h.retry(t, "read after healing", func(ctx context.Context, tb *tablet.Tablet) error {
		_, _, err := tb.Get(ctx, rowKey(0), nil)
		return err
	})
}
