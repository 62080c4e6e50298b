package tablet_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/consensus"
	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/storage"
	"github.com/shaledb/shaledb/internal/tablet"
)

// fakeResolver plays the status records: a transaction is PENDING until
// the test commits or aborts it. It remembers the waits reported and how
// often each transaction's status was asked.
type fakeResolver struct {
	mu     sync.Mutex
	status map[docdb.TxnID]tablet.TxnStatus
	waits  map[docdb.TxnID][]docdb.TxnID
	asked  map[docdb.TxnID]int
}

func newFakeResolver() *fakeResolver {
	return &fakeResolver{status: map[docdb.TxnID]tablet.TxnStatus{}, waits: map[docdb.TxnID][]docdb.TxnID{}, asked: map[docdb.TxnID]int{}}
}

func (r *fakeResolver) Status(_ context.Context, txn docdb.TxnID, _ hlc.Timestamp) (tablet.TxnStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked[txn]++
	if st, ok := r.status[txn]; ok {
		return st, nil
	}
	return tablet.TxnStatus{State: tablet.TxnPending, WaitingFor: r.waits[txn]}, nil
}

func (r *fakeResolver) Abort(_ context.Context, txn docdb.TxnID) (tablet.TxnStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st, ok := r.status[txn]; ok && st.State == tablet.TxnCommitted {
		return st, nil
	}
	r.status[txn] = tablet.TxnStatus{State: tablet.TxnAborted}
	return r.status[txn], nil
}

func (r *fakeResolver) ReportWait(_ context.Context, waiter docdb.TxnID, blockers []docdb.TxnID) (tablet.TxnStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waits[waiter] = slices.Clone(blockers)
	if st, ok := r.status[waiter]; ok {
		return st, nil
	}
	return tablet.TxnStatus{State: tablet.TxnPending}, nil
}

func (r *fakeResolver) set(txn docdb.TxnID, st tablet.TxnStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status[txn] = st
}

func (r *fakeResolver) waiting(waiter, blocker docdb.TxnID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.waits[waiter], blocker)
}

func (r *fakeResolver) timesAsked(txn docdb.TxnID) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.asked[txn]
}

func testTxnID(name string) docdb.TxnID {
	var id docdb.TxnID
	copy(id[:], name)
	return id
}

// leaderOf returns the leaseholder of tablet id, or nil.
func (h *harness) leaderOf(id uint64) *tablet.Tablet {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, tb := range h.opened {
		if k[1] == id && h.Running(k[0]) && tb.Group().HasLease() {
			return tb
		}
	}
	return nil
}

// replicasOf returns the replicas of tablet id on running nodes.
func (h *harness) replicasOf(id uint64) []*tablet.Tablet {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*tablet.Tablet
	for k, tb := range h.opened {
		if k[1] == id && h.Running(k[0]) {
			out = append(out, tb)
		}
	}
	return out
}

// onLeader runs op at the leaseholder of tablet id and returns its result,
// running it again only while it fails for want of a leaseholder.
func (h *harness) onLeader(t testing.TB, id uint64, op func(ctx context.Context, tb *tablet.Tablet) error) error {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var l *tablet.Tablet
		consensustest.WaitFor(t, 20*time.Second, fmt.Sprintf("a leaseholder of tablet %d", id), func() bool {
			l = h.leaderOf(id)
			return l != nil
		})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := op(ctx, l)
		cancel()
		_, notLeader := consensus.IsNotLeader(err)
		if !notLeader && !errors.Is(err, consensus.ErrProposalDropped) {
			return err
		}
		if time.Now().After(deadline) {
			t.Fatalf("tablet %d: %v", id, err)
		}
	}
}

// restartAll stops every node and starts it again on its data; the
// replicas reopen from disk.
func (h *harness) restartAll() {
	for _, n := range h.Nodes() {
		h.StopNode(n.ID)
	}
	h.mu.Lock()
	clear(h.opened)
	h.mu.Unlock()
	for _, n := range h.Nodes() {
		h.StartNode(n.ID)
	}
}

