package exec

import (
	"crypto/rand"
	"errors"
	"fmt"
	"math"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// writeBatch collects a statement's writes to one table and sends them in
// one call per flush (the client groups them per tablet).
type writeBatch struct {
	tbl *client.Table
	ops []client.Op
	// since, when set, fails the batch if a row changed after it (the
	// batch writes rows read at since without a lock).
	since hlc.Timestamp
}

const maxBatch = 512

func (r *runner) flush(b *writeBatch) error {
	if len(b.ops) == 0 {
		return nil
	}
	var err error
	if b.since != 0 {
		err = r.txn.ApplyUnchangedSince(r.ctx, b.tbl, b.ops, b.since)
		if code, _ := client.CodeOf(err); code == client.CodeTxnConflict {
			err = &changedSinceError{err}
		}
	} else {
		err = r.txn.Apply(r.ctx, b.tbl, b.ops)
	}
	b.ops = b.ops[:0]
	return err
}

func (r *runner) add(b *writeBatch, op client.Op) error {
	b.ops = append(b.ops, op)
	if len(b.ops) >= maxBatch {
		return r.flush(b)
	}
	return nil
}

// checkRow enforces NOT NULL and CHECK constraints on a new row.
func (r *runner) checkRow(t *catalog.Table, row plan.Row, checks []plan.Expr) error {
	for i, c := range t.Columns {
		if row[i].Null && (c.NotNull || t.IsKey(i)) {
			return &pgerror.Error{Code: pgerror.CodeNotNullViolation, Table: t.Name, Column: c.Name,
				Message: fmt.Sprintf("null value in column %q of relation %q violates not-null constraint", c.Name, t.Name),
				Detail:  "Failing row contains " + r.s.formatRow(t, row) + "."}
		}
	}
	for i, e := range checks {
		d, err := e.Eval(r.ec, row)
		if err != nil {
			return err
		}
		if !d.Null && !d.Bool() {
			return &pgerror.Error{Code: pgerror.CodeCheckViolation, Table: t.Name, Constraint: t.Checks[i].Name,
				Message: fmt.Sprintf("new row for relation %q violates check constraint %q", t.Name, t.Checks[i].Name),
				Detail:  "Failing row contains " + r.s.formatRow(t, row) + "."}
		}
	}
	return nil
}

func uniqueViolation(t *catalog.Table, s *Session, row plan.Row) error {
	cols := make([]int, len(t.Key))
	for i, k := range t.Key {
		cols[i] = k.Column
	}
	return &pgerror.Error{Code: pgerror.CodeUniqueViolation, Table: t.Name, Constraint: t.PKName,
		Message: fmt.Sprintf("duplicate key value violates unique constraint %q", t.PKName),
		Detail:  fmt.Sprintf("Key %s already exists.", s.formatKey(t, cols, pick(row, cols)))}
}

// pick is the values of row's columns cols.
func pick(row plan.Row, cols []int) []types.Datum {
	out := make([]types.Datum, len(cols))
	for i, c := range cols {
		out[i] = row[c]
	}
	return out
}

// insert runs an INSERT; it returns the number of rows and the RETURNING
// rows.
//
// Rows go to storage in batches of maxBatch, as client.OpInsert when the
// table has a primary key: the tablets check, under their row locks, that
// no row exists yet (committed, written earlier by the transaction, or by
// an earlier op of the batch) and fail the batch naming the colliding op,
// which becomes 23505 for its row. Nothing of a failed batch remains. With
// ON CONFLICT a batch that collides (or that repeats a key of the
// statement) is written again row by row instead, each row read and
// locked first to apply the conflict action (insertChecked). Tables
// without a primary key get random row ids and plain puts.
func (r *runner) insert(ins *plan.Insert) (int64, []plan.Row, error) {
	if r.txn == nil && ins.OnConflict != nil {
		n, err := r.upsertAtTablet(ins)
		return n, nil, err
	}
	t := ins.Table
	tw, err := r.newTableWriter(t)
	if err != nil {
		return 0, nil, err
	}
	tbl := tw.base.tbl
	// The source's rows are taken as they come (a scan's a page at a
	// time, at the statement's snapshot, which the rows written meanwhile
	// are not part of): an INSERT ... SELECT of many rows holds a batch of
	// them, not all.
	src, err := r.open(ins.Source)
	if err != nil {
		return 0, nil, err
	}
	r.blindWrites(tw, ins.OnConflict != nil)
	ib := &insertBatch{tbl: tbl}
	st := &insertState{ins: ins, tbl: tbl, tw: tw}
	if ins.OnConflict != nil {
		st.pending = map[string]bool{}
		st.arbiters = r.arbiters(tw, ins.OnConflict)
		st.pk = ins.OnConflict.Index == ""
	}
	for {
		row, err := src.next()
		if err != nil {
			return 0, nil, err
		}
		if row == nil {
			break
		}
		if t.RowID {
			var id [16]byte
			if _, err := rand.Read(id[:]); err != nil {
				return 0, nil, err
			}
			row[0] = types.DBytes(id[:])
		}
		if err := r.checkRow(t, row, ins.Checks); err != nil {
			return 0, nil, err
		}
		sr, err := storageRow(t, row, false)
		if err != nil {
			return 0, nil, err
		}
		kind := client.OpInsert
		if t.RowID {
			kind = client.OpPut
		}
		ib.rows = append(ib.rows, row)
		ib.ops = append(ib.ops, client.Op{Kind: kind, Row: sr})
		if len(ib.ops) >= maxBatch {
			if err := r.flushInserts(st, ib); err != nil {
				return 0, nil, err
			}
		}
	}
	if err := r.flushInserts(st, ib); err != nil {
		return 0, nil, err
	}
	return st.n, st.returned, r.flushTable(tw)
}

// upsertAtTablet runs an INSERT ... ON CONFLICT of one row that needs no
// existing row (plan.TabletUpsert) outside a transaction: an insert the
// tablet refuses if the key exists; then nothing (DO NOTHING), or an
// update of the set columns the tablet applies if the row still exists,
// and the insert again if it is gone meanwhile. Each write applies once
// (client.Table.ApplyExisting). A NULL for a NOT NULL column of the update
// fails the row's way (errNeedsTxn).
func (r *runner) upsertAtTablet(ins *plan.Insert) (int64, error) {
	t := ins.Table
	if !plan.TabletUpsert(ins) {
		return 0, errNeedsTxn
	}
	src, err := r.open(ins.Source)
	if err != nil {
		return 0, err
	}
	row, err := src.next()
	if err != nil || row == nil {
		return 0, err
	}
	if err := r.checkRow(t, row, ins.Checks); err != nil {
		return 0, err
	}
	sr, err := storageRow(t, row, false)
	if err != nil {
		return 0, err
	}
	tbl, err := r.s.openTable(r.ctx, t)
	if err != nil {
		return 0, err
	}
	var upd client.Row
	if !ins.OnConflict.DoNothing {
		if upd, err = storageRow(t, row, true); err != nil {
			return 0, err
		}
		both := append(make(plan.Row, len(t.Columns)), row...) // the existing row is not read
		if err := r.setValues(t, ins.OnConflict.Set, both, upd); err != nil {
			return 0, err
		}
	}
	for {
		_, err := tbl.ApplyExisting(r.ctx, []client.Op{{Kind: client.OpInsert, Row: sr}})
		if _, dup := client.DuplicateIndex(err); !dup {
			if err != nil {
				return 0, err
			}
			return 1, nil
		}
		if ins.OnConflict.DoNothing {
			return 0, nil
		}
		missing, err := tbl.ApplyExisting(r.ctx, []client.Op{{Kind: client.OpUpdate, Row: upd}})
		if err != nil {
			return 0, err
		}
		if len(missing) == 0 {
			return 1, nil
		}
		if err := r.ctx.Err(); err != nil {
			return 0, err // deleted and inserted again, over and over
		}
	}
}

// blindWrites keeps a statement's writes through tw out of its
// transaction's own-write overlay (client.Txn.Blind) when nothing will read
// them back: the statement runs in a transaction of its own, which commits
// after it, and nothing in it reads the latest rows (reads: ON CONFLICT, an
// UPDATE that moves rows to new keys; a unique index, checked by a read).
// Its other reads, the source and subqueries, see the statement's
// snapshot, without its own writes, as PostgreSQL's do; an UPDATE or DELETE
// reads each target row once, before its write (at the snapshot or,
// locked, at its newest version, which its own earlier writes never are).
// An INSERT ... SELECT of millions of rows then holds a batch of them, not
// every one.
func (r *runner) blindWrites(tw *tableWriter, reads bool) {
	if !r.s.ownStatement || r.txn == nil || reads || tw.fk != nil {
		return // foreign-key work reads the statement's writes
	}
	for _, w := range tw.idx {
		if w.ix.Unique {
			return
		}
	}
	r.txn.Blind(tw.base.tbl)
	for _, w := range tw.idx {
		r.txn.Blind(w.b.tbl)
	}
}

// insertBatch is the rows of an INSERT not yet written and their ops.
type insertBatch struct {
	tbl  *client.Table
	rows []plan.Row
	ops  []client.Op
}

// insertState is what an INSERT has done so far.
type insertState struct {
	ins      *plan.Insert
	tbl      *client.Table
	tw       *tableWriter
	n        int64
	returned []plan.Row
	// pending (ON CONFLICT only) holds the keys the statement wrote: a
	// row proposed again conflicts with the statement's own row.
	pending map[string]bool
	// arbiters (ON CONFLICT only) are the unique indexes whose conflicts
	// the clause handles (besides, if pk, the primary key's).
	arbiters []*indexWriter
	pk       bool
}

// inserted counts a written row and evaluates its RETURNING list.
func (r *runner) inserted(st *insertState, row plan.Row) error {
	st.n++
	if st.ins.Returning == nil {
		return nil
	}
	return r.returning(&st.returned, st.ins.Returning, row)
}

// returning appends to rows the RETURNING list exprs of a written row,
// counted as held by the statement until it ends.
func (r *runner) returning(rows *[]plan.Row, exprs []plan.Expr, row plan.Row) error {
	out, err := r.evalAll(exprs, row)
	if err != nil {
		return err
	}
	*rows = append(*rows, out)
	return r.acct.grow(rowSize(out), "RETURNING")
}

// flushInserts writes the batch's rows (see insert) and empties it.
func (r *runner) flushInserts(st *insertState, ib *insertBatch) error {
	if len(ib.ops) == 0 {
		return nil
	}
	defer func() { ib.rows, ib.ops = ib.rows[:0], ib.ops[:0] }()
	t := st.ins.Table
	var keys [][]byte
	// ON CONFLICT: no key twice in the statement so far, and no unique
	// index to look at row by row.
	together := true
	if st.pending != nil {
		for _, w := range st.tw.idx {
			together = together && !(w.ix.Unique && w.ix.Inserts())
		}
		seen := map[string]bool{}
		for _, row := range ib.rows {
			key, err := storageRow(t, row, true)
			if err != nil {
				return err
			}
			rk, err := ib.tbl.RowKey(key)
			if err != nil {
				return err
			}
			keys = append(keys, rk)
			if st.pending[string(rk)] || seen[string(rk)] {
				together = false
			}
			seen[string(rk)] = true
		}
	}
	if together {
		var err error
		if r.txn == nil {
			err = ib.tbl.Apply(r.ctx, ib.ops) // the single-row fast path
		} else {
			err = r.txn.Apply(r.ctx, ib.tbl, ib.ops)
		}
		if err == nil {
			for i, row := range ib.rows {
				if keys != nil {
					st.pending[string(keys[i])] = true
				}
				if err := r.indexWrites(st.tw, nil, row); err != nil {
					return err
				}
				if err := r.inserted(st, row); err != nil {
					return err
				}
			}
			return nil
		}
		i, dup := client.DuplicateIndex(err)
		if !dup || i >= len(ib.rows) {
			return err
		}
		if st.pending == nil {
			return uniqueViolation(t, r.s, ib.rows[i])
		}
		// ON CONFLICT: nothing of the batch was written; row by row.
	}
	for i, row := range ib.rows {
		if err := r.insertChecked(st, row, ib.ops[i].Row, keys[i]); err != nil {
			return err
		}
	}
	return r.flushTable(st.tw)
}

// insertChecked inserts one row of an INSERT ... ON CONFLICT: it reads and
// locks the row first (by its primary key, and through each arbiter unique
// index), and applies the conflict action if it exists.
func (r *runner) insertChecked(st *insertState, row plan.Row, sr client.Row, rk []byte) error {
	ins, t, tw := st.ins, st.ins.Table, st.tw
	old, exists, err := r.conflicting(st, row, rk)
	if err != nil {
		return err
	}
	if !exists {
		st.pending[string(rk)] = true
		if err := r.add(&tw.base, client.Op{Kind: client.OpPut, Row: sr}); err != nil {
			return err
		}
		if err := r.indexWrites(tw, nil, row); err != nil {
			return err
		}
		return r.inserted(st, row)
	}
	if ins.OnConflict.DoNothing {
		return nil
	}
	if old == nil {
		return pgerror.New(pgerror.CodeCardinalityViolation, "ON CONFLICT DO UPDATE command cannot affect row a second time").
			WithHint("Ensure that no rows proposed for insertion within the same command have duplicate constrained values.")
	}
	oldRow, err := tableRow(t, old)
	if err != nil {
		return err
	}
	updated, ok, err := r.conflictUpdate(ins, oldRow, row)
	if err != nil || !ok {
		return err
	}
	if !sameKey(t, oldRow, updated) {
		return pgerror.Unsupported("ON CONFLICT DO UPDATE of primary-key columns")
	}
	if err := r.lockKeyChange(tw, oldRow, updated); err != nil {
		return err
	}
	if err := r.writeUpdate(&tw.base, t, oldRow, updated); err != nil {
		return err
	}
	if err := r.indexWrites(tw, oldRow, updated); err != nil {
		return err
	}
	ork, err := storageRow(t, oldRow, true)
	if err != nil {
		return err
	}
	if k, err := tw.base.tbl.RowKey(ork); err == nil {
		st.pending[string(k)] = true
	}
	return r.inserted(st, updated)
}

// conflicting finds the existing row an ON CONFLICT row collides with, by
// its primary key (if an arbiter) and through the arbiter unique indexes,
// and locks it. exists with a nil row: the statement itself wrote it.
func (r *runner) conflicting(st *insertState, row plan.Row, rk []byte) (client.Row, bool, error) {
	t, tw := st.ins.Table, st.tw
	if err := r.flushTable(tw); err != nil {
		return nil, false, err
	}
	if st.pk {
		if st.pending[string(rk)] {
			return nil, true, nil
		}
		key, err := storageRow(t, row, true)
		if err != nil {
			return nil, false, err
		}
		old, exists, err := r.txn.GetForUpdate(r.ctx, tw.base.tbl, key, client.ForNoKeyUpdate, client.WaitOnConflict)
		if err != nil || exists {
			return old, exists, err
		}
	}
	for _, w := range st.arbiters {
		if ok, err := r.matches(w, row); err != nil || !ok {
			if err != nil {
				return nil, false, err
			}
			continue
		}
		key, full, err := indexEntry(t, w, row)
		if err != nil {
			return nil, false, err
		}
		if !uniqueKeyed(w, full) {
			continue // NULLs never conflict
		}
		ent, found, err := r.txn.GetForUpdate(r.ctx, w.b.tbl, key, client.ForNoKeyUpdate, client.WaitOnConflict)
		if err != nil {
			return nil, false, err
		}
		if !found {
			continue
		}
		bkey := baseKeyOf(t, w, ent)
		brk, err := tw.base.tbl.RowKey(bkey)
		if err != nil {
			return nil, false, err
		}
		if st.pending[string(brk)] {
			return nil, true, nil
		}
		old, exists, err := r.txn.GetForUpdate(r.ctx, tw.base.tbl, bkey, client.ForNoKeyUpdate, client.WaitOnConflict)
		if err != nil || exists {
			return old, exists, err
		}
	}
	if !st.pk && !t.RowID {
		// The primary key is no arbiter: a row with the key is an error.
		key, err := storageRow(t, row, true)
		if err != nil {
			return nil, false, err
		}
		if st.pending[string(rk)] {
			return nil, false, uniqueViolation(t, r.s, row)
		}
		if _, exists, err := r.txn.GetForUpdate(r.ctx, tw.base.tbl, key, client.ForUpdate, client.WaitOnConflict); err != nil {
			return nil, false, err
		} else if exists {
			return nil, false, uniqueViolation(t, r.s, row)
		}
	}
	return nil, false, nil
}

// baseKeyOf is the base table's primary key held in an index row.
func baseKeyOf(t *catalog.Table, w *indexWriter, ent client.Row) client.Row {
	key := client.Row{}
	for _, k := range t.Key {
		name := catalog.StorageColumn(&t.Columns[k.Column])
		key[name] = ent[name]
	}
	return key
}

// arbiters are the unique indexes an ON CONFLICT clause handles: the one
// it names, or every unique index for DO NOTHING without a target.
func (r *runner) arbiters(tw *tableWriter, oc *plan.OnConflict) []*indexWriter {
	var out []*indexWriter
	for _, w := range tw.idx {
		if !w.ix.Unique || !w.ix.Inserts() {
			continue
		}
		if oc.Any || oc.Index == w.ix.Name {
			out = append(out, w)
		}
	}
	return out
}

// conflictUpdate computes DO UPDATE's new row from the existing row and
// the proposed (EXCLUDED) one; ok is false when its WHERE rejects it.
func (r *runner) conflictUpdate(ins *plan.Insert, old, excluded plan.Row) (plan.Row, bool, error) {
	both := append(append(plan.Row(nil), old...), excluded...)
	if w := ins.OnConflict.Where; w != nil {
		d, err := w.Eval(r.ec, both)
		if err != nil || d.Null || !d.Bool() {
			return nil, false, err
		}
	}
	next := append(plan.Row(nil), old...)
	for i, e := range ins.OnConflict.Set {
		d, err := e.Eval(r.ec, both)
		if err != nil {
			return nil, false, err
		}
		next[i] = d
	}
	if err := r.checkRow(ins.Table, next, ins.Checks); err != nil {
		return nil, false, err
	}
	return next, true, nil
}

// writeUpdate writes the changed columns of a row whose key is unchanged.
// An update that changes nothing still writes the row (all its columns, as
// PostgreSQL writes a new tuple), so it conflicts with concurrent writers
// as an update must.
func (r *runner) writeUpdate(b *writeBatch, t *catalog.Table, old, next plan.Row) error {
	sr, err := r.updatedColumns(t, old, next)
	if err != nil {
		return err
	}
	if len(sr) == len(t.Key) {
		if sr, err = r.updatedColumns(t, nil, next); err != nil {
			return err
		}
		if len(sr) == len(t.Key) {
			return r.add(b, client.Op{Kind: client.OpPut, Row: sr})
		}
	}
	return r.add(b, client.Op{Kind: client.OpUpdate, Row: sr})
}

// lockKeyChange locks FOR UPDATE a row whose update changes a unique
// index column, as PostgreSQL locks an update of key columns: the
// column's write alone conflicts with no FOR KEY SHARE lock, which must
// keep the key it locked. (A change of the primary key moves the row:
// its delete conflicts with every lock.) An update that changes no key,
// or writes the same value, takes FOR NO KEY UPDATE, through its scan.
func (r *runner) lockKeyChange(tw *tableWriter, old, next plan.Row) error {
	t := tw.t
	changed := false
	for _, ix := range t.Indexes {
		if !ix.Unique {
			continue
		}
		for _, c := range ix.Columns {
			if i := t.ColumnByID(c.ID); i >= 0 && !sameDatum(old[i], next[i], t.Columns[i].Type) {
				changed = true
			}
		}
	}
	if !changed || r.txn == nil {
		return nil
	}
	key, err := storageRow(t, old, true)
	if err != nil {
		return err
	}
	_, err = r.txn.Lock(r.ctx, tw.base.tbl, []client.Row{key}, client.ForUpdate, client.WaitOnConflict)
	return err
}

// updatedColumns is the storage row of next's key and of the columns that
// differ from old (all of them when old is nil).
func (r *runner) updatedColumns(t *catalog.Table, old, next plan.Row) (client.Row, error) {
	sr := client.Row{}
	for i := range t.Columns {
		c := &t.Columns[i]
		if t.IsKey(i) {
			v, err := types.ToKeyStorage(next[i], c.Type)
			if err != nil {
				return nil, err
			}
			sr[catalog.StorageColumn(c)] = v
			continue
		}
		if old != nil && sameDatum(old[i], next[i], c.Type) {
			continue
		}
		if next[i].Null {
			sr[catalog.StorageColumn(c)] = docdb.Null()
			continue
		}
		v, err := types.ToStorage(next[i], c.Type)
		if err != nil {
			return nil, err
		}
		sr[catalog.StorageColumn(c)] = v
	}
	return sr, nil
}

func sameDatum(a, b types.Datum, t types.T) bool {
	if a.Null || b.Null {
		return a.Null == b.Null
	}
	return types.Compare(a, b, t) == 0 && t.Family() != types.FamFloat
}

// readCommittedWrite runs an UPDATE or DELETE (run) of one row by key
// under read committed without a row lock first: the row is read at the
// latest time and its write fails if another transaction committed a
// version after that read (waiting for a pending writer first). That saves
// the lock's Raft write; on such a conflict the statement runs again the
// locking way, reading the newest version under the lock (PostgreSQL
// re-evaluates the row the same way). Nothing of the first run was written:
// the row's write is the statement's first, one op to one tablet. Other
// statements, and keys that change (a move reads the new key locked), run
// the locking way at once.
func (r *runner) readCommittedWrite(source plan.Node, keyChanged bool, run func() (int64, []plan.Row, error)) (int64, []plan.Row, error) {
	s, ok := source.(*plan.Scan)
	if !ok || r.txn == nil || r.txn.Isolation() != client.ReadCommitted || keyChanged ||
		!s.ForWrite || s.Access.Kind != plan.PointGet || s.Access.Index != nil {
		return run()
	}
	r.unlocked = s
	n, rows, err := run()
	r.unlocked, r.since = nil, 0
	var changed *changedSinceError
	if errors.As(err, &changed) {
		return run()
	}
	return n, rows, err
}

// changedSinceError is the conflict of a write of rows read without a
// lock (writeBatch.since): another transaction changed a row after.
type changedSinceError struct{ err error }

func (e *changedSinceError) Error() string { return e.err.Error() }
func (e *changedSinceError) Unwrap() error { return e.err }

// update runs an UPDATE.
func (r *runner) update(u *plan.Update) (int64, []plan.Row, error) {
	if n, ok, err := r.updateAtTablet(u); ok || err != nil {
		return n, nil, err
	}
	keyChanged := false
	for i := range u.Set {
		if u.Table.IsKey(i) {
			keyChanged = true
		}
	}
	return r.readCommittedWrite(u.Source, keyChanged, func() (int64, []plan.Row, error) { return r.updateRows(u, keyChanged) })
}

func (r *runner) updateRows(u *plan.Update, keyChanged bool) (int64, []plan.Row, error) {
	t := u.Table
	tw, err := r.newTableWriter(t)
	if err != nil {
		return 0, nil, err
	}
	src, err := r.open(u.Source) // as the rows come: see insert
	if err != nil {
		return 0, nil, err
	}
	tw.base.since = r.since
	r.blindWrites(tw, keyChanged)
	var returned []plan.Row
	first := firstMatches(t, u.Source, u.TargetAt)
	var count int64
	err = each(src, func(joined plan.Row) error {
		if !first(joined) {
			return nil
		}
		// SET and RETURNING see the whole row (with UPDATE ... FROM, the
		// FROM tables' columns, then the target's); the writes its own.
		at, end := u.TargetAt, u.TargetAt+len(t.Columns)
		nextJoined := append(plan.Row(nil), joined...)
		for i, e := range u.Set {
			d, err := e.Eval(r.ec, joined)
			if err != nil {
				return err
			}
			nextJoined[at+i] = d
		}
		old, next := joined[at:end:end], nextJoined[at:end:end]
		if err := r.checkRow(t, next, u.Checks); err != nil {
			return err
		}
		if keyChanged && !sameKey(t, old, next) {
			if err := r.moveRow(tw, old, next); err != nil {
				return err
			}
		} else if err := r.lockKeyChange(tw, old, next); err != nil {
			return err
		} else if err := r.writeUpdate(&tw.base, t, old, next); err != nil {
			return err
		}
		if err := r.indexWrites(tw, old, next); err != nil {
			return err
		}
		if u.Returning != nil {
			if err := r.returning(&returned, u.Returning, nextJoined); err != nil {
				return err
			}
		}
		count++
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return count, returned, r.flushTable(tw)
}

// firstMatches returns a function that reports whether a row of source
// (t's columns from at) is the first with its target row: an UPDATE ...
// FROM or DELETE ... USING whose join matches a target row more than once
// changes it once, with the first match (PostgreSQL: which one is not
// defined). Without joined tables every row is its own.
func firstMatches(t *catalog.Table, source plan.Node, at int) func(plan.Row) bool {
	if len(source.Columns()) == len(t.Columns) {
		return func(plan.Row) bool { return true }
	}
	ts := make([]types.T, len(t.Key))
	for i, k := range t.Key {
		ts[i] = t.Columns[k.Column].Type
	}
	seen := map[string]bool{}
	vals := make([]types.Datum, len(t.Key))
	return func(row plan.Row) bool {
		for i, k := range t.Key {
			vals[i] = row[at+k.Column]
		}
		key := rowKey(vals, ts)
		if seen[key] {
			return false
		}
		seen[key] = true
		return true
	}
}

func sameKey(t *catalog.Table, a, b plan.Row) bool {
	for _, k := range t.Key {
		if !sameDatum(a[k.Column], b[k.Column], t.Columns[k.Column].Type) {
			return false
		}
	}
	return true
}

// moveRow is an UPDATE of primary-key columns: delete the old row and
// insert the new one, which must not collide.
func (r *runner) moveRow(tw *tableWriter, old, next plan.Row) error {
	t := tw.t
	if err := r.flushTable(tw); err != nil {
		return err
	}
	key, err := storageRow(t, next, true)
	if err != nil {
		return err
	}
	if _, exists, err := r.txn.GetForUpdate(r.ctx, tw.base.tbl, key, client.ForUpdate, client.WaitOnConflict); err != nil {
		return err
	} else if exists {
		return uniqueViolation(t, r.s, next)
	}
	oldKey, err := storageRow(t, old, true)
	if err != nil {
		return err
	}
	sr, err := storageRow(t, next, false)
	if err != nil {
		return err
	}
	if err := r.add(&tw.base, client.Op{Kind: client.OpDelete, Row: oldKey}); err != nil {
		return err
	}
	return r.add(&tw.base, client.Op{Kind: client.OpPut, Row: sr})
}

// delete runs a DELETE.
func (r *runner) delete(d *plan.Delete) (int64, []plan.Row, error) {
	if n, ok, err := r.deleteAtTablet(d); ok || err != nil {
		return n, nil, err
	}
	return r.readCommittedWrite(d.Source, false, func() (int64, []plan.Row, error) { return r.deleteRows(d) })
}

func (r *runner) deleteRows(d *plan.Delete) (int64, []plan.Row, error) {
	t := d.Table
	tw, err := r.newTableWriter(t)
	if err != nil {
		return 0, nil, err
	}
	src, err := r.open(d.Source) // as the rows come: see insert
	if err != nil {
		return 0, nil, err
	}
	tw.base.since = r.since
	r.blindWrites(tw, false)
	var returned []plan.Row
	first := firstMatches(t, d.Source, d.TargetAt)
	var count int64
	err = each(src, func(joined plan.Row) error {
		if !first(joined) {
			return nil
		}
		end := d.TargetAt + len(t.Columns)
		row := joined[d.TargetAt:end:end] // DELETE ... USING: the target's columns after the others'
		key, err := storageRow(t, row, true)
		if err != nil {
			return err
		}
		if err := r.add(&tw.base, client.Op{Kind: client.OpDelete, Row: key}); err != nil {
			return err
		}
		if err := r.indexWrites(tw, row, nil); err != nil {
			return err
		}
		if d.Returning != nil {
			if err := r.returning(&returned, d.Returning, joined); err != nil {
				return err
			}
		}
		count++
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return count, returned, r.flushTable(tw)
}

// updateAtTablet runs an UPDATE that only adds to integer columns of one
// row (plan.TabletAdds) as one write whose sums the tablet computes
// (client.OpAdd): no read of the row first, and under READ COMMITTED no
// change of the row between that read and the write to retry, which cost
// a locked read and a second write on every hot row (pgbench's branches).
// The tablet reads the latest committed row under the row's lock, which is
// what PostgreSQL's READ COMMITTED update works on too. ok is false when
// it does not apply: outside pushdown (yb_enable_expression_pushdown),
// in serializable transactions (whose reads lock), or for a NULL delta.
//
// Without a transaction (the single-row fast path, Session.singleRowChange)
// the add is one write that applies once (client.Table.ApplyExisting), and
// so is an UPDATE setting values that do not depend on the row
// (setAtTablet); any other fails with errNeedsTxn, and the statement runs
// in a transaction.
func (r *runner) updateAtTablet(u *plan.Update) (n int64, ok bool, err error) {
	if r.txn != nil && r.txn.Isolation() == client.Serializable {
		return 0, false, nil
	}
	adds, ok := plan.TabletAdds(u)
	if ok {
		cols := make([]int, len(adds))
		for i, a := range adds {
			cols[i] = a.Column
		}
		snap, err := r.s.snapshot(r.ctx)
		if err != nil {
			return 0, false, err
		}
		ok = !fkColumnsWritten(snap, u.Table, cols) // checked the row's way
	}
	if !ok || !r.s.pushdownEnabled() {
		if r.txn == nil && plan.TabletSets(u) {
			return r.setAtTablet(u)
		}
		return r.needsTxn()
	}
	s := u.Source.(*plan.Scan)
	t := u.Table
	row, found, err := r.keyValues(t, s.Access.Eq)
	if err != nil || !found {
		return 0, true, err // no row has that key
	}
	for _, a := range adds {
		d, err := a.Delta.Eval(r.ec, nil)
		if err != nil {
			return 0, true, err
		}
		if d.Null || a.Negate && d.I == math.MinInt64 {
			return r.needsTxn() // the row's way: the column becomes NULL, or overflows
		}
		delta := d.I
		if a.Negate {
			delta = -delta
		}
		row[catalog.StorageColumn(&t.Columns[a.Column])] = docdb.Int64(delta)
	}
	tbl, err := r.s.openTable(r.ctx, t)
	if err != nil {
		return 0, true, err
	}
	ops := []client.Op{{Kind: client.OpAdd, Row: row}}
	var missing []int
	if r.txn != nil {
		missing, err = r.txn.ApplyMissing(r.ctx, tbl, ops)
	} else {
		missing, err = tbl.ApplyExisting(r.ctx, ops)
	}
	var oor *client.OutOfRangeError
	if errors.As(err, &oor) {
		return 0, true, pgerror.New(pgerror.CodeNumericValueOutOfRange, "%s out of range", outOfRangeName(t, tbl, oor.Column))
	}
	if err != nil {
		return 0, true, err
	}
	r.s.noteRead(s, 0, 1-len(missing))
	return int64(1 - len(missing)), true, nil
}

// setAtTablet runs an UPDATE of one row to values that do not depend on
// it (plan.TabletSets) outside a transaction: one write of the set
// columns that the tablet applies if the row exists, at most once
// (client.Table.ApplyExisting). A NULL for a NOT NULL column fails the
// row's way, whose message shows the row (errNeedsTxn).
func (r *runner) setAtTablet(u *plan.Update) (int64, bool, error) {
	s := u.Source.(*plan.Scan)
	t := u.Table
	row, found, err := r.keyValues(t, s.Access.Eq)
	if err != nil || !found {
		return 0, true, err // no row has that key
	}
	if err := r.setValues(t, u.Set, nil, row); err != nil {
		return 0, true, err
	}
	return r.existingRow(s, client.Op{Kind: client.OpUpdate, Row: row})
}

// setValues evaluates the SET list of a single-row fast path over in
// (nil, or the EXCLUDED row of an upsert) into out's storage columns. A
// NULL for a NOT NULL column is errNeedsTxn: the row's way reports it
// with the row.
func (r *runner) setValues(t *catalog.Table, set map[int]plan.Expr, in plan.Row, out client.Row) error {
	for col, e := range set {
		d, err := e.Eval(r.ec, in)
		if err != nil {
			return err
		}
		c := &t.Columns[col]
		if d.Null {
			if c.NotNull {
				return errNeedsTxn
			}
			out[catalog.StorageColumn(c)] = docdb.Null()
			continue
		}
		v, err := types.ToStorage(d, c.Type)
		if err != nil {
			return err
		}
		out[catalog.StorageColumn(c)] = v
	}
	return nil
}

// deleteAtTablet runs a DELETE of one row by its key (plan.PointDelete)
// outside a transaction: one delete that the tablet applies if the row
// exists, at most once (client.Table.ApplyExisting). ok is false when it
// does not apply.
func (r *runner) deleteAtTablet(d *plan.Delete) (n int64, ok bool, err error) {
	if r.txn != nil || !plan.PointDelete(d) {
		return 0, false, nil
	}
	s := d.Source.(*plan.Scan)
	key, found, err := r.keyValues(d.Table, s.Access.Eq)
	if err != nil || !found {
		return 0, true, err // no row has that key
	}
	return r.existingRow(s, client.Op{Kind: client.OpDelete, Row: key})
}

// existingRow applies op, a change of the row s reads, if the row exists
// (client.Table.ApplyExisting), and returns the rows changed.
func (r *runner) existingRow(s *plan.Scan, op client.Op) (int64, bool, error) {
	tbl, err := r.s.openTable(r.ctx, s.Table)
	if err != nil {
		return 0, true, err
	}
	missing, err := tbl.ApplyExisting(r.ctx, []client.Op{op})
	if err != nil {
		return 0, true, err
	}
	r.s.noteRead(s, 0, 1-len(missing))
	return int64(1 - len(missing)), true, nil
}

// needsTxn is updateAtTablet's answer when the update is not an add: the
// row's way in a transaction, or errNeedsTxn without one.
func (r *runner) needsTxn() (int64, bool, error) {
	if r.txn == nil {
		return 0, true, errNeedsTxn
	}
	return 0, false, nil
}

// outOfRangeName names the type of the column (by storage id) whose sum
// overflowed, as PostgreSQL's overflow message does.
func outOfRangeName(t *catalog.Table, tbl *client.Table, id uint32) string {
	for i := range t.Columns {
		if c, ok := tbl.Schema().Column(catalog.StorageColumn(&t.Columns[i])); ok && c.ID == id {
			switch t.Columns[i].Type.OID {
			case types.OIDInt2:
				return "smallint"
			case types.OIDInt8:
				return "bigint"
			}
			return "integer"
		}
	}
	return "integer"
}
