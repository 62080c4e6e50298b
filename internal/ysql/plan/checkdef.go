package plan

import (
	"errors"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/ysql/builtins"
	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/parse"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// CheckConstraint validates a CHECK constraint's expression (stored text)
// over t's row when it is defined, with PostgreSQL's errors: a boolean of
// the table's columns without subqueries, parameters, aggregates, window
// or set-returning functions. Unchecked, such a constraint was stored and
// failed on every later write (or, with a subquery, crashed the session
// checking the existing rows).
func (b *Binder) CheckConstraint(t *catalog.Table, expr string) error {
	st, err := parse.One("SELECT " + expr)
	if err != nil {
		return err
	}
	n := st.GetStmt().GetSelectStmt().GetTargetList()[0].GetResTarget().GetVal()
	if err := refuseInDefinition(b, n, "check constraint", false); err != nil {
		return err
	}
	e, err := b.expr(n, tableScope(t, t.Name), tBool)
	if err == nil {
		_, err = b.coerceTo(e, tBool, "argument of CHECK", -1)
	}
	var pe *pgerror.Error
	if errors.As(err, &pe) {
		pe.Position = 0 // a position in the stored text, not the statement's
	}
	return err
}

// CheckIndexPredicate validates a partial index's predicate when the
// index is defined: what CheckConstraint refuses, as "index predicate".
// A subquery was accepted and crashed the session backfilling the index.
func (b *Binder) CheckIndexPredicate(t *catalog.Table, pred string) error {
	st, err := parse.One("SELECT " + pred)
	if err != nil {
		return err
	}
	n := st.GetStmt().GetSelectStmt().GetTargetList()[0].GetResTarget().GetVal()
	if err := refuseInDefinition(b, n, "index predicate", false); err != nil {
		return err
	}
	if refuseMutable(n) {
		// Rows would enter and leave the index with the clock or by chance.
		return pgerror.New(pgerror.CodeInvalidObjectDefinition, "functions in index predicate must be marked IMMUTABLE")
	}
	_, err = b.IndexPredicate(t, pred)
	var pe *pgerror.Error
	if errors.As(err, &pe) {
		pe.Position = 0 // a position in the stored text, not the statement's
	}
	return err
}

// refuseMutable reports whether n calls a function that is not
// immutable (builtins.Mutable), or reads the time or the session
// (CURRENT_TIMESTAMP, CURRENT_USER: SQL value functions).
func refuseMutable(n *pg.Node) bool {
	found := false
	visit := func(x *pg.Node) (*pg.Node, bool) {
		if fc := x.GetFuncCall(); fc != nil && builtins.Mutable(funcName(fc)) || x.GetSqlvalueFunction() != nil {
			found = true
		}
		return nil, !found
	}
	if _, descend := visit(n); descend {
		RewriteNodes(n.ProtoReflect(), visit)
	}
	return found
}

// CheckTransform refuses in ALTER COLUMN TYPE's USING what PostgreSQL
// refuses in a transform expression: a subquery crashed the session
// converting the rows; aggregates, window and set-returning functions.
func (b *Binder) CheckTransform(using *pg.Node) error {
	return refuseInDefinition(b, using, "transform expression", false)
}

// DefaultDefinition validates a column default's expression when it is
// defined, with PostgreSQL's errors (a subquery was accepted, and failed
// or crashed at the first insert).
func (b *Binder) DefaultDefinition(expr string) error {
	st, err := parse.One("SELECT " + expr)
	if err != nil {
		return err
	}
	return refuseInDefinition(b, st.GetStmt().GetSelectStmt().GetTargetList()[0].GetResTarget().GetVal(), "DEFAULT expression", true)
}

// refuseInDefinition refuses what a stored expression (a CHECK
// constraint's, a DEFAULT's: what) may not hold; noColumns: column
// references either.
func refuseInDefinition(b *Binder, n *pg.Node, what string, noColumns bool) error {
	var err error
	visit := func(x *pg.Node) (*pg.Node, bool) {
		if err != nil {
			return nil, false
		}
		switch {
		case x.GetSubLink() != nil:
			err = pgerror.New(pgerror.CodeFeatureNotSupported, "cannot use subquery in %s", what)
		case noColumns && x.GetColumnRef() != nil:
			err = pgerror.New(pgerror.CodeFeatureNotSupported, "cannot use column reference in %s", what)
		case x.GetParamRef() != nil:
			err = pgerror.New(pgerror.CodeUndefinedParameter, "there is no parameter $%d", x.GetParamRef().GetNumber())
		case x.GetFuncCall() != nil:
			fc := x.GetFuncCall()
			switch {
			case fc.GetOver() != nil:
				err = pgerror.New(pgerror.CodeWindowingError, "window functions are not allowed in %ss", what)
			case IsAggregate(funcName(fc)):
				err = pgerror.New(pgerror.CodeGroupingError, "aggregate functions are not allowed in %ss", what)
			case b.isSRF(fc):
				err = pgerror.New(pgerror.CodeFeatureNotSupported, "set-returning functions are not allowed in %ss", what)
			}
		}
		return nil, err == nil
	}
	if r, descend := visit(n); r == nil && descend {
		RewriteNodes(n.ProtoReflect(), visit)
	}
	return err
}
