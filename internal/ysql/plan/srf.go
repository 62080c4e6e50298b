package plan

import (
	"time"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/ysql/builtins"
	"github.com/shaledb/shaledb/internal/ysql/parse"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Set-returning functions in FROM: unnest(array), generate_series and
// information_schema._pg_expandarray, which catalog queries of psql and
// drivers use. A function in FROM sees the FROM items before it (it is
// implicitly LATERAL) and the enclosing query's columns.

// FuncScan produces the rows of a set-returning function.
type FuncScan struct {
	Name string
	Args []Expr
	// Fn and Iter take the session's time zone (timestamptz series).
	Fn func(loc *time.Location, args []types.Datum) ([]Row, error)
	// Iter, when set, yields the rows one at a time (a nil row at the
	// end), for the executor to stream them rather than hold them (Fn).
	Iter func(loc *time.Location, args []types.Datum) (func() (Row, error), error)
	// Ordinality appends the row number (WITH ORDINALITY).
	Ordinality bool
	cols       []Column
}

// Columns of the function's rows.
func (f *FuncScan) Columns() []Column { return f.cols }

// SRF is a set-returning function: its columns for the argument types
// (false: it does not take them) and its rows.
type SRF struct {
	Cols func(args []types.T) ([]Column, bool)
	Rows func(args []types.T, vals []types.Datum) ([]Row, error)
	// Iter, instead of Rows, yields the rows one at a time (a nil row at
	// the end): a function of very many rows (generate_series).
	Iter func(loc *time.Location, args []types.T, vals []types.Datum) (func() (Row, error), error)
	// OutNames: the one column keeps its name under a FROM alias (it is
	// an OUT parameter's: jsonb_array_elements' value).
	OutNames bool
}

// maxHeldSRFRows bounds the rows of an Iter function held whole (Fn),
// where a plan cannot stream them: past it the statement fails rather
// than the node running out of memory.
const maxHeldSRFRows = 10_000_000

// SessionSRFs resolves the set-returning functions the session provides
// (yb_servers()).
type SessionSRFs func(name string) (SRF, bool)

var srfs = map[string]SRF{
	// unnest(a [, b ...]): with several arrays (PostgreSQL allows it in
	// FROM: Django reads pg_index's indkey and indoption with it) a column
	// each, the rows side by side, NULLs past a shorter array's end.
	"unnest": {
		Cols: func(args []types.T) ([]Column, bool) {
			if len(args) == 0 {
				return nil, false
			}
			cols := make([]Column, len(args))
			for i, a := range args {
				if !a.IsArray() {
					return nil, false
				}
				cols[i] = Column{Name: "unnest", T: arrayElem(a)}
			}
			return cols, true
		},
		Rows: func(_ []types.T, vals []types.Datum) ([]Row, error) {
			n := 0
			for _, v := range vals {
				if !v.Null {
					n = max(n, len(v.A))
				}
			}
			out := make([]Row, n)
			for i := range out {
				row := make(Row, len(vals))
				for j, v := range vals {
					row[j] = types.NullDatum
					if !v.Null && i < len(v.A) {
						row[j] = v.A[i]
					}
				}
				out[i] = row
			}
			return out, nil
		}},
	"_pg_expandarray": {
		Cols: func(args []types.T) ([]Column, bool) {
			if len(args) != 1 || !args[0].IsArray() {
				return nil, false
			}
			return []Column{{Name: "x", T: arrayElem(args[0])}, {Name: "n", T: tInt4}}, true
		},
		Rows: func(_ []types.T, vals []types.Datum) ([]Row, error) {
			if vals[0].Null {
				return nil, nil
			}
			out := make([]Row, len(vals[0].A))
			for i, e := range vals[0].A {
				out[i] = Row{e, types.DInt(int64(i + 1))}
			}
			return out, nil
		}},
	// generate_subscripts(array, dim [, reverse]): the subscripts of an
	// array's dimension (SQLAlchemy orders pg_index.indkey's columns by
	// them). Arrays here have one dimension; int2vector and oidvector
	// count from 0, as in PostgreSQL.
	"generate_subscripts": {
		Cols: func(args []types.T) ([]Column, bool) {
			if len(args) < 2 || len(args) > 3 || !args[0].IsArray() || !isIntegerArg(args[1]) || len(args) == 3 && args[2].OID != types.OIDBool && args[2].OID != types.OIDUnknown {
				return nil, false
			}
			return []Column{{Name: "generate_subscripts", T: tInt4}}, true
		},
		Rows: func(args []types.T, vals []types.Datum) ([]Row, error) {
			for _, v := range vals {
				if v.Null {
					return nil, nil
				}
			}
			if vals[1].I != 1 {
				return nil, nil
			}
			lower := 1
			if args[0].OID == types.OIDInt2Vector || args[0].OID == types.OIDOIDVector {
				lower = 0
			}
			n := len(vals[0].A)
			out := make([]Row, n)
			for i := range n {
				sub := lower + i
				if len(vals) == 3 && vals[2].Bool() {
					sub = lower + n - 1 - i
				}
				out[i] = Row{types.DInt(int64(sub))}
			}
			return out, nil
		}},
	"generate_series": {
		Cols: func(args []types.T) ([]Column, bool) {
			if len(args) < 2 || len(args) > 3 {
				return nil, false
			}
			if isTimestamp(args[0]) {
				if len(args) != 3 || args[1] != args[0] || args[2].OID != types.OIDInterval {
					return nil, false
				}
				return []Column{{Name: "generate_series", T: args[0]}}, true
			}
			t := tInt4
			for _, a := range args {
				switch a.OID {
				case types.OIDInt8:
					t = tInt8
				case types.OIDInt2, types.OIDInt4, types.OIDUnknown:
				default:
					return nil, false
				}
			}
			return []Column{{Name: "generate_series", T: t}}, true
		},
		Iter: func(loc *time.Location, args []types.T, vals []types.Datum) (func() (Row, error), error) {
			if isTimestamp(args[0]) {
				return timestampSeries(loc, args[0], vals)
			}
			for _, v := range vals {
				if v.Null {
					return func() (Row, error) { return nil, nil }, nil
				}
			}
			step := int64(1)
			if len(vals) == 3 {
				step = vals[2].I
			}
			if step == 0 {
				return nil, pgerror.New(pgerror.CodeInvalidParameterValue, "step size cannot equal zero")
			}
			v, stop, done := vals[0].I, vals[1].I, false
			return func() (Row, error) {
				if done || step > 0 && v > stop || step < 0 && v < stop {
					return nil, nil
				}
				row := Row{types.DInt(v)}
				next := v + step
				// Past the end of int64 the series is over.
				done = step > 0 && next < v || step < 0 && next > v
				v = next
				return row, nil
			}, nil
		}},
}

// heldRows is Rows of an Iter function: every row, up to maxHeldSRFRows.
func heldRows(name string, iter func(loc *time.Location, args []types.T, vals []types.Datum) (func() (Row, error), error)) func(loc *time.Location, args []types.T, vals []types.Datum) ([]Row, error) {
	return func(loc *time.Location, args []types.T, vals []types.Datum) ([]Row, error) {
		next, err := iter(loc, args, vals)
		if err != nil {
			return nil, err
		}
		var out []Row
		for {
			row, err := next()
			if err != nil || row == nil {
				return out, err
			}
			if out = append(out, row); len(out) > maxHeldSRFRows {
				return nil, pgerror.New(pgerror.CodeProgramLimitExceeded, "%s: too many rows to hold here (more than %d)", name, maxHeldSRFRows)
			}
		}
	}
}

func isIntegerArg(t types.T) bool {
	switch t.OID {
	case types.OIDInt2, types.OIDInt4, types.OIDInt8, types.OIDUnknown:
		return true
	}
	return false
}

// arrayElem is an array type's element type (int2vector and oidvector
// included).
func arrayElem(t types.T) types.T {
	if t.OID == types.OIDInt2Vector || t.OID == types.OIDOIDVector {
		return types.T{OID: t.Info().Elem, Mod: -1}
	}
	return t.Elem()
}

// rangeFunction plans a function in FROM.
func (b *Binder) rangeFunction(rf *pg.RangeFunction, sc, parent *scope) (Node, []scopeCol, error) {
	fns := rf.GetFunctions()
	if rf.GetIsRowsfrom() || len(fns) != 1 || len(fns[0].GetList().GetItems()) == 0 || fns[0].GetList().GetItems()[0].GetFuncCall() == nil {
		return nil, nil, pgerror.Unsupported("this function in FROM")
	}
	fc := fns[0].GetList().GetItems()[0].GetFuncCall()
	name := funcName(fc)
	loc := fc.GetLocation()
	// The arguments see the FROM items before this one as level-1 outer
	// columns (the row a LateralJoin passes), else the enclosing query's.
	lateral := len(sc.cols) > 0
	argScope := &scope{parent: parent}
	if lateral {
		argScope = &scope{parent: &scope{cols: sc.cols, parent: parent}}
	}
	for _, a := range fc.GetArgs() {
		if err := b.noSRF(a, ""); err != nil {
			return nil, nil, err
		}
	}
	var fs *FuncScan
	var f SRF
	var args []Expr
	if !b.isSRF(fc) {
		// A function returning one value is a FROM item of one row
		// (SELECT * FROM current_schema(): TypeORM's first query).
		e, err := b.expr(&pg.Node{Node: &pg.Node_FuncCall{FuncCall: fc}}, argScope, tUnknown)
		if err != nil {
			return nil, nil, err
		}
		if e.Type().OID == types.OIDUnknown {
			if e, err = b.cast(e, tText, types.CastImplicit, loc); err != nil {
				return nil, nil, err
			}
		}
		args = []Expr{e}
		fs = &FuncScan{Name: name, Args: args, cols: []Column{{Name: name, T: e.Type()}},
			Fn: func(_ *time.Location, vals []types.Datum) ([]Row, error) { return []Row{{vals[0]}}, nil }}
	} else {
		args = make([]Expr, len(fc.GetArgs()))
		for i, a := range fc.GetArgs() {
			e, err := b.expr(a, argScope, tUnknown)
			if err != nil {
				return nil, nil, err
			}
			args[i] = e
		}
		var err error
		if fs, f, err = b.srfScan(name, args, loc); err != nil {
			return nil, nil, err
		}
	}
	cols := fs.cols
	if rf.GetOrdinality() {
		cols = append(cols, Column{Name: "ordinality", T: tInt8})
	}
	alias := name
	if a := rf.GetAlias(); a != nil {
		alias = a.GetAliasname()
		if err := aliasFits(alias, cols, a.GetColnames()); err != nil {
			return nil, nil, err
		}
		names := a.GetColnames()
		if len(names) == 0 && len(cols) == 1+boolInt(rf.GetOrdinality()) && !f.OutNames && name != "_pg_expandarray" {
			cols[0].Name = alias // a scalar function's column takes the alias
		}
		for i, n := range names {
			if i < len(cols) {
				cols[i].Name = n.GetString_().GetSval()
			}
		}
	}
	for i := range cols {
		cols[i].Table = alias
	}
	fs.Ordinality, fs.cols = rf.GetOrdinality(), cols
	var node Node = fs
	// Arguments that read nothing of the FROM items before (constants and
	// parameters: generate_series(1, 32)) make a plain FROM item, which
	// the FROM list's join order may move (joinorder.go), not a lateral
	// one run once per row of everything before it.
	if lateral && !allConstant(args) {
		node = &Lateral{Sub: node}
	}
	return node, funcScopeCols(cols), nil
}

// srfScan resolves the set-returning function name for its bound
// arguments args (cast as it takes them): its rows' columns and how to
// produce them.
func (b *Binder) srfScan(name string, args []Expr, loc int32) (*FuncScan, SRF, error) {
	f, ok := srfs[name]
	if !ok && b.SessionSRF != nil {
		f, ok = b.SessionSRF(name)
	}
	if !ok {
		return nil, f, posErr(pgerror.Unsupported("function "+name+" in FROM"), loc)
	}
	argTypes := make([]types.T, len(args))
	for i, a := range args {
		argTypes[i] = a.Type()
	}
	if name == "generate_series" {
		// Untyped literals take the series' type: the timestamp type of
		// an argument (the step then an interval; a date's is timestamp
		// with time zone, as PostgreSQL resolves it), else integer.
		series := tInt4
		for _, t := range argTypes {
			if isTimestamp(t) {
				series = t
			} else if t.OID == types.OIDDate && !isTimestamp(series) {
				series = types.T{OID: types.OIDTimestampTZ, Mod: -1}
			}
		}
		for i := range args {
			want := series
			if i == 2 && isTimestamp(series) {
				want = types.T{OID: types.OIDInterval, Mod: -1}
			}
			if argTypes[i].OID == types.OIDUnknown || isTimestamp(series) && argTypes[i] != want {
				var err error
				if args[i], err = b.cast(args[i], want, types.CastImplicit, loc); err != nil {
					return nil, f, err
				}
				argTypes[i] = want
			}
		}
	}
	cols, ok := f.Cols(argTypes)
	if !ok {
		return nil, f, posErr(pgerror.New(pgerror.CodeUndefinedFunction, "function %s(%s) does not exist", name, typeList(argTypes)).
			WithHint("No function matches the given name and argument types. You might need to add explicit type casts."), loc)
	}
	if name == "generate_series" && !isTimestamp(cols[0].T) {
		for i := range args {
			var err error
			if args[i], err = b.cast(args[i], cols[0].T, types.CastImplicit, loc); err != nil {
				return nil, f, err
			}
		}
	}
	fn := func(_ *time.Location, args []types.T, vals []types.Datum) ([]Row, error) { return f.Rows(args, vals) }
	fs := &FuncScan{Name: name, Args: args, cols: cols}
	if iter := f.Iter; iter != nil {
		fn = heldRows(name, iter)
		fs.Iter = func(loc *time.Location, vals []types.Datum) (func() (Row, error), error) {
			return iter(loc, argTypes, vals)
		}
	}
	fs.Fn = func(loc *time.Location, vals []types.Datum) ([]Row, error) { return fn(loc, argTypes, vals) }
	return fs, f, nil
}

// allConstant reports whether es are built of constants and parameters
// only.
func allConstant(es []Expr) bool {
	for _, e := range es {
		switch x := e.(type) {
		case *Const, *Param:
		case *Cast:
			if !allConstant([]Expr{x.E}) {
				return false
			}
		case *UnOp:
			if !allConstant([]Expr{x.E}) {
				return false
			}
		case *BinOp:
			if !allConstant([]Expr{x.L, x.R}) {
				return false
			}
		case *FuncExpr:
			if x.Volatile || !allConstant(x.Args) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func typeList(ts []types.T) string {
	s := ""
	for i, t := range ts {
		if i > 0 {
			s += ", "
		}
		s += typeName(t)
	}
	return s
}

// indirection binds array subscripts: arr[i] (one-dimensional arrays with
// lower bound 1, int2vector and oidvector from 0); out of range is NULL.
func (b *Binder) indirection(ind *pg.A_Indirection, sc *scope) (Expr, error) {
	e, err := b.expr(ind.GetArg(), sc, tUnknown)
	if err != nil {
		return nil, err
	}
	for _, n := range ind.GetIndirection() {
		if f := n.GetString_(); f != nil {
			if e, err = fieldSelect(e, f.GetSval()); err != nil {
				return nil, err
			}
			continue
		}
		ai := n.GetAIndices()
		if ai == nil || ai.GetIsSlice() {
			return nil, pgerror.Unsupported("this indirection (field selection or array slice)")
		}
		at := e.Type()
		if !at.IsArray() {
			return nil, pgerror.New(pgerror.CodeDatatypeMismatch, "cannot subscript type %s because it does not support subscripting", typeName(at))
		}
		idx, err := b.expr(ai.GetUidx(), sc, tInt4)
		if err != nil {
			return nil, err
		}
		if idx, err = b.coerceTo(idx, tInt4, "array subscript", -1); err != nil {
			return nil, err
		}
		base := int64(1)
		if at.OID == types.OIDInt2Vector || at.OID == types.OIDOIDVector {
			base = 0
		}
		e = &FuncExpr{Name: "subscript", Args: []Expr{e, idx}, T: arrayElem(at), Strict: true,
			Fn: func(_ *EvalContext, v []types.Datum) (types.Datum, error) {
				i := v[1].I - base
				if i < 0 || i >= int64(len(v[0].A)) {
					return types.NullDatum, nil
				}
				return v[0].A[i], nil
			}}
	}
	return e, nil
}

// WalkExpr visits the expression nodes of a parse tree (f returns false to
// skip a node's children).
func WalkExpr(n *pg.Node, f func(*pg.Node) bool) { walk(n, f) }

// Set-returning functions in the select list (SELECT unnest(a) FROM t,
// JDBC's (information_schema._pg_expandarray(i.indkey)).n) run in a
// ProjectSet (srfCall). A function of several columns gives a record
// whose fields (expr).name selects.

// recordType is the record type of cols (types.RecordType).
func recordType(cols []Column) types.T {
	names := make([]string, len(cols))
	ts := make([]types.T, len(cols))
	for i, c := range cols {
		names[i], ts[i] = c.Name, c.T
	}
	return types.RecordType(names, ts)
}

func recordFields(t types.T) []Column {
	names, ts := types.RecordFields(t)
	if names == nil {
		return nil
	}
	out := make([]Column, len(names))
	for i := range names {
		out[i] = Column{Name: names[i], T: ts[i]}
	}
	return out
}

func fieldSelect(e Expr, name string) (Expr, error) {
	fields := recordFields(e.Type())
	if fields == nil {
		return nil, pgerror.New(pgerror.CodeWrongObjectType, "column notation .%s applied to type %s, which is not a composite type", name, typeName(e.Type()))
	}
	for i, f := range fields {
		if f.Name == name {
			return &FuncExpr{Name: "field " + name, Args: []Expr{e}, T: f.T, Strict: true,
				Fn: func(_ *EvalContext, v []types.Datum) (types.Datum, error) { return v[0].A[i], nil }}, nil
		}
	}
	return nil, pgerror.New(pgerror.CodeUndefinedColumn, "could not identify column %q in record data type", name)
}

// srfScope collects the set-returning calls of a select list (and its
// ORDER BY and DISTINCT ON) into ProjectSet levels above the query's
// grouping and window functions, as PostgreSQL runs them.
type srfScope struct {
	levels []*ProjectSet
	byText map[string]srfBound // a call written twice is run once
	// argLevel is the deepest level of the calls read by the arguments
	// being bound.
	argLevel int
	// placeholders numbers the references until they are placed.
	placeholders int
}

const lateralHint = "You might be able to move the set-returning function into a LATERAL FROM item."

type srfBound struct {
	e     Expr
	level int
}

// isSRF reports whether fc calls a set-returning function.
func (b *Binder) isSRF(fc *pg.FuncCall) bool {
	if fc.GetOver() != nil {
		return false
	}
	if _, ok := srfs[funcName(fc)]; ok {
		return true
	}
	if b.SessionSRF != nil {
		_, ok := b.SessionSRF(funcName(fc))
		return ok
	}
	return false
}

// hasSRF reports whether one of ns calls a set-returning function outside
// subqueries.
func (b *Binder) hasSRF(ns ...*pg.Node) bool {
	for _, n := range ns {
		found := false
		walk(n, func(x *pg.Node) bool {
			if fc := x.GetFuncCall(); fc != nil && b.isSRF(fc) {
				found = true
			}
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

// noSRF refuses a set-returning call in n (not in its subqueries) with
// PostgreSQL's error for clause ("": the arguments of a function in FROM).
func (b *Binder) noSRF(n *pg.Node, clause string) error {
	var loc int32 = -1
	walk(n, func(x *pg.Node) bool {
		if fc := x.GetFuncCall(); fc != nil && loc < 0 && b.isSRF(fc) {
			loc = fc.GetLocation()
		}
		return loc < 0
	})
	if loc < 0 {
		return nil
	}
	var e *pgerror.Error
	switch clause {
	case "":
		e = pgerror.New(pgerror.CodeFeatureNotSupported, "set-returning functions must appear at top level of FROM")
	case "CASE", "COALESCE":
		e = pgerror.New(pgerror.CodeFeatureNotSupported, "set-returning functions are not allowed in %s", clause).
			WithHint(lateralHint)
	default:
		e = pgerror.New(pgerror.CodeFeatureNotSupported, "set-returning functions are not allowed in %s", clause)
	}
	return posErr(e, loc)
}

// srfCall binds a set-returning call of a select list to a reference to
// its column (a record of its columns when it has several) in the
// ProjectSet that runs it.
func (b *Binder) srfCall(fc *pg.FuncCall, name string, sc *scope) (Expr, error) {
	loc := fc.GetLocation()
	s := b.srfs
	switch {
	case b.inAggArg:
		return nil, posErr(pgerror.New(pgerror.CodeFeatureNotSupported, "aggregate function calls cannot contain set-returning function calls").WithHint(lateralHint), loc)
	case b.win != nil && b.win.binding:
		return nil, posErr(pgerror.New(pgerror.CodeFeatureNotSupported, "window function calls cannot contain set-returning function calls").WithHint(lateralHint), loc)
	case s == nil:
		return nil, posErr(pgerror.New(pgerror.CodeFeatureNotSupported, "set-returning functions are not allowed here"), loc)
	}
	text, err := deparseNode(&pg.Node{Node: &pg.Node_FuncCall{FuncCall: fc}})
	if err != nil {
		return nil, err
	}
	if c, ok := s.byText[text]; ok {
		s.argLevel = max(s.argLevel, c.level)
		return c.e, nil
	}
	if fc.GetAggStar() || fc.GetAggDistinct() || len(fc.GetAggOrder()) > 0 || fc.GetAggFilter() != nil {
		return nil, posErr(pgerror.New(pgerror.CodeWrongObjectType, "%s is not an aggregate function", name), loc)
	}
	saved := s.argLevel
	s.argLevel = 0
	args := make([]Expr, len(fc.GetArgs()))
	for i, a := range fc.GetArgs() {
		if args[i], err = b.expr(a, sc, tUnknown); err != nil {
			return nil, err
		}
	}
	level := s.argLevel + 1
	s.argLevel = max(saved, level)
	if name == "unnest" && len(args) > 1 {
		// Several arrays only in FROM, as in PostgreSQL.
		ts := make([]types.T, len(args))
		for i, a := range args {
			ts[i] = a.Type()
		}
		return nil, posErr(pgerror.New(pgerror.CodeUndefinedFunction, "function unnest(%s) does not exist", typeList(ts)).
			WithHint("No function matches the given name and argument types. You might need to add explicit type casts."), loc)
	}
	fs, _, err := b.srfScan(name, args, loc)
	if err != nil {
		return nil, err
	}
	for len(s.levels) < level {
		s.levels = append(s.levels, &ProjectSet{})
	}
	ps := s.levels[level-1]
	ps.Calls = append(ps.Calls, fs)
	var refs []Expr
	for _, c := range fs.cols {
		// A distinct index below zero until placed: no other column's.
		s.placeholders++
		r := &ColRef{Idx: -s.placeholders, T: c.T, Name: c.Name}
		ps.refs = append(ps.refs, r)
		refs = append(refs, r)
	}
	e := refs[0]
	if len(refs) > 1 {
		e = rowOf(refs, fs.cols)
	}
	s.byText[text] = srfBound{e: e, level: level}
	return e, nil
}

// place stacks the ProjectSet levels on input, points the references to
// the calls' columns past their input's, and returns the top.
func (s *srfScope) place(input Node) Node {
	for _, ps := range s.levels {
		if len(ps.Calls) == 0 {
			continue
		}
		in := input.Columns()
		ps.Input = input
		ps.cols = append([]Column(nil), in...)
		for i, r := range ps.refs {
			r.Idx = len(in) + i
			ps.cols = append(ps.cols, Column{Name: r.Name, T: r.T, Hidden: true})
		}
		input = ps
	}
	return input
}

// deparseNode prints an expression (to recognise repeated calls).
func deparseNode(n *pg.Node) (string, error) {
	return parse.Deparse(&pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: &pg.SelectStmt{TargetList: []*pg.Node{
		{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: n}}}}}}})
}

// arrayExpr binds ARRAY[e1, e2, ...]: the elements take their common type
// (the hint's element type for an all-literal list).
func (b *Binder) arrayExpr(ae *pg.A_ArrayExpr, sc *scope, hint types.T) (Expr, error) {
	elemHint := tUnknown
	if hint.IsArray() {
		elemHint = hint.Elem()
	}
	var elems []Expr
	for _, n := range ae.GetElements() {
		if n.GetAArrayExpr() != nil {
			return nil, posErr(pgerror.Unsupported("multidimensional arrays"), ae.GetLocation())
		}
		e, err := b.expr(n, sc, elemHint)
		if err != nil {
			return nil, err
		}
		elems = append(elems, e)
	}
	if len(elems) == 0 {
		if !hint.IsArray() {
			return nil, posErr(pgerror.New(pgerror.CodeIndeterminateDatatype, "cannot determine type of empty array").
				WithHint("Explicitly cast to the desired type, for example ARRAY[]::integer[]."), ae.GetLocation())
		}
		return &Const{T: hint, D: types.DArray(nil)}, nil
	}
	elems, et, err := b.unify(elems, "ARRAY", ae.GetLocation())
	if err != nil {
		return nil, err
	}
	if et.OID == types.OIDUnknown {
		et = tText
		for i := range elems {
			if elems[i], err = b.cast(elems[i], et, types.CastImplicit, ae.GetLocation()); err != nil {
				return nil, err
			}
		}
	}
	at := types.ArrayOf(et)
	if at.OID == 0 {
		return nil, posErr(pgerror.New(pgerror.CodeUndefinedObject, "could not find array type for data type %s", typeName(et)), ae.GetLocation())
	}
	return &FuncExpr{Name: "array", Args: elems, T: at,
		Fn: func(_ *EvalContext, v []types.Datum) (types.Datum, error) {
			return types.DArray(append([]types.Datum(nil), v...)), nil
		}}, nil
}

func isTimestamp(t types.T) bool {
	return t.OID == types.OIDTimestamp || t.OID == types.OIDTimestampTZ
}

// timestampSeries is generate_series(start, stop, step interval) of
// timestamps or timestamptz (whose months and days step in loc's
// calendar): start, then each value plus step, while not past stop.
func timestampSeries(loc *time.Location, t types.T, vals []types.Datum) (func() (Row, error), error) {
	for _, v := range vals {
		if v.Null {
			return func() (Row, error) { return nil, nil }, nil
		}
	}
	step := vals[2].Iv
	sign := types.CompareInterval(step, types.Interval{})
	if sign == 0 {
		return nil, pgerror.New(pgerror.CodeInvalidParameterValue, "step size cannot equal zero")
	}
	if t.OID == types.OIDTimestamp {
		loc = nil
	} else if loc == nil {
		loc = time.UTC
	}
	v, stop, done := vals[0].I, vals[1].I, false
	return func() (Row, error) {
		if done || sign > 0 && v > stop || sign < 0 && v < stop {
			return nil, nil
		}
		row := Row{types.Datum{I: v}}
		next, err := builtins.TimestampPlusInterval(v, step, loc)
		if err != nil {
			// Past the end of timestamps the series is over.
			done = true
		}
		v = next
		return row, nil
	}, nil
}
