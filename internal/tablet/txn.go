package tablet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/shaledb/shaledb/internal/consensus"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/storage"
)

// The participant side of distributed transactions (YugabyteDB style; see
// docs/transactions.md). A transaction writes intents through this tablet's
// Raft log (cmdIntents); its coordinator commits by one write of its status
// record elsewhere, then asks every participant to apply the intents as
// regular versions at the commit time (cmdApplyTxn) or to remove them
// (cmdRemoveTxn). Anyone who meets an intent resolves it through the status
// record (Resolver), so a coordinator that dies mid-way leaves nothing
// stuck.
const (
	cmdIntents   byte = 3
	cmdApplyTxn  byte = 4
	cmdRemoveTxn byte = 5
)

// A large transaction's intents are applied (or removed) in steps of at
// most intentStep intents, each a Raft entry of its own: one node applies
// every group's entries of a cycle in one batch, so a bulk load's million
// intents in one entry stalled every tablet of the node (heartbeats
// unanswered, leaderships lost) for tens of seconds. A step is about 10 ms
// of work on one replica. The step is in the entry, so that every replica
// applies the same intents in it whatever the version of its binary.
var intentStep atomic.Int32

func init() { intentStep.Store(4096) }

// errMoreIntents is the result of a step that left intents to apply or
// remove: the proposer proposes the next step.
var errMoreIntents = errors.New("tablet: more intents to resolve")

// testHooks let tests stop the tablet at chosen points (nil outside tests).
type testHooks struct {
	// txnApplied runs on the apply goroutine of a replica applying a
	// cmdApplyTxn, before the apply batch is committed to the engine.
	txnApplied func(t *Tablet, txn docdb.TxnID)
	// scanLockedRead runs in ScanLocked between its read and its conflict
	// check.
	scanLockedRead func(t *Tablet)
}

var hooks atomic.Pointer[testHooks]

// TxnState is the state of a transaction's status record.
type TxnState int8

// Transaction states.
const (
	TxnPending TxnState = iota + 1
	TxnCommitted
	TxnAborted
)

func (s TxnState) String() string {
	switch s {
	case TxnPending:
		return "PENDING"
	case TxnCommitted:
		return "COMMITTED"
	case TxnAborted:
		return "ABORTED"
	}
	return fmt.Sprintf("TxnState(%d)", int8(s))
}

// TxnStatus is what a status record says.
type TxnStatus struct {
	State    TxnState
	CommitHT hlc.Timestamp // COMMITTED only
	// WaitingFor lists the transactions this one waits for somewhere (as
	// last reported), for deadlock detection.
	WaitingFor []docdb.TxnID
}

// Resolver reaches transaction status records (they live in other
// tablets, usually on other nodes).
type Resolver interface {
	// Status returns txn's status. readTime, if set, is the time of a
	// read that found an intent of txn: a PENDING answer guarantees txn
	// commits (if ever) above it. An expired PENDING record is aborted
	// and reported ABORTED.
	Status(ctx context.Context, txn docdb.TxnID, readTime hlc.Timestamp) (TxnStatus, error)
	// Abort aborts txn unless it has committed, and returns its status.
	Abort(ctx context.Context, txn docdb.TxnID) (TxnStatus, error)
	// ReportWait records that waiter waits for blockers (deadlock
	// detection reads it back through Status) and returns the waiter's own
	// status, as Status would.
	ReportWait(ctx context.Context, waiter docdb.TxnID, blockers []docdb.TxnID) (TxnStatus, error)
}

// Errors of transactional operations.
var (
	// ErrTxnConflict: a snapshot-isolation conflict (a newer committed
	// version of a key the transaction writes or locks); retry the
	// transaction (SQLSTATE 40001).
	ErrTxnConflict = errors.New("tablet: transaction conflict")
	// ErrDeadlock: this transaction was chosen to break a deadlock
	// (SQLSTATE 40P01).
	ErrDeadlock = errors.New("tablet: deadlock detected")
	// ErrLockNotAvailable: NOWAIT met a lock (SQLSTATE 55P03).
	ErrLockNotAvailable = errors.New("tablet: lock not available")
	// ErrTxnAborted: the transaction was aborted (expired, or a deadlock
	// victim elsewhere).
	ErrTxnAborted = errors.New("tablet: transaction aborted")
	// ErrNoResolver: the node cannot reach status records.
	ErrNoResolver = errors.New("tablet: transactions are not available on this node")
)

// ReadRestartError: a read found a value in its uncertainty window and
// could not move its own read time; the caller restarts at RestartTime.
type ReadRestartError struct{ RestartTime hlc.Timestamp }

func (e *ReadRestartError) Error() string {
	return fmt.Sprintf("tablet: restart read at %s (a value in the clock uncertainty window)", e.RestartTime)
}

// LockMode is the row lock a transactional write or lock request takes.
type LockMode int8

// Lock modes: PostgreSQL's four row locks (the values are tserverpb's).
// Each takes intents on the row level (lockAccesses), as YugabyteDB maps
// them: FOR KEY SHARE a weak read, FOR SHARE a strong read, FOR NO KEY
// UPDATE a strong read and a weak write, FOR UPDATE a strong read and a
// write lock. So FOR KEY SHARE (a foreign key check of the parent row)
// conflicts only with what removes the row or changes its key (a
// DELETE's row tombstone, FOR UPDATE), not with an UPDATE of other
// columns (a weak write on the row) nor FOR NO KEY UPDATE, which is what
// lets a transaction update a parent row that others are inserting
// children of.
const (
	LockNone LockMode = iota
	// LockShare: SELECT ... FOR SHARE and serializable reads.
	LockShare
	// LockUpdate: SELECT ... FOR UPDATE, DELETE, an UPDATE of key columns.
	LockUpdate
	// LockKeyShare: SELECT ... FOR KEY SHARE, foreign key checks.
	LockKeyShare
	// LockNoKeyUpdate: SELECT ... FOR NO KEY UPDATE, an UPDATE of other
	// columns.
	LockNoKeyUpdate
)

// WaitPolicy says what a transaction does when it meets a conflicting
// intent of a pending transaction.
type WaitPolicy int8

// Wait policies.
const (
	// WaitOnConflict queues until the other transaction finishes (with
	// deadlock detection).
	WaitOnConflict WaitPolicy = iota
	// NoWait fails with ErrLockNotAvailable.
	NoWait
	// SkipLocked leaves out the rows it cannot lock (locks only).
	SkipLocked
	// FailOnConflict fails with ErrTxnConflict (fail-fast, retry).
	FailOnConflict
)

// TxnWrite is one batch of a transaction's writes and locks on this tablet.
type TxnWrite struct {
	Txn docdb.TxnID
	// ReadTime is the transaction's snapshot. With CheckNewer, a version
	// of a written or locked row committed after it is a conflict
	// (snapshot and serializable isolation; not read committed).
	ReadTime   hlc.Timestamp
	CheckNewer bool
	WriteID    uint32 // of the first op; locks take WriteID+len(Ops)
	Ops        []docdb.WriteOp
	// Locks are rows to lock with Lock (row level).
	Locks [][]byte
	Lock  LockMode
	Wait  WaitPolicy
	// Proposed, when set, is called with the result once the intents'
	// entry is proposed, before it is replicated: a pipelined write
	// answers then (its caller awaits the final result before it
	// commits). A write that proposes nothing (all of its adds found no
	// row) or fails before proposing does not call it.
	Proposed func(TxnWriteResult)
}

// TxnWriteResult says what a TxnWrite did.
type TxnWriteResult struct {
	HT hlc.Timestamp
	// Skipped lists the Locks left out under SkipLocked.
	Skipped [][]byte
	// Missing lists the adds (docdb.OpAddColumns, by index in Ops) whose
	// row does not exist: nothing was written for them.
	Missing []int
	// Sums: what each other add wrote (the new values), by index in Ops.
	Sums map[int]docdb.WriteOp
}

