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
	b := &writeBatch{tbl: tbl}
	var n int64
	var returned []plan.Row
	// pending holds keys written by this statement but not yet flushed,
	// so duplicates inside one statement are caught too.
	pending := map[string]bool{}
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
		if !t.RowID {
			key, err := storageRow(t, row, true)
			if err != nil {
				return 0, nil, err
			}
			rk, err := tbl.RowKey(key)
			if err != nil {
				return 0, nil, err
			}
			exists := pending[string(rk)]
			var old client.Row
			if !exists {
				if err := r.flush(b); err != nil {
					return 0, nil, err
				}
				old, exists, err = r.txn.GetForUpdate(r.ctx, tbl, key, client.ForUpdate, client.WaitOnConflict)
				if err != nil {
					return 0, nil, err
				}
			}
			if exists {
				switch {
				case ins.OnConflict == nil:
					return 0, nil, uniqueViolation(t, r.s, row)
				case ins.OnConflict.DoNothing:
					continue
				}
				if old == nil {
					return 0, nil, pgerror.New(pgerror.CodeCardinalityViolation, "ON CONFLICT DO UPDATE command cannot affect row a second time").
						WithHint("Ensure that no rows proposed for insertion within the same command have duplicate constrained values.")
				}
				oldRow, err := tableRow(t, old)
				if err != nil {
					return 0, nil, err
				}
				updated, ok, err := r.conflictUpdate(ins, oldRow, row)
				if err != nil {
					return 0, nil, err
				}
				if !ok {
					continue
				}
				if err := r.writeUpdate(b, t, oldRow, updated); err != nil {
					return 0, nil, err
				}
				pending[string(rk)] = true
				row = updated
				n++
				if ins.Returning != nil {
					out, err := r.evalAll(ins.Returning, row)
					if err != nil {
						return 0, nil, err
					}
					returned = append(returned, out)
				}
				continue
			}
			pending[string(rk)] = true
		}
		if err := r.add(b, client.Op{Kind: client.OpPut, Row: sr}); err != nil {
			return 0, nil, err
		}
		n++
		if ins.Returning != nil {
			out, err := r.evalAll(ins.Returning, row)
			if err != nil {
				return 0, nil, err
			}
			returned = append(returned, out)
		}
	}
	return n, returned, r.flush(b)
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
