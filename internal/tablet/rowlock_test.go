package tablet_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/tablet"
)

// rowLockModes are PostgreSQL's four row locks, weakest first.
var rowLockModes = []tablet.LockMode{tablet.LockKeyShare, tablet.LockShare, tablet.LockNoKeyUpdate, tablet.LockUpdate}

func lockName(m tablet.LockMode) string {
	return map[tablet.LockMode]string{tablet.LockKeyShare: "FOR KEY SHARE", tablet.LockShare: "FOR SHARE",
		tablet.LockNoKeyUpdate: "FOR NO KEY UPDATE", tablet.LockUpdate: "FOR UPDATE"}[m]
}

// TestRowLockModes checks the row locks against PostgreSQL's conflict
// table, and against the writes that take them implicitly: FOR KEY SHARE
// (a foreign key check) lets other transactions update the row's columns
// but not delete it; the stronger locks block the update.
func TestRowLockModes(t *testing.T) {
	h, _ := newTxnHarness(t)
	id := desc.ID
	// conflicts[held][wanted], in rowLockModes order: PostgreSQL's table
	// ("Conflicting Row-Level Locks").
	conflicts := [4][4]bool{
		{false, false, false, true},
		{false, false, true, true},
		{false, true, true, true},
		{true, true, true, true},
	}
	row := 100 // locks and intents need no row
	next := uint32(1)
	lock := func(txn docdb.TxnID, row int, mode tablet.LockMode) error {
		next++
		return h.txnWrite(t, id, &tablet.TxnWrite{Txn: txn, WriteID: next, Locks: [][]byte{rowKey(row)}, Lock: mode, Wait: tablet.NoWait})
	}
	write := func(txn docdb.TxnID, ops []docdb.WriteOp) error {
		next++
		return h.txnWrite(t, id, &tablet.TxnWrite{Txn: txn, WriteID: next, Ops: ops, Wait: tablet.NoWait})
	}
	for i, held := range rowLockModes {
		for j, wanted := range rowLockModes {
			// Each pair on a row of its own: a lock is held until its
			// transaction ends, which this harness does not do.
			a, b := testTxnID(fmt.Sprintf("a%d%d", i, j)), testTxnID(fmt.Sprintf("b%d%d", i, j))
			if err := lock(a, row, held); err != nil {
				t.Fatalf("%s: %v", lockName(held), err)
			}
			err := lock(b, row, wanted)
			if got := errors.Is(err, tablet.ErrLockNotAvailable); got != conflicts[i][j] || (!got && err != nil) {
				t.Errorf("%s held, %s NOWAIT: %v (want a conflict: %v)", lockName(held), lockName(wanted), err, conflicts[i][j])
			}
			row++
		}
	}

	// Writes against a held lock: an update of a column (an UPDATE's
	// intents: a weak write on the row) and a delete of the row.
	update := []docdb.WriteOp{{Kind: docdb.OpPutColumns, RowKey: rowKey(row), Columns: []docdb.ColumnValue{{ID: 1, Value: docdb.Text("u")}}}}
	del := []docdb.WriteOp{{Kind: docdb.OpDeleteRow, RowKey: rowKey(row)}}
	for _, tc := range []struct {
		held     tablet.LockMode
		ops      []docdb.WriteOp
		name     string
		conflict bool
	}{
		{tablet.LockKeyShare, update, "update", false},
		{tablet.LockKeyShare, del, "delete", true},
		{tablet.LockShare, update, "update", true},
		{tablet.LockNoKeyUpdate, update, "update", true},
		{tablet.LockUpdate, update, "update", true},
	} {
		a, b := testTxnID("w"+lockName(tc.held)+tc.name), testTxnID("x"+lockName(tc.held)+tc.name)
		for k := range tc.ops {
			tc.ops[k].RowKey = rowKey(row)
		}
		if err := lock(a, row, tc.held); err != nil {
			t.Fatal(err)
		}
		err := write(b, tc.ops)
		if got := errors.Is(err, tablet.ErrLockNotAvailable); got != tc.conflict || (!got && err != nil) {
			t.Errorf("%s held, %s: %v (want a conflict: %v)", lockName(tc.held), tc.name, err, tc.conflict)
		}
		row++
	}
}

