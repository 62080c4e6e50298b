package plan

import (
	"strconv"
	"strings"
	"time"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/ysql/builtins"
	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Binder binds the statements of one session against a catalog snapshot.
type Binder struct {
	Cat        *catalog.Snapshot
	Database   string
	SearchPath []string
	// Params are the statement's parameter types; unknown ones (OID 0)
	// are inferred from their first use and default to text.
	Params []types.T
	// Virtual resolves pg_catalog and information_schema relations.
	Virtual func(schema, name string) (*VirtualTable, bool)
	// Session resolves session functions before the builtins.
	Session SessionFuncs
	// Reg converts between names and OIDs for the OID alias types
	// ('t'::regclass, oid::regtype::text); nil: they read and print as
	// numbers.
	Reg RegNames
	// SessionSRF resolves the session's set-returning functions.
	SessionSRF SessionSRFs
	// Record, when set, collects what CREATE VIEW keeps of the query it
	// binds.
	Record *BindRecord
	// DMLs are the data-modifying WITH queries bound (cdml.go): the
	// statement runs them first.
	DMLs []*DMLResult
	// Location is the session's time zone: literals are read in it when
	// bound ('2024-06-10 02:30'::timestamptz, 'today'::date), as
	// PostgreSQL reads them at parse time; nil is UTC.
	Location *time.Location
	// FoldErr is the first error computing an operator over constants
	// met: the expression is left to fail at run time, but PostgreSQL's
	// planner folds it and fails first (a cursor's DECLARE does).
	FoldErr error

	aggs      *aggScope
	win       *winScope
	srfs      *srfScope // the set-returning calls of the select list being bound
	inAggArg  bool
	outerRefs int        // outer references bound so far (correlation)
	ctes      []cteFrame // the WITH queries visible, outermost level first
	recursing []*cteDef  // the recursive WITH queries whose recursive term is being bound
	expanding []*cteDef  // the WITH queries bound by cteQuery now, outermost first
	inViews   []uint32   // the views whose query is being bound, outermost first
	inFromSub int        // depth of subqueries in FROM being bound
	// groupedScopes: the scopes of grouped queries whose subqueries are
	// being bound, and their aggregation (outerGroupRef).
	groupedScopes map[*scope]*aggScope
}

// BindRecord is what binding a query found out about its names: the
// relations it reads, the schema each unqualified relation name resolved
// in, and the columns each * stood for (a view's query is stored with
// those made explicit).
type BindRecord struct {
	// Reads: the OIDs of the tables and views the query reads (not those
	// the views read).
	Reads   map[uint32]bool
	Schemas map[*pg.RangeVar]string
	Stars   map[*pg.ColumnRef][]StarColumn
}

// StarColumn is one column a * expanded to: its FROM item and name.
type StarColumn struct{ Table, Name string }

// NewBindRecord returns an empty record.
func NewBindRecord() *BindRecord {
	return &BindRecord{Reads: map[uint32]bool{}, Schemas: map[*pg.RangeVar]string{}, Stars: map[*pg.ColumnRef][]StarColumn{}}
}

var tUnknown = types.T{OID: types.OIDUnknown, Mod: -1}
var tText = types.T{OID: types.OIDText, Mod: -1}
var tInt4 = types.T{OID: types.OIDInt4, Mod: -1}
var tInt8 = types.T{OID: types.OIDInt8, Mod: -1}
var tNumeric = types.T{OID: types.OIDNumeric, Mod: -1}

// scopeCol is one column visible to expressions.
type scopeCol struct {
	Table  string // alias or table name
	Name   string
	T      types.T
	Hidden bool
	// Scalar: the one column of a function in FROM, which the FROM
	// item's name stands for as a value (not a record of it).
	Scalar bool
	// Using: a right-hand USING column, hidden from * but not from its
	// own table's t.*.
	Using bool
	// Rel and Col: the table and column index a table's FROM item reads
	// (nil for other items), for the columns a grouped primary key
	// determines (aggScope.dependentRef).
	Rel *catalog.Table
	Col int
}

// scope is the set of columns a clause can reference; parent is the
// enclosing query's scope (for correlated subqueries).
type scope struct {
	cols   []scopeCol
	parent *scope
}

func posErr(e *pgerror.Error, loc int32) *pgerror.Error {
	if loc >= 0 {
		e.Position = loc + 1
	}
	return e
}

// resolveColumn finds a column by optional table qualifier.
func (sc *scope) resolve(table, name string, loc int32) (idx int, level int, t types.T, err error) {
	for s, lvl := sc, 0; s != nil; s, lvl = s.parent, lvl+1 {
		found := -1
		for i, c := range s.cols {
			if c.Name != name || (table != "" && c.Table != table) || (table == "" && c.Hidden) {
				continue
			}
			if found >= 0 {
				return 0, 0, t, posErr(pgerror.New(pgerror.CodeAmbiguousColumn, "column reference %q is ambiguous", name), loc)
			}
			found = i
		}
		if found >= 0 {
			return found, lvl, s.cols[found].T, nil
		}
	}
	if table != "" {
		known := false
		for s := sc; s != nil; s = s.parent {
			for _, c := range s.cols {
				if c.Table == table {
					known = true
				}
			}
		}
		if !known {
			return 0, 0, t, posErr(pgerror.New(pgerror.CodeUndefinedTable, "missing FROM-clause entry for table %q", table), loc)
		}
		return 0, 0, t, posErr(pgerror.New(pgerror.CodeUndefinedColumn, "column %s.%s does not exist", table, name), loc)
	}
	return 0, 0, t, posErr(pgerror.New(pgerror.CodeUndefinedColumn, "column %q does not exist", name), loc)
}

// Expr binds an expression with no columns in scope (VALUES, defaults).
func (b *Binder) Expr(n *pg.Node) (Expr, error) { return b.expr(n, &scope{}, tUnknown) }

// expr binds n; hint is the type an unknown literal or parameter should
// take (tUnknown: none).
func (b *Binder) expr(n *pg.Node, sc *scope, hint types.T) (Expr, error) {
	if b.aggs != nil && !b.inAggArg {
		if i, ok := b.aggs.matchGroup(n); ok {
			return &ColRef{Idx: i, T: b.aggs.agg.Groups[i].Type(), Name: columnName(n)}, nil
		}
	}
	switch {
	case n.GetAConst() != nil:
		return b.constant(n.GetAConst(), hint)
	case n.GetColumnRef() != nil:
		return b.columnRef(n.GetColumnRef(), sc)
	case n.GetParamRef() != nil:
		return b.param(n.GetParamRef(), hint)
	case n.GetTypeCast() != nil:
		tc := n.GetTypeCast()
		to, err := types.FromTypeName(tc.GetTypeName())
		if err != nil {
			return nil, posErr(pgerror.From(err), tc.GetLocation())
		}
		hint := to
		if to.OID == types.OIDVarchar || to.OID == types.OIDBPChar {
			// A literal is read as the type without its length, which
			// the explicit cast then truncates to ('toolong'::varchar(3)
			// is 'too').
			hint.Mod = -1
		}
		e, err := b.expr(tc.GetArg(), sc, hint)
		if err != nil {
			return nil, err
		}
		return b.cast(e, to, types.CastExplicit, tc.GetLocation())
	case n.GetAExpr() != nil:
		return b.aExpr(n.GetAExpr(), sc)
	case n.GetBoolExpr() != nil:
		be := n.GetBoolExpr()
		args := make([]Expr, len(be.GetArgs()))
		for i, a := range be.GetArgs() {
			e, err := b.expr(a, sc, tBool)
			if err != nil {
				return nil, err
			}
			if e, err = b.coerceTo(e, tBool, "argument of "+strings.TrimSuffix(strings.TrimPrefix(be.GetBoolop().String(), ""), "_EXPR"), be.GetLocation()); err != nil {
				return nil, err
			}
			args[i] = e
		}
		switch be.GetBoolop() {
		case pg.BoolExprType_AND_EXPR:
			out := args[0]
			for _, a := range args[1:] {
				out = &And{L: out, R: a}
			}
			return out, nil
		case pg.BoolExprType_OR_EXPR:
			out := args[0]
			for _, a := range args[1:] {
				out = &Or{L: out, R: a}
			}
			return out, nil
		default:
			return &Not{E: args[0]}, nil
		}
	case n.GetAArrayExpr() != nil:
		return b.arrayExpr(n.GetAArrayExpr(), sc, hint)
	case n.GetAIndirection() != nil:
		return b.indirection(n.GetAIndirection(), sc)
	case n.GetNullTest() != nil:
		nt := n.GetNullTest()
		e, err := b.expr(nt.GetArg(), sc, tUnknown)
		if err != nil {
			return nil, err
		}
		return &IsNull{E: e, Not: nt.GetNulltesttype() == pg.NullTestType_IS_NOT_NULL, Row: e.Type().OID == types.OIDRecord}, nil
	case n.GetBooleanTest() != nil:
		bt := n.GetBooleanTest()
		e, err := b.expr(bt.GetArg(), sc, tBool)
		if err != nil {
			return nil, err
		}
		if e, err = b.coerceTo(e, tBool, "argument of IS TRUE", bt.GetLocation()); err != nil {
			return nil, err
		}
		out := &BoolTest{E: e}
		switch bt.GetBooltesttype() {
		case pg.BoolTestType_IS_TRUE:
			out.Want = 1
		case pg.BoolTestType_IS_NOT_TRUE:
			out.Want, out.Not = 1, true
		case pg.BoolTestType_IS_FALSE:
			out.Want = 0
		case pg.BoolTestType_IS_NOT_FALSE:
			out.Want, out.Not = 0, true
		case pg.BoolTestType_IS_UNKNOWN:
			out.Want = -1
		default:
			out.Want, out.Not = -1, true
		}
		return out, nil
	case n.GetFuncCall() != nil:
		return b.funcCall(n.GetFuncCall(), sc)
	case n.GetRowExpr() != nil:
		return b.rowExpr(n.GetRowExpr(), sc)
	case n.GetCaseExpr() != nil:
		return b.caseExpr(n.GetCaseExpr(), sc)
	case n.GetCoalesceExpr() != nil:
		ce := n.GetCoalesceExpr()
		if err := b.noSRF(n, "COALESCE"); err != nil {
			return nil, err
		}
		args, t, err := b.common(ce.GetArgs(), sc, "COALESCE", ce.GetLocation())
		if err != nil {
			return nil, err
		}
		return &Coalesce{Args: args, T: t}, nil
	case n.GetMinMaxExpr() != nil:
		me := n.GetMinMaxExpr()
		args, t, err := b.common(me.GetArgs(), sc, "GREATEST/LEAST", me.GetLocation())
		if err == nil && t.OID == types.OIDUnknown { // all literals: text, as PostgreSQL resolves them
			args, t, err = b.unify(append(args, &Const{T: types.TText, D: types.NullDatum}), "GREATEST/LEAST", me.GetLocation())
			args = args[:len(args)-1]
		}
		if err != nil {
			return nil, err
		}
		if err := b.checkOrderable(t, me.GetLocation()); err != nil {
			return nil, err
		}
		return &MinMax{Args: args, T: t, Greatest: me.GetOp() == pg.MinMaxOp_IS_GREATEST}, nil
	case n.GetSqlvalueFunction() != nil:
		return b.sqlValueFunction(n.GetSqlvalueFunction())
	case n.GetSubLink() != nil:
		return b.subLink(n.GetSubLink(), sc)
	case n.GetCollateClause() != nil:
		// Only the C collation exists: "default", "C" and "POSIX" are it.
		cc := n.GetCollateClause()
		if err := CheckCollation(cc.GetCollname()); err != nil {
			return nil, posErr(err, cc.GetLocation())
		}
		return b.expr(cc.GetArg(), sc, hint)
	case n.GetAArrayExpr() != nil:
		return nil, posErr(pgerror.Unsupported("ARRAY expressions"), n.GetAArrayExpr().GetLocation())
	}
	return nil, pgerror.Unsupported("expression " + nodeName(n))
}

func nodeName(n *pg.Node) string {
	s := strings.TrimPrefix(strings.SplitN(strings.TrimSpace(n.String()), ":", 2)[0], "node:")
	if s == "" {
		return "of this kind"
	}
	return s
}

func (b *Binder) constant(c *pg.A_Const, hint types.T) (Expr, error) {
	if c.GetIsnull() {
		if hint.OID == types.OIDUnknown || hint.OID == 0 {
			return nullConst(tUnknown), nil
		}
		return nullConst(hint), nil
	}
	switch v := c.GetVal().(type) {
	case *pg.A_Const_Ival:
		return &Const{T: tInt4, D: types.DInt(int64(v.Ival.GetIval()))}, nil
	case *pg.A_Const_Fval:
		s := v.Fval.GetFval()
		if !strings.ContainsAny(s, ".eE") {
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				return &Const{T: tInt8, D: types.DInt(i)}, nil
			}
		}
		d, err := b.parseText(tNumeric, s)
		if err != nil {
			return nil, posErr(pgerror.From(err), c.GetLocation())
		}
		return &Const{T: tNumeric, D: d}, nil
	case *pg.A_Const_Boolval:
		return &Const{T: tBool, D: types.DBool(v.Boolval.GetBoolval())}, nil
	case *pg.A_Const_Sval:
		s := v.Sval.GetSval()
		if hint.OID != types.OIDUnknown && hint.OID != 0 && !(b.Reg != nil && types.IsReg(hint.OID)) {
			d, err := b.parseText(hint, s)
			if err != nil {
				return nil, posErr(pgerror.From(err), c.GetLocation())
			}
			return &Const{T: hint, D: d}, nil
		}
		return &Const{T: tUnknown, D: types.DString(s)}, nil
	case *pg.A_Const_Bsval:
		s := v.Bsval.GetBsval()
		return &Const{T: tText, D: types.DString(s)}, nil
	}
	return nil, pgerror.Unsupported("this constant")
}

