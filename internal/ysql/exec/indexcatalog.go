package exec

import (
	"context"
	"fmt"
	"strings"

	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// pg_catalog rows of secondary indexes and UNIQUE constraints.

// uniqueConstraintOID is the pg_constraint oid of the UNIQUE constraint an
// index backs (below pkeyOID's range, above every table oid).
func uniqueConstraintOID(ix *catalog.Index) uint32 { return ix.OID() + 1<<21 }

// uniqueConstraints are the indexes of t that back UNIQUE constraints.
func uniqueConstraints(t *catalog.Table) []*catalog.Index {
	var out []*catalog.Index
	for i := range t.Indexes {
		if t.Indexes[i].Constraint {
			out = append(out, &t.Indexes[i])
		}
	}
	return out
}

// indexAttnums are the pg_attribute numbers of an index's key columns
// (then its INCLUDE columns, with include), as an int2 array/vector.
func indexAttnums(t *catalog.Table, ix *catalog.Index, include bool) []types.Datum {
	var out []types.Datum
	for _, c := range ix.Columns {
		out = append(out, dInt(int64(attnum(t, t.ColumnByID(c.ID)))))
	}
	if include {
		for _, id := range ix.Include {
			out = append(out, dInt(int64(attnum(t, t.ColumnByID(id)))))
		}
	}
	return out
}

// indexRows are the pg_index rows of the secondary indexes (the columns of
// the pg_index definition in virtual.go).
func indexRows(s *Session, snap *catalog.Snapshot) []plan.Row {
	var out []plan.Row
	for _, t := range sortedTables(s, snap) {
		for i := range t.Indexes {
			ix := &t.Indexes[i]
			pred := dNull()
			if ix.Predicate != "" {
				pred = dStr(ix.Predicate)
			}
			var opts, zeros []types.Datum
			for _, c := range ix.Columns {
				opts = append(opts, dInt(indOption(catalog.KeyColumn{Hash: c.Hash, Desc: c.Desc})))
				zeros = append(zeros, dOID(0))
			}
			out = append(out, plan.Row{dOID(ix.OID()), dOID(t.OID()), dInt(int64(len(ix.Columns) + len(ix.Include))),
				dInt(int64(len(ix.Columns))), dBool(ix.Unique), dBool(false), dBool(false), dBool(true), dBool(false),
				dBool(ix.Readable()), dBool(ix.Inserts()), dBool(true), dBool(false),
				types.DArray(indexAttnums(t, ix, true)), dNull(), pred, dBool(false), dBool(false),
				types.DArray(opts), types.DArray(zeros), types.DArray(zeros)})
		}
	}
	return out
}

// uniqueConstraintRows are t's pg_constraint rows of UNIQUE constraints.
func uniqueConstraintRows(t *catalog.Table, ns map[string]uint32) []plan.Row {
	var out []plan.Row
	for _, ix := range uniqueConstraints(t) {
		out = append(out, plan.Row{dOID(uniqueConstraintOID(ix)), dStr(ix.Name), dOID(ns[t.Schema]), dChar("u"), dBool(false),
			dBool(false), dBool(true), dOID(t.OID()), dOID(0), dOID(ix.OID()), dOID(0),
			types.DArray(indexAttnums(t, ix, false)), dNull(), dNull()})
	}
	return out
}

// indexByOID finds a secondary index by its pg_class oid.
func (s *Session) indexByOID(oid uint32) (catalog.IndexRef, bool) {
	snap, err := s.snapshot(context.Background())
	if err != nil {
		return catalog.IndexRef{}, false
	}
	ref, ok := snap.IndexByOID[oid]
	return ref, ok && ref.Table.Database == s.db
}

// indexColumnsText renders an index's key columns as YSQL prints them
// (see keyColumnsText).
func indexColumnsText(t *catalog.Table, ix *catalog.Index) string {
	cols := make([]keyColumnText, len(ix.Columns))
	for i, c := range ix.Columns {
		cols[i] = keyColumnText{name: t.Columns[t.ColumnByID(c.ID)].Name, hash: c.Hash, desc: c.Desc}
	}
	return keyColumnsText(cols)
}

// pkeyDef is pg_get_indexdef of t's primary-key index.
func pkeyDef(t *catalog.Table) string {
	return fmt.Sprintf("CREATE UNIQUE INDEX %s ON %s USING lsm (%s)", t.PKName, t.QualifiedName(), keyText(t))
}

// indexDef is pg_get_indexdef of a secondary index.
func (s *Session) indexDef(oid uint32) (string, bool) {
	ref, ok := s.indexByOID(oid)
	if !ok {
		return "", false
	}
	t, ix := ref.Table, ref.Index
	var b strings.Builder
	b.WriteString("CREATE ")
	if ix.Unique {
		b.WriteString("UNIQUE ")
	}
	fmt.Fprintf(&b, "INDEX %s ON %s USING lsm (%s)", ix.Name, t.QualifiedName(), indexColumnsText(t, ix))
	if len(ix.Include) > 0 {
		var names []string
		for _, id := range ix.Include {
			names = append(names, t.Columns[t.ColumnByID(id)].Name)
		}
		fmt.Fprintf(&b, " INCLUDE (%s)", strings.Join(names, ", "))
	}
	if ix.Predicate != "" {
		fmt.Fprintf(&b, " WHERE (%s)", ix.Predicate)
	}
	return b.String(), true
}

// uniqueConstraintDef is pg_get_constraintdef of a UNIQUE constraint.
func (s *Session) uniqueConstraintDef(oid uint32) (string, bool) {
	if oid < 1<<21 {
		return "", false
	}
	ref, ok := s.indexByOID(oid - 1<<21)
	if !ok || !ref.Index.Constraint {
		return "", false
	}
	var names []string
	for _, c := range ref.Index.Columns {
		names = append(names, ref.Table.Columns[ref.Table.ColumnByID(c.ID)].Name)
	}
	return "UNIQUE (" + strings.Join(names, ", ") + ")", true
}
