package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/parse"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// ddl runs a schema statement.
func (s *Session) ddl(ctx context.Context, n *pg.Node, yb *ybOptions) (string, error) {
	// Decided on the master's catalog as it is now, not on this node's
	// copy, which may be a heartbeat old.
	if _, err := s.e.cfg.Cache.Current(ctx); err != nil {
		return "", err
	}
	switch {
	case n.GetCreateStmt() != nil:
		return "CREATE TABLE", s.createTable(ctx, n.GetCreateStmt(), yb)
	case n.GetCreateTableAsStmt() != nil:
		ctas := n.GetCreateTableAsStmt()
		if ctas.GetObjtype() != pg.ObjectType_OBJECT_TABLE {
			return "", pgerror.Unsupported("CREATE MATERIALIZED VIEW")
		}
		return s.createTableAs(ctx, ctas.GetQuery(), ctas.GetInto(), ctas.GetIfNotExists(), yb)
	case n.GetSelectStmt().GetIntoClause() != nil:
		// SELECT ... INTO t: CREATE TABLE t AS SELECT ... without INTO.
		sel := proto.Clone(n.GetSelectStmt()).(*pg.SelectStmt)
		into := sel.GetIntoClause()
		sel.IntoClause = nil
		return s.createTableAs(ctx, &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: sel}}, into, false, yb)
	case n.GetDropStmt() != nil:
		return s.drop(ctx, n.GetDropStmt())
	case n.GetCreatedbStmt() != nil:
		name := n.GetCreatedbStmt().GetDbname()
		err := s.e.cfg.Cache.CreateDatabase(ctx, name)
		if client.IsCode(err, masterpb.MasterError_ALREADY_EXISTS) {
			return "", pgerror.New(pgerror.CodeDuplicateDatabase, "database %q already exists", name)
		}
		return "CREATE DATABASE", err
	case n.GetDropdbStmt() != nil:
		return "DROP DATABASE", s.dropDatabase(ctx, n.GetDropdbStmt())
	case n.GetCreateSchemaStmt() != nil:
		cs := n.GetCreateSchemaStmt()
		if len(cs.GetSchemaElts()) > 0 {
			return "", pgerror.Unsupported("CREATE SCHEMA with elements")
		}
		err := s.e.cfg.Cache.CreateSchema(ctx, s.db, cs.GetSchemaname())
		if client.IsCode(err, masterpb.MasterError_ALREADY_EXISTS) {
			if cs.GetIfNotExists() {
				s.notice("NOTICE", "42P06", "schema %q already exists, skipping", cs.GetSchemaname())
				return "CREATE SCHEMA", nil
			}
			return "", pgerror.New(pgerror.CodeDuplicateSchema, "schema %q already exists", cs.GetSchemaname())
		}
		return "CREATE SCHEMA", err
	case n.GetTruncateStmt() != nil:
		return "TRUNCATE TABLE", s.truncate(ctx, n.GetTruncateStmt())
	case n.GetAlterTableStmt() != nil:
		return "ALTER TABLE", s.alterTable(ctx, n.GetAlterTableStmt())
	case n.GetRenameStmt() != nil:
		return s.rename(ctx, n.GetRenameStmt())
	case n.GetIndexStmt() != nil:
		return "CREATE INDEX", s.createIndex(ctx, n.GetIndexStmt(), yb)
	case n.GetCreateSeqStmt() != nil:
		return "CREATE SEQUENCE", s.createSequence(ctx, n.GetCreateSeqStmt())
	case n.GetAlterSeqStmt() != nil:
		return "ALTER SEQUENCE", s.alterSequence(ctx, n.GetAlterSeqStmt())
	case n.GetCommentStmt() != nil:
		return "COMMENT", s.comment(ctx, n.GetCommentStmt())
	case n.GetViewStmt() != nil:
		return "CREATE VIEW", s.createView(ctx, n.GetViewStmt())
	}
	return "", pgerror.Unsupported("statement " + strings.TrimSuffix(strings.SplitN(n.String(), ":", 2)[0], " "))
}

// deparseExpr turns an expression tree back into SQL text (stored
// defaults and checks).
func deparseExpr(e *pg.Node) (string, error) {
	sel := &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: &pg.SelectStmt{
		TargetList: []*pg.Node{{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: e}}}},
	}}}
	out, err := parse.Deparse(sel)
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(out, "SELECT "), nil
}

// schemaFor picks the schema of a new object: the given one or the first
// existing schema of the search path.
func (s *Session) schemaFor(snap *catalog.Snapshot, rv *pg.RangeVar) (string, error) {
	if sc := rv.GetSchemaname(); sc != "" {
		if _, ok := snap.Schema(s.db, sc); !ok {
			return "", pgerror.New(pgerror.CodeInvalidSchemaName, "schema %q does not exist", sc)
		}
		return sc, nil
	}
	for _, sc := range s.searchPath() {
		if _, ok := snap.Schema(s.db, sc); ok {
			return sc, nil
		}
	}
	return "", pgerror.New(pgerror.CodeInvalidSchemaName, "no schema has been selected to create in")
}

// keySpec is how a primary key column is laid out (YSQL's HASH/ASC/DESC).
type keySpec struct {
	name string
	hash bool
	desc bool
	set  bool // given explicitly
}

