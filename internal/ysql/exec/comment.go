package exec

import (
	"context"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// pg_namespace's oid: the catalog of the schemas comments describe.
const oidPgNamespace = 2615

// comment runs COMMENT ON a table, view, index, sequence, column or
// schema; IS NULL (or an empty text) removes the comment.
func (s *Session) comment(ctx context.Context, cs *pg.CommentStmt) error {
	snap, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	id := catalog.CommentID{Database: s.db, ClassOID: oidPgClass}
	names := stringList(cs.GetObject().GetList().GetItems())
	switch typ := cs.GetObjtype(); typ {
	case pg.ObjectType_OBJECT_TABLE, pg.ObjectType_OBJECT_VIEW, pg.ObjectType_OBJECT_INDEX, pg.ObjectType_OBJECT_SEQUENCE:
		schema, name := qualified(names)
		if id.ObjOID, err = s.relationOID(snap, typ, schema, name); err != nil {
			return err
		}
	case pg.ObjectType_OBJECT_COLUMN:
		if len(names) < 2 {
			return pgerror.New(pgerror.CodeSyntaxError, "column name must be qualified")
		}
		schema, table := qualified(names[:len(names)-1])
		col := names[len(names)-1]
		t, ok := s.findTable(snap, schema, table)
		if !ok {
			return pgerror.New(pgerror.CodeUndefinedTable, "relation %q does not exist", table)
		}
		i := t.ColumnIndex(col)
		if i < 0 {
			return pgerror.New(pgerror.CodeUndefinedColumn, "column %q of relation %q does not exist", col, table)
		}
		id.ObjOID, id.Column = t.OID(), t.Columns[i].ID
	case pg.ObjectType_OBJECT_SCHEMA:
		name := cs.GetObject().GetString_().GetSval()
		oid, ok := namespaces(s, snap)[name]
		if !ok {
			return pgerror.New(pgerror.CodeInvalidSchemaName, "schema %q does not exist", name)
		}
		id.ClassOID, id.ObjOID = oidPgNamespace, oid
	default:
		return pgerror.Unsupported("COMMENT ON " + strings.TrimPrefix(typ.String(), "OBJECT_"))
	}
	return s.e.cfg.Cache.SetComment(ctx, id, cs.GetComment())
}

// qualified splits [schema.]name.
func qualified(names []string) (schema, name string) {
	if len(names) == 0 {
		return "", ""
	}
	if len(names) > 1 {
		schema = names[len(names)-2]
	}
	return schema, names[len(names)-1]
}

// relationOID is the pg_class oid of the relation of kind typ named
// [schema.]name, or PostgreSQL's error when there is none.
func (s *Session) relationOID(snap *catalog.Snapshot, typ pg.ObjectType, schema, name string) (uint32, error) {
	switch typ {
	case pg.ObjectType_OBJECT_TABLE:
		if t, ok := s.findTable(snap, schema, name); ok {
			return t.OID(), nil
		}
	case pg.ObjectType_OBJECT_VIEW:
		if v, ok := s.findView(snap, schema, name); ok {
			return v.OID, nil
		}
	case pg.ObjectType_OBJECT_INDEX:
		if r, ok := s.findIndex(snap, schema, name); ok {
			return r.Index.OID(), nil
		}
	case pg.ObjectType_OBJECT_SEQUENCE:
		if q, ok := lookup(s, schema, func(sc string) (*catalog.Sequence, bool) { return snap.Sequence(s.db, sc, name) }); ok {
			return q.OID, nil
		}
	}
	return 0, pgerror.New(pgerror.CodeUndefinedTable, "relation %q does not exist", name)
}

// descriptionRows are pg_description's rows: the comments of the
// session's database whose objects are still there (a column's at its
// attnum now).
func descriptionRows(s *Session, snap *catalog.Snapshot) []plan.Row {
	var out []plan.Row
	for id, text := range snap.Comments {
		if id.Database != s.db {
			continue
		}
		sub := 0
		if id.Column != 0 {
			t, ok := snap.ByOID[id.ObjOID]
			if !ok || t.ColumnByID(id.Column) < 0 {
				continue
			}
			sub = attnum(t, t.ColumnByID(id.Column))
		}
		out = append(out, plan.Row{dOID(id.ObjOID), dOID(id.ClassOID), dInt(int64(sub)), dStr(text)})
	}
	return out
}

// describedAs is the comment on (class, oid) or its column at attnum sub.
func describedAs(s *Session, snap *catalog.Snapshot, class, oid uint32, sub int64) types.Datum {
	id := catalog.CommentID{Database: s.db, ClassOID: class, ObjOID: oid}
	if sub != 0 {
		t, ok := snap.ByOID[oid]
		if !ok {
			return types.NullDatum
		}
		for i, c := range t.Columns {
			if !c.Hidden && int64(attnum(t, i)) == sub {
				id.Column = c.ID
			}
		}
		if id.Column == 0 {
			return types.NullDatum
		}
	}
	if text, ok := snap.Comments[id]; ok {
		return types.DString(text)
	}
	return types.NullDatum
}
