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

// TestWriteOnceAddsOnce: a plain write with adds applies at most once per
// request id: attempts of one request at once, again later, and again at
// a new leader after the old one stopped all answer the first attempt's
// outcome and add nothing more; another id adds again; an add or delete
// whose row does not exist writes nothing and is reported, again by a
// retry after the row is gone, and again after every node restarted.
func TestWriteOnceAddsOnce(t *testing.T) {
	h := newHarness(t, 3, []uint64{1, 2, 3})
	h.waitLeader(t)
	put := docdb.WriteOp{Kind: docdb.OpPutRow, RowKey: rowKey(1), Columns: []docdb.ColumnValue{{ID: 1, Value: docdb.Int64(10)}}}
	h.retry(t, "put", func(ctx context.Context, tb *tablet.Tablet) error {
		_, err := tb.Write(ctx, &docdb.WriteBatch{Ops: []docdb.WriteOp{put}})
		return err
	})
	add := func(id tablet.RequestID, ops ...docdb.WriteOp) (hlc.Timestamp, []int) {
		t.Helper()
		var ht hlc.Timestamp
		var missing []int
		h.retry(t, "add", func(ctx context.Context, tb *tablet.Tablet) (err error) {
			ht, missing, err = tb.WriteOnce(ctx, id, &docdb.WriteBatch{Ops: ops})
			return err
		})
		return ht, missing
	}
	value := func() int64 {
		t.Helper()
		return intValue(t, h.waitLeader(t), 1)
	}

	a := tablet.RequestID{1}
	var wg sync.WaitGroup
	hts := make([]hlc.Timestamp, 4)
	for i := range hts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hts[i], _ = add(a, addRowOp(1, 5))
		}()
	}
	wg.Wait()
	for i, ht := range hts {
		if ht == 0 || ht != hts[0] {
			t.Fatalf("attempt %d of one request answered %v, attempt 0 %v: want one write", i, ht, hts[0])
		}
	}
	if got := value(); got != 15 {
		t.Fatalf("after four attempts of one add of 5: %d, want 15", got)
	}
	if ht, _ := add(a, addRowOp(1, 5)); ht != hts[0] {
		t.Fatalf("a later attempt answered %v, want the first's %v", ht, hts[0])
	}

	old := h.waitLeader(t)
	oldNode := old.Group().Status().Node
	h.StopNode(oldNode)
	if nl := h.waitLeader(t); nl.Group().Status().Node == oldNode {
		t.Fatal("stopped node still leads")
	}
	if ht, _ := add(a, addRowOp(1, 5)); ht != hts[0] {
		t.Fatalf("an attempt at the new leader answered %v, want the first's %v", ht, hts[0])
	}
	if got := value(); got != 15 {
		t.Fatalf("after a retry at the new leader: %d, want 15", got)
	}

	ht2, missing := add(tablet.RequestID{2}, addRowOp(2, 1), addRowOp(1, 5))
	if len(missing) != 1 || missing[0] != 0 {
		t.Fatalf("missing = %v, want [0] (row 2 does not exist)", missing)
	}
	if got := value(); got != 20 {
		t.Fatalf("after a second request: %d, want 20", got)
	}
	if _, found, err := h.waitLeader(t).Get(context.Background(), rowKey(2), nil); err != nil || found {
		t.Fatalf("row 2 after an add to it: found %v, %v; want absent", found, err)
	}
	// A delete reports the rows it did not find; its retry answers the
	// same, not that row 1 is gone now.
	del := func(i int) docdb.WriteOp { return docdb.WriteOp{Kind: docdb.OpDeleteRow, RowKey: rowKey(i)} }
	for attempt := range 2 {
		if _, missing := add(tablet.RequestID{3}, del(1), del(9)); len(missing) != 1 || missing[0] != 1 {
			t.Fatalf("delete attempt %d: missing = %v, want [1] (row 9 does not exist)", attempt, missing)
		}
	}
	if got := value(); got != -1 {
		t.Fatalf("row 1 after its delete: %d, want absent", got)
	}
	if _, err := h.waitLeader(t).Write(context.Background(), &docdb.WriteBatch{Ops: []docdb.WriteOp{addRowOp(1, 1)}}); !errors.Is(err, tablet.ErrAddOutsideTxn) {
		t.Fatalf("an add without a request id: %v, want ErrAddOutsideTxn", err)
	}
	h.StartNode(oldNode)

	// Every node restarted: the engines hold the writes, so the logs do
	// not replay them; the ids come back from disk.
	for _, n := range h.Nodes() {
		h.StopNode(n.ID)
	}
	for _, n := range h.Nodes() {
		h.StartNode(n.ID)
	}
	if ht, missing := add(tablet.RequestID{2}, addRowOp(2, 1), addRowOp(1, 5)); ht != ht2 || len(missing) != 1 {
		t.Fatalf("after a restart, a retry answered %v %v; want the first attempt's %v [0]", ht, missing, ht2)
	}
	if _, missing := add(tablet.RequestID{3}, del(1), del(9)); len(missing) != 1 || missing[0] != 1 {
		t.Fatalf("after a restart, a retried delete: missing = %v, want [1]", missing)
	}
}

