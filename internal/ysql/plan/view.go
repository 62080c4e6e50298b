package plan

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/parse"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// viewRef plans a reference to a view as a subquery named alias with the
// view's column names: its stored query bound on its own, so no column or
// WITH query of the statement around it is visible to it.
func (b *Binder) viewRef(v *catalog.View, alias string, loc int32) (Node, error) {
	for _, o := range b.inViews {
		if o == v.OID {
			return nil, posErr(pgerror.New(pgerror.CodeInvalidObjectDefinition, "infinite recursion detected in rules for relation %q", v.Name), loc)
		}
	}
	raw, err := parse.One(v.Query)
	if err != nil {
		return nil, err
	}
	sel := raw.GetStmt().GetSelectStmt()
	if sel == nil {
		return nil, pgerror.New(pgerror.CodeInternalError, "view %q: stored query is not a SELECT", v.Name)
	}
	rec, ctes, recursing := b.Record, b.ctes, b.recursing
	b.Record, b.ctes, b.recursing = nil, nil, nil
	b.inViews = append(b.inViews, v.OID)
	sub, err := b.selectStmt(sel, nil)
	b.Record, b.ctes, b.recursing = rec, ctes, recursing
	b.inViews = b.inViews[:len(b.inViews)-1]
	if err != nil {
		return nil, err
	}
	visible := 0
	for _, c := range sub.Columns() {
		if !c.Hidden {
			visible++
		}
	}
	if visible != len(v.Columns) {
		return nil, pgerror.New(pgerror.CodeInternalError, "view %q gives %d columns, its definition %d", v.Name, visible, len(v.Columns))
	}
	names := make([]string, len(v.Columns))
	for i, c := range v.Columns {
		names[i] = c.Name
	}
	node, _ := subqueryItem(sub, alias, names, nil)
	return node, nil
}

// noteRelation records, for CREATE VIEW, that rv resolved in schema to
// the relation oid (0: a system view).
func (b *Binder) noteRelation(rv *pg.RangeVar, schema string, oid uint32) {
	if b.Record == nil {
		return
	}
	if oid != 0 {
		b.Record.Reads[oid] = true
	}
	b.Record.Schemas[rv] = schema
}
