package tablet_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/tablet"
)

// TestKnownIntentsApply: the apply of a small transaction from the intents
// the replicas kept in memory, and its fall back to the disk when the
// record is incomplete, leave the rows the transaction wrote, on every
// replica with no intent left: intents in two entries; intents with a row
// lock in the same entry; a savepoint rollback between intents; and a
// transaction larger than the in-memory limit. A repeated apply leaves the
// rows as they are.
func TestKnownIntentsApply(t *testing.T) {
	h, _ := newTxnHarness(t)
	id := desc.ID
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	write := func(txn docdb.TxnID, wid uint32, from, to int, locks ...int) {
		t.Helper()
		w := &tablet.TxnWrite{Txn: txn, WriteID: wid, Ops: putBatch(from, to, "txn").Ops}
		for _, l := range locks {
			w.Locks = append(w.Locks, rowKey(l))
		}
		if err := h.txnWrite(t, id, w); err != nil {
			t.Fatal(err)
		}
	}
	apply := func(txn docdb.TxnID) {
		t.Helper()
		if err := h.onLeader(t, id, func(ctx context.Context, tb *tablet.Tablet) error {
			_, clock := h.leaseholder(t, id)
			return tb.ApplyTxn(ctx, txn, clock.Now())
		}); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	rows := func(from, to int) {
		for i := from; i < to; i++ {
			want = append(want, fmt.Sprint(i))
		}
	}

	two := testTxnID("two-entries")
	write(two, 0, 0, 3)
	write(two, 3, 10, 12)
	apply(two)
	apply(two) // a repeated apply (a resolve after the piggybacked one) finds nothing
	rows(0, 3)
	rows(10, 12)

	locked := testTxnID("locks")
	write(locked, 0, 20, 22)
	write(locked, 2, 22, 23, 30)
	apply(locked)
	rows(20, 23)

	sp := testTxnID("savepoint")
	write(sp, 0, 40, 42)
	write(sp, 2, 42, 45)
	if err := h.onLeader(t, id, func(ctx context.Context, tb *tablet.Tablet) error { return tb.RemoveTxn(ctx, sp, true, 2) }); err != nil {
		t.Fatal(err)
	}
	write(sp, 5, 45, 46)
	apply(sp)
	rows(40, 42)
	rows(45, 46)

	big := testTxnID("big")
	write(big, 0, 100, 150)
	write(big, 50, 150, 200)
	apply(big)
	rows(100, 200)

	for _, r := range h.replicasOf(id) {
		consensustest.WaitFor(t, 20*time.Second, "every replica applies everything", func() bool {
			n, err := r.IntentCount()
			if err != nil {
				t.Fatal(err)
			}
			return n == 0
		})
	}
	leader, _ := h.leaseholder(t, id)
	got, _, err := scanAll(ctx, leader, tablet.TxnRead{AllowRestart: true})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(keysOf(got)) != fmt.Sprint(want) {
		t.Fatalf("rows after the applies:\n got %v\nwant %v", keysOf(got), want)
	}
}
