package builtins

import (
	"errors"
	"strconv"
	"testing"
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

type pgExprCase struct {
	expr, typ, out string
	code, msg, dt  string
}

// evalExpr is a small expression evaluator over pg_query's parse tree,
// enough to drive operator and function resolution the way the executor
// will: literals typed as PostgreSQL types them, casts, operators,
// function calls, strict NULL handling.
func evalExpr(ctx *EvalContext, n *pg_query.Node) (types.Datum, types.T, error) {
	switch {
	case n.GetAConst() != nil:
		c := n.GetAConst()
		switch {
		case c.GetIsnull():
			return types.NullDatum, types.TUnknown, nil
		case c.GetIval() != nil:
			return types.DInt(int64(c.GetIval().Ival)), types.TInt4, nil
		case c.GetSval() != nil:
			return types.DString(c.GetSval().Sval), types.TUnknown, nil
		case c.GetBoolval() != nil:
			return types.DBool(c.GetBoolval().Boolval), types.TBool, nil
		case c.GetFval() != nil:
			s := c.GetFval().Fval
			if v, err := strconv.ParseInt(s, 10, 64); err == nil {
				if v == int64(int32(v)) {
					return types.DInt(v), types.TInt4, nil
				}
				return types.DInt(v), types.TInt8, nil
			}
			d, err := types.ParseNumeric(s)
			return types.DNumeric(d), types.TNumeric, err
		}
		// Ival 0 is encoded as an empty Ival
		return types.DInt(0), types.TInt4, nil
	case n.GetTypeCast() != nil:
		tc := n.GetTypeCast()
		d, t, err := evalExpr(ctx, tc.Arg)
		if err != nil {
			return d, t, err
		}
		to, err := types.FromTypeName(tc.TypeName)
		if err != nil {
			return d, t, err
		}
		r, err := types.CoerceTZ(d, t, to, types.CastExplicit, ctx.loc())
		return r, to, err
	case n.GetAExpr() != nil:
		e := n.GetAExpr()
		name := e.Name[len(e.Name)-1].GetString_().Sval
		var ld types.Datum
		var lt types.T
		var err error
		if e.Lexpr != nil {
			if ld, lt, err = evalExpr(ctx, e.Lexpr); err != nil {
				return ld, lt, err
			}
		}
		rd, rt, err := evalExpr(ctx, e.Rexpr)
		if err != nil {
			return rd, rt, err
		}
		op, err := LookupOperator(name, lt, rt)
		if err != nil {
			return types.NullDatum, types.T{}, err
		}
		params, vals, ts := []types.T{op.Left, op.Right}, []types.Datum{ld, rd}, []types.T{lt, rt}
		if e.Lexpr == nil {
			params, vals, ts = []types.T{op.Right}, []types.Datum{rd}, []types.T{rt}
		}
		for _, v := range vals {
			if v.Null {
				return types.NullDatum, op.Result, nil
			}
		}
		in, err := PrepareArgs(params, vals, ts, ctx.loc())
		if err != nil {
			return types.NullDatum, op.Result, err
		}
		r, err := op.Eval(ctx, in)
		return r, op.Result, err
	case n.GetFuncCall() != nil:
		fc := n.GetFuncCall()
		name := fc.Funcname[len(fc.Funcname)-1].GetString_().Sval
		var vals []types.Datum
		var ts []types.T
		for _, a := range fc.Args {
			d, t, err := evalExpr(ctx, a)
			if err != nil {
				return d, t, err
			}
			vals, ts = append(vals, d), append(ts, t)
		}
		f, err := LookupFunction(name, ts)
		if err != nil {
			return types.NullDatum, types.T{}, err
		}
		if f.VariadicAny {
			in, err := PrepareArgs(f.Args, vals, ts, ctx.loc())
			if err != nil {
				return types.NullDatum, f.Result, err
			}
			r, err := f.EvalVariadic(ctx, in, ts)
			return r, f.Result, err
		}
		if f.Strict {
			for _, v := range vals {
				if v.Null {
					return types.NullDatum, f.Result, nil
				}
			}
		}
		in, err := PrepareArgs(f.Args, vals, ts, ctx.loc())
		if err != nil {
			return types.NullDatum, f.Result, err
		}
		r, err := f.Eval(ctx, in)
		return r, f.Result, err
	}
	return types.NullDatum, types.T{}, errors.New("unsupported expression")
}

func TestExpressionsAgainstPostgres(t *testing.T) { runPGCases(t, pgExprCases) }

// runPGCases evaluates each case's expression and compares its type and
// text output, or its error, with what PostgreSQL gave.
func runPGCases(t *testing.T, cases []pgExprCase) {
	ctx := &EvalContext{TxnTime: time.Date(2024, 3, 5, 10, 0, 0, 0, time.UTC), Loc: time.UTC}
	for _, c := range cases {
		tree, err := pg_query.Parse("select " + c.expr)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		n := tree.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val
		d, typ, err := evalExpr(ctx, n)
		if c.code != "" {
			var pe *pgerror.Error
			if !errors.As(err, &pe) || pe.Code != c.code || pe.Message != c.msg {
				t.Errorf("%s: got %v (%v), want error %s %q", c.expr, err, d, c.code, c.msg)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: error %v, want %s %q", c.expr, err, c.typ, c.out)
			continue
		}
		if typ.OID == types.OIDUnknown {
			typ = types.TText
		}
		if got := types.FormatType(typ.OID, -1); got != c.typ {
			t.Errorf("%s: type %s, want %s", c.expr, got, c.typ)
		}
		out := "<NULL>"
		if !d.Null {
			s, err := types.CoerceTZ(d, typ, types.TText, types.CastExplicit, ctx.loc())
			if err != nil {
				t.Errorf("%s: to text: %v", c.expr, err)
				continue
			}
			out = s.S
		}
		if out != c.out {
			t.Errorf("%s: got %q, want %q", c.expr, out, c.out)
		}
	}
}

// TestValueLengthLimit: functions that could build a value past
// PostgreSQL's 1 GB fail with 54000 before they allocate it (lpad built 8
// GB of runes for 2,000,000,000 characters and took the node down).
func TestValueLengthLimit(t *testing.T) {
	ctx := &EvalContext{TxnTime: time.Date(2024, 3, 5, 10, 0, 0, 0, time.UTC), Loc: time.UTC}
	for _, expr := range []string{
		"lpad('x', 2000000000)",
		"rpad('x', 2000000000, 'ab')",
		"lpad('x', 600000000, 'é')", // two bytes a character
		"repeat('x', 2000000000)",
		"repeat('abc', 500000000)",
		"replace(repeat('ab', 1000), 'a', repeat('x', 2000000))",
	} {
		tree, err := pg_query.Parse("select " + expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		d, _, err := evalExpr(ctx, tree.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val)
		var pe *pgerror.Error
		if !errors.As(err, &pe) || pe.Code != pgerror.CodeProgramLimitExceeded || pe.Message != "requested length too large" {
			t.Errorf("%s: %v (%d bytes), want 54000 requested length too large", expr, err, len(d.S))
		}
	}
}