// waitRangeLocks waits until every replica of tablet id holds n range
// locks, in memory and on disk.
func (h *harness) waitRangeLocks(t testing.TB, id uint64, n int) {
	t.Helper()
	consensustest.WaitFor(t, 20*time.Second, fmt.Sprintf("%d range locks on every replica of tablet %d", n, id), func() bool {
		reps := h.replicasOf(id)
		for _, tb := range reps {
			if tb.RangeLockCount() != n {
				return false
			}
		}
		return len(reps) == 3
	})
}

func newTxnHarness(t *testing.T, descs ...tablet.Descriptor) (*harness, *fakeResolver) {
	r := newFakeResolver()
	return newHarnessWith(t, 3, []uint64{1, 2, 3}, harnessOptions{runtime: fastConfig(), resolver: r, descs: descs}), r
}

// evenRows writes rows from, from+2, ... below to.
func (h *harness) evenRows(t testing.TB, id uint64, from, to int) {
	t.Helper()
	wb := &docdb.WriteBatch{}
	for i := from; i < to; i += 2 {
		wb.Ops = append(wb.Ops, putBatch(i, i+1, "r").Ops...)
	}
	h.putOnLeader(t, id, wb)
}

// putOnLeader writes a batch of puts at the leaseholder of id, again after
// an attempt whose outcome is unknown (a leader change on a loaded
// machine, as under -race in CI): a put written twice is the same put.
func (h *harness) putOnLeader(t testing.TB, id uint64, wb *docdb.WriteBatch) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := h.onLeader(t, id, func(ctx context.Context, tb *tablet.Tablet) error { _, err := tb.Write(ctx, wb); return err })
		if err == nil {
			return
		}
		if !errors.Is(err, consensus.ErrAmbiguous) || time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
}

func keysOf(rows []docdb.Row) []string {
	var out []string
	for _, r := range rows {
		k, _ := docdb.DecodeDocKey(r.Key)
		out = append(out, fmt.Sprint(k.RangeParts[0].Value.Int))
	}
	return out
}

// scanLocked runs a locking scan of span for txn at the leaseholder of id.
func (h *harness) scanLocked(t testing.TB, id uint64, lock tablet.ScanLock, span storage.Span, limit int, reverse bool) ([]docdb.Row, storage.Span, bool, error) {
	t.Helper()
	var rows []docdb.Row
	var covered storage.Span
	var more bool
	err := h.onLeader(t, id, func(ctx context.Context, tb *tablet.Tablet) error {
		var err error
		rows, covered, more, _, err = tb.ScanLocked(ctx, tablet.ScanOptions{Span: span, Limit: limit, Reverse: reverse}, lock)
		return err
	})
	return rows, covered, more, err
}

func insertOp(i int) []docdb.WriteOp { return putBatch(i, i+1, "ins").Ops }

// txnWrite runs a transactional write at the leaseholder of id.
func (h *harness) txnWrite(t testing.TB, id uint64, w *tablet.TxnWrite) error {
	t.Helper()
	return h.onLeader(t, id, func(ctx context.Context, tb *tablet.Tablet) error {
		_, err := tb.WriteTxn(ctx, w)
		return err
	})
}

