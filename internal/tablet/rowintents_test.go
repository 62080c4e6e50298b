package tablet_test

import (
	"errors"
	"testing"

	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/tablet"
)

// TestRowIntentIndex: a conflict check of rows no live transaction holds
// skips the engine, and one of a held row finds the holder: while the
// holder's rows are counted in memory, once it holds more rows than are
// counted, and once the intents were loaded from disk by a restart.
func TestRowIntentIndex(t *testing.T) {
	h, _ := newTxnHarness(t)
	id := desc.ID
	a, b := testTxnID("holder"), testTxnID("other")
	write := func(txn docdb.TxnID, wid uint32, row int) error {
		return h.txnWrite(t, id, &tablet.TxnWrite{Txn: txn, WriteID: wid, Ops: putBatch(row, row+1, "x").Ops, Wait: tablet.FailOnConflict})
	}
	h.writeIntents(t, id, a, 0, 3) // a holds rows 0, 1, 2

	before := tablet.IntentLookups()
	for i := range 5 {
		if err := write(b, uint32(i), 10+i); err != nil {
			t.Fatalf("write of a free row: %v", err)
		}
	}
	if n := tablet.IntentLookups() - before; n != 0 {
		t.Fatalf("writes of rows nobody holds read the engine %d times", n)
	}
	if err := write(b, 10, 1); !errors.Is(err, tablet.ErrTxnConflict) {
		t.Fatalf("write of a row a holds: %v, want a conflict", err)
	}

	// A transaction holding more rows than are counted: every check reads
	// the engine, and finds it.
	wide := testTxnID("wide")
	h.writeIntents(t, id, wide, 100, 100+tablet.RowsMax+10)
	if err := write(b, 11, 100+tablet.RowsMax+5); !errors.Is(err, tablet.ErrTxnConflict) {
		t.Fatalf("write of an uncounted row of a wide transaction: %v, want a conflict", err)
	}

	// After a restart the intents come from disk.
	for _, n := range h.Nodes() {
		h.StopNode(n.ID)
	}
	h.mu.Lock()
	clear(h.opened)
	h.mu.Unlock()
	for _, n := range h.Nodes() {
		h.StartNode(n.ID)
	}
	if err := write(b, 12, 2); !errors.Is(err, tablet.ErrTxnConflict) {
		t.Fatalf("write of a row a holds after a restart: %v, want a conflict", err)
	}
}
