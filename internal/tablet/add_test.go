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

func addRowOp(i int, delta int64) docdb.WriteOp {
	return docdb.WriteOp{Kind: docdb.OpAddColumns, RowKey: rowKey(i), Columns: []docdb.ColumnValue{{ID: 1, Value: docdb.Int64(delta)}}}
}

// intValue reads column 1 of row i as an integer (-1 if the row is absent).
func intValue(t *testing.T, tb *tablet.Tablet, i int) int64 {
	t.Helper()
	row, found, err := tb.Get(context.Background(), rowKey(i), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !found {
		return -1
	}
	return row.Columns[0].Value.Int
}

// TestTxnAdds: an add (SQL c = c + x) is computed by the leader over the
// latest committed row with the transaction's own writes over it; an add
// whose row is absent writes nothing and is reported; a retried request
// does not add twice; a writer pending on the row is waited for and its
// committed value added to.
func TestTxnAdds(t *testing.T) {
	res := newFakeResolver()
	tb, clock := txnTablet(t, res)
	ctx := context.Background()
	put := docdb.WriteOp{Kind: docdb.OpPutRow, RowKey: rowKey(1), Columns: []docdb.ColumnValue{{ID: 1, Value: docdb.Int32(10)}}}
	if _, err := tb.Write(ctx, &docdb.WriteBatch{Ops: []docdb.WriteOp{put}}); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Write(ctx, &docdb.WriteBatch{Ops: []docdb.WriteOp{addRowOp(1, 1)}}); !errors.Is(err, tablet.ErrAddOutsideTxn) {
		t.Fatalf("plain add: %v, want ErrAddOutsideTxn", err)
	}
	a := docdb.TxnID{1}
	wid := uint32(0)
	write := func(txn docdb.TxnID, ops ...docdb.WriteOp) tablet.TxnWriteResult {
		t.Helper()
		w := &tablet.TxnWrite{Txn: txn, WriteID: wid, Ops: ops}
		wid += uint32(len(ops))
		res, err := tb.WriteTxn(ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if r := write(a, addRowOp(2, 1), addRowOp(1, 5)); len(r.Missing) != 1 || r.Missing[0] != 0 {
		t.Fatalf("missing = %v, want [0] (row 2 does not exist)", r.Missing)
	}
	if r := write(a, addRowOp(1, 1)); len(r.Sums) != 1 || !r.Sums[0].Columns[0].Value.Equal(docdb.Int32(16)) { // over its own 15
		t.Fatalf("sums = %+v, want row 1 at 16", r.Sums)
	}
	// One request twice (a retry after a lost answer): the second attempt
	// reads the transaction's writes before the request's write ids only.
	w := &tablet.TxnWrite{Txn: a, WriteID: wid, Ops: []docdb.WriteOp{addRowOp(1, 100)}}
	wid++
	for attempt := range 2 {
		if _, err := tb.WriteTxn(ctx, w); err != nil {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
	}
	if got := intValue(t, tb, 1); got != 10 {
		t.Fatalf("committed value before the commit: %d, want 10", got)
	}
	// Another transaction's add waits for a, then adds to what a committed.
	b := docdb.TxnID{2}
	done := make(chan error, 1)
	go func() {
		_, err := tb.WriteTxn(ctx, &tablet.TxnWrite{Txn: b, WriteID: 0, Ops: []docdb.WriteOp{addRowOp(1, 1000)}})
		done <- err
	}()
	consensustest.WaitFor(t, 10*time.Second, "b waits for a", func() bool { return res.waitingAny(b) })
	commit := clock.Now()
	res.set(a, tablet.TxnStatus{State: tablet.TxnCommitted, CommitHT: commit})
	if err := tb.ApplyTxn(ctx, a, commit); err != nil {
		t.Fatal(err)
	}
	if got := intValue(t, tb, 1); got != 116 {
		t.Fatalf("after a commits: %d, want 10 + 5 + 1 + 100", got)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	commit = clock.Now()
	res.set(b, tablet.TxnStatus{State: tablet.TxnCommitted, CommitHT: commit})
	if err := tb.ApplyTxn(ctx, b, commit); err != nil {
		t.Fatal(err)
	}
	if got := intValue(t, tb, 1); got != 1116 {
		t.Fatalf("after b commits: %d, want 1116", got)
	}
	// A sum outside int32 fails the batch and writes nothing.
	c := docdb.TxnID{3}
	_, err := tb.WriteTxn(ctx, &tablet.TxnWrite{Txn: c, Ops: []docdb.WriteOp{addRowOp(1, 1<<31)}})
	var oor *docdb.OutOfRangeError
	if !errors.As(err, &oor) || oor.Index != 0 || oor.Type != docdb.TypeInt32 {
		t.Fatalf("overflow: %v", err)
	}
	if n, err := tb.IntentCount(); err != nil || n != 0 {
		t.Fatalf("intents after the failed add: %d %v", n, err)
	}
}
