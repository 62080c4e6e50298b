package exec

import (
	"context"
	"strings"

	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// sessionFunc resolves the functions whose value is the session's.
func (s *Session) sessionFunc(name string, args []plan.Expr) (plan.Expr, bool, error) {
	text := func(v string) (plan.Expr, bool, error) {
		return &plan.Const{T: types.T{OID: types.OIDName, Mod: -1}, D: types.DString(v)}, true, nil
	}
	if e, ok, err := s.seqFunc(name, args); ok || err != nil {
		return e, ok, err
	}
	if e, ok, err := s.catalogFunc(name, args); ok || err != nil {
		return e, ok, err
	}
	switch {
	case name == "current_schemas" && len(args) == 1:
		// The search path's existing schemas, with pg_catalog first when
		// asked for implicit ones.
		return &plan.FuncExpr{Name: name, Args: args, T: types.ArrayOf(types.T{OID: types.OIDName, Mod: -1}), Strict: true,
			Fn: func(ec *plan.EvalContext, vals []types.Datum) (types.Datum, error) {
				var out []types.Datum
				if vals[0].Bool() {
					out = append(out, types.DString("pg_catalog"))
				}
				snap, err := s.snapshot(context.Background())
				if err != nil {
					return types.NullDatum, err
				}
				for _, sc := range s.searchPath() {
					if _, ok := snap.Schema(s.db, sc); ok {
						out = append(out, types.DString(sc))
					}
				}
				return types.DArray(out), nil
			}}, true, nil
	case name == "array_position" && len(args) == 2 && args[0].Type().IsArray():
		elem := args[0].Type().Elem()
		return &plan.FuncExpr{Name: name, Args: args, T: types.T{OID: types.OIDInt4, Mod: -1},
			Fn: func(ec *plan.EvalContext, vals []types.Datum) (types.Datum, error) {
				if vals[0].Null {
					return types.NullDatum, nil
				}
				for i, e := range vals[0].A {
					if e.Null && vals[1].Null || !e.Null && !vals[1].Null && types.Compare(e, vals[1], elem) == 0 {
						return types.DInt(int64(i + 1)), nil
					}
				}
				return types.NullDatum, nil
			}}, true, nil
	case name == "pg_get_expr" && (len(args) == 2 || len(args) == 3):
		// pg_attrdef.adbin and pg_constraint's expressions are kept as
		// SQL text already.
		return &plan.FuncExpr{Name: name, Args: args, T: types.T{OID: types.OIDText, Mod: -1}, Strict: true,
			Fn: func(_ *plan.EvalContext, v []types.Datum) (types.Datum, error) { return types.DString(v[0].S), nil }}, true, nil
	case name == "pg_get_viewdef" && (len(args) == 1 || len(args) == 2):
		byName := args[0].Type().OID == types.OIDText || args[0].Type().OID == types.OIDUnknown
		return &plan.FuncExpr{Name: name, Args: args, T: types.T{OID: types.OIDText, Mod: -1}, Strict: true,
			Fn: func(_ *plan.EvalContext, v []types.Datum) (types.Datum, error) {
				oid := uint32(v[0].I)
				if byName {
					d, err := s.RegIn(types.T{OID: types.OIDRegclass, Mod: -1}, v[0].S)
					if err != nil {
						return types.NullDatum, err
					}
					oid = uint32(d.I)
				}
				snap, err := s.snapshot(context.Background())
				if err != nil {
					return types.NullDatum, err
				}
				if view, ok := snap.ViewByOID[oid]; ok {
					return types.DString(viewDefinition(view)), nil
				}
				return types.NullDatum, nil
			}}, true, nil
	case name == "pg_get_indexdef" && (len(args) == 1 || len(args) == 3):
		return &plan.FuncExpr{Name: name, Args: args, T: types.T{OID: types.OIDText, Mod: -1}, Strict: true,
			Fn: func(_ *plan.EvalContext, v []types.Datum) (types.Datum, error) {
				if def, ok := s.indexDef(uint32(v[0].I)); ok {
					return types.DString(def), nil
				}
				t := s.tableOf(uint32(v[0].I), pkeyOID)
				if t == nil {
					return types.NullDatum, nil
				}
				if len(v) == 3 && v[1].I > 0 {
					// The definition of one index column: its name.
					if v[1].I > int64(len(t.Key)) {
						return types.NullDatum, nil
					}
					return types.DString(quoteIdentIfNeeded(t.Columns[t.Key[v[1].I-1].Column].Name)), nil
				}
				return types.DString(pkeyDef(t)), nil
			}}, true, nil
	case name == "obj_description" && (len(args) == 1 || len(args) == 2), name == "col_description" && len(args) == 2:
		// COMMENT ON's texts (comment.go); obj_description(oid) of any
		// catalog, as PostgreSQL's deprecated one-argument form.
		return &plan.FuncExpr{Name: name, Args: args, T: types.T{OID: types.OIDText, Mod: -1}, Strict: true,
			Fn: func(_ *plan.EvalContext, v []types.Datum) (types.Datum, error) {
				snap, err := s.snapshot(context.Background())
				if err != nil {
					return types.NullDatum, err
				}
				oid := uint32(v[0].I)
				switch {
				case name == "col_description":
					return describedAs(s, snap, oidPgClass, oid, v[1].I), nil
				case len(v) == 2 && v[1].S == "pg_namespace":
					return describedAs(s, snap, oidPgNamespace, oid, 0), nil
				case len(v) == 2 && v[1].S != "pg_class":
					return types.NullDatum, nil
				}
				if d := describedAs(s, snap, oidPgClass, oid, 0); !d.Null || len(v) == 2 {
					return d, nil
				}
				return describedAs(s, snap, oidPgNamespace, oid, 0), nil
			}}, true, nil
	case name == "pg_get_constraintdef" && (len(args) == 1 || len(args) == 2):
		return &plan.FuncExpr{Name: name, Args: args, T: types.T{OID: types.OIDText, Mod: -1}, Strict: true,
			Fn: func(_ *plan.EvalContext, v []types.Datum) (types.Datum, error) {
				oid := uint32(v[0].I)
				if t := s.tableOf(oid, pkeyConstraintOID); t != nil {
					return types.DString("PRIMARY KEY (" + keyText(t) + ")"), nil
				}
				if def, ok := s.uniqueConstraintDef(oid); ok {
					return types.DString(def), nil
				}
				snap, err := s.snapshot(context.Background())
				if err != nil {
					return types.NullDatum, err
				}
				if def, ok := s.fkConstraintDef(snap, oid); ok {
					return types.DString(def), nil
				}
				for _, t := range snap.Tables[s.db] {
					for i, ck := range t.Checks {
						if checkOID(t, i) == oid {
							pretty := len(v) == 2 && v[1].Bool()
							return types.DString("CHECK (" + deparseStoredAs(t, ck.Expr, types.T{OID: types.OIDBool, Mod: -1}, !pretty) + ")" + notValid(ck.NotValid)), nil
						}
					}
				}
				return types.NullDatum, nil
			}}, true, nil
	case name == "pg_get_userbyid" && len(args) == 1:
		// One role exists: the session's user (trust authentication).
		return &plan.FuncExpr{Name: name, Args: args, T: types.T{OID: types.OIDName, Mod: -1}, Strict: true,
			Fn: func(*plan.EvalContext, []types.Datum) (types.Datum, error) { return types.DString(s.user), nil }}, true, nil
	case name == "pg_encoding_to_char" && len(args) == 1:
		return &plan.FuncExpr{Name: name, Args: args, T: types.T{OID: types.OIDName, Mod: -1}, Strict: true,
			Fn: func(_ *plan.EvalContext, v []types.Datum) (types.Datum, error) {
				if v[0].I == 6 {
					return types.DString("UTF8"), nil
				}
				return types.DString(""), nil
			}}, true, nil
	case name == "array_to_string" && len(args) >= 2 && args[0].Type().IsArray():
		elem := args[0].Type().Elem()
		return &plan.FuncExpr{Name: name, Args: args, T: types.T{OID: types.OIDText, Mod: -1}, Strict: true,
			Fn: func(ec *plan.EvalContext, v []types.Datum) (types.Datum, error) {
				var parts []string
				for _, e := range v[0].A {
					switch {
					case !e.Null:
						parts = append(parts, types.FormatText(e, elem, s.location()))
					case len(v) > 2 && !v[2].Null:
						parts = append(parts, v[2].S)
					}
				}
				return types.DString(strings.Join(parts, v[1].S)), nil
			}}, true, nil
	case name == "pg_table_is_visible" && len(args) == 1:
		return &plan.FuncExpr{Name: name, Args: args, T: types.T{OID: types.OIDBool, Mod: -1}, Strict: true,
			Fn: func(ec *plan.EvalContext, vals []types.Datum) (types.Datum, error) {
				return types.DBool(s.tableVisible(uint32(vals[0].I))), nil
			}}, true, nil
	}
	if len(args) > 0 {
		return nil, false, nil
	}
	switch name {
	case "current_database", "current_catalog":
		return text(s.db)
	case "current_user", "session_user", "user", "current_role":
		return text(s.user)
	case "current_schema":
		if snap, err := s.snapshot(context.Background()); err == nil {
			for _, sc := range s.searchPath() {
				if _, ok := snap.Schema(s.db, sc); ok {
					return text(sc)
				}
			}
		}
		return &plan.Const{T: types.T{OID: types.OIDName, Mod: -1}, D: types.NullDatum}, true, nil
	case "version":
		return &plan.Const{T: types.T{OID: types.OIDText, Mod: -1},
			D: types.DString("PostgreSQL 15.0-ShaleDB-0.1 on x86_64-pc-linux-gnu, compiled by go, 64-bit")}, true, nil
	case "pg_backend_pid":
		return &plan.Const{T: types.T{OID: types.OIDInt4, Mod: -1}, D: types.DInt(int64(s.pid))}, true, nil
	}
	return nil, false, nil
}

// tableVisible: a relation is visible when its schema is on the search
// path (pg_catalog relations always are).
func (s *Session) tableVisible(oid uint32) bool {
	snap, err := s.snapshot(context.Background())
	if err != nil {
		return false
	}
	ns := namespaces(s, snap)
	for _, r := range s.relationRows(snap) {
		if uint32(r[0].I) != oid {
			continue
		}
		for name, nsp := range ns {
			if nsp == uint32(r[2].I) {
				return s.namespaceVisible(name)
			}
		}
	}
	return true
}

// tableOf finds the table whose derived OID (by oidOf) is oid.
func (s *Session) tableOf(oid uint32, oidOf func(*catalog.Table) uint32) *catalog.Table {
	snap, err := s.snapshot(context.Background())
	if err != nil {
		return nil
	}
	for _, t := range snap.Tables[s.db] {
		if oidOf(t) == oid {
			return t
		}
	}
	return nil
}

// keyText renders a primary key as YSQL prints it (see keyColumnsText).
func keyText(t *catalog.Table) string {
	cols := make([]keyColumnText, len(t.Key))
	for i, k := range t.Key {
		cols[i] = keyColumnText{name: t.Columns[k.Column].Name, hash: k.Hash, desc: k.Desc}
	}
	return keyColumnsText(cols)
}

// keyColumnText is one key column for keyColumnsText.
type keyColumnText struct {
	name       string
	hash, desc bool
}

// keyColumnsText renders key columns as YSQL prints them: "a HASH, b ASC",
// "(a, b) HASH, c DESC" for several hash columns.
func keyColumnsText(cols []keyColumnText) string {
	var hash, parts []string
	for _, c := range cols {
		switch {
		case c.hash:
			hash = append(hash, c.name)
		case c.desc:
			parts = append(parts, c.name+" DESC")
		default:
			parts = append(parts, c.name+" ASC")
		}
	}
	if len(hash) == 1 {
		parts = append([]string{hash[0] + " HASH"}, parts...)
	} else if len(hash) > 1 {
		parts = append([]string{"(" + strings.Join(hash, ", ") + ") HASH"}, parts...)
	}
	return strings.Join(parts, ", ")
}
