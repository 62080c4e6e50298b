package types

import (
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// FromTypeName resolves a parsed type name (CAST(x AS t), a column
// definition) to a type with its modifier. serial/bigserial are not types:
// the DDL layer rewrites them before calling this.
func FromTypeName(tn *pg_query.TypeName) (T, error) {
	if tn == nil {
		return T{}, pgerror.New(pgerror.CodeInternalError, "missing type name")
	}
	names := make([]string, 0, len(tn.Names))
	for _, n := range tn.Names {
		s := n.GetString_()
		if s == nil {
			return T{}, pgerror.New(pgerror.CodeSyntaxError, "improper type name")
		}
		names = append(names, s.Sval)
	}
	mods := make([]int32, 0, len(tn.Typmods))
	for _, m := range tn.Typmods {
		c := m.GetAConst()
		if c == nil || c.GetIval() == nil {
			if c != nil && c.GetIsnull() {
				return T{}, pgerror.New(pgerror.CodeSyntaxError, "type modifiers must be simple constants or identifiers")
			}
			if c == nil || (c.GetSval() == nil && c.GetFval() == nil) {
				return T{}, pgerror.New(pgerror.CodeSyntaxError, "type modifiers must be simple constants or identifiers")
			}
			return T{}, pgerror.New(pgerror.CodeInvalidParameterValue, "invalid type modifier")
		}
		mods = append(mods, c.GetIval().Ival)
	}
	t, err := ResolveTypeName(names, mods, len(tn.ArrayBounds))
	if err != nil {
		if pe, ok := err.(*pgerror.Error); ok && tn.Location >= 0 {
			pe.Position = tn.Location + 1
		}
		return T{}, err
	}
	return t, nil
}

// ResolveTypeName resolves a (possibly schema-qualified) type name with its
// modifiers and array dimensions: ["pg_catalog","varchar"] [10] → varchar(10).
func ResolveTypeName(names []string, mods []int32, arrayDims int) (T, error) {
	if len(names) == 0 {
		return T{}, pgerror.New(pgerror.CodeSyntaxError, "improper type name")
	}
	name := names[len(names)-1]
	if len(names) > 1 {
		schema := names[len(names)-2]
		if schema != "pg_catalog" && schema != "public" {
			return T{}, pgerror.New(pgerror.CodeUndefinedObject, "type \"%s\" does not exist", strings.Join(names, "."))
		}
	}
	ti, ok := byName[name]
	if !ok {
		// pg_catalog. is what the grammar adds to SQL-standard names
		// (bit, time with time zone): name the type as written.
		shown := strings.Join(names, ".")
		if len(names) == 2 && names[0] == "pg_catalog" {
			shown = name
		}
		return T{}, pgerror.New(pgerror.CodeUndefinedObject, "type \"%s\" does not exist", shown)
	}
	if ti.Family == FamArray && ti.Category == 'A' && ti.OID != OIDInt2Vector && ti.OID != OIDOIDVector {
		// "_int4" names the array type directly.
		t, err := applyTypmods(byOID[ti.Elem], mods)
		if err != nil {
			return T{}, err
		}
		return T{ti.OID, t.Mod}, nil
	}
	t, err := applyTypmods(ti, mods)
	if err != nil {
		return T{}, err
	}
	if arrayDims > 0 {
		at := ArrayOf(t)
		if at.OID == 0 || byOID[at.OID] == nil {
			return T{}, pgerror.New(pgerror.CodeUndefinedObject, "could not find array type for data type %s", t.String())
		}
		return at, nil
	}
	return t, nil
}

func applyTypmods(ti *TypeInfo, mods []int32) (T, error) {
	t := T{ti.OID, -1}
	if len(mods) == 0 {
		return t, nil
	}
	if !ti.HasMod {
		return T{}, pgerror.New(pgerror.CodeSyntaxError, "type modifier is not allowed for type \"%s\"", ti.Name)
	}
	bad := func(format string, args ...any) (T, error) {
		return T{}, pgerror.New(pgerror.CodeInvalidParameterValue, format, args...)
	}
	switch ti.OID {
	case OIDVarchar, OIDBPChar:
		if len(mods) != 1 {
			return bad("invalid type modifier")
		}
		tn := "varchar"
		if ti.OID == OIDBPChar {
			tn = "char"
		}
		if mods[0] < 1 {
			return bad("length for type %s must be at least 1", tn)
		}
		if mods[0] > 10485760 {
			return bad("length for type %s cannot exceed %d", tn, 10485760)
		}
		t.Mod = mods[0] + varHdrSz
	case OIDNumeric:
		if len(mods) > 2 {
			return bad("invalid NUMERIC type modifier")
		}
		p := mods[0]
		if p < 1 || p > 1000 {
			return bad("NUMERIC precision %d must be between 1 and %d", p, 1000)
		}
		s := int32(0)
		if len(mods) == 2 {
			s = mods[1]
			if s < -1000 || s > 1000 {
				return bad("NUMERIC scale %d must be between %d and %d", s, -1000, 1000)
			}
		}
		t = MakeNumeric(int(p), int(s))
	case OIDTime, OIDTimestamp, OIDTimestampTZ:
		if len(mods) != 1 {
			return bad("invalid type modifier")
		}
		label := map[uint32]string{OIDTime: "TIME", OIDTimestamp: "TIMESTAMP", OIDTimestampTZ: "TIMESTAMP"}[ti.OID]
		suffix := ""
		if ti.OID == OIDTimestampTZ {
			suffix = " WITH TIME ZONE"
		}
		if mods[0] < 0 {
			return bad("%s(%d)%s precision must not be negative", label, mods[0], suffix)
		}
		p := mods[0]
		if p > 6 {
			p = 6 // PostgreSQL warns "precision reduced to maximum allowed, 6"
		}
		t.Mod = p
	case OIDInterval:
		// pg_query passes [fields mask] or [fields mask, precision]; a bare
		// interval(p) arrives as [full range, p].
		p := int32(0xffff)
		if len(mods) == 2 {
			p = mods[1]
		} else if len(mods) != 1 {
			return bad("invalid INTERVAL type modifier")
		}
		if p != 0xffff {
			if p < 0 {
				return bad("INTERVAL(%d) precision must not be negative", p)
			}
			if p > 6 {
				p = 6
			}
		}
		t.Mod = intervalFullRange<<16 | p
		if p == 0xffff {
			t.Mod = -1
		}
	default:
		return bad("invalid type modifier")
	}
	return t, nil
}

// ParseType parses a type written in SQL ("integer", "varchar(10)",
// "numeric(12,2)", "timestamp with time zone", "text[]", "\"char\"",
// "pg_catalog.int4"); for tests, catalog functions and casts to regtype.
// Unquoted char means character(1) as in SQL; quoted "char" is the
// one-byte type.
func ParseType(s string) (T, error) {
	orig := s
	s = strings.TrimSpace(s)
	dims := 0
	for strings.HasSuffix(s, "[]") {
		dims++
		s = strings.TrimSpace(s[:len(s)-2])
	}
	var mods []int32
	// A modifier list may sit in the middle: "timestamp(3) with time zone".
	if i := strings.IndexByte(s, '('); i >= 0 {
		j := strings.IndexByte(s[i:], ')')
		if j < 0 {
			return T{}, pgerror.New(pgerror.CodeSyntaxError, "syntax error at or near \"%s\"", orig)
		}
		for _, f := range strings.Split(s[i+1:i+j], ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return T{}, pgerror.New(pgerror.CodeSyntaxError, "syntax error at or near \"%s\"", orig)
			}
			mods = append(mods, int32(n))
		}
		s = strings.TrimSpace(s[:i] + " " + s[i+j+1:])
	}
	quoted := strings.HasPrefix(s, `"`)
	var names []string
	for _, p := range strings.Split(s, ".") {
		p = strings.TrimSpace(p)
		if strings.HasPrefix(p, `"`) && strings.HasSuffix(p, `"`) && len(p) >= 2 {
			p = p[1 : len(p)-1]
		} else {
			p = strings.Join(strings.Fields(strings.ToLower(p)), " ")
		}
		names = append(names, p)
	}
	last := names[len(names)-1]
	if !quoted && len(names) == 1 {
		switch last {
		case "char", "character", "char varying", "character varying", "varchar":
			if last == "char" || last == "character" {
				names[0] = "bpchar"
				if len(mods) == 0 {
					mods = []int32{1}
				}
			}
		case "time with time zone":
			return T{}, pgerror.Unsupported("type time with time zone")
		}
	}
	if names[len(names)-1] == "interval" && len(mods) == 1 {
		mods = []int32{intervalFullRange, mods[0]}
	}
	if names[len(names)-1] == "float" && len(mods) == 1 {
		if mods[0] < 1 {
			return T{}, pgerror.New(pgerror.CodeInvalidParameterValue, "precision for type float must be at least 1 bit")
		}
		if mods[0] > 53 {
			return T{}, pgerror.New(pgerror.CodeInvalidParameterValue, "precision for type float must be less than 54 bits")
		}
		names[len(names)-1] = "float8"
		if mods[0] <= 24 {
			names[len(names)-1] = "float4"
		}
		mods = nil
	}
	return ResolveTypeName(names, mods, dims)
}
