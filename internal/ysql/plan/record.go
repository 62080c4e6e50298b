package plan

import (
	"strconv"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Anonymous records: ROW(a, b) and a table's name used as a value (the
// whole row, as row_to_json(t) and json_agg(t) take it). Their type is a
// record of their fields' names and types (types.RecordType).

// rowOf is the record of args with the given fields.
func rowOf(args []Expr, fields []Column) Expr {
	return &FuncExpr{Name: "row", Args: args, T: recordType(fields),
		Fn: func(_ *EvalContext, v []types.Datum) (types.Datum, error) {
			return types.DArray(append([]types.Datum(nil), v...)), nil
		}}
}

// rowExpr binds ROW(e1, e2, ...): fields f1, f2, ...; untyped literals
// are text.
func (b *Binder) rowExpr(re *pg.RowExpr, sc *scope) (Expr, error) {
	args := make([]Expr, len(re.GetArgs()))
	fields := make([]Column, len(args))
	for i, a := range re.GetArgs() {
		e, err := b.expr(a, sc, tUnknown)
		if err != nil {
			return nil, err
		}
		if e.Type().OID == types.OIDUnknown {
			if e, err = b.cast(e, tText, types.CastImplicit, re.GetLocation()); err != nil {
				return nil, err
			}
		}
		args[i], fields[i] = e, Column{Name: "f" + strconv.Itoa(i+1), T: e.Type()}
	}
	return rowOf(args, fields), nil
}

// wholeRow binds name, which is no column, as the row of the FROM item
// so named, if there is one (false otherwise).
func (b *Binder) wholeRow(name string, sc *scope, loc int32) (Expr, bool, error) {
	for s, level := sc, 0; s != nil; s, level = s.parent, level+1 {
		var args []Expr
		var fields []Column
		for i, c := range s.cols {
			if c.Table != name || c.Hidden && !c.Using {
				continue
			}
			// By position: the item's columns may share a name (SELECT
			// foo FROM (SELECT 1, 2) foo reads two ?column?).
			e, err := b.columnAt(sc, i, level, c.T, c.Name, loc)
			if err != nil {
				return nil, true, err
			}
			if c.Scalar {
				return e, true, nil
			}
			args, fields = append(args, e), append(fields, Column{Name: c.Name, T: c.T})
		}
		if len(args) > 0 {
			return rowOf(args, fields), true, nil
		}
	}
	return nil, false, nil
}

// funcScopeCols are the scope columns of a function in FROM: one column
// is Scalar.
func funcScopeCols(cols []Column) []scopeCol {
	out := scopeCols(cols)
	if len(out) == 1 {
		out[0].Scalar = true
	}
	return out
}

// isUndefinedColumn reports whether err is 42703.
func isUndefinedColumn(err error) bool {
	pe, ok := err.(*pgerror.Error)
	return ok && pe.Code == pgerror.CodeUndefinedColumn
}