func (s *Session) createTable(ctx context.Context, cs *pg.CreateStmt, yb *ybOptions) error {
	s.pendingSeqs, s.pendingUniques, s.pendingFKs = nil, nil, nil
	defer func() { s.pendingSeqs, s.pendingUniques, s.pendingFKs = nil, nil, nil }()
	if len(cs.GetInhRelations()) > 0 || cs.GetPartspec() != nil || cs.GetPartbound() != nil || cs.GetOfTypename() != nil {
		return pgerror.Unsupported("inheritance and partitioned tables")
	}
	if rp := cs.GetRelation().GetRelpersistence(); rp == "t" {
		return pgerror.Unsupported("temporary tables")
	}
	if err := tableOptions(cs.GetOptions()); err != nil {
		return err
	}
	if err := checkTablespace(cs.GetTablespacename()); err != nil {
		return err
	}
	snap, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	schema, err := s.schemaFor(snap, cs.GetRelation())
	if err != nil {
		return err
	}
	name := cs.GetRelation().GetRelname()
	if err := s.relationNameFree(snap, schema, name, false); err != nil {
		if cs.GetIfNotExists() {
			s.notice("NOTICE", "42P07", "relation %q already exists, skipping", name)
			return nil
		}
		return err
	}
	t := &catalog.Table{Database: s.db, Schema: schema, Name: name, NextColID: 1, PKName: objectName(name, "", "pkey")}
	var pk []keySpec
	var tableCons []*pg.Constraint
	for _, el := range cs.GetTableElts() {
		switch {
		case el.GetColumnDef() != nil:
			cd := el.GetColumnDef()
			if t.ColumnIndex(cd.GetColname()) >= 0 {
				return pgerror.New(pgerror.CodeDuplicateColumn, "column %q specified more than once", cd.GetColname())
			}
			col, colPK, err := s.columnDef(ctx, t, cd)
			if err != nil {
				return err
			}
			if colPK {
				if pk != nil {
					return pgerror.New(pgerror.CodeInvalidTableDefinition, "multiple primary keys for table %q are not allowed", name)
				}
				pk = []keySpec{{name: col.Name}}
			}
			t.Columns = append(t.Columns, *col)
		case el.GetConstraint() != nil:
			tableCons = append(tableCons, el.GetConstraint())
		case el.GetTableLikeClause() != nil:
			likePK, err := s.likeTable(snap, t, el.GetTableLikeClause())
			if err != nil {
				return err
			}
			if likePK != nil {
				if pk != nil {
					return pgerror.New(pgerror.CodeInvalidTableDefinition, "multiple primary keys for table %q are not allowed", name)
				}
				pk = likePK
			}
		default:
			return pgerror.Unsupported("this CREATE TABLE element")
		}
	}
	for _, c := range tableCons {
		switch c.GetContype() {
		case pg.ConstrType_CONSTR_PRIMARY:
			if pk != nil {
				return pgerror.New(pgerror.CodeInvalidTableDefinition, "multiple primary keys for table %q are not allowed", name)
			}
			if err := refuseDeferrableKey(c); err != nil {
				return err
			}
			for _, k := range c.GetKeys() {
				pk = append(pk, keySpec{name: k.GetString_().GetSval()})
			}
			if c.GetConname() != "" {
				t.PKName = c.GetConname()
			}
		case pg.ConstrType_CONSTR_CHECK:
			expr, err := deparseExpr(c.GetRawExpr())
			if err != nil {
				return err
			}
			cname := c.GetConname()
			if cname == "" {
				cname = checkName(name, c.GetRawExpr(), t.Checks)
			}
			t.Checks = append(t.Checks, catalog.Check{Name: cname, Expr: expr})
		case pg.ConstrType_CONSTR_UNIQUE:
			req, err := uniqueRequest(c)
			if err != nil {
				return err
			}
			s.pendingUniques = append(s.pendingUniques, req)
		case pg.ConstrType_CONSTR_FOREIGN:
			s.pendingFKs = append(s.pendingFKs, fkRequest{c: c})
		default:
			return pgerror.Unsupported("this table constraint")
		}
	}
	if err := s.checkChecks(ctx, t, 0); err != nil {
		return err
	}
	if yb != nil && yb.pk != nil {
		if pk == nil {
			return pgerror.New(pgerror.CodeSyntaxError, "HASH/ASC/DESC key options need a PRIMARY KEY")
		}
		pk = yb.pk
	}
	if len(t.Columns) == 0 {
		return pgerror.Unsupported("tables without columns")
	}
	if err := checkColumnCount(len(t.Columns)); err != nil {
		return err
	}
	if pk == nil {
		// No primary key: a hidden row id, as YugabyteDB's ybrowid.
		rowID := catalog.Column{Name: "ybrowid", ID: t.NextColID, Type: types.T{OID: types.OIDBytea, Mod: -1}, Hidden: true, NotNull: true}
		t.NextColID++
		t.Columns = append([]catalog.Column{rowID}, t.Columns...)
		t.RowID = true
		t.Key = []catalog.KeyColumn{{Column: 0, Hash: true}}
	} else if err := setKey(t, pk); err != nil {
		return err
	}
	for i := range t.Columns {
		if t.IsKey(i) {
			t.Columns[i].NotNull = true
		}
	}
	part := &masterpb.Partitioning{Kind: masterpb.Partitioning_HASH}
	if !t.Key[0].Hash {
		part.Kind = masterpb.Partitioning_RANGE
	}
	if yb != nil && yb.splitInto > 0 {
		if part.Kind != masterpb.Partitioning_HASH {
			return pgerror.New(pgerror.CodeInvalidTableDefinition, "SPLIT INTO is only for hash-partitioned tables")
		}
		part.NumTablets = uint32(yb.splitInto)
	}
	if yb != nil && len(yb.splitAt) > 0 {
		if part.Kind != masterpb.Partitioning_RANGE {
			return pgerror.New(pgerror.CodeInvalidTableDefinition, "SPLIT AT VALUES is only for range-partitioned tables")
		}
		points, err := s.splitPoints(t, yb.splitAt)
		if err != nil {
			return err
		}
		part.SplitPoints = points
	}
	// UNIQUE constraints: their index tables first, so that the table
	// never exists without them; a new table has no rows to backfill.
	var created []*catalog.Index
	dropCreated := func() {
		for _, ix := range created {
			_ = s.e.cfg.Cache.DropIndexTable(context.WithoutCancel(ctx), t, ix)
		}
	}
	for _, req := range s.pendingUniques {
		if req.name != "" && s.relationExists(snap, schema, req.name) {
			dropCreated()
			return pgerror.New(pgerror.CodeDuplicateTable, "relation %q already exists", req.name)
		}
		ix, err := s.newIndex(ctx, snap, t, req)
		if err == nil {
			for _, o := range created {
				if o.Name == ix.Name {
					err = pgerror.New(pgerror.CodeDuplicateTable, "relation %q already exists", ix.Name)
				}
			}
		}
		var ipart *masterpb.Partitioning
		if err == nil {
			ipart, err = indexPartitioning(ix, 0)
		}
		if err == nil {
			err = s.e.cfg.Cache.CreateIndexTable(ctx, t, ix, ipart)
			if client.IsCode(err, masterpb.MasterError_ALREADY_EXISTS) {
				err = pgerror.New(pgerror.CodeDuplicateTable, "relation %q already exists", ix.Name)
			}
		}
		if err != nil {
			dropCreated()
			return err
		}
		created = append(created, ix)
		t.Indexes = append(t.Indexes, *ix)
	}
	taken := constraintNames(t)
	for _, req := range s.pendingFKs {
		fk, err := s.foreignKey(snap, t, req, taken)
		if err != nil {
			dropCreated()
			return err
		}
		t.ForeignKeys = append(t.ForeignKeys, *fk)
	}
	err = s.e.cfg.Cache.CreateTable(ctx, t, part, false)
	if err != nil {
		dropCreated()
	}
	if client.IsCode(err, masterpb.MasterError_ALREADY_EXISTS) {
		if cs.GetIfNotExists() {
			s.notice("NOTICE", "42P07", "relation %q already exists, skipping", name)
			return nil
		}
		return pgerror.New(pgerror.CodeDuplicateTable, "relation %q already exists", name)
	}
	if err != nil {
		return err
	}
	for _, q := range s.pendingSeqs {
		if err := s.e.cfg.Cache.PutSequence(ctx, q, true); err != nil {
			_ = s.e.cfg.Cache.DropTable(ctx, t)
			return err
		}
	}
	if err := s.fixSelfReferences(ctx, t); err != nil {
		_ = s.e.cfg.Cache.DropTable(context.WithoutCancel(ctx), t)
		return err
	}
	return nil
}

