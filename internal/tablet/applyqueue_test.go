package tablet_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/docdb"
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

// TestWriteRidesQueuedApply: a transactional write of rows whose last
// writer committed with its apply still queued does not wait for that
// apply: one Raft entry carries the apply and the write, and the write
// goes through even under FailOnConflict. A write checking for versions
// newer than a read time before that commit fails, and an insert of a row
// the queued transaction inserted waits for the apply and finds it.
func TestWriteRidesQueuedApply(t *testing.T) {
	t.Cleanup(tablet.SetApplyLinger(time.Hour))
	h, res := newTxnHarness(t)
	id := desc.ID
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leader, clock := h.leaseholder(t, id)

	x := testTxnID("committed")
	h.writeIntents(t, id, x, 0, 3)
	if err := leader.ApplyTxnLater(ctx, x, clock.Now()); err != nil {
		t.Fatal(err)
	}

	// A write of the same rows after the commit rides on the apply.
	y := testTxnID("next")
	before := leader.Group().Status().LastIndex
	if err := h.txnWrite(t, id, &tablet.TxnWrite{Txn: y, ReadTime: clock.Now(), CheckNewer: true, Ops: putBatch(1, 2, "y").Ops, Wait: tablet.FailOnConflict}); err != nil {
		t.Fatalf("write over a queued commit: %v", err)
	}
	if n := leader.Group().Status().LastIndex - before; n != 1 {
		t.Fatalf("the write and the queued apply took %d entries, want 1", n)
	}
	if _, queued := leader.QueuedCommit(x); queued {
		t.Fatal("x's apply is still queued after the write carried it")
	}

	// A snapshot write whose read time is below the queued commit: a
	// conflict.
	x2 := testTxnID("committed2")
	h.writeIntents(t, id, x2, 20, 22)
	beforeCommit := clock.Now()
	if err := leader.ApplyTxnLater(ctx, x2, clock.Now()); err != nil {
		t.Fatal(err)
	}
	err := h.txnWrite(t, id, &tablet.TxnWrite{Txn: y, WriteID: 1, ReadTime: beforeCommit, CheckNewer: true, Ops: putBatch(21, 22, "y").Ops, Wait: tablet.FailOnConflict})
	if !errors.Is(err, tablet.ErrTxnConflict) {
		t.Fatalf("write with a read time before the queued commit: %v, want a conflict", err)
	}

	// An insert of a row x wrote waits for x's apply and finds the row.
	z := testTxnID("insert")
	h.writeIntents(t, id, z, 10, 11)
	if err := leader.ApplyTxnLater(ctx, z, clock.Now()); err != nil {
		t.Fatal(err)
	}
	err = h.txnWrite(t, id, &tablet.TxnWrite{Txn: y, WriteID: 5, Ops: []docdb.WriteOp{{Kind: docdb.OpInsertRow, RowKey: rowKey(10)}}, Wait: tablet.FailOnConflict})
	if !errors.Is(err, docdb.ErrDuplicateKey) {
		t.Fatalf("insert of a row a queued commit inserted: %v, want a duplicate key", err)
	}

	// A large committed transaction (applied in entries of its own, not
	// queued) is not waited for either: the write goes through while its
	// apply has not even started.
	big := testTxnID("bulk")
	h.writeIntents(t, id, big, 1000, 1001+tablet.DeferMaxIntents)
	bigCommit := clock.Now()
	res.set(big, tablet.TxnStatus{State: tablet.TxnCommitted, CommitHT: bigCommit})
	release := leader.HoldBackgroundApply(big)
	if err := h.txnWrite(t, id, &tablet.TxnWrite{Txn: y, WriteID: 10, ReadTime: clock.Now(), CheckNewer: true, Ops: putBatch(1000, 1001, "y").Ops, Wait: tablet.FailOnConflict}); err != nil {
		t.Fatalf("write over a committed bulk load's intent: %v", err)
	}
	if n, err := leader.IntentCount(); err != nil || n < tablet.DeferMaxIntents {
		t.Fatalf("intents after the write: %d %v, want the bulk load's still there (its apply held back)", n, err)
	}
	release()
	if err := leader.ApplyTxn(ctx, big, bigCommit); err != nil {
		t.Fatal(err)
	}
}