func (b *Binder) param(p *pg.ParamRef, hint types.T) (Expr, error) {
	n := int(p.GetNumber())
	if n < 1 || n > 65535 {
		return nil, posErr(pgerror.New(pgerror.CodeUndefinedParameter, "there is no parameter $%d", n), p.GetLocation())
	}
	for len(b.Params) < n {
		b.Params = append(b.Params, types.T{})
	}
	if b.Params[n-1].OID == 0 && hint.OID != 0 && hint.OID != types.OIDUnknown {
		b.Params[n-1] = hint
	}
	t := b.Params[n-1]
	if t.OID == 0 {
		// Typed by a later use or text by default; the Param reads the
		// final type at Bind through the statement's Params.
		return &Param{Idx: n - 1, T: tUnknown}, nil
	}
	return &Param{Idx: n - 1, T: t}, nil
}

func (b *Binder) columnRef(cr *pg.ColumnRef, sc *scope) (Expr, error) {
	var parts []string
	for _, f := range cr.GetFields() {
		if f.GetAStar() != nil {
			return nil, posErr(pgerror.New(pgerror.CodeSyntaxError, "* is not allowed here"), cr.GetLocation())
		}
		parts = append(parts, f.GetString_().GetSval())
	}
	var table, name string
	switch len(parts) {
	case 1:
		name = parts[0]
	case 2:
		table, name = parts[0], parts[1]
	case 3:
		table, name = parts[1], parts[2]
	default:
		return nil, posErr(pgerror.New(pgerror.CodeSyntaxError, "improper qualified name (too many dotted names): %s", strings.Join(parts, ".")), cr.GetLocation())
	}
	idx, level, t, err := sc.resolve(table, name, cr.GetLocation())
	if err != nil && len(parts) == 1 && isUndefinedColumn(err) {
		if e, ok, rerr := b.wholeRow(name, sc, cr.GetLocation()); ok {
			return e, rerr
		}
	}
	if err != nil {
		return nil, err
	}
	return b.columnAt(sc, idx, level, t, name, cr.GetLocation())
}

