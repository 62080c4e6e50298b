package exec

import (
	"slices"
	"strings"

	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// pg_catalog and information_schema rows of foreign keys.

// fkOID is the pg_constraint oid of t's i-th foreign key: odd multiples
// of 1<<21 above the CHECK constraints' even ones (checkOID).
func fkOID(t *catalog.Table, i int) uint32 { return t.OID() + uint32(4+i)<<22 + 1<<21 }

func yesNo(b bool) types.Datum {
	if b {
		return dStr("YES")
	}
	return dStr("NO")
}

// fkAttnums are the pg_attribute numbers of columns (by id) of t.
func fkAttnums(t *catalog.Table, ids []uint32) types.Datum {
	out := make([]types.Datum, len(ids))
	for i, id := range ids {
		out[i] = dInt(int64(attnum(t, t.ColumnByID(id))))
	}
	return types.DArray(out)
}

// fkParentOf is the parent of fk (declared on t).
func fkParentOf(snap *catalog.Snapshot, t *catalog.Table, fk *catalog.ForeignKey) (*catalog.Table, bool) {
	if fk.RefTable == t.MasterID {
		return t, true
	}
	return snap.TableByID(fk.RefTable)
}

// eachForeignKey calls fn for every foreign key of the session's database
// (the i-th of t), in table order.
func eachForeignKey(s *Session, snap *catalog.Snapshot, fn func(t, parent *catalog.Table, fk *catalog.ForeignKey, i int)) {
	for _, t := range sortedTables(s, snap) {
		for i := range t.ForeignKeys {
			if parent, ok := fkParentOf(snap, t, &t.ForeignKeys[i]); ok {
				fn(t, parent, &t.ForeignKeys[i], i)
			}
		}
	}
}

// referencedKey is the key that makes fk's referenced columns unique: its
// columns in order, its name and the pg_class oid of its index.
func referencedKey(parent *catalog.Table, fk *catalog.ForeignKey) (ids []uint32, name string, indexOID uint32) {
	if primaryKeyIs(parent, fk.RefColumns) {
		return primaryKeyIDs(parent), parent.PKName, pkeyOID(parent)
	}
	ix := fkUniqueIndex(parent, fk.RefColumns)
	if ix == nil {
		return nil, "", 0
	}
	for _, c := range ix.Columns {
		ids = append(ids, c.ID)
	}
	return ids, ix.Name, ix.OID()
}

// withoutFKColumns gives the pg_constraint rows of other constraints the
// foreign-key columns, as PostgreSQL fills them.
func withoutFKColumns(rows []plan.Row) []plan.Row {
	for i, r := range rows {
		rows[i] = append(r, dChar(" "), dChar(" "), dChar(" "), dNull(), dOID(0), dBool(true), dInt(0), dBool(false))
	}
	return rows
}

// fkConstraintRows are the pg_constraint rows of the foreign keys.
func fkConstraintRows(s *Session, snap *catalog.Snapshot) []plan.Row {
	ns := namespaces(s, snap)
	var out []plan.Row
	eachForeignKey(s, snap, func(t, parent *catalog.Table, fk *catalog.ForeignKey, i int) {
		_, _, index := referencedKey(parent, fk)
		out = append(out, plan.Row{dOID(fkOID(t, i)), dStr(fk.Name), dOID(ns[t.Schema]), dChar("f"), dBool(fk.Deferrable),
			dBool(fk.Deferred), dBool(!fk.NotValid), dOID(t.OID()), dOID(0), dOID(index), dOID(parent.OID()),
			fkAttnums(t, fk.Columns), dNull(), dNull(), dChar(fk.OnUpdate), dChar(fk.OnDelete), dChar("s"),
			fkAttnums(parent, fk.RefColumns), dOID(0), dBool(true), dInt(0), dBool(true)})
	})
	return out
}

// fkConstraintDef is pg_get_constraintdef of a foreign key.
func (s *Session) fkConstraintDef(snap *catalog.Snapshot, oid uint32) (def string, ok bool) {
	eachForeignKey(s, snap, func(t, parent *catalog.Table, fk *catalog.ForeignKey, i int) {
		if fkOID(t, i) == oid {
			def, ok = foreignKeyDef(s, snap, t, parent, fk), true
		}
	})
	return def, ok
}

// foreignKeyDef prints a foreign key as PostgreSQL's ruleutils does.
func foreignKeyDef(s *Session, snap *catalog.Snapshot, t, parent *catalog.Table, fk *catalog.ForeignKey) string {
	var b strings.Builder
	b.WriteString("FOREIGN KEY (" + columnNames(t, fk.Columns) + ") REFERENCES ")
	name := quoteIdentIfNeeded(parent.Name)
	if found, ok := s.findTable(snap, "", parent.Name); !ok || found.MasterID != parent.MasterID {
		name = quoteIdentIfNeeded(parent.Schema) + "." + name
	}
	b.WriteString(name + "(" + columnNames(parent, fk.RefColumns) + ")")
	if fk.OnUpdate != catalog.FKNoAction {
		b.WriteString(" ON UPDATE " + actionText(fk.OnUpdate))
	}
	if fk.OnDelete != catalog.FKNoAction {
		b.WriteString(" ON DELETE " + actionText(fk.OnDelete))
	}
	if fk.Deferrable {
		b.WriteString(" DEFERRABLE")
	}
	if fk.Deferred {
		b.WriteString(" INITIALLY DEFERRED")
	}
	b.WriteString(notValid(fk.NotValid))
	return b.String()
}

// notValid ends the definition of a constraint added NOT VALID, as
// pg_get_constraintdef does.
func notValid(b bool) string {
	if b {
		return " NOT VALID"
	}
	return ""
}

func columnNames(t *catalog.Table, ids []uint32) string {
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = quoteIdentIfNeeded(t.Columns[t.ColumnByID(id)].Name)
	}
	return strings.Join(names, ", ")
}

