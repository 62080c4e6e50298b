package tablet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/storage"
)

// Range read locks (phantom protection for SERIALIZABLE scans; see
// docdb/rangelocks.go). A serializable scan reads under a span latch and,
// before releasing it, replicates a range lock on the span it covered as
// part of a cmdIntents entry, so no write can slip in between the read and
// the lock. Writes check the locks of other transactions next to their
// intents (WriteTxn, Write), and wait, fail or break a deadlock with the
// same machinery as for a row lock.
//
// The durable locks (docdb.RangeLocks) are the source of truth; the tablet
// mirrors them in memory so that a write's check is a counter load when the
// tablet has none. Every replica keeps the mirror up to date as it applies
// the commands that change the locks (all replicas apply the same ones, so a
// new leader has it ready), and reloads it from the engine on open and after
// a snapshot; split children load theirs when they open.

// rangeLockSet is the in-memory mirror of a tablet's range locks.
type rangeLockSet struct {
	count atomic.Int64 // len(locks), for the hot path
	mu    sync.RWMutex
	locks []docdb.RangeLock
}

// set replaces every lock (loaded from the engine).
func (s *rangeLockSet) set(locks []docdb.RangeLock) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.locks = locks
	s.count.Store(int64(len(locks)))
}

// replaceTxn replaces the locks of txn with locks.
func (s *rangeLockSet) replaceTxn(txn docdb.TxnID, locks []docdb.RangeLock) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := s.locks[:0:0]
	for _, l := range s.locks {
		if l.Txn != txn {
			keep = append(keep, l)
		}
	}
	s.locks = append(keep, locks...)
	s.count.Store(int64(len(s.locks)))
}

// has reports whether txn holds a range lock here.
func (s *rangeLockSet) has(txn docdb.TxnID) bool {
	if s.count.Load() == 0 {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, l := range s.locks {
		if l.Txn == txn {
			return true
		}
	}
	return false
}

// conflicts returns the range locks of transactions other than txn that
// the wanted accesses conflict with (docdb.RangeLockConflicts).
func (s *rangeLockSet) conflicts(txn docdb.TxnID, want []docdb.Access) []docdb.Conflict {
	if s.count.Load() == 0 {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return docdb.RangeLockConflicts(s.locks, txn, want)
}

// syncRangeLocks reloads txn's locks into the mirror from r (the apply
// batch, which sees what earlier commands of the batch wrote).
func (t *Tablet) syncRangeLocks(r pebble.Reader, txn docdb.TxnID) error {
	locks, err := docdb.RangeLocksOf(r, t.desc.ID, txn)
	if err != nil {
		return err
	}
	t.ranges.replaceTxn(txn, locks)
	return nil
}

// RangeLockCount is the number of range locks this replica holds (tests
// and metrics).
func (t *Tablet) RangeLockCount() int { return int(t.ranges.count.Load()) }

// ScanLock is the range lock ScanLocked takes.
type ScanLock struct {
	Txn     docdb.TxnID
	WriteID uint32
	// Wait: what to do on a conflicting write intent of a pending
	// transaction (SkipLocked waits: a scan skips nothing).
	Wait WaitPolicy
}

// ScanLocked is the scan of a SERIALIZABLE transaction. Under a span
// latch it reads the latest data, then read-locks the span it covered
// through Raft before releasing the latch: opts.Span clipped to the
// tablet, and when the limit cut the scan short only up to the end of the
// last row returned (the start of that row when reversed). Write intents of
// other transactions inside the covered span (inserts, updates, deletes,
// FOR UPDATE locks) are conflicts, resolved or waited for as lock.Wait
// says, with deadlock detection.
//
// It returns the rows, the covered span, whether the limit cut the scan
// short (the rest starts where covered ends: its End, or its Start when
// reversed, so that consecutive pages lock adjacent spans), and the read
// time.
func (t *Tablet) ScanLocked(ctx context.Context, opts ScanOptions, lock ScanLock) (rows []docdb.Row, covered storage.Span, more bool, rt hlc.Timestamp, err error) {
	if t.resolver == nil {
		return nil, storage.Span{}, false, 0, ErrNoResolver
	}
	if lock.Txn.IsZero() {
		return nil, storage.Span{}, false, 0, errors.New("tablet: ScanLocked without a transaction id")
	}
	span := clip(opts.Span, t.desc.Span)
	if span.End != nil && bytes.Compare(span.Start, span.End) >= 0 {
		return nil, span, false, t.clock.Now(), nil
	}
	waitStart := time.Now()
	for {
		release, err := t.latches.acquireSpan(ctx, span)
		if err != nil {
			return nil, storage.Span{}, false, 0, err
		}
		if err := t.leaderReady(ctx); err != nil {
			release()
			return nil, storage.Span{}, false, 0, err
		}
		// One view of the rows and the intents, taken before the read
		// time: a transaction applied here in between would otherwise be
		// in neither (its versions after the read, its intents gone before
		// the conflict check). One applied before the view moved our clock
		// past its commit time first (cmdApplyTxn), so the read time is
		// above it.
		snap := t.eng.NewSnapshot()
		rt = t.clock.Now()
		rows, resume, err := docdb.Scan(snap, docdb.ScanOptions{
			ReadOptions: docdb.ReadOptions{ReadTime: rt, Columns: opts.Columns},
			Span:        span, Limit: opts.Limit, Reverse: opts.Reverse, MaxBytes: ScanPageBytes,
		})
		if err != nil {
			snap.Close()
			release()
			return nil, storage.Span{}, false, 0, err
		}
		covered = span
		if resume != nil {
			// The limit or the page's bytes cut the scan: Scan returns
			// a resume key only after at least one row.
			last := rows[len(rows)-1].Key
			if opts.Reverse {
				covered.Start = last
			} else {
				covered.End = docdb.RowSpan(last).End
			}
		}
		if h := hooks.Load(); h != nil && h.scanLockedRead != nil {
			h.scanLockedRead(t)
		}
		// Every intent read in the covered span was committed, aborted or
		// pending: committed ones are applied (then read again), aborted
		// ones removed, pending ones waited for.
		conflicts, err := docdb.RangeConflicts(snap, lock.Txn, covered)
		snap.Close()
		if err != nil {
			release()
			return nil, storage.Span{}, false, 0, err
		}
		if len(conflicts) == 0 {
			w := &TxnWrite{Txn: lock.Txn, WriteID: lock.WriteID}
			spans := []storage.Span{covered}
			if _, err := t.proposeLatched(ctx, func(ht hlc.Timestamp) []byte { return encodeIntents(ht, w, nil, spans) }, release); err != nil {
				return nil, storage.Span{}, false, 0, err
			}
			return rows, covered, resume != nil, rt, nil
		}
		release()
		pending, err := t.resolveConflicts(ctx, conflicts, nil)
		if err != nil {
			return nil, storage.Span{}, false, 0, err
		}
		if len(pending) == 0 {
			continue
		}
		switch lock.Wait {
		case NoWait:
			return nil, storage.Span{}, false, 0, fmt.Errorf("%w: scan conflicts with transaction %s", ErrLockNotAvailable, pending[0])
		case FailOnConflict:
			return nil, storage.Span{}, false, 0, fmt.Errorf("%w: scan conflicts with pending transaction %s", ErrTxnConflict, pending[0])
		}
		if err := t.waitForTxns(ctx, lock.Txn, pending, waitStart); err != nil {
			return nil, storage.Span{}, false, 0, err
		}
	}
}
