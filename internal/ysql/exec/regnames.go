package exec

import (
	"context"
	"strconv"
	"strings"

	"github.com/shaledb/shaledb/internal/ysql/builtins"
	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// The OID alias types read and print names: 't'::regclass is the table's
// OID and its OID cast to regclass prints "t" (schema-qualified when the
// schema is not on the search path). Relations are the rows of pg_class, so
// whatever pg_class lists (tables, sequences, indexes, catalog relations)
// has a regclass name.

// RegIn looks a name up for an OID alias type.
func (s *Session) RegIn(t types.T, name string) (types.Datum, error) {
	name = strings.TrimSpace(name)
	if n, err := strconv.ParseUint(name, 10, 32); err == nil {
		return types.DInt(int64(n)), nil
	}
	snap, err := s.snapshot(context.Background())
	if err != nil {
		return types.NullDatum, err
	}
	switch t.OID {
	case types.OIDRegclass:
		parts, err := splitQualified(name)
		if err != nil {
			return types.NullDatum, err
		}
		if len(parts) > 3 {
			return types.NullDatum, pgerror.New(pgerror.CodeSyntaxError, "improper relation name (too many dotted names): %s", name)
		}
		if oid, ok := s.lookupRelation(snap, parts); ok {
			return dOID(oid), nil
		}
		// The name as parsed: '"S1"' is relation "S1".
		return types.NullDatum, pgerror.New(pgerror.CodeUndefinedTable, "relation %q does not exist", strings.Join(parts, "."))
	case types.OIDRegtype:
		if name == "-" {
			return dOID(0), nil
		}
		rt, err := types.ParseType(name)
		if err != nil || types.Info(rt.OID) == nil {
			return types.NullDatum, pgerror.New(pgerror.CodeUndefinedObject, "type %q does not exist", name)
		}
		return dOID(rt.OID), nil
	case types.OIDRegnamespace:
		parts, err := splitQualified(name)
		if err == nil && len(parts) == 1 {
			if oid, ok := namespaces(s, snap)[parts[0]]; ok {
				return dOID(oid), nil
			}
		}
		return types.NullDatum, pgerror.New(pgerror.CodeInvalidSchemaName, "schema %q does not exist", name)
	case types.OIDRegrole:
		parts, err := splitQualified(name)
		if err == nil && len(parts) == 1 && parts[0] == s.user {
			return dOID(oidBootUser), nil
		}
		return types.NullDatum, pgerror.New(pgerror.CodeUndefinedObject, "role %q does not exist", name)
	case types.OIDRegproc:
		if name == "-" {
			return dOID(0), nil
		}
		return types.NullDatum, pgerror.New(pgerror.CodeUndefinedFunction, "function %q does not exist", name)
	}
	return types.ParseText(name, t, s.location())
}

// RegOut names an OID for an OID alias type; an OID that names nothing
// prints as its number, as in PostgreSQL.
func (s *Session) RegOut(t types.T, oid uint32) string {
	if oid == 0 && t.OID != types.OIDRegclass && t.OID != types.OIDRegnamespace {
		return "-"
	}
	snap, err := s.snapshot(context.Background())
	if err != nil {
		return strconv.FormatUint(uint64(oid), 10)
	}
	switch t.OID {
	case types.OIDRegclass:
		ns := namespaces(s, snap)
		for _, r := range s.relationRows(snap) {
			if uint32(r[0].I) != oid {
				continue
			}
			for nspname, nspoid := range ns {
				if nspoid == uint32(r[2].I) && !s.namespaceVisible(nspname) {
					return quoteIdentIfNeeded(nspname) + "." + quoteIdentIfNeeded(r[1].S)
				}
			}
			return quoteIdentIfNeeded(r[1].S)
		}
	case types.OIDRegtype:
		if types.Info(oid) != nil {
			return types.FormatType(oid, -1)
		}
	case types.OIDRegnamespace:
		for name, o := range namespaces(s, snap) {
			if o == oid {
				return quoteIdentIfNeeded(name)
			}
		}
	case types.OIDRegrole:
		if oid == oidBootUser {
			return quoteIdentIfNeeded(s.user)
		}
	}
	return strconv.FormatUint(uint64(oid), 10)
}

// relationRows are pg_class's rows (oid, relname, relnamespace, ...).
func (s *Session) relationRows(snap *catalog.Snapshot) []plan.Row {
	for _, d := range virtualDefs {
		if d.schema == "pg_catalog" && d.name == "pg_class" {
			return d.rows(s, snap)
		}
	}
	return nil
}

// lookupRelation resolves [schema.]name among pg_class's rows: a schema
// given, or pg_catalog then the search path.
func (s *Session) lookupRelation(snap *catalog.Snapshot, parts []string) (uint32, bool) {
	var schemas []string
	switch len(parts) {
	case 1:
		schemas = append([]string{"pg_catalog"}, s.searchPath()...)
	case 2:
		schemas = parts[:1]
	case 3:
		if parts[0] != s.db {
			return 0, false
		}
		schemas = parts[1:2]
	default:
		return 0, false
	}
	name := parts[len(parts)-1]
	ns := namespaces(s, snap)
	rows := s.relationRows(snap)
	for _, sc := range schemas {
		nsp, ok := ns[sc]
		if !ok {
			continue
		}
		for _, r := range rows {
			if r[1].S == name && uint32(r[2].I) == nsp {
				return uint32(r[0].I), true
			}
		}
	}
	return 0, false
}

func (s *Session) namespaceVisible(name string) bool {
	if name == "pg_catalog" {
		return true
	}
	for _, sc := range s.searchPath() {
		if sc == name {
			return true
		}
	}
	return false
}

// splitQualified splits a possibly qualified, possibly quoted name as
// regclassin does: unquoted parts are folded to lower case.
func splitQualified(s string) ([]string, error) {
	var parts []string
	bad := func() ([]string, error) {
		return nil, pgerror.New(pgerror.CodeInvalidName, "invalid name syntax")
	}
	for {
		var part strings.Builder
		if strings.HasPrefix(s, `"`) {
			s = s[1:]
			for {
				i := strings.IndexByte(s, '"')
				if i < 0 {
					return bad()
				}
				part.WriteString(s[:i])
				s = s[i+1:]
				if !strings.HasPrefix(s, `"`) {
					break
				}
				part.WriteByte('"')
				s = s[1:]
			}
		} else {
			i := strings.IndexByte(s, '.')
			if i < 0 {
				i = len(s)
			}
			p := strings.TrimSpace(s[:i])
			if p == "" {
				return bad()
			}
			part.WriteString(strings.ToLower(p))
			s = s[i:]
		}
		parts = append(parts, part.String())
		s = strings.TrimSpace(s)
		if s == "" {
			return parts, nil
		}
		if s[0] != '.' {
			return bad()
		}
		s = strings.TrimSpace(s[1:])
	}
}

// quoteIdentIfNeeded quotes an identifier as quote_identifier does.
func quoteIdentIfNeeded(name string) string { return builtins.QuoteIdent(name) }