func actionText(a string) string {
	switch a {
	case catalog.FKRestrict:
		return "RESTRICT"
	case catalog.FKCascade:
		return "CASCADE"
	case catalog.FKSetNull:
		return "SET NULL"
	case catalog.FKSetDefault:
		return "SET DEFAULT"
	}
	return "NO ACTION"
}

// tableConstraintExtras fills information_schema.table_constraints'
// is_deferrable, initially_deferred, enforced and nulls_distinct.
func tableConstraintExtras(rows []plan.Row) []plan.Row {
	for i, r := range rows {
		if len(r) == 7 {
			r = append(r, dStr("NO"), dStr("NO"))
		}
		distinct := dNull()
		if r[6].S == "UNIQUE" {
			distinct = dStr("YES")
		}
		rows[i] = append(r, dStr("YES"), distinct)
	}
	return rows
}

// withNullPosition gives key_column_usage rows of primary and unique keys
// their NULL position_in_unique_constraint.
func withNullPosition(rows []plan.Row) []plan.Row {
	for i, r := range rows {
		rows[i] = append(r, dNull())
	}
	return rows
}

// fkKeyColumnRows are key_column_usage's rows of foreign keys: each
// referencing column with its referenced column's position in the unique
// key.
func fkKeyColumnRows(s *Session, snap *catalog.Snapshot) []plan.Row {
	var out []plan.Row
	eachForeignKey(s, snap, func(t, parent *catalog.Table, fk *catalog.ForeignKey, _ int) {
		unique, _, _ := referencedKey(parent, fk)
		for j, id := range fk.Columns {
			pos := slices.Index(unique, fk.RefColumns[j]) + 1
			out = append(out, plan.Row{dStr(s.db), dStr(t.Schema), dStr(fk.Name), dStr(s.db), dStr(t.Schema), dStr(t.Name),
				dStr(t.Columns[t.ColumnByID(id)].Name), dInt(int64(j + 1)), dInt(int64(pos))})
		}
	})
	return out
}

// referentialConstraintRows are information_schema.referential_constraints.
func referentialConstraintRows(s *Session, snap *catalog.Snapshot) []plan.Row {
	var out []plan.Row
	eachForeignKey(s, snap, func(t, parent *catalog.Table, fk *catalog.ForeignKey, _ int) {
		_, unique, _ := referencedKey(parent, fk)
		out = append(out, plan.Row{dStr(s.db), dStr(t.Schema), dStr(fk.Name), dStr(s.db), dStr(parent.Schema),
			dStr(unique), dStr("NONE"), dStr(actionText(fk.OnUpdate)), dStr(actionText(fk.OnDelete))})
	})
	return out
}
