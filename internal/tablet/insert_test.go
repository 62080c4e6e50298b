package tablet_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/tablet"
)

// waitingAny reports whether txn has reported waiting for anyone (the
// fakeResolver is rangelock_test.go's).
func (r *fakeResolver) waitingAny(txn docdb.TxnID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.waits[txn]) > 0
}

// txnTablet opens desc on a single node with transactions enabled and
// returns it once it holds the lease, with its node's clock.
func txnTablet(t *testing.T, res tablet.Resolver) (*tablet.Tablet, *hlc.Clock) {
	t.Helper()
	tb, n := oneTablet(t, tablet.Config{Resolver: res})
	return tb, n.Clock
}

// oneTablet opens desc with cfg (its node's parts filled in) as the only
// replica on a single node and returns it once it holds the lease, with
// its node.
func oneTablet(t *testing.T, cfg tablet.Config) (*tablet.Tablet, *consensustest.Node) {
	t.Helper()
	var tb *tablet.Tablet
	var node *consensustest.Node
	var mu sync.Mutex
	consensustest.NewCluster(t, 1, consensustest.Options{
		Runtime: fastConfig(),
		OnStart: func(n *consensustest.Node) {
			c := cfg
			c.Descriptor, c.Runtime, c.Engine, c.Clock, c.Bootstrap = desc, n.Runtime, n.Engine, n.Clock, []uint64{n.ID}
			x, err := tablet.Open(c)
			if err != nil {
				t.Fatalf("open tablet: %v", err)
			}
			mu.Lock()
			tb, node = x, n
			mu.Unlock()
		},
	})
	consensustest.WaitFor(t, 15*time.Second, "a leaseholder", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return tb != nil && tb.Group().HasLease()
	})
	return tb, node
}

func insertRowOp(i int, val string) docdb.WriteOp {
	return docdb.WriteOp{Kind: docdb.OpInsertRow, RowKey: rowKey(i), Columns: []docdb.ColumnValue{{ID: 1, Value: docdb.Text(val)}}}
}

func opOf(kind docdb.OpKind, i int, val string) docdb.WriteOp {
	op := docdb.WriteOp{Kind: kind, RowKey: rowKey(i)}
	if kind != docdb.OpDeleteRow {
		op.Columns = []docdb.ColumnValue{{ID: 1, Value: docdb.Text(val)}}
	}
	return op
}

// wantDuplicate checks that err is a duplicate of op index.
func wantDuplicate(t *testing.T, what string, err error, index, row int) {
	t.Helper()
	var d *docdb.DuplicateKeyError
	if !errors.As(err, &d) || d.Index != index || string(d.RowKey) != string(rowKey(row)) {
		t.Fatalf("%s: want a duplicate of op %d (row %d), got %v", what, index, row, err)
	}
}