// TestWriteOnceAcrossSnapshot: a replica that joins by snapshot, after the
// log entry of a write-once request is truncated away, knows the request
// from the snapshot: led by it, a retry answers the first attempt and adds
// nothing.
func TestWriteOnceAcrossSnapshot(t *testing.T) {
	h := newHarness(t, 4, []uint64{1, 2, 3})
	h.waitLeader(t)
	h.retry(t, "put", func(ctx context.Context, tb *tablet.Tablet) error {
		_, err := tb.Write(ctx, &docdb.WriteBatch{Ops: []docdb.WriteOp{{Kind: docdb.OpPutRow, RowKey: rowKey(1), Columns: []docdb.ColumnValue{{ID: 1, Value: docdb.Int64(10)}}}}})
		return err
	})
	a := tablet.RequestID{7}
	var first hlc.Timestamp
	h.retry(t, "add", func(ctx context.Context, tb *tablet.Tablet) (err error) {
		first, _, err = tb.WriteOnce(ctx, a, &docdb.WriteBatch{Ops: []docdb.WriteOp{addRowOp(1, 5)}})
		return err
	})
	// Enough entries after it for the log to be truncated past it
	// (fastConfig's LogTruncateThreshold is 200).
	const more = 300
	for i := range more {
		h.retry(t, "put", func(ctx context.Context, tb *tablet.Tablet) error {
			_, err := tb.Write(ctx, putBatch(1000+i, 1001+i, "w"))
			return err
		})
	}
	l := h.waitLeader(t)
	learner, _, _ := h.addLearnerBySnapshot(t, l, 4, 1+more)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.Group().PromoteLearner(ctx, 4); err != nil {
		t.Fatal(err)
	}
	consensustest.Retry(t, 20*time.Second, "node 4 leads", func(ctx context.Context) error {
		if learner.Group().HasLease() {
			return nil
		}
		if cur := h.leader(); cur != nil {
			_ = cur.Group().TransferLeadership(ctx, 4)
		}
		return errors.New("node 4 does not hold the lease")
	})
	consensustest.Retry(t, 20*time.Second, "retry at node 4", func(ctx context.Context) error {
		ht, _, err := learner.WriteOnce(ctx, a, &docdb.WriteBatch{Ops: []docdb.WriteOp{addRowOp(1, 5)}})
		if err == nil && ht != first {
			t.Fatalf("a retry at the replica filled by snapshot answered %v, want the first attempt's %v", ht, first)
		}
		return err
	})
	if got := intValue(t, learner, 1); got != 15 {
		t.Fatalf("after a retry at the replica filled by snapshot: %d, want 15", got)
	}
}

// TestWriteOnceAcrossSplit: after a split, a retry of a write-once request
// applied by the parent reaches the child owning its row, which answers
// the first attempt and adds nothing; a new request adds.
func TestWriteOnceAcrossSplit(t *testing.T) {
	h, _ := newTxnHarness(t)
	id := desc.ID
	put := &docdb.WriteBatch{}
	for _, i := range []int{12, 30} {
		put.Ops = append(put.Ops, docdb.WriteOp{Kind: docdb.OpPutRow, RowKey: rowKey(i), Columns: []docdb.ColumnValue{{ID: 1, Value: docdb.Int64(10)}}})
	}
	if err := h.onLeader(t, id, func(ctx context.Context, tb *tablet.Tablet) error { _, err := tb.Write(ctx, put); return err }); err != nil {
		t.Fatal(err)
	}
	add := func(tid uint64, req tablet.RequestID, row int) hlc.Timestamp {
		t.Helper()
		var ht hlc.Timestamp
		if err := h.onLeader(t, tid, func(ctx context.Context, tb *tablet.Tablet) (err error) {
			ht, _, err = tb.WriteOnce(ctx, req, &docdb.WriteBatch{Ops: []docdb.WriteOp{addRowOp(row, 5)}})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return ht
	}
	a, b := tablet.RequestID{1}, tablet.RequestID{2}
	firstA, firstB := add(id, a, 12), add(id, b, 30)
	const left, right = 101, 102
	if err := h.onLeader(t, id, func(ctx context.Context, tb *tablet.Tablet) error {
		_, err := tb.Split(ctx, left, right, rowKey(24))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if ht := add(left, a, 12); ht != firstA {
		t.Fatalf("a retry at the left child answered %v, want the parent's %v", ht, firstA)
	}
	if ht := add(right, b, 30); ht != firstB {
		t.Fatalf("a retry at the right child answered %v, want the parent's %v", ht, firstB)
	}
	if ht := add(right, tablet.RequestID{3}, 30); ht == firstB {
		t.Fatal("a new request at the right child answered an old one")
	}
	for _, c := range []struct {
		tablet uint64
		row    int
		want   int64
	}{{left, 12, 15}, {right, 30, 20}} {
		if err := h.onLeader(t, c.tablet, func(ctx context.Context, tb *tablet.Tablet) error {
			if got := intValue(t, tb, c.row); got != c.want {
				t.Fatalf("row %d at tablet %d: %d, want %d", c.row, c.tablet, got, c.want)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}