// txnTracker keeps the participant's in-memory transaction state: which
// transactions have intents here (so that reads of a tablet without any
// skip the intent lookup) and who waits for whom.
type txnTracker struct {
	// count mirrors len(live) for the hot path (every read and write asks).
	count atomic.Int64
	mu    sync.Mutex
	// live: transactions with intents on this replica, with when this
	// replica first saw them (for the background resolver).
	live map[docdb.TxnID]time.Time
	// size: how many ops and locks each live transaction wrote here
	// (deferMaxIntents+1 when unknown: loaded from disk).
	size map[docdb.TxnID]int
	// done: closed when the transaction's intents here are applied or
	// removed (waiters of a wait queue).
	done map[docdb.TxnID]chan struct{}
	// known: the intents of small transactions as written here, all of
	// them (see knownMax), so that their apply needs no reads
	// (docdb.ApplyKnownIntents). A live transaction without an entry is
	// applied from disk: it is larger, has row or range locks here, lost
	// some intents to a savepoint rollback, or was loaded from disk (open,
	// snapshot). Only the apply loop changes it.
	known map[docdb.TxnID]*docdb.KnownIntents
	// resolved during the current apply cycle: they stay live until
	// PostApply, once the batch that applied or removed their intents is
	// in the engine, then leave live and wake their waiters.
	resolved []docdb.TxnID
	// held mirrors the intents of the live transactions by row, while
	// it can (see locktable.go).
	held heldIntents
	// steps: where the stepped apply or removal of a large transaction's
	// intents stopped on this replica (docdb.StepCursor). Only the apply
	// loop uses it.
	steps map[docdb.TxnID]*docdb.StepCursor
}

func (tr *txnTracker) init() {
	tr.live = map[docdb.TxnID]time.Time{}
	tr.size = map[docdb.TxnID]int{}
	tr.done = map[docdb.TxnID]chan struct{}{}
	tr.known = map[docdb.TxnID]*docdb.KnownIntents{}
	tr.steps = map[docdb.TxnID]*docdb.StepCursor{}
	tr.held.init()
}

// cursor returns txn's step cursor, kept until txn leaves.
func (tr *txnTracker) cursor(txn docdb.TxnID) *docdb.StepCursor {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	c := tr.steps[txn]
	if c == nil {
		c = &docdb.StepCursor{}
		tr.steps[txn] = c
	}
	return c
}

// ridingApplies reports whether every conflict is with a committed
// transaction: one whose apply is queued here (see applyqueue.go) or one
// this write learnt is committed (committed, see resolveConflicts); and the
// newest of their commit times. A write meeting only those need not wait
// for their applies: its own entry carries the queued ones in front, the
// others are applied in entries of their own, and their versions sit below
// its time either way. Each update of a hot row (a pgbench branch) used to
// pay its previous writer's apply as a Raft round, and a write meeting a
// bulk load's intents waited for the whole load's apply. Inserts wait:
// their duplicate check reads the engine, where those rows are not yet.
func (t *Tablet) ridingApplies(conflicts []docdb.Conflict, ops []docdb.WriteOp, committed map[docdb.TxnID]hlc.Timestamp) (newest hlc.Timestamp, ok bool) {
	if len(conflicts) == 0 || docdb.HasInserts(ops) {
		return 0, false
	}
	for _, c := range conflicts {
		commit, known := committed[c.Txn]
		if !known {
			if commit, known = t.queuedCommit(c.Txn); !known {
				return 0, false
			}
		}
		newest = max(newest, commit)
	}
	return newest, true
}

// pointWindow is the intent window of a point read (readTxn): its span is
// the row span of its start, one row.
const pointWindow = -1

// Limits of a transaction's known intents (txnTracker.known) per tablet.
const (
	knownMax      = 64
	knownMaxBytes = 64 << 10
)

// knownFor returns where to record the intents txn is about to write
// here: a new record for a transaction not live here, its record if it
// has a complete one, nil otherwise (and always when the entry also takes
// range locks, which ends the record: they are not intents).
func (tr *txnTracker) knownFor(txn docdb.TxnID, ranges bool) *docdb.KnownIntents {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if ranges {
		delete(tr.known, txn)
		return nil
	}
	if _, live := tr.live[txn]; !live {
		return &docdb.KnownIntents{}
	}
	return tr.known[txn]
}

// keepKnown stores k as txn's record unless it grew too large.
func (tr *txnTracker) keepKnown(txn docdb.TxnID, k *docdb.KnownIntents) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if k.Len() > knownMax || k.Bytes() > knownMaxBytes {
		delete(tr.known, txn)
		return
	}
	tr.known[txn] = k
}

// takeKnown removes and returns txn's record (nil if none).
func (tr *txnTracker) takeKnown(txn docdb.TxnID) *docdb.KnownIntents {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	k := tr.known[txn]
	delete(tr.known, txn)
	return k
}

// clearKnown forgets every record (the intents moved or were reloaded).
func (tr *txnTracker) clearKnown() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	clear(tr.known)
}

// info reports whether txn is live here, its size, and whether someone
// waits for it.
func (tr *txnTracker) info(txn docdb.TxnID) (live bool, size int, waited bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	_, live = tr.live[txn]
	return live, tr.size[txn], tr.done[txn] != nil
}

func (tr *txnTracker) any() bool { return tr.count.Load() > 0 }

// addLocked records txn as having intents here (under mu). Intents
// written after a removal was queued in the same cycle (a late write of an
// aborted transaction) keep it live.
func (tr *txnTracker) addLocked(txn docdb.TxnID, now time.Time, size int) {
	if len(tr.resolved) > 0 {
		tr.resolved = slices.DeleteFunc(tr.resolved, func(id docdb.TxnID) bool { return id == txn })
	}
	tr.size[txn] += size
	if _, ok := tr.live[txn]; !ok {
		tr.live[txn] = now
		tr.count.Store(int64(len(tr.live)))
	}
}

// gone reports whether txn has nothing here: not live, or its intents
// resolved earlier in the current apply cycle (it stays live until the
// cycle commits, and intents it writes after that keep it live: addLocked
// takes it out of resolved).
func (tr *txnTracker) gone(txn docdb.TxnID) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if _, live := tr.live[txn]; !live {
		return true
	}
	return slices.Contains(tr.resolved, txn)
}

// remove queues txn to be forgotten when the apply cycle that resolved its
// intents here is committed (wake, from PostApply). Until then the apply
// batch, intents deleted and versions written, is not in the engine yet: a
// read that skipped the intent lookup in that window would see neither the
// intents nor the versions of a committed transaction.
func (tr *txnTracker) remove(txn docdb.TxnID) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.resolved = append(tr.resolved, txn)
}

// waitFor returns a channel closed when txn's intents here are resolved.
func (tr *txnTracker) waitFor(txn docdb.TxnID) <-chan struct{} {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if _, ok := tr.live[txn]; !ok {
		ch := make(chan struct{})
		close(ch) // resolved already
		return ch
	}
	ch := tr.done[txn]
	if ch == nil {
		ch = make(chan struct{})
		tr.done[txn] = ch
	}
	return ch
}

// nudge wakes txn's waiters without forgetting txn: its intents are still
// here, committed, their apply queued; a woken writer's entry carries it.
func (tr *txnTracker) nudge(txn docdb.TxnID) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if ch := tr.done[txn]; ch != nil {
		close(ch)
		delete(tr.done, txn)
	}
}

