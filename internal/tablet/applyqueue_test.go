package tablet_test

import (
	"context"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/tablet"
)

// TestDeferredApply: the apply a coordinator asks for after its commit
// (ApplyTxnLater) rides on the leader's next entry: one Raft entry carries
// an unrelated write and the apply, on every replica. Before that, a read
// that meets the intents takes the commit from the queue (no status
// lookup: the fake status record still says PENDING) and sees the rows. A
// large transaction is applied at once, and an apply nobody carries is
// flushed after the linger.
func TestDeferredApply(t *testing.T) {
	t.Cleanup(tablet.SetApplyLinger(time.Hour))
	h, res := newTxnHarness(t)
	id := desc.ID
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	x := testTxnID("small")
	h.writeIntents(t, id, x, 0, 5)
	leader, clock := h.leaseholder(t, id)
	if err := leader.ApplyTxnLater(ctx, x, clock.Now()); err != nil {
		t.Fatal(err)
	}
	if n, err := leader.IntentCount(); err != nil || n == 0 {
		t.Fatalf("intents after ApplyTxnLater: %d %v, want them still there (queued)", n, err)
	}
	asked := res.timesAsked(x)
	rows, _, err := scanAll(ctx, leader, tablet.TxnRead{AllowRestart: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 5 || res.timesAsked(x) != asked {
		t.Fatalf("a read of the queued transaction: %d rows, status asked %d times, want 5 rows and no status lookup", len(rows), res.timesAsked(x)-asked)
	}

	// The next entry carries the queued apply.
	y := testTxnID("small2")
	h.writeIntents(t, id, y, 10, 15)
	if err := leader.ApplyTxnLater(ctx, y, clock.Now()); err != nil {
		t.Fatal(err)
	}
	before := leader.Group().Status().LastIndex
	if _, err := leader.Write(ctx, putBatch(100, 101, "plain")); err != nil {
		t.Fatal(err)
	}
	if n := leader.Group().Status().LastIndex - before; n != 1 {
		t.Fatalf("the write and the apply took %d entries, want 1", n)
	}
	for _, r := range h.replicasOf(id) {
		consensustest.WaitFor(t, 20*time.Second, "every replica applies y with the write", func() bool {
			n, err := r.IntentCount()
			if err != nil {
				t.Fatal(err)
			}
			return n == 0
		})
	}
	rows, _, err = scanAll(ctx, leader, tablet.TxnRead{AllowRestart: true})
	if err != nil || len(rows) != 11 {
		t.Fatalf("after the carried apply: %d rows (%v), want 11", len(rows), err)
	}

	// A large transaction is applied at once.
	big := testTxnID("large")
	h.writeIntents(t, id, big, 1000, 1001+tablet.DeferMaxIntents)
	if err := leader.ApplyTxnLater(ctx, big, clock.Now()); err != nil {
		t.Fatal(err)
	}
	if n, err := leader.IntentCount(); err != nil || n != 0 {
		t.Fatalf("intents of a large transaction after ApplyTxnLater: %d %v, want 0", n, err)
	}

	// Nothing to ride on: the linger flushes it.
	tablet.SetApplyLinger(time.Millisecond)
	z := testTxnID("alone")
	h.writeIntents(t, id, z, 20, 22)
	if err := leader.ApplyTxnLater(ctx, z, clock.Now()); err != nil {
		t.Fatal(err)
	}
	consensustest.WaitFor(t, 20*time.Second, "the linger flushes the apply", func() bool {
		n, err := leader.IntentCount()
		if err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
}