// uniqueRequest is the index a table-level UNIQUE constraint asks for.
func uniqueRequest(c *pg.Constraint) (*indexRequest, error) {
	if err := refuseDeferrableKey(c); err != nil {
		return nil, err
	}
	if c.GetNullsNotDistinct() {
		return nil, pgerror.Unsupported("NULLS NOT DISTINCT")
	}
	if c.GetIndexname() != "" {
		return nil, pgerror.Unsupported("UNIQUE USING INDEX")
	}
	req := &indexRequest{name: c.GetConname(), include: stringList(c.GetIncluding()), unique: true, constraint: true}
	for _, k := range stringList(c.GetKeys()) {
		req.cols = append(req.cols, idxCol{name: k})
	}
	return req, nil
}

// refuseDeferrableKey refuses a DEFERRABLE (or INITIALLY DEFERRED)
// UNIQUE or PRIMARY KEY constraint: their checks are the unique index's,
// which holds one row per key and cannot wait for the statement's end or
// COMMIT as PostgreSQL's do; accepted, the constraint was checked per row
// (UPDATE t SET i = i + 1 failed 23505) and SET CONSTRAINTS did not know it.
func refuseDeferrableKey(c *pg.Constraint) error {
	if c.GetDeferrable() || c.GetInitdeferred() {
		return deferrableKey(c.GetContype())
	}
	return nil
}

func deferrableKey(t pg.ConstrType) error {
	if t == pg.ConstrType_CONSTR_PRIMARY {
		return pgerror.Unsupported("DEFERRABLE PRIMARY KEY")
	}
	return pgerror.Unsupported("DEFERRABLE UNIQUE constraint")
}

func stringList(l []*pg.Node) []string {
	var out []string
	for _, n := range l {
		out = append(out, n.GetString_().GetSval())
	}
	return out
}