// TestRangeLockConflicts: a serializable scan's range lock makes writes of
// other transactions (and plain writes) into the span it covered wait or
// fail, and nothing outside it; it is replicated, survives a restart of
// every node, and goes away on commit, abort or a savepoint rollback.
// Taking one conflicts with pending writes in the span it would cover (up
// to the last row returned under a limit).
func TestRangeLockConflicts(t *testing.T) {
	h, res := newTxnHarness(t)
	id := desc.ID
	h.evenRows(t, id, 10, 30) // 10, 12, ..., 28
	a, b, c, d, e, f := testTxnID("a"), testTxnID("b"), testTxnID("c"), testTxnID("d"), testTxnID("e"), testTxnID("f")
	write := func(txn docdb.TxnID, wid uint32, row int, wait tablet.WaitPolicy) error {
		return h.txnWrite(t, id, &tablet.TxnWrite{Txn: txn, WriteID: wid, Ops: insertOp(row), Wait: wait})
	}

	// a scans [12, 19) and takes a range lock on it.
	rows, covered, more, err := h.scanLocked(t, id, tablet.ScanLock{Txn: a}, storage.Span{Start: rowKey(12), End: rowKey(19)}, 0, false)
	if err != nil || more || fmt.Sprint(keysOf(rows)) != "[12 14 16 18]" {
		t.Fatalf("scan: %v more=%v %v", keysOf(rows), more, err)
	}
	if string(covered.Start) != string(rowKey(12)) || string(covered.End) != string(rowKey(19)) {
		t.Fatalf("covered %s", covered)
	}
	h.waitRangeLocks(t, id, 1)

	// Inserts into the gaps and writes of the rows read conflict; the
	// bounds are the span's.
	for _, tc := range []struct {
		row      int
		conflict bool
	}{{13, true}, {12, true}, {18, true}, {17, true}, {11, false}, {19, false}, {29, false}} {
		err := write(b, uint32(tc.row), tc.row, tablet.FailOnConflict)
		if got := errors.Is(err, tablet.ErrTxnConflict); got != tc.conflict || (!tc.conflict && err != nil) {
			t.Fatalf("write of row %d: %v (want conflict %v)", tc.row, err, tc.conflict)
		}
	}
	if err := write(b, 100, 13, tablet.NoWait); !errors.Is(err, tablet.ErrLockNotAvailable) {
		t.Fatalf("NOWAIT write into the span: %v", err)
	}
	// FOR SHARE does not conflict with a range lock; FOR UPDATE does.
	if err := h.txnWrite(t, id, &tablet.TxnWrite{Txn: b, WriteID: 101, Locks: [][]byte{rowKey(14)}, Lock: tablet.LockShare, Wait: tablet.FailOnConflict}); err != nil {
		t.Fatalf("FOR SHARE in the span: %v", err)
	}
	err = h.txnWrite(t, id, &tablet.TxnWrite{Txn: b, WriteID: 102, Locks: [][]byte{rowKey(16)}, Lock: tablet.LockUpdate, Wait: tablet.FailOnConflict})
	if !errors.Is(err, tablet.ErrTxnConflict) {
		t.Fatalf("FOR UPDATE in the span: %v", err)
	}
	// The owner writes into its own span freely.
	if err := write(a, 1, 15, tablet.FailOnConflict); err != nil {
		t.Fatalf("a writes into its own span: %v", err)
	}

	// A restart of every node reloads the lock from disk.
	h.restartAll()
	h.waitRangeLocks(t, id, 1)
	if err := write(b, 103, 13, tablet.FailOnConflict); !errors.Is(err, tablet.ErrTxnConflict) {
		t.Fatalf("write into the span after a restart: %v", err)
	}

	// Waiting writers: c (a transaction) reports that it waits for a; a
	// plain write asks a's status and waits too.
	cDone, plainDone := make(chan error, 1), make(chan error, 1)
	go func() { cDone <- write(c, 0, 13, tablet.WaitOnConflict) }()
	consensustest.WaitFor(t, 20*time.Second, "c waits for a", func() bool { return res.waiting(c, a) })
	asked := res.timesAsked(a)
	go func() {
		plainDone <- h.onLeader(t, id, func(ctx context.Context, tb *tablet.Tablet) error {
			_, err := tb.Write(ctx, putBatch(17, 18, "plain"))
			return err
		})
	}()
	consensustest.WaitFor(t, 20*time.Second, "the plain write asks a's status", func() bool { return res.timesAsked(a) > asked })
	select {
	case err := <-cDone:
		t.Fatalf("c's write finished (%v) while a held the range lock", err)
	case err := <-plainDone:
		t.Fatalf("the plain write finished (%v) while a held the range lock", err)
	default:
	}
	// a commits and is applied: its lock goes, the writers go ahead.
	commit := h.Node(1).Clock.Now()
	res.set(a, tablet.TxnStatus{State: tablet.TxnCommitted, CommitHT: commit})
	if err := h.onLeader(t, id, func(ctx context.Context, tb *tablet.Tablet) error { return tb.ApplyTxn(ctx, a, commit) }); err != nil {
		t.Fatal(err)
	}
	h.waitRangeLocks(t, id, 0)
	if err := <-cDone; err != nil {
		t.Fatalf("c after a committed: %v", err)
	}
	if err := <-plainDone; err != nil {
		t.Fatalf("the plain write after a committed: %v", err)
	}

	// Taking a range lock conflicts with pending writes inside the span
	// covered: b's insert of 29 and c's of 13 are pending.
	if _, _, _, err := h.scanLocked(t, id, tablet.ScanLock{Txn: d, Wait: tablet.FailOnConflict}, storage.Span{Start: rowKey(20), End: rowKey(30)}, 0, false); !errors.Is(err, tablet.ErrTxnConflict) {
		t.Fatalf("a range lock over a pending insert: %v", err)
	}
	if _, _, _, err := h.scanLocked(t, id, tablet.ScanLock{Txn: d, Wait: tablet.NoWait}, storage.Span{Start: rowKey(10), End: rowKey(14)}, 0, false); !errors.Is(err, tablet.ErrLockNotAvailable) {
		t.Fatalf("a NOWAIT range lock over a pending insert: %v", err)
	}
	// With a limit the lock ends at the last row returned: 29 is beyond.
	rows, covered, more, err = h.scanLocked(t, id, tablet.ScanLock{Txn: d, WriteID: 1, Wait: tablet.FailOnConflict}, storage.Span{Start: rowKey(20), End: rowKey(30)}, 2, false)
	if err != nil || !more || fmt.Sprint(keysOf(rows)) != "[20 22]" || string(covered.End) != string(docdb.RowSpan(rowKey(22)).End) {
		t.Fatalf("limited scan: %v more=%v covered=%s %v", keysOf(rows), more, covered, err)
	}
	// In reverse, from the end down to the last row returned.
	rows, covered, more, err = h.scanLocked(t, id, tablet.ScanLock{Txn: d, WriteID: 2, Wait: tablet.FailOnConflict}, storage.Span{Start: rowKey(20), End: rowKey(29)}, 2, true)
	if err != nil || !more || fmt.Sprint(keysOf(rows)) != "[28 26]" || string(covered.Start) != string(rowKey(26)) || string(covered.End) != string(rowKey(29)) {
		t.Fatalf("limited reverse scan: %v more=%v covered=%s %v", keysOf(rows), more, covered, err)
	}
	h.waitRangeLocks(t, id, 2)
	for _, tc := range []struct {
		row      int
		conflict bool
	}{{21, true}, {22, true}, {23, false}, {25, false}, {27, true}, {28, true}} {
		err := write(e, uint32(tc.row), tc.row, tablet.FailOnConflict)
		if got := errors.Is(err, tablet.ErrTxnConflict); got != tc.conflict || (!tc.conflict && err != nil) {
			t.Fatalf("write of row %d: %v (want conflict %v)", tc.row, err, tc.conflict)
		}
	}
	// e waits for d, which aborts: e goes ahead.
	eDone := make(chan error, 1)
	go func() { eDone <- write(e, 50, 21, tablet.WaitOnConflict) }()
	consensustest.WaitFor(t, 20*time.Second, "e waits for d", func() bool { return res.waiting(e, d) })
	res.set(d, tablet.TxnStatus{State: tablet.TxnAborted})
	if err := h.onLeader(t, id, func(ctx context.Context, tb *tablet.Tablet) error { return tb.RemoveTxn(ctx, d, false, 0) }); err != nil {
		t.Fatal(err)
	}
	if err := <-eDone; err != nil {
		t.Fatalf("e after d aborted: %v", err)
	}
	h.waitRangeLocks(t, id, 0)

	// A savepoint rollback releases the range locks taken after it.
	if _, _, _, err := h.scanLocked(t, id, tablet.ScanLock{Txn: f, WriteID: 5}, storage.Span{Start: rowKey(40), End: rowKey(50)}, 0, false); err != nil {
		t.Fatal(err)
	}
	h.waitRangeLocks(t, id, 1)
	if err := h.onLeader(t, id, func(ctx context.Context, tb *tablet.Tablet) error { return tb.RemoveTxn(ctx, f, true, 6) }); err != nil {
		t.Fatal(err)
	}
	if err := write(b, 200, 45, tablet.FailOnConflict); !errors.Is(err, tablet.ErrTxnConflict) {
		t.Fatalf("the lock taken before the savepoint is gone: %v", err)
	}
	if err := h.onLeader(t, id, func(ctx context.Context, tb *tablet.Tablet) error { return tb.RemoveTxn(ctx, f, true, 5) }); err != nil {
		t.Fatal(err)
	}
	h.waitRangeLocks(t, id, 0)
	if err := write(b, 201, 45, tablet.FailOnConflict); err != nil {
		t.Fatalf("write after the savepoint rollback: %v", err)
	}
	for _, tb := range h.replicasOf(id) {
		if tb.RangeLockCount() != 0 {
			t.Fatal("range locks left")
		}
	}
}

