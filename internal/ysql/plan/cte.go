package plan

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// WITH queries (common table expressions), non-recursive and read-only,
// are planned where they are referenced, as subqueries in FROM: PostgreSQL
// 12 and later inline such a CTE referenced once, and one referenced
// several times gives the same rows each time unless it calls volatile
// functions (PostgreSQL reads it once then; here each reference runs it).

// cteDef is one WITH query: what a reference binds.
type cteDef struct {
	name     string
	query    *pg.SelectStmt
	colnames []string
	parent   *scope     // the scope around the WITH (outer references)
	visible  []cteFrame // the WITH queries it may reference
}

// cteFrame is the WITH list of one query level.
type cteFrame []*cteDef

// withClause makes the WITH queries of w visible to the rest of the
// statement (restore undoes that).
func (b *Binder) withClause(w *pg.WithClause, parent *scope) (restore func(), err error) {
	if w.GetRecursive() {
		return nil, pgerror.Unsupported("WITH RECURSIVE")
	}
	outer := b.ctes
	var frame cteFrame
	seen := map[string]bool{}
	for _, n := range w.GetCtes() {
		c := n.GetCommonTableExpr()
		name := c.GetCtename()
		if seen[name] {
			return nil, posErr(pgerror.New(pgerror.CodeDuplicateAlias, "WITH query name %q specified more than once", name), c.GetLocation())
		}
		seen[name] = true
		q := c.GetCtequery().GetSelectStmt()
		if q == nil {
			return nil, posErr(pgerror.Unsupported("data-modifying statements in WITH"), c.GetLocation())
		}
		var cols []string
		for _, a := range c.GetAliascolnames() {
			cols = append(cols, a.GetString_().GetSval())
		}
		// A WITH query sees the ones before it in its list, and the
		// enclosing levels'.
		visible := append(append([]cteFrame(nil), outer...), append(cteFrame(nil), frame...))
		frame = append(frame, &cteDef{name: name, query: q, colnames: cols, parent: parent, visible: visible})
	}
	b.ctes = append(append([]cteFrame(nil), outer...), frame)
	return func() { b.ctes = outer }, nil
}

// cte returns the visible WITH query named name, innermost first.
func (b *Binder) cte(name string) *cteDef {
	for i := len(b.ctes) - 1; i >= 0; i-- {
		for j := len(b.ctes[i]) - 1; j >= 0; j-- {
			if d := b.ctes[i][j]; d.name == name {
				return d
			}
		}
	}
	return nil
}

// cteRef plans a reference to a WITH query as a subquery in FROM under
// alias (its column names those of the WITH list, then of the alias).
func (b *Binder) cteRef(d *cteDef, rv *pg.RangeVar) (Node, []scopeCol, error) {
	saved := b.ctes
	b.ctes = d.visible
	sub, err := b.selectStmt(d.query, d.parent)
	b.ctes = saved
	if err != nil {
		return nil, nil, err
	}
	if n := len(sub.Columns()); len(d.colnames) > n {
		return nil, nil, posErr(pgerror.New(pgerror.CodeInvalidColumnReference, "WITH query %q has %d columns available but %d columns specified", d.name, n, len(d.colnames)), rv.GetLocation())
	}
	alias := d.name
	var aliasCols []*pg.Node
	if a := rv.GetAlias(); a != nil {
		alias, aliasCols = a.GetAliasname(), a.GetColnames()
	}
	node, cols := subqueryItem(sub, alias, d.colnames, aliasCols)
	return node, cols, nil
}