// setKey lays out the primary key: YugabyteDB's default is the first
// column HASH and the rest ASC, unless the key says otherwise.
func setKey(t *catalog.Table, pk []keySpec) error {
	anyHash := false
	for _, k := range pk {
		anyHash = anyHash || k.hash
	}
	t.Key = nil
	for i, k := range pk {
		idx := t.ColumnIndex(k.name)
		if idx < 0 {
			return pgerror.New(pgerror.CodeUndefinedColumn, "column %q named in key does not exist", k.name)
		}
		if t.IsKey(idx) {
			return pgerror.New(pgerror.CodeDuplicateColumn, "column %q appears twice in primary key constraint", k.name)
		}
		if err := types.CheckKeyType(t.Columns[idx].Type); err != nil {
			return err
		}
		hash := k.hash
		if !anyHash && !k.set && i == 0 {
			hash = true
		}
		t.Key = append(t.Key, catalog.KeyColumn{Column: idx, Hash: hash, Desc: k.desc})
	}
	for i := 1; i < len(t.Key); i++ {
		if t.Key[i].Hash && !t.Key[i-1].Hash {
			return pgerror.New(pgerror.CodeInvalidTableDefinition, "hash columns must come before range columns in the primary key")
		}
	}
	return nil
}

// columnDef converts a column definition; colPK reports a column-level
// PRIMARY KEY.
func (s *Session) columnDef(ctx context.Context, t *catalog.Table, cd *pg.ColumnDef) (*catalog.Column, bool, error) {
	if err := systemColumnName(cd.GetColname()); err != nil {
		return nil, false, err
	}
	if e := plan.CheckCollation(cd.GetCollClause().GetCollname()); e != nil {
		return nil, false, e
	}
	tn := cd.GetTypeName()
	serial := ""
	if len(tn.GetNames()) > 0 {
		last := strings.ToLower(tn.GetNames()[len(tn.GetNames())-1].GetString_().GetSval())
		switch last {
		case "serial", "serial4":
			serial = "int4"
		case "bigserial", "serial8":
			serial = "int8"
		case "smallserial", "serial2":
			serial = "int2"
		}
	}
	var typ types.T
	var err error
	if serial != "" {
		typ, err = types.ParseType(serial)
	} else {
		typ, err = types.FromTypeName(tn)
	}
	if err != nil {
		return nil, false, err
	}
	if typ.IsArray() {
		return nil, false, pgerror.Unsupported("array columns")
	}
	if ti := typ.Info(); ti != nil && ti.Type == 'p' {
		return nil, false, pgerror.New("42P16", "column \"%s\" has pseudo-type %s", cd.GetColname(), ti.Name)
	}
	col := &catalog.Column{Name: cd.GetColname(), ID: t.NextColID, Type: typ}
	t.NextColID++
	if serial != "" {
		if col.Default, err = s.serialSequence(ctx, t, col.Name, typ); err != nil {
			return nil, false, err
		}
		col.NotNull = true
	}
	pk := false
	var lastFK *pg.Constraint  // the clause DEFERRABLE / INITIALLY apply to
	var lastKey *pg.Constraint // ... or a UNIQUE or PRIMARY KEY
	for _, cn := range cd.GetConstraints() {
		c := cn.GetConstraint()
		if !isDeferrability(c.GetContype()) {
			lastFK, lastKey = nil, nil
		}
		switch c.GetContype() {
		case pg.ConstrType_CONSTR_NOTNULL:
			col.NotNull = true
		case pg.ConstrType_CONSTR_NULL:
			col.NotNull = false
		case pg.ConstrType_CONSTR_DEFAULT:
			if col.Default, err = deparseExpr(c.GetRawExpr()); err != nil {
				return nil, false, err
			}
			if err := s.checkDefault(col); err != nil {
				return nil, false, err
			}
		case pg.ConstrType_CONSTR_PRIMARY:
			pk, lastKey = true, c
		case pg.ConstrType_CONSTR_CHECK:
			expr, err := deparseExpr(c.GetRawExpr())
			if err != nil {
				return nil, false, err
			}
			name := c.GetConname()
			if name == "" {
				name = checkName(t.Name, c.GetRawExpr(), t.Checks)
			}
			t.Checks = append(t.Checks, catalog.Check{Name: name, Expr: expr})
		case pg.ConstrType_CONSTR_UNIQUE:
			if c.GetNullsNotDistinct() {
				return nil, false, pgerror.Unsupported("NULLS NOT DISTINCT")
			}
			s.pendingUniques = append(s.pendingUniques, &indexRequest{name: c.GetConname(), cols: []idxCol{{name: col.Name}},
				include: stringList(c.GetIncluding()), unique: true, constraint: true})
			lastKey = c
		case pg.ConstrType_CONSTR_FOREIGN:
			lastFK = proto.Clone(c).(*pg.Constraint)
			s.pendingFKs = append(s.pendingFKs, fkRequest{c: lastFK, column: col.Name})
		case pg.ConstrType_CONSTR_ATTR_DEFERRABLE, pg.ConstrType_CONSTR_ATTR_NOT_DEFERRABLE,
			pg.ConstrType_CONSTR_ATTR_DEFERRED, pg.ConstrType_CONSTR_ATTR_IMMEDIATE:
			// The grammar gives a column constraint's DEFERRABLE and
			// INITIALLY clauses as constraints of their own after it.
			if lastFK != nil {
				setDeferrability(lastFK, c.GetContype())
			}
			if lastKey != nil && (c.GetContype() == pg.ConstrType_CONSTR_ATTR_DEFERRABLE || c.GetContype() == pg.ConstrType_CONSTR_ATTR_DEFERRED) {
				return nil, false, deferrableKey(lastKey.GetContype())
			}
			if lastFK == nil && lastKey == nil {
				// After a CHECK, NOT NULL, DEFAULT: it was ignored.
				clause := map[pg.ConstrType]string{pg.ConstrType_CONSTR_ATTR_DEFERRABLE: "DEFERRABLE", pg.ConstrType_CONSTR_ATTR_NOT_DEFERRABLE: "NOT DEFERRABLE",
					pg.ConstrType_CONSTR_ATTR_DEFERRED: "INITIALLY DEFERRED", pg.ConstrType_CONSTR_ATTR_IMMEDIATE: "INITIALLY IMMEDIATE"}[c.GetContype()]
				return nil, false, pgerror.New(pgerror.CodeSyntaxError, "misplaced %s clause", clause).WithPosition(c.GetLocation() + 1)
			}
		case pg.ConstrType_CONSTR_IDENTITY:
			q, err := s.ownedSequence(ctx, t, col.Name)
			if err != nil {
				return nil, false, err
			}
			if err := seqOptions(q, c.GetOptions(), typ); err != nil {
				return nil, false, err
			}
			s.pendingSeqs = append(s.pendingSeqs, q)
			col.Default = fmt.Sprintf("nextval('%s')", q.Name)
			col.Identity = c.GetGeneratedWhen()
			col.NotNull = true
		case pg.ConstrType_CONSTR_GENERATED:
			return nil, false, pgerror.Unsupported("generated columns")
		}
	}
	return col, pk, nil
}

