package plan

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Row comparisons: (a, b) op (x, y), (a, b) [NOT] IN ((x, y), ...), (a, b)
// IS [NOT] DISTINCT FROM (x, y) and (a, b) IN (SELECT x, y ...). They are
// rewritten into comparisons of the fields, so that the access path
// choice and the tablets' filters take them like any other: = is the AND
// of the fields' =, <> their OR, and < <= > >= the lexicographic order
// (the first pair that is unequal or has a NULL decides), which is
// PostgreSQL's row comparison, NULLs included.

// rowItems are the fields of a row constructor, nil if n is none.
func rowItems(n *pg.Node) []*pg.Node {
	if re := n.GetRowExpr(); re != nil {
		return re.GetArgs()
	}
	return nil
}

// isRowCompare reports whether both operands are row constructors.
func isRowCompare(a *pg.A_Expr) bool {
	return a.GetLexpr().GetRowExpr() != nil && a.GetRexpr().GetRowExpr() != nil
}

// rowPairs binds the fields of two rows of the same length.
func (b *Binder) rowPairs(l, r []*pg.Node, sc *scope, loc int32) ([][2]Expr, error) {
	if len(l) != len(r) {
		return nil, posErr(pgerror.New(pgerror.CodeSyntaxError, "unequal number of entries in row expressions"), loc)
	}
	if len(l) == 0 {
		return nil, posErr(pgerror.New(pgerror.CodeFeatureNotSupported, "cannot compare rows of zero length"), loc)
	}
	out := make([][2]Expr, len(l))
	for i := range l {
		le, re, err := b.pair(l[i], r[i], sc)
		if err != nil {
			return nil, err
		}
		out[i] = [2]Expr{le, re}
	}
	return out, nil
}

// rowCompare binds l op r for two row constructors.
func (b *Binder) rowCompare(op string, l, r []*pg.Node, sc *scope, loc int32) (Expr, error) {
	pairs, err := b.rowPairs(l, r, sc, loc)
	if err != nil {
		return nil, err
	}
	strict := map[string]string{"<": "<", "<=": "<", ">": ">", ">=": ">", "=": "=", "<>": "<>"}[op]
	ordering := strict == "<" || strict == ">"
	last := len(pairs) - 1
	// The fields' comparisons, in the order written (the first error is
	// PostgreSQL's): the operator for the last pair, the strict one and =
	// for the others.
	cmps := make([][2]Expr, len(pairs))
	for i, p := range pairs {
		name := strict
		if i == last || strict == "" {
			name = op
		}
		c, err := b.binary(name, p[0], p[1], loc)
		if err != nil {
			return nil, err
		}
		if c.Type().OID != types.OIDBool {
			return nil, posErr(pgerror.New(pgerror.CodeDatatypeMismatch, "row comparison operator must yield type boolean, not type %s", typeName(c.Type())), loc)
		}
		cmps[i][0] = c
		if ordering && i < last {
			if cmps[i][1], err = b.binary("=", p[0], p[1], loc); err != nil {
				return nil, err
			}
		}
	}
	if strict == "" {
		return nil, posErr(pgerror.New(pgerror.CodeUndefinedFunction, "could not determine interpretation of row comparison operator %s", op), loc)
	}
	out := cmps[last][0]
	for i := last - 1; i >= 0; i-- {
		switch op {
		case "=":
			out = &And{L: cmps[i][0], R: out}
		case "<>":
			out = &Or{L: cmps[i][0], R: out}
		default: // l_i < r_i OR (l_i = r_i AND the rest)
			out = &Or{L: cmps[i][0], R: &And{L: cmps[i][1], R: out}}
		}
	}
	if ordering && last > 0 {
		// (k1, k2) > ($1, $2) implies k1 >= $1: a bound the access path
		// can start a key range from (keyset pagination). It changes no
		// result: when it is false or NULL, so is the comparison.
		lead, err := b.binary(op[:1]+"=", pairs[0][0], pairs[0][1], loc)
		if err != nil {
			return nil, err
		}
		out = &And{L: lead, R: out}
	}
	return out, nil
}

