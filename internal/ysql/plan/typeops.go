package plan

import (
	"time"

	"github.com/shaledb/shaledb/internal/ysql/builtins"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// This file is the planner's one door into the type system and the
// builtin operators and functions.

type binaryOp struct {
	Left, Right, Result types.T
	Fn                  func(ec *EvalContext, l, r types.Datum) (types.Datum, error)
}

type unaryOp struct {
	Arg, Result types.T
	Fn          func(ec *EvalContext, d types.Datum) (types.Datum, error)
}

type function struct {
	Args     []types.T
	Result   types.T
	Fn       func(ec *EvalContext, args []types.Datum) (types.Datum, error)
	Strict   bool
	Volatile bool
	Stable   bool // not folded at plan time (reads the transaction's time)
}

type aggregate struct {
	Args   []types.T
	Result types.T
	New    func() Aggregator
}

func (ec *EvalContext) builtinCtx() *builtins.EvalContext {
	if ec == nil {
		return &builtins.EvalContext{Loc: time.UTC}
	}
	if ec.bctx == nil {
		ec.bctx = &builtins.EvalContext{TxnTime: ec.TxnTime, StmtTime: ec.StmtTime, Loc: ec.Location, Ctx: ec.Ctx, Advisory: ec.Advisory, Backends: ec.Backends}
	}
	return ec.bctx
}

func lookupBinary(name string, l, r types.T) (*binaryOp, error) {
	op, err := builtins.LookupOperator(name, l, r)
	if err != nil {
		return nil, err
	}
	return &binaryOp{Left: op.Left, Right: op.Right, Result: op.Result,
		Fn: func(ec *EvalContext, a, b types.Datum) (types.Datum, error) {
			return op.Eval(ec.builtinCtx(), []types.Datum{a, b})
		}}, nil
}

func lookupUnary(name string, t types.T) (*unaryOp, error) {
	op, err := builtins.LookupOperator(name, types.T{}, t)
	if err != nil {
		return nil, err
	}
	return &unaryOp{Arg: op.Right, Result: op.Result,
		Fn: func(ec *EvalContext, d types.Datum) (types.Datum, error) {
			return op.Eval(ec.builtinCtx(), []types.Datum{d})
		}}, nil
}

func lookupFunction(name string, args []types.T) (*function, error) {
	f, err := builtins.LookupFunction(name, args)
	if err != nil {
		return nil, err
	}
	out := &function{Args: f.Args, Result: f.Result, Strict: f.Strict, Volatile: f.Volatile, Stable: f.Stable}
	if f.VariadicAny {
		argTypes := append([]types.T(nil), args...)
		copy(argTypes, f.Args)
		out.Fn = func(ec *EvalContext, a []types.Datum) (types.Datum, error) {
			return f.EvalVariadic(ec.builtinCtx(), a, argTypes)
		}
		return out, nil
	}
	out.Fn = func(ec *EvalContext, a []types.Datum) (types.Datum, error) { return f.Eval(ec.builtinCtx(), a) }
	return out, nil
}

func lookupAggregate(name string, args []types.T, star bool) (*aggregate, error) {
	a, err := builtins.LookupAggregate(name, args, star)
	if err != nil {
		return nil, err
	}
	return &aggregate{Args: a.Args, Result: a.Result, New: func() Aggregator { return &aggState{st: a.New()} }}, nil
}

// aggState adapts a builtin aggregate's state to Aggregator.
type aggState struct {
	st builtins.AggState
	ec *builtins.EvalContext
}

func (a *aggState) Add(args []types.Datum) error { return a.st.Add(a.ec, args) }
func (a *aggState) Result() (types.Datum, error) { return a.st.Result() }

// IsAggregate reports whether name is an aggregate function.
func IsAggregate(name string) bool { return builtins.IsAggregate(name) }

// parseText reads a literal of type t in the session's time zone.
func (b *Binder) parseText(t types.T, s string) (types.Datum, error) {
	return types.ParseText(s, t, b.location())
}

func (b *Binder) location() *time.Location {
	if b.Location != nil {
		return b.Location
	}
	return time.UTC
}

func coerce(d types.Datum, from, to types.T, kind types.CastContext, ec *EvalContext) (types.Datum, error) {
	loc := time.UTC
	if ec != nil && ec.Location != nil {
		loc = ec.Location
	}
	return types.CoerceTZ(d, from, to, kind, loc)
}

// Coerce converts a value with an explicit cast (EXECUTE parameters) in
// the time zone loc.
func Coerce(d types.Datum, from, to types.T, loc *time.Location) (types.Datum, error) {
	return coerce(d, from, to, types.CastExplicit, &EvalContext{Location: loc})
}

func canCast(from, to types.T, kind types.CastContext) bool { return types.CanCast(from, to, kind) }

func compare(a, b types.Datum, t types.T) int { return types.Compare(a, b, t) }

func typeName(t types.T) string { return t.String() }

// commonType is PostgreSQL's select_common_type for UNION, CASE, VALUES
// and COALESCE: the first known type, moved to a later one of the same
// category that it casts to implicitly (and not back) or that is the
// category's preferred type.
func commonType(ts []types.T, what string) (types.T, error) {
	var out types.T
	found := false
	for _, t := range ts {
		if t.OID == types.OIDUnknown || t.OID == 0 {
			continue
		}
		if !found {
			out, found = t, true
			continue
		}
		if t.OID == out.OID {
			continue
		}
		oi, ti := out.Info(), t.Info()
		if oi == nil || ti == nil || oi.Category != ti.Category {
			return out, pgerror.New(pgerror.CodeDatatypeMismatch, "%s types %s and %s cannot be matched", what, typeName(out), typeName(t))
		}
		if (canCast(out, t, types.CastImplicit) && !canCast(t, out, types.CastImplicit)) ||
			(ti.Preferred && !oi.Preferred && canCast(out, t, types.CastImplicit)) {
			out = t
		}
	}
	if !found {
		return tUnknown, nil
	}
	// select_common_typmod: the typmod only when every input has the
	// type and the typmod; VALUES ('abc'::varchar(3)), ('0123456789') is
	// varchar, both rows fit.
	for _, t := range ts {
		if t.OID != out.OID || t.Mod != out.Mod {
			out.Mod = -1
		}
	}
	return out, nil
}

func lookupOrderedSet(name string, direct, sort []types.T) (*builtins.OrderedSetAgg, error) {
	return builtins.LookupOrderedSet(name, direct, sort)
}

func isOrderedSet(name string) bool { return builtins.IsOrderedSetAggregate(name) }
