package plan

import (
	"slices"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// orderedSetCall binds name(direct) WITHIN GROUP (ORDER BY v): an
// aggregate of the Agg node that collects the group's non-NULL values of
// v sorted, read by a function computing the result over the aggregated
// row. The direct arguments are evaluated there, once per group, and so
// may use only grouped columns, as in PostgreSQL.
func (b *Binder) orderedSetCall(name string, fc *pg.FuncCall, sc *scope) (Expr, error) {
	loc := fc.GetLocation()
	switch {
	case b.aggs == nil:
		return nil, posErr(pgerror.New(pgerror.CodeGroupingError, "aggregate functions are not allowed here"), loc)
	case b.inAggArg:
		return nil, posErr(pgerror.New(pgerror.CodeGroupingError, "aggregate function calls cannot be nested"), loc)
	case fc.GetAggDistinct():
		return nil, posErr(pgerror.New(pgerror.CodeSyntaxError, "cannot use DISTINCT with WITHIN GROUP"), loc)
	}
	within := fc.GetAggWithinGroup()
	if !within || !isOrderedSet(name) {
		// The arguments are read as an aggregate's over its input, to
		// say which function was meant.
		b.inAggArg = true
		sc = b.aggs.input
	}
	direct, dts, err := b.orderedSetDirect(fc, sc)
	if err != nil {
		return nil, err
	}
	if !within {
		return nil, posErr(pgerror.From(withinGroupRequired(name, dts)), loc)
	}
	b.inAggArg = true
	defer func() { b.inAggArg = false }()
	call := AggCall{Name: name}
	var sts []types.T
	for _, o := range fc.GetAggOrder() {
		sb := o.GetSortBy()
		e, err := b.aggOrderExpr(sb, loc)
		if err != nil {
			return nil, err
		}
		call.Order = append(call.Order, sortKey(e, sb))
		sts = append(sts, e.Type())
	}
	agg, err := lookupOrderedSet(name, dts, sts)
	if err != nil {
		return nil, posErr(pgerror.From(err), loc)
	}
	for i := range direct {
		if direct[i], err = b.cast(direct[i], agg.Direct[i], types.CastImplicit, loc); err != nil {
			return nil, err
		}
	}
	key := &call.Order[0]
	if key.E, err = b.cast(key.E, agg.Sort, types.CastImplicit, loc); err != nil {
		return nil, err
	}
	if f := fc.GetAggFilter(); f != nil {
		if call.Filter, err = b.expr(f, b.aggs.input, tBool); err != nil {
			return nil, err
		}
	}
	k := *key
	call.T = agg.Sort
	call.New = func() Aggregator { return &sortedValues{key: k} }
	a := b.aggs.agg
	a.Aggs = append(a.Aggs, call)
	vals := &ColRef{Idx: len(a.Groups) + len(a.Aggs) - 1, T: call.T, Name: name}
	final := agg.Final
	return &FuncExpr{Name: name, Args: append(direct, vals), T: agg.Result,
		Fn: func(_ *EvalContext, args []types.Datum) (types.Datum, error) {
			return final(args[:len(args)-1], args[len(args)-1].A)
		}}, nil
}

// orderedSetDirect binds the direct arguments over the aggregated row.
func (b *Binder) orderedSetDirect(fc *pg.FuncCall, sc *scope) ([]Expr, []types.T, error) {
	var direct []Expr
	var ts []types.T
	for _, a := range fc.GetArgs() {
		e, err := b.expr(a, sc, tUnknown)
		if err != nil {
			if pe := pgerror.From(err); pe.Code == pgerror.CodeGroupingError && !b.inAggArg {
				pe.Detail = "Direct arguments of an ordered-set aggregate must use only grouped columns."
			}
			return nil, nil, err
		}
		direct, ts = append(direct, e), append(ts, e.Type())
	}
	return direct, ts, nil
}

// sortedValues collects a group's non-NULL values (the last argument the
// executor passes: the ORDER BY value) and gives them sorted by key.
type sortedValues struct {
	key  SortKey
	vals []types.Datum
}

func (s *sortedValues) Add(args []types.Datum) error {
	if v := args[len(args)-1]; !v.Null {
		s.vals = append(s.vals, v)
	}
	return nil
}

func (s *sortedValues) Result() (types.Datum, error) {
	slices.SortStableFunc(s.vals, s.key.compare)
	vals := s.vals
	s.vals = nil
	return types.Datum{A: vals}, nil
}

// withinGroupRequired is the error for an ordered-set aggregate called as
// a plain one: its arguments taken as the direct ones and the ORDER BY's,
// as PostgreSQL's catalog lists them.
func withinGroupRequired(name string, ts []types.T) error {
	if len(ts) > 0 {
		if _, err := lookupOrderedSet(name, ts[:len(ts)-1], ts[len(ts)-1:]); err == nil {
			return pgerror.New(pgerror.CodeWrongObjectType, "WITHIN GROUP is required for ordered-set aggregate %s", name)
		}
	}
	_, err := lookupOrderedSet(name, ts, nil)
	return err
}
