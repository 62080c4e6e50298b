package exec

import (
	"crypto/rand"
	"fmt"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
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
}

const maxBatch = 512

func (r *runner) flush(b *writeBatch) error {
	if len(b.ops) == 0 {
		return nil
	}
	err := r.txn.Apply(r.ctx, b.tbl, b.ops)
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
	var names, vals string
	for i, k := range t.Key {
		if i > 0 {
			names += ", "
			vals += ", "
		}
		c := &t.Columns[k.Column]
		names += c.Name
		vals += s.formatDatum(row[k.Column], c.Type)
	}
	return &pgerror.Error{Code: pgerror.CodeUniqueViolation, Table: t.Name, Constraint: t.PKName,
		Message: fmt.Sprintf("duplicate key value violates unique constraint %q", t.PKName),
		Detail:  fmt.Sprintf("Key (%s)=(%s) already exists.", names, vals)}
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
	t := ins.Table
	tbl, err := r.s.openTable(r.ctx, t)
	if err != nil {
		return 0, nil, err
	}
	src, err := r.rows(ins.Source)
	if err != nil {
		return 0, nil, err
	}
	ib := &insertBatch{tbl: tbl}
	st := &insertState{ins: ins, tbl: tbl}
	if ins.OnConflict != nil {
		st.pending = map[string]bool{}
	}
	for _, row := range src {
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
	return st.n, st.returned, nil
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
	n        int64
	returned []plan.Row
	// pending (ON CONFLICT only) holds the keys the statement wrote: a
	// row proposed again conflicts with the statement's own row.
	pending map[string]bool
}

// inserted counts a written row and evaluates its RETURNING list.
func (r *runner) inserted(st *insertState, row plan.Row) error {
	st.n++
	if st.ins.Returning == nil {
		return nil
	}
	out, err := r.evalAll(st.ins.Returning, row)
	if err != nil {
		return err
	}
	st.returned = append(st.returned, out)
	return nil
}

// flushInserts writes the batch's rows (see insert) and empties it.
func (r *runner) flushInserts(st *insertState, ib *insertBatch) error {
	if len(ib.ops) == 0 {
		return nil
	}
	defer func() { ib.rows, ib.ops = ib.rows[:0], ib.ops[:0] }()
	t := st.ins.Table
	var keys [][]byte
	together := true // ON CONFLICT: no key twice in the statement so far
	if st.pending != nil {
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
		err := r.txn.Apply(r.ctx, ib.tbl, ib.ops)
		if err == nil {
			for i, row := range ib.rows {
				if keys != nil {
					st.pending[string(keys[i])] = true
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
	b := &writeBatch{tbl: ib.tbl}
	for i, row := range ib.rows {
		if err := r.insertChecked(st, b, row, ib.ops[i].Row, keys[i]); err != nil {
			return err
		}
	}
	return r.flush(b)
}

// insertChecked inserts one row of an INSERT ... ON CONFLICT: it reads and
// locks the row first, and applies the conflict action if it exists.
func (r *runner) insertChecked(st *insertState, b *writeBatch, row plan.Row, sr client.Row, rk []byte) error {
	ins, t, tbl := st.ins, st.ins.Table, st.tbl
	exists := st.pending[string(rk)]
	var old client.Row
	if !exists {
		if err := r.flush(b); err != nil {
			return err
		}
		key, err := storageRow(t, row, true)
		if err != nil {
			return err
		}
		old, exists, err = r.txn.GetForUpdate(r.ctx, tbl, key, client.ForUpdate, client.WaitOnConflict)
		if err != nil {
			return err
		}
	}
	if !exists {
		st.pending[string(rk)] = true
		if err := r.add(b, client.Op{Kind: client.OpPut, Row: sr}); err != nil {
			return err
		}
		return r.inserted(st, row)
	}
	switch {
	case ins.OnConflict == nil:
		return uniqueViolation(t, r.s, row)
	case ins.OnConflict.DoNothing:
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
	if err := r.writeUpdate(b, t, oldRow, updated); err != nil {
		return err
	}
	st.pending[string(rk)] = true
	return r.inserted(st, updated)
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
func (r *runner) writeUpdate(b *writeBatch, t *catalog.Table, old, next plan.Row) error {
	sr := client.Row{}
	for i := range t.Columns {
		c := &t.Columns[i]
		if t.IsKey(i) {
			v, err := types.ToKeyStorage(next[i], c.Type)
			if err != nil {
				return err
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
			return err
		}
		sr[catalog.StorageColumn(c)] = v
	}
	return r.add(b, client.Op{Kind: client.OpUpdate, Row: sr})
}

func sameDatum(a, b types.Datum, t types.T) bool {
	if a.Null || b.Null {
		return a.Null == b.Null
	}
	return types.Compare(a, b, t) == 0 && t.Family() != types.FamFloat
}

// update runs an UPDATE.
func (r *runner) update(u *plan.Update) (int64, []plan.Row, error) {
	t := u.Table
	tbl, err := r.s.openTable(r.ctx, t)
	if err != nil {
		return 0, nil, err
	}
	rows, err := r.rows(u.Source)
	if err != nil {
		return 0, nil, err
	}
	b := &writeBatch{tbl: tbl}
	var returned []plan.Row
	keyChanged := false
	for i := range u.Set {
		if t.IsKey(i) {
			keyChanged = true
		}
	}
	for _, old := range rows {
		next := append(plan.Row(nil), old...)
		for i, e := range u.Set {
			d, err := e.Eval(r.ec, old)
			if err != nil {
				return 0, nil, err
			}
			next[i] = d
		}
		if err := r.checkRow(t, next, u.Checks); err != nil {
			return 0, nil, err
		}
		if keyChanged && !sameKey(t, old, next) {
			if err := r.moveRow(b, tbl, t, old, next); err != nil {
				return 0, nil, err
			}
		} else if err := r.writeUpdate(b, t, old, next); err != nil {
			return 0, nil, err
		}
		if u.Returning != nil {
			out, err := r.evalAll(u.Returning, next)
			if err != nil {
				return 0, nil, err
			}
			returned = append(returned, out)
		}
	}
	return int64(len(rows)), returned, r.flush(b)
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
func (r *runner) moveRow(b *writeBatch, tbl *client.Table, t *catalog.Table, old, next plan.Row) error {
	if err := r.flush(b); err != nil {
		return err
	}
	key, err := storageRow(t, next, true)
	if err != nil {
		return err
	}
	if _, exists, err := r.txn.GetForUpdate(r.ctx, tbl, key, client.ForUpdate, client.WaitOnConflict); err != nil {
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
	if err := r.add(b, client.Op{Kind: client.OpDelete, Row: oldKey}); err != nil {
		return err
	}
	return r.add(b, client.Op{Kind: client.OpPut, Row: sr})
}

// delete runs a DELETE.
func (r *runner) delete(d *plan.Delete) (int64, []plan.Row, error) {
	t := d.Table
	tbl, err := r.s.openTable(r.ctx, t)
	if err != nil {
		return 0, nil, err
	}
	rows, err := r.rows(d.Source)
	if err != nil {
		return 0, nil, err
	}
	b := &writeBatch{tbl: tbl}
	var returned []plan.Row
	for _, row := range rows {
		key, err := storageRow(t, row, true)
		if err != nil {
			return 0, nil, err
		}
		if err := r.add(b, client.Op{Kind: client.OpDelete, Row: key}); err != nil {
			return 0, nil, err
		}
		if d.Returning != nil {
			out, err := r.evalAll(d.Returning, row)
			if err != nil {
				return 0, nil, err
			}
			returned = append(returned, out)
		}
	}
	return int64(len(rows)), returned, r.flush(b)
}