// columnAt binds a reference to column idx of the scope level levels up
// from sc.
func (b *Binder) columnAt(sc *scope, idx, level int, t types.T, name string, loc int32) (Expr, error) {
	var err error
	if level > 0 {
		b.outerRefs++
		outer := sc
		for range level {
			outer = outer.parent
		}
		if idx, err = b.outerGroupRef(outer, idx, t, name, loc); err != nil {
			return nil, err
		}
		return &OuterRef{Level: level, Idx: idx, T: t}, nil
	}
	if b.aggs != nil && !b.inAggArg {
		return b.aggs.groupRef(idx, t, name, loc)
	}
	return &ColRef{Idx: idx, T: t, Name: name}, nil
}

// cast converts e to t in the given context, folding constants.
func (b *Binder) cast(e Expr, to types.T, kind types.CastContext, loc int32) (Expr, error) {
	from := e.Type()
	if from == to {
		return e, nil
	}
	if p, ok := e.(*Param); ok && p.T.OID == types.OIDUnknown {
		b.Params[p.Idx] = to
		return &Param{Idx: p.Idx, T: to}, nil
	}
	if r, ok, err := b.regCast(e, to, loc); ok {
		return r, err
	}
	if from.OID == types.OIDUnknown {
		if c, ok := e.(*Const); ok {
			if c.D.Null {
				return nullConst(to), nil
			}
			d, err := b.parseText(to, c.D.S)
			if err != nil {
				return nil, posErr(pgerror.From(err), loc)
			}
			return &Const{T: to, D: d}, nil
		}
		from = tText
	}
	if !canCast(from, to, kind) {
		return nil, posErr(pgerror.New(pgerror.CodeCannotCoerce, "cannot cast type %s to %s", typeName(from), typeName(to)), loc)
	}
	if c, ok := e.(*Const); ok {
		if c.D.Null {
			return nullConst(to), nil
		}
		d, err := coerce(c.D, from, to, kind, &EvalContext{Location: b.location()})
		if err != nil {
			return nil, posErr(pgerror.From(err), loc)
		}
		return &Const{T: to, D: d}, nil
	}
	return &Cast{E: e, T: to, Kind: kind}, nil
}

