// Package plan binds PostgreSQL parse trees to the catalog and plans them:
// names become column positions, literals and parameters get types by
// PostgreSQL's rules, operators and functions are resolved, and each query
// becomes a tree of plan nodes whose table access (point get, key-range
// scan, full scan) is chosen from the WHERE clause.
package plan

import (
	"context"
	"time"

	"github.com/shaledb/shaledb/internal/ysql/builtins"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Row is a row of datums in a node's column order.
type Row = []types.Datum

// EvalContext is what expressions read besides the row: parameters and the
// statement's and transaction's times.
type EvalContext struct {
	Params   []types.Datum
	TxnTime  time.Time // now(), current_timestamp
	StmtTime time.Time // statement_timestamp()
	Location *time.Location
	// Ctx is the statement's context as of the current call (a streamed
	// statement runs over several calls): statement_timeout and a cancel
	// end what waits on it (pg_sleep). nil: context.Background.
	Ctx func() context.Context
	// Advisory is the session's advisory locks (builtins.Advisory).
	Advisory builtins.Advisory
	// Backends signals the node's sessions (builtins.Backends).
	Backends  builtins.Backends
	Subquery  func(ec *EvalContext, sq *Subquery, outer Row) ([]Row, error)
	outerRows []Row
	subCache  map[*Subquery][]Row
	bctx      *builtins.EvalContext
}

// Expr is a typed, bound expression.
type Expr interface {
	Type() types.T
	Eval(ec *EvalContext, row Row) (types.Datum, error)
}

// Const is a constant.
type Const struct {
	T types.T
	D types.Datum
}

func (c *Const) Type() types.T                               { return c.T }
func (c *Const) Eval(*EvalContext, Row) (types.Datum, error) { return c.D, nil }
func nullConst(t types.T) *Const                             { return &Const{T: t, D: types.NullDatum} }
func (c *Const) String() string                              { return "const" }

var tBool = types.T{OID: types.OIDBool, Mod: -1}

// Param is $n (Idx is n-1). Its type is fixed at Prepare.
type Param struct {
	Idx int
	T   types.T
}

func (p *Param) Type() types.T { return p.T }
func (p *Param) Eval(ec *EvalContext, _ Row) (types.Datum, error) {
	if p.Idx >= len(ec.Params) {
		return types.NullDatum, pgerror.New(pgerror.CodeUndefinedParameter, "there is no parameter $%d", p.Idx+1)
	}
	return ec.Params[p.Idx], nil
}

// ColRef reads column Idx of the input row.
type ColRef struct {
	Idx  int
	T    types.T
	Name string
}

func (c *ColRef) Type() types.T                                     { return c.T }
func (c *ColRef) Eval(_ *EvalContext, row Row) (types.Datum, error) { return row[c.Idx], nil }

// OuterRef reads a column of an enclosing query's row (correlated
// subqueries): Level 1 is the immediately enclosing query.
type OuterRef struct {
	Level int
	Idx   int
	T     types.T
}

func (o *OuterRef) Type() types.T { return o.T }
func (o *OuterRef) Eval(ec *EvalContext, _ Row) (types.Datum, error) {
	return ec.outerRows[len(ec.outerRows)-o.Level][o.Idx], nil
}

// WithOuter returns a context whose OuterRefs of level 1 read row.
func (ec *EvalContext) WithOuter(row Row) *EvalContext {
	cp := *ec
	cp.outerRows = append(append([]Row(nil), ec.outerRows...), row)
	return &cp
}

// Cast converts its argument's value to T.
type Cast struct {
	E    Expr
	T    types.T
	Kind types.CastContext
}

func (c *Cast) Type() types.T { return c.T }
func (c *Cast) Eval(ec *EvalContext, row Row) (types.Datum, error) {
	d, err := c.E.Eval(ec, row)
	if err != nil || d.Null {
		return d, err
	}
	return coerce(d, c.E.Type(), c.T, c.Kind, ec)
}

// BinOp is a resolved binary operator.
type BinOp struct {
	Name string
	L, R Expr
	T    types.T
	Fn   func(ec *EvalContext, l, r types.Datum) (types.Datum, error)
	// NullOK: the operator sees NULL arguments (most are strict: NULL in,
	// NULL out).
	NullOK bool
}

func (b *BinOp) Type() types.T { return b.T }
func (b *BinOp) Eval(ec *EvalContext, row Row) (types.Datum, error) {
	l, err := b.L.Eval(ec, row)
	if err != nil {
		return l, err
	}
	r, err := b.R.Eval(ec, row)
	if err != nil {
		return r, err
	}
	if !b.NullOK && (l.Null || r.Null) {
		return types.NullDatum, nil
	}
	return b.Fn(ec, l, r)
}

// AnyAll is "L op ANY (Arr)" / "L op ALL (Arr)": op applied to L and each
// element (converted from Elem to Right), combined as OR (ANY) or AND
// (ALL) with SQL's NULL rules.
type AnyAll struct {
	L, Arr      Expr
	All         bool
	Elem, Right types.T
	Fn          func(ec *EvalContext, l, r types.Datum) (types.Datum, error)
}

func (a *AnyAll) Type() types.T { return tBool }
func (a *AnyAll) Eval(ec *EvalContext, row Row) (types.Datum, error) {
	l, err := a.L.Eval(ec, row)
	if err != nil {
		return l, err
	}
	arr, err := a.Arr.Eval(ec, row)
	if err != nil || arr.Null {
		return types.NullDatum, err
	}
	sawNull := false
	for _, e := range arr.A {
		if e.Null || l.Null {
			sawNull = true
			continue
		}
		if a.Elem != a.Right {
			if e, err = coerce(e, a.Elem, a.Right, types.CastImplicit, ec); err != nil {
				return types.NullDatum, err
			}
		}
		v, err := a.Fn(ec, l, e)
		if err != nil {
			return v, err
		}
		switch {
		case v.Null:
			sawNull = true
		case v.Bool() != a.All:
			return types.DBool(!a.All), nil
		}
	}
	if sawNull {
		return types.NullDatum, nil
	}
	return types.DBool(a.All), nil
}

// UnOp is a resolved prefix operator.
type UnOp struct {
	Name string
	E    Expr
	T    types.T
	Fn   func(ec *EvalContext, d types.Datum) (types.Datum, error)
}

func (u *UnOp) Type() types.T { return u.T }
func (u *UnOp) Eval(ec *EvalContext, row Row) (types.Datum, error) {
	d, err := u.E.Eval(ec, row)
	if err != nil || d.Null {
		return d, err
	}
	return u.Fn(ec, d)
}

// FuncExpr is a resolved scalar function call.
type FuncExpr struct {
	Name   string
	Args   []Expr
	T      types.T
	Fn     func(ec *EvalContext, args []types.Datum) (types.Datum, error)
	Strict bool // NULL argument -> NULL result without calling Fn
	// Volatile functions (random, nextval) are evaluated per row, never
	// at plan time.
	Volatile bool
}

func (f *FuncExpr) Type() types.T { return f.T }
func (f *FuncExpr) Eval(ec *EvalContext, row Row) (types.Datum, error) {
	args := make([]types.Datum, len(f.Args))
	for i, a := range f.Args {
		d, err := a.Eval(ec, row)
		if err != nil {
			return d, err
		}
		if d.Null && f.Strict {
			return types.NullDatum, nil
		}
		args[i] = d
	}
	return f.Fn(ec, args)
}

// And, Or and Not use SQL's three-valued logic.
type And struct{ L, R Expr }
type Or struct{ L, R Expr }
type Not struct{ E Expr }

func (*And) Type() types.T { return tBool }
func (*Or) Type() types.T  { return tBool }
func (*Not) Type() types.T { return tBool }

func (a *And) Eval(ec *EvalContext, row Row) (types.Datum, error) {
	l, err := a.L.Eval(ec, row)
	if err != nil {
		return l, err
	}
	if !l.Null && !l.Bool() {
		return l, nil
	}
	r, err := a.R.Eval(ec, row)
	if err != nil {
		return r, err
	}
	switch {
	case !r.Null && !r.Bool():
		return r, nil
	case l.Null || r.Null:
		return types.NullDatum, nil
	}
	return r, nil
}

func (o *Or) Eval(ec *EvalContext, row Row) (types.Datum, error) {
	l, err := o.L.Eval(ec, row)
	if err != nil {
		return l, err
	}
	if !l.Null && l.Bool() {
		return l, nil
	}
	r, err := o.R.Eval(ec, row)
	if err != nil {
		return r, err
	}
	switch {
	case !r.Null && r.Bool():
		return r, nil
	case l.Null || r.Null:
		return types.NullDatum, nil
	}
	return r, nil
}

func (n *Not) Eval(ec *EvalContext, row Row) (types.Datum, error) {
	d, err := n.E.Eval(ec, row)
	if err != nil || d.Null {
		return d, err
	}
	return types.DBool(!d.Bool()), nil
}

// IsNull is IS [NOT] NULL.
type IsNull struct {
	E   Expr
	Not bool
	Row bool // E is a record: its fields are tested
}

func (*IsNull) Type() types.T { return tBool }
func (n *IsNull) Eval(ec *EvalContext, row Row) (types.Datum, error) {
	d, err := n.E.Eval(ec, row)
	if err != nil {
		return d, err
	}
	if n.Row && !d.Null {
		// A row is NULL when all its fields are, NOT NULL when none is.
		for _, f := range d.A {
			if f.Null == n.Not {
				return types.DBool(false), nil
			}
		}
		return types.DBool(true), nil
	}
	return types.DBool(d.Null != n.Not), nil
}

// BoolTest is IS [NOT] TRUE / FALSE / UNKNOWN.
type BoolTest struct {
	E    Expr
	Want int8 // 1 true, 0 false, -1 unknown
	Not  bool
}

func (*BoolTest) Type() types.T { return tBool }
func (b *BoolTest) Eval(ec *EvalContext, row Row) (types.Datum, error) {
	d, err := b.E.Eval(ec, row)
	if err != nil {
		return d, err
	}
	var is bool
	switch b.Want {
	case 1:
		is = !d.Null && d.Bool()
	case 0:
		is = !d.Null && !d.Bool()
	default:
		is = d.Null
	}
	return types.DBool(is != b.Not), nil
}

// Case is CASE [operand] WHEN ... THEN ... ELSE ... END; with an operand the
// Whens are already equality tests against it.
type Case struct {
	Whens []Expr
	Thens []Expr
	Else  Expr
	T     types.T
}

func (c *Case) Type() types.T { return c.T }
func (c *Case) Eval(ec *EvalContext, row Row) (types.Datum, error) {
	for i, w := range c.Whens {
		d, err := w.Eval(ec, row)
		if err != nil {
			return d, err
		}
		if !d.Null && d.Bool() {
			return c.Thens[i].Eval(ec, row)
		}
	}
	if c.Else == nil {
		return types.NullDatum, nil
	}
	return c.Else.Eval(ec, row)
}

// Coalesce returns its first non-NULL argument.
type Coalesce struct {
	Args []Expr
	T    types.T
}

func (c *Coalesce) Type() types.T { return c.T }
func (c *Coalesce) Eval(ec *EvalContext, row Row) (types.Datum, error) {
	for _, a := range c.Args {
		d, err := a.Eval(ec, row)
		if err != nil || !d.Null {
			return d, err
		}
	}
	return types.NullDatum, nil
}

// MinMax is GREATEST / LEAST (NULLs ignored).
type MinMax struct {
	Args     []Expr
	T        types.T
	Greatest bool
}

func (m *MinMax) Type() types.T { return m.T }
func (m *MinMax) Eval(ec *EvalContext, row Row) (types.Datum, error) {
	best := types.NullDatum
	for _, a := range m.Args {
		d, err := a.Eval(ec, row)
		if err != nil {
			return d, err
		}
		if d.Null {
			continue
		}
		if best.Null {
			best = d
			continue
		}
		c := compare(d, best, m.T)
		if (m.Greatest && c > 0) || (!m.Greatest && c < 0) {
			best = d
		}
	}
	return best, nil
}

// InList is e [NOT] IN (list); Eq compares e with one element.
type InList struct {
	E    Expr
	List []Expr
	Eq   []*BinOp // Eq[i] compares E with List[i]
	Not  bool
}

func (*InList) Type() types.T { return tBool }
func (in *InList) Eval(ec *EvalContext, row Row) (types.Datum, error) {
	l, err := in.E.Eval(ec, row)
	if err != nil {
		return l, err
	}
	if l.Null {
		return types.NullDatum, nil
	}
	sawNull := false
	for i, e := range in.List {
		r, err := e.Eval(ec, row)
		if err != nil {
			return r, err
		}
		if r.Null {
			sawNull = true
			continue
		}
		eq, err := in.Eq[i].Fn(ec, l, r)
		if err != nil {
			return eq, err
		}
		if eq.Bool() {
			return types.DBool(!in.Not), nil
		}
	}
	if sawNull {
		return types.NullDatum, nil
	}
	return types.DBool(in.Not), nil
}

// Distinct is IS [NOT] DISTINCT FROM.
type Distinct struct {
	L, R Expr
	Eq   *BinOp
	Not  bool
}

func (*Distinct) Type() types.T { return tBool }
func (d *Distinct) Eval(ec *EvalContext, row Row) (types.Datum, error) {
	l, err := d.L.Eval(ec, row)
	if err != nil {
		return l, err
	}
	r, err := d.R.Eval(ec, row)
	if err != nil {
		return r, err
	}
	var distinct bool
	switch {
	case l.Null && r.Null:
		distinct = false
	case l.Null || r.Null:
		distinct = true
	default:
		eq, err := d.Eq.Fn(ec, l, r)
		if err != nil {
			return eq, err
		}
		distinct = !eq.Bool()
	}
	return types.DBool(distinct != d.Not), nil
}

// NullIf is NULLIF(a, b).
type NullIf struct {
	L, R Expr
	Eq   *BinOp
}

func (n *NullIf) Type() types.T { return n.L.Type() }
func (n *NullIf) Eval(ec *EvalContext, row Row) (types.Datum, error) {
	l, err := n.L.Eval(ec, row)
	if err != nil || l.Null {
		return l, err
	}
	r, err := n.R.Eval(ec, row)
	if err != nil {
		return r, err
	}
	if r.Null {
		return l, nil
	}
	eq, err := n.Eq.Fn(ec, l, r)
	if err != nil {
		return eq, err
	}
	if eq.Bool() {
		return types.NullDatum, nil
	}
	return l, nil
}

// Subquery is a scalar, EXISTS or IN subquery, run by the executor through
// EvalContext.Subquery.
type Subquery struct {
	Kind SubqueryKind
	Plan Node
	T    types.T
	Test Expr   // for IN: the left operand
	Eq   *BinOp // for IN: compares Test with the subquery's column (x op ANY / ALL: op)
	All  bool   // x op ALL (SELECT ...): every row must compare true
	// RowEq, for (a, b) IN (SELECT x, y ...): Test is the row (a, b),
	// compared field by field with the subquery's columns.
	RowEq      []*BinOp
	Not        bool // NOT IN / NOT EXISTS
	Correlated bool
}

// SubqueryKind is the kind of a subquery expression.
type SubqueryKind int

// Subquery kinds.
const (
	ScalarSubquery SubqueryKind = iota
	ExistsSubquery
	InSubquery
	// ArraySubquery is ARRAY(SELECT ...): the rows' single column as an
	// array (empty when there are none).
	ArraySubquery
)

func (s *Subquery) Type() types.T { return s.T }
func (s *Subquery) Eval(ec *EvalContext, row Row) (types.Datum, error) {
	rows, cached := ec.subCache[s]
	if !cached || s.Correlated {
		var err error
		if rows, err = ec.Subquery(ec, s, row); err != nil {
			return types.NullDatum, err
		}
		if !s.Correlated {
			if ec.subCache == nil {
				ec.subCache = map[*Subquery][]Row{}
			}
			ec.subCache[s] = rows
		}
	}
	switch s.Kind {
	case ExistsSubquery:
		return types.DBool((len(rows) > 0) != s.Not), nil
	case ArraySubquery:
		out := make([]types.Datum, len(rows))
		for i, r := range rows {
			out[i] = r[0]
		}
		return types.DArray(out), nil
	case ScalarSubquery:
		switch len(rows) {
		case 0:
			return types.NullDatum, nil
		case 1:
			return rows[0][0], nil
		}
		return types.NullDatum, pgerror.New(pgerror.CodeCardinalityViolation, "more than one row returned by a subquery used as an expression")
	}
	if len(rows) == 0 {
		// x op ANY over no rows is false, x op ALL true, whatever x.
		return types.DBool(s.All != s.Not), nil
	}
	l, err := s.Test.Eval(ec, row)
	if err != nil || l.Null {
		return types.NullDatum, err
	}
	// ANY ends at the first row that compares true, ALL at the first
	// that compares false; else NULL if one compared NULL.
	decisive := !s.All
	sawNull := false
	for _, r := range rows {
		c, err := s.compareRow(ec, l, r)
		if err != nil {
			return c, err
		}
		if c.Null {
			sawNull = true
		} else if c.Bool() == decisive {
			return types.DBool(decisive != s.Not), nil
		}
	}
	if sawNull {
		return types.NullDatum, nil
	}
	return types.DBool(!decisive != s.Not), nil
}

// compareRow compares the test value l with a row of the subquery: field
// by field for a row IN, else with the operator, the row's column cast as
// it needs (float8 = ANY (SELECT numeric ...) compares float8 values).
func (s *Subquery) compareRow(ec *EvalContext, l types.Datum, r Row) (types.Datum, error) {
	if s.RowEq != nil {
		return rowEqual(ec, s.RowEq, l.A, r)
	}
	rv, err := s.Eq.R.Eval(ec, r)
	if err != nil || rv.Null {
		return types.NullDatum, err
	}
	return s.Eq.Fn(ec, l, rv)
}
