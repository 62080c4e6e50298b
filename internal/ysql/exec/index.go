package exec

import (
	"bytes"
	"context"
	"fmt"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Index maintenance: every write of a base row writes, in the same
// transaction, what changes in each index of the table (see catalog's
// index.go for the row layout). An index still in IndexDeleteOnly only
// gets deletes.

// indexWriter is one index of a table being written by a statement.
type indexWriter struct {
	ix     *catalog.Index
	layout catalog.IndexLayout
	base   *client.Table
	b      writeBatch
	// rows[i] is the base row of b.ops[i] (to name a duplicate).
	rows []plan.Row
	pred plan.Expr // nil: every row
}

// tableWriter is a statement's writes to a table and its indexes; flush
// sends them all.
type tableWriter struct {
	t    *catalog.Table
	base writeBatch
	idx  []*indexWriter
	fk   *fkWriter // nil: no foreign key has t on either side
}

// newTableWriter opens t and its indexes for writing.
func (r *runner) newTableWriter(t *catalog.Table) (*tableWriter, error) {
	tbl, err := r.s.openTable(r.ctx, t)
	if err != nil {
		return nil, err
	}
	tw := &tableWriter{t: t, base: writeBatch{tbl: tbl}}
	if tw.fk, err = r.newFKWriter(t); err != nil {
		return nil, err
	}
	for i := range t.Indexes {
		ix := &t.Indexes[i]
		itbl, err := r.s.openIndex(r.ctx, t, ix)
		if err != nil {
			return nil, err
		}
		w := &indexWriter{ix: ix, layout: t.Layout(ix), base: tbl, b: writeBatch{tbl: itbl}}
		if ix.Predicate != "" {
			if w.pred, err = r.s.indexPredicate(r.ctx, t, ix); err != nil {
				return nil, err
			}
		}
		tw.idx = append(tw.idx, w)
	}
	return tw, nil
}

// indexPredicate binds a partial index's predicate over t's row.
func (s *Session) indexPredicate(ctx context.Context, t *catalog.Table, ix *catalog.Index) (plan.Expr, error) {
	b, err := s.binder(ctx)
	if err != nil {
		return nil, err
	}
	return b.IndexPredicate(t, ix.Predicate)
}

// openIndex opens the storage table of an index.
func (s *Session) openIndex(ctx context.Context, t *catalog.Table, ix *catalog.Index) (*client.Table, error) {
	if tbl, ok := s.tables[ix.MasterID]; ok {
		return tbl, nil
	}
	tbl, err := s.e.cfg.Client.OpenTableAs(ctx, catalog.MasterNamespace(t.Database), catalog.MasterName(t.Schema, ix.Name), ix.MasterID)
	if err != nil {
		if client.IsTableNotFound(err) {
			s.e.cfg.Cache.Refresh()
			return nil, tableGone(err, "index %q does not exist", ix.Name)
		}
		return nil, err
	}
	s.tables[ix.MasterID] = tbl
	return tbl, nil
}

// flush sends every pending write of the table and its indexes, then
// does the foreign-key work they need.
func (r *runner) flushTable(tw *tableWriter) error {
	if err := r.flushWrites(tw); err != nil {
		return err
	}
	return r.fkFlush(tw)
}

// flushWrites sends every pending write of the table and its indexes.
func (r *runner) flushWrites(tw *tableWriter) error {
	if err := r.flush(&tw.base); err != nil {
		return err
	}
	for _, w := range tw.idx {
		if err := r.flushIndex(tw, w); err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) flushIndex(tw *tableWriter, w *indexWriter) error {
	if len(w.b.ops) == 0 {
		return nil
	}
	err := r.flush(&w.b)
	rows := w.rows
	w.rows = w.rows[:0]
	if i, dup := client.DuplicateIndex(err); dup && i < len(rows) {
		return r.s.indexViolation(tw.t, w.ix, rows[i])
	}
	return err
}

// addIndexOp queues an index write.
func (r *runner) addIndexOp(tw *tableWriter, w *indexWriter, op client.Op, row plan.Row) error {
	w.b.ops = append(w.b.ops, op)
	w.rows = append(w.rows, row)
	if len(w.b.ops) >= maxBatch {
		return r.flushIndex(tw, w)
	}
	return nil
}

// matches reports whether a row belongs in a (partial) index.
func (r *runner) matches(w *indexWriter, row plan.Row) (bool, error) {
	if w.pred == nil {
		return true, nil
	}
	d, err := w.pred.Eval(r.ec, row)
	if err != nil {
		return false, err
	}
	return !d.Null && d.Bool(), nil
}

// indexEntry is a base row's index row: key holds the key columns, row
// every column.
func indexEntry(t *catalog.Table, w *indexWriter, row plan.Row) (key, full client.Row, err error) {
	key, full = client.Row{}, client.Row{}
	anyNull := false
	for _, p := range w.layout.Key[:w.layout.KeyCols] {
		if row[p.Col].Null {
			anyNull = true
		}
	}
	for _, p := range w.layout.Key {
		var v docdb.Value
		var name string
		if p.Col < 0 {
			name = catalog.SuffixColumn
			if anyNull {
				pk, err := storageRow(t, row, true)
				if err != nil {
					return nil, nil, err
				}
				rk, err := w.base.RowKey(pk)
				if err != nil {
					return nil, nil, err
				}
				v = docdb.Bytes(rk)
			}
		} else {
			c := &t.Columns[p.Col]
			name = catalog.StorageColumn(c)
			if !row[p.Col].Null {
				if v, err = types.ToKeyStorage(row[p.Col], c.Type); err != nil {
					return nil, nil, err
				}
			}
		}
		key[name], full[name] = v, v
	}
	for _, i := range w.layout.Values {
		c := &t.Columns[i]
		v := docdb.Null()
		if !row[i].Null {
			conv := types.ToStorage
			if t.IsKey(i) {
				conv = types.ToKeyStorage
			}
			if v, err = conv(row[i], c.Type); err != nil {
				return nil, nil, err
			}
		}
		full[catalog.StorageColumn(c)] = v
	}
	return key, full, nil
}

// uniqueKeyed reports whether an index row is checked for uniqueness: a
// unique index's row without NULLs in its index columns.
func uniqueKeyed(w *indexWriter, full client.Row) bool {
	return w.ix.Unique && full[catalog.SuffixColumn].IsNull()
}

func sameStorageRow(a, b client.Row) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		o, ok := b[k]
		if !ok || v.IsNull() != o.IsNull() || !v.IsNull() && !v.Equal(o) {
			return false
		}
	}
	return true
}

