package plan

import (
	"fmt"
	"sort"
	"strings"

	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Secondary index access paths. A readable index whose leading key
// columns are fixed by the WHERE clause (all hash columns equal, then
// leading range columns equal and a bound on the next one) replaces a full
// scan, or a primary-key range that fixes fewer columns; a partial index
// only when the WHERE clause implies its predicate. As for the primary
// key, the whole WHERE stays as a filter over the rows read.

// accessScore ranks an access path: fixed columns count twice, a bound on
// the next one once.
func accessScore(a Access) int {
	if a.Kind == FullScan {
		return 0
	}
	n := 2 * len(a.Eq)
	if a.Lo != nil || a.Hi != nil {
		n++
	}
	return n
}

// chooseIndex switches s to the best readable index if one narrows the
// read more than s's primary-key access.
func (b *Binder) chooseIndex(s *Scan, cs []Expr) {
	best := accessScore(s.Access)
	for i := range s.Table.Indexes {
		acc, ok := b.indexAccess(s.Table, &s.Table.Indexes[i], cs)
		if sc := accessScore(acc); ok && sc > best {
			best, s.Access = sc, acc
		}
	}
}

// indexAccess is the access path through index ix for the WHERE conjuncts
// cs: its fixed leading columns and the bounds on the next one; ok is
// false when ix cannot be read for them (not readable, a partial index
// whose predicate cs do not imply, a hash column not fixed).
func (b *Binder) indexAccess(t *catalog.Table, ix *catalog.Index, cs []Expr) (Access, bool) {
	if !ix.Readable() {
		return Access{}, false
	}
	if ix.Predicate != "" {
		pred, err := b.IndexPredicate(t, ix.Predicate)
		if err != nil || !implies(cs, conjuncts(pred, nil)) {
			return Access{}, false
		}
	}
	l := t.Layout(ix)
	cols := make([]int, l.KeyCols)
	for i, p := range l.Key[:l.KeyCols] {
		cols[i] = p.Col
	}
	eq := equalityPrefix(cs, cols)
	if len(eq) < indexHashCount(ix) {
		return Access{}, false
	}
	acc := Access{Kind: KeyRange, Eq: eq, Index: ix}
	if len(eq) < l.KeyCols {
		acc.boundBy(cs, l.Key[len(eq)].Col)
	}
	return acc, true
}

func indexHashCount(ix *catalog.Index) int {
	n := 0
	for _, c := range ix.Columns {
		if c.Hash {
			n++
		}
	}
	return n
}

// implies reports whether the conjuncts of a WHERE clause imply every
// conjunct of a partial index's predicate: the same condition, or (for
// "col IS NOT NULL") a strict comparison of the column.
func implies(where, pred []Expr) bool {
	have := map[string]bool{}
	for _, c := range where {
		if k := exprKey(c); k != "" {
			have[k] = true
		}
	}
	notNull := nullRejected(where)
	for _, p := range pred {
		if k := exprKey(p); k != "" && have[k] {
			continue
		}
		if n, ok := p.(*IsNull); ok && n.Not {
			if cr, ok := n.E.(*ColRef); ok && notNull[cr.Idx] {
				continue
			}
		}
		return false
	}
	return true
}

// nullRejected returns the columns the WHERE conjuncts cs leave no NULL
// in: a column compared by a strict operator (NULL gives NULL, so the row
// is dropped) or tested IS NOT NULL.
func nullRejected(cs []Expr) map[int]bool {
	notNull := map[int]bool{}
	for _, c := range cs {
		switch x := c.(type) {
		case *BinOp:
			if x.NullOK {
				continue
			}
			for _, side := range []Expr{x.L, x.R} {
				if cr, ok := side.(*ColRef); ok {
					notNull[cr.Idx] = true
				}
			}
		case *IsNull:
			if cr, ok := x.E.(*ColRef); ok && x.Not {
				notNull[cr.Idx] = true
			}
		}
	}
	return notNull
}

// exprKey is a canonical text of an expression for comparing conditions
// ("" for expressions it does not know).
func exprKey(e Expr) string {
	sub := func(es ...Expr) (string, bool) {
		parts := make([]string, len(es))
		for i, x := range es {
			if x == nil {
				parts[i] = "nil"
				continue
			}
			if parts[i] = exprKey(x); parts[i] == "" {
				return "", false
			}
		}
		return strings.Join(parts, ","), true
	}
	wrap := func(name string, es ...Expr) string {
		if s, ok := sub(es...); ok {
			return name + "(" + s + ")"
		}
		return ""
	}
	switch x := e.(type) {
	case *ColRef:
		return fmt.Sprintf("col%d", x.Idx)
	case *Const:
		if x.D.Null {
			return "null:" + fmt.Sprint(x.T.OID)
		}
		return fmt.Sprintf("const%d:%x", x.T.OID, types.AppendKey(nil, x.D, x.T))
	case *Cast:
		return wrap(fmt.Sprintf("cast%d", x.T.OID), x.E)
	case *BinOp:
		return wrap("op"+x.Name, x.L, x.R)
	case *UnOp:
		return wrap("un"+x.Name, x.E)
	case *FuncExpr:
		if x.Volatile {
			return ""
		}
		return wrap("fn"+x.Name, x.Args...)
	case *And:
		return wrap("and", x.L, x.R)
	case *Or:
		return wrap("or", x.L, x.R)
	case *Not:
		return wrap("not", x.E)
	case *IsNull:
		return wrap(fmt.Sprintf("isnull%v", x.Not), x.E)
	case *InList:
		return wrap("in", append([]Expr{x.E}, x.List...)...)
	}
	return ""
}

// columnsUsed adds the table columns e reads (ColRefs of the scan's row)
// to cols; false if e may read the row in ways it cannot follow
// (subqueries, unknown expressions).
func columnsUsed(e Expr, cols map[int]bool) bool {
	all := func(es ...Expr) bool {
		for _, x := range es {
			if x != nil && !columnsUsed(x, cols) {
				return false
			}
		}
		return true
	}
	switch x := e.(type) {
	case nil:
		return true
	case *ColRef:
		cols[x.Idx] = true
		return true
	case *Const, *Param, *OuterRef:
		return true
	case *Cast:
		return all(x.E)
	case *BinOp:
		return all(x.L, x.R)
	case *UnOp:
		return all(x.E)
	case *FuncExpr:
		return all(x.Args...)
	case *And:
		return all(x.L, x.R)
	case *Or:
		return all(x.L, x.R)
	case *Not:
		return all(x.E)
	case *IsNull:
		return all(x.E)
	case *BoolTest:
		return all(x.E)
	case *Case:
		return all(x.Whens...) && all(x.Thens...) && all(x.Else)
	case *Coalesce:
		return all(x.Args...)
	case *MinMax:
		return all(x.Args...)
	case *InList:
		return all(x.E) && all(x.List...)
	case *Distinct:
		return all(x.L, x.R)
	case *NullIf:
		return all(x.L, x.R)
	}
	return false
}

// markIndexOnly makes an index scan at the bottom of a single-table query
// index-only when the index row holds every column the query reads: the
// scan's filter and the expressions of the nodes over it up to the first
// projection or aggregation (which change the row). A table scan there is
// marked Projected with the columns the query reads, which are all it asks
// of the tablets.
func markIndexOnly(n Node) {
	var chain []Node
	for {
		chain = append(chain, n)
		switch x := n.(type) {
		case *Project:
			n = x.Input
		case *Filter:
			n = x.Input
		case *Sort:
			n = x.Input
		case *Limit:
			n = x.Input
		case *Truncate:
			n = x.Input
		case *DistinctNode:
			n = x.Input
		case *DistinctOn:
			n = x.Input
		case *Agg:
			n = x.Input
		case *Scan:
			markScan(x, chain)
			return
		default:
			return
		}
	}
}

func markScan(s *Scan, chain []Node) {
	if s.Lock != NoLock {
		return
	}
	cols := map[int]bool{}
	ok := columnsUsed(s.Filter, cols)
	// Walk up from the scan: nodes until the first Project/Agg (included)
	// see the scan's row.
	for i := len(chain) - 2; i >= 0 && ok; i-- {
		switch x := chain[i].(type) {
		case *Filter:
			ok = columnsUsed(x.Cond, cols)
			continue
		case *Sort:
			for _, k := range x.Keys {
				ok = ok && columnsUsed(k.E, cols)
			}
			continue
		case *Limit:
			ok = ok && columnsUsed(x.Count, cols) && columnsUsed(x.Offset, cols)
			continue
		case *DistinctNode:
			// compares whole rows: every column.
			ok = false
		case *Truncate:
			continue
		case *Project:
			for _, e := range x.Exprs {
				ok = ok && columnsUsed(e, cols)
			}
		case *Agg:
			for _, g := range x.Groups {
				ok = ok && columnsUsed(g, cols)
			}
			for _, a := range x.Aggs {
				ok = ok && columnsUsed(a.Arg, cols) && columnsUsed(a.Arg2, cols) && columnsUsed(a.Filter, cols)
				for _, o := range a.Order {
					ok = ok && columnsUsed(o.E, cols)
				}
			}
		}
		break
	}
	if !ok {
		return
	}
	var need []int
	for c := range cols {
		need = append(need, c)
	}
	sort.Ints(need)
	if s.Access.Index == nil {
		s.Projected, s.Needed = true, need
		return
	}
	s.Access.IndexOnly = s.Table.Layout(s.Access.Index).Covers(need)
}

var _ = catalog.IndexReady

// boundBy sets the range bounds of a key-range access from the first
// conditions of cs on column col (its next key column).
func (a *Access) boundBy(cs []Expr, col int) {
	for _, c := range cs {
		op, val, ok := keyCond(c, col)
		if !ok {
			continue
		}
		switch op {
		case ">", ">=":
			if a.Lo == nil {
				a.Lo, a.LoIncl = val, op == ">="
			}
		case "<", "<=":
			if a.Hi == nil {
				a.Hi, a.HiIncl = val, op == "<="
			}
		}
	}
}