// coerceTo converts e to t implicitly, with PostgreSQL's "argument of X
// must be type boolean" style error.
func (b *Binder) coerceTo(e Expr, t types.T, what string, loc int32) (Expr, error) {
	if e.Type() == t {
		return e, nil
	}
	if e.Type().OID == types.OIDUnknown || canCast(e.Type(), t, types.CastImplicit) {
		return b.cast(e, t, types.CastImplicit, loc)
	}
	return nil, posErr(pgerror.New(pgerror.CodeDatatypeMismatch, "%s must be type %s, not type %s", what, typeName(t), typeName(e.Type())), loc)
}

// assign converts e to a column's type with assignment-cast rules (INSERT,
// UPDATE).
func (b *Binder) assign(e Expr, col *catalog.Column, loc int32) (Expr, error) {
	if e.Type() == col.Type {
		return e, nil
	}
	if e.Type().OID == types.OIDUnknown || canCast(e.Type(), col.Type, types.CastAssignment) {
		return b.cast(e, col.Type, types.CastAssignment, loc)
	}
	return nil, posErr(pgerror.New(pgerror.CodeDatatypeMismatch, "column %q is of type %s but expression is of type %s", col.Name,
		typeName(col.Type), typeName(e.Type())).WithHint("You will need to rewrite or cast the expression."), loc)
}

