package plan

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// SessionFuncs resolves functions whose value comes from the session
// (current_database(), version(), pg_backend_pid(), nextval(), ...); set by
// the executor.
type SessionFuncs func(name string, args []Expr) (Expr, bool, error)

func funcName(fc *pg.FuncCall) string {
	parts := fc.GetFuncname()
	name := parts[len(parts)-1].GetString_().GetSval()
	return strings.ToLower(name)
}

func allConst(args []Expr) bool {
	for _, a := range args {
		if _, ok := a.(*Const); !ok {
			return false
		}
	}
	return true
}

// hasAgg reports whether a parse tree contains an aggregate call outside
// subqueries.
func hasAgg(n *pg.Node) bool {
	if n == nil {
		return false
	}
	found := false
	walk(n, func(x *pg.Node) bool {
		if fc := x.GetFuncCall(); fc != nil && IsAggregate(funcName(fc)) && fc.GetOver() == nil {
			found = true
		}
		return !found && x.GetSubLink() == nil
	})
	return found
}

// walk visits the expression nodes of a parse tree.
func walk(n *pg.Node, f func(*pg.Node) bool) {
	if n == nil || !f(n) {
		return
	}
	switch {
	case n.GetAExpr() != nil:
		walk(n.GetAExpr().GetLexpr(), f)
		walk(n.GetAExpr().GetRexpr(), f)
	case n.GetBoolExpr() != nil:
		for _, a := range n.GetBoolExpr().GetArgs() {
			walk(a, f)
		}
	case n.GetFuncCall() != nil:
		for _, a := range n.GetFuncCall().GetArgs() {
			walk(a, f)
		}
		// A window's PARTITION BY and ORDER BY may hold aggregates.
		if over := n.GetFuncCall().GetOver(); over != nil {
			for _, a := range append(over.GetPartitionClause(), over.GetOrderClause()...) {
				walk(a, f)
			}
		}
	case n.GetSortBy() != nil:
		walk(n.GetSortBy().GetNode(), f)
	case n.GetTypeCast() != nil:
		walk(n.GetTypeCast().GetArg(), f)
	case n.GetNullTest() != nil:
		walk(n.GetNullTest().GetArg(), f)
	case n.GetCaseExpr() != nil:
		ce := n.GetCaseExpr()
		walk(ce.GetArg(), f)
		for _, w := range ce.GetArgs() {
			walk(w.GetCaseWhen().GetExpr(), f)
			walk(w.GetCaseWhen().GetResult(), f)
		}
		walk(ce.GetDefresult(), f)
	case n.GetCoalesceExpr() != nil:
		for _, a := range n.GetCoalesceExpr().GetArgs() {
			walk(a, f)
		}
	case n.GetList() != nil:
		for _, a := range n.GetList().GetItems() {
			walk(a, f)
		}
	case n.GetMinMaxExpr() != nil:
		for _, a := range n.GetMinMaxExpr().GetArgs() {
			walk(a, f)
		}
	case n.GetRowExpr() != nil:
		for _, a := range n.GetRowExpr().GetArgs() {
			walk(a, f)
		}
	case n.GetAIndirection() != nil:
		walk(n.GetAIndirection().GetArg(), f)
	case n.GetAArrayExpr() != nil:
		for _, a := range n.GetAArrayExpr().GetElements() {
			walk(a, f)
		}
	}
}

// aggScope collects the aggregates of an aggregated SELECT; expressions
// bound under it read the Agg node's output row.
type aggScope struct {
	agg   *Agg
	b     *Binder
	input *scope
	// groupNodes are the GROUP BY items as written (positions and output
	// names resolved), without source locations: an expression of the
	// select list, HAVING or ORDER BY that is one of them reads it.
	groupNodes []*pg.Node
	// dependent: the aggregates reading columns the groups determine, by
	// input column (dependentRef).
	dependent map[int]Expr
}