// rowIn binds (a, b) [NOT] IN ((x, y), ...): the OR of the rows' = (NOT
// IN: the AND of their <>).
func (b *Binder) rowIn(l []*pg.Node, list []*pg.Node, not bool, sc *scope, loc int32) (Expr, error) {
	var out Expr
	for _, item := range list {
		r := rowItems(item)
		if r == nil {
			return nil, posErr(pgerror.New(pgerror.CodeSyntaxError, "unequal number of entries in row expressions"), loc)
		}
		op := "="
		if not {
			op = "<>"
		}
		c, err := b.rowCompare(op, l, r, sc, loc)
		if err != nil {
			return nil, err
		}
		out = combine(out, c, not)
	}
	return out, nil
}

// combine is e alone when out is nil, else out AND e (and) or out OR e.
func combine(out, e Expr, and bool) Expr {
	switch {
	case out == nil:
		return e
	case and:
		return &And{L: out, R: e}
	}
	return &Or{L: out, R: e}
}

// rowDistinct binds (a, b) IS [NOT] DISTINCT FROM (x, y): distinct when
// any field is.
func (b *Binder) rowDistinct(l, r []*pg.Node, not bool, sc *scope, loc int32) (Expr, error) {
	pairs, err := b.rowPairs(l, r, sc, loc)
	if err != nil {
		return nil, err
	}
	var out Expr
	for _, p := range pairs {
		op, err := b.binaryOp("=", p[0], p[1], loc)
		if err != nil {
			return nil, err
		}
		out = combine(out, &Distinct{L: op.L, R: op.R, Eq: op, Not: not}, not)
	}
	return out, nil
}

// rowInSubquery binds (a, b) IN (SELECT x, y ...) (also = ANY): the row's
// fields, each with the = for its column.
func (b *Binder) rowInSubquery(sq *Subquery, sl *pg.SubLink, items []*pg.Node, cols []Column, sc *scope) error {
	loc := sl.GetLocation()
	if op := sl.GetOperName(); len(op) > 0 && op[len(op)-1].GetString_().GetSval() != "=" {
		return posErr(pgerror.Unsupported("row comparisons with "+op[len(op)-1].GetString_().GetSval()+" ANY (subquery)"), loc)
	}
	switch {
	case len(items) < len(cols):
		return posErr(pgerror.New(pgerror.CodeSyntaxError, "subquery has too many columns"), loc)
	case len(items) > len(cols):
		return posErr(pgerror.New(pgerror.CodeSyntaxError, "subquery has too few columns"), loc)
	}
	var args []Expr
	var fields []Column
	for i, item := range items {
		e, err := b.expr(item, sc, cols[i].T)
		if err != nil {
			return err
		}
		op, err := b.binaryOp("=", e, &ColRef{Idx: i, T: cols[i].T}, loc)
		if err != nil {
			return err
		}
		sq.RowEq = append(sq.RowEq, op)
		args, fields = append(args, op.L), append(fields, Column{Name: cols[i].Name, T: op.L.Type()})
	}
	sq.Kind, sq.T, sq.Test = InSubquery, tBool, rowOf(args, fields)
	return nil
}

// rowEqual compares a row's fields with a subquery's row: true when all
// are equal, false when one pair is unequal, else NULL.
func rowEqual(ec *EvalContext, ops []*BinOp, l []types.Datum, r Row) (types.Datum, error) {
	sawNull := false
	for i, op := range ops {
		if l[i].Null || r[i].Null {
			sawNull = true
			continue
		}
		eq, err := op.Fn(ec, l[i], r[i])
		if err != nil || !eq.Bool() {
			return eq, err
		}
	}
	if sawNull {
		return types.NullDatum, nil
	}
	return types.DBool(true), nil
}
