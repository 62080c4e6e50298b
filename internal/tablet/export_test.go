package tablet

import (
	"sync"
	"time"

	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
)

// SetTestHooks installs test hooks (see testHooks) until the returned
// function is called.
func SetTestHooks(txnApplied func(t *Tablet, txn docdb.TxnID), scanLockedRead func(t *Tablet)) (restore func()) {
	hooks.Store(&testHooks{txnApplied: txnApplied, scanLockedRead: scanLockedRead})
	return func() { hooks.Store(nil) }
}

// SetApplyLinger sets how long a deferred apply waits for an entry to ride
// on, until the returned function is called.
func SetApplyLinger(d time.Duration) (restore func()) {
	old := applyLinger.Swap(int64(d))
	return func() { applyLinger.Store(old) }
}

// LingerTimers replaces the linger's timers with manual ones: advance
// moves their clock, fire runs the timers due (their callbacks, on the
// caller's goroutine) and reports how many ran; pending counts the timers
// armed and not fired. restore puts the real clock back.
func LingerTimers() (advance func(time.Duration), fire func() int, pending func() int, restore func()) {
	var mu sync.Mutex
	type timer struct {
		at time.Time
		f  func()
	}
	var timers []timer
	now := time.Now()
	old := lingerAfter
	advance = func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(d)
	}
	lingerAfter = func(d time.Duration, f func()) {
		mu.Lock()
		defer mu.Unlock()
		timers = append(timers, timer{now.Add(d), f})
	}
	fire = func() int {
		mu.Lock()
		var due []func()
		rest := timers[:0]
		for _, tm := range timers {
			if !tm.at.After(now) {
				due = append(due, tm.f)
			} else {
				rest = append(rest, tm)
			}
		}
		timers = rest
		mu.Unlock()
		for _, f := range due {
			f()
		}
		return len(due)
	}
	pending = func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(timers)
	}
	return advance, fire, pending, func() { lingerAfter = old }
}

// DeferMaxIntents: a transaction with more intents on a tablet is applied
// at once rather than deferred.
const DeferMaxIntents = deferMaxIntents

// SetIntentStep sets how many intents one step of a large apply or
// removal resolves, until the returned function is called.
func SetIntentStep(n int) (restore func()) {
	old := intentStep.Swap(int32(n))
	return func() { intentStep.Store(old) }
}

// IntentLookups is how many conflict checks read the engine so far.
func IntentLookups() int64 { return intentLookups.Load() }

// HeldRowsMax: a transaction with intents on more rows of a tablet makes its
// conflict checks read the engine for every row.
const HeldRowsMax = heldRowsMax

// QueuedCommit returns txn's commit time if its apply is queued here.
func (t *Tablet) QueuedCommit(txn docdb.TxnID) (hlc.Timestamp, bool) { return t.queuedCommit(txn) }

// HeldAndEngineConflicts returns the conflicts of want from the in-memory
// mirror of the intents (exact false: the mirror is not exact now) and
// from the engine.
func (t *Tablet) HeldAndEngineConflicts(txn docdb.TxnID, want []docdb.Access) (held []docdb.Conflict, exact bool, engine []docdb.Conflict, err error) {
	held, exact = t.txns.heldConflicts(txn, want)
	engine, err = docdb.Conflicts(t.eng, txn, want)
	return held, exact, engine, err
}

// LockAccesses is the accesses row locks of mode take.
func LockAccesses(rows [][]byte, mode LockMode) []docdb.Access { return lockAccesses(rows, mode) }

// HoldBackgroundApply keeps applySoon from applying txn until the returned
// function is called.
func (t *Tablet) HoldBackgroundApply(txn docdb.TxnID) (release func()) {
	t.applying.Store(txn, struct{}{})
	return func() { t.applying.Delete(txn) }
}

// Waited reports whether someone waits here for txn's intents.
func (t *Tablet) Waited(txn docdb.TxnID) bool {
	_, _, waited := t.txns.info(txn)
	return waited
}

// DiskRow reads a row from the engine as it is now (no latch, no cache).
func (t *Tablet) DiskRow(key []byte) (docdb.Row, bool, error) {
	return docdb.GetRow(t.eng, key, docdb.ReadOptions{ReadTime: t.clock.Now()})
}