// dependentRef reads input column idx when the groups determine it
// without naming it: a column of a table whose primary key columns are all
// grouped (PostgreSQL's functional dependency; Django groups by a model's
// key and selects its other columns). It is the same on every row of a
// group, so any_value of it is its value.
func (a *aggScope) dependentRef(idx int, t types.T, name string) (Expr, bool) {
	c := a.input.cols[idx]
	if c.Rel == nil || c.Rel.RowID || len(c.Rel.Key) == 0 {
		return nil, false
	}
	for _, k := range c.Rel.Key {
		grouped := false
		for _, g := range a.agg.Groups {
			if cr, ok := g.(*ColRef); ok {
				gc := a.input.cols[cr.Idx]
				grouped = grouped || gc.Rel == c.Rel && gc.Table == c.Table && gc.Col == k.Column
			}
		}
		if !grouped {
			return nil, false
		}
	}
	if e, ok := a.dependent[idx]; ok {
		return e, true
	}
	agg, err := lookupAggregate("any_value", []types.T{t}, false)
	if err != nil {
		return nil, false
	}
	a.agg.Aggs = append(a.agg.Aggs, AggCall{Name: "any_value", Arg: &ColRef{Idx: idx, T: t, Name: name}, T: agg.Result, New: agg.New})
	e := &ColRef{Idx: len(a.agg.Groups) + len(a.agg.Aggs) - 1, T: t, Name: name}
	if a.dependent == nil {
		a.dependent = map[int]Expr{}
	}
	a.dependent[idx] = e
	return e, true
}

// matchGroup reports which GROUP BY item the expression n is, if any (as
// PostgreSQL matches `date_trunc('day', t)` in the select list with the
// same GROUP BY expression).
func (a *aggScope) matchGroup(n *pg.Node) (int, bool) {
	if n.GetColumnRef() != nil || n.GetAConst() != nil || len(a.groupNodes) == 0 {
		return 0, false // columns match through groupRef; constants are no group
	}
	bare := withoutLocations(n)
	for i, g := range a.groupNodes {
		if proto.Equal(bare, g) {
			return i, true
		}
	}
	return 0, false
}

// withoutLocations is a copy of n with every source location zeroed.
// sortKey is e ordered as sb says: PostgreSQL's default puts NULLs last
// ascending and first descending (NULL is larger than every value).
func sortKey(e Expr, sb *pg.SortBy) SortKey {
	k := SortKey{E: e, Desc: sb.GetSortbyDir() == pg.SortByDir_SORTBY_DESC}
	switch sb.GetSortbyNulls() {
	case pg.SortByNulls_SORTBY_NULLS_FIRST:
		k.NullsFirst = true
	case pg.SortByNulls_SORTBY_NULLS_LAST:
	default:
		k.NullsFirst = k.Desc
	}
	return k
}

// astKey identifies a parse tree by its content, positions aside: two
// texts of one expression (in GROUP BY and the select list, an ORDER BY
// written twice) have the same key.
func astKey(n *pg.Node) string {
	raw, _ := proto.MarshalOptions{Deterministic: true}.Marshal(withoutLocations(n))
	return string(raw)
}

func withoutLocations(n *pg.Node) *pg.Node {
	c := proto.Clone(n).(*pg.Node)
	var clear func(m protoreflect.Message)
	clear = func(m protoreflect.Message) {
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.Name() == "location" && fd.Kind() == protoreflect.Int32Kind:
				m.Clear(fd)
			case fd.IsList() && fd.Message() != nil:
				for i := 0; i < v.List().Len(); i++ {
					clear(v.List().Get(i).Message())
				}
			case fd.Message() != nil && !fd.IsMap():
				clear(v.Message())
			}
			return true
		})
	}
	clear(c.ProtoReflect())
	return c
}

// outerGroupRef maps a subquery's reference to column idx of the outer
// scope outer, when that is a grouped query's: to the GROUP BY item that is
// the column, or PostgreSQL's 42803 for an ungrouped one.
func (b *Binder) outerGroupRef(outer *scope, idx int, t types.T, name string, loc int32) (int, error) {
	a := b.groupedScopes[outer]
	if a == nil {
		return idx, nil
	}
	for i, g := range a.agg.Groups {
		if cr, ok := g.(*ColRef); ok && cr.Idx == idx {
			return i, nil
		}
	}
	q := name
	if table := a.input.cols[idx].Table; table != "" {
		q = table + "." + name
	}
	return 0, posErr(pgerror.New(pgerror.CodeGroupingError, "subquery uses ungrouped column %q from outer query", q), loc)
}