// checkChecks validates t's CHECK constraints from the from-th on, when
// they are defined: their expressions (plan.CheckConstraint) and names.
func (s *Session) checkChecks(ctx context.Context, t *catalog.Table, from int) error {
	b, err := s.binder(ctx)
	if err != nil {
		return err
	}
	for i := from; i < len(t.Checks); i++ {
		for j := 0; j < i; j++ {
			if t.Checks[j].Name == t.Checks[i].Name {
				if from > 0 {
					return pgerror.New(pgerror.CodeDuplicateObject, "constraint %q for relation %q already exists", t.Checks[i].Name, t.Name)
				}
				return pgerror.New(pgerror.CodeDuplicateObject, "check constraint %q already exists", t.Checks[i].Name)
			}
		}
		if err := b.CheckConstraint(t, t.Checks[i].Expr); err != nil {
			return err
		}
	}
	return nil
}

// systemColumnName refuses a column named as one of PostgreSQL's system
// columns (42701), which every table has there; it was accepted, and a
// table with a column xmin is one PostgreSQL cannot have.
func systemColumnName(name string) error {
	switch name {
	case "tableoid", "cmax", "xmax", "cmin", "xmin", "ctid":
		return pgerror.New(pgerror.CodeDuplicateColumn, "column name %q conflicts with a system column name", name)
	}
	return nil
}

// checkDefault binds a default once so a bad one fails at CREATE.
func (s *Session) checkDefault(col *catalog.Column) error {
	b, err := s.binder(context.Background())
	if err != nil {
		return err
	}
	if err = b.DefaultDefinition(col.Default); err == nil {
		_, err = b.DefaultExpr(nil, col)
	}
	if err == nil {
		// nextval('no_such_seq') names a relation that must exist now:
		// 42P01 at CREATE, not at every insert.
		var n *pg.Node
		if n, err = storedExpr(col.Default); err == nil {
			forSequenceArgs(n, func(name string) {
				if err == nil {
					_, err = s.RegIn(types.T{OID: types.OIDRegclass, Mod: -1}, name)
				}
			})
		}
	}
	var pe *pgerror.Error
	if errors.As(err, &pe) {
		pe.Position = 0 // a position in the stored text, not the statement's
	}
	return err
}

// splitPoints encodes the rows of SPLIT AT VALUES as the range split
// points of t's first tablets: each row gives values of the leading key
// columns (constants, converted as INSERT converts them), and the rows
// must ascend in the key's order.
func (s *Session) splitPoints(t *catalog.Table, rows [][]*pg.Node) ([][]byte, error) {
	b, err := s.binder(context.Background())
	if err != nil {
		return nil, err
	}
	r := &runner{s: s, ec: s.evalContext(nil)}
	var points [][]byte
	for _, row := range rows {
		if len(row) == 0 || len(row) > len(t.Key) {
			return nil, pgerror.New(pgerror.CodeInvalidTableDefinition, "a split point has %d values for %d primary key columns", len(row), len(t.Key))
		}
		parts := make([]docdb.KeyPart, len(row))
		for i, n := range row {
			k := t.Key[i]
			col := &t.Columns[k.Column]
			e, err := b.ColumnValue(n, col)
			if err != nil {
				return nil, err
			}
			d, err := e.Eval(r.ec, nil)
			if err != nil {
				return nil, err
			}
			if d.Null {
				return nil, pgerror.New(pgerror.CodeInvalidTableDefinition, "a split point cannot be NULL")
			}
			v, err := types.ToKeyStorage(d, col.Type)
			if err != nil {
				return nil, err
			}
			parts[i] = docdb.KeyPart{Value: v, Desc: k.Desc}
		}
		p := client.RangeSplitPoint(parts...)
		if len(points) > 0 && bytes.Compare(points[len(points)-1], p) >= 0 {
			return nil, pgerror.New(pgerror.CodeInvalidTableDefinition, "split points must be in ascending order of the primary key")
		}
		points = append(points, p)
	}
	return points, nil
}