// TestApplyLingerFromQueueing: a queued apply waits the whole linger for an
// entry to ride on, counted from when it was queued. The flush timer armed
// for an apply that an entry then carried does not flush an apply queued
// after it early: it did, and one in three of a 2-tablet transaction's
// applies at one client took a Raft entry of its own.
func TestApplyLingerFromQueueing(t *testing.T) {
	const linger = time.Second
	t.Cleanup(tablet.SetApplyLinger(linger))
	advance, fire, pending, restore := tablet.LingerTimers()
	t.Cleanup(restore)
	h, _ := newTxnHarness(t)
	id := desc.ID
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leader, clock := h.leaseholder(t, id)
	intents := func() int {
		n, err := leader.IntentCount()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	x := testTxnID("carried")
	h.writeIntents(t, id, x, 0, 2)
	if err := leader.ApplyTxnLater(ctx, x, clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := leader.Write(ctx, putBatch(100, 101, "carrier")); err != nil {
		t.Fatal(err)
	}
	if n := intents(); n != 0 {
		t.Fatalf("intents after the write that carries the queued apply: %d, want 0", n)
	}

	advance(linger - time.Millisecond)
	y := testTxnID("late")
	h.writeIntents(t, id, y, 10, 12)
	queued := intents()
	if err := leader.ApplyTxnLater(ctx, y, clock.Now()); err != nil {
		t.Fatal(err)
	}
	advance(time.Millisecond) // the timer armed for x is due
	if n := fire(); n != 1 {
		t.Fatalf("%d timers due, want the one armed for the carried apply", n)
	}
	if n := intents(); n != queued || n == 0 {
		t.Fatalf("intents of the apply queued 1ms before the timer fired: %d, want %d (still queued)", n, queued)
	}
	if n := pending(); n != 1 {
		t.Fatalf("%d flush timers armed, want 1 (for the queued apply's own linger)", n)
	}

	advance(linger)
	if n := fire(); n != 1 {
		t.Fatalf("%d timers due after the queued apply's linger, want 1", n)
	}
	if n := intents(); n != 0 {
		t.Fatalf("intents after the queued apply's linger: %d, want 0 (flushed)", n)
	}
}

// TestWaiterCarriesApply: a writer waiting for a transaction's intent is
// woken when that transaction's apply is queued, and its entry carries the
// apply: one Raft entry for both, where the apply of a waited-for
// transaction had one of its own (a pgbench branch's every update).
func TestWaiterCarriesApply(t *testing.T) {
	t.Cleanup(tablet.SetApplyLinger(time.Hour))
	h, res := newTxnHarness(t)
	id := desc.ID
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leader, clock := h.leaseholder(t, id)

	x := testTxnID("holder")
	h.writeIntents(t, id, x, 0, 1)
	y := testTxnID("waiter")
	done := make(chan error, 1)
	go func() {
		_, err := leader.WriteTxn(ctx, &tablet.TxnWrite{Txn: y, Ops: putBatch(0, 1, "y").Ops, Wait: tablet.WaitOnConflict})
		done <- err
	}()
	consensustest.WaitFor(t, 20*time.Second, "the writer waits for x", func() bool { return leader.Waited(x) })
	before := leader.Group().Status().LastIndex
	commit := clock.Now()
	res.set(x, tablet.TxnStatus{State: tablet.TxnCommitted, CommitHT: commit})
	if err := leader.ApplyTxnLater(ctx, x, commit); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the waiting write: %v", err)
	}
	if n := leader.Group().Status().LastIndex - before; n != 1 {
		t.Fatalf("the apply and the woken write took %d entries, want 1", n)
	}
	if _, queued := leader.QueuedCommit(x); queued {
		t.Fatal("x's apply is still queued after the write carried it")
	}
}
