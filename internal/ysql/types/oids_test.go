package types

import (
	"testing"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

func TestFormatType(t *testing.T) {
	// Expected strings from PostgreSQL 15's format_type(oid, typmod).
	cases := []struct {
		t    T
		want string
	}{
		{TInt4, "integer"}, {TInt2, "smallint"}, {TInt8, "bigint"}, {TFloat4, "real"},
		{TFloat8, "double precision"}, {TBool, "boolean"}, {TChar, `"char"`}, {TBPChar, "bpchar"},
		{TVarchar, "character varying"}, {MakeVarchar(10), "character varying(10)"},
		{MakeNumeric(12, 2), "numeric(12,2)"}, {MakeNumeric(5, -2), "numeric(5,-2)"},
		{T{OIDTimestamp, 3}, "timestamp(3) without time zone"},
		{T{OIDTimestampTZ, 3}, "timestamp(3) with time zone"},
		{T{OIDTime, 0}, "time(0) without time zone"},
		{WithPrecision(TInterval, 3), "interval(3)"},
		{MakeBPChar(1), "character(1)"},
		{T{OIDVarcharArray, 14}, "character varying(10)[]"},
		{TTimestampTZ, "timestamp with time zone"}, {TInt4Array, "integer[]"}, {T{OIDBPCharArray, -1}, "bpchar[]"}, {T{OIDBPCharArray, 5}, "character(1)[]"},
		{TJSONB, "jsonb"}, {TRegclass, "regclass"}, {TUnknown, "unknown"},
	}
	for _, c := range cases {
		if got := c.t.String(); got != c.want {
			t.Errorf("%+v: got %q, want %q", c.t, got, c.want)
		}
	}
}

func TestParseTypeNames(t *testing.T) {
	cases := []struct {
		in   string
		want T
		code string
	}{
		{"integer", TInt4, ""}, {"int", TInt4, ""}, {"int4", TInt4, ""}, {"pg_catalog.int4", TInt4, ""},
		{"varchar(10)", MakeVarchar(10), ""}, {"character varying(10)", MakeVarchar(10), ""},
		{"char", MakeBPChar(1), ""}, {"char(3)", MakeBPChar(3), ""}, {`"char"`, TChar, ""}, {"bpchar", TBPChar, ""},
		{"numeric(12,2)", MakeNumeric(12, 2), ""}, {"decimal(5)", MakeNumeric(5, 0), ""},
		{"timestamp with time zone", TTimestampTZ, ""}, {"timestamptz", TTimestampTZ, ""},
		{"timestamp(3) with time zone", T{OIDTimestampTZ, 3}, ""},
		{"double precision", TFloat8, ""}, {"float", TFloat8, ""}, {"float(24)", TFloat4, ""}, {"real", TFloat4, ""},
		{"bool", TBool, ""}, {"boolean", TBool, ""}, {"text[]", TTextArray, ""}, {"_int4", TInt4Array, ""},
		{"int4(3)", T{}, pgerror.CodeSyntaxError}, {"varchar(0)", T{}, pgerror.CodeInvalidParameterValue},
		{"numeric(1001)", T{}, pgerror.CodeInvalidParameterValue}, {"serial", T{}, pgerror.CodeUndefinedObject},
		{"foo", T{}, pgerror.CodeUndefinedObject}, {"timestamp(9)", T{OIDTimestamp, 6}, ""},
	}
	for _, c := range cases {
		got, err := ParseType(c.in)
		if c.code != "" {
			if pgerror.Code(err) != c.code {
				t.Errorf("%q: got %v %v, want %s", c.in, got, err, c.code)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: got %+v %v, want %+v", c.in, got, err, c.want)
		}
	}
}

func TestFromPgQueryTypeName(t *testing.T) {
	cases := map[string]string{
		"integer":                     "integer",
		"varchar(10)":                 "character varying(10)",
		"numeric(12,2)":               "numeric(12,2)",
		"timestamp with time zone":    "timestamp with time zone",
		"double precision":            "double precision",
		"character varying":           "character varying",
		"char":                        "character(1)",
		`"char"`:                      `"char"`,
		"bool":                        "boolean",
		"int8[]":                      "bigint[]",
		"interval":                    "interval",
		"time(3)":                     "time(3) without time zone",
		"pg_catalog.int2":             "smallint",
		"text":                        "text",
		"timestamp(2) with time zone": "timestamp(2) with time zone",
		"decimal":                     "numeric",
		"float(10)":                   "real",
		"character(5)":                "character(5)",
		"jsonb":                       "jsonb",
	}
	for in, want := range cases {
		tree, err := pg_query.Parse("select null::" + in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		tc := tree.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val.GetTypeCast()
		got, err := FromTypeName(tc.TypeName)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got.String() != want {
			t.Errorf("%s: got %q, want %q", in, got.String(), want)
		}
	}
	tree, _ := pg_query.Parse("select null::serial")
	tc := tree.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val.GetTypeCast()
	if _, err := FromTypeName(tc.TypeName); pgerror.Code(err) != pgerror.CodeUndefinedObject {
		t.Errorf("serial: %v", err)
	}
}

func TestTypeTable(t *testing.T) {
	for _, ti := range AllTypes() {
		if Info(ti.OID) != ti {
			t.Errorf("%d not indexed", ti.OID)
		}
		if ti.Array != 0 && Info(ti.Array) != nil && Info(ti.Array).Elem != ti.OID {
			t.Errorf("%s: array %d has elem %d", ti.Name, ti.Array, Info(ti.Array).Elem)
		}
	}
	if ti := Info(OIDInt4Array); ti.Name != "_int4" || ti.Input != "array_in" || ti.Category != 'A' {
		t.Errorf("_int4: %+v", ti)
	}
	if ti := Info(OIDTimestampTZ); !ti.Preferred || ti.Len != 8 || !ti.ByVal || ti.Category != 'D' {
		t.Errorf("timestamptz: %+v", ti)
	}
}