func qualifiedName(list []*pg.Node) (schema, name string) {
	parts := make([]string, len(list))
	for i, n := range list {
		parts[i] = n.GetString_().GetSval()
	}
	switch len(parts) {
	case 1:
		return "", parts[0]
	case 2:
		return parts[0], parts[1]
	}
	return parts[len(parts)-2], parts[len(parts)-1]
}

// findIndex resolves a possibly qualified index name.
func (s *Session) findIndex(snap *catalog.Snapshot, schema, name string) (catalog.IndexRef, bool) {
	if schema != "" {
		return snap.Index(s.db, schema, name)
	}
	for _, sc := range s.searchPath() {
		if r, ok := snap.Index(s.db, sc, name); ok {
			return r, true
		}
	}
	return catalog.IndexRef{}, false
}

// relKind says what the relation schema.name (resolved by the search
// path) is: "table", "view", "sequence" or "index"; "" when there is none.
func (s *Session) relKind(snap *catalog.Snapshot, schema, name string) string {
	if _, ok := s.findTable(snap, schema, name); ok {
		return "table"
	}
	if _, ok := s.findView(snap, schema, name); ok {
		return "view"
	}
	if _, ok := lookup(s, schema, func(sc string) (*catalog.Sequence, bool) { return snap.Sequence(s.db, sc, name) }); ok {
		return "sequence"
	}
	if _, ok := s.findIndex(snap, schema, name); ok {
		return "index"
	}
	return ""
}

// notA is PostgreSQL's error for a DROP naming a relation of another
// kind (42809), with the hint of the DROP that kind takes; nil when the
// name is no relation of another kind.
func (s *Session) notA(snap *catalog.Snapshot, schema, name, want string) error {
	kind := s.relKind(snap, schema, name)
	if kind == "" || kind == want {
		return nil
	}
	return pgerror.New(pgerror.CodeWrongObjectType, "%q is not %s %s", name, articleFor(want), want).
		WithHint("Use DROP %s to remove %s %s.", strings.ToUpper(kind), articleFor(kind), kind)
}

// articleFor is the indefinite article of a relation kind.
func articleFor(kind string) string {
	if kind == "index" {
		return "an"
	}
	return "a"
}

// dropTable drops a table with its indexes.
func (s *Session) dropTable(ctx context.Context, t *catalog.Table) error {
	if err := s.e.cfg.Cache.DropTable(ctx, t); err != nil {
		return err
	}
	delete(s.tables, t.MasterID)
	for i := range t.Indexes {
		delete(s.tables, t.Indexes[i].MasterID)
		if err := s.e.cfg.Cache.DropIndexTable(ctx, t, &t.Indexes[i]); err != nil {
			return err
		}
	}
	return nil
}

// findTable resolves a possibly qualified table name.
func (s *Session) findTable(snap *catalog.Snapshot, schema, name string) (*catalog.Table, bool) {
	return lookup(s, schema, func(sc string) (*catalog.Table, bool) { return snap.Table(s.db, sc, name) })
}

// lookup resolves a possibly qualified name: get in schema if one is
// given, else in the first schema of the search path where get finds it.
func lookup[T any](s *Session, schema string, get func(schema string) (T, bool)) (T, bool) {
	if schema != "" {
		return get(schema)
	}
	for _, sc := range s.searchPath() {
		if v, ok := get(sc); ok {
			return v, true
		}
	}
	var none T
	return none, false
}

