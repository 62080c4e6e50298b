package plan

import (
	"fmt"
	"strings"
	"time"

	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Remote filters: the WHERE conjuncts of a table scan that the tablets can
// evaluate exactly as PostgreSQL would (client.Filter / docdb.Pred). A
// conjunct is pushed when it is built only of
//
//	col op value      op one of = <> < <= > >=, value independent of the row
//	col [NOT] IN (values...)
//	col IS [NOT] NULL
//	boolcol           (col = true)
//	AND, OR, NOT of the above
//
// and every compared column has a type whose storage order is PostgreSQL's
// order for the comparison (RemoteType): integers (any widths: the value
// is converted to the column's width at run time, and a conjunct whose
// value does not fit stays here), bool, date, time, timestamp,
// timestamptz, uuid, bytea, text and varchar (PostgreSQL's "C" collation:
// bytewise, as the storage). Floats (NaN, -0), numeric (NaN, infinities),
// bpchar (padding), intervals and json are evaluated here. The rest of the
// WHERE clause is evaluated over the rows the tablets return. A pushed
// conjunct whose values cannot be converted at run time (an error while
// evaluating them, an integer out of the column's range, a timestamp out of
// storage range) is evaluated here instead.

// RemoteOp is the kind of a RemotePred.
type RemoteOp int

// Remote predicate kinds.
const (
	RemoteAnd RemoteOp = iota + 1
	RemoteOr
	RemoteNot
	RemoteCmp       // Col Cmp Vals[0]
	RemoteIsNull    // Col IS NULL
	RemoteIsNotNull // Col IS NOT NULL
	RemoteIn        // Col IN (Vals...)
)

// RemotePred is a conjunct (or a part of one) in the form the tablets
// evaluate; E is the expression it stands for.
type RemotePred struct {
	Op   RemoteOp
	Args []*RemotePred
	Col  int    // table column index
	Cmp  string // = <> < <= > >=
	Vals []Expr // row-independent values
	E    Expr
}

// SplitFilter splits the filter of a scan into the conjuncts the tablets
// can evaluate and the rest. An index scan pushes the conjuncts over the
// columns its index rows hold (they go to the index's tablets); point
// gets push nothing (a point read takes no filter).
func SplitFilter(s *Scan) (remote []*RemotePred, local []Expr) {
	if s.Filter == nil {
		return nil, nil
	}
	cs := conjuncts(s.Filter, nil)
	if s.Access.Kind == PointGet {
		return nil, cs
	}
	held := func(int) bool { return true }
	if s.Access.Index != nil {
		held = s.Table.Layout(s.Access.Index).Holds
	}
	for _, c := range cs {
		if p, ok := remoteForm(s, c); ok && p.reads(held) {
			remote = append(remote, p)
		} else {
			local = append(local, c)
		}
	}
	return remote, local
}

// FullyRemote reports whether the tablets can evaluate the whole filter of
// s (true when there is none).
func FullyRemote(s *Scan) bool {
	_, local := SplitFilter(s)
	return len(local) == 0
}

// RemoteType reports whether comparisons of a column of type t can be
// evaluated on its storage values exactly.
func RemoteType(t types.T) bool {
	switch t.OID {
	case types.OIDInt2, types.OIDInt4, types.OIDInt8, types.OIDBool, types.OIDDate, types.OIDTime,
		types.OIDTimestamp, types.OIDTimestampTZ, types.OIDUUID, types.OIDBytea, types.OIDText, types.OIDVarchar:
		return true
	}
	return false
}

func intWidth(oid uint32) int {
	switch oid {
	case types.OIDInt2:
		return 2
	case types.OIDInt4:
		return 4
	case types.OIDInt8:
		return 8
	}
	return 0
}

func isTextOID(oid uint32) bool { return oid == types.OIDText || oid == types.OIDVarchar }

// remoteColumn matches a column of s's table, possibly under a cast that
// keeps its values (varchar to text, integer widening).
func remoteColumn(s *Scan, e Expr) (int, bool) {
	cr, ok := castColumn(e)
	if !ok || cr.Idx >= len(s.Table.Columns) || !RemoteType(s.Table.Columns[cr.Idx].Type) {
		return 0, false
	}
	return cr.Idx, true
}

// comparable reports whether a value of type vt compares with column
// values of type ct as their storage values do.
func comparable(ct, vt types.T) bool {
	switch {
	case intWidth(ct.OID) > 0:
		return intWidth(vt.OID) > 0
	case isTextOID(ct.OID):
		return isTextOID(vt.OID)
	}
	return ct.OID == vt.OID
}

var flipCmp = map[string]string{"=": "=", "<>": "<>", "!=": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

func remoteForm(s *Scan, e Expr) (*RemotePred, bool) {
	switch x := e.(type) {
	case *And:
		l, ok1 := remoteForm(s, x.L)
		r, ok2 := remoteForm(s, x.R)
		return &RemotePred{Op: RemoteAnd, Args: []*RemotePred{l, r}, E: e}, ok1 && ok2
	case *Or:
		l, ok1 := remoteForm(s, x.L)
		r, ok2 := remoteForm(s, x.R)
		return &RemotePred{Op: RemoteOr, Args: []*RemotePred{l, r}, E: e}, ok1 && ok2
	case *Not:
		a, ok := remoteForm(s, x.E)
		return &RemotePred{Op: RemoteNot, Args: []*RemotePred{a}, E: e}, ok
	case *ColRef:
		if x.Idx < len(s.Table.Columns) && s.Table.Columns[x.Idx].Type.OID == types.OIDBool {
			return &RemotePred{Op: RemoteCmp, Col: x.Idx, Cmp: "=", Vals: []Expr{&Const{T: tBool, D: types.DBool(true)}}, E: e}, true
		}
	case *IsNull:
		if cr, ok := x.E.(*ColRef); ok && cr.Idx < len(s.Table.Columns) {
			op := RemoteIsNull
			if x.Not {
				op = RemoteIsNotNull
			}
			return &RemotePred{Op: op, Col: cr.Idx, E: e}, true
		}
	case *BinOp:
		if x.NullOK {
			return nil, false
		}
		op, known := flipCmp[x.Name]
		if !known {
			return nil, false
		}
		if idx, ok := remoteColumn(s, x.L); ok && rowIndependent(x.R) && comparable(s.Table.Columns[idx].Type, x.R.Type()) {
			return &RemotePred{Op: RemoteCmp, Col: idx, Cmp: flipCmp[flipCmp[x.Name]], Vals: []Expr{x.R}, E: e}, true
		}
		if idx, ok := remoteColumn(s, x.R); ok && rowIndependent(x.L) && comparable(s.Table.Columns[idx].Type, x.L.Type()) {
			return &RemotePred{Op: RemoteCmp, Col: idx, Cmp: op, Vals: []Expr{x.L}, E: e}, true
		}
	case *InList:
		idx, ok := remoteColumn(s, x.E)
		if !ok {
			return nil, false
		}
		for i, v := range x.List {
			if !rowIndependent(v) || !comparable(s.Table.Columns[idx].Type, v.Type()) || x.Eq[i].Name != "=" {
				return nil, false
			}
		}
		p := &RemotePred{Op: RemoteIn, Col: idx, Vals: x.List, E: e}
		if x.Not {
			return &RemotePred{Op: RemoteNot, Args: []*RemotePred{p}, E: e}, true
		}
		return p, true
	}
	return nil, false
}

// reads reports whether every column p compares satisfies held.
func (p *RemotePred) reads(held func(int) bool) bool {
	if p.Op == RemoteAnd || p.Op == RemoteOr || p.Op == RemoteNot {
		for _, a := range p.Args {
			if !a.reads(held) {
				return false
			}
		}
		return true
	}
	return held(p.Col)
}

// FormatRemote renders remote conjuncts for EXPLAIN, e.g. ((v > 10) AND
// (s IS NULL)).
func FormatRemote(s *Scan, ps []*RemotePred) string {
	if len(ps) == 1 {
		return ps[0].format(s)
	}
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.format(s)
	}
	return "(" + strings.Join(parts, " AND ") + ")"
}

func (p *RemotePred) format(s *Scan) string {
	col := func() string { return s.Table.Columns[p.Col].Name }
	switch p.Op {
	case RemoteAnd, RemoteOr:
		sep := map[RemoteOp]string{RemoteAnd: " AND ", RemoteOr: " OR "}[p.Op]
		return "(" + p.Args[0].format(s) + sep + p.Args[1].format(s) + ")"
	case RemoteNot:
		return "(NOT " + p.Args[0].format(s) + ")"
	case RemoteIsNull:
		return "(" + col() + " IS NULL)"
	case RemoteIsNotNull:
		return "(" + col() + " IS NOT NULL)"
	case RemoteIn:
		vals := make([]string, len(p.Vals))
		for i, v := range p.Vals {
			vals[i] = formatValue(v)
		}
		return "(" + col() + " IN (" + strings.Join(vals, ", ") + "))"
	}
	return fmt.Sprintf("(%s %s %s)", col(), p.Cmp, formatValue(p.Vals[0]))
}

func formatValue(e Expr) string {
	switch x := e.(type) {
	case *Const:
		if x.D.Null {
			return "NULL"
		}
		txt := types.FormatText(x.D, x.T, time.UTC)
		switch x.T.Family() {
		case types.FamInt:
			return txt
		case types.FamBool:
			return map[bool]string{true: "true", false: "false"}[x.D.Bool()]
		}
		return "'" + strings.ReplaceAll(txt, "'", "''") + "'"
	case *Param:
		return fmt.Sprintf("$%d", x.Idx+1)
	case *Cast:
		return formatValue(x.E)
	case *FuncExpr:
		if len(x.Args) == 0 {
			return x.Name + "()"
		}
	}
	return "(value)"
}

// pushIntoJoin moves the WHERE conjuncts over a join that read only one
// side's columns into that side (its scan's filter, where the access path
// and the tablets can use them): any side of an inner join, the preserved
// side of a left or right join (the other side's rows are NULL-extended
// after the join, so a filter there would change the result). Over an
// inner join, a conjunct equating a column of each side joins the join's
// condition as a key, as if written in ON: `FROM a, b WHERE a.x = b.y` is
// then a hash or lookup join rather than a nested loop over every pair.
// It returns the conjuncts that stay over the join (nil: none).
func (b *Binder) pushIntoJoin(j *Join, cond Expr) Expr {
	nl := len(j.Left.Columns())
	var rest, keys Expr
	for _, c := range conjuncts(cond, nil) {
		if _, _, isKey := joinKey(c, nl); isKey && j.Kind == InnerJoin {
			keys = and(keys, c)
			continue
		}
		rest = and(rest, c)
	}
	if keys != nil {
		j.EqLeft, j.EqRight = nil, nil
		b.setJoinCond(j, and(j.Cond, keys), nl)
	}
	return b.pushToSides(j, rest, j.Kind == InnerJoin || j.Kind == LeftJoin, j.Kind == InnerJoin || j.Kind == RightJoin)
}

// pushOnIntoSides moves the ON conjuncts of j that read only one side into
// that side where the join's result stays the same: either side of an
// inner join, the right side of a left join and the left of a right join
// (a row of the preserved side that fails such a conjunct still appears,
// NULL-extended, so there it must stay in the condition). `JOIN b ON b.a
// = a.id AND b.status = 'x'` then reads only b's rows with that status.
// It returns the conjuncts that stay in the condition (nil: none).
func (b *Binder) pushOnIntoSides(j *Join, cond Expr) Expr {
	return b.pushToSides(j, cond, j.Kind == InnerJoin || j.Kind == RightJoin, j.Kind == InnerJoin || j.Kind == LeftJoin)
}

// pushToSides adds each conjunct of cond that reads only the left side's
// columns (toLeft) or only the right's (toRight) to that side's filter, if
// the side can take one, and returns the others.
func (b *Binder) pushToSides(j *Join, cond Expr, toLeft, toRight bool) Expr {
	if cond == nil {
		return nil
	}
	nl := len(j.Left.Columns())
	total := nl + len(j.Right.Columns())
	var rest Expr
	for _, c := range conjuncts(cond, nil) {
		if toLeft && filterable(j.Left) {
			if e, ok := shiftColumns(c, 0, nl, 0); ok {
				j.Left = b.addFilter(j.Left, e)
				continue
			}
		}
		if toRight && filterable(j.Right) {
			if e, ok := shiftColumns(c, nl, total, nl); ok {
				j.Right = b.addFilter(j.Right, e)
				continue
			}
		}
		rest = and(rest, c)
	}
	return rest
}

// pushIntoLateral moves the conjuncts of cond that read only the left
// side of a lateral join into it, and returns the others: the function
// or subquery then runs only for the rows that pass, as in PostgreSQL
// (jsonb_each(t.j) ... WHERE jsonb_typeof(t.j) = 'object' never sees an
// array).
func (b *Binder) pushIntoLateral(j *LateralJoin, cond Expr) Expr {
	nl := len(j.Left.Columns())
	var rest Expr
	for _, c := range conjuncts(cond, nil) {
		if e, ok := shiftColumns(c, 0, nl, 0); ok {
			j.Left = b.addFilter(j.Left, e)
			continue
		}
		rest = and(rest, c)
	}
	return rest
}

// filterable: join inputs a conjunct may move into (tables, and joins,
// which key on or pass down what they can and keep the rest).
func filterable(n Node) bool {
	switch x := n.(type) {
	case *Scan, *VirtualScan, *Join:
		return true
	case *Filter:
		return filterable(x.Input)
	}
	return false
}

// shiftColumns rewrites e, whose column references must all lie in [lo,
// hi), to read them at idx-delta. ok is false when e reads a column outside
// the range or holds an expression it does not know (subqueries, volatile
// functions): e then stays where it is.
func shiftColumns(e Expr, lo, hi, delta int) (Expr, bool) {
	return mapColumns(e, func(x *ColRef) (Expr, bool) {
		if x.Idx < lo || x.Idx >= hi {
			return nil, false
		}
		cp := *x
		cp.Idx -= delta
		return &cp, true
	})
}

// mapColumns rewrites e with each column reference replaced by what col
// gives for it. ok is false when col refuses one or e holds an expression
// it does not know (subqueries, volatile functions).
func mapColumns(e Expr, col func(*ColRef) (Expr, bool)) (Expr, bool) {
	all := func(es []Expr) ([]Expr, bool) {
		out := make([]Expr, len(es))
		for i, x := range es {
			var ok bool
			if out[i], ok = mapColumns(x, col); !ok {
				return nil, false
			}
		}
		return out, true
	}
	two := func(l, r Expr) (Expr, Expr, bool) {
		l2, ok1 := mapColumns(l, col)
		r2, ok2 := mapColumns(r, col)
		return l2, r2, ok1 && ok2
	}
	switch x := e.(type) {
	case nil:
		return nil, true
	case *ColRef:
		return col(x)
	case *Const, *Param, *OuterRef:
		return e, true
	case *Cast:
		in, ok := mapColumns(x.E, col)
		cp := *x
		cp.E = in
		return &cp, ok
	case *BinOp:
		cp := *x
		var ok bool
		cp.L, cp.R, ok = two(x.L, x.R)
		return &cp, ok
	case *UnOp:
		in, ok := mapColumns(x.E, col)
		cp := *x
		cp.E = in
		return &cp, ok
	case *FuncExpr:
		if x.Volatile {
			return nil, false
		}
		args, ok := all(x.Args)
		cp := *x
		cp.Args = args
		return &cp, ok
	case *And:
		l, r, ok := two(x.L, x.R)
		return &And{L: l, R: r}, ok
	case *Or:
		l, r, ok := two(x.L, x.R)
		return &Or{L: l, R: r}, ok
	case *Not:
		in, ok := mapColumns(x.E, col)
		return &Not{E: in}, ok
	case *IsNull:
		in, ok := mapColumns(x.E, col)
		return &IsNull{E: in, Not: x.Not}, ok
	case *BoolTest:
		in, ok := mapColumns(x.E, col)
		cp := *x
		cp.E = in
		return &cp, ok
	case *InList:
		// Eq's operands are not evaluated (only its Fn): E and List are.
		in, ok1 := mapColumns(x.E, col)
		list, ok2 := all(x.List)
		cp := *x
		cp.E, cp.List = in, list
		return &cp, ok1 && ok2
	case *Distinct:
		cp := *x
		var ok bool
		cp.L, cp.R, ok = two(x.L, x.R)
		return &cp, ok
	}
	return nil, false
}

// pushThroughProject moves the conjuncts of cond that read only columns
// p computes without volatile functions or subqueries below p, rewritten
// over p's input: a filter on a view or a subquery in FROM (`SELECT ...
// FROM v WHERE k = 1`) then reaches the scan and picks its access path
// (a point read rather than a scan of every tablet). p's input must take
// a filter with the same meaning: rows are only projected between the two
// (no grouping, DISTINCT, LIMIT, window or set-returning functions). It
// returns the conjuncts that stay above p (nil: none).
func (b *Binder) pushThroughProject(p *Project, cond Expr) Expr {
	if !filterable(p.Input) && !isPlainProject(p.Input) {
		return cond
	}
	var rest, pushed Expr
	for _, c := range conjuncts(cond, nil) {
		e, ok := mapColumns(c, func(x *ColRef) (Expr, bool) {
			if x.Idx < 0 || x.Idx >= len(p.Exprs) {
				return nil, false
			}
			return mapColumns(p.Exprs[x.Idx], func(in *ColRef) (Expr, bool) { return in, true })
		})
		if !ok {
			rest = and(rest, c)
			continue
		}
		pushed = and(pushed, e)
	}
	if pushed != nil {
		// At once: a conjunct the input cannot take further down must not
		// wrap it before the others have gone past.
		p.Input = b.addFilter(p.Input, pushed)
	}
	return rest
}

// isPlainProject reports whether n is a projection of rows a filter can
// be pushed through (recursively down to a scan or join).
func isPlainProject(n Node) bool {
	p, ok := n.(*Project)
	return ok && (filterable(p.Input) || isPlainProject(p.Input))
}

// FormatLimit renders a scan's limit for EXPLAIN: the number of rows when
// LIMIT and OFFSET are constants, else LIMIT + OFFSET as written ($1 + 10).
func FormatLimit(limit, offset Expr) string {
	lc, ok1 := limit.(*Const)
	oc, ok2 := offset.(*Const)
	switch {
	case ok1 && offset == nil:
		return formatValue(lc)
	case ok1 && ok2 && !lc.D.Null && !oc.D.Null:
		return fmt.Sprint(lc.D.I + oc.D.I)
	case offset == nil:
		return formatValue(limit)
	}
	return formatValue(limit) + " + " + formatValue(offset)
}
