package exec

import (
	"context"
	"sort"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/parse"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Views. A view is a catalog object holding its query as SQL text (see
// catalog.View); a statement naming it binds that query as a subquery in
// its FROM list (plan.Binder.viewRef). Like our other DDL, CREATE and
// DROP VIEW are not transactional. Views are read-only: INSERT, UPDATE
// and DELETE on them are refused (PostgreSQL's automatically updatable
// views are not supported).

// createView runs CREATE [OR REPLACE] VIEW name [(columns)] AS query.
func (s *Session) createView(ctx context.Context, vs *pg.ViewStmt) error {
	rv := vs.GetView()
	if rv.GetRelpersistence() == "t" {
		return pgerror.New(pgerror.CodeFeatureNotSupported, "temporary views are not supported")
	}
	checkOption, err := viewOptions(vs.GetOptions())
	if err != nil {
		return err
	}
	if checkOption || vs.GetWithCheckOption() != pg.ViewCheckOption_NO_CHECK_OPTION {
		return pgerror.Unsupported("WITH CHECK OPTION")
	}
	sel := vs.GetQuery().GetSelectStmt()
	if sel == nil {
		return pgerror.Unsupported("a view of this statement")
	}
	sel = proto.Clone(sel).(*pg.SelectStmt)
	rec := plan.NewBindRecord()
	b, cols, err := s.bindQueryColumns(ctx, sel, rec)
	if err != nil {
		return err
	}
	snap := b.Cat
	schema, err := s.schemaFor(snap, rv)
	if err != nil {
		return err
	}
	v := &catalog.View{Database: s.db, Schema: schema, Name: rv.GetRelname()}
	aliases := vs.GetAliases()
	if len(aliases) > len(cols) {
		return pgerror.New(pgerror.CodeSyntaxError, "CREATE VIEW specifies more column names than columns")
	}
	seen := map[string]bool{}
	for i, c := range cols {
		name := c.Name
		if i < len(aliases) {
			name = aliases[i].GetString_().GetSval()
		}
		if seen[name] {
			return pgerror.New(pgerror.CodeDuplicateColumn, "column %q specified more than once", name)
		}
		seen[name] = true
		t := c.T
		if t.OID == types.OIDUnknown {
			t = types.T{OID: types.OIDText, Mod: -1}
		}
		v.Columns = append(v.Columns, catalog.ViewColumn{Name: name, Type: t})
	}
	for oid := range rec.Reads {
		if t, ok := snap.ByOID[oid]; ok {
			v.DependsOn = append(v.DependsOn, t.QualifiedName())
		} else if w, ok := snap.ViewByOID[oid]; ok {
			v.DependsOn = append(v.DependsOn, w.QualifiedName())
		}
	}
	sort.Strings(v.DependsOn)
	if v.Query, err = storedViewQuery(sel, rec); err != nil {
		return err
	}
	check := func(snap *catalog.Snapshot) error {
		if err := s.relationNameFree(snap, schema, v.Name, true); err != nil {
			return err
		}
		old, exists := snap.View(s.db, schema, v.Name)
		if !exists {
			v.OID = 0
			return nil
		}
		if !vs.GetReplace() {
			return pgerror.New(pgerror.CodeDuplicateTable, "relation %q already exists", v.Name)
		}
		if readsView(snap.Views[s.db], v.DependsOn, old.QualifiedName(), map[string]bool{}) {
			return pgerror.New(pgerror.CodeInvalidObjectDefinition, "infinite recursion detected in rules for relation %q", v.Name)
		}
		v.OID = old.OID
		return replaceableView(old, v)
	}
	err = s.e.cfg.Cache.PutView(ctx, v, !vs.GetReplace(), check)
	if client.IsCode(err, masterpb.MasterError_ALREADY_EXISTS) {
		return pgerror.New(pgerror.CodeDuplicateTable, "relation %q already exists", v.Name)
	}
	return err
}

// relationNameFree fails with 42P07 if schema.name is taken by a table,
// index or sequence (or, unless views is set, a view): PostgreSQL's
// relations share one namespace per schema.
func (s *Session) relationNameFree(snap *catalog.Snapshot, schema, name string, views bool) error {
	_, table := snap.Table(s.db, schema, name)
	_, index := snap.Indexes[s.db][schema+"."+name]
	_, seq := snap.Sequence(s.db, schema, name)
	_, view := snap.View(s.db, schema, name)
	if table || index || seq || view && !views {
		return pgerror.New(pgerror.CodeDuplicateTable, "relation %q already exists", name)
	}
	return nil
}

// readsView reports whether a query reading deps reads target, directly
// or through the views of its database (views, by "schema.name").
func readsView(views map[string]*catalog.View, deps []string, target string, seen map[string]bool) bool {
	for _, d := range deps {
		if d == target {
			return true
		}
		if seen[d] {
			continue
		}
		seen[d] = true
		if w, ok := views[d]; ok && readsView(views, w.DependsOn, target, seen) {
			return true
		}
	}
	return false
}

// replaceableView checks CREATE OR REPLACE VIEW's rule: the new query
// keeps the old columns (names and types, in order) and may add more.
func replaceableView(old, next *catalog.View) error {
	if len(next.Columns) < len(old.Columns) {
		return pgerror.New(pgerror.CodeInvalidTableDefinition, "cannot drop columns from view")
	}
	for i, o := range old.Columns {
		n := next.Columns[i]
		if n.Name != o.Name {
			return pgerror.New(pgerror.CodeInvalidTableDefinition, "cannot change name of view column %q to %q", o.Name, n.Name).
				WithHint("Use ALTER VIEW ... RENAME COLUMN ... to change name of view column instead.")
		}
		if n.Type != o.Type {
			return pgerror.New(pgerror.CodeInvalidTableDefinition, "cannot change data type of view column %q from %s to %s",
				o.Name, types.FormatType(o.Type.OID, o.Type.Mod), types.FormatType(n.Type.OID, n.Type.Mod))
		}
	}
	return nil
}

// storedViewQuery is the text a view keeps of its bound query sel: every
// relation name the binder resolved qualified with its schema, every *
// replaced by the columns it stood for.
func storedViewQuery(sel *pg.SelectStmt, rec *plan.BindRecord) (string, error) {
	for rv, schema := range rec.Schemas {
		if rv.GetSchemaname() == "" {
			rv.Schemaname = schema
		}
	}
	var expand func(st *pg.SelectStmt)
	expand = func(st *pg.SelectStmt) {
		if st.GetLarg() != nil { // the arms of a set operation
			expand(st.Larg)
			expand(st.Rarg)
		}
		var out []*pg.Node
		changed := false
		for _, n := range st.GetTargetList() {
			star, ok := rec.Stars[n.GetResTarget().GetVal().GetColumnRef()]
			if !ok {
				out = append(out, n)
				continue
			}
			changed = true
			for _, c := range star {
				fields := []*pg.Node{pg.MakeStrNode(c.Name)}
				if c.Table != "" {
					fields = append([]*pg.Node{pg.MakeStrNode(c.Table)}, fields...)
				}
				out = append(out, &pg.Node{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{
					Val: &pg.Node{Node: &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{Fields: fields}}}}}})
			}
		}
		if changed {
			st.TargetList = out
		}
	}
	expand(sel)
	plan.RewriteNodes(sel.ProtoReflect(), func(n *pg.Node) (*pg.Node, bool) {
		if st := n.GetSelectStmt(); st != nil {
			expand(st)
		}
		return nil, true
	})
	return parse.Deparse(&pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: sel}})
}