func (s *Session) drop(ctx context.Context, ds *pg.DropStmt) (string, error) {
	snap, err := s.snapshot(ctx)
	if err != nil {
		return "", err
	}
	switch ds.GetRemoveType() {
	case pg.ObjectType_OBJECT_TABLE:
		var tables []*catalog.Table
		for _, o := range ds.GetObjects() {
			schema, name := qualifiedName(o.GetList().GetItems())
			t, ok := s.findTable(snap, schema, name)
			if !ok {
				if err := s.notA(snap, schema, name, "table"); err != nil {
					return "", err
				}
				if ds.GetMissingOk() {
					s.notice("NOTICE", "00000", "table %q does not exist, skipping", name)
					continue
				}
				return "", pgerror.New(pgerror.CodeUndefinedTable, "table %q does not exist", name)
			}
			tables = append(tables, t)
		}
		views, err := s.withDependents(snap, nil, tables, ds.GetBehavior() == pg.DropBehavior_DROP_CASCADE)
		if err != nil {
			return "", err
		}
		if err := s.dropReferences(ctx, snap, tables, ds.GetBehavior() == pg.DropBehavior_DROP_CASCADE); err != nil {
			return "", err
		}
		if err := s.e.cfg.Cache.DropViews(ctx, views); err != nil {
			return "", err
		}
		for _, t := range tables {
			if err := s.dropTable(ctx, t); err != nil {
				return "", err
			}
			if err := s.dropOwnedSequences(ctx, snap, t); err != nil {
				return "", err
			}
		}
		return "DROP TABLE", nil
	case pg.ObjectType_OBJECT_SEQUENCE:
		for _, o := range ds.GetObjects() {
			schema, name := qualifiedName(o.GetList().GetItems())
			q, ok := lookup(s, schema, func(sc string) (*catalog.Sequence, bool) { return snap.Sequence(s.db, sc, name) })
			if !ok {
				if err := s.notA(snap, schema, name, "sequence"); err != nil {
					return "", err
				}
				if ds.GetMissingOk() {
					s.notice("NOTICE", "00000", "sequence %q does not exist, skipping", name)
					continue
				}
				return "", pgerror.New(pgerror.CodeUndefinedTable, "sequence %q does not exist", name)
			}
			if err := s.dropSequenceUsers(ctx, q, ds.GetBehavior() == pg.DropBehavior_DROP_CASCADE); err != nil {
				return "", err
			}
			if err := s.e.cfg.Cache.DropSequence(ctx, q); err != nil {
				return "", err
			}
		}
		return "DROP SEQUENCE", nil
	case pg.ObjectType_OBJECT_SCHEMA:
		for _, o := range ds.GetObjects() {
			name := o.GetString_().GetSval()
			if _, ok := snap.Schema(s.db, name); !ok {
				if ds.GetMissingOk() {
					s.notice("NOTICE", "00000", "schema %q does not exist, skipping", name)
					continue
				}
				return "", pgerror.New(pgerror.CodeInvalidSchemaName, "schema %q does not exist", name)
			}
			var inside []*catalog.Table
			for _, t := range snap.Tables[s.db] {
				if t.Schema == name {
					inside = append(inside, t)
				}
			}
			var views []*catalog.View
			for _, v := range snap.Views[s.db] {
				if v.Schema == name {
					views = append(views, v)
				}
			}
			seqs := 0
			for _, q := range snap.Sequences[s.db] {
				if q.Schema == name {
					seqs++
				}
			}
			if len(inside)+len(views)+seqs > 0 && ds.GetBehavior() != pg.DropBehavior_DROP_CASCADE {
				return "", pgerror.New(pgerror.CodeDependentObjectsStillExist, "cannot drop schema %s because other objects depend on it", name).
					WithHint("Use DROP ... CASCADE to drop the dependent objects too.")
			}
			// Views elsewhere that read what goes go too, and foreign keys
			// elsewhere that reference it.
			views, err := s.withDependents(snap, views, inside, true)
			if err != nil {
				return "", err
			}
			if err := s.dropReferences(ctx, snap, inside, true); err != nil {
				return "", err
			}
			if err := s.e.cfg.Cache.DropViews(ctx, views); err != nil {
				return "", err
			}
			for _, t := range inside {
				if err := s.dropTable(ctx, t); err != nil {
					return "", err
				}
			}
			if err := s.e.cfg.Cache.DropSchema(ctx, s.db, name); err != nil {
				return "", err
			}
		}
		return "DROP SCHEMA", nil
	case pg.ObjectType_OBJECT_INDEX:
		if ds.GetConcurrent() && len(ds.GetObjects()) > 1 {
			return "", pgerror.New(pgerror.CodeFeatureNotSupported, "DROP INDEX CONCURRENTLY does not support dropping multiple objects")
		}
		if ds.GetConcurrent() && ds.GetBehavior() == pg.DropBehavior_DROP_CASCADE {
			return "", pgerror.New(pgerror.CodeFeatureNotSupported, "DROP INDEX CONCURRENTLY does not support CASCADE")
		}
		var refs []catalog.IndexRef
		for _, o := range ds.GetObjects() {
			schema, name := qualifiedName(o.GetList().GetItems())
			ref, ok := s.findIndex(snap, schema, name)
			if !ok {
				if err := s.notA(snap, schema, name, "index"); err != nil {
					return "", err
				}
				if ds.GetMissingOk() {
					s.notice("NOTICE", "00000", "index %q does not exist, skipping", name)
					continue
				}
				return "", pgerror.New(pgerror.CodeUndefinedObject, "index %q does not exist", name)
			}
			if ref.Index.Constraint {
				return "", pgerror.New(pgerror.CodeDependentObjectsStillExist, "cannot drop index %s because constraint %s on table %s requires it",
					ref.Index.Name, ref.Index.Name, ref.Table.Name).
					WithHint("You can drop constraint %s on table %s instead.", ref.Index.Name, ref.Table.Name)
			}
			refs = append(refs, ref)
		}
		for _, ref := range refs {
			what := "index " + ref.Index.Name
			if err := s.dropIndexReferences(ctx, snap, ref.Table, ref.Index, what, ds.GetBehavior() == pg.DropBehavior_DROP_CASCADE); err != nil {
				return "", err
			}
		}
		for _, ref := range refs {
			if err := s.dropIndex(ctx, ref); err != nil {
				return "", err
			}
		}
		return "DROP INDEX", nil
	case pg.ObjectType_OBJECT_VIEW:
		return "DROP VIEW", s.dropViews(ctx, snap, ds)
	}
	return "", pgerror.Unsupported("DROP " + strings.TrimPrefix(ds.GetRemoveType().String(), "OBJECT_"))
}