// groupRef maps a column reference outside aggregate arguments to the
// GROUP BY expression that is that column.
func (a *aggScope) groupRef(idx int, t types.T, name string, loc int32) (Expr, error) {
	for i, g := range a.agg.Groups {
		if cr, ok := g.(*ColRef); ok && cr.Idx == idx {
			return &ColRef{Idx: i, T: t, Name: name}, nil
		}
	}
	if e, ok := a.dependentRef(idx, t, name); ok {
		return e, nil
	}
	table := a.input.cols[idx].Table
	q := name
	if table != "" {
		q = table + "." + name
	}
	return nil, posErr(pgerror.New(pgerror.CodeGroupingError, "column %q must appear in the GROUP BY clause or be used in an aggregate function", q), loc)
}

// groupExpr binds a GROUP BY item: an output column position or name, or
// an expression over the input.
func (b *Binder) groupExpr(n *pg.Node, targets []*pg.Node, sc *scope) (Expr, *pg.Node, error) {
	if c := n.GetAConst(); c != nil && c.GetIval() != nil {
		i := int(c.GetIval().GetIval())
		if i < 1 || i > len(targets) {
			return nil, nil, posErr(pgerror.New(pgerror.CodeInvalidColumnReference, "GROUP BY position %d is not in select list", i), c.GetLocation())
		}
		n = targets[i-1].GetResTarget().GetVal()
	} else if cr := n.GetColumnRef(); cr != nil && len(cr.GetFields()) == 1 {
		name := cr.GetFields()[0].GetString_().GetSval()
		if _, _, _, err := sc.resolve("", name, -1); err != nil {
			for _, t := range targets {
				if t.GetResTarget().GetName() == name {
					n = t.GetResTarget().GetVal()
				}
			}
		}
	}
	if hasAgg(n) {
		return nil, nil, pgerror.New(pgerror.CodeGroupingError, "aggregate functions are not allowed in GROUP BY")
	}
	if err := noWindow(n, "GROUP BY"); err != nil {
		return nil, nil, err
	}
	e, err := b.expr(n, sc, tUnknown)
	return e, n, err
}

func (b *Binder) funcCall(fc *pg.FuncCall, sc *scope) (Expr, error) {
	name := funcName(fc)
	loc := fc.GetLocation()
	if fc.GetOver() != nil {
		return b.windowCall(fc, name)
	}
	if b.isSRF(fc) {
		return b.srfCall(fc, name, sc)
	}
	if fc.GetAggWithinGroup() || isOrderedSet(name) {
		return b.orderedSetCall(name, fc, sc)
	}
	if IsAggregate(name) {
		return b.aggCall(name, fc, sc)
	}
	if fc.GetAggStar() || fc.GetAggDistinct() {
		return nil, posErr(pgerror.New(pgerror.CodeWrongObjectType, "%s is not an aggregate function", name), loc)
	}
	args := make([]Expr, len(fc.GetArgs()))
	for i, a := range fc.GetArgs() {
		e, err := b.expr(a, sc, tUnknown)
		if err != nil {
			return nil, err
		}
		args[i] = e
	}
	return b.callFunction(name, args, loc)
}

func (b *Binder) callFunction(name string, args []Expr, loc int32) (Expr, error) {
	if b.Session != nil {
		if e, ok, err := b.Session(name, args); ok || err != nil {
			if err != nil {
				return nil, posErr(pgerror.From(err), loc)
			}
			return e, nil
		}
	}
	ts := make([]types.T, len(args))
	for i, a := range args {
		ts[i] = a.Type()
	}
	fn, err := lookupFunction(name, ts)
	if err != nil {
		return nil, posErr(pgerror.From(err), loc)
	}
	for i := range args {
		if i < len(fn.Args) {
			if args[i], err = b.castOperand(args[i], fn.Args[i], loc); err != nil {
				return nil, err
			}
		}
	}
	out := &FuncExpr{Name: name, Args: args, T: fn.Result, Fn: fn.Fn, Strict: fn.Strict, Volatile: fn.Volatile}
	if !fn.Volatile && !fn.Stable && allConst(args) {
		if d, err := out.Eval(nil, nil); err == nil {
			return &Const{T: out.T, D: d}, nil
		}
	}
	return out, nil
}

