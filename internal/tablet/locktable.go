package tablet

import (
	"slices"
	"sync/atomic"

	"github.com/shaledb/shaledb/internal/docdb"
)

// The in-memory mirror of the intents held here, by row: what a conflict
// check or a point read needs to know about intents, answered without
// the engine while it is exact.
//
// Intent keys are new for every transaction (they hold its hybrid time),
// so a hot row's intent span holds a deleted intent of every transaction
// since the last flush, and a conflict check or read of the row stepped
// over all of them: at one pgbench client that was a quarter of the
// leader's CPU, and the branch update was twice as slow as the others.
//
// The mirror is fed where intents are written (the cmdIntents apply) and
// forgets a transaction when it leaves the live set (wake, once the batch
// removing its intents is in the engine). It is exact while no live
// transaction is wide: one with intents on more than heldRowsMax rows, one
// loaded from disk (open, snapshot), or one that lost some intents to a
// savepoint rollback. While any is, every check reads the engine as
// before, except a check for the wide transaction itself when it is the
// only one (exactFor).

// heldRowsMax bounds the rows mirrored per transaction.
const heldRowsMax = 256

// heldIntent is one intent (or row lock) of a live transaction on a row.
type heldIntent struct {
	txn docdb.TxnID
	col uint32
	typ docdb.IntentType
}

// heldIntents is guarded by txnTracker.mu.
type heldIntents struct {
	byRow  map[string][]heldIntent
	rowsOf map[docdb.TxnID][]string
	wide   map[docdb.TxnID]bool
}

func (h *heldIntents) init() {
	h.byRow = map[string][]heldIntent{}
	h.rowsOf = map[docdb.TxnID][]string{}
	h.wide = map[docdb.TxnID]bool{}
}

// widen stops mirroring txn: while it is live, checks read the engine.
func (h *heldIntents) widen(txn docdb.TxnID) { h.wide[txn] = true }

// add mirrors the accesses txn's intents (and row locks) take.
func (h *heldIntents) add(txn docdb.TxnID, lists ...[]docdb.Access) {
	if h.wide[txn] {
		return
	}
	rows := h.rowsOf[txn]
	for _, l := range lists {
		for _, a := range l {
			k := string(a.Key.RowKey)
			held := h.byRow[k]
			in := heldIntent{txn: txn, col: a.Key.Column, typ: a.Type}
			if slices.Contains(held, in) {
				continue
			}
			if !slices.ContainsFunc(held, func(x heldIntent) bool { return x.txn == txn }) {
				if len(rows) >= heldRowsMax {
					h.wide[txn] = true
					h.rowsOf[txn] = rows
					return
				}
				rows = append(rows, k)
			}
			h.byRow[k] = append(held, in)
		}
	}
	h.rowsOf[txn] = rows
}

// forget drops txn from the mirror.
func (h *heldIntents) forget(txn docdb.TxnID) {
	for _, k := range h.rowsOf[txn] {
		held := slices.DeleteFunc(h.byRow[k], func(x heldIntent) bool { return x.txn == txn })
		if len(held) == 0 {
			delete(h.byRow, k)
		} else {
			h.byRow[k] = held
		}
	}
	delete(h.rowsOf, txn)
	delete(h.wide, txn)
}

func (h *heldIntents) exact() bool { return len(h.wide) == 0 }

// exactFor reports whether the mirror holds every intent of transactions
// other than txn: txn itself may be wide, since a check or read for it
// skips its own intents. A bulk load's transaction is wide at once, and
// its own writes then need no engine lookup while no other transaction is.
func (h *heldIntents) exactFor(txn docdb.TxnID) bool {
	return len(h.wide) == 0 || len(h.wide) == 1 && h.wide[txn]
}

// conflicts is docdb.Conflicts over the mirror: the intents of other
// transactions that conflict with want, once per holder, key and type.
func (h *heldIntents) conflicts(txn docdb.TxnID, want []docdb.Access) []docdb.Conflict {
	var out []docdb.Conflict
	for _, a := range want {
		for _, x := range h.byRow[string(a.Key.RowKey)] {
			if x.txn == txn || x.col != a.Key.Column || !docdb.IntentsConflict(a.Type, x.typ) {
				continue
			}
			if slices.ContainsFunc(out, func(c docdb.Conflict) bool {
				return c.Txn == x.txn && c.Type == x.typ && c.Key.Column == a.Key.Column && string(c.Key.RowKey) == string(a.Key.RowKey)
			}) {
				continue
			}
			out = append(out, docdb.Conflict{Txn: x.txn, Key: docdb.IntentKey{RowKey: slices.Clone(a.Key.RowKey), Column: a.Key.Column}, Type: x.typ, Wanted: a.Type})
		}
	}
	return out
}

// writers lists the transactions other than reader with strong write
// intents on the row (what a point read resolves).
func (h *heldIntents) writers(rowKey []byte, reader docdb.TxnID) []docdb.TxnID {
	var out []docdb.TxnID
	for _, x := range h.byRow[string(rowKey)] {
		if x.txn != reader && x.typ == docdb.StrongWrite && !slices.Contains(out, x.txn) {
			out = append(out, x.txn)
		}
	}
	return out
}

// intentLookups counts the conflict checks that read the engine (tests).
var intentLookups atomic.Int64

// widen stops mirroring txn's intents (see heldIntents).
func (tr *txnTracker) widen(txn docdb.TxnID) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.held.widen(txn)
}

// heldConflicts is heldIntents.conflicts; exact is false when the mirror
// is not (the engine must be read).
func (tr *txnTracker) heldConflicts(txn docdb.TxnID, want []docdb.Access) (out []docdb.Conflict, exact bool) {
	if !tr.any() {
		return nil, true
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if !tr.held.exactFor(txn) {
		return nil, false
	}
	return tr.held.conflicts(txn, want), true
}

// heldWriters is heldIntents.writers; exact as for heldConflicts.
func (tr *txnTracker) heldWriters(rowKey []byte, reader docdb.TxnID) (out []docdb.TxnID, exact bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if !tr.held.exactFor(reader) {
		return nil, false
	}
	return tr.held.writers(rowKey, reader), true
}

// mayHaveIntents reports whether any of the n rows row(0..n-1) may hold
// an intent, of any transaction.
func (tr *txnTracker) mayHaveIntents(n int, row func(i int) []byte) bool {
	if !tr.any() {
		return false
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if !tr.held.exact() {
		return true
	}
	for i := range n {
		if len(tr.held.byRow[string(row(i))]) > 0 {
			return true
		}
	}
	return false
}

// intentConflicts is docdb.Conflicts, from the mirror while it is exact.
func (t *Tablet) intentConflicts(txn docdb.TxnID, want []docdb.Access) ([]docdb.Conflict, error) {
	if out, exact := t.txns.heldConflicts(txn, want); exact {
		return out, nil
	}
	intentLookups.Add(1)
	return docdb.Conflicts(t.eng, txn, want)
}
