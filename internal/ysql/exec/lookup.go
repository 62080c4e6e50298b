package exec

import (
	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// lookupSource runs a batched lookup join (plan/lookup.go): per batch of
// left rows, the right rows with the batch's key values are read and the
// batch is hash-joined with them. Every right row that can match a left
// row of the batch is read, so the join (its ON condition, LEFT JOIN's
// NULL-extended rows) is that of the whole right side. The left rows come
// as the left side gives them (a scan's, page by page).
type lookupSource struct {
	r    *runner
	j    *plan.Join
	left rowSource
	out  []plan.Row // the current batch's joined rows not yet returned
	done bool       // the left side has ended
}

func (x *lookupSource) next() (plan.Row, error) {
	for len(x.out) == 0 {
		if x.done {
			return nil, nil
		}
		batch := make([]plan.Row, 0, plan.LookupBatch)
		for len(batch) < plan.LookupBatch {
			row, err := x.left.next()
			if err != nil {
				return nil, err
			}
			if row == nil {
				x.done = true
				break
			}
			batch = append(batch, row)
		}
		if len(batch) == 0 {
			return nil, nil
		}
		right, err := x.r.lookupRows(x.j.Lookup, x.j.Right.(*plan.Scan), batch)
		if err != nil {
			return nil, err
		}
		if x.out, err = x.r.joinRows(x.j, batch, right); err != nil {
			return nil, err
		}
	}
	return pop(&x.out), nil
}

// lookupRows reads the rows of s's table whose lookup key columns hold
// the values of some row of batch, keeps those passing s's filter and
// locks them if s locks.
func (r *runner) lookupRows(l *plan.Lookup, s *plan.Scan, batch []plan.Row) ([]plan.Row, error) {
	keys, err := r.lookupKeys(l, s.Table, batch)
	if err != nil || len(keys) == 0 {
		return nil, err
	}
	tbl, err := r.s.openTable(r.ctx, s.Table)
	if err != nil {
		return nil, err
	}
	var rows []plan.Row
	switch {
	case l.Point:
		rows, err = r.getRows(s.Table, tbl, keys, false)
	case l.Index != nil:
		rows, err = r.indexLookup(s.Table, l.Index, tbl, keys)
	default:
		rows, err = r.prefixLookup(s.Table, tbl, keys)
	}
	if err != nil {
		return nil, err
	}
	if rows, err = r.filter(rows, s.Filter); err != nil {
		return nil, err
	}
	if s.Lock != plan.NoLock && r.txn != nil && len(rows) > 0 {
		// Only the rows read are locked (plan.chooseLookup: whole keys),
		// as a locking range scan locks the rows it returns.
		return r.lockRows(s, tbl, rows)
	}
	return rows, nil
}

// lookupKeys returns the distinct storage key prefixes of batch's rows. A
// row with a NULL key value, or one no column value can equal (an integer
// out of the column's range), matches nothing and adds none.
func (r *runner) lookupKeys(l *plan.Lookup, t *catalog.Table, batch []plan.Row) ([]client.Row, error) {
	ts := make([]types.T, len(l.Cols))
	for i, c := range l.Cols {
		ts[i] = t.Columns[c].Type
	}
	seen := map[string]bool{}
	var keys []client.Row
	for _, row := range batch {
		vals, err := r.evalAll(l.Keys, row)
		if err != nil {
			return nil, err
		}
		key, ok := lookupKey(t, l.Cols, vals)
		if !ok {
			continue
		}
		if k := rowKey(vals, ts); !seen[k] {
			seen[k] = true
			keys = append(keys, key)
		}
	}
	return keys, nil
}

// lookupKey converts one row's key values to the storage key prefix of
// columns cols; ok is false when no row can have them.
func lookupKey(t *catalog.Table, cols []int, vals []types.Datum) (client.Row, bool) {
	key := client.Row{}
	for i, c := range cols {
		if vals[i].Null {
			return nil, false
		}
		col := &t.Columns[c]
		v, ok := keyStorage(vals[i], col.Type)
		if !ok {
			return nil, false
		}
		key[catalog.StorageColumn(col)] = v
	}
	return key, true
}

// prefixLookup reads the rows whose primary key starts with each prefix.
func (r *runner) prefixLookup(t *catalog.Table, tbl *client.Table, prefixes []client.Row) ([]plan.Row, error) {
	raw, err := r.prefixScans(tbl, prefixes)
	if err != nil {
		return nil, err
	}
	return tableRows(t, raw)
}

// indexLookup reads the rows whose index key starts with each prefix:
// the index rows first, then the base rows in one batched read.
func (r *runner) indexLookup(t *catalog.Table, ix *catalog.Index, tbl *client.Table, prefixes []client.Row) ([]plan.Row, error) {
	itbl, err := r.s.openIndex(r.ctx, t, ix)
	if err != nil {
		return nil, err
	}
	raw, err := r.prefixScans(itbl, prefixes)
	if err != nil {
		return nil, err
	}
	return r.baseRows(t, ix, tbl, raw)
}

// prefixScans scans tbl once per key prefix. The scans go one after
// another: a transaction's scans fix its read time and are not run at once.
func (r *runner) prefixScans(tbl *client.Table, prefixes []client.Row) ([]client.Row, error) {
	var out []client.Row
	for _, p := range prefixes {
		var opts client.ScanOptions
		if _, err := r.setKeyBounds(&opts, p, nil, false, nil, nil); err != nil {
			return nil, err
		}
		rows, err := r.scanRows(tbl, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}