// common binds a list of expressions that must share a type (COALESCE,
// CASE results, VALUES columns, UNION) and converts them to it.
func (b *Binder) common(nodes []*pg.Node, sc *scope, what string, loc int32) ([]Expr, types.T, error) {
	exprs := make([]Expr, len(nodes))
	for i, n := range nodes {
		e, err := b.expr(n, sc, tUnknown)
		if err != nil {
			return nil, types.T{}, err
		}
		exprs[i] = e
	}
	return b.unify(exprs, what, loc)
}

func (b *Binder) unify(exprs []Expr, what string, loc int32) ([]Expr, types.T, error) {
	ts := make([]types.T, len(exprs))
	for i, e := range exprs {
		ts[i] = e.Type()
	}
	t, err := commonType(ts, what)
	if err != nil {
		return nil, t, posErr(pgerror.From(err), loc)
	}
	for i, e := range exprs {
		if exprs[i], err = b.cast(e, t, types.CastImplicit, loc); err != nil {
			return nil, t, err
		}
	}
	return exprs, t, nil
}

func (b *Binder) caseExpr(ce *pg.CaseExpr, sc *scope) (Expr, error) {
	if err := b.noSRF(&pg.Node{Node: &pg.Node_CaseExpr{CaseExpr: ce}}, "CASE"); err != nil {
		return nil, err
	}
	var operand Expr
	if ce.GetArg() != nil {
		var err error
		if operand, err = b.expr(ce.GetArg(), sc, tUnknown); err != nil {
			return nil, err
		}
	}
	out := &Case{}
	var results []Expr
	for _, w := range ce.GetArgs() {
		cw := w.GetCaseWhen()
		var cond Expr
		var err error
		if operand != nil {
			r, err := b.expr(cw.GetExpr(), sc, literalHint(operand.Type()))
			if err != nil {
				return nil, err
			}
			cond, err = b.binary("=", operand, r, cw.GetLocation())
			if err != nil {
				return nil, err
			}
		} else {
			if cond, err = b.expr(cw.GetExpr(), sc, tBool); err != nil {
				return nil, err
			}
			if cond, err = b.coerceTo(cond, tBool, "argument of CASE/WHEN", cw.GetLocation()); err != nil {
				return nil, err
			}
		}
		res, err := b.expr(cw.GetResult(), sc, tUnknown)
		if err != nil {
			return nil, err
		}
		out.Whens = append(out.Whens, cond)
		results = append(results, res)
	}
	if ce.GetDefresult() != nil {
		e, err := b.expr(ce.GetDefresult(), sc, tUnknown)
		if err != nil {
			return nil, err
		}
		results = append(results, e)
	}
	results, t, err := b.unify(results, "CASE", ce.GetLocation())
	if err != nil {
		return nil, err
	}
	out.T = t
	out.Thens = results[:len(out.Whens)]
	if ce.GetDefresult() != nil {
		out.Else = results[len(results)-1]
	}
	return out, nil
}

