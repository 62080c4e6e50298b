package exec

import (
	"context"

	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Object sizes, as YugabyteDB reports them: a relation's size is the sum
// over its storage table's tablets of the size each tablet's leader last
// reported to the master in its heartbeat (its sstables plus what it wrote
// to the memtable since the engine's last flush), so a size is about one
// heartbeat interval old. The primary key is part of the table (its
// index relation is 0 bytes), and so are TOAST and the free-space and
// visibility maps of PostgreSQL: only the main fork has bytes. Catalog
// relations, views, sequences and other relations without a storage table
// of their own are 0 bytes.

// sizeArgOID reports whether a size function's argument of type t is an
// OID (oid, reg*, integers) rather than a name.
func sizeArgOID(t types.T) bool {
	switch t.OID {
	case types.OIDOID, types.OIDInt2, types.OIDInt4, types.OIDInt8:
		return true
	}
	return types.IsReg(t.OID)
}

// relationSize evaluates pg_relation_size (fork main), pg_table_size,
// pg_indexes_size and pg_total_relation_size for the relation arg names:
// NULL for an OID that names no relation, as in PostgreSQL.
func (s *Session) relationSize(name string, argType types.T, arg types.Datum) (types.Datum, error) {
	ctx := context.Background()
	oid := uint32(arg.I)
	if !sizeArgOID(argType) {
		d, err := s.RegIn(types.T{OID: types.OIDRegclass, Mod: -1}, arg.S)
		if err != nil {
			return types.NullDatum, err
		}
		oid = uint32(d.I)
	}
	snap, err := s.snapshot(ctx)
	if err != nil {
		return types.NullDatum, err
	}
	var table, indexes []uint32
	if t, ok := snap.ByOID[oid]; ok && t.Database == s.db {
		if name != "pg_indexes_size" {
			table = []uint32{t.MasterID}
		}
		if name == "pg_indexes_size" || name == "pg_total_relation_size" {
			indexes = indexTables(t)
		}
	} else if r, ok := snap.IndexByOID[oid]; ok && r.Table.Database == s.db {
		// An index alone: its storage table (it has no indexes).
		if name != "pg_indexes_size" && r.Index.MasterID != 0 {
			table = []uint32{r.Index.MasterID}
		}
	} else if !s.hasRelationOID(snap, oid) {
		return types.NullDatum, nil
	}
	ids := append(table, indexes...)
	if len(ids) == 0 {
		return types.DInt(0), nil
	}
	return s.sumTableSizes(ctx, ids)
}

// hasRelationOID reports whether pg_class has a row for oid.
func (s *Session) hasRelationOID(snap *catalog.Snapshot, oid uint32) bool {
	for _, r := range s.relationRows(snap) {
		if uint32(r[0].I) == oid {
			return true
		}
	}
	return false
}

// indexTables are the storage tables of t's secondary indexes.
func indexTables(t *catalog.Table) []uint32 {
	var out []uint32
	for i := range t.Indexes {
		if id := t.Indexes[i].MasterID; id != 0 {
			out = append(out, id)
		}
	}
	return out
}

// sumTableSizes asks the master, through the client, for the sizes of
// storage tables and adds them up.
func (s *Session) sumTableSizes(ctx context.Context, ids []uint32) (types.Datum, error) {
	sizes, err := s.e.cfg.Client.TableSizes(ctx, ids)
	if err != nil {
		return types.NullDatum, err
	}
	var n uint64
	for _, v := range sizes {
		n += v
	}
	return types.DInt(int64(n)), nil
}

// databaseSize evaluates pg_database_size(name or oid): every table and
// index of the database.
func (s *Session) databaseSize(argType types.T, arg types.Datum) (types.Datum, error) {
	ctx := context.Background()
	snap, err := s.snapshot(ctx)
	if err != nil {
		return types.NullDatum, err
	}
	var db *catalog.Database
	if sizeArgOID(argType) {
		for _, d := range snap.Databases {
			if int64(d.OID) == arg.I {
				db = d
			}
		}
		if db == nil {
			return types.NullDatum, pgerror.New(pgerror.CodeInvalidCatalogName, "database with OID %d does not exist", arg.I)
		}
	} else if db = snap.Databases[arg.S]; db == nil {
		return types.NullDatum, pgerror.New(pgerror.CodeInvalidCatalogName, "database %q does not exist", arg.S)
	}
	var ids []uint32
	for _, t := range snap.Tables[db.Name] {
		ids = append(append(ids, t.MasterID), indexTables(t)...)
	}
	if len(ids) == 0 {
		return types.DInt(0), nil
	}
	return s.sumTableSizes(ctx, ids)
}

// sizeFunc builds the object size functions.
func (s *Session) sizeFunc(name string, args []plan.Expr) (plan.Expr, bool, error) {
	tInt8 := types.T{OID: types.OIDInt8, Mod: -1}
	var f func(v []types.Datum) (types.Datum, error)
	switch {
	case name == "pg_relation_size" && (len(args) == 1 || len(args) == 2),
		(name == "pg_table_size" || name == "pg_total_relation_size" || name == "pg_indexes_size") && len(args) == 1:
		f = func(v []types.Datum) (types.Datum, error) {
			main := true
			if len(v) == 2 {
				switch v[1].S {
				case "main":
				case "fsm", "vm", "init":
					main = false
				default:
					return types.NullDatum, pgerror.New(pgerror.CodeInvalidParameterValue, "invalid fork name").
						WithHint("Valid fork names are \"main\", \"fsm\", \"vm\", and \"init\".")
				}
			}
			d, err := s.relationSize(name, args[0].Type(), v[0])
			if err != nil || d.Null || main {
				return d, err
			}
			return types.DInt(0), nil
		}
	case name == "pg_database_size" && len(args) == 1:
		f = func(v []types.Datum) (types.Datum, error) { return s.databaseSize(args[0].Type(), v[0]) }
	default:
		return nil, false, nil
	}
	return &plan.FuncExpr{Name: name, Args: args, T: tInt8, Strict: true, Volatile: true,
		Fn: func(_ *plan.EvalContext, v []types.Datum) (types.Datum, error) { return f(v) }}, true, nil
}