// value reads column 1 of row i ("" if the row is absent).
func value(t *testing.T, tb *tablet.Tablet, i int) string {
	t.Helper()
	row, found, err := tb.Get(context.Background(), rowKey(i), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !found {
		return ""
	}
	return string(row.Columns[0].Value.Bytes)
}

func TestPlainInsert(t *testing.T) {
	tb, _ := txnTablet(t, newFakeResolver())
	ctx := context.Background()
	write := func(ops ...docdb.WriteOp) error {
		_, err := tb.Write(ctx, &docdb.WriteBatch{Ops: ops})
		return err
	}
	if err := write(insertRowOp(1, "a"), insertRowOp(2, "b")); err != nil {
		t.Fatalf("insert into absent rows: %v", err)
	}
	// A batch with a live row fails as a whole, naming the op.
	wantDuplicate(t, "insert over a live row", write(insertRowOp(3, "c"), insertRowOp(2, "again"), insertRowOp(4, "d")), 1, 2)
	wantDuplicate(t, "the same row twice", write(insertRowOp(5, "e"), insertRowOp(6, "f"), insertRowOp(5, "e2")), 2, 5)
	for i, want := range map[int]string{2: "b", 3: "", 4: "", 5: "", 6: ""} {
		if got := value(t, tb, i); got != want {
			t.Fatalf("row %d after the failed batches: %q, want %q", i, got, want)
		}
	}
	// A deleted row, and one whose TTL passed, can be inserted again.
	if err := write(opOf(docdb.OpDeleteRow, 1, "")); err != nil {
		t.Fatal(err)
	}
	short := opOf(docdb.OpPutRow, 7, "short")
	short.TTL = time.Microsecond
	if err := write(short); err != nil {
		t.Fatal(err)
	}
	if err := write(insertRowOp(1, "a2"), insertRowOp(7, "g")); err != nil {
		t.Fatalf("insert into a deleted and an expired row: %v", err)
	}
	// A delete earlier in the batch makes room, a put does not.
	if err := write(opOf(docdb.OpDeleteRow, 1, ""), insertRowOp(1, "a3")); err != nil {
		t.Fatal(err)
	}
	wantDuplicate(t, "put then insert", write(opOf(docdb.OpPutRow, 8, "h"), insertRowOp(8, "h2")), 1, 8)
	for i, want := range map[int]string{1: "a3", 7: "g", 8: ""} {
		if got := value(t, tb, i); got != want {
			t.Fatalf("row %d: %q, want %q", i, got, want)
		}
	}
}

func TestTxnInsert(t *testing.T) {
	res := newFakeResolver()
	tb, clock := txnTablet(t, res)
	ctx := context.Background()
	if _, err := tb.Write(ctx, &docdb.WriteBatch{Ops: []docdb.WriteOp{opOf(docdb.OpPutRow, 1, "committed")}}); err != nil {
		t.Fatal(err)
	}
	me := docdb.TxnID{1}
	wid := uint32(0)
	write := func(ops ...docdb.WriteOp) error {
		w := &tablet.TxnWrite{Txn: me, WriteID: wid, Ops: ops}
		wid += uint32(len(ops))
		_, err := tb.WriteTxn(ctx, w)
		return err
	}
	wantDuplicate(t, "insert over a committed row", write(insertRowOp(2, "x"), insertRowOp(1, "x")), 1, 1)
	if n, err := tb.IntentCount(); err != nil || n != 0 {
		t.Fatalf("intents after a failed batch: %d %v", n, err)
	}
	if err := write(insertRowOp(2, "mine")); err != nil {
		t.Fatal(err)
	}
	wantDuplicate(t, "own put, then insert", write(insertRowOp(2, "again")), 0, 2)
	if err := write(opOf(docdb.OpDeleteRow, 2, "")); err != nil {
		t.Fatal(err)
	}
	if err := write(insertRowOp(2, "after own delete")); err != nil {
		t.Fatalf("own delete, then insert: %v", err)
	}
	if err := write(opOf(docdb.OpDeleteRow, 1, "")); err != nil {
		t.Fatal(err)
	}
	savepoint := wid
	if err := write(insertRowOp(1, "over own delete")); err != nil {
		t.Fatalf("own delete of a committed row, then insert: %v", err)
	}
	wantDuplicate(t, "twice", write(insertRowOp(1, "twice")), 0, 1)
	// Rolling back to the savepoint removes the insert: the row is absent
	// (own delete) again, and its insert succeeds again.
	if err := tb.RemoveTxn(ctx, me, true, savepoint); err != nil {
		t.Fatal(err)
	}
	if err := write(insertRowOp(1, "after rollback")); err != nil {
		t.Fatalf("insert after the savepoint rollback: %v", err)
	}
	// A retried request (same write ids) does not collide with the
	// intents of its own first attempt.
	w := &tablet.TxnWrite{Txn: me, WriteID: wid, Ops: []docdb.WriteOp{insertRowOp(3, "retried")}}
	wid++
	for attempt := 0; attempt < 2; attempt++ {
		if _, err := tb.WriteTxn(ctx, w); err != nil {
			t.Fatalf("attempt %d of one request: %v", attempt, err)
		}
	}
	// Outside the transaction the provisional rows do not exist, but a
	// plain insert waits for the transaction (it asks its status record
	// and waits while it is pending); it commits, and the insert then
	// finds the row.
	asked := res.timesAsked(me)
	done := make(chan error, 1)
	go func() {
		_, err := tb.Write(ctx, &docdb.WriteBatch{Ops: []docdb.WriteOp{insertRowOp(3, "plain")}})
		done <- err
	}()
	consensustest.WaitFor(t, 10*time.Second, "the plain insert meets the intent", func() bool { return res.timesAsked(me) > asked })
	commit := clock.Now()
	res.set(me, tablet.TxnStatus{State: tablet.TxnCommitted, CommitHT: commit})
	if err := tb.ApplyTxn(ctx, me, commit); err != nil {
		t.Fatal(err)
	}
	wantDuplicate(t, "plain insert after the commit", <-done, 0, 3)
	for i, want := range map[int]string{1: "after rollback", 2: "after own delete", 3: "retried"} {
		if got := value(t, tb, i); got != want {
			t.Fatalf("row %d after the commit: %q, want %q", i, got, want)
		}
	}
}

// TestConcurrentTxnInserts: two transactions insert one key; the second
// waits for the first and fails once it commits (a snapshot conflict, or
// under read committed a duplicate), or goes ahead once it aborts.
func TestConcurrentTxnInserts(t *testing.T) {
	res := newFakeResolver()
	tb, clock := txnTablet(t, res)
	ctx := context.Background()
	for i, c := range []struct {
		name       string
		checkNewer bool // snapshot isolation
		commit     bool
		wait       tablet.WaitPolicy
	}{
		{"snapshot, first commits", true, true, tablet.WaitOnConflict},
		{"read committed, first commits", false, true, tablet.WaitOnConflict},
		{"snapshot, first aborts", true, false, tablet.WaitOnConflict},
		{"fail fast", true, true, tablet.FailOnConflict},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := 100 + i
			a, b := docdb.TxnID{2, byte(i)}, docdb.TxnID{3, byte(i)}
			readTime := clock.Now()
			if _, err := tb.WriteTxn(ctx, &tablet.TxnWrite{Txn: a, ReadTime: readTime, CheckNewer: c.checkNewer, Ops: []docdb.WriteOp{insertRowOp(key, "a")}}); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := tb.WriteTxn(ctx, &tablet.TxnWrite{Txn: b, ReadTime: readTime, CheckNewer: c.checkNewer, Wait: c.wait,
					Ops: []docdb.WriteOp{insertRowOp(key, "b")}})
				done <- err
			}()
			if c.wait == tablet.FailOnConflict {
				if err := <-done; !errors.Is(err, tablet.ErrTxnConflict) {
					t.Fatalf("fail-fast insert: %v", err)
				}
			} else {
				consensustest.WaitFor(t, 10*time.Second, "b waits for a", func() bool { return res.waitingAny(b) })
			}
			var err error
			if c.commit {
				commit := clock.Now()
				res.set(a, tablet.TxnStatus{State: tablet.TxnCommitted, CommitHT: commit})
				err = tb.ApplyTxn(ctx, a, commit)
			} else {
				res.set(a, tablet.TxnStatus{State: tablet.TxnAborted})
				err = tb.RemoveTxn(ctx, a, false, 0)
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.wait == tablet.FailOnConflict {
				return
			}
			err = <-done
			switch {
			case !c.commit:
				if err != nil {
					t.Fatalf("insert after the other aborted: %v", err)
				}
				res.set(b, tablet.TxnStatus{State: tablet.TxnCommitted, CommitHT: clock.Now()})
				if err := tb.ApplyTxn(ctx, b, clock.Now()); err != nil {
					t.Fatal(err)
				}
				if got := value(t, tb, key); got != "b" {
					t.Fatalf("row: %q", got)
				}
				return
			case c.checkNewer:
				if !errors.Is(err, tablet.ErrTxnConflict) {
					t.Fatalf("snapshot insert after the other committed: %v", err)
				}
			default:
				wantDuplicate(t, "read committed insert after the other committed", err, 0, key)
			}
			if got := value(t, tb, key); got != "a" {
				t.Fatalf("row: %q", got)
			}
		})
	}
}