func (b *Binder) aExpr(a *pg.A_Expr, sc *scope) (Expr, error) {
	name := ""
	if len(a.GetName()) > 0 {
		name = a.GetName()[len(a.GetName())-1].GetString_().GetSval()
	}
	loc := a.GetLocation()
	switch a.GetKind() {
	case pg.A_Expr_Kind_AEXPR_OP:
		if a.GetLexpr() == nil {
			r, err := b.expr(a.GetRexpr(), sc, tUnknown)
			if err != nil {
				return nil, err
			}
			return b.unary(name, r, loc)
		}
		if isRowCompare(a) {
			return b.rowCompare(name, rowItems(a.GetLexpr()), rowItems(a.GetRexpr()), sc, loc)
		}
		l, r, err := b.pair(a.GetLexpr(), a.GetRexpr(), sc)
		if err != nil {
			return nil, err
		}
		return b.binary(name, l, r, loc)
	case pg.A_Expr_Kind_AEXPR_LIKE, pg.A_Expr_Kind_AEXPR_ILIKE, pg.A_Expr_Kind_AEXPR_SIMILAR:
		// SIMILAR TO arrives as ~ over similar_to_escape(pattern [, escape]).
		l, r, err := b.pair(a.GetLexpr(), a.GetRexpr(), sc)
		if err != nil {
			return nil, err
		}
		return b.binary(name, l, r, loc)
	case pg.A_Expr_Kind_AEXPR_DISTINCT, pg.A_Expr_Kind_AEXPR_NOT_DISTINCT:
		if isRowCompare(a) {
			return b.rowDistinct(rowItems(a.GetLexpr()), rowItems(a.GetRexpr()), a.GetKind() == pg.A_Expr_Kind_AEXPR_NOT_DISTINCT, sc, loc)
		}
		l, r, err := b.pair(a.GetLexpr(), a.GetRexpr(), sc)
		if err != nil {
			return nil, err
		}
		op, err := b.binaryOp("=", l, r, loc)
		if err != nil {
			return nil, err
		}
		return &Distinct{L: op.L, R: op.R, Eq: op, Not: a.GetKind() == pg.A_Expr_Kind_AEXPR_NOT_DISTINCT}, nil
	case pg.A_Expr_Kind_AEXPR_NULLIF:
		l, r, err := b.pair(a.GetLexpr(), a.GetRexpr(), sc)
		if err != nil {
			return nil, err
		}
		op, err := b.binaryOp("=", l, r, loc)
		if err != nil {
			return nil, err
		}
		return &NullIf{L: op.L, R: op.R, Eq: op}, nil
	case pg.A_Expr_Kind_AEXPR_IN:
		if l := rowItems(a.GetLexpr()); l != nil {
			return b.rowIn(l, a.GetRexpr().GetList().GetItems(), name == "<>", sc, loc)
		}
		l, err := b.expr(a.GetLexpr(), sc, tUnknown)
		if err != nil {
			return nil, err
		}
		in := &InList{E: l, Not: name == "<>"}
		for _, n := range a.GetRexpr().GetList().GetItems() {
			r, err := b.expr(n, sc, literalHint(l.Type()))
			if err != nil {
				return nil, err
			}
			if l.Type().OID == types.OIDUnknown {
				if l, err = b.cast(l, r.Type(), types.CastImplicit, loc); err != nil {
					return nil, err
				}
				in.E = l
			}
			op, err := b.binaryOp("=", l, r, loc)
			if err != nil {
				return nil, err
			}
			in.List = append(in.List, op.R)
			in.Eq = append(in.Eq, op)
			in.E = op.L
		}
		return in, nil
	case pg.A_Expr_Kind_AEXPR_BETWEEN, pg.A_Expr_Kind_AEXPR_NOT_BETWEEN:
		ge, le, err := b.between(a, sc)
		if err != nil {
			return nil, err
		}
		var out Expr = &And{L: ge, R: le}
		if a.GetKind() == pg.A_Expr_Kind_AEXPR_NOT_BETWEEN {
			out = &Not{E: out}
		}
		return out, nil
	case pg.A_Expr_Kind_AEXPR_OP_ANY, pg.A_Expr_Kind_AEXPR_OP_ALL:
		return b.anyAll(name, a, sc, a.GetKind() == pg.A_Expr_Kind_AEXPR_OP_ALL)
	}
	return nil, posErr(pgerror.Unsupported("operator kind "+a.GetKind().String()), loc)
}

// between binds l BETWEEN lo AND hi as l >= lo and l <= hi (row
// comparisons for rows).
func (b *Binder) between(a *pg.A_Expr, sc *scope) (Expr, Expr, error) {
	loc := a.GetLocation()
	items := a.GetRexpr().GetList().GetItems()
	if row := rowItems(a.GetLexpr()); row != nil && rowItems(items[0]) != nil && rowItems(items[1]) != nil {
		ge, err := b.rowCompare(">=", row, rowItems(items[0]), sc, loc)
		if err != nil {
			return nil, nil, err
		}
		le, err := b.rowCompare("<=", row, rowItems(items[1]), sc, loc)
		return ge, le, err
	}
	l, err := b.expr(a.GetLexpr(), sc, tUnknown)
	if err != nil {
		return nil, nil, err
	}
	lo, err := b.expr(items[0], sc, literalHint(l.Type()))
	if err != nil {
		return nil, nil, err
	}
	hi, err := b.expr(items[1], sc, literalHint(l.Type()))
	if err != nil {
		return nil, nil, err
	}
	ge, err := b.binary(">=", l, lo, loc)
	if err != nil {
		return nil, nil, err
	}
	le, err := b.binary("<=", l, hi, loc)
	return ge, le, err
}

// pair binds two operands so that a parameter of unknown type on one side
// takes the other side's type. An unknown literal stays unknown: operator
// resolution decides its type ('s' || 1 is text || anynonarray, not an
// integer that 's' cannot be), and binary casts it to that.
// literalHint is the type a literal compared with an expression of type t
// is read as: t without its typmod, as PostgreSQL's operators take their
// types ('0123456789' = a varchar(3) column is false, not 22001; '1.234'
// = a numeric(5,2) is not rounded first).
func literalHint(t types.T) types.T {
	t.Mod = -1
	return t
}