// indexWrites queues what changes in the indexes of tw's table when a base
// row goes from old to next (nil old: an insert; nil next: a delete).
func (r *runner) indexWrites(tw *tableWriter, old, next plan.Row) error {
	for _, w := range tw.idx {
		var oldKey, oldFull, newKey, newFull client.Row
		if old != nil {
			ok, err := r.matches(w, old)
			if err != nil {
				return err
			}
			if ok {
				if oldKey, oldFull, err = indexEntry(tw.t, w, old); err != nil {
					return err
				}
			}
		}
		if next != nil && w.ix.Inserts() {
			ok, err := r.matches(w, next)
			if err != nil {
				return err
			}
			if ok {
				if newKey, newFull, err = indexEntry(tw.t, w, next); err != nil {
					return err
				}
			}
		}
		if oldFull != nil && newFull != nil {
			if sameStorageRow(oldFull, newFull) {
				continue
			}
			ok, err := sameIndexKey(w, oldKey, newKey)
			if err != nil {
				return err
			}
			if ok { // the same index row: rewrite its values
				if err := r.addIndexOp(tw, w, client.Op{Kind: client.OpPut, Row: newFull}, next); err != nil {
					return err
				}
				continue
			}
		}
		if oldKey != nil {
			if err := r.addIndexOp(tw, w, client.Op{Kind: client.OpDelete, Row: oldKey}, old); err != nil {
				return err
			}
		}
		if newFull != nil {
			kind := client.OpPut
			if uniqueKeyed(w, newFull) {
				kind = client.OpInsert
			}
			if err := r.addIndexOp(tw, w, client.Op{Kind: kind, Row: newFull}, next); err != nil {
				return err
			}
		}
	}
	if tw.fk != nil {
		return r.fkRowChange(tw, old, next)
	}
	return nil
}

func sameIndexKey(w *indexWriter, a, b client.Row) (bool, error) {
	ka, err := w.b.tbl.RowKey(a)
	if err != nil {
		return false, err
	}
	kb, err := w.b.tbl.RowKey(b)
	if err != nil {
		return false, err
	}
	return bytes.Equal(ka, kb), nil
}

// indexViolation is 23505 for a row colliding in a unique index.
func (s *Session) indexViolation(t *catalog.Table, ix *catalog.Index, row plan.Row) *pgerror.Error {
	cols := make([]int, len(ix.Columns))
	for i, c := range ix.Columns {
		cols[i] = t.ColumnByID(c.ID)
	}
	return &pgerror.Error{Code: pgerror.CodeUniqueViolation, Table: t.Name, Constraint: ix.Name,
		Message: fmt.Sprintf("duplicate key value violates unique constraint %q", ix.Name),
		Detail:  fmt.Sprintf("Key %s already exists.", s.formatKey(t, cols, pick(row, cols)))}
}