// findView resolves a possibly qualified view name.
func (s *Session) findView(snap *catalog.Snapshot, schema, name string) (*catalog.View, bool) {
	return lookup(s, schema, func(sc string) (*catalog.View, bool) { return snap.View(s.db, sc, name) })
}

// dropViews runs DROP VIEW [IF EXISTS] names [CASCADE].
func (s *Session) dropViews(ctx context.Context, snap *catalog.Snapshot, ds *pg.DropStmt) error {
	var views []*catalog.View
	for _, o := range ds.GetObjects() {
		schema, name := qualifiedName(o.GetList().GetItems())
		v, ok := s.findView(snap, schema, name)
		if !ok {
			if err := s.notA(snap, schema, name, "view"); err != nil {
				return err
			}
			if ds.GetMissingOk() {
				s.notice("NOTICE", "00000", "view %q does not exist, skipping", name)
				continue
			}
			return pgerror.New(pgerror.CodeUndefinedTable, "view %q does not exist", name)
		}
		views = append(views, v)
	}
	drop, err := s.withDependents(snap, views, nil, ds.GetBehavior() == pg.DropBehavior_DROP_CASCADE)
	if err != nil {
		return err
	}
	return s.e.cfg.Cache.DropViews(ctx, drop)
}

// withDependents returns views and every view reading them or tables
// (through views too), for a DROP of those objects: without cascade a
// dependent view not itself being dropped is 2BP01, PostgreSQL's error;
// with it, each is noticed.
func (s *Session) withDependents(snap *catalog.Snapshot, views []*catalog.View, tables []*catalog.Table, cascade bool) ([]*catalog.View, error) {
	dropping := map[string]bool{}
	for _, v := range views {
		dropping[v.QualifiedName()] = true
	}
	type dep struct {
		v          *catalog.View
		on, onKind string
	}
	var queue []dep
	for _, t := range tables {
		for _, d := range snap.Dependents(s.db, t.QualifiedName()) {
			queue = append(queue, dep{d, t.Name, "table"})
		}
	}
	out := append([]*catalog.View(nil), views...)
	for _, v := range views {
		for _, d := range snap.Dependents(s.db, v.QualifiedName()) {
			queue = append(queue, dep{d, v.Name, "view"})
		}
	}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		if dropping[d.v.QualifiedName()] {
			continue
		}
		if !cascade {
			return nil, pgerror.New(pgerror.CodeDependentObjectsStillExist, "cannot drop %s %s because other objects depend on it", d.onKind, d.on).
				WithDetail("view %s depends on %s %s", d.v.Name, d.onKind, d.on).
				WithHint("Use DROP ... CASCADE to drop the dependent objects too.")
		}
		s.notice("NOTICE", "00000", "drop cascades to view %s", d.v.Name)
		dropping[d.v.QualifiedName()] = true
		out = append(out, d.v)
		for _, next := range snap.Dependents(s.db, d.v.QualifiedName()) {
			queue = append(queue, dep{next, d.v.Name, "view"})
		}
	}
	return out, nil
}