func (b *Binder) pair(ln, rn *pg.Node, sc *scope) (Expr, Expr, error) {
	l, err := b.expr(ln, sc, tUnknown)
	if err != nil {
		return nil, nil, err
	}
	rHint := tUnknown
	if rn.GetParamRef() != nil {
		rHint = literalHint(l.Type())
	}
	r, err := b.expr(rn, sc, rHint)
	if err != nil {
		return nil, nil, err
	}
	if ln.GetParamRef() != nil && l.Type().OID == types.OIDUnknown && r.Type().OID != types.OIDUnknown {
		if l, err = b.expr(ln, sc, literalHint(r.Type())); err != nil {
			return nil, nil, err
		}
	}
	return l, r, nil
}

func (b *Binder) binary(name string, l, r Expr, loc int32) (Expr, error) {
	out, err := b.binaryOp(name, l, r, loc)
	if err != nil {
		return nil, err
	}
	if lc, ok := out.L.(*Const); ok {
		if rc, ok := out.R.(*Const); ok {
			return b.foldBinary(out, lc, rc)
		}
	}
	return out, nil
}

// binaryOp is binary without folding constants: IN, NULLIF and IS
// DISTINCT FROM keep the comparison they are built on.
func (b *Binder) binaryOp(name string, l, r Expr, loc int32) (*BinOp, error) {
	lt, rt := l.Type(), r.Type()
	op, err := lookupBinary(name, lt, rt)
	if err != nil {
		return nil, posErr(pgerror.From(err), loc)
	}
	if l, err = b.castOperand(l, op.Left, loc); err != nil {
		return nil, err
	}
	if r, err = b.castOperand(r, op.Right, loc); err != nil {
		return nil, err
	}
	return &BinOp{Name: name, L: l, R: r, T: op.Result, Fn: op.Fn}, nil
}

// castOperand casts an operator's argument to the type the operator takes;
// an anynonarray argument (text || anynonarray) is passed as its text
// output, as PostgreSQL's textanycat does.
func (b *Binder) castOperand(e Expr, to types.T, loc int32) (Expr, error) {
	if to.OID == builtins.AnyNonArray.OID {
		return b.cast(e, types.TText, types.CastExplicit, loc)
	}
	return b.cast(e, to, types.CastImplicit, loc)
}

// foldBinary computes an operator over two constants, in the session's
// time zone (timestamptz + interval across a DST change depends on it).
func (b *Binder) foldBinary(op *BinOp, l, r *Const) (Expr, error) {
	d, err := op.Eval(&EvalContext{Location: b.location()}, nil)
	if err != nil {
		if b.FoldErr == nil {
			b.FoldErr = err
		}
		return op, nil // report at run time, as PostgreSQL would for a row
	}
	_ = l
	_ = r
	return &Const{T: op.T, D: d}, nil
}

func (b *Binder) unary(name string, e Expr, loc int32) (Expr, error) {
	op, err := lookupUnary(name, e.Type())
	if err != nil {
		return nil, posErr(pgerror.From(err), loc)
	}
	if e, err = b.cast(e, op.Arg, types.CastImplicit, loc); err != nil {
		return nil, err
	}
	out := &UnOp{Name: name, E: e, T: op.Result, Fn: op.Fn}
	if _, ok := e.(*Const); ok {
		d, err := out.Eval(nil, nil)
		if err == nil {
			return &Const{T: out.T, D: d}, nil
		}
		if b.FoldErr == nil {
			b.FoldErr = err
		}
	}
	return out, nil
}

func (b *Binder) checkOrderable(t types.T, loc int32) error {
	if _, err := lookupBinary("<", t, t); err != nil {
		return posErr(pgerror.New(pgerror.CodeUndefinedFunction, "could not identify an ordering operator for type %s", typeName(t)), loc)
	}
	return nil
}

// CheckCollation checks a COLLATE clause's (qualified) name: only the C
// collation exists here, as "default", "C" and "POSIX" (42704 otherwise,
// in PostgreSQL's words).
func CheckCollation(names []*pg.Node) *pgerror.Error {
	if len(names) == 0 {
		return nil
	}
	coll := strings.ToLower(names[len(names)-1].GetString_().GetSval())
	if coll != "default" && coll != "c" && coll != "posix" {
		return pgerror.New(pgerror.CodeUndefinedObject, "collation %q for encoding \"UTF8\" does not exist", coll)
	}
	return nil
}

func (b *Binder) sqlValueFunction(f *pg.SQLValueFunction) (Expr, error) {
	name := map[pg.SQLValueFunctionOp]string{
		pg.SQLValueFunctionOp_SVFOP_CURRENT_DATE:        "current_date",
		pg.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP:   "now",
		pg.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP_N: "now",
		pg.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP:      "localtimestamp",
		pg.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP_N:    "localtimestamp",
		pg.SQLValueFunctionOp_SVFOP_CURRENT_TIME:        "current_time",
		pg.SQLValueFunctionOp_SVFOP_CURRENT_TIME_N:      "current_time",
		pg.SQLValueFunctionOp_SVFOP_LOCALTIME:           "localtime",
		pg.SQLValueFunctionOp_SVFOP_LOCALTIME_N:         "localtime",
		pg.SQLValueFunctionOp_SVFOP_CURRENT_ROLE:        "current_user",
		pg.SQLValueFunctionOp_SVFOP_CURRENT_USER:        "current_user",
		pg.SQLValueFunctionOp_SVFOP_USER:                "current_user",
		pg.SQLValueFunctionOp_SVFOP_SESSION_USER:        "session_user",
		pg.SQLValueFunctionOp_SVFOP_CURRENT_CATALOG:     "current_database",
		pg.SQLValueFunctionOp_SVFOP_CURRENT_SCHEMA:      "current_schema",
	}[f.GetOp()]
	if name == "" {
		return nil, posErr(pgerror.Unsupported("this SQL value function"), f.GetLocation())
	}
	return b.callFunction(name, nil, f.GetLocation())
}

