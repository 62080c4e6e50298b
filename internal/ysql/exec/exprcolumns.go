package exec

import (
	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/shaledb/shaledb/internal/ysql/parse"
	"github.com/shaledb/shaledb/internal/ysql/plan"
)

// Stored expressions (CHECK constraints, partial index predicates) are SQL
// text naming the table's columns. A column renamed or dropped is found in
// them by their parse trees: the same name in a string literal, a function
// name or a cast is no column.

// storedExpr parses a stored expression.
func storedExpr(expr string) (*pg.Node, error) {
	st, err := parse.One("SELECT " + expr)
	if err != nil {
		return nil, err
	}
	return st.GetStmt().GetSelectStmt().GetTargetList()[0].GetResTarget().GetVal(), nil
}

// eachColumnRef calls f with the column name of each column reference in n.
func eachColumnRef(n *pg.Node, f func(name *pg.String)) {
	visit := func(x *pg.Node) (*pg.Node, bool) {
		cr := x.GetColumnRef()
		if cr == nil {
			return nil, true
		}
		if fs := cr.GetFields(); len(fs) > 0 {
			if s := fs[len(fs)-1].GetString_(); s != nil {
				f(s)
			}
		}
		return nil, false
	}
	visit(n)
	plan.RewriteNodes(n.ProtoReflect(), visit)
}

// exprNamesColumn reports whether a stored expression reads column col
// (true when it cannot be parsed: it is then dropped with the column
// rather than kept unusable).
func exprNamesColumn(expr, col string) bool {
	n, err := storedExpr(expr)
	if err != nil {
		return true
	}
	found := false
	eachColumnRef(n, func(name *pg.String) { found = found || name.GetSval() == col })
	return found
}

// renameColumnInExpr is a stored expression with column old renamed next.
func renameColumnInExpr(expr, old, next string) (string, error) {
	if expr == "" {
		return "", nil
	}
	shared, err := storedExpr(expr)
	if err != nil {
		return "", err
	}
	// The parsed tree is parse.One's, shared with every statement of the
	// same text: renamed in place, a CHECK (a > 0) of any other table read
	// column b after (42703).
	n := proto.Clone(shared).(*pg.Node)
	eachColumnRef(n, func(name *pg.String) {
		if name.GetSval() == old {
			name.Sval = next
		}
	})
	return deparseExpr(n)
}
