package builtins

import (
	"fmt"
	"strings"

	"github.com/shaledb/shaledb/internal/ysql/types"
)

// System information and catalog helper functions that do not depend on
// the session: what psql's \d family and drivers' metadata queries call.
// Objects this database does not have (comments, statistics objects,
// functions' definitions, rules, triggers) describe as NULL, and every
// privilege check passes (one superuser, trust authentication).

func init() {
	null := func(*EvalContext, []types.Datum) (types.Datum, error) { return types.NullDatum, nil }
	constant := func(d types.Datum) EvalFunc {
		return func(*EvalContext, []types.Datum) (types.Datum, error) { return d, nil }
	}
	for _, sig := range []struct {
		name string
		args []types.T
		res  types.T
	}{
		{"obj_description", args(tOID, tName), tText},
		{"obj_description", args(tOID), tText},
		{"col_description", args(tOID, tI4), tText},
		{"shobj_description", args(tOID, tName), tText},
		{"pg_get_statisticsobjdef_columns", args(tOID), tText},
		{"pg_get_function_result", args(tOID), tText},
		{"pg_get_function_arguments", args(tOID), tText},
		{"pg_get_function_identity_arguments", args(tOID), tText},
		{"pg_get_functiondef", args(tOID), tText},
		{"pg_get_triggerdef", args(tOID), tText},
		{"pg_get_triggerdef", args(tOID, t16), tText},
		{"pg_get_ruledef", args(tOID), tText},
		{"pg_get_ruledef", args(tOID, t16), tText},
		{"pg_get_partkeydef", args(tOID), tText},
		{"pg_get_viewdef", args(tOID), tText},
		{"pg_get_viewdef", args(tOID, t16), tText},
	} {
		addFn(sig.name, sig.args, sig.res, null).Strict = false
	}
	addFn("pg_tablespace_location", args(tOID), tText, constant(types.DString("")))
	addFn("pg_relation_is_publishable", args(types.TRegclass), t16, constant(types.DBool(true)))
	addFn("pg_is_other_temp_schema", args(tOID), t16, constant(types.DBool(false)))
	addFn("pg_my_temp_schema", nil, tOID, constant(types.DInt(0)))
	addFn("pg_type_is_visible", args(tOID), t16, constant(types.DBool(true)))
	addFn("pg_function_is_visible", args(tOID), t16, constant(types.DBool(true)))
	for _, name := range []string{"has_table_privilege", "has_schema_privilege", "has_database_privilege",
		"has_sequence_privilege", "has_function_privilege", "has_tablespace_privilege", "has_any_column_privilege"} {
		for _, a := range [][]types.T{args(tText, tText), args(tOID, tText), args(tName, tText, tText), args(tName, tOID, tText),
			args(tOID, tText, tText), args(tOID, tOID, tText)} {
			addFn(name, a, t16, constant(types.DBool(true)))
		}
	}
	for _, a := range [][]types.T{args(tText, tText, tText), args(tOID, tText, tText), args(tOID, tI2, tText),
		args(tName, tText, tText, tText), args(tName, tOID, tText, tText), args(tName, tOID, tI2, tText)} {
		addFn("has_column_privilege", a, t16, constant(types.DBool(true)))
	}
	addFn("pg_size_pretty", args(tI8), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return types.DString(SizePretty(a[0].I)), nil
	})
	addFn("quote_ident", args(tText), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return types.DString(QuoteIdent(a[0].S)), nil
	})
	addFn("quote_literal", args(tText), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return types.DString(QuoteLiteral(a[0].S)), nil
	})
	addFn("quote_nullable", args(tText), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		if a[0].Null {
			return types.DString("NULL"), nil
		}
		return types.DString(QuoteLiteral(a[0].S)), nil
	}).Strict = false
}

// SizePretty is pg_size_pretty(bigint): bytes below 10 kB, then kB, MB,
// GB, TB, PB with half-up rounding, as PostgreSQL 15 prints them.
func SizePretty(size int64) string {
	units := []struct {
		name  string
		limit int64
		round bool
		bits  uint
	}{{"bytes", 10 * 1024, false, 0}, {"kB", 20*1024 - 1, true, 10}, {"MB", 20*1024 - 1, true, 20},
		{"GB", 20*1024 - 1, true, 30}, {"TB", 20*1024 - 1, true, 40}, {"PB", 20*1024 - 1, true, 50}}
	abs := func(v int64) int64 {
		if v < 0 {
			return -v
		}
		return v
	}
	for i, u := range units {
		if i == len(units)-1 || abs(size) < u.limit {
			if u.round {
				if size < 0 {
					size = (size - 1) / 2
				} else {
					size = (size + 1) / 2
				}
			}
			return fmt.Sprintf("%d %s", size, u.name)
		}
		next := units[i+1]
		bits := next.bits - u.bits
		if next.round {
			bits--
		}
		if u.round {
			bits++
		}
		size /= int64(1) << bits
	}
	return ""
}

// QuoteIdent quotes an identifier as quote_ident does: when it is not all
// lower-case letters, digits, underscores and dollars (not starting with a
// digit or dollar) or is a key word that cannot be a bare column name.
func QuoteIdent(name string) string {
	ok := name != ""
	for i, r := range name {
		if !(r >= 'a' && r <= 'z' || r == '_' || i > 0 && (r >= '0' && r <= '9' || r == '$')) {
			ok = false
			break
		}
	}
	if ok && !reservedWords[name] {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// QuoteLiteral is quote_literal: single quotes doubled, and E” with
// doubled backslashes when the text has a backslash.
func QuoteLiteral(s string) string {
	q := "'" + strings.ReplaceAll(s, "'", "''") + "'"
	if strings.Contains(s, `\`) {
		q = "E" + strings.ReplaceAll(q, `\`, `\\`)
	}
	return q
}

// reservedWords are the key words quote_ident quotes: PostgreSQL's
// reserved ones and those that cannot be bare column names.
var reservedWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`all analyse analyze and any array as asc asymmetric authorization between bigint binary bit
		boolean both case cast char character check coalesce collate collation column concurrently constraint create cross
		current_catalog current_date current_role current_schema current_time current_timestamp current_user dec decimal
		default deferrable desc distinct do else end except exists extract false fetch float for foreign freeze from full
		grant greatest group grouping having ilike in initially inner inout int integer intersect interval into is isnull
		join json lateral leading least left like limit localtime localtimestamp national natural nchar none normalize not
		notnull null nullif numeric offset on only or order out outer overlaps overlay placing position precision primary
		real references returning right row select session_user setof similar smallint some substring symmetric table
		tablesample then time timestamp to trailing treat trim true union unique user using values varchar variadic verbose
		when where window with xmlattributes xmlconcat xmlelement xmlexists xmlforest xmlnamespaces xmlparse xmlpi xmlroot
		xmlserialize xmltable`) {
		m[w] = true
	}
	return m
}()