// TestRangeLockSplit: a split moves a range lock to the children, each
// with the part of the span it owns, on every replica; writes into either
// part conflict at the child that owns it, and applying the transaction on
// each child releases its part.
func TestRangeLockSplit(t *testing.T) {
	h, _ := newTxnHarness(t)
	id := desc.ID
	h.evenRows(t, id, 10, 40)
	a, b := testTxnID("a"), testTxnID("b")
	if _, _, _, err := h.scanLocked(t, id, tablet.ScanLock{Txn: a}, storage.Span{Start: rowKey(15), End: rowKey(31)}, 0, false); err != nil {
		t.Fatal(err)
	}
	h.waitRangeLocks(t, id, 1)
	const left, right = 101, 102
	var sr tablet.SplitResult
	if err := h.onLeader(t, id, func(ctx context.Context, tb *tablet.Tablet) error {
		var err error
		sr, err = tb.Split(ctx, left, right, rowKey(24))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if string(sr.Right.Span.Start) != string(rowKey(24)) {
		t.Fatalf("split at %x", sr.Right.Span.Start)
	}
	h.waitRangeLocks(t, left, 1)
	h.waitRangeLocks(t, right, 1)
	for _, tc := range []struct {
		tablet   uint64
		row      int
		conflict bool
	}{{left, 14, false}, {left, 15, true}, {left, 23, true}, {right, 24, true}, {right, 30, true}, {right, 31, false}} {
		err := h.txnWrite(t, tc.tablet, &tablet.TxnWrite{Txn: b, WriteID: uint32(tc.row), Ops: insertOp(tc.row), Wait: tablet.FailOnConflict})
		if got := errors.Is(err, tablet.ErrTxnConflict); got != tc.conflict || (!tc.conflict && err != nil) {
			t.Fatalf("write of row %d at tablet %d: %v (want conflict %v)", tc.row, tc.tablet, err, tc.conflict)
		}
	}
	commit := h.Node(1).Clock.Now()
	for _, child := range []uint64{left, right} {
		if err := h.onLeader(t, child, func(ctx context.Context, tb *tablet.Tablet) error { return tb.ApplyTxn(ctx, a, commit) }); err != nil {
			t.Fatal(err)
		}
		h.waitRangeLocks(t, child, 0)
	}
	if err := h.txnWrite(t, right, &tablet.TxnWrite{Txn: b, WriteID: 100, Ops: insertOp(25), Wait: tablet.FailOnConflict}); err != nil {
		t.Fatalf("write after the lock was released: %v", err)
	}
}

// TestRangeLockSnapshot: a replica that catches up by snapshot gets the
// range locks with the data and loads them.
func TestRangeLockSnapshot(t *testing.T) {
	r := newFakeResolver()
	h := newHarnessWith(t, 4, []uint64{1, 2, 3}, harnessOptions{runtime: fastConfig(), resolver: r})
	id := desc.ID
	h.evenRows(t, id, 10, 20)
	a := testTxnID("a")
	if _, _, _, err := h.scanLocked(t, id, tablet.ScanLock{Txn: a}, storage.Span{Start: rowKey(12), End: rowKey(17)}, 0, false); err != nil {
		t.Fatal(err)
	}
	// Enough entries after the lock for the log to be truncated past it.
	for i := 0; i < 300; i++ {
		h.putOnLeader(t, id, putBatch(1000+i, 1001+i, "w"))
	}
	l := h.waitLeader(t)
	learner, _, _ := h.addLearnerBySnapshot(t, l, 4, 5+300)
	if n := learner.RangeLockCount(); n != 1 {
		t.Fatalf("the learner holds %d range locks in memory", n)
	}
	locks, err := docdb.RangeLocks(h.Node(4).Engine, id)
	if err != nil || len(locks) != 1 || locks[0].Txn != a || string(locks[0].Span.Start) != string(rowKey(12)) || string(locks[0].Span.End) != string(rowKey(17)) {
		t.Fatalf("the learner's range locks on disk: %v %v", locks, err)
	}
}
