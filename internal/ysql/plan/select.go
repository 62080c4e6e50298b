package plan

import (
	"math"
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Select plans a SELECT (or VALUES, or a set operation).
func (b *Binder) Select(s *pg.SelectStmt) (Node, error) {
	n, err := b.selectStmt(s, nil)
	if err == nil {
		markIndexOnly(n)
	}
	return n, err
}

func (b *Binder) selectStmt(s *pg.SelectStmt, parent *scope) (Node, error) {
	// The set-returning calls of an enclosing select list are not this
	// query's.
	savedSRFs := b.srfs
	b.srfs = nil
	defer func() { b.srfs = savedSRFs }()
	if s.GetOp() == pg.SetOperation_SETOP_NONE && hasGroupingSets(s) {
		u, err := b.expandGroupingSets(s, parent)
		if err != nil {
			return nil, err
		}
		return b.selectStmt(u, parent)
	}
	if w := s.GetWithClause(); w != nil {
		restore, err := b.withClause(w, parent)
		if err != nil {
			return nil, err
		}
		defer restore()
	}
	if s.GetOp() != pg.SetOperation_SETOP_NONE {
		return b.setOp(s, parent)
	}
	if len(s.GetValuesLists()) > 0 {
		for _, l := range s.GetValuesLists() {
			if err := b.noSRF(l, "VALUES"); err != nil {
				return nil, err
			}
		}
		n, err := b.values(s.GetValuesLists(), &scope{parent: parent}, nil)
		if err != nil {
			return nil, err
		}
		return b.orderLimit(s, n, nil, parent)
	}
	from, sc, err := b.fromList(s.GetFromClause(), parent)
	if err != nil {
		return nil, err
	}
	if w := s.GetWhereClause(); w != nil {
		if err := noWindow(w, "WHERE"); err != nil {
			return nil, err
		}
		if err := b.noSRF(w, "WHERE"); err != nil {
			return nil, err
		}
		cond, err := b.expr(w, sc, tBool)
		if err != nil {
			return nil, err
		}
		if cond, err = b.coerceTo(cond, tBool, "argument of WHERE", -1); err != nil {
			return nil, err
		}
		if hasAgg(w) {
			return nil, pgerror.New(pgerror.CodeGroupingError, "aggregate functions are not allowed in WHERE")
		}
		from = b.addFilter(orderFromList(from, cond), cond)
	}
	if lc := s.GetLockingClause(); len(lc) > 0 {
		if err := b.checkLocking(s, sc); err != nil {
			return nil, err
		}
		if err := b.applyLocking(from, lc); err != nil {
			return nil, err
		}
	}
	planLookups(from)
	aggregated := len(s.GetGroupClause()) > 0 || s.GetHavingClause() != nil
	for _, t := range s.GetTargetList() {
		if hasAgg(t.GetResTarget().GetVal()) {
			aggregated = true
		}
	}
	for _, o := range s.GetSortClause() {
		if hasAgg(o.GetSortBy().GetNode()) {
			aggregated = true
		}
	}
	for _, d := range s.GetWindowClause() {
		wd := d.GetWindowDef()
		for _, a := range append(wd.GetPartitionClause(), wd.GetOrderClause()...) {
			aggregated = aggregated || hasAgg(a)
		}
	}
	input := from
	inputScope := sc
	var agg *Agg
	if aggregated {
		agg = &Agg{Input: from}
		as := &aggScope{agg: agg, b: b, input: sc}
		// Set-returning calls in GROUP BY run before the grouping, in a
		// ProjectSet of their own whose columns the groups read.
		b.srfs = &srfScope{byText: map[string]srfBound{}}
		for _, g := range s.GetGroupClause() {
			e, n, err := b.groupExpr(g, s.GetTargetList(), sc)
			if err != nil {
				return nil, err
			}
			agg.Groups = append(agg.Groups, e)
			as.groupNodes = append(as.groupNodes, withoutLocations(n))
		}
		agg.Input = b.srfs.place(from)
		b.srfs = nil
		b.aggs = as
		defer func() { b.aggs = nil }()
		input = agg
		inputScope = sc
	}
	if err := b.checkWindowClause(s.GetWindowClause()); err != nil {
		return nil, err
	}
	// Window functions see the rows after grouping and HAVING: the Window
	// node's input is set once HAVING is bound.
	var win *Window
	if selectWindowed(s) {
		win = &Window{Input: input}
		saved := b.win
		b.win = &winScope{node: win, input: sc, defs: s.GetWindowClause()}
		defer func() { b.win = saved }()
	}
	// Set-returning calls of the select list, ORDER BY and DISTINCT ON run
	// in a ProjectSet above the grouping and the window functions
	// (srfCall); it is there from the start so that nothing beneath is
	// taken for the rows the projection sees (a LIMIT's scan hint).
	b.srfs = &srfScope{byText: map[string]srfBound{}}
	var srfNodes []*pg.Node
	for _, t := range s.GetTargetList() {
		srfNodes = append(srfNodes, t.GetResTarget().GetVal())
	}
	srfNodes = append(append(srfNodes, s.GetSortClause()...), s.GetDistinctClause()...)
	if b.hasSRF(srfNodes...) {
		b.srfs.levels = []*ProjectSet{{}}
	}
	// Target list.
	var exprs []Expr
	var cols []Column
	for _, t := range s.GetTargetList() {
		rt := t.GetResTarget()
		if cr := rt.GetVal().GetColumnRef(); cr != nil && isStar(cr) {
			es, cs, err := b.expandStar(cr, sc)
			if err != nil {
				return nil, err
			}
			if aggregated {
				// Each column must be grouped, or determined by a grouped
				// primary key (SELECT * FROM t GROUP BY its key).
				for i, e := range es {
					ref, ok := e.(*ColRef)
					if !ok {
						return nil, pgerror.New(pgerror.CodeGroupingError, "SELECT * is not allowed with GROUP BY or aggregates")
					}
					if es[i], err = b.aggs.groupRef(ref.Idx, ref.T, ref.Name, cr.GetLocation()); err != nil {
						return nil, err
					}
				}
			}
			exprs, cols = append(exprs, es...), append(cols, cs...)
			continue
		}
		e, err := b.expr(rt.GetVal(), inputScope, tUnknown)
		if err != nil {
			return nil, err
		}
		if e.Type().OID == types.OIDUnknown {
			if e, err = b.cast(e, tText, types.CastImplicit, -1); err != nil {
				return nil, err
			}
		}
		col := Column{Name: rt.GetName(), T: e.Type()}
		if col.Name == "" {
			col.Name = columnName(rt.GetVal())
		}
		if cr, ok := e.(*ColRef); ok && !aggregated && cr.Idx >= 0 && cr.Idx < len(sc.cols) {
			src := sc.cols[cr.Idx]
			col.Table = src.Table
			if fc := from.Columns(); cr.Idx < len(fc) {
				col.TableOID, col.AttNum = fc[cr.Idx].TableOID, fc[cr.Idx].AttNum
			}
		}
		exprs = append(exprs, e)
		cols = append(cols, col)
	}
	if aggregated {
		if h := s.GetHavingClause(); h != nil {
			if err := noWindow(h, "HAVING"); err != nil {
				return nil, err
			}
			if err := b.noSRF(h, "HAVING"); err != nil {
				return nil, err
			}
			cond, err := b.expr(h, inputScope, tBool)
			if err != nil {
				return nil, err
			}
			if cond, err = b.coerceTo(cond, tBool, "argument of HAVING", -1); err != nil {
				return nil, err
			}
			agg.cols = aggColumns(agg)
			input = &Filter{Input: agg, Cond: cond}
		}
		agg.cols = aggColumns(agg)
	}
	if win != nil {
		win.Input, input = input, win
	}
	proj := &Project{Input: input, Exprs: exprs, cols: cols}
	if len(b.srfs.levels) > 0 {
		proj.Input = b.srfs.levels[0] // placed on input below
	}
	n, err := b.orderLimitProject(s, proj, inputScope, parent)
	if err != nil {
		return nil, err
	}
	// ORDER BY may have added aggregates and window calls.
	if agg != nil {
		agg.cols = aggColumns(agg)
	}
	if win != nil {
		b.win.place()
	}
	if len(b.srfs.levels) > 0 {
		proj.Input = b.srfs.place(input)
	}
	return n, nil
}

// selectWindowed reports whether the select list or ORDER BY of s calls
// window functions.
func selectWindowed(s *pg.SelectStmt) bool {
	for _, t := range s.GetTargetList() {
		if hasWindow(t.GetResTarget().GetVal()) {
			return true
		}
	}
	for _, o := range s.GetSortClause() {
		if hasWindow(o.GetSortBy().GetNode()) {
			return true
		}
	}
	return false
}

func aggColumns(a *Agg) []Column {
	var cols []Column
	for _, g := range a.Groups {
		cols = append(cols, Column{Name: "?column?", T: g.Type()})
	}
	for _, c := range a.Aggs {
		cols = append(cols, Column{Name: c.Name, T: c.T})
	}
	return cols
}

// orderLimitProject adds DISTINCT, ORDER BY and LIMIT to a projection. Sort
// keys that are not output columns are computed as extra columns of the
// projection and cut off after sorting.
func (b *Binder) orderLimitProject(s *pg.SelectStmt, proj *Project, inputScope *scope, parent *scope) (Node, error) {
	n := len(proj.Exprs)
	dc := s.GetDistinctClause()
	distinctOn := len(dc) > 0 && dc[0].GetNode() != nil
	// column finds node among the output columns, or computes it as a
	// hidden one.
	hidden := map[string]int{} // the hidden columns added, by expression
	column := func(node *pg.Node) (int, error) {
		idx, err := b.outputRef(node, proj)
		if err != nil || idx >= 0 {
			return idx, err
		}
		if len(dc) > 0 && !distinctOn {
			// A column written another way than in the select list
			// (ORDER BY "c" for SELECT DISTINCT s."c" AS x: TypeORM)
			// is the same column, as PostgreSQL matches them.
			if node.GetColumnRef() != nil {
				if e, err := b.expr(node, inputScope, tUnknown); err == nil {
					if ref, ok := e.(*ColRef); ok {
						for i, pe := range proj.Exprs {
							if pr, ok := pe.(*ColRef); ok && pr.Idx == ref.Idx {
								return i, nil
							}
						}
					}
				}
			}
			return -1, posErr(pgerror.New(pgerror.CodeInvalidColumnReference, "for SELECT DISTINCT, ORDER BY expressions must appear in select list"), exprLocation(node))
		}
		key := astKey(node)
		if idx, ok := hidden[key]; ok {
			return idx, nil
		}
		e, err := b.expr(node, inputScope, tUnknown)
		if err != nil {
			return -1, err
		}
		proj.Exprs = append(proj.Exprs, e)
		proj.cols = append(proj.cols, Column{Name: "?sort?", T: e.Type(), Hidden: true})
		hidden[key] = len(proj.Exprs) - 1
		return len(proj.Exprs) - 1, nil
	}
	var onKeys []int
	if distinctOn {
		for _, d := range dc {
			idx, err := column(d)
			if err != nil {
				return nil, err
			}
			onKeys = append(onKeys, idx)
		}
	}
	var keys []SortKey
	for _, o := range s.GetSortClause() {
		sb := o.GetSortBy()
		idx, err := column(sb.GetNode())
		if err != nil {
			return nil, err
		}
		k := sortKey(&ColRef{Idx: idx, T: proj.cols[idx].T}, sb)
		if _, err := lookupBinary("<", k.E.Type(), k.E.Type()); err != nil {
			return nil, pgerror.New(pgerror.CodeUndefinedFunction, "could not identify an ordering operator for type %s", typeName(k.E.Type()))
		}
		keys = append(keys, k)
	}
	var node Node = proj
	if distinctOn {
		// The ORDER BY must start with the DISTINCT ON keys (in any order);
		// without one, the rows are sorted by them.
		if len(keys) == 0 {
			for _, k := range onKeys {
				keys = append(keys, SortKey{E: &ColRef{Idx: k, T: proj.cols[k].T}})
			}
		}
		lead := map[int]bool{}
		for i := 0; i < len(onKeys) && i < len(keys); i++ {
			if cr, ok := keys[i].E.(*ColRef); ok {
				lead[cr.Idx] = true
			}
		}
		for _, k := range onKeys {
			if !lead[k] || len(keys) < len(onKeys) {
				return nil, pgerror.New(pgerror.CodeInvalidColumnReference, "SELECT DISTINCT ON expressions must match initial ORDER BY expressions")
			}
		}
	} else if len(dc) > 0 {
		node = &DistinctNode{Input: node, N: n}
	}
	if len(keys) > 0 {
		sc, ok := scanUnder(proj.Input)
		if ok && (orderByScan(sc, proj, keys) || s.GetLimitCount() != nil && b.orderIndex(sc, proj, keys)) {
			// rows come in key order already
		} else {
			node = &Sort{Input: node, Keys: keys}
		}
	}
	if distinctOn {
		node = &DistinctOn{Input: node, Keys: onKeys}
	}
	if len(proj.Exprs) > n {
		node = &Truncate{Input: node, N: n}
	}
	return b.limit(s, node, parent)
}

func (b *Binder) orderLimit(s *pg.SelectStmt, n Node, _ *scope, parent *scope) (Node, error) {
	if len(s.GetSortClause()) > 0 {
		cols := n.Columns()
		var keys []SortKey
		for _, o := range s.GetSortClause() {
			sb := o.GetSortBy()
			idx := -1
			if c := sb.GetNode().GetAConst(); c != nil && c.GetIval() != nil {
				idx = int(c.GetIval().GetIval()) - 1
			} else if cr := sb.GetNode().GetColumnRef(); cr != nil && len(cr.GetFields()) == 1 {
				for i, col := range cols {
					if col.Name == cr.GetFields()[0].GetString_().GetSval() {
						idx = i
					}
				}
			}
			if c := sb.GetNode().GetAConst(); c != nil && c.GetIval() != nil && (idx < 0 || idx >= len(cols)) {
				return nil, posErr(pgerror.New(pgerror.CodeInvalidColumnReference, "ORDER BY position %d is not in select list", idx+1), c.GetLocation())
			}
			if cr := sb.GetNode().GetColumnRef(); cr != nil && len(cr.GetFields()) == 1 && idx < 0 {
				// Only the output columns are in scope here.
				return nil, posErr(pgerror.New(pgerror.CodeUndefinedColumn, "column %q does not exist", cr.GetFields()[0].GetString_().GetSval()), cr.GetLocation())
			}
			if idx < 0 || idx >= len(cols) {
				return nil, pgerror.Unsupported("this ORDER BY over a set operation or VALUES")
			}
			keys = append(keys, sortKey(&ColRef{Idx: idx, T: cols[idx].T}, sb))
		}
		n = &Sort{Input: n, Keys: keys}
	}
	return b.limit(s, n, parent)
}

func (b *Binder) limit(s *pg.SelectStmt, n Node, parent *scope) (Node, error) {
	if s.GetLimitCount() == nil && s.GetLimitOffset() == nil {
		return n, nil
	}
	if s.GetLimitOption() == pg.LimitOption_LIMIT_OPTION_WITH_TIES {
		if len(s.GetSortClause()) == 0 {
			return nil, pgerror.New(pgerror.CodeSyntaxError, "WITH TIES cannot be specified without ORDER BY clause")
		}
		return nil, pgerror.Unsupported("FETCH FIRST ... WITH TIES")
	}
	l := &Limit{Input: n}
	for i, src := range []*pg.Node{s.GetLimitCount(), s.GetLimitOffset()} {
		if src == nil || (src.GetAConst() != nil && src.GetAConst().GetIsnull()) {
			continue
		}
		what := "argument of LIMIT"
		if i == 1 {
			what = "argument of OFFSET"
		}
		if err := b.noSRF(src, strings.TrimPrefix(what, "argument of ")); err != nil {
			return nil, err
		}
		e, err := b.expr(src, &scope{parent: parent}, tInt8)
		if err != nil {
			return nil, err
		}
		if e, err = b.coerceTo(e, tInt8, what, -1); err != nil {
			return nil, err
		}
		if i == 0 {
			l.Count = e
		} else {
			l.Offset = e
		}
	}
	if l.Count != nil && rowIndependent(l.Count) && (l.Offset == nil || rowIndependent(l.Offset)) {
		if sc, ok := limitable(n); ok {
			sc.LimitHint, sc.OffsetHint = l.Count, l.Offset
		}
	}
	return l, nil
}

// limitable finds a Scan whose rows reach the limit in order (its own
// filter applied: the scan asks the tablets for that many qualifying rows
// when they evaluate all of it, and otherwise stops reading once it has
// them).
func limitable(n Node) (*Scan, bool) {
	switch x := n.(type) {
	case *Project:
		return limitable(x.Input)
	case *Truncate:
		return limitable(x.Input)
	case *Scan:
		return x, true
	}
	return nil, false
}

func scanUnder(n Node) (*Scan, bool) {
	switch x := n.(type) {
	case *Scan:
		return x, true
	case *Filter:
		return scanUnder(x.Input)
	}
	return nil, false
}

// outputRef resolves an ORDER BY item naming an output column (by name or
// position); -1 when it is an expression to compute.
func (b *Binder) outputRef(n *pg.Node, proj *Project) (int, error) {
	if c := n.GetAConst(); c != nil && c.GetIval() != nil {
		i := int(c.GetIval().GetIval())
		if i < 1 || i > len(proj.Exprs) {
			return 0, posErr(pgerror.New(pgerror.CodeInvalidColumnReference, "ORDER BY position %d is not in select list", i), c.GetLocation())
		}
		return i - 1, nil
	}
	if cr := n.GetColumnRef(); cr != nil && len(cr.GetFields()) == 1 && cr.GetFields()[0].GetString_() != nil {
		name := cr.GetFields()[0].GetString_().GetSval()
		found := -1
		for i, c := range proj.cols {
			if c.Name == name && !c.Hidden {
				if found >= 0 {
					if same(proj.Exprs[found], proj.Exprs[i]) {
						continue
					}
					return 0, posErr(pgerror.New(pgerror.CodeAmbiguousColumn, "ORDER BY %q is ambiguous", name), cr.GetLocation())
				}
				found = i
			}
		}
		if found >= 0 {
			return found, nil
		}
	}
	return -1, nil
}

func same(a, b Expr) bool {
	ca, ok1 := a.(*ColRef)
	cb, ok2 := b.(*ColRef)
	return ok1 && ok2 && ca.Idx == cb.Idx
}

func isStar(cr *pg.ColumnRef) bool {
	f := cr.GetFields()
	return len(f) > 0 && f[len(f)-1].GetAStar() != nil
}

func (b *Binder) expandStar(cr *pg.ColumnRef, sc *scope) ([]Expr, []Column, error) {
	table := ""
	if f := cr.GetFields(); len(f) > 1 {
		table = f[len(f)-2].GetString_().GetSval()
	}
	var exprs []Expr
	var cols []Column
	for i, c := range sc.cols {
		if c.Hidden && !(table != "" && c.Using) || (table != "" && c.Table != table) {
			continue
		}
		exprs = append(exprs, &ColRef{Idx: i, T: c.T, Name: c.Name})
		cols = append(cols, Column{Name: c.Name, T: c.T, Table: c.Table})
	}
	if b.Record != nil {
		star := make([]StarColumn, len(cols))
		for i, c := range cols {
			star[i] = StarColumn{Table: c.Table, Name: c.Name}
		}
		b.Record.Stars[cr] = star
	}
	if table != "" && len(exprs) == 0 {
		return nil, nil, posErr(pgerror.New(pgerror.CodeUndefinedTable, "missing FROM-clause entry for table %q", table), cr.GetLocation())
	}
	if len(sc.cols) == 0 && table == "" {
		return nil, nil, posErr(pgerror.New(pgerror.CodeSyntaxError, "SELECT * with no tables specified is not valid"), cr.GetLocation())
	}
	return exprs, cols, nil
}

// columnName is PostgreSQL's default output name of an expression.
func columnName(n *pg.Node) string {
	if name, strength := figureColname(n); strength > 0 {
		return name
	}
	return "?column?"
}

// figureColname is PostgreSQL's FigureColnameInternal: a name and how
// sure it is (2: a column, function or keyword; 1: a cast's type, which an
// outer cast or a CASE's ELSE overrides, 12345::text::char(3) is bpchar;
// 0: none).
func figureColname(n *pg.Node) (string, int) {
	switch {
	case n.GetColumnRef() != nil:
		f := n.GetColumnRef().GetFields()
		if s := f[len(f)-1].GetString_(); s != nil {
			return s.GetSval(), 2
		}
	case n.GetFuncCall() != nil:
		f := n.GetFuncCall().GetFuncname()
		return f[len(f)-1].GetString_().GetSval(), 2
	case n.GetTypeCast() != nil:
		if name, strength := figureColname(n.GetTypeCast().GetArg()); strength > 1 {
			return name, strength
		}
		tn := n.GetTypeCast().GetTypeName().GetNames()
		return tn[len(tn)-1].GetString_().GetSval(), 1
	case n.GetCollateClause() != nil:
		return figureColname(n.GetCollateClause().GetArg())
	case n.GetAIndirection() != nil:
		ind := n.GetAIndirection().GetIndirection()
		if f := ind[len(ind)-1].GetString_(); f != nil {
			return f.GetSval(), 2 // (record).field
		}
		return figureColname(n.GetAIndirection().GetArg())
	case n.GetAArrayExpr() != nil:
		return "array", 2
	case n.GetRowExpr() != nil:
		return "row", 2
	case n.GetGroupingFunc() != nil:
		return "grouping", 2
	case n.GetCaseExpr() != nil:
		if name, strength := figureColname(n.GetCaseExpr().GetDefresult()); strength > 1 {
			return name, strength
		}
		return "case", 1
	case n.GetCoalesceExpr() != nil:
		return "coalesce", 2
	case n.GetMinMaxExpr() != nil:
		if n.GetMinMaxExpr().GetOp() == pg.MinMaxOp_IS_GREATEST {
			return "greatest", 2
		}
		return "least", 2
	case n.GetSqlvalueFunction() != nil:
		s := strings.ToLower(strings.TrimPrefix(n.GetSqlvalueFunction().GetOp().String(), "SVFOP_"))
		return strings.TrimSuffix(s, "_n"), 2
	case n.GetAExpr() != nil:
		if n.GetAExpr().GetKind() == pg.A_Expr_Kind_AEXPR_NULLIF {
			return "nullif", 2
		}
	case n.GetSubLink() != nil:
		switch n.GetSubLink().GetSubLinkType() {
		case pg.SubLinkType_EXISTS_SUBLINK:
			return "exists", 2
		case pg.SubLinkType_ARRAY_SUBLINK:
			return "array", 2
		case pg.SubLinkType_EXPR_SUBLINK:
			if sel := n.GetSubLink().GetSubselect().GetSelectStmt(); sel != nil && len(sel.GetTargetList()) == 1 {
				rt := sel.GetTargetList()[0].GetResTarget()
				if rt.GetName() != "" {
					return rt.GetName(), 2
				}
				return columnName(rt.GetVal()), 2 // the subquery's column: ?column? too
			}
		}
	}
	return "", 0
}

func (b *Binder) addFilter(n Node, cond Expr) Node {
	if c, ok := cond.(*Const); ok && !c.D.Null && c.D.Bool() {
		return n
	}
	switch x := n.(type) {
	case *Scan:
		x.Filter = and(x.Filter, cond)
		b.chooseAccess(x)
		return x
	case *VirtualScan:
		x.Filter = and(x.Filter, cond)
		return x
	case *Join:
		if cond = b.pushIntoJoin(x, cond); cond == nil {
			return x
		}
	case *Project:
		if cond = b.pushThroughProject(x, cond); cond == nil {
			return x
		}
	case *LateralJoin:
		if cond = b.pushIntoLateral(x, cond); cond == nil {
			return x
		}
	}
	return &Filter{Input: n, Cond: cond}
}

func and(a, b Expr) Expr {
	if a == nil {
		return b
	}
	return &And{L: a, R: b}
}

func conjuncts(e Expr, out []Expr) []Expr {
	if a, ok := e.(*And); ok {
		return conjuncts(a.R, conjuncts(a.L, out))
	}
	return append(out, e)
}

// rowIndependent reports whether e reads nothing of the current row, so it
// can be evaluated once to address a key.
func rowIndependent(e Expr) bool {
	switch x := e.(type) {
	case *Const, *Param, *OuterRef:
		return true
	case *Cast:
		return rowIndependent(x.E)
	case *BinOp:
		return rowIndependent(x.L) && rowIndependent(x.R)
	case *UnOp:
		return rowIndependent(x.E)
	case *FuncExpr:
		for _, a := range x.Args {
			if !rowIndependent(a) {
				return false
			}
		}
		return !x.Volatile
	}
	return false
}

// keyCond matches "col op value" (either way round) for table column idx.
func keyCond(c Expr, idx int) (op string, val Expr, ok bool) {
	bo, isOp := c.(*BinOp)
	if !isOp {
		return "", nil, false
	}
	flip := map[string]string{"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
	if _, known := flip[bo.Name]; !known {
		return "", nil, false
	}
	if cr, isCol := bo.L.(*ColRef); isCol && cr.Idx == idx && rowIndependent(bo.R) && bo.L.Type() == bo.R.Type() {
		return bo.Name, bo.R, true
	}
	if cr, isCol := bo.R.(*ColRef); isCol && cr.Idx == idx && rowIndependent(bo.L) && bo.L.Type() == bo.R.Type() {
		return flip[bo.Name], bo.L, true
	}
	return "", nil, false
}

// chooseAccess picks the scan's access path from its filter's conjuncts.
// The filter is kept whole: the access path only narrows what is read.
func (b *Binder) chooseAccess(s *Scan) {
	t := s.Table
	s.Access = Access{Kind: FullScan}
	if s.Filter == nil || len(t.Key) == 0 {
		return
	}
	cs := conjuncts(s.Filter, nil)
	cols := make([]int, len(t.Key))
	for i, k := range t.Key {
		cols[i] = k.Column
	}
	eq := equalityPrefix(cs, cols)
	nh := t.HashKeyCount()
	switch {
	case len(eq) == len(t.Key):
		s.Access = Access{Kind: PointGet, Eq: eq}
		s.Access.Rest = notKey(s, cs)
		return
	case len(eq) < nh:
		b.chooseIndex(s, cs)
		return // a hash table needs every hash column to narrow the scan
	}
	defer b.chooseIndex(s, cs)
	acc := Access{Kind: KeyRange, Eq: eq}
	acc.boundBy(cs, t.Key[len(eq)].Column)
	if len(eq) == 0 && acc.Lo == nil && acc.Hi == nil {
		return
	}
	s.Access = acc
}

// notKey is the conjunction of the conjuncts cs of point get s's filter
// that are not the key equalities its access uses (nil: none).
func notKey(s *Scan, cs []Expr) Expr {
	var rest Expr
	for _, c := range cs {
		used := false
		for i, k := range s.Table.Key {
			if op, val, ok := keyCond(c, k.Column); ok && op == "=" && i < len(s.Access.Eq) && val == s.Access.Eq[i] {
				used = true
				break
			}
		}
		if !used {
			rest = and(rest, c)
		}
	}
	return rest
}

// lockName is a locking clause as PostgreSQL names it in messages.
func lockName(lc *pg.LockingClause) string {
	switch lc.GetStrength() {
	case pg.LockClauseStrength_LCS_FORKEYSHARE:
		return "FOR KEY SHARE"
	case pg.LockClauseStrength_LCS_FORSHARE:
		return "FOR SHARE"
	case pg.LockClauseStrength_LCS_FORNOKEYUPDATE:
		return "FOR NO KEY UPDATE"
	}
	return "FOR UPDATE"
}

// checkLocking refuses FOR UPDATE/SHARE where PostgreSQL does
// (CheckSelectLocking: the rows are not a table's), and a relation of
// FOR UPDATE OF that is not in FROM (the query sc is its scope).
func (b *Binder) checkLocking(s *pg.SelectStmt, sc *scope) error {
	clauses := s.GetLockingClause()
	name := lockName(clauses[0].GetLockingClause())
	refuse := func(what string) error {
		return pgerror.New(pgerror.CodeFeatureNotSupported, "%s is not allowed with %s", name, what)
	}
	windowed := false
	for _, t := range s.GetTargetList() {
		windowed = windowed || hasWindow(t.GetResTarget().GetVal())
	}
	switch {
	case len(s.GetDistinctClause()) > 0:
		return refuse("DISTINCT clause")
	case len(s.GetGroupClause()) > 0:
		return refuse("GROUP BY clause")
	case s.GetHavingClause() != nil:
		return refuse("HAVING clause")
	}
	for _, t := range s.GetTargetList() {
		if hasAgg(t.GetResTarget().GetVal()) {
			return refuse("aggregate functions")
		}
	}
	if windowed {
		return refuse("window functions")
	}
	for _, t := range s.GetTargetList() {
		if b.hasSRF(t.GetResTarget().GetVal()) {
			return refuse("set-returning functions in the target list")
		}
	}
	for _, c := range clauses {
		for _, r := range c.GetLockingClause().GetLockedRels() {
			rv := r.GetRangeVar()
			found := false
			for _, col := range sc.cols {
				found = found || col.Table == rv.GetRelname()
			}
			if !found {
				return posErr(pgerror.New(pgerror.CodeUndefinedTable, "relation %q in %s clause not found in FROM clause", rv.GetRelname(), lockName(c.GetLockingClause())), rv.GetLocation())
			}
		}
	}
	return nil
}

// noSetOpLocking refuses FOR UPDATE/SHARE on a set operation or on one of
// its branches, as PostgreSQL does.
func noSetOpLocking(s *pg.SelectStmt) error {
	if lc := s.GetLockingClause(); len(lc) > 0 {
		return pgerror.New(pgerror.CodeFeatureNotSupported, "%s is not allowed with UNION/INTERSECT/EXCEPT", lockName(lc[0].GetLockingClause()))
	}
	if s.GetOp() == pg.SetOperation_SETOP_NONE {
		return nil
	}
	if err := noSetOpLocking(s.GetLarg()); err != nil {
		return err
	}
	return noSetOpLocking(s.GetRarg())
}

func (b *Binder) applyLocking(n Node, clauses []*pg.Node) error {
	for _, c := range clauses {
		lc := c.GetLockingClause()
		sc, ok := scanUnder(n)
		if !ok {
			if j, isJoin := n.(*Join); isJoin {
				if err := b.applyLocking(j.Left, clauses); err != nil {
					return err
				}
				return b.applyLocking(j.Right, clauses)
			}
			return pgerror.Unsupported("FOR UPDATE/SHARE on this query")
		}
		// A row named by several clauses takes the strongest lock.
		switch lc.GetStrength() {
		case pg.LockClauseStrength_LCS_FORUPDATE:
			sc.Lock = max(sc.Lock, LockUpdate)
		case pg.LockClauseStrength_LCS_FORNOKEYUPDATE:
			sc.Lock = max(sc.Lock, LockNoKeyUpdate)
		case pg.LockClauseStrength_LCS_FORSHARE:
			sc.Lock = max(sc.Lock, LockShare)
		case pg.LockClauseStrength_LCS_FORKEYSHARE:
			sc.Lock = max(sc.Lock, LockKeyShare)
		}
		switch lc.GetWaitPolicy() {
		case pg.LockWaitPolicy_LockWaitError:
			sc.Wait = NoWait
		case pg.LockWaitPolicy_LockWaitSkip:
			sc.Wait = SkipLocked
		}
	}
	return nil
}

// fromList plans the FROM clause: a cross join of its items.
func (b *Binder) fromList(items []*pg.Node, parent *scope) (Node, *scope, error) {
	if len(items) == 0 {
		return &Values{Rows: [][]Expr{{}}}, &scope{parent: parent}, nil
	}
	var node Node
	sc := &scope{parent: parent}
	named := map[string]bool{} // the items' table names: one may not repeat
	for _, it := range items {
		n, cols, err := b.fromItem(it, sc, parent)
		if err != nil {
			return nil, nil, err
		}
		if err := noRepeatedNames(named, cols); err != nil {
			return nil, nil, err
		}
		switch {
		case node == nil:
			node = n
		case isLateral(n):
			node = &LateralJoin{Left: node, Sub: n.(*Lateral).Sub, cols: append(append([]Column(nil), node.Columns()...), n.Columns()...)}
		default:
			node = &Join{Kind: InnerJoin, Left: node, Right: n, cols: append(append([]Column(nil), node.Columns()...), n.Columns()...)}
		}
		sc.cols = append(sc.cols, cols...)
	}
	return node, sc, nil
}

// noRepeatedNames adds the table names of a FROM item's columns to named,
// failing as PostgreSQL does when one is there already (FROM t, t).
func noRepeatedNames(named map[string]bool, cols []scopeCol) error {
	item := map[string]bool{}
	for _, c := range cols {
		if c.Table == "" || item[c.Table] {
			continue
		}
		if named[c.Table] {
			return pgerror.New(pgerror.CodeDuplicateAlias, "table name %q specified more than once", c.Table)
		}
		item[c.Table] = true
	}
	for t := range item {
		named[t] = true
	}
	return nil
}

// subqueryItem is sub as a FROM item named alias: its columns renamed by
// names, then by the alias's column list.
func subqueryItem(sub Node, alias string, names []string, aliasCols []*pg.Node) (Node, []scopeCol) {
	cols := append([]Column(nil), sub.Columns()...)
	for i := range cols {
		cols[i].Table = alias
		if i < len(names) {
			cols[i].Name = names[i]
		}
		if i < len(aliasCols) {
			cols[i].Name = aliasCols[i].GetString_().GetSval()
		}
	}
	exprs := make([]Expr, len(cols))
	for i, c := range cols {
		exprs[i] = &ColRef{Idx: i, T: c.T, Name: c.Name}
	}
	return &Project{Input: sub, Exprs: exprs, cols: cols}, scopeCols(cols)
}

func scopeCols(cols []Column) []scopeCol {
	out := make([]scopeCol, len(cols))
	for i, c := range cols {
		out[i] = scopeCol{Table: c.Table, Name: c.Name, T: c.T, Hidden: c.Hidden}
	}
	return out
}

func (b *Binder) fromItem(n *pg.Node, sc *scope, parent *scope) (Node, []scopeCol, error) {
	switch {
	case n.GetRangeVar() != nil:
		rv := n.GetRangeVar()
		if rv.GetSchemaname() == "" && rv.GetCatalogname() == "" {
			if d := b.cte(rv.GetRelname()); d != nil {
				return b.cteRef(d, rv, parent)
			}
		}
		alias := rv.GetRelname()
		if a := rv.GetAlias(); a != nil {
			alias = a.GetAliasname()
		}
		node, err := b.relation(rv, alias)
		if err != nil {
			return nil, nil, err
		}
		cols := node.Columns()
		if err := aliasFits(alias, cols, rv.GetAlias().GetColnames()); err != nil {
			return nil, nil, err
		}
		if a := rv.GetAlias(); a != nil && len(a.GetColnames()) > 0 {
			cols = append([]Column(nil), cols...)
			vi := 0
			for i := range cols {
				if cols[i].Hidden {
					continue
				}
				if vi < len(a.GetColnames()) {
					cols[i].Name = a.GetColnames()[vi].GetString_().GetSval()
				}
				vi++
			}
			setCols(node, cols)
		}
		scols := scopeCols(cols)
		if scan, ok := node.(*Scan); ok {
			for i := range scols {
				scols[i].Rel, scols[i].Col = scan.Table, i
			}
		}
		return node, scols, nil
	case n.GetJoinExpr() != nil:
		return b.join(n.GetJoinExpr(), sc, parent)
	case n.GetRangeSubselect() != nil:
		rs := n.GetRangeSubselect()
		subParent := parent
		if rs.GetLateral() {
			// A LATERAL subquery sees the FROM items before it as an
			// enclosing query's columns; it is run once per row of them.
			subParent = &scope{cols: sc.cols, parent: parent}
		}
		b.inFromSub++
		sub, err := b.selectStmt(rs.GetSubquery().GetSelectStmt(), subParent)
		b.inFromSub--
		if err != nil {
			return nil, nil, err
		}
		if err := aliasFits(rs.GetAlias().GetAliasname(), sub.Columns(), rs.GetAlias().GetColnames()); err != nil {
			return nil, nil, err
		}
		node, cols := subqueryItem(sub, rs.GetAlias().GetAliasname(), nil, rs.GetAlias().GetColnames())
		if rs.GetLateral() {
			node = &Lateral{Sub: node}
		}
		return node, cols, nil
	case n.GetRangeFunction() != nil:
		return b.rangeFunction(n.GetRangeFunction(), sc, parent)
	}
	return nil, nil, pgerror.Unsupported("this FROM item")
}

// aliasFits refuses an alias naming more columns than the FROM item has
// (its visible ones), as PostgreSQL does: the extra names were ignored.
func aliasFits(alias string, cols []Column, names []*pg.Node) error {
	n := 0
	for _, c := range cols {
		if !c.Hidden {
			n++
		}
	}
	if len(names) > n {
		return pgerror.New(pgerror.CodeInvalidColumnReference, "table %q has %d columns available but %d columns specified", alias, n, len(names))
	}
	return nil
}

func setCols(n Node, cols []Column) {
	switch x := n.(type) {
	case *Scan:
		x.cols = cols
	case *VirtualScan:
		x.cols = cols
	}
}

// relation resolves a table name to a scan of a user or virtual table.
func (b *Binder) relation(rv *pg.RangeVar, alias string) (Node, error) {
	name := rv.GetRelname()
	loc := rv.GetLocation()
	if rv.GetCatalogname() != "" && rv.GetCatalogname() != b.Database {
		return nil, posErr(pgerror.Unsupported("cross-database references"), loc)
	}
	schemas := b.SearchPath
	if rv.GetSchemaname() != "" {
		schemas = []string{rv.GetSchemaname()}
	} else {
		schemas = append([]string{"pg_catalog"}, schemas...)
	}
	for _, s := range schemas {
		if t, ok := b.Cat.Table(b.Database, s, name); ok {
			b.noteRelation(rv, s, t.OID())
			return newScan(t, alias), nil
		}
		if v, ok := b.Cat.View(b.Database, s, name); ok {
			b.noteRelation(rv, s, v.OID)
			return b.viewRef(v, alias, loc)
		}
		if b.Virtual != nil {
			if vt, ok := b.Virtual(s, name); ok {
				b.noteRelation(rv, s, 0)
				cols := append([]Column(nil), vt.Cols...)
				for i := range cols {
					cols[i].Table = alias
				}
				return &VirtualScan{Table: vt, Alias: alias, cols: cols}, nil
			}
		}
	}
	qual := name
	if rv.GetSchemaname() != "" {
		qual = rv.GetSchemaname() + "." + name
	}
	return nil, posErr(pgerror.New(pgerror.CodeUndefinedTable, "relation %q does not exist", qual), loc)
}

// LookupTable resolves a possibly qualified table name for a statement that
// writes the table (DML, COPY FROM).
func (b *Binder) LookupTable(rv *pg.RangeVar) (*catalog.Table, error) {
	n, err := b.relation(rv, rv.GetRelname())
	if err != nil {
		return nil, err
	}
	s, ok := n.(*Scan)
	if !ok {
		if _, isVirtual := n.(*VirtualScan); !isVirtual {
			return nil, posErr(pgerror.New(pgerror.CodeFeatureNotSupported, "cannot change view %q: views are read-only (updatable views are not supported)", rv.GetRelname()), rv.GetLocation())
		}
		return nil, posErr(pgerror.New(pgerror.CodeWrongObjectType, "cannot change system relation %q", rv.GetRelname()), rv.GetLocation())
	}
	if s.Table.Rewriting {
		// Its rows are being copied into the table that replaces it: a
		// write now would be lost.
		return nil, posErr(pgerror.New(pgerror.CodeLockNotAvailable, "could not obtain lock on relation %q", rv.GetRelname()).
			WithDetail("ALTER TABLE ... ADD PRIMARY KEY is copying the table's rows into a new table.").
			WithHint("Run the statement again when the ALTER TABLE is done."), rv.GetLocation())
	}
	return s.Table, nil
}

func newScan(t *catalog.Table, alias string) *Scan {
	s := &Scan{Table: t, Alias: alias, Access: Access{Kind: FullScan}}
	for i, c := range t.Columns {
		s.cols = append(s.cols, Column{Name: c.Name, T: c.Type, Table: alias, TableOID: t.OID(), AttNum: int16(i + 1), Hidden: c.Hidden})
	}
	return s
}

func (b *Binder) join(j *pg.JoinExpr, sc *scope, parent *scope) (Node, []scopeCol, error) {
	left, lcols, err := b.fromItem(j.GetLarg(), sc, parent)
	if err != nil {
		return nil, nil, err
	}
	// The right side of a join may be LATERAL over the left one.
	right, rcols, err := b.fromItem(j.GetRarg(), &scope{cols: append(append([]scopeCol(nil), sc.cols...), lcols...), parent: parent}, parent)
	if err != nil {
		return nil, nil, err
	}
	named := map[string]bool{}
	if err := noRepeatedNames(named, lcols); err != nil {
		return nil, nil, err
	}
	if err := noRepeatedNames(named, rcols); err != nil {
		return nil, nil, err
	}
	if lat, ok := right.(*Lateral); ok {
		if j.GetJointype() != pg.JoinType_JOIN_INNER || j.GetQuals() != nil && !isTrueConst(j.GetQuals()) {
			return nil, nil, pgerror.Unsupported("LATERAL in this kind of join")
		}
		cols := append(append([]scopeCol(nil), lcols...), rcols...)
		return &LateralJoin{Left: left, Sub: lat.Sub, cols: append(append([]Column(nil), left.Columns()...), right.Columns()...)}, cols, nil
	}
	out := &Join{Left: left, Right: right, cols: append(append([]Column(nil), left.Columns()...), right.Columns()...)}
	switch j.GetJointype() {
	case pg.JoinType_JOIN_INNER:
		out.Kind = InnerJoin
	case pg.JoinType_JOIN_LEFT:
		out.Kind = LeftJoin
	case pg.JoinType_JOIN_RIGHT:
		out.Kind = RightJoin
	case pg.JoinType_JOIN_FULL:
		out.Kind = FullJoin
	default:
		return nil, nil, pgerror.Unsupported("this join type")
	}
	cols := append(append([]scopeCol(nil), lcols...), rcols...)
	js := &scope{cols: cols, parent: parent}
	switch {
	case j.GetQuals() != nil:
		if err := noWindow(j.GetQuals(), "JOIN conditions"); err != nil {
			return nil, nil, err
		}
		if err := b.noSRF(j.GetQuals(), "JOIN conditions"); err != nil {
			return nil, nil, err
		}
		cond, err := b.expr(j.GetQuals(), js, tBool)
		if err != nil {
			return nil, nil, err
		}
		if cond, err = b.coerceTo(cond, tBool, "argument of JOIN/ON", -1); err != nil {
			return nil, nil, err
		}
		b.setJoinCond(out, b.pushOnIntoSides(out, cond), len(lcols))
	case len(j.GetUsingClause()) > 0 || j.GetIsNatural():
		var names []string
		for _, u := range j.GetUsingClause() {
			name := u.GetString_().GetSval()
			if slices.Contains(names, name) {
				return nil, nil, pgerror.New(pgerror.CodeDuplicateColumn, "column name %q appears more than once in USING clause", name)
			}
			names = append(names, name)
		}
		if j.GetIsNatural() {
			for _, l := range lcols {
				for _, r := range rcols {
					if l.Name == r.Name && !l.Hidden {
						names = append(names, l.Name)
					}
				}
			}
		}
		var cond Expr
		for _, name := range names {
			li, ri := -1, -1
			for i, c := range lcols {
				if c.Name == name {
					li = i
				}
			}
			for i, c := range rcols {
				if c.Name == name {
					ri = i
				}
			}
			if li < 0 || ri < 0 {
				return nil, nil, pgerror.New(pgerror.CodeUndefinedColumn, "column %q specified in USING clause does not exist in %s table", name, map[bool]string{true: "left", false: "right"}[li < 0])
			}
			eq, err := b.binary("=", &ColRef{Idx: li, T: lcols[li].T, Name: name}, &ColRef{Idx: len(lcols) + ri, T: rcols[ri].T, Name: name}, -1)
			if err != nil {
				return nil, nil, err
			}
			cond = and(cond, eq)
			cols[len(lcols)+ri].Hidden = true // USING columns appear once in *
			cols[len(lcols)+ri].Using = true
		}
		b.setJoinCond(out, cond, len(lcols))
	}
	return out, cols, nil
}

// setJoinCond sets the join's condition and takes its equalities of a left
// and a right column as the equi-join keys of a hash or lookup join.
func (b *Binder) setJoinCond(j *Join, cond Expr, nLeft int) {
	for _, c := range conjuncts(cond, nil) {
		if l, r, ok := joinKey(c, nLeft); ok {
			j.EqLeft, j.EqRight = append(j.EqLeft, l), append(j.EqRight, r)
		}
	}
	j.Cond = cond // evaluated whole on the joined row; the keys only pick candidates
}

// joinKey splits c, if it equates a column of the left side (index <
// nLeft) with one of the right, into the left key and the right key (read
// on the right row).
func joinKey(c Expr, nLeft int) (left, right Expr, ok bool) {
	bo, isOp := c.(*BinOp)
	if !isOp || bo.Name != "=" {
		return nil, nil, false
	}
	l, r := equiSides(bo)
	switch ls, rs := sideOf(l, nLeft), sideOf(r, nLeft); {
	case ls == 1 && rs == 2:
		return l, shift(r, nLeft), true
	case ls == 2 && rs == 1:
		return r, shift(l, nLeft), true
	}
	return nil, nil, false
}

// equiSides returns the sides of an equality as hash-join keys of one
// type: integers of different widths (int4 = int8) are both widened to
// int8, whose equal values encode alike; other sides of different types
// come back unchanged (sideOf then rejects them).
func equiSides(bo *BinOp) (Expr, Expr) {
	l, r := bo.L, bo.R
	if l.Type() == r.Type() || intWidth(l.Type().OID) == 0 || intWidth(r.Type().OID) == 0 {
		return l, r
	}
	widen := func(e Expr) Expr {
		if e.Type().OID == types.OIDInt8 {
			return e
		}
		return &Cast{E: e, T: tInt8, Kind: types.CastImplicit}
	}
	return widen(l), widen(r)
}

// sideOf: 1 if e is a column of the left side (idx < nLeft), 2 if of the
// right, possibly under casts that keep its values and cannot fail
// (varchar to text, integer widening); 0 otherwise.
func sideOf(e Expr, nLeft int) int {
	cr, ok := castColumn(e)
	if !ok {
		return 0
	}
	if cr.Idx < nLeft {
		return 1
	}
	return 2
}

// castColumn returns the column of e, a ColRef possibly under casts that
// keep its values.
func castColumn(e Expr) (*ColRef, bool) {
	switch x := e.(type) {
	case *ColRef:
		return x, true
	case *Cast:
		from, to := x.E.Type().OID, x.T.OID
		if to == types.OIDText && isTextOID(from) || intWidth(from) > 0 && intWidth(to) >= intWidth(from) {
			return castColumn(x.E)
		}
	}
	return nil, false
}

// shift moves the column e reads (see sideOf) n places to the left.
func shift(e Expr, n int) Expr {
	out, _ := shiftColumns(e, n, math.MaxInt, n)
	return out
}

func (b *Binder) values(lists []*pg.Node, sc *scope, hints []types.T) (*Values, error) {
	v := &Values{}
	width := len(lists[0].GetList().GetItems())
	for _, l := range lists {
		items := l.GetList().GetItems()
		if len(items) != width {
			return nil, pgerror.New(pgerror.CodeSyntaxError, "VALUES lists must all be the same length")
		}
		row := make([]Expr, width)
		for i, it := range items {
			hint := tUnknown
			if i < len(hints) {
				hint = hints[i]
			}
			if it.GetSetToDefault() != nil {
				row[i] = &defaultMarker{}
				continue
			}
			e, err := b.expr(it, sc, hint)
			if err != nil {
				return nil, err
			}
			row[i] = e
		}
		v.Rows = append(v.Rows, row)
	}
	if hints == nil {
		for c := 0; c < width; c++ {
			col := make([]Expr, len(v.Rows))
			for r := range v.Rows {
				col[r] = v.Rows[r][c]
			}
			col, t, err := b.unify(col, "VALUES", -1)
			if err != nil {
				return nil, err
			}
			if t.OID == types.OIDUnknown {
				t = tText
				for r := range col {
					if col[r], err = b.cast(col[r], t, types.CastImplicit, -1); err != nil {
						return nil, err
					}
				}
			}
			for r := range v.Rows {
				v.Rows[r][c] = col[r]
			}
			v.cols = append(v.cols, Column{Name: "column" + itoa(c+1), T: t})
		}
	}
	return v, nil
}

// defaultMarker is DEFAULT in a VALUES row of an INSERT.
type defaultMarker struct{}

func (*defaultMarker) Type() types.T { return tUnknown }
func (*defaultMarker) Eval(*EvalContext, Row) (types.Datum, error) {
	return types.NullDatum, pgerror.New(pgerror.CodeSyntaxError, "DEFAULT is not allowed in this context")
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

func (b *Binder) setOp(s *pg.SelectStmt, parent *scope) (Node, error) {
	if s.GetLarg() == nil || s.GetRarg() == nil {
		return nil, pgerror.New(pgerror.CodeInternalError, "set operation %v without both sides", s.GetOp())
	}
	if err := noSetOpLocking(s); err != nil {
		return nil, err
	}
	// In a recursive term PostgreSQL refuses the self reference under
	// INTERSECT ALL, on the right of EXCEPT and on the left of EXCEPT ALL.
	var lctx, rctx string
	switch s.GetOp() {
	case pg.SetOperation_SETOP_INTERSECT:
		if s.GetAll() {
			lctx, rctx = "INTERSECT", "INTERSECT"
		}
	case pg.SetOperation_SETOP_EXCEPT:
		if s.GetAll() {
			lctx = "EXCEPT"
		}
		rctx = "EXCEPT"
	}
	side := func(n *pg.SelectStmt, ctx string) (Node, error) {
		if k := len(b.recursing); k > 0 && ctx != "" && b.recursing[k-1].setOpCtx == "" {
			d := b.recursing[k-1]
			d.setOpCtx = ctx
			defer func() { d.setOpCtx = "" }()
		}
		return b.selectStmt(n, parent)
	}
	l, err := side(s.GetLarg(), lctx)
	if err != nil {
		return nil, err
	}
	r, err := side(s.GetRarg(), rctx)
	if err != nil {
		return nil, err
	}
	lc, rc := l.Columns(), r.Columns()
	if len(lc) != len(rc) {
		return nil, pgerror.New(pgerror.CodeSyntaxError, "each %s query must have the same number of columns", strings.ToUpper(opName(s.GetOp())))
	}
	for i := range lc {
		if lc[i].T != rc[i].T {
			if _, err := commonType([]types.T{lc[i].T, rc[i].T}, strings.ToUpper(opName(s.GetOp()))); err != nil {
				return nil, err
			}
		}
	}
	var n Node = &SetOp{Op: opName(s.GetOp()), All: s.GetAll(), Left: l, Right: r}
	return b.orderLimit(s, n, nil, parent)
}

func opName(op pg.SetOperation) string {
	switch op {
	case pg.SetOperation_SETOP_UNION:
		return "union"
	case pg.SetOperation_SETOP_INTERSECT:
		return "intersect"
	}
	return "except"
}

func isLateral(n Node) bool { _, ok := n.(*Lateral); return ok }

func isTrueConst(n *pg.Node) bool {
	c := n.GetAConst()
	return c != nil && c.GetBoolval() != nil && c.GetBoolval().GetBoolval()
}

// equalityPrefix returns the values the conjuncts cs fix the leading
// columns of cols to (col = value), up to the first column they do not fix.
func equalityPrefix(cs []Expr, cols []int) []Expr {
	var eq []Expr
	for _, col := range cols {
		var v Expr
		for _, c := range cs {
			if op, val, ok := keyCond(c, col); ok && op == "=" {
				v = val
				break
			}
		}
		if v == nil {
			break
		}
		eq = append(eq, v)
	}
	return eq
}