// wake forgets the transactions resolved by the apply cycle just committed
// and wakes their waiters.
func (tr *txnTracker) wake() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, txn := range tr.resolved {
		tr.held.forget(txn)
		delete(tr.live, txn)
		delete(tr.size, txn)
		delete(tr.known, txn)
		delete(tr.steps, txn)
		if ch := tr.done[txn]; ch != nil {
			close(ch)
			delete(tr.done, txn)
		}
	}
	tr.count.Store(int64(len(tr.live)))
	tr.resolved = tr.resolved[:0]
}

// loadTxns rebuilds the set of transactions with intents or range locks
// here, and the range locks' mirror (after open or a snapshot).
func (t *Tablet) loadTxns() error {
	txns, err := docdb.TxnsWithIntents(t.eng, t.desc.ID)
	if err != nil {
		return err
	}
	ranges, err := docdb.RangeLocks(t.eng, t.desc.ID)
	if err != nil {
		return err
	}
	for _, l := range ranges {
		txns = append(txns, l.Txn)
	}
	t.ranges.set(ranges)
	t.txns.mu.Lock()
	defer t.txns.mu.Unlock()
	now := time.Now()
	clear(t.txns.live)
	clear(t.txns.size)
	clear(t.txns.known)
	clear(t.txns.steps)
	t.txns.held.init()
	for _, id := range txns {
		t.txns.addLocked(id, now, deferMaxIntents+1)
		t.txns.held.widen(id) // its intents are on disk only
	}
	t.txns.count.Store(int64(len(t.txns.live)))
	return nil
}

// ---- Raft commands ----

// encodeIntents encodes a cmdIntents entry: w's ops, row locks and range
// locks (spans, serializable scans), all of w.Txn.
func encodeIntents(ht hlc.Timestamp, w *TxnWrite, locks []docdb.Access, spans []storage.Span) []byte {
	b := make([]byte, 0, 64+64*len(w.Ops))
	b = append(b, cmdIntents)
	b = binary.BigEndian.AppendUint64(b, uint64(ht))
	b = append(b, w.Txn[:]...)
	b = binary.BigEndian.AppendUint32(b, w.WriteID)
	wb := (&docdb.WriteBatch{Ops: w.Ops}).Marshal()
	b = binary.BigEndian.AppendUint32(b, uint32(len(wb)))
	b = append(b, wb...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(locks)))
	for _, l := range locks {
		b = append(b, byte(l.Type))
		b = binary.BigEndian.AppendUint32(b, l.Key.Column)
		b = binary.BigEndian.AppendUint32(b, uint32(len(l.Key.RowKey)))
		b = append(b, l.Key.RowKey...)
	}
	if len(spans) == 0 {
		return b // as entries written before range locks existed
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(spans)))
	for _, s := range spans {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s.Start)))
		b = append(b, s.Start...)
		if s.End == nil {
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		b = binary.BigEndian.AppendUint32(b, uint32(len(s.End)))
		b = append(b, s.End...)
	}
	return b
}

var errMalformedCmd = errors.New("malformed transaction command")

func decodeIntents(b []byte) (ht hlc.Timestamp, txn docdb.TxnID, wid uint32, ops []docdb.WriteOp, locks []docdb.Access, spans []storage.Span, err error) {
	b = b[1:]
	if len(b) < 8+16+4+4 {
		return 0, txn, 0, nil, nil, nil, errMalformedCmd
	}
	ht = hlc.Timestamp(binary.BigEndian.Uint64(b))
	copy(txn[:], b[8:24])
	wid = binary.BigEndian.Uint32(b[24:])
	n := int(binary.BigEndian.Uint32(b[28:]))
	b = b[32:]
	if len(b) < n+4 {
		return 0, txn, 0, nil, nil, nil, errMalformedCmd
	}
	var wb docdb.WriteBatch
	if err := wb.Unmarshal(b[:n]); err != nil {
		return 0, txn, 0, nil, nil, nil, err
	}
	b = b[n:]
	nl := int(binary.BigEndian.Uint32(b))
	b = b[4:]
	for range nl {
		if len(b) < 9 {
			return 0, txn, 0, nil, nil, nil, errMalformedCmd
		}
		a := docdb.Access{Type: docdb.IntentType(b[0]), Key: docdb.IntentKey{Column: binary.BigEndian.Uint32(b[1:])}}
		kl := int(binary.BigEndian.Uint32(b[5:]))
		b = b[9:]
		if len(b) < kl {
			return 0, txn, 0, nil, nil, nil, errMalformedCmd
		}
		a.Key.RowKey = b[:kl]
		b = b[kl:]
		locks = append(locks, a)
	}
	if len(b) == 0 {
		return ht, txn, wid, wb.Ops, locks, nil, nil
	}
	if spans, err = decodeSpans(b); err != nil {
		return 0, txn, 0, nil, nil, nil, err
	}
	return ht, txn, wid, wb.Ops, locks, spans, nil
}

func decodeSpans(b []byte) ([]storage.Span, error) {
	if len(b) < 4 {
		return nil, errMalformedCmd
	}
	n := int(binary.BigEndian.Uint32(b))
	b = b[4:]
	var spans []storage.Span
	for range n {
		var s storage.Span
		if len(b) < 4 {
			return nil, errMalformedCmd
		}
		l := int(binary.BigEndian.Uint32(b))
		if len(b) < 4+l+1 {
			return nil, errMalformedCmd
		}
		s.Start = b[4 : 4+l]
		hasEnd := b[4+l]
		b = b[4+l+1:]
		if hasEnd == 1 {
			if len(b) < 4 {
				return nil, errMalformedCmd
			}
			l = int(binary.BigEndian.Uint32(b))
			if len(b) < 4+l {
				return nil, errMalformedCmd
			}
			s.End = b[4 : 4+l]
			b = b[4+l:]
		} else if hasEnd != 0 {
			return nil, errMalformedCmd
		}
		spans = append(spans, s)
	}
	if len(b) != 0 {
		return nil, errMalformedCmd
	}
	return spans, nil
}

