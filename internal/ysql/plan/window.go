package plan

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Window functions: the ranking ones, row_number(), rank() and
// dense_rank(), aggregates (count, sum, avg, min, max, string_agg ...),
// lag and lead OVER (PARTITION BY ... ORDER BY ...), in the select list of a query
// without GROUP BY or aggregates. Frames do not change the ranking ones;
// aggregates take the default frame only. Named windows are not
// supported.

// Window appends the values of its calls to each input row.
type Window struct {
	Input Node
	Calls []WindowCall
	cols  []Column
}

// WindowCall is one ranking function or aggregate over a window.
type WindowCall struct {
	Name      string // row_number, rank, dense_rank, or an aggregate's
	Partition []Expr
	Order     []SortKey
	// Agg is set for an aggregate (sum(x) OVER ...): with the default
	// frame, each row gets the aggregate of its partition's rows up to its
	// last peer in the window's order (the whole partition without one).
	Agg *AggCall
	// Args are lag's and lead's: the value, the offset (int), the default.
	Args []Expr
}

// Columns are the input's, then one per call.
func (w *Window) Columns() []Column { return w.cols }

// winScope collects the window calls of a select list.
type winScope struct {
	node  *Window
	input *scope
}

func hasWindow(n *pg.Node) bool {
	found := false
	walk(n, func(x *pg.Node) bool {
		if fc := x.GetFuncCall(); fc != nil && fc.GetOver() != nil {
			found = true
		}
		return !found
	})
	return found
}

// windowCall binds fc OVER (...) to a reference to its Window column.
func (b *Binder) windowCall(fc *pg.FuncCall, name string) (Expr, error) {
	loc := fc.GetLocation()
	if b.win == nil {
		return nil, posErr(pgerror.Unsupported("window functions here (only in a select list without aggregates)"), loc)
	}
	var agg *AggCall
	var args []Expr
	switch {
	case name == "row_number" || name == "rank" || name == "dense_rank":
		if len(fc.GetArgs()) > 0 {
			return nil, posErr(pgerror.New(pgerror.CodeUndefinedFunction, "function %s does not take arguments", name), loc)
		}
	case name == "lag" || name == "lead":
		var err error
		if args, err = b.offsetArgs(fc, name); err != nil {
			return nil, err
		}
	case IsAggregate(name):
		var err error
		if agg, err = b.windowAgg(fc, name); err != nil {
			return nil, err
		}
	default:
		return nil, posErr(pgerror.Unsupported("window function "+name), loc)
	}
	over := fc.GetOver()
	if over.GetRefname() != "" || over.GetName() != "" {
		return nil, posErr(pgerror.Unsupported("named windows"), loc)
	}
	if agg != nil && over.GetFrameOptions()&frameNonDefault != 0 {
		return nil, posErr(pgerror.Unsupported("window frames other than the default"), loc)
	}
	call := WindowCall{Name: name, Agg: agg, Args: args}
	for _, p := range over.GetPartitionClause() {
		e, err := b.expr(p, b.win.input, tUnknown)
		if err != nil {
			return nil, err
		}
		if err := b.checkOrderable(e.Type(), loc); err != nil {
			return nil, err
		}
		call.Partition = append(call.Partition, e)
	}
	for _, o := range over.GetOrderClause() {
		sb := o.GetSortBy()
		e, err := b.expr(sb.GetNode(), b.win.input, tUnknown)
		if err != nil {
			return nil, err
		}
		if err := b.checkOrderable(e.Type(), loc); err != nil {
			return nil, err
		}
		k := SortKey{E: e, Desc: sb.GetSortbyDir() == pg.SortByDir_SORTBY_DESC}
		switch sb.GetSortbyNulls() {
		case pg.SortByNulls_SORTBY_NULLS_FIRST:
			k.NullsFirst = true
		case pg.SortByNulls_SORTBY_NULLS_LAST:
		default:
			k.NullsFirst = k.Desc
		}
		call.Order = append(call.Order, k)
	}
	w := b.win.node
	w.Calls = append(w.Calls, call)
	t := types.T{OID: types.OIDInt8, Mod: -1}
	if agg != nil {
		t = agg.T
	}
	if args != nil {
		t = args[0].Type()
	}
	w.cols = append(w.cols, Column{Name: name, T: t, Hidden: true})
	return &ColRef{Idx: len(w.cols) - 1, T: t, Name: name}, nil
}

// frameNonDefault is PostgreSQL's FRAMEOPTION_NONDEFAULT: the window
// names a frame.
const frameNonDefault = 1

// windowAgg binds the call of an aggregate used as a window function.
func (b *Binder) windowAgg(fc *pg.FuncCall, name string) (*AggCall, error) {
	loc := fc.GetLocation()
	switch {
	case fc.GetAggDistinct():
		return nil, posErr(pgerror.Unsupported("DISTINCT in window functions"), loc)
	case len(fc.GetAggOrder()) > 0:
		return nil, posErr(pgerror.Unsupported("aggregate ORDER BY in window functions"), loc)
	case fc.GetAggFilter() != nil:
		return nil, posErr(pgerror.Unsupported("FILTER in window functions"), loc)
	}
	call := &AggCall{Name: name}
	argTypes, err := b.aggArgs(fc, call, b.win.input)
	if err != nil {
		return nil, err
	}
	if err := b.resolveAgg(fc, call, argTypes); err != nil {
		return nil, err
	}
	return call, nil
}

// offsetArgs binds lag's or lead's arguments: the value, the offset
// (default 1), the default (default NULL) in the value's type.
func (b *Binder) offsetArgs(fc *pg.FuncCall, name string) ([]Expr, error) {
	loc := fc.GetLocation()
	in := fc.GetArgs()
	if len(in) < 1 || len(in) > 3 || fc.GetAggStar() || fc.GetAggDistinct() || len(fc.GetAggOrder()) > 0 || fc.GetAggFilter() != nil {
		return nil, posErr(pgerror.New(pgerror.CodeUndefinedFunction, "function %s takes a value, an optional offset and an optional default", name), loc)
	}
	v, err := b.expr(in[0], b.win.input, tUnknown)
	if err != nil {
		return nil, err
	}
	if v.Type().OID == types.OIDUnknown {
		if v, err = b.cast(v, tText, types.CastImplicit, loc); err != nil {
			return nil, err
		}
	}
	var off Expr = &Const{T: tInt4, D: types.DInt(1)}
	if len(in) > 1 {
		if off, err = b.expr(in[1], b.win.input, tInt4); err != nil {
			return nil, err
		}
		if off, err = b.cast(off, tInt4, types.CastImplicit, loc); err != nil {
			return nil, err
		}
	}
	var def Expr = &Const{T: v.Type(), D: types.NullDatum}
	if len(in) > 2 {
		if def, err = b.expr(in[2], b.win.input, v.Type()); err != nil {
			return nil, err
		}
		if def, err = b.cast(def, v.Type(), types.CastImplicit, loc); err != nil {
			return nil, err
		}
	}
	return []Expr{v, off, def}, nil
}