func (b *Binder) aggCall(name string, fc *pg.FuncCall, sc *scope) (Expr, error) {
	loc := fc.GetLocation()
	if b.aggs == nil {
		return nil, posErr(pgerror.New(pgerror.CodeGroupingError, "aggregate functions are not allowed here"), loc)
	}
	if b.inAggArg {
		return nil, posErr(pgerror.New(pgerror.CodeGroupingError, "aggregate function calls cannot be nested"), loc)
	}
	b.inAggArg = true
	defer func() { b.inAggArg = false }()
	call := AggCall{Name: name, Distinct: fc.GetAggDistinct()}
	argTypes, err := b.aggArgs(fc, &call, b.aggs.input)
	if err != nil {
		return nil, err
	}
	if f := fc.GetAggFilter(); f != nil {
		if err := b.noSRF(f, "FILTER"); err != nil {
			return nil, err
		}
		e, err := b.expr(f, b.aggs.input, tBool)
		if err != nil {
			return nil, err
		}
		call.Filter = e
	}
	for _, o := range fc.GetAggOrder() {
		sb := o.GetSortBy()
		if sb.GetUseOp() != nil {
			return nil, posErr(pgerror.Unsupported("ORDER BY ... USING inside an aggregate"), loc)
		}
		if call.Distinct {
			inArgs := false
			for _, a := range fc.GetArgs() {
				inArgs = inArgs || astKey(a) == astKey(sb.GetNode())
			}
			if !inArgs {
				return nil, posErr(pgerror.New(pgerror.CodeInvalidColumnReference, "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list"), loc)
			}
		}
		e, err := b.aggOrderExpr(sb, loc)
		if err != nil {
			return nil, err
		}
		call.Order = append(call.Order, sortKey(e, sb))
	}
	if err := b.resolveAgg(fc, &call, argTypes); err != nil {
		return nil, err
	}
	if order := call.Order; len(order) > 0 {
		inner, nargs := call.New, len(argTypes)
		call.New = func() Aggregator { return &orderedAggregator{inner: inner(), order: order, nargs: nargs} }
	}
	a := b.aggs.agg
	a.Aggs = append(a.Aggs, call)
	return &ColRef{Idx: len(a.Groups) + len(a.Aggs) - 1, T: call.T, Name: name}, nil
}

// aggOrderExpr binds an aggregate's ORDER BY item over its input; an
// untyped literal is text.
func (b *Binder) aggOrderExpr(sb *pg.SortBy, loc int32) (Expr, error) {
	e, err := b.expr(sb.GetNode(), b.aggs.input, tUnknown)
	if err != nil || e.Type().OID != types.OIDUnknown {
		return e, err
	}
	return b.cast(e, tText, types.CastImplicit, loc)
}

// aggArgs binds an aggregate call's arguments over sc into call (Arg,
// Arg2) and returns their types.
func (b *Binder) aggArgs(fc *pg.FuncCall, call *AggCall, sc *scope) ([]types.T, error) {
	var argTypes []types.T
	if fc.GetAggStar() {
		return nil, nil
	}
	for i, a := range fc.GetArgs() {
		e, err := b.expr(a, sc, tUnknown)
		if err != nil {
			return nil, err
		}
		if e.Type().OID == types.OIDUnknown {
			if e, err = b.cast(e, tText, types.CastImplicit, fc.GetLocation()); err != nil {
				return nil, err
			}
		}
		if i == 0 {
			call.Arg = e
		} else {
			call.Arg2 = e
		}
		argTypes = append(argTypes, e.Type())
	}
	return argTypes, nil
}

// resolveAgg finds the aggregate call names for argTypes, sets its result
// type and state, and casts its arguments to the aggregate's.
func (b *Binder) resolveAgg(fc *pg.FuncCall, call *AggCall, argTypes []types.T) error {
	loc := fc.GetLocation()
	agg, err := lookupAggregate(call.Name, argTypes, fc.GetAggStar())
	if err != nil {
		return posErr(pgerror.From(err), loc)
	}
	call.T, call.New = agg.Result, agg.New
	if call.Arg != nil && len(agg.Args) > 0 {
		if call.Arg, err = b.cast(call.Arg, agg.Args[0], types.CastImplicit, loc); err != nil {
			return err
		}
	}
	if call.Arg2 != nil && len(agg.Args) > 1 {
		if call.Arg2, err = b.cast(call.Arg2, agg.Args[1], types.CastImplicit, loc); err != nil {
			return err
		}
	}
	return nil
}