// TestKeyShareCheckNewer: under snapshot isolation a row lock fails on a
// version of the row committed after the transaction's read time, but FOR
// KEY SHARE only on one that inserted or deleted the row: a foreign key
// check must not fail because the parent's other columns changed.
func TestKeyShareCheckNewer(t *testing.T) {
	h, _ := newTxnHarness(t)
	id := desc.ID
	write := func(ops ...docdb.WriteOp) hlc.Timestamp {
		t.Helper()
		var ht hlc.Timestamp
		if err := h.onLeader(t, id, func(ctx context.Context, tb *tablet.Tablet) error {
			var err error
			ht, err = tb.Write(ctx, &docdb.WriteBatch{Ops: ops})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return ht
	}
	created := write(putBatch(1, 3, "r").Ops...)
	write(docdb.WriteOp{Kind: docdb.OpPutColumns, RowKey: rowKey(1), Columns: []docdb.ColumnValue{{ID: 1, Value: docdb.Text("changed")}}})
	write(docdb.WriteOp{Kind: docdb.OpDeleteRow, RowKey: rowKey(2)})
	n := uint32(0)
	lock := func(row int, mode tablet.LockMode) error {
		n++
		return h.txnWrite(t, id, &tablet.TxnWrite{Txn: testTxnID(fmt.Sprint("k", n)), WriteID: 1, ReadTime: created, CheckNewer: true,
			Locks: [][]byte{rowKey(row)}, Lock: mode, Wait: tablet.FailOnConflict})
	}
	if err := lock(1, tablet.LockKeyShare); err != nil {
		t.Errorf("FOR KEY SHARE of a row updated after the read time: %v", err)
	}
	for _, m := range []tablet.LockMode{tablet.LockShare, tablet.LockNoKeyUpdate, tablet.LockUpdate} {
		if err := lock(1, m); !errors.Is(err, tablet.ErrTxnConflict) {
			t.Errorf("%s of a row updated after the read time: %v, want a conflict", lockName(m), err)
		}
	}
	if err := lock(2, tablet.LockKeyShare); !errors.Is(err, tablet.ErrTxnConflict) {
		t.Errorf("FOR KEY SHARE of a row deleted after the read time: %v, want a conflict", err)
	}
}

// TestUpdateLockIntents: an UPDATE's write and its FOR NO KEY UPDATE row
// lock in one entry store the weak write on the row once (three intents:
// the column's strong write, the row's weak write and strong read), and
// the row is still locked as NO KEY UPDATE: FOR SHARE conflicts, FOR KEY
// SHARE does not.
func TestUpdateLockIntents(t *testing.T) {
	h, _ := newTxnHarness(t)
	id := desc.ID
	row := 7
	update := []docdb.WriteOp{{Kind: docdb.OpPutColumns, RowKey: rowKey(row), Columns: []docdb.ColumnValue{{ID: 1, Value: docdb.Text("u")}}}}
	if err := h.txnWrite(t, id, &tablet.TxnWrite{Txn: testTxnID("upd"), WriteID: 1, Ops: update,
		Locks: [][]byte{rowKey(row)}, Lock: tablet.LockNoKeyUpdate, Wait: tablet.NoWait}); err != nil {
		t.Fatal(err)
	}
	if err := h.onLeader(t, id, func(ctx context.Context, tb *tablet.Tablet) error {
		n, err := tb.IntentCount()
		if err == nil && n != 3 {
			t.Errorf("%d intents stored for an update with its row lock, want 3", n)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	lock := func(name string, mode tablet.LockMode) error {
		return h.txnWrite(t, id, &tablet.TxnWrite{Txn: testTxnID(name), WriteID: 1, Locks: [][]byte{rowKey(row)}, Lock: mode, Wait: tablet.NoWait})
	}
	if err := lock("share", tablet.LockShare); !errors.Is(err, tablet.ErrLockNotAvailable) {
		t.Errorf("FOR SHARE of a row an UPDATE holds: %v, want a conflict", err)
	}
	if err := lock("keyshare", tablet.LockKeyShare); err != nil {
		t.Errorf("FOR KEY SHARE of a row an UPDATE holds: %v", err)
	}
}