// encodeApplyTxn: cmdApplyTxn | txn | commit time (8 BE) | step (4 BE:
// at most that many intents, 0 for all; absent in entries of older
// binaries).
func encodeApplyTxn(txn docdb.TxnID, commit hlc.Timestamp, step uint32) []byte {
	b := append([]byte{cmdApplyTxn}, txn[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(commit))
	return binary.BigEndian.AppendUint32(b, step)
}

// encodeRemoveTxn: remove txn's intents here; with partial, only those of
// write ids at or above fromWriteID (a savepoint rollback); a whole removal
// in steps as encodeApplyTxn.
func encodeRemoveTxn(txn docdb.TxnID, partial bool, fromWriteID, step uint32) []byte {
	b := append([]byte{cmdRemoveTxn}, txn[:]...)
	p := byte(0)
	if partial {
		p = 1
	}
	b = append(b, p)
	b = binary.BigEndian.AppendUint32(b, fromWriteID)
	return binary.BigEndian.AppendUint32(b, step)
}

// stepOf reads the optional step at the end of an apply or remove command
// of length n without it.
func stepOf(data []byte, n int) (int, bool) {
	switch len(data) {
	case n:
		return 0, true
	case n + 4:
		return int(binary.BigEndian.Uint32(data[n:])), true
	}
	return 0, false
}

// applyTxnCmd applies one of the transaction commands.
func (sm *stateMachine) applyTxnCmd(b *pebble.Batch, e consensus.Entry) any {
	t := (*Tablet)(sm)
	if err := t.servable(); err != nil {
		return err
	}
	data := e.Data
	switch data[0] {
	case cmdIntents:
		ht, txn, wid, ops, locks, spans, err := decodeIntents(data)
		if err != nil {
			return fmt.Errorf("tablet %d: index %d: %w", t.desc.ID, e.Index, err)
		}
		t.clock.ForceUpdate(ht)
		if len(ops) > 0 || len(locks) > 0 {
			known := t.txns.knownFor(txn, len(spans) > 0)
			if len(ops) > 0 {
				if err := docdb.WriteIntentsKnown(b, t.desc.ID, txn, ht, ops, wid, known); err != nil {
					return err
				}
			}
			if len(locks) > 0 {
				if err := docdb.WriteLockIntentsKnown(b, t.desc.ID, txn, ht, locks, wid+uint32(len(ops)), known); err != nil {
					return err
				}
			}
			if known != nil {
				t.txns.keepKnown(txn, known)
			}
		} else if len(spans) > 0 {
			t.txns.knownFor(txn, true)
		}
		if len(spans) > 0 {
			if err := docdb.WriteRangeLocks(b, t.desc.ID, txn, ht, spans, wid+uint32(len(ops))); err != nil {
				return err
			}
			if err := t.syncRangeLocks(b, txn); err != nil {
				return err
			}
		}
		t.txns.mu.Lock()
		t.txns.addLocked(txn, time.Now(), len(ops)+len(locks)+len(spans))
		t.txns.held.add(txn, docdb.WriteAccesses(ops), locks)
		t.txns.mu.Unlock()
		t.noteApplied(ht)
		return ht
	case cmdApplyTxn:
		step, ok := stepOf(data, 1+16+8)
		if !ok {
			return fmt.Errorf("tablet %d: index %d: %w", t.desc.ID, e.Index, errMalformedCmd)
		}
		var txn docdb.TxnID
		copy(txn[:], data[1:])
		commit := hlc.Timestamp(binary.BigEndian.Uint64(data[17:]))
		done, err := t.applyCommitted(b, txn, commit, step)
		if err != nil {
			return err
		}
		if !done {
			return errMoreIntents
		}
		return commit
	case cmdRemoveTxn:
		step, ok := stepOf(data, 1+16+1+4)
		if !ok {
			return fmt.Errorf("tablet %d: index %d: %w", t.desc.ID, e.Index, errMalformedCmd)
		}
		var txn docdb.TxnID
		copy(txn[:], data[1:])
		from := binary.BigEndian.Uint32(data[18:])
		if known := t.txns.takeKnown(txn); known != nil && data[17] == 1 && from > 0 {
			// Some of its intents go: the record keeps the others.
			if known.DropFrom(from) == nil {
				t.txns.keepKnown(txn, known)
			}
		}
		if data[17] == 1 {
			t.txns.widen(txn) // it stays live with fewer intents
		}
		var err error
		done := true
		if data[17] == 1 && from > 0 {
			// Everything from write id `from` on: after the last id
			// handed out before it.
			_, err = docdb.RemoveIntentsAfter(b, b, t.desc.ID, txn, from-1)
		} else if data[17] == 1 {
			_, err = docdb.RemoveIntents(b, b, t.desc.ID, txn)
		} else {
			_, done, err = docdb.RemoveIntentsPart(b, b, t.desc.ID, txn, step, t.txns.cursor(txn))
			if done {
				t.txns.remove(txn)
			}
		}
		if err != nil {
			return err
		}
		if !done {
			return errMoreIntents // range locks go with the last step
		}
		if t.ranges.has(txn) {
			if err := t.syncRangeLocks(b, txn); err != nil {
				return err
			}
		}
		return hlc.Timestamp(0)
	}
	return fmt.Errorf("tablet %d: unknown command at index %d", t.desc.ID, e.Index)
}

// applyCommitted applies committed txn's intents here at its commit time
// (into the apply batch b): at most step of them (0: all); done reports
// that none remain.
func (t *Tablet) applyCommitted(b *pebble.Batch, txn docdb.TxnID, commit hlc.Timestamp, step int) (done bool, err error) {
	t.clock.ForceUpdate(commit)
	if known := t.txns.takeKnown(txn); known != nil && !t.ranges.has(txn) {
		if _, err := docdb.ApplyKnownIntents(b, t.desc.ID, txn, commit, known); err != nil {
			return false, err
		}
	} else if t.txns.gone(txn) && !t.ranges.has(txn) {
		// Nothing of it is here: an earlier apply took its intents (a
		// commit's apply comes to a tablet by several ways, the
		// coordinator's resolve, a piggybacked one, a reader's queued one,
		// and only the first finds them), in an earlier cycle or earlier in
		// this one. The walk would find nothing at the cost of seeking the
		// index: 2.8 of a TPC-B transaction's 12 applies were such repeats.
		t.noteApplied(commit)
		return true, nil
	} else if _, done, err := docdb.ApplyIntentsPart(b, b, t.desc.ID, txn, commit, step, t.txns.cursor(txn)); err != nil {
		return false, err
	} else if !done {
		// Still live: the proposer proposes the next step; readers and
		// writers that meet the rest resolve them as before.
		t.noteApplied(commit)
		return false, nil
	}
	if t.ranges.has(txn) {
		t.ranges.replaceTxn(txn, nil) // ApplyIntents released them
	}
	t.noteApplied(commit)
	t.txns.remove(txn)
	if h := hooks.Load(); h != nil && h.txnApplied != nil {
		h.txnApplied(t, txn)
	}
	return true, nil
}

func (t *Tablet) noteApplied(ht hlc.Timestamp) {
	for cur := t.maxApplied.Load(); uint64(ht) > cur && !t.maxApplied.CompareAndSwap(cur, uint64(ht)); cur = t.maxApplied.Load() {
	}
}

// ---- Leader side: intents with conflict detection ----

// withoutWritten drops from locks the intents that ops write too: an
// UPDATE's FOR NO KEY UPDATE lock takes the weak write on its row that the
// column writes take already, and each intent is two keys written and two
// deleted on every replica.
func withoutWritten(locks []docdb.Access, ops []docdb.WriteOp) []docdb.Access {
	if len(locks) == 0 || len(ops) == 0 {
		return locks
	}
	type access struct {
		row  string
		col  uint32
		kind docdb.IntentType
	}
	written := map[access]bool{}
	for _, a := range docdb.WriteAccesses(ops) {
		written[access{string(a.Key.RowKey), a.Key.Column, a.Type}] = true
	}
	out := locks[:0:0]
	for _, a := range locks {
		if !written[access{string(a.Key.RowKey), a.Key.Column, a.Type}] {
			out = append(out, a)
		}
	}
	return out
}

// lockAccesses are the intents a row lock takes (see LockMode).
func lockAccesses(rows [][]byte, mode LockMode) []docdb.Access {
	var out []docdb.Access
	for _, r := range rows {
		k := docdb.IntentKey{RowKey: r}
		if mode == LockKeyShare {
			out = append(out, docdb.Access{Key: k, Type: docdb.WeakRead})
			continue
		}
		out = append(out, docdb.Access{Key: k, Type: docdb.StrongRead})
		switch mode {
		case LockNoKeyUpdate:
			out = append(out, docdb.Access{Key: k, Type: docdb.WeakWrite})
		case LockUpdate:
			out = append(out, docdb.Access{Key: k, Type: docdb.WriteLock})
		}
	}
	return out
}

// newestConflicting is the newest committed version of row k that a
// snapshot writer or locker w conflicts with: any version of the row, but
// for a row w only locks FOR KEY SHARE, only its insertion or deletion.
func newestConflicting(eng pebble.Reader, k string, w *TxnWrite) (hlc.Timestamp, error) {
	if w.Lock == LockKeyShare && !slices.ContainsFunc(w.Ops, func(op docdb.WriteOp) bool { return string(op.RowKey) == k }) {
		return docdb.NewestRowLevelVersion(eng, []byte(k))
	}
	return docdb.NewestVersion(eng, []byte(k))
}

// waitPoll is how often a waiter re-checks the transactions it waits for
// (expiry of an abandoned one) and looks for deadlocks.
const waitPoll = 200 * time.Millisecond

// deadlockDelay is how long a write waits before it reports its wait and
// looks for a deadlock, as PostgreSQL's deadlock_timeout (1 s there). Most
// waits, for a hot row's last writer, end sooner, and each report and
// search costs status calls: without the delay they were 9 of a TPC-B
// transaction's 14 remote calls. A deadlock is still found: each of its
// waiters reports and searches once it has waited this long.
const deadlockDelay = 100 * time.Millisecond

// WriteTxn writes a transaction's intents and locks after checking for
// conflicts with other transactions, waiting for them as w.Wait says.
func (t *Tablet) WriteTxn(ctx context.Context, w *TxnWrite) (TxnWriteResult, error) {
	if t.resolver == nil {
		return TxnWriteResult{}, ErrNoResolver
	}
	if w.Txn.IsZero() {
		return TxnWriteResult{}, errors.New("tablet: WriteTxn without a transaction id")
	}
	rows := map[string]bool{}
	for _, op := range w.Ops {
		if err := t.checkSpan(op.RowKey); err != nil {
			return TxnWriteResult{}, err
		}
		rows[string(op.RowKey)] = true
	}
	for _, r := range w.Locks {
		if err := t.checkSpan(r); err != nil {
			return TxnWriteResult{}, err
		}
		rows[string(r)] = true
	}
	keys := make([]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lockRows := w.Locks
	var skipped [][]byte
	waitStart := time.Now()
	// committed: the commit times of committed transactions met here whose
	// intents are still being applied (see ridingApplies).
	var committed map[docdb.TxnID]hlc.Timestamp
	for {
		release, err := t.latches.acquireWrite(ctx, keys)
		if err != nil {
			return TxnWriteResult{}, err
		}
		// Conflicts are only meaningful at the leaseholder.
		if err := t.leaderReady(ctx); err != nil {
			release()
			return TxnWriteResult{}, err
		}
		locks := lockAccesses(lockRows, w.Lock)
		want := append(docdb.WriteAccesses(w.Ops), locks...)
		conflicts, err := t.intentConflicts(w.Txn, want)
		if err != nil {
			release()
			return TxnWriteResult{}, err
		}
		conflicts = append(conflicts, t.ranges.conflicts(w.Txn, want)...)
		riding, rides := t.ridingApplies(conflicts, w.Ops, committed)
		if len(conflicts) == 0 || rides {
			if rides {
				// Their applies go in front of this entry or in entries
				// of their own; their commit times are below this write's.
				t.clock.ForceUpdate(riding)
			}
			if w.CheckNewer {
				if riding > w.ReadTime {
					release()
					return TxnWriteResult{}, fmt.Errorf("%w: a transaction committed at %s, after the transaction's read time %s, wrote the rows", ErrTxnConflict, riding, w.ReadTime)
				}
				for _, k := range keys {
					newest, err := newestConflicting(t.eng, k, w)
					if err != nil {
						release()
						return TxnWriteResult{}, err
					}
					if newest > w.ReadTime {
						release()
						return TxnWriteResult{}, fmt.Errorf("%w: row %x has a version at %s after the transaction's read time %s", ErrTxnConflict, k, newest, w.ReadTime)
					}
				}
			}
			if w, err = t.txnInserts(ctx, w); err != nil {
				release()
				return TxnWriteResult{}, err
			}
			var adds docdb.Resolved
			if w, adds, err = t.txnAdds(ctx, w); err != nil {
				release()
				return TxnWriteResult{}, err
			}
			if len(w.Ops) == 0 && len(locks) == 0 {
				release()
				return TxnWriteResult{Skipped: skipped, Missing: adds.Missing}, nil
			}
			locks = withoutWritten(locks, w.Ops)
			res := TxnWriteResult{Skipped: skipped, Missing: adds.Missing, Sums: adds.Sums}
			var proposed func(hlc.Timestamp)
			if w.Proposed != nil {
				proposed = func(ht hlc.Timestamp) {
					early := res
					early.HT = ht
					w.Proposed(early)
				}
			}
			res.HT, err = t.proposeLatchedThen(ctx, func(ht hlc.Timestamp) []byte { return encodeIntents(ht, w, locks, nil) }, release, proposed)
			return res, err
		}
		release()
		learn := &committed
		if docdb.HasInserts(w.Ops) {
			learn = nil // the duplicate check needs the rows applied
		}
		pending, err := t.resolveConflicts(ctx, conflicts, learn)
		if err != nil {
			return TxnWriteResult{}, err
		}
		if len(pending) == 0 {
			continue // they were committed or aborted and are gone now
		}
		switch w.Wait {
		case NoWait:
			return TxnWriteResult{}, fmt.Errorf("%w: row locked by transaction %s", ErrLockNotAvailable, pending[0])
		case FailOnConflict:
			return TxnWriteResult{}, fmt.Errorf("%w: conflicts with pending transaction %s", ErrTxnConflict, pending[0])
		case SkipLocked:
			if len(w.Ops) > 0 {
				return TxnWriteResult{}, errors.New("tablet: SKIP LOCKED applies to locks only")
			}
			blocked := map[string]bool{}
			for _, c := range conflicts {
				for _, p := range pending {
					if c.Txn == p {
						blocked[string(c.Key.RowKey)] = true
					}
				}
			}
			var keep [][]byte
			for _, r := range lockRows {
				if blocked[string(r)] {
					skipped = append(skipped, r)
				} else {
					keep = append(keep, r)
				}
			}
			lockRows = keep
			continue
		}
		if err := t.waitForTxns(ctx, w.Txn, pending, waitStart); err != nil {
			return TxnWriteResult{}, err
		}
	}
}

// resolveConflicts resolves the transactions of conflicts (see
// resolveTxn) and returns the pending ones.
func (t *Tablet) resolveConflicts(ctx context.Context, conflicts []docdb.Conflict, committed *map[docdb.TxnID]hlc.Timestamp) ([]docdb.TxnID, error) {
	seen := map[docdb.TxnID]bool{}
	var pending []docdb.TxnID
	for _, c := range conflicts {
		if seen[c.Txn] {
			continue
		}
		seen[c.Txn] = true
		still, err := t.resolveTxn(ctx, c.Txn, committed)
		if err != nil {
			return nil, err
		}
		if still {
			pending = append(pending, c.Txn)
		}
	}
	return pending, nil
}

// waitForTxns waits until one of the pending transactions finishes here,
// or a poll interval passes; once the write has waited deadlockDelay it
// reports the wait for deadlock detection and aborts this transaction if
// it is the victim of a deadlock.
func (t *Tablet) waitForTxns(ctx context.Context, self docdb.TxnID, pending []docdb.TxnID, since time.Time) error {
	waited := time.Since(since)
	if waited < deadlockDelay {
		return t.waitAny(ctx, pending, deadlockDelay-waited)
	}
	// Our own record may have been aborted meanwhile (expired, or chosen
	// as a victim by another waiter): the report answers with it.
	st, err := t.resolver.ReportWait(ctx, self, pending)
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	if err == nil && st.State == TxnAborted {
		return fmt.Errorf("%w: %s", ErrTxnAborted, self)
	}
	if victim, found, err := t.findDeadlock(ctx, self, pending); err != nil {
		return err
	} else if found && victim == self {
		_, _ = t.resolver.Abort(ctx, self)
		return fmt.Errorf("%w: transaction %s waits for %s, which waits for it (after %v)", ErrDeadlock, self, pending[0], time.Since(since).Round(time.Millisecond))
	}
	return t.waitAny(ctx, pending, waitPoll)
}

// waitAny waits until the intents here of one of the pending transactions
// are resolved, or poll passes (an abandoned transaction is noticed by the
// next status check).
func (t *Tablet) waitAny(ctx context.Context, pending []docdb.TxnID, poll time.Duration) error {
	stop := make(chan struct{})
	defer close(stop)
	woken := make(chan struct{}, len(pending))
	for _, p := range pending {
		ch := t.txns.waitFor(p)
		go func() {
			select {
			case <-ch:
				woken <- struct{}{}
			case <-stop:
			}
		}()
	}
	timer := time.NewTimer(poll)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
	case <-woken:
	}
	return nil
}

// findDeadlock follows the wait-for edges from self's blockers through the
// status records. If they lead back to self, the cycle's victim is its
// youngest transaction (the highest id: ids start with their start time).
func (t *Tablet) findDeadlock(ctx context.Context, self docdb.TxnID, blockers []docdb.TxnID) (docdb.TxnID, bool, error) {
	const maxVisit = 64
	parent := map[docdb.TxnID]docdb.TxnID{}
	queue := append([]docdb.TxnID(nil), blockers...)
	for _, b := range blockers {
		parent[b] = self
	}
	for visited := 0; len(queue) > 0 && visited < maxVisit; visited++ {
		cur := queue[0]
		queue = queue[1:]
		st, err := t.resolver.Status(ctx, cur, 0)
		if err != nil {
			if ctx.Err() != nil {
				return docdb.TxnID{}, false, ctx.Err()
			}
			continue
		}
		if st.State != TxnPending {
			continue
		}
		for _, next := range st.WaitingFor {
			if next == self {
				// The cycle: self -> ... -> cur -> self.
				victim := self
				for n := cur; n != self; n = parent[n] {
					if string(n[:]) > string(victim[:]) {
						victim = n
					}
				}
				return victim, true, nil
			}
			if _, ok := parent[next]; !ok {
				parent[next] = cur
				queue = append(queue, next)
			}
		}
	}
	return docdb.TxnID{}, false, nil
}

// proposeLatched stamps and replicates a command under the latches the
// caller took; it owns release from here on. If ctx ends while the
// proposal is in flight, the latches stay held until its outcome is known:
// the command may still apply at its hybrid time, and a read at or above
// that time must wait for it rather than miss it.
func (t *Tablet) proposeLatched(ctx context.Context, encode func(ht hlc.Timestamp) []byte, release func()) (hlc.Timestamp, error) {
	return t.proposeLatchedThen(ctx, encode, release, nil)
}

// proposeLatchedThen is proposeLatched that calls proposed (when not nil)
// with the entry's hybrid time once the entry is proposed, before it is
// replicated (a pipelined write's provisional answer).
func (t *Tablet) proposeLatchedThen(ctx context.Context, encode func(ht hlc.Timestamp) []byte, release func(), proposed func(hlc.Timestamp)) (hlc.Timestamp, error) {
	// The lease implies every earlier leader's entries are applied here, so
	// the clock is already past their hybrid times; leaderReady also waits
	// out what an earlier leader may have handed out in memory only.
	if err := t.leaderReady(ctx); err != nil {
		release()
		return 0, err
	}
	ht, done := t.stamp()
	pd, err := t.group.ProposeAsync(t.withQueuedApplies(encode(ht)))
	if err != nil {
		done()
		release()
		return 0, err
	}
	if proposed != nil {
		proposed(ht)
	}
	res, err := pd.Wait(ctx)
	if !pd.Resolved() {
		go func() {
			_, _ = pd.Await()
			done()
			release()
		}()
		return 0, err
	}
	done()
	release()
	if err != nil {
		return 0, err
	}
	if e, ok := res.(error); ok {
		return 0, e
	}
	return res.(hlc.Timestamp), nil
}

// ApplyTxn applies txn's intents here as versions at its commit time.
// Idempotent.
func (t *Tablet) ApplyTxn(ctx context.Context, txn docdb.TxnID, commit hlc.Timestamp) error {
	return t.inSteps(ctx, func() []byte { return encodeApplyTxn(txn, commit, uint32(intentStep.Load())) })
}

// inSteps proposes cmd until a step leaves nothing to do (intentStep).
func (t *Tablet) inSteps(ctx context.Context, cmd func() []byte) error {
	for {
		_, err := t.proposeLatched(ctx, func(hlc.Timestamp) []byte { return cmd() }, func() {})
		if !errors.Is(err, errMoreIntents) {
			return err
		}
	}
}

// applySoon applies a committed transaction a read found unapplied, in the
// background: its coordinator's apply may be lost or still far from done.
// One at a time per transaction.
func (t *Tablet) applySoon(txn docdb.TxnID, commit hlc.Timestamp) {
	if _, busy := t.applying.LoadOrStore(txn, struct{}{}); busy {
		return
	}
	go func() {
		defer t.applying.Delete(txn)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		_ = t.ApplyTxnLater(ctx, txn, commit)
	}()
}

// RemoveTxn removes txn's intents here (all, or with partial those of
// write ids >= fromWriteID). Idempotent.
func (t *Tablet) RemoveTxn(ctx context.Context, txn docdb.TxnID, partial bool, fromWriteID uint32) error {
	return t.inSteps(ctx, func() []byte { return encodeRemoveTxn(txn, partial, fromWriteID, uint32(intentStep.Load())) })
}

// ---- Leader side: reads that see transactions ----

// TxnRead configures a read inside (or outside) a transaction.
type TxnRead struct {
	Txn docdb.TxnID // zero: not in a transaction
	// ReadTime 0: pick the current time (returned).
	ReadTime hlc.Timestamp
	// GlobalLimit is the end of the clock uncertainty window (read time +
	// maximum clock offset of the transaction's first read); 0: none.
	GlobalLimit hlc.Timestamp
	// AllowRestart lets the tablet move the read time itself when it
	// finds a value in the uncertainty window (nothing was read at the
	// old time yet); otherwise it returns *ReadRestartError.
	AllowRestart bool
}

// readView is what a read reads: the engine, or an overlay over it, on
// span (the read's span, or the part of it its window covers).
type readView struct {
	r    pebble.Reader
	span storage.Span
}

// resume is the resume key of a read of rv that stopped at resume (nil:
// at the end of rv.span) when it was asked for span: where rv's window cut
// the span, the rest is still to read.
func (rv readView) resume(span storage.Span, resume []byte) []byte {
	if resume == nil && !bytes.Equal(rv.span.End, span.End) {
		return rv.span.End
	}
	return resume
}

// intentWindow is the window of a scan's intent look (see readTxn): a
// forward scan's page needs no more rows than its limit. A reverse scan
// looks at every intent of its span.
func (o *ScanOptions) intentWindow() int {
	if o.Reverse {
		return 0
	}
	return max(int(o.Limit), minIntentWindow)
}

// minIntentWindow: the fewest rows with intents a forward scan looks at.
const minIntentWindow = 1024

// readIntentTxns lists the transactions other than reader with write
// intents on span, on its first window rows with intents if window > 0
// (next: the first row past them; pointWindow: span is one row), nothing
// to look at when the tablet, or the row of a point read, has none.
func (t *Tablet) readIntentTxns(span storage.Span, reader docdb.TxnID, window int) ([]docdb.TxnID, []byte, error) {
	if !t.txns.any() {
		return nil, nil, nil
	}
	if window == pointWindow {
		if writers, exact := t.txns.heldWriters(span.Start, reader); exact {
			return writers, nil, nil
		}
	}
	rows, next, err := docdb.ReadIntentsUpTo(t.eng, span, reader, window)
	if err != nil {
		return nil, nil, err
	}
	seen := map[docdb.TxnID]bool{}
	var out []docdb.TxnID
	for _, r := range rows {
		for _, in := range r.Others {
			if !seen[in.Txn] {
				seen[in.Txn] = true
				out = append(out, in.Txn)
			}
		}
	}
	return out, next, nil
}

// resolveReadIntents asks the status of the transactions whose intents a
// read found. It returns the committed ones the read must see or restart
// for, those committed at or below commitLimit, which the caller reads as
// applied. A pending one is pushed to commit (if ever)
// above push, the read's local limit. Call it under the read's latches.
func (t *Tablet) resolveReadIntents(ctx context.Context, txns []docdb.TxnID, push, commitLimit hlc.Timestamp) (applied []docdb.TxnID, commit []hlc.Timestamp, err error) {
	if len(txns) > 0 && noWait(ctx) {
		return nil, nil, ErrWouldWait // a status lookup may be a call to another node
	}
	for _, txn := range txns {
		if t.resolver == nil {
			return nil, nil, ErrNoResolver
		}
		st, err := t.statusOf(ctx, txn, push)
		if err != nil {
			return nil, nil, err
		}
		if st.State == TxnCommitted && st.CommitHT <= commitLimit {
			applied = append(applied, txn)
			commit = append(commit, st.CommitHT)
		}
	}
	return applied, commit, nil
}

// leaderReady checks the lease and, after a leader change, waits out the
// clock offset: the previous leader may have handed out hybrid times (a
// read at a time ahead of its clock, a pushed status record) up to the
// maximum offset ahead of our clock, and none of our writes may land below
// them.
func (t *Tablet) leaderReady(ctx context.Context) error {
	term, ok := t.group.LeaseTerm()
	if !ok {
		return t.notLeader()
	}
	if err := t.servable(); err != nil {
		return err
	}
	t.leaseMu.Lock()
	if t.leaseTerm != term {
		t.leaseTerm = term
		t.leaseReady = time.Now().Add(t.clock.MaxOffset())
		if term == consensus.InitialTerm+1 {
			// The first leader a group ever had follows nobody.
			t.leaseReady = time.Time{}
		}
	}
	ready := t.leaseReady
	t.leaseMu.Unlock()
	if d := time.Until(ready); d > 0 {
		if noWait(ctx) {
			return ErrWouldWait
		}
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// GetTxn reads one row as a transaction (or a plain read that must see
// committed transactions) does. It returns the read time used.
func (t *Tablet) GetTxn(ctx context.Context, rowKey []byte, columns []uint32, o TxnRead) (docdb.Row, bool, hlc.Timestamp, error) {
	if err := t.checkSpan(rowKey); err != nil {
		return docdb.Row{}, false, 0, err
	}
	span := docdb.RowSpan(rowKey)
	var row docdb.Row
	var found bool
	rt, err := t.readTxn(ctx, span, o, pointWindow, func() (func(), error) {
		return t.latches.acquireRead(ctx, string(rowKey))
	}, func(rv readView, at hlc.Timestamp, unc *docdb.Uncertainty) error {
		var err error
		row, found, err = docdb.GetRow(rv.r, rowKey, docdb.ReadOptions{ReadTime: at, Columns: columns, Uncertainty: unc})
		return err
	}, func(rv readView, limit hlc.Timestamp) (hlc.Timestamp, bool, error) {
		r, f, err := docdb.GetRow(rv.r, rowKey, docdb.ReadOptions{ReadTime: limit, Columns: columns})
		if err != nil {
			return 0, false, err
		}
		return r.WriteTime, rowSignature(r, f) != rowSignature(row, found), nil
	})
	return row, found, rt, err
}

// ScanTxn is Scan for transactions; see GetTxn.
func (t *Tablet) ScanTxn(ctx context.Context, opts ScanOptions, o TxnRead) ([]docdb.Row, []byte, hlc.Timestamp, error) {
	span := clip(opts.Span, t.desc.Span)
	var rows []docdb.Row
	var resume []byte
	if err := opts.checkScan(); err != nil {
		return nil, nil, 0, err
	}
	scan := func(rv readView, at hlc.Timestamp, unc *docdb.Uncertainty) ([]docdb.Row, []byte, error) {
		return docdb.Scan(rv.r, opts.docdb(rv.span, at, unc, nil))
	}
	rt, err := t.readTxn(ctx, span, o, opts.intentWindow(), func() (func(), error) {
		return t.latches.acquireSpan(ctx, span)
	}, func(rv readView, at hlc.Timestamp, unc *docdb.Uncertainty) error {
		var err error
		rows, resume, err = scan(rv, at, unc)
		resume = rv.resume(span, resume)
		return err
	}, func(rv readView, limit hlc.Timestamp) (hlc.Timestamp, bool, error) {
		rs, _, err := scan(rv, limit, nil)
		if err != nil {
			return 0, false, err
		}
		var newest hlc.Timestamp
		for _, r := range rs {
			newest = max(newest, r.WriteTime)
		}
		return newest, !sameRows(rs, rows), nil
	})
	return rows, resume, rt, err
}

// readTxn runs a read: latch, resolve intents, read at the read time, and
// check the uncertainty window, restarting as allowed.
//
// The intents are looked at before the read time is picked. Applying a
// transaction here moves the clock past its commit time before its versions
// reach the engine (cmdApplyTxn), so one applied before the look is below a
// read time picked after it, or within the local limit of a fixed one; one
// applied after it left its intents in the look and is resolved through its
// status record.
//
// A committed transaction whose intents are not applied yet is read through
// an overlay (docdb.OverlayIntents): its versions on the read's span, in a
// throwaway batch over the engine, so that no read waits for an apply (a
// bulk load's takes minutes; a hot row's costs a Raft round). The apply
// itself goes on (applySoon). A read with a window (window > 0, forward
// scans) looks at the intents of that many rows at most and reads up to
// the next row with intents (rv.span is cut there): a scan's page costs
// what the page holds, not every intent of a large transaction.
//
// read reads at the read time and notes the versions it meets in the
// uncertainty window (unc, nil when there is none); readLimit, called only
// when it noted one, reads at the window's limit and says whether that
// changes the answer (nil for reads that never have a window).
func (t *Tablet) readTxn(ctx context.Context, span storage.Span, o TxnRead, window int, latch func() (func(), error),
	read func(rv readView, at hlc.Timestamp, unc *docdb.Uncertainty) error,
	readLimit func(rv readView, limit hlc.Timestamp) (newest hlc.Timestamp, differs bool, err error)) (hlc.Timestamp, error) {
	for attempt := 0; ; attempt++ {
		release, err := latch()
		if err != nil {
			return 0, err
		}
		if err := t.leaderReady(ctx); err != nil {
			release()
			return 0, err
		}
		txns, next, err := t.readIntentTxns(span, o.Txn, window)
		if err != nil {
			release()
			return 0, err
		}
		rv := readView{r: t.eng, span: span}
		if next != nil {
			rv.span.End = next
		}
		rt, err := t.readTime(o.ReadTime)
		if err != nil {
			release()
			return 0, err
		}
		// The uncertainty window of the versions here ends at the global
		// limit, or at our clock now if earlier: a version written here
		// after this moment was written after the read began.
		limit := rt
		if o.GlobalLimit > rt {
			limit = min(o.GlobalLimit, t.clock.Now())
		}
		// Not so a committed transaction's intents: its commit time comes
		// from its status tablet's clock, which may be ahead of ours
		// although the commit was acknowledged before this read began. It
		// is uncertain up to the global limit; when we pick the read time,
		// up to the maximum clock offset above it (then the read moves past
		// it: applying it moved our clock past its commit time).
		commitLimit := max(limit, o.GlobalLimit)
		if o.ReadTime == 0 {
			commitLimit = max(commitLimit, rt.Add(t.clock.MaxOffset()))
		}
		apply, commits, err := t.resolveReadIntents(ctx, txns, limit, commitLimit)
		if err != nil {
			release()
			return 0, err
		}
		if newest := slices.Max(append(commits, 0)); newest > limit {
			// As an apply would: move the clock past the commit, then
			// pick the read time and the window again.
			release()
			t.clock.ForceUpdate(newest)
			continue
		}
		var overlay *pebble.Batch
		if len(apply) > 0 {
			overlay = t.eng.NewIndexedBatch()
			// The intents are read from one snapshot: an apply committed
			// meanwhile would take an intent from under its index entry.
			snap := t.eng.NewSnapshot()
			for i, txn := range apply {
				if _, err := docdb.OverlayIntents(snap, overlay, t.desc.ID, txn, commits[i], rv.span); err != nil {
					_ = snap.Close()
					_ = overlay.Close()
					release()
					return 0, err
				}
				t.applySoon(txn, commits[i])
			}
			_ = snap.Close()
			rv.r = overlay
		}
		done := func() {
			if overlay != nil {
				_ = overlay.Close()
			}
			release()
		}
		// The read notes the versions it meets in the uncertainty window;
		// only if it met one does a read at the limit decide whether they
		// change the answer.
		var unc *docdb.Uncertainty
		if limit > rt {
			unc = &docdb.Uncertainty{Limit: limit}
		}
		if err := read(rv, rt, unc); err != nil {
			done()
			return 0, err
		}
		if unc != nil && unc.Newest != 0 {
			newest, differs, err := readLimit(rv, limit)
			if err != nil {
				done()
				return 0, err
			}
			if differs || newest > rt {
				done()
				restart := limit
				if !differs && newest > rt {
					restart = newest
				}
				if !o.AllowRestart || attempt >= 10 {
					return 0, &ReadRestartError{RestartTime: restart}
				}
				o.ReadTime = restart
				continue
			}
		}
		done()
		return rt, nil
	}
}

// rowSignature is a comparable summary of a read row (to compare the reads
// at the read time and at the uncertainty limit).
func rowSignature(r docdb.Row, found bool) string {
	if !found {
		return "-"
	}
	s := fmt.Sprintf("%x@%d:", r.Key, r.WriteTime)
	for _, c := range r.Columns {
		s += fmt.Sprintf("%d=%s;", c.ID, c.Value)
	}
	return s + "|"
}

// ---- Background resolution ----

// StaleTxns lists the transactions with intents here first seen more than
// age ago: the tserver's cleanup loop resolves them (a coordinator that
// died before applying or removing them).
func (t *Tablet) StaleTxns(age time.Duration) []docdb.TxnID {
	t.txns.mu.Lock()
	defer t.txns.mu.Unlock()
	var out []docdb.TxnID
	for id, seen := range t.txns.live {
		if time.Since(seen) > age {
			out = append(out, id)
		}
	}
	return out
}

// ResolveTxn asks txn's status and applies or removes its intents here if
// it has finished. It reports whether the transaction is still pending.
func (t *Tablet) ResolveTxn(ctx context.Context, txn docdb.TxnID) (pending bool, err error) {
	return t.resolveTxn(ctx, txn, nil)
}

// resolveTxn is ResolveTxn; with committed set, a committed transaction is
// not applied here and now: its commit time is noted in *committed and it
// is applied in the background (a write that need not wait for the apply,
// see ridingApplies). A transaction noted there already is not pending.
func (t *Tablet) resolveTxn(ctx context.Context, txn docdb.TxnID, committed *map[docdb.TxnID]hlc.Timestamp) (pending bool, err error) {
	if t.resolver == nil {
		return false, ErrNoResolver
	}
	if committed != nil {
		if _, known := (*committed)[txn]; known {
			return false, nil
		}
	}
	st, err := t.statusOf(ctx, txn, 0)
	if err != nil {
		return false, err
	}
	switch st.State {
	case TxnCommitted:
		if committed == nil {
			return false, t.ApplyTxn(ctx, txn, st.CommitHT)
		}
		if *committed == nil {
			*committed = map[docdb.TxnID]hlc.Timestamp{}
		}
		(*committed)[txn] = st.CommitHT
		t.applySoon(txn, st.CommitHT)
		return false, nil
	case TxnAborted:
		return false, t.RemoveTxn(ctx, txn, false, 0)
	}
	return true, nil
}

// statusOf is the status of a transaction whose intents are here: from
// the queue of deferred applies if it is there (committed), else from its
// status record (see Resolver.Status).
func (t *Tablet) statusOf(ctx context.Context, txn docdb.TxnID, readTime hlc.Timestamp) (TxnStatus, error) {
	if commit, ok := t.queuedCommit(txn); ok {
		return TxnStatus{State: TxnCommitted, CommitHT: commit}, nil
	}
	return t.resolver.Status(ctx, txn, readTime)
}

// IntentCount counts the intents and range locks stored for this tablet
// (tests and metrics). It reads one snapshot: an apply or removal
// committing midway would otherwise leave an index entry whose intent is
// gone.
func (t *Tablet) IntentCount() (int, error) {
	snap := t.eng.NewSnapshot()
	defer snap.Close()
	txns, err := docdb.TxnsWithIntents(snap, t.desc.ID)
	if err != nil {
		return 0, err
	}
	ranges, err := docdb.RangeLocks(snap, t.desc.ID)
	if err != nil {
		return 0, err
	}
	n := len(ranges)
	for _, id := range txns {
		ins, err := docdb.IntentsOf(snap, t.desc.ID, id)
		if err != nil {
			return 0, err
		}
		n += len(ins)
	}
	return n, nil
}

// UpdateRow reads a row at the current time with the row latched for
// writing, and writes the ops fn returns (none: nothing to write) before
// releasing it: a read-modify-write that no other write of the row can
// interleave with. Status records use it.
func (t *Tablet) UpdateRow(ctx context.Context, rowKey []byte, fn func(row docdb.Row, found bool) ([]docdb.WriteOp, error)) error {
	if err := t.checkSpan(rowKey); err != nil {
		return err
	}
	release, err := t.latches.acquireWrite(ctx, []string{string(rowKey)})
	if err != nil {
		return err
	}
	if err := t.leaderReady(ctx); err != nil {
		release()
		return err
	}
	term, _ := t.group.LeaseTerm()
	row, found, cached, call := t.updates.begin(rowKey, term)
	if !cached {
		var err error
		if row, found, err = docdb.GetRow(t.eng, rowKey, docdb.ReadOptions{ReadTime: t.clock.Now()}); err != nil {
			release()
			return err
		}
	}
	ops, err := fn(row, found)
	if err != nil || len(ops) == 0 {
		if err == nil && term != 0 {
			t.updates.put(rowKey, call, term, row, found)
		}
		release()
		return err
	}
	ht, err := t.writeLatched(ctx, &docdb.WriteBatch{Ops: ops}, release)
	if err == nil && term != 0 {
		if w, ok := written(rowKey, row, ops, ht); ok {
			t.updates.put(rowKey, call, term, w, true)
		}
	}
	return err
}

// plainWriteConflicts returns the intents and range locks of transactions
// that a write outside any transaction of ops conflicts with. Cheap when
// the tablet has no transactions.
func (t *Tablet) plainWriteConflicts(ops []docdb.WriteOp) ([]docdb.Conflict, error) {
	if !t.txns.any() {
		return nil, nil
	}
	want := docdb.WriteAccesses(ops)
	conflicts, err := t.intentConflicts(docdb.TxnID{}, want)
	if err != nil {
		return nil, err
	}
	return append(conflicts, t.ranges.conflicts(docdb.TxnID{}, want)...), nil
}