// anyAll binds "l op ANY (array)" and "l op ALL (array)": the operator is
// resolved for the left type and the array's element type.
func (b *Binder) anyAll(name string, a *pg.A_Expr, sc *scope, all bool) (Expr, error) {
	loc := a.GetLocation()
	l, err := b.expr(a.GetLexpr(), sc, tUnknown)
	if err != nil {
		return nil, err
	}
	hint := tUnknown
	if at := types.ArrayOf(l.Type()); at.OID != 0 {
		hint = at
	}
	r, err := b.expr(a.GetRexpr(), sc, hint)
	if err != nil {
		return nil, err
	}
	if r.Type().OID == types.OIDUnknown && hint.OID != types.OIDUnknown {
		if r, err = b.cast(r, hint, types.CastImplicit, loc); err != nil {
			return nil, err
		}
	}
	if !r.Type().IsArray() {
		return nil, posErr(pgerror.New(pgerror.CodeWrongObjectType, "op ANY/ALL (array) requires array on right side"), loc)
	}
	elem := r.Type().Elem()
	if r.Type().OID == types.OIDInt2Vector || r.Type().OID == types.OIDOIDVector {
		elem = types.T{OID: r.Type().Info().Elem, Mod: -1}
	}
	if l.Type().OID == types.OIDUnknown {
		if l, err = b.cast(l, elem, types.CastImplicit, loc); err != nil {
			return nil, err
		}
	}
	op, err := lookupBinary(name, l.Type(), elem)
	if err != nil {
		return nil, posErr(pgerror.From(err), loc)
	}
	if op.Result.OID != types.OIDBool {
		return nil, posErr(pgerror.New(pgerror.CodeDatatypeMismatch, "op ANY/ALL (array) requires operator to yield boolean"), loc)
	}
	if l, err = b.cast(l, op.Left, types.CastImplicit, loc); err != nil {
		return nil, err
	}
	return &AnyAll{L: l, Arr: r, All: all, Elem: elem, Right: op.Right, Fn: op.Fn}, nil
}

// RegNames converts between the names and OIDs of the OID alias types:
// regclass (relations), regtype, regnamespace, regrole, regproc.
type RegNames interface {
	RegIn(t types.T, name string) (types.Datum, error)
	RegOut(t types.T, oid uint32) string
}

func isStringish(t types.T) bool {
	switch t.OID {
	case types.OIDText, types.OIDVarchar, types.OIDBPChar, types.OIDName, types.OIDUnknown:
		return true
	}
	return false
}

// regCast converts a string to an OID alias type by looking the name up
// (a constant at bind time, as PostgreSQL does) and an OID alias to a
// string by naming the object.
func (b *Binder) regCast(e Expr, to types.T, loc int32) (Expr, bool, error) {
	from := e.Type()
	if b.Reg == nil {
		return nil, false, nil
	}
	switch {
	case types.IsReg(to.OID) && isStringish(from):
		if c, ok := e.(*Const); ok {
			if c.D.Null {
				return nullConst(to), true, nil
			}
			d, err := b.Reg.RegIn(to, c.D.S)
			if err != nil {
				return nil, true, posErr(pgerror.From(err), loc)
			}
			return &Const{T: to, D: d}, true, nil
		}
		reg := b.Reg
		return &FuncExpr{Name: to.String() + "in", Args: []Expr{e}, T: to, Strict: true,
			Fn: func(_ *EvalContext, v []types.Datum) (types.Datum, error) { return reg.RegIn(to, v[0].S) }}, true, nil
	case types.IsReg(from.OID) && isStringish(to) && from.OID != types.OIDUnknown:
		reg := b.Reg
		out := Expr(&FuncExpr{Name: from.String() + "out", Args: []Expr{e}, T: tText, Strict: true,
			Fn: func(_ *EvalContext, v []types.Datum) (types.Datum, error) {
				return types.DString(reg.RegOut(from, uint32(v[0].I))), nil
			}})
		if to.OID != types.OIDText {
			out = &Cast{E: out, T: to, Kind: types.CastExplicit}
		}
		return out, true, nil
	}
	return nil, false, nil
}
