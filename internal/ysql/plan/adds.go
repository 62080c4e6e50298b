package plan

import "github.com/shaledb/shaledb/internal/ysql/types"

// TabletAdd is one SET c = c + x (or c - x) of an UPDATE the tablet can
// run: Delta, evaluated once, is added to (Negate: subtracted from) the
// integer column Column.
type TabletAdd struct {
	Column int
	Delta  Expr
	Negate bool
}

// DeltaText renders the delta as EXPLAIN shows values.
func (a TabletAdd) DeltaText() string { return formatValue(a.Delta) }

// TabletAdds returns the SET list of u as adds the tablet computes under
// the row's lock (client.OpAdd), when u is an UPDATE of one row by its
// whole primary key that only adds to integer columns, in their own type,
// values that do not depend on the row: pgbench's
// `UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2`.
// Then the statement needs no read of the row. Not when anything else
// needs the old or new row here: RETURNING, a CHECK constraint on a set
// column, secondary indexes (their entries follow the row), a filter
// beyond the key.
func TabletAdds(u *Update) ([]TabletAdd, bool) {
	s, ok := u.Source.(*Scan)
	if !ok || s.Access.Kind != PointGet || s.Access.Index != nil || !onlyKey(s) ||
		u.Returning != nil || len(u.Table.Indexes) > 0 || len(u.Set) == 0 {
		return nil, false
	}
	for _, c := range u.Checks {
		used := map[int]bool{}
		if !columnsUsed(c, used) {
			return nil, false
		}
		for col := range u.Set {
			if used[col] {
				return nil, false
			}
		}
	}
	adds := make([]TabletAdd, 0, len(u.Set))
	for col, e := range u.Set {
		t := u.Table.Columns[col].Type
		if u.Table.IsKey(col) || !addable(t) {
			return nil, false
		}
		b, ok := e.(*BinOp)
		if !ok || (b.Name != "+" && b.Name != "-") || b.T.OID != t.OID {
			return nil, false
		}
		l, ok := b.L.(*ColRef)
		if !ok || l.Idx != col || !rowIndependent(b.R) || !addable(b.R.Type()) {
			return nil, false
		}
		adds = append(adds, TabletAdd{Column: col, Delta: b.R, Negate: b.Name == "-"})
	}
	return adds, true
}

// addable: the integer types, whose sums the tablet checks against the
// type's range as PostgreSQL's operators do.
func addable(t types.T) bool {
	switch t.OID {
	case types.OIDInt2, types.OIDInt4, types.OIDInt8:
		return true
	}
	return false
}

// onlyKey reports whether a point get's filter (kept whole, see
// chooseAccess) is nothing but the key equalities its access uses.
func onlyKey(s *Scan) bool {
	for _, c := range conjuncts(s.Filter, nil) {
		used := false
		for i, k := range s.Table.Key {
			if op, val, ok := keyCond(c, k.Column); ok && op == "=" && i < len(s.Access.Eq) && val == s.Access.Eq[i] {
				used = true
				break
			}
		}
		if !used {
			return false
		}
	}
	return true
}
