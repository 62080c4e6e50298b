package exec

import (
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// btreeOpclasses are PostgreSQL's btree operator classes and the type
// each takes (opcintype). An index column may name one (a int4_ops); the
// index orders by the column's type either way, so only the name and the
// type are checked, as PostgreSQL does.
var btreeOpclasses = map[string]string{
	"array_ops": "anyarray", "bit_ops": "bit", "bool_ops": "boolean", "bpchar_ops": "character",
	"bpchar_pattern_ops": "character", "bytea_ops": "bytea", "char_ops": `"char"`, "cidr_ops": "inet",
	"date_ops": "date", "enum_ops": "anyenum", "float4_ops": "real", "float8_ops": "double precision",
	"inet_ops": "inet", "int2_ops": "smallint", "int4_ops": "integer", "int8_ops": "bigint",
	"interval_ops": "interval", "jsonb_ops": "jsonb", "macaddr8_ops": "macaddr8", "macaddr_ops": "macaddr",
	"money_ops": "money", "multirange_ops": "anymultirange", "name_ops": "name", "numeric_ops": "numeric",
	"oid_ops": "oid", "oidvector_ops": "oidvector", "pg_lsn_ops": "pg_lsn", "range_ops": "anyrange",
	"record_image_ops": "record", "record_ops": "record", "text_ops": "text", "text_pattern_ops": "text",
	"tid_ops": "tid", "time_ops": "time", "timestamp_ops": "timestamp", "timestamptz_ops": "timestamptz",
	"timetz_ops": "timetz", "tsquery_ops": "tsquery", "tsvector_ops": "tsvector", "uuid_ops": "uuid",
	"varbit_ops": "varbit", "varchar_ops": "text", "varchar_pattern_ops": "text", "xid8_ops": "xid8",
}

// checkOpclass refuses an operator class that does not exist for btree
// (42704) or does not take the column's type (42804); it was accepted
// whatever it named.
func checkOpclass(name string, hasOptions bool, col types.T) error {
	in, ok := btreeOpclasses[name]
	if !ok {
		return pgerror.New(pgerror.CodeUndefinedObject, "operator class %q does not exist for access method \"btree\"", name)
	}
	if hasOptions {
		return pgerror.New(pgerror.CodeInvalidParameterValue, "operator class %s has no options", name)
	}
	cat := byte(0)
	if info := col.Info(); info != nil {
		cat = info.Category
	}
	accepts := false
	switch in {
	case "anyarray":
		accepts = col.IsArray()
	case "anyenum":
		accepts = cat == 'E'
	case "anyrange":
		accepts = cat == 'R'
	case "anymultirange", "record":
		accepts = true // not types an index column has here; not refused
	default:
		want, err := types.ParseType(in)
		if err != nil {
			return nil
		}
		// Binary coercible: varchar to text, text and varchar to
		// bpchar (as pg_cast's binary casts).
		accepts = want.OID == col.OID ||
			want.OID == types.OIDText && col.OID == types.OIDVarchar ||
			want.OID == types.OIDBPChar && (col.OID == types.OIDText || col.OID == types.OIDVarchar)
	}
	if !accepts {
		typ := col.String()
		if info := col.Info(); info != nil {
			typ = info.SQLName // format_type_be: the name without a typmod
		}
		return pgerror.New(pgerror.CodeDatatypeMismatch, "operator class %q does not accept data type %s", name, typ)
	}
	return nil
}
