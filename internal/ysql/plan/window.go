package plan

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Window functions: the ranking ones, row_number(), rank(),
// dense_rank(), percent_rank(), cume_dist() and ntile(n), aggregates
// (count, sum, avg, min, max, string_agg ...), lag and lead, first_value,
// last_value and nth_value OVER (PARTITION BY ... ORDER BY ... [frame]),
// in the select list of a query without GROUP BY or aggregates. Frames
// (ROWS or RANGE BETWEEN UNBOUNDED / n PRECEDING / CURRENT ROW / n
// FOLLOWING / UNBOUNDED FOLLOWING) change the aggregates and the value
// functions, as in PostgreSQL; RANGE with an offset, GROUPS and EXCLUDE
// are not supported. Named windows (WINDOW w AS (...), OVER w, OVER (w
// ORDER BY ...)) follow PostgreSQL's rules for copying one.

// Window appends the values of its calls to each input row. In a grouped
// query its input is the groups (after HAVING), and its calls' arguments,
// PARTITION BY and ORDER BY read grouping columns and aggregates.
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
	// Args are lag's and lead's: the value, the offset (int), the
	// default; first_value's and last_value's value; nth_value's value
	// and position; ntile's bucket count.
	Args []Expr
	// Frame is the call's frame; nil: the default (RANGE BETWEEN
	// UNBOUNDED PRECEDING AND CURRENT ROW: up to the row's last peer).
	Frame *Frame
}

// Frame is a window frame: the rows of the partition, around the current
// one, that an aggregate or a value function sees.
type Frame struct {
	Rows       bool // ROWS (positions) rather than RANGE (peer groups)
	Start, End FrameBound
}

// FrameBound is one end of a frame.
type FrameBound struct {
	Kind   BoundKind
	Offset Expr // n of n PRECEDING / n FOLLOWING (ROWS only): bigint
}

// BoundKind is where a frame bound lies.
type BoundKind int

// Frame bounds.
const (
	UnboundedPreceding BoundKind = iota
	OffsetPreceding
	CurrentRow
	OffsetFollowing
	UnboundedFollowing
)

// Columns are the input's, then one per call.
func (w *Window) Columns() []Column { return w.cols }

// winScope collects the window calls of a select list and ORDER BY.
type winScope struct {
	node  *Window
	input *scope
	defs  []*pg.Node // the WINDOW clause's named windows
	// refs are the references to the calls' values, refs[i] to call i:
	// they follow the input's columns, whose number is known only once
	// every aggregate of a grouped query is bound (place).
	refs    []*ColRef
	binding bool // inside a call's arguments or window (no nesting)
}

// place sets the Window's columns and points the references to its calls
// past its input's final columns.
func (w *winScope) place() {
	in := w.node.Input.Columns()
	w.node.cols = append([]Column(nil), in...)
	for i, r := range w.refs {
		r.Idx = len(in) + i
		w.node.cols = append(w.node.cols, Column{Name: r.Name, T: r.T, Hidden: true})
	}
}

// noWindow refuses window functions in clause (WHERE, GROUP BY, HAVING,
// JOIN conditions), as PostgreSQL does.
func noWindow(n *pg.Node, clause string) error {
	var loc int32 = -1
	walk(n, func(x *pg.Node) bool {
		if fc := x.GetFuncCall(); fc != nil && fc.GetOver() != nil && loc < 0 {
			loc = fc.GetLocation()
		}
		return loc < 0 && x.GetSubLink() == nil
	})
	if loc < 0 {
		return nil
	}
	return posErr(pgerror.New(pgerror.CodeWindowingError, "window functions are not allowed in %s", clause), loc)
}

// resolveWindow is the window an OVER clause names: OVER w is the WINDOW
// clause's w; OVER (w ...) copies w by PostgreSQL's rules (copyWindow).
func (b *Binder) resolveWindow(over *pg.WindowDef, loc int32) (*pg.WindowDef, error) {
	if name := over.GetName(); name != "" {
		return b.namedWindow(name, len(b.win.defs), loc)
	}
	if ref := over.GetRefname(); ref != "" {
		base, err := b.namedWindow(ref, len(b.win.defs), loc)
		if err != nil {
			return nil, err
		}
		return copyWindow(base, over, ref, loc)
	}
	return over, nil
}

