package exec

import (
	"context"
	"strings"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// catalogFunc resolves the system functions that need the session's
// catalog or settings: object sizes, to_regclass and friends,
// pg_get_serial_sequence, current_setting/set_config, and the array
// functions over any array type.
func (s *Session) catalogFunc(name string, args []plan.Expr) (plan.Expr, bool, error) {
	tText := types.T{OID: types.OIDText, Mod: -1}
	fn := func(t types.T, strict bool, f func(v []types.Datum) (types.Datum, error)) (plan.Expr, bool, error) {
		return &plan.FuncExpr{Name: name, Args: args, T: t, Strict: strict, Volatile: true,
			Fn: func(_ *plan.EvalContext, v []types.Datum) (types.Datum, error) { return f(v) }}, true, nil
	}
	if e, ok, err := s.sizeFunc(name, args); ok || err != nil {
		return e, ok, err
	}
	isArray := len(args) > 0 && args[0].Type().IsArray()
	switch {
	case (name == "to_regclass" || name == "to_regtype" || name == "to_regnamespace" || name == "to_regrole") && len(args) == 1:
		t := types.T{OID: map[string]uint32{"to_regclass": types.OIDRegclass, "to_regtype": types.OIDRegtype,
			"to_regnamespace": types.OIDRegnamespace, "to_regrole": types.OIDRegrole}[name], Mod: -1}
		return fn(t, true, func(v []types.Datum) (types.Datum, error) {
			if isNumber(v[0].S) {
				return types.NullDatum, nil // to_reg* take names only
			}
			d, err := s.RegIn(t, v[0].S)
			if err != nil {
				if pe, ok := err.(*pgerror.Error); ok && pe.Code == pgerror.CodeInvalidName {
					return types.NullDatum, err
				}
				return types.NullDatum, nil
			}
			return d, nil
		})
	case name == "pg_get_serial_sequence" && len(args) == 2:
		return fn(tText, true, func(v []types.Datum) (types.Datum, error) { return s.pgGetSerialSequence(v[0].S, v[1].S) })
	case name == "current_setting" && (len(args) == 1 || len(args) == 2):
		return fn(tText, true, func(v []types.Datum) (types.Datum, error) {
			val, err := s.show(v[0].S)
			if err != nil {
				if len(v) == 2 && v[1].Bool() {
					return types.NullDatum, nil
				}
				return types.NullDatum, err
			}
			return types.DString(val), nil
		})
	case name == "set_config" && len(args) == 3:
		return fn(tText, false, func(v []types.Datum) (types.Datum, error) {
			if v[0].Null {
				return types.NullDatum, pgerror.New(pgerror.CodeInvalidParameterValue, "SET requires parameter name")
			}
			val := v[1].S
			if v[1].Null {
				val = settingDefaults[strings.ToLower(v[0].S)]
			}
			if err := s.set(strings.ToLower(v[0].S), val); err != nil {
				return types.NullDatum, err
			}
			out, err := s.show(v[0].S)
			return types.DString(out), err
		})
	case isArray && (name == "array_length" || name == "array_upper") && len(args) == 2,
		isArray && name == "array_lower" && len(args) == 2, isArray && name == "cardinality" && len(args) == 1,
		isArray && name == "array_ndims" && len(args) == 1:
		// One-dimensional arrays with lower bound 1; an empty array has
		// no dimensions (NULL).
		return fn(types.T{OID: types.OIDInt4, Mod: -1}, true, func(v []types.Datum) (types.Datum, error) {
			n := int64(len(v[0].A))
			if name == "cardinality" {
				return types.DInt(n), nil
			}
			if n == 0 || len(v) == 2 && v[1].I != 1 {
				return types.NullDatum, nil
			}
			switch name {
			case "array_lower", "array_ndims":
				return types.DInt(1), nil
			}
			return types.DInt(n), nil
		})
	}
	return nil, false, nil
}

func isNumber(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// pgGetSerialSequence is pg_get_serial_sequence(table, column): the sequence a
// SERIAL or identity column owns, schema-qualified; NULL when none.
func (s *Session) pgGetSerialSequence(table, column string) (types.Datum, error) {
	snap, err := s.snapshot(context.Background())
	if err != nil {
		return types.NullDatum, err
	}
	parts, err := splitQualified(table)
	if err != nil {
		return types.NullDatum, err
	}
	oid, ok := s.lookupRelation(snap, parts)
	t, isTable := snap.ByOID[oid]
	if !ok || !isTable {
		return types.NullDatum, pgerror.New(pgerror.CodeUndefinedTable, "relation %q does not exist", table)
	}
	if t.ColumnIndex(column) < 0 {
		return types.NullDatum, pgerror.New(pgerror.CodeUndefinedColumn, "column %q of relation %q does not exist", column, t.Name)
	}
	for _, q := range snap.Sequences[s.db] {
		if q.Schema == t.Schema && q.OwnedBy == t.Name+"."+column {
			return types.DString(quoteIdentIfNeeded(q.Schema) + "." + quoteIdentIfNeeded(q.Name)), nil
		}
	}
	return types.NullDatum, nil
}

// sessionSRF resolves yb_servers(): one row per live node serving YSQL,
// as the master knows them (what YugabyteDB's smart drivers read to
// balance connections).
func (s *Session) sessionSRF(name string) (plan.SRF, bool) {
	switch name {
	case "pg_partition_ancestors":
		return s.partitionAncestors(), true
	case "yb_servers":
		return s.ybServers(), true
	}
	return plan.SRF{}, false
}

// partitionAncestors is pg_partition_ancestors(regclass): without
// partitioning, the relation alone (psql's \d asks it for "Referenced by").
func (s *Session) partitionAncestors() plan.SRF {
	regclass := types.T{OID: types.OIDRegclass, Mod: -1}
	return plan.SRF{
		Cols: func(args []types.T) ([]plan.Column, bool) {
			return []plan.Column{{Name: "relid", T: regclass}}, len(args) == 1
		},
		Rows: func(args []types.T, vals []types.Datum) ([]plan.Row, error) {
			d := vals[0]
			if d.Null {
				return nil, nil
			}
			if args[0].Family() == types.FamString || args[0].OID == types.OIDUnknown {
				var err error
				if d, err = s.RegIn(regclass, d.S); err != nil {
					return nil, err
				}
			}
			return []plan.Row{{d}}, nil
		}}
}

// ybServers is yb_servers(): the nodes serving YSQL.
func (s *Session) ybServers() plan.SRF {
	t := func(oid uint32) types.T { return types.T{OID: oid, Mod: -1} }
	cols := []plan.Column{{Name: "host", T: t(types.OIDText)}, {Name: "port", T: t(types.OIDInt8)},
		{Name: "num_connections", T: t(types.OIDInt4)}, {Name: "node_type", T: t(types.OIDText)},
		{Name: "cloud", T: t(types.OIDText)}, {Name: "region", T: t(types.OIDText)}, {Name: "zone", T: t(types.OIDText)},
		{Name: "public_ip", T: t(types.OIDText)}, {Name: "uuid", T: t(types.OIDText)}}
	return plan.SRF{
		Cols: func(args []types.T) ([]plan.Column, bool) {
			return append([]plan.Column(nil), cols...), len(args) == 0
		},
		Rows: func([]types.T, []types.Datum) ([]plan.Row, error) {
			if s.e.cfg.Servers == nil {
				return nil, pgerror.Unsupported("yb_servers() on this node")
			}
			servers, err := s.e.cfg.Servers(context.Background())
			if err != nil {
				return nil, err
			}
			var out []plan.Row
			for _, sv := range servers {
				out = append(out, plan.Row{types.DString(sv.Host), types.DInt(int64(sv.Port)), types.DInt(int64(sv.Connections)),
					types.DString(sv.NodeType), types.DString(sv.Cloud), types.DString(sv.Region), types.DString(sv.Zone),
					types.DString(sv.PublicIP), types.DString(sv.UUID)})
			}
			return out, nil
		}}
}