func (b *Binder) subLink(sl *pg.SubLink, sc *scope) (Expr, error) {
	sel := sl.GetSubselect().GetSelectStmt()
	saved, savedArg, savedWin := b.aggs, b.inAggArg, b.win
	b.aggs, b.inAggArg, b.win = nil, false, nil
	refs := b.outerRefs
	// The subquery's FROM scope has sc as its parent: sc's columns are its
	// level-1 outer columns, the row the executor passes when it runs it.
	// In a grouped query (outside aggregate arguments) that row is the
	// group's: the subquery's references to sc's columns read the group
	// keys (outerGroupRef).
	if b.groupedScopes == nil {
		b.groupedScopes = map[*scope]*aggScope{}
	}
	prevGrouped, hadGrouped := b.groupedScopes[sc]
	if saved != nil && !savedArg {
		b.groupedScopes[sc] = saved
	} else {
		delete(b.groupedScopes, sc)
	}
	n, err := b.selectStmt(sel, sc)
	if hadGrouped {
		b.groupedScopes[sc] = prevGrouped
	} else {
		delete(b.groupedScopes, sc)
	}
	b.aggs, b.inAggArg, b.win = saved, savedArg, savedWin
	if err != nil {
		return nil, err
	}
	// Any outer reference made while binding it (possibly by a subquery
	// nested in it) makes it correlated: it is run again for each row.
	sq := &Subquery{Plan: n, Correlated: b.outerRefs > refs}
	cols := n.Columns()
	switch sl.GetSubLinkType() {
	case pg.SubLinkType_EXISTS_SUBLINK:
		sq.Kind, sq.T = ExistsSubquery, tBool
	case pg.SubLinkType_EXPR_SUBLINK:
		if len(cols) != 1 {
			return nil, posErr(pgerror.New(pgerror.CodeSyntaxError, "subquery must return only one column"), sl.GetLocation())
		}
		sq.Kind, sq.T = ScalarSubquery, cols[0].T
	case pg.SubLinkType_ANY_SUBLINK, pg.SubLinkType_ALL_SUBLINK:
		all := sl.GetSubLinkType() == pg.SubLinkType_ALL_SUBLINK
		opName := "="
		if names := sl.GetOperName(); len(names) > 0 {
			opName = names[len(names)-1].GetString_().GetSval()
		}
		if items := rowItems(sl.GetTestexpr()); items != nil {
			if all || opName != "=" {
				return nil, posErr(pgerror.Unsupported("a row compared with "+opName+" "+map[bool]string{true: "ALL", false: "ANY"}[all]+" of a subquery"), sl.GetLocation())
			}
			if err := b.rowInSubquery(sq, sl, items, cols, sc); err != nil {
				return nil, err
			}
			break
		}
		if len(cols) != 1 {
			return nil, posErr(pgerror.New(pgerror.CodeSyntaxError, "subquery has too many columns"), sl.GetLocation())
		}
		test, err := b.expr(sl.GetTestexpr(), sc, cols[0].T)
		if err != nil {
			return nil, err
		}
		op, err := b.binaryOp(opName, test, &ColRef{Idx: 0, T: cols[0].T}, sl.GetLocation())
		if err != nil {
			return nil, err
		}
		if op.T.OID != types.OIDBool {
			return nil, posErr(pgerror.New(pgerror.CodeDatatypeMismatch, "op ANY/ALL (array) requires operator to yield boolean"), sl.GetLocation())
		}
		sq.Kind, sq.T, sq.Test, sq.Eq, sq.All = InSubquery, tBool, op.L, op, all
	case pg.SubLinkType_ARRAY_SUBLINK:
		if len(cols) != 1 {
			return nil, posErr(pgerror.New(pgerror.CodeSyntaxError, "subquery must return only one column"), sl.GetLocation())
		}
		at := types.ArrayOf(cols[0].T)
		if at.OID == 0 {
			return nil, posErr(pgerror.New(pgerror.CodeUndefinedObject, "could not find array type for data type %s", typeName(cols[0].T)), sl.GetLocation())
		}
		sq.Kind, sq.T = ArraySubquery, at
	default:
		return nil, posErr(pgerror.Unsupported("this kind of subquery"), sl.GetLocation())
	}
	return sq, nil
}
