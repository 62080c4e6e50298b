package exec

import (
	"sync/atomic"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
)

// The query memory budget (CockroachDB's --max-sql-memory). What holds
// rows in memory (a join's right side, a window partition, a subquery's
// result, the rows a sort or hash aggregate keeps before it spills) counts
// their estimated size to its statement's account, and the accounts of
// all the node's statements draw from one monitor of the node's budget. A
// statement that would pass it fails with 53200 (out_of_memory) instead of
// the node running out of memory; the session goes on. An account takes
// the monitor's bytes a chunk at a time, so a row costs an addition, not
// an atomic operation.

// memChunk is how much an account takes from the monitor at once.
const memChunk = 1 << 20

// memMonitor is a node's budget for the memory its statements hold.
type memMonitor struct {
	limit int64 // bytes; 0: no limit
	used  atomic.Int64
}

// memAccount is what one statement holds, taken from the monitor in
// chunks. It is used by the statement's goroutine only.
type memAccount struct {
	mon            *memMonitor
	used, reserved int64
}

// grow counts n more bytes held for what (an operator's name in the
// error), failing with 53200 when the node's budget has no room for them.
// A nil account counts nothing.
func (a *memAccount) grow(n int64, what string) error {
	return a.growFor(n, what, "")
}

// growFor is grow for what followed by name (built only for the error: a
// statement's every scan counts its rows).
func (a *memAccount) growFor(n int64, what, name string) error {
	if a == nil {
		return nil
	}
	a.used += n
	if a.used <= a.reserved {
		return nil
	}
	need := (a.used - a.reserved + memChunk - 1) / memChunk * memChunk
	m := a.mon
	if total := m.used.Add(need); m.limit > 0 && total > m.limit {
		m.used.Add(-need)
		a.used -= n
		return errOutOfMemory(what+name, m.limit, total-need, need)
	}
	a.reserved += need
	return nil
}

// shrink gives back n bytes no longer held; the chunks beyond the next go
// back to the monitor.
func (a *memAccount) shrink(n int64) {
	if a == nil {
		return
	}
	a.used = max(a.used-n, 0)
	if extra := (a.reserved - a.used) / memChunk * memChunk; extra > memChunk {
		a.reserved -= extra - memChunk
		a.mon.used.Add(-(extra - memChunk))
	}
}

// close gives everything back (the statement ended).
func (a *memAccount) close() {
	if a == nil {
		return
	}
	a.mon.used.Add(-a.reserved)
	a.used, a.reserved = 0, 0
}

func errOutOfMemory(what string, limit, inUse, need int64) error {
	return pgerror.New(pgerror.CodeOutOfMemory, "out of memory").
		WithDetail("Failed on a request of %d MB to hold the rows of %s: the node's query memory budget (--max-sql-memory) is %d MB, %d MB of it in use (this statement's included).",
			need>>20, what, limit>>20, inUse>>20).
		WithHint("Lower work_mem so that more of the query spills to disk, or raise --max-sql-memory.")
}

// heldRows counts rows of what to an account as they are collected: a call
// to the account per chunk of rows, not per row.
type heldRows struct {
	acct    *memAccount
	what    string
	name    string // of the relation, after what in the error ("a scan of " t)
	pending int64  // not yet counted
	total   int64  // counted
}

// memBatch is how many bytes heldRows collects before it counts them.
const memBatch = 64 << 10

// add notes row as held.
func (h *heldRows) add(row plan.Row) error {
	if h == nil || h.acct == nil {
		return nil
	}
	return h.addBytes(rowSize(row))
}

// addBytes notes n bytes as held.
func (h *heldRows) addBytes(n int64) error {
	if h == nil || h.acct == nil {
		return nil
	}
	if h.pending += n; h.pending < memBatch {
		return nil
	}
	return h.flush()
}

// flush counts what add noted.
func (h *heldRows) flush() error {
	n := h.pending
	h.pending = 0
	if err := h.acct.growFor(n, h.what, h.name); err != nil {
		return err
	}
	h.total += n
	return nil
}

// release gives back everything counted (the rows were let go).
func (h *heldRows) release() {
	if h == nil {
		return
	}
	h.acct.shrink(h.total)
	h.total, h.pending = 0, 0
}

// newHeld is a count of what an operator holds, given back when the
// statement (or the subquery run) ends if the operator has not before.
func (r *runner) newHeld(what string) *heldRows {
	h := &heldRows{acct: r.acct, what: what}
	if r.acct != nil {
		r.onClose(h.release)
	}
	return h
}

// shrinkBy gives back n of the bytes counted (some of the rows were let
// go).
func (h *heldRows) shrinkBy(n int64) {
	if h == nil || h.acct == nil {
		return
	}
	n = min(n, h.total)
	h.acct.shrink(n)
	h.total -= n
}

// hold counts rows, already in memory, as held by what followed by name.
func (r *runner) hold(rows []plan.Row, what, name string) error {
	h := heldRows{acct: r.acct, what: what, name: name}
	for _, row := range rows {
		if err := h.add(row); err != nil {
			return err
		}
	}
	return h.flush()
}
