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
// needs the old or new row here (oneRowUpdate).
func TabletAdds(u *Update) ([]TabletAdd, bool) {
	if !oneRowUpdate(u) {
		return nil, false
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

// TabletSets reports whether u is an UPDATE of one row by its whole
// primary key that sets non-key columns to values that do not depend on
// the row (constants, parameters and what stable functions make of them):
// `UPDATE t SET v = $1 WHERE k = $2`. Outside a transaction block it is
// then one write of those columns that the tablet applies if the row
// exists (client.Table.ApplyExisting), with no read first. Not when
// anything else needs the old or new row here (oneRowUpdate).
func TabletSets(u *Update) bool {
	if !oneRowUpdate(u) {
		return false
	}
	for col, e := range u.Set {
		if u.Table.IsKey(col) || !rowIndependent(e) {
			return false
		}
	}
	return true
}

// oneRowUpdate reports whether u changes one row by its whole primary key
// with nothing needing the row's old or new values but the tablet:
// no RETURNING, no CHECK constraint on a set column, no secondary index
// (its entries follow the row), no filter beyond the key.
func oneRowUpdate(u *Update) bool {
	if !onePointRow(u.Source) || u.Returning != nil || len(u.Table.Indexes) > 0 || len(u.Set) == 0 {
		return false
	}
	return !checksSet(u.Checks, u.Set)
}

// checksSet reports whether a CHECK constraint may read a column set
// (one it cannot tell counts).
func checksSet(checks []Expr, set map[int]Expr) bool {
	for _, c := range checks {
		used := map[int]bool{}
		if !columnsUsed(c, used) {
			return true
		}
		for col := range set {
			if used[col] {
				return true
			}
		}
	}
	return false
}

// PointDelete reports whether d deletes one row by its whole primary key
// with no RETURNING, secondary index or filter beyond the key: outside a
// transaction block it is one delete the tablet applies if the row exists
// (client.Table.ApplyExisting).
func PointDelete(d *Delete) bool {
	return onePointRow(d.Source) && d.Returning == nil && len(d.Table.Indexes) == 0
}

// onePointRow reports whether n reads one row of its table by the whole
// primary key and filters on nothing else.
func onePointRow(n Node) bool {
	s, ok := n.(*Scan)
	return ok && s.Access.Kind == PointGet && s.Access.Index == nil && s.Access.Rest == nil
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

// TabletUpsert reports whether ins is an INSERT of one VALUES row with ON
// CONFLICT on the primary key, DO NOTHING or DO UPDATE setting non-key
// columns to what the EXCLUDED row, constants and parameters make, into a
// table without secondary indexes or a hidden row id; with no RETURNING,
// no WHERE on the update and no CHECK constraint on a column it sets.
// Outside a transaction block it is then an insert the tablet refuses if
// the key exists, and after a refusal an update the tablet applies if the
// row still exists (client.Table.ApplyExisting): the existing row is
// never needed here.
func TabletUpsert(ins *Insert) bool {
	oc, t := ins.OnConflict, ins.Table
	if oc == nil || oc.Index != "" || ins.Returning != nil || len(t.Indexes) > 0 || t.RowID {
		return false
	}
	if v, ok := ins.Source.(*Values); !ok || len(v.Rows) != 1 {
		return false
	}
	if oc.DoNothing {
		return true
	}
	if oc.Where != nil || len(oc.Set) == 0 {
		return false
	}
	for col, e := range oc.Set {
		used := map[int]bool{}
		if t.IsKey(col) || !columnsUsed(e, used) {
			return false
		}
		for c := range used {
			if c < len(t.Columns) {
				return false // a column of the existing row
			}
		}
	}
	return !checksSet(ins.Checks, oc.Set)
}