// indexScan reads a table through a secondary index: a key-range scan of
// the index, then (unless the index covers the query) the base rows by
// their primary keys, several reads at once.
func (r *runner) indexScan(s *plan.Scan, tbl *client.Table) ([]plan.Row, error) {
	t, ix := s.Table, s.Access.Index
	itbl, opts, filter, ok, err := r.indexScanOptions(s)
	if err != nil || !ok {
		return nil, err
	}
	raw, err := r.scanRows(itbl, opts)
	if err != nil {
		return nil, err
	}
	var out []plan.Row
	if s.Access.IndexOnly {
		// Columns the index lacks read as NULL: the query reads none.
		if out, err = tableRows(t, raw); err != nil {
			return nil, err
		}
		r.s.noteRead(s, len(raw), 0)
	} else {
		if out, err = r.baseRows(t, ix, tbl, raw); err != nil {
			return nil, err
		}
		r.s.noteRead(s, len(raw), len(out))
	}
	out, err = r.filter(out, filter)
	if err != nil {
		return nil, err
	}
	if s.Lock != plan.NoLock && r.txn != nil && len(out) > 0 {
		return r.lockRows(s, tbl, out)
	}
	return out, nil
}

// indexScanOptions opens the index of an index scan and returns its scan
// options and the rest of the filter, to evaluate over the rows read; ok
// is false when its key range is empty.
func (r *runner) indexScanOptions(s *plan.Scan) (itbl *client.Table, opts client.ScanOptions, filter plan.Expr, ok bool, err error) {
	t, ix := s.Table, s.Access.Index
	if itbl, err = r.s.openIndex(r.ctx, t, ix); err != nil {
		return nil, opts, nil, false, err
	}
	if ok, err = r.indexBounds(t, t.Layout(ix), s.Access, &opts); err != nil || !ok {
		return nil, opts, nil, false, err
	}
	return itbl, opts, r.pushOptions(s, &opts), true, nil
}

// baseRows reads the base rows of index rows by their primary keys.
func (r *runner) baseRows(t *catalog.Table, ix *catalog.Index, tbl *client.Table, raw []client.Row) ([]plan.Row, error) {
	w := &indexWriter{ix: ix, layout: t.Layout(ix)}
	keys := make([]client.Row, len(raw))
	for i, ir := range raw {
		keys[i] = baseKeyOf(t, w, ir)
	}
	return r.getRows(t, tbl, keys, false)
}

// getRows reads the rows of t with the given primary keys (those that
// exist), several reads at once in a transaction; locked says the
// transaction has locked them (read committed then reads their newest
// versions, not the statement's snapshot).
func (r *runner) getRows(t *catalog.Table, tbl *client.Table, keys []client.Row, locked bool) ([]plan.Row, error) {
	var rows []client.Row
	var found []bool
	var err error
	switch {
	case r.txn != nil && locked:
		rows, found, err = r.txn.GetLocked(r.ctx, tbl, keys)
	case r.txn != nil:
		rows, found, err = r.txn.GetMany(r.ctx, tbl, keys)
	default:
		rows, found = make([]client.Row, len(keys)), make([]bool, len(keys))
		for i, k := range keys {
			if rows[i], found[i], err = tbl.Get(r.ctx, k); err != nil {
				break
			}
		}
	}
	if err != nil {
		return nil, err
	}
	out := make([]plan.Row, 0, len(rows))
	for i, sr := range rows {
		if !found[i] {
			continue
		}
		row, err := tableRow(t, sr)
		if err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, nil
}

// indexBounds sets the bounds of an index scan: the fixed leading index
// columns, and the bounds of the next one (widened to inclusive; the
// filter drops the edge rows). ok is false when a fixed value is NULL.
func (r *runner) indexBounds(t *catalog.Table, l catalog.IndexLayout, a plan.Access, opts *client.ScanOptions) (bool, error) {
	prefix := client.Row{}
	for i, e := range a.Eq {
		d, err := e.Eval(r.ec, nil)
		if err != nil || d.Null {
			return false, err
		}
		c := &t.Columns[l.Key[i].Col]
		v, err := types.ToKeyStorage(d, c.Type)
		if err != nil {
			return false, err
		}
		prefix[catalog.StorageColumn(c)] = v
	}
	if len(a.Eq) < l.KeyCols && (a.Lo != nil || a.Hi != nil) {
		p := l.Key[len(a.Eq)]
		return r.setKeyBounds(opts, prefix, &t.Columns[p.Col], p.Desc, a.Lo, a.Hi)
	}
	return r.setKeyBounds(opts, prefix, nil, false, nil, nil)
}
