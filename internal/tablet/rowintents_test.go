package tablet_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

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
	h.writeIntents(t, id, wide, 100, 100+tablet.HeldRowsMax+10)
	if err := write(b, 11, 100+tablet.HeldRowsMax+5); !errors.Is(err, tablet.ErrTxnConflict) {
		t.Fatalf("write of an uncounted row of a wide transaction: %v, want a conflict", err)
	}
	// The wide transaction's own writes skip its intents: the mirror holds
	// all the others', so they read no engine while it is the only wide one
	// (a bulk load's), and still find the rows others hold.
	before = tablet.IntentLookups()
	if err := write(wide, 1000, 100+tablet.HeldRowsMax+20); err != nil {
		t.Fatalf("write of a free row by the wide transaction: %v", err)
	}
	if n := tablet.IntentLookups() - before; n != 0 {
		t.Fatalf("the only wide transaction's write read the engine %d times", n)
	}
	if err := write(wide, 1001, 1); !errors.Is(err, tablet.ErrTxnConflict) {
		t.Fatalf("write by the wide transaction of a row a holds: %v, want a conflict", err)
	}

	// After a restart the intents come from disk.
	h.restartAll()
	if err := write(b, 12, 2); !errors.Is(err, tablet.ErrTxnConflict) {
		t.Fatalf("write of a row a holds after a restart: %v, want a conflict", err)
	}
}

// TestHeldIntentsMatchEngine: random transactional writes of columns and
// rows, row locks, commits, aborts and savepoint rollbacks; after each
// step, the conflicts the in-memory mirror reports for every row, access
// and transaction are exactly those the engine holds.
func TestHeldIntentsMatchEngine(t *testing.T) {
	h, _ := newTxnHarness(t)
	id := desc.ID
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seed := time.Now().UnixNano()
	if s, err := strconv.ParseInt(os.Getenv("SHALE_SEED"), 10, 64); err == nil {
		seed = s
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	t.Logf("seed %d", seed)
	const rows, slots = 6, 4
	txns := make([]docdb.TxnID, slots)
	wids := make([]uint32, slots)
	gen := 0
	renew := func(i int) {
		gen++
		txns[i] = testTxnID(fmt.Sprint("t", gen))
		wids[i] = 0
	}
	for i := range txns {
		renew(i)
	}
	op := func(row int) docdb.WriteOp {
		switch rng.IntN(3) {
		case 0:
			return docdb.WriteOp{Kind: docdb.OpPutColumns, RowKey: rowKey(row), Columns: []docdb.ColumnValue{{ID: uint32(1 + rng.IntN(2)), Value: docdb.Int64(1)}}}
		case 1:
			return docdb.WriteOp{Kind: docdb.OpDeleteRow, RowKey: rowKey(row)}
		}
		return putBatch(row, row+1, "v").Ops[0]
	}
	wants := func(row int) [][]docdb.Access {
		return [][]docdb.Access{
			docdb.WriteAccesses([]docdb.WriteOp{{Kind: docdb.OpPutColumns, RowKey: rowKey(row), Columns: []docdb.ColumnValue{{ID: 1, Value: docdb.Int64(1)}}}}),
			docdb.WriteAccesses([]docdb.WriteOp{{Kind: docdb.OpPutColumns, RowKey: rowKey(row), Columns: []docdb.ColumnValue{{ID: 2, Value: docdb.Int64(1)}}}}),
			docdb.WriteAccesses([]docdb.WriteOp{{Kind: docdb.OpDeleteRow, RowKey: rowKey(row)}}),
			tablet.LockAccesses([][]byte{rowKey(row)}, tablet.LockKeyShare),
			tablet.LockAccesses([][]byte{rowKey(row)}, tablet.LockShare),
			tablet.LockAccesses([][]byte{rowKey(row)}, tablet.LockNoKeyUpdate),
			tablet.LockAccesses([][]byte{rowKey(row)}, tablet.LockUpdate),
		}
	}
	norm := func(cs []docdb.Conflict) []string {
		var out []string
		for _, c := range cs {
			out = append(out, fmt.Sprintf("%s %x/%d %s %s", c.Txn, c.Key.RowKey, c.Key.Column, c.Type, c.Wanted))
		}
		slices.Sort(out)
		return out
	}
	exactChecks := 0
	for step := range 150 {
		i := rng.IntN(slots)
		leader, clock := h.leaseholder(t, id)
		switch r := rng.IntN(10); {
		case r < 5:
			w := &tablet.TxnWrite{Txn: txns[i], WriteID: wids[i], Wait: tablet.FailOnConflict}
			for range 1 + rng.IntN(2) {
				w.Ops = append(w.Ops, op(rng.IntN(rows)))
			}
			if rng.IntN(3) == 0 {
				w.Locks, w.Lock = [][]byte{rowKey(rng.IntN(rows))}, rowLockModes[rng.IntN(len(rowLockModes))]
			}
			wids[i] += uint32(len(w.Ops) + 1)
			if err := h.txnWrite(t, id, w); err != nil && !errors.Is(err, tablet.ErrTxnConflict) {
				t.Fatalf("step %d: write: %v", step, err)
			}
		case r < 7:
			if err := leader.ApplyTxn(ctx, txns[i], clock.Now()); err != nil {
				t.Fatalf("step %d: apply: %v", step, err)
			}
			renew(i)
		case r < 9:
			if err := leader.RemoveTxn(ctx, txns[i], false, 0); err != nil {
				t.Fatalf("step %d: remove: %v", step, err)
			}
			renew(i)
		default:
			if err := leader.RemoveTxn(ctx, txns[i], true, wids[i]/2); err != nil {
				t.Fatalf("step %d: savepoint rollback: %v", step, err)
			}
		}
		for row := range rows {
			for _, want := range wants(row) {
				for _, self := range append([]docdb.TxnID{{}}, txns...) {
					held, exact, engine, err := leader.HeldAndEngineConflicts(self, want)
					if err != nil {
						t.Fatal(err)
					}
					if !exact {
						continue
					}
					exactChecks++
					if got, want := norm(held), norm(engine); !slices.Equal(got, want) {
						t.Fatalf("step %d, row %d, txn %s: mirror %v, engine %v", step, row, self, got, want)
					}
				}
			}
		}
	}
	if exactChecks == 0 {
		t.Fatal("the mirror was never exact")
	}
	t.Logf("%d checks compared", exactChecks)
}