// checkWindowClause refuses, as PostgreSQL does whether or not a call
// uses them, a WINDOW clause defining a name twice or a window that
// cannot copy the one it names.
func (b *Binder) checkWindowClause(defs []*pg.Node) error {
	if len(defs) == 0 {
		return nil
	}
	saved := b.win
	b.win = &winScope{defs: defs}
	defer func() { b.win = saved }()
	for i, d := range defs {
		wd := d.GetWindowDef()
		for _, e := range defs[:i] {
			if e.GetWindowDef().GetName() == wd.GetName() {
				return posErr(pgerror.New(pgerror.CodeWindowingError, "window %q is already defined", wd.GetName()), wd.GetLocation())
			}
		}
		if ref := wd.GetRefname(); ref != "" {
			base, err := b.namedWindow(ref, i, wd.GetLocation())
			if err != nil {
				return err
			}
			if _, err := copyWindow(base, wd, ref, wd.GetLocation()); err != nil {
				return err
			}
		}
	}
	return nil
}

// namedWindow is the WINDOW clause's window name among its first n
// entries (a window there may refer only to one before it), resolved.
func (b *Binder) namedWindow(name string, n int, loc int32) (*pg.WindowDef, error) {
	for i := n - 1; i >= 0; i-- {
		wd := b.win.defs[i].GetWindowDef()
		if wd.GetName() != name {
			continue
		}
		if ref := wd.GetRefname(); ref != "" {
			base, err := b.namedWindow(ref, i, loc)
			if err != nil {
				return nil, err
			}
			return copyWindow(base, wd, ref, loc)
		}
		return wd, nil
	}
	return nil, posErr(pgerror.New(pgerror.CodeUndefinedObject, "window %q does not exist", name), loc)
}

