package plan

import "github.com/shaledb/shaledb/internal/ysql/catalog"

// ORDER BY from the scan's order. A scan returns its rows in the order of
// the key it reads, the table's primary key or a secondary index's key
// (forward, or backward with Scan.Reverse; the client reads the tablets of
// a range-sharded table in key order, also when it reads them in
// parallel): after the leading key columns the WHERE clause fixes, by the
// next key columns, each ascending or descending as stored. A hash column
// orders nothing across hash values, so every hash column must be fixed.
// When the ORDER BY keys are that order or its exact reverse, the planner
// drops the Sort (and a LIMIT over it then reaches the scan).
//
// NULLs: the key encoding puts NULL before every value of an ascending
// column and after every value of a descending one, so the scan gives
// ASC NULLS FIRST and DESC NULLS LAST (either way round); PostgreSQL's
// default ASC is NULLS LAST, so a sort key is only matched on a column
// that holds no NULL among the rows read (NOT NULL, a primary-key column,
// or one the WHERE clause rejects NULLs of) or with that NULL placement.

// orderPart is one column of a scan's order.
type orderPart struct {
	col  int  // table column index
	desc bool // stored descending
}

// scanOrder returns the order of s's rows after its fixed leading key
// columns; ok is false when the rows have no order (a hash column not
// fixed).
func scanOrder(s *Scan) (parts []orderPart, ok bool) {
	t, a := s.Table, s.Access
	if a.Index != nil {
		if len(a.Eq) < indexHashCount(a.Index) {
			return nil, false
		}
		for _, p := range t.Layout(a.Index).Key[len(a.Eq):] {
			if p.Col < 0 {
				break // a unique index's suffix: no column
			}
			parts = append(parts, orderPart{col: p.Col, desc: p.Desc})
		}
		return parts, true
	}
	if len(t.Key) == 0 || len(a.Eq) < t.HashKeyCount() {
		return nil, false
	}
	for _, k := range t.Key[len(a.Eq):] {
		parts = append(parts, orderPart{col: k.Column, desc: k.Desc})
	}
	return parts, true
}

// orderByScan reports whether the ORDER BY keys (over proj, whose input
// is sc) are sc's order or its reverse, and sets sc.Reverse for the
// latter. A sort key on a column the WHERE clause fixes (col = value) is
// constant and skipped; a key of a type whose stored order is not
// PostgreSQL's (RemoteType) needs the sort.
func orderByScan(sc *Scan, proj *Project, keys []SortKey) bool {
	if sc.Access.Kind == PointGet {
		return true // at most one row
	}
	var cs []Expr
	if sc.Filter != nil {
		cs = conjuncts(sc.Filter, nil)
	}
	t := sc.Table
	var cols []int // the table columns of the keys not fixed
	var rest []SortKey
	for _, k := range keys {
		cr, ok := proj.Exprs[k.E.(*ColRef).Idx].(*ColRef)
		if !ok || cr.Idx >= len(t.Columns) {
			return false
		}
		if !fixedColumn(cs, cr.Idx) {
			cols, rest = append(cols, cr.Idx), append(rest, k)
		}
	}
	if len(rest) == 0 {
		return true // every sort key is constant
	}
	parts, ok := scanOrder(sc)
	if !ok {
		return false
	}
	notNull := nullRejected(cs)
	reverse := len(parts) > 0 && rest[0].Desc != parts[0].desc
	for i, k := range rest {
		if i >= len(parts) || parts[i].col != cols[i] || !RemoteType(t.Columns[cols[i]].Type) ||
			(k.Desc != parts[i].desc) != reverse {
			return false
		}
		// The scan gives NULLs first ascending, last descending.
		if k.NullsFirst == k.Desc && mayBeNull(t, cols[i], notNull) {
			return false
		}
	}
	sc.Reverse = reverse
	return true
}

// fixedColumn reports whether a conjunct sets column idx to one value.
func fixedColumn(cs []Expr, idx int) bool {
	for _, c := range cs {
		if op, _, ok := keyCond(c, idx); ok && op == "=" {
			return true
		}
	}
	return false
}

func mayBeNull(t *catalog.Table, idx int, notNull map[int]bool) bool {
	return !t.Columns[idx].NotNull && !t.IsKey(idx) && !notNull[idx]
}

// orderIndex switches sc, whose access does not give the ORDER BY order,
// to a readable index that does and fixes at least as much of the key;
// only under a LIMIT, where reading a few rows in order beats reading and
// sorting them all (without one, the base-row reads of a whole index
// cost more than the sort).
func (b *Binder) orderIndex(sc *Scan, proj *Project, keys []SortKey) bool {
	if sc.Access.Kind == PointGet {
		return false
	}
	var cs []Expr
	if sc.Filter != nil {
		cs = conjuncts(sc.Filter, nil)
	}
	saved := sc.Access
	best := accessScore(saved)
	for i := range sc.Table.Indexes {
		acc, ok := b.indexAccess(sc.Table, &sc.Table.Indexes[i], cs)
		if !ok || accessScore(acc) < best {
			continue
		}
		sc.Access = acc
		if orderByScan(sc, proj, keys) {
			return true
		}
	}
	sc.Access, sc.Reverse = saved, false
	return false
}