// renameView runs ALTER VIEW v RENAME TO w and ALTER VIEW v RENAME COLUMN
// a TO b (ALTER TABLE too, as PostgreSQL). Views that read v name it and
// its columns in their stored text, so v must have none.
func (s *Session) renameView(ctx context.Context, snap *catalog.Snapshot, rs *pg.RenameStmt) (string, error) {
	tag := "ALTER VIEW"
	if rs.GetRelationType() != pg.ObjectType_OBJECT_VIEW {
		tag = "ALTER TABLE"
	}
	rv := rs.GetRelation()
	v, ok := s.findView(snap, rv.GetSchemaname(), rv.GetRelname())
	if !ok {
		if rs.GetMissingOk() {
			s.notice("NOTICE", "00000", "relation %q does not exist, skipping", rv.GetRelname())
			return tag, nil
		}
		return "", pgerror.New(pgerror.CodeUndefinedTable, "relation %q does not exist", rv.GetRelname())
	}
	if deps := snap.Dependents(s.db, v.QualifiedName()); len(deps) > 0 {
		return "", pgerror.New(pgerror.CodeDependentObjectsStillExist, "cannot rename view %s because other objects depend on it", v.Name).
			WithDetail("view %s depends on view %s", deps[0].Name, v.Name).
			WithHint("Drop the views that read it first (views keep the names they read).")
	}
	next := *v
	next.Columns = append([]catalog.ViewColumn(nil), v.Columns...)
	check := func(*catalog.Snapshot) error { return nil }
	switch rs.GetRenameType() {
	case pg.ObjectType_OBJECT_VIEW, pg.ObjectType_OBJECT_TABLE:
		next.Name = rs.GetNewname()
		check = func(snap *catalog.Snapshot) error { return s.relationNameFree(snap, v.Schema, next.Name, false) }
	case pg.ObjectType_OBJECT_COLUMN:
		i := -1
		for j, c := range v.Columns {
			if c.Name == rs.GetSubname() {
				i = j
			}
			if c.Name == rs.GetNewname() {
				return "", pgerror.New(pgerror.CodeDuplicateColumn, "column %q of relation %q already exists", rs.GetNewname(), v.Name)
			}
		}
		if i < 0 {
			return "", pgerror.New(pgerror.CodeUndefinedColumn, "column %q does not exist", rs.GetSubname())
		}
		next.Columns[i].Name = rs.GetNewname()
	default:
		return "", pgerror.Unsupported("this ALTER VIEW ... RENAME")
	}
	return tag, s.e.cfg.Cache.RenameView(ctx, v, &next, check)
}

// viewsReading fails a change to table t that its views could not
// survive (what: "drop column c of table t", "rename table t", ...).
func (s *Session) viewsReading(snap *catalog.Snapshot, t *catalog.Table, what string) error {
	deps := snap.Dependents(s.db, t.QualifiedName())
	if len(deps) == 0 {
		return nil
	}
	return pgerror.New(pgerror.CodeDependentObjectsStillExist, "cannot %s because other objects depend on it", what).
		WithDetail("view %s depends on table %s", deps[0].Name, t.Name).
		WithHint("Drop the views that read the table first (views keep its columns and name).")
}

// viewDefinition is pg_get_viewdef's text of v: its stored query, as
// psql shows it (a leading space, a closing semicolon).
func viewDefinition(v *catalog.View) string {
	return " " + v.Query + ";"
}