func (s *Session) dropDatabase(ctx context.Context, dd *pg.DropdbStmt) error {
	name := dd.GetDbname()
	snap, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	if _, ok := snap.Databases[name]; !ok {
		if dd.GetMissingOk() {
			s.notice("NOTICE", "00000", "database %q does not exist, skipping", name)
			return nil
		}
		return pgerror.New(pgerror.CodeInvalidCatalogName, "database %q does not exist", name)
	}
	if name == s.db {
		return pgerror.New(pgerror.CodeObjectInUse, "cannot drop the currently open database")
	}
	if err := s.e.cfg.Cache.DropViews(ctx, byName(snap.Views[name])); err != nil {
		return err
	}
	for _, t := range snap.Tables[name] {
		if err := s.dropTable(ctx, t); err != nil {
			return err
		}
	}
	return s.e.cfg.Cache.DropDatabase(ctx, name)
}

// truncate empties tables by recreating them: new tablets, no data to
// delete row by row.
func (s *Session) truncate(ctx context.Context, ts *pg.TruncateStmt) error {
	snap, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	tables, err := s.truncateTables(snap, ts)
	if err != nil {
		return err
	}
	moved := map[uint32]string{}
	for _, t := range tables {
		if err := s.recreate(ctx, t, t); err != nil {
			return err
		}
		moved[t.MasterID] = t.QualifiedName()
	}
	if err := s.restartIdentity(ctx, snap, ts, tables); err != nil {
		return err
	}
	for _, t := range tables {
		if len(snap.ReferencedBy(t)) > 0 {
			return s.repointForeignKeys(ctx, moved)
		}
	}
	return nil
}

// truncateTables resolves TRUNCATE's tables, each once (a table named
// twice was recreated twice, and the second time was not found), with
// those CASCADE adds.
func (s *Session) truncateTables(snap *catalog.Snapshot, ts *pg.TruncateStmt) ([]*catalog.Table, error) {
	var tables []*catalog.Table
	seen := map[string]bool{}
	for _, r := range ts.GetRelations() {
		rv := r.GetRangeVar()
		t, ok := s.findTable(snap, rv.GetSchemaname(), rv.GetRelname())
		if !ok {
			return nil, pgerror.New(pgerror.CodeUndefinedTable, "relation %q does not exist", rv.GetRelname())
		}
		if !seen[t.QualifiedName()] {
			seen[t.QualifiedName()] = true
			tables = append(tables, t)
		}
	}
	return s.truncateReferences(snap, tables, ts.GetBehavior() == pg.DropBehavior_DROP_CASCADE)
}

// restartIdentity restarts the sequences the truncated tables own (SERIAL
// and identity columns) for TRUNCATE ... RESTART IDENTITY, which was
// ignored.
func (s *Session) restartIdentity(ctx context.Context, snap *catalog.Snapshot, ts *pg.TruncateStmt, tables []*catalog.Table) error {
	if !ts.GetRestartSeqs() {
		return nil
	}
	for _, t := range tables {
		for _, q := range snap.Sequences[t.Database] {
			if q.Schema == t.Schema && strings.HasPrefix(q.OwnedBy, t.Name+".") {
				if err := s.setval(ctx, q, q.Start, false); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// truncateInTxn deletes every row of the tables in tx.
func (s *Session) truncateInTxn(ctx context.Context, tx *client.Txn, ts *pg.TruncateStmt) error {
	snap, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	tables, err := s.truncateTables(snap, ts)
	if err != nil {
		return err
	}
	for _, t := range tables {
		// Every table on either side of a foreign key goes: nothing to
		// check or cascade.
		run := &runner{s: s, ctx: ctx, txn: tx, ec: s.evalContext(nil), skipFKs: true}
		if _, _, err := run.delete(&plan.Delete{Table: t, Source: plan.NewScan(t)}); err != nil {
			return err
		}
	}
	return s.restartIdentity(ctx, snap, ts, tables)
}

// recreate drops old and creates next (same name) with old's partitioning,
// and new, empty tables for its indexes.
func (s *Session) recreate(ctx context.Context, old, next *catalog.Table) error {
	tbl, err := s.openTable(ctx, old)
	if err != nil {
		return err
	}
	part := tbl.Info().GetPartitioning()
	parts := make([]*masterpb.Partitioning, len(old.Indexes))
	for i := range old.Indexes {
		itbl, err := s.openIndex(ctx, old, &old.Indexes[i])
		if err != nil {
			return err
		}
		parts[i] = itbl.Info().GetPartitioning()
	}
	if err := s.dropTable(ctx, old); err != nil {
		return err
	}
	cp := cloneTable(next)
	cp.Version = 0
	for i := range cp.Indexes {
		if err := s.e.cfg.Cache.CreateIndexTable(ctx, cp, &cp.Indexes[i], parts[i]); err != nil {
			return err
		}
	}
	return s.e.cfg.Cache.CreateTable(ctx, cp, part, false)
}

// maxColumns is PostgreSQL's limit on a table's columns.
const maxColumns = 1600

func checkColumnCount(n int) error {
	if n > maxColumns {
		return pgerror.New(pgerror.CodeTooManyColumns, "tables can have at most %d columns", maxColumns)
	}
	return nil
}