// copyWindow is over, a window written as (ref ...), with ref's
// definition base: base's PARTITION BY, base's ORDER BY unless over has
// one (base then must not), over's frame (base must have none).
func copyWindow(base, over *pg.WindowDef, ref string, loc int32) (*pg.WindowDef, error) {
	switch {
	case len(over.GetPartitionClause()) > 0:
		return nil, posErr(pgerror.New(pgerror.CodeWindowingError, "cannot override PARTITION BY clause of window %q", ref), loc)
	case len(over.GetOrderClause()) > 0 && len(base.GetOrderClause()) > 0:
		return nil, posErr(pgerror.New(pgerror.CodeWindowingError, "cannot override ORDER BY clause of window %q", ref), loc)
	case base.GetFrameOptions()&frameNonDefault != 0:
		return nil, posErr(pgerror.New(pgerror.CodeWindowingError, "cannot copy window %q because it has a frame clause", ref), loc)
	}
	out := &pg.WindowDef{PartitionClause: base.GetPartitionClause(), OrderClause: base.GetOrderClause(),
		FrameOptions: over.GetFrameOptions(), StartOffset: over.GetStartOffset(), EndOffset: over.GetEndOffset()}
	if len(over.GetOrderClause()) > 0 {
		out.OrderClause = over.GetOrderClause()
	}
	return out, nil
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
	switch {
	case b.inAggArg:
		return nil, posErr(pgerror.New(pgerror.CodeGroupingError, "aggregate function calls cannot contain window function calls"), loc)
	case b.win == nil:
		return nil, posErr(pgerror.New(pgerror.CodeWindowingError, "window functions are not allowed here"), loc)
	case b.win.binding:
		return nil, posErr(pgerror.New(pgerror.CodeWindowingError, "window function calls cannot be nested"), loc)
	}
	if isOrderedSet(name) || fc.GetAggWithinGroup() {
		return nil, posErr(pgerror.New(pgerror.CodeFeatureNotSupported, "OVER is not supported for ordered-set aggregate %s", name), loc)
	}
	b.win.binding = true
	defer func() { b.win.binding = false }()
	var agg *AggCall
	var args []Expr
	switch {
	case name == "row_number" || name == "rank" || name == "dense_rank" || name == "percent_rank" || name == "cume_dist":
		if len(fc.GetArgs()) > 0 {
			return nil, posErr(pgerror.New(pgerror.CodeUndefinedFunction, "function %s does not take arguments", name), loc)
		}
	case name == "first_value" || name == "last_value" || name == "nth_value" || name == "ntile":
		var err error
		if args, err = b.valueArgs(fc, name); err != nil {
			return nil, err
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
	over, err := b.resolveWindow(fc.GetOver(), loc)
	if err != nil {
		return nil, err
	}
	call := WindowCall{Name: name, Agg: agg, Args: args}
	if over.GetFrameOptions()&frameNonDefault != 0 {
		f, err := b.frame(over, loc)
		if err != nil {
			return nil, err
		}
		call.Frame = f
	}
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
		call.Order = append(call.Order, sortKey(e, sb))
	}
	w := b.win.node
	w.Calls = append(w.Calls, call)
	t := types.T{OID: types.OIDInt8, Mod: -1}
	switch {
	case agg != nil:
		t = agg.T
	case name == "ntile":
		t = tInt4
	case name == "percent_rank" || name == "cume_dist":
		t = types.T{OID: types.OIDFloat8, Mod: -1}
	case args != nil:
		t = args[0].Type()
	}
	ref := &ColRef{Idx: len(w.Input.Columns()) + len(b.win.refs), T: t, Name: name}
	b.win.refs = append(b.win.refs, ref)
	return ref, nil
}

// PostgreSQL's frame option bits (parsenodes.h FRAMEOPTION_*).
const (
	frameNonDefault           = 0x00001 // the window names a frame
	frameRange                = 0x00002
	frameRows                 = 0x00004
	frameGroups               = 0x00008
	frameStartUnboundedPrec   = 0x00020
	frameEndUnboundedPrec     = 0x00040
	frameStartUnboundedFollow = 0x00080
	frameEndUnboundedFollow   = 0x00100
	frameStartCurrentRow      = 0x00200
	frameEndCurrentRow        = 0x00400
	frameStartOffsetPrec      = 0x00800
	frameEndOffsetPrec        = 0x01000
	frameStartOffsetFollow    = 0x02000
	frameEndOffsetFollow      = 0x04000
	frameExclude              = 0x08000 | 0x10000 | 0x20000
)

// frame binds the frame clause of a window definition.
func (b *Binder) frame(over *pg.WindowDef, loc int32) (*Frame, error) {
	opts := over.GetFrameOptions()
	switch {
	case opts&frameGroups != 0:
		return nil, posErr(pgerror.Unsupported("GROUPS frames"), loc)
	case opts&frameExclude != 0:
		return nil, posErr(pgerror.Unsupported("EXCLUDE in window frames"), loc)
	case opts&frameRange != 0 && opts&(frameStartOffsetPrec|frameStartOffsetFollow|frameEndOffsetPrec|frameEndOffsetFollow) != 0:
		return nil, posErr(pgerror.Unsupported("RANGE with offset PRECEDING/FOLLOWING"), loc)
	}
	f := &Frame{Rows: opts&frameRows != 0}
	bound := func(unbPrec, offPrec, cur, offFol, unbFol int32, off *pg.Node, which string) (FrameBound, error) {
		switch {
		case opts&unbPrec != 0:
			return FrameBound{Kind: UnboundedPreceding}, nil
		case opts&unbFol != 0:
			return FrameBound{Kind: UnboundedFollowing}, nil
		case opts&cur != 0:
			return FrameBound{Kind: CurrentRow}, nil
		}
		kind := OffsetPreceding
		if opts&offFol != 0 {
			kind = OffsetFollowing
		} else if opts&offPrec == 0 {
			return FrameBound{}, posErr(pgerror.New(pgerror.CodeInternalError, "window frame %s without a bound", which), loc)
		}
		e, err := b.expr(off, b.win.input, tInt8)
		if err != nil {
			return FrameBound{}, err
		}
		if !rowIndependent(e) {
			return FrameBound{}, posErr(pgerror.New(pgerror.CodeInvalidColumnReference, "argument of ROWS must not contain variables"), loc)
		}
		if e, err = b.cast(e, tInt8, types.CastImplicit, loc); err != nil {
			return FrameBound{}, err
		}
		return FrameBound{Kind: kind, Offset: e}, nil
	}
	var err error
	if f.Start, err = bound(frameStartUnboundedPrec, frameStartOffsetPrec, frameStartCurrentRow, frameStartOffsetFollow,
		frameStartUnboundedFollow, over.GetStartOffset(), "start"); err != nil {
		return nil, err
	}
	if f.End, err = bound(frameEndUnboundedPrec, frameEndOffsetPrec, frameEndCurrentRow, frameEndOffsetFollow,
		frameEndUnboundedFollow, over.GetEndOffset(), "end"); err != nil {
		return nil, err
	}
	// The grammar refuses these with PostgreSQL's messages; kept here as
	// the executor's assumptions.
	if f.Start.Kind == UnboundedFollowing {
		return nil, posErr(pgerror.New(pgerror.CodeWindowingError, "frame start cannot be UNBOUNDED FOLLOWING"), loc)
	}
	if f.End.Kind == UnboundedPreceding {
		return nil, posErr(pgerror.New(pgerror.CodeWindowingError, "frame end cannot be UNBOUNDED PRECEDING"), loc)
	}
	if f.Start.Kind == CurrentRow && f.End.Kind == OffsetPreceding {
		return nil, posErr(pgerror.New(pgerror.CodeWindowingError, "frame starting from current row cannot have preceding rows"), loc)
	}
	if f.Start.Kind == OffsetFollowing && (f.End.Kind == OffsetPreceding || f.End.Kind == CurrentRow) {
		return nil, posErr(pgerror.New(pgerror.CodeWindowingError, "frame starting from following row cannot have preceding rows"), loc)
	}
	return f, nil
}

// valueArgs binds first_value's, last_value's and nth_value's arguments
// (the value; nth_value's position, an integer) and ntile's bucket count.
func (b *Binder) valueArgs(fc *pg.FuncCall, name string) ([]Expr, error) {
	loc := fc.GetLocation()
	in := fc.GetArgs()
	want := map[string]int{"first_value": 1, "last_value": 1, "nth_value": 2, "ntile": 1}[name]
	if len(in) != want || fc.GetAggStar() || fc.GetAggDistinct() || len(fc.GetAggOrder()) > 0 || fc.GetAggFilter() != nil {
		return nil, posErr(pgerror.New(pgerror.CodeUndefinedFunction, "function %s takes %d argument(s)", name, want), loc)
	}
	var out []Expr
	for i, a := range in {
		hint := tUnknown
		if name == "ntile" || i == 1 {
			hint = tInt4
		}
		e, err := b.expr(a, b.win.input, hint)
		if err != nil {
			return nil, err
		}
		target := e.Type()
		if hint.OID == types.OIDInt4 {
			target = tInt4
		} else if target.OID == types.OIDUnknown {
			target = tText
		}
		if e, err = b.cast(e, target, types.CastImplicit, loc); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// windowAgg binds the call of an aggregate used as a window function.
func (b *Binder) windowAgg(fc *pg.FuncCall, name string) (*AggCall, error) {
	loc := fc.GetLocation()
	switch {
	case fc.GetAggDistinct():
		return nil, posErr(pgerror.New(pgerror.CodeFeatureNotSupported, "DISTINCT is not implemented for window functions"), loc)
	case len(fc.GetAggOrder()) > 0:
		return nil, posErr(pgerror.New(pgerror.CodeFeatureNotSupported, "aggregate ORDER BY is not implemented for window functions"), loc)
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
