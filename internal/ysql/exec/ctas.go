package exec

import (
	"context"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/ysql/parse"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// createTableAs runs CREATE TABLE t [(names)] AS query [WITH [NO] DATA]
// and SELECT ... INTO t: a table of the query's columns (no primary key:
// rows get a hidden row id, as a CREATE TABLE without one), then an INSERT
// of the query's rows. As other DDL here it is not transactional: the
// table is created on its own; a failed INSERT drops it again.
func (s *Session) createTableAs(ctx context.Context, query *pg.Node, into *pg.IntoClause, ifNotExists bool, yb *ybOptions) (string, error) {
	if into.GetRel().GetRelpersistence() == "t" {
		return "", pgerror.Unsupported("temporary tables")
	}
	sel := query.GetSelectStmt()
	if sel == nil {
		return "", pgerror.Unsupported("CREATE TABLE AS of this statement")
	}
	_, cols, err := s.bindQueryColumns(ctx, sel, nil)
	if err != nil {
		return "", err
	}
	names := into.GetColNames()
	if len(names) > len(cols) {
		return "", pgerror.New(pgerror.CodeSyntaxError, "too many column names were specified")
	}
	cs := &pg.CreateStmt{Relation: into.GetRel(), IfNotExists: ifNotExists}
	for i, c := range cols {
		name := c.Name
		if i < len(names) {
			name = names[i].GetString_().GetSval()
		}
		tn, err := typeName(c.T)
		if err != nil {
			return "", err
		}
		cs.TableElts = append(cs.TableElts, &pg.Node{Node: &pg.Node_ColumnDef{ColumnDef: &pg.ColumnDef{
			Colname: name, TypeName: tn, IsLocal: true}}})
	}
	snap, err := s.snapshot(ctx)
	if err != nil {
		return "", err
	}
	schema, err := s.schemaFor(snap, into.GetRel())
	if err != nil {
		return "", err
	}
	if _, exists := snap.Table(s.db, schema, into.GetRel().GetRelname()); exists && ifNotExists {
		s.notice("NOTICE", "42P07", "relation %q already exists, skipping", into.GetRel().GetRelname())
		return "CREATE TABLE AS", nil
	}
	if err := s.createTable(ctx, cs, yb); err != nil {
		return "", err
	}
	if into.GetSkipData() {
		return "CREATE TABLE AS", nil
	}
	rel := &pg.RangeVar{Schemaname: schema, Relname: into.GetRel().GetRelname(), Inh: true, Relpersistence: "p"}
	ins := &Statement{s: s, raw: &pg.RawStmt{Stmt: &pg.Node{Node: &pg.Node_InsertStmt{InsertStmt: &pg.InsertStmt{
		Relation: rel, SelectStmt: query}}}}}
	var tag string
	err = ins.plan(ctx)
	if err == nil {
		err = s.inTxn(ctx, func(tx *client.Txn) error {
			var err error
			tag, _, err = s.runPlan(ctx, ins, nil, tx)
			return err
		})
	}
	if err != nil {
		// The table goes with its rows, as the statement never ran.
		if snap, serr := s.e.cfg.Cache.Fresh(ctx); serr == nil {
			if t, ok := snap.Table(s.db, schema, rel.GetRelname()); ok {
				_ = s.dropTable(context.WithoutCancel(ctx), t)
			}
		}
		return "", err
	}
	// INSERT 0 n -> SELECT n, PostgreSQL's tag for CREATE TABLE AS.
	return "SELECT " + tag[strings.LastIndexByte(tag, ' ')+1:], nil
}

// bindQueryColumns binds sel as a query of its own (no parameters) for
// CREATE TABLE AS and CREATE VIEW, and returns the binder and the
// query's columns; rec, when set, records its names (plan.BindRecord).
func (s *Session) bindQueryColumns(ctx context.Context, sel *pg.SelectStmt, rec *plan.BindRecord) (*plan.Binder, []plan.Column, error) {
	b, err := s.binder(ctx)
	if err != nil {
		return nil, nil, err
	}
	b.Record = rec
	node, err := b.Select(sel)
	if err != nil {
		return nil, nil, err
	}
	if len(b.Params) > 0 {
		return nil, nil, pgerror.New(pgerror.CodeUndefinedParameter, "there is no parameter $1")
	}
	var cols []plan.Column
	for _, c := range node.Columns() {
		if !c.Hidden {
			cols = append(cols, c)
		}
	}
	return b, cols, nil
}

// typeName is the parse tree of t's name, for a column definition.
func typeName(t types.T) (*pg.TypeName, error) {
	if t.OID == types.OIDUnknown {
		t = types.T{OID: types.OIDText, Mod: -1}
	}
	raw, err := parse.One("SELECT NULL::" + types.FormatType(t.OID, t.Mod))
	if err != nil {
		return nil, err
	}
	tc := raw.GetStmt().GetSelectStmt().GetTargetList()[0].GetResTarget().GetVal().GetTypeCast()
	if tc == nil {
		return nil, pgerror.New(pgerror.CodeInternalError, "no type name for %s", types.FormatType(t.OID, t.Mod))
	}
	return tc.GetTypeName(), nil
}
