package exec

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// The pg_catalog and information_schema relations are generated from the
// catalog snapshot when a query reads them.

const (
	oidPgCatalog   = 11
	oidPublicDummy = 2200
	oidInfoSchema  = 13000
	oidBootUser    = 10
)

type vcol struct {
	name string
	oid  uint32
}

func tOf(oid uint32) types.T { return types.T{OID: oid, Mod: -1} }

var (
	oidT  = types.OIDOID
	nameT = types.OIDName
	textT = types.OIDText
	boolT = types.OIDBool
	int2T = types.OIDInt2
	int4T = types.OIDInt4
	charT = types.OIDChar
)

type vdef struct {
	schema, name string
	oid          uint32
	cols         []vcol
	rows         func(s *Session, snap *catalog.Snapshot) []plan.Row
}

func dOID(v uint32) types.Datum  { return types.DInt(int64(v)) }
func dStr(v string) types.Datum  { return types.DString(v) }
func dBool(v bool) types.Datum   { return types.DBool(v) }
func dInt(v int64) types.Datum   { return types.DInt(v) }
func dNull() types.Datum         { return types.NullDatum }
func dChar(v string) types.Datum { return types.DString(v) }

// namespaces of the session's database with their OIDs.
func namespaces(s *Session, snap *catalog.Snapshot) map[string]uint32 {
	out := map[string]uint32{"pg_catalog": oidPgCatalog, "information_schema": oidInfoSchema}
	for name, sc := range snap.Schemas[s.db] {
		out[name] = sc.OID
		if name == "public" {
			out[name] = oidPublicDummy
		}
	}
	return out
}

func sortedTables(s *Session, snap *catalog.Snapshot) []*catalog.Table {
	return byName(snap.Tables[s.db])
}

// byName is a catalog map's objects in the order of its keys ("schema.name").
func byName[T any](m map[string]T) []T {
	out := make([]T, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}

var virtualDefs = []vdef{
	{schema: "pg_catalog", name: "pg_namespace", oid: 2615,
		cols: []vcol{{"oid", oidT}, {"nspname", nameT}, {"nspowner", oidT}, {"nspacl", types.OIDTextArray}},
		rows: func(s *Session, snap *catalog.Snapshot) []plan.Row {
			var out []plan.Row
			for name, oid := range namespaces(s, snap) {
				out = append(out, plan.Row{dOID(oid), dStr(name), dOID(oidBootUser), dNull()})
			}
			return out
		}},
	{schema: "pg_catalog", name: "pg_database", oid: 1262,
		cols: []vcol{{"oid", oidT}, {"datname", nameT}, {"datdba", oidT}, {"encoding", int4T}, {"datcollate", nameT},
			{"datctype", nameT}, {"datistemplate", boolT}, {"datallowconn", boolT}, {"datconnlimit", int4T}, {"datacl", types.OIDTextArray},
			{"daticulocale", textT}, {"datlocprovider", charT}, {"dattablespace", oidT}},
		rows: func(s *Session, snap *catalog.Snapshot) []plan.Row {
			var out []plan.Row
			for _, d := range snap.Databases {
				out = append(out, plan.Row{dOID(d.OID), dStr(d.Name), dOID(oidBootUser), dInt(6), dStr("C"), dStr("C"),
					dBool(false), dBool(true), dInt(-1), dNull(), dNull(), dChar("c"), dOID(oidDefaultTablespace)})
			}
			return out
		}},
	{schema: "pg_catalog", name: "pg_roles", oid: 1260,
		cols: []vcol{{"oid", oidT}, {"rolname", nameT}, {"rolsuper", boolT}, {"rolinherit", boolT}, {"rolcreaterole", boolT},
			{"rolcreatedb", boolT}, {"rolcanlogin", boolT}, {"rolreplication", boolT}, {"rolconnlimit", int4T}, {"rolbypassrls", boolT},
			{"rolpassword", textT}, {"rolvaliduntil", types.OIDTimestampTZ}, {"rolconfig", types.OIDTextArray}},
		rows: func(s *Session, snap *catalog.Snapshot) []plan.Row {
			return []plan.Row{{dOID(oidBootUser), dStr(s.user), dBool(true), dBool(true), dBool(true), dBool(true), dBool(true),
				dBool(true), dInt(-1), dBool(true), dStr("********"), dNull(), dNull()}}
		}},
	{schema: "pg_catalog", name: "pg_class", oid: 1259,
		cols: []vcol{{"oid", oidT}, {"relname", nameT}, {"relnamespace", oidT}, {"reltype", oidT}, {"relowner", oidT},
			{"relam", oidT}, {"reltuples", types.OIDFloat4}, {"relhasindex", boolT}, {"relpersistence", charT},
			{"relkind", charT}, {"relnatts", int2T}, {"relchecks", int2T}, {"relhasrules", boolT}, {"relhastriggers", boolT},
			{"relrowsecurity", boolT}, {"relforcerowsecurity", boolT}, {"relispartition", boolT}, {"reloptions", types.OIDTextArray},
			{"relacl", types.OIDTextArray}, {"relhasoids", boolT}, {"reltablespace", oidT}, {"relpartbound", textT}, {"relispopulated", boolT},
			{"relreplident", charT}, {"reloftype", oidT}, {"relisshared", boolT}, {"reltoastrelid", oidT}, {"relfilenode", oidT},
			{"relpages", int4T}, {"relallvisible", int4T}, {"relrewrite", oidT}, {"relminmxid", textT}, {"relfrozenxid", textT}},
		rows: func(s *Session, snap *catalog.Snapshot) []plan.Row {
			ns := namespaces(s, snap)
			var out []plan.Row
			add := func(oid uint32, name string, nsp uint32, kind string, natts int, checks int, hasIndex bool) {
				out = append(out, plan.Row{dOID(oid), dStr(name), dOID(nsp), dOID(0), dOID(oidBootUser), dOID(relAM(kind)),
					{F: -1}, dBool(hasIndex), dChar("p"), dChar(kind), dInt(int64(natts)), dInt(int64(checks)), dBool(false),
					dBool(false), dBool(false), dBool(false), dBool(false), dNull(), dNull(), dBool(false), dOID(0), dNull(),
					dBool(true), dChar("d"), dOID(0), dBool(false), dOID(0), dOID(oid), dInt(0), dInt(0), dOID(0), dNull(), dNull()})
			}
			for _, t := range sortedTables(s, snap) {
				add(t.OID(), t.Name, ns[t.Schema], "r", visibleCount(t), len(t.Checks), !t.RowID || len(t.Indexes) > 0)
				// PostgreSQL's foreign keys are triggers on both tables;
				// psql looks for them only then.
				out[len(out)-1][13] = dBool(tableHasFKs(snap, t))
				if !t.RowID {
					add(pkeyOID(t), t.PKName, ns[t.Schema], "i", len(t.Key), 0, false)
				}
				for _, ix := range t.Indexes {
					add(ix.OID(), ix.Name, ns[t.Schema], "i", len(ix.Columns)+len(ix.Include), 0, false)
				}
			}
			for _, q := range sortedSequences(s, snap) {
				add(q.OID, q.Name, ns[q.Schema], "S", 3, 0, false)
			}
			for _, v := range sortedViews(s, snap) {
				add(v.OID, v.Name, ns[v.Schema], "v", len(v.Columns), 0, false)
			}
			for _, d := range virtualList() {
				add(d.oid, d.name, ns[d.schema], "v", len(d.cols), 0, false)
			}
			return out
		}},
	{schema: "pg_catalog", name: "pg_attribute", oid: 1249,
		cols: []vcol{{"attrelid", oidT}, {"attname", nameT}, {"atttypid", oidT}, {"attlen", int2T}, {"attnum", int2T},
			{"atttypmod", int4T}, {"attnotnull", boolT}, {"atthasdef", boolT}, {"attisdropped", boolT}, {"attidentity", charT},
			{"attgenerated", charT}, {"attcollation", oidT}, {"attstattarget", int4T}, {"attstorage", charT}, {"attndims", int4T},
			{"attislocal", boolT}, {"attinhcount", int4T}, {"attacl", types.OIDTextArray}, {"attoptions", types.OIDTextArray},
			{"attfdwoptions", types.OIDTextArray},
			{"atthasmissing", boolT}, {"attalign", charT}, {"attbyval", boolT}, {"attcompression", charT}},
		rows: func(s *Session, snap *catalog.Snapshot) []plan.Row {
			var out []plan.Row
			for _, t := range sortedTables(s, snap) {
				n := 0
				for _, c := range t.Columns {
					if c.Hidden {
						continue
					}
					n++
					info := types.Info(c.Type.OID)
					l, storage, align := int16(-1), "p", "i"
					if info != nil {
						l, storage, align = info.Len, string(rune(info.Storage)), string(rune(info.Align))
					}
					out = append(out, plan.Row{dOID(t.OID()), dStr(c.Name), dOID(c.Type.OID), dInt(int64(l)), dInt(int64(n)),
						dInt(int64(c.Type.Mod)), dBool(c.NotNull), dBool(columnDefault(t, c) != ""), dBool(false), dChar(c.Identity),
						dChar(""), dOID(0), dInt(-1), dChar(storage), dInt(0), dBool(true), dInt(0), dNull(), dNull(), dNull(),
						dBool(false), dChar(align), dBool(l > 0 && l <= 8), dChar("")})
				}
			}
			for _, v := range sortedViews(s, snap) {
				for i, c := range v.Columns {
					info := types.Info(c.Type.OID)
					l, storage, align := int16(-1), "p", "i"
					if info != nil {
						l, storage, align = info.Len, string(rune(info.Storage)), string(rune(info.Align))
					}
					out = append(out, plan.Row{dOID(v.OID), dStr(c.Name), dOID(c.Type.OID), dInt(int64(l)), dInt(int64(i + 1)),
						dInt(int64(c.Type.Mod)), dBool(false), dBool(false), dBool(false), dChar(""),
						dChar(""), dOID(0), dInt(-1), dChar(storage), dInt(0), dBool(true), dInt(0), dNull(), dNull(), dNull(),
						dBool(false), dChar(align), dBool(l > 0 && l <= 8), dChar("")})
				}
			}
			return out
		}},
	{schema: "pg_catalog", name: "pg_type", oid: 1247,
		cols: []vcol{{"oid", oidT}, {"typname", nameT}, {"typnamespace", oidT}, {"typowner", oidT}, {"typlen", int2T},
			{"typbyval", boolT}, {"typtype", charT}, {"typcategory", charT}, {"typispreferred", boolT}, {"typisdefined", boolT},
			{"typdelim", charT}, {"typrelid", oidT}, {"typelem", oidT}, {"typarray", oidT}, {"typinput", textT},
			{"typoutput", textT}, {"typreceive", textT}, {"typsend", textT}, {"typbasetype", oidT}, {"typtypmod", int4T},
			{"typndims", int4T}, {"typcollation", oidT}, {"typnotnull", boolT}, {"typdefault", textT}},
		rows: func(s *Session, snap *catalog.Snapshot) []plan.Row {
			var out []plan.Row
			for _, ti := range types.AllTypes() {
				out = append(out, plan.Row{dOID(ti.OID), dStr(ti.Name), dOID(oidPgCatalog), dOID(oidBootUser), dInt(int64(ti.Len)),
					dBool(ti.ByVal), dChar(string(rune(ti.Type))), dChar(string(rune(ti.Category))), dBool(ti.Preferred), dBool(true), dChar(","),
					dOID(0), dOID(ti.Elem), dOID(ti.Array), dStr(ti.Input), dStr(ti.Output), dStr(ti.Receive), dStr(ti.Send),
					dOID(0), dInt(-1), dInt(0), dOID(0), dBool(false), dNull()})
			}
			return out
		}},
	{schema: "pg_catalog", name: "pg_index", oid: 2610,
		cols: []vcol{{"indexrelid", oidT}, {"indrelid", oidT}, {"indnatts", int2T}, {"indnkeyatts", int2T}, {"indisunique", boolT},
			{"indisprimary", boolT}, {"indisexclusion", boolT}, {"indimmediate", boolT}, {"indisclustered", boolT},
			{"indisvalid", boolT}, {"indisready", boolT}, {"indislive", boolT}, {"indisreplident", boolT}, {"indkey", types.OIDInt2Vector},
			{"indexprs", textT}, {"indpred", textT}, {"indnullsnotdistinct", boolT}, {"indcheckxmin", boolT},
			{"indoption", types.OIDInt2Vector}, {"indcollation", types.OIDOIDVector}, {"indclass", types.OIDOIDVector}},
		rows: func(s *Session, snap *catalog.Snapshot) []plan.Row {
			var out []plan.Row
			for _, t := range sortedTables(s, snap) {
				if t.RowID {
					continue
				}
				var keys, opts, zeros []types.Datum
				for _, k := range t.Key {
					keys = append(keys, dInt(int64(attnum(t, k.Column))))
					opts = append(opts, dInt(indOption(k)))
					zeros = append(zeros, dOID(0))
				}
				out = append(out, plan.Row{dOID(pkeyOID(t)), dOID(t.OID()), dInt(int64(len(t.Key))), dInt(int64(len(t.Key))),
					dBool(true), dBool(true), dBool(false), dBool(true), dBool(false), dBool(true), dBool(true), dBool(true),
					dBool(false), types.DArray(keys), dNull(), dNull(), dBool(false), dBool(false), types.DArray(opts),
					types.DArray(zeros), types.DArray(zeros)})
			}
			return append(out, indexRows(s, snap)...)
		}},
	{schema: "pg_catalog", name: "pg_constraint", oid: 2606,
		cols: []vcol{{"oid", oidT}, {"conname", nameT}, {"connamespace", oidT}, {"contype", charT}, {"condeferrable", boolT},
			{"condeferred", boolT}, {"convalidated", boolT}, {"conrelid", oidT}, {"contypid", oidT}, {"conindid", oidT},
			{"confrelid", oidT}, {"conkey", types.OIDInt2Array}, {"consrc", textT}, {"conbin", textT},
			{"confupdtype", charT}, {"confdeltype", charT}, {"confmatchtype", charT}, {"confkey", types.OIDInt2Array},
			{"conparentid", oidT}, {"conislocal", boolT}, {"coninhcount", int4T}, {"connoinherit", boolT}},
		rows: func(s *Session, snap *catalog.Snapshot) (out []plan.Row) {
			defer func() { out = append(withoutFKColumns(out), fkConstraintRows(s, snap)...) }()
			ns := namespaces(s, snap)
			for _, t := range sortedTables(s, snap) {
				if !t.RowID {
					var keys []types.Datum
					for _, k := range t.Key {
						keys = append(keys, dInt(int64(attnum(t, k.Column))))
					}
					out = append(out, plan.Row{dOID(pkeyConstraintOID(t)), dStr(t.PKName), dOID(ns[t.Schema]), dChar("p"), dBool(false),
						dBool(false), dBool(true), dOID(t.OID()), dOID(0), dOID(pkeyOID(t)), dOID(0), types.DArray(keys), dNull(), dNull()})
				}
				for i, ck := range t.Checks {
					out = append(out, plan.Row{dOID(checkOID(t, i)), dStr(ck.Name), dOID(ns[t.Schema]), dChar("c"),
						dBool(false), dBool(false), dBool(!ck.NotValid), dOID(t.OID()), dOID(0), dOID(0), dOID(0), dNull(), dStr(ck.Expr), dStr(deparseStored(t, ck.Expr, tOf(boolT)))})
				}
				out = append(out, uniqueConstraintRows(t, ns)...)
			}
			return out
		}},
	{schema: "pg_catalog", name: "pg_am", oid: 2601,
		cols: []vcol{{"oid", oidT}, {"amname", nameT}, {"amhandler", textT}, {"amtype", charT}},
		rows: func(s *Session, snap *catalog.Snapshot) []plan.Row {
			return []plan.Row{{dOID(2), dStr("heap"), dStr("heap_tableam_handler"), dChar("t")},
				{dOID(403), dStr("btree"), dStr("bthandler"), dChar("i")},
				{dOID(405), dStr("hash"), dStr("hashhandler"), dChar("i")},
				{dOID(9900), dStr("lsm"), dStr("ybcinhandler"), dChar("i")}}
		}},
	{schema: "pg_catalog", name: "pg_description", oid: 2609,
		cols: []vcol{{"objoid", oidT}, {"classoid", oidT}, {"objsubid", int4T}, {"description", textT}},
		rows: descriptionRows},
	{schema: "pg_catalog", name: "pg_settings", oid: 12000,
		cols: []vcol{{"name", textT}, {"setting", textT}, {"unit", textT}, {"category", textT}, {"short_desc", textT},
			{"context", textT}, {"vartype", textT}, {"source", textT}},
		rows: func(s *Session, snap *catalog.Snapshot) []plan.Row {
			var out []plan.Row
			for _, kv := range s.allSettings() {
				out = append(out, plan.Row{dStr(kv[0]), dStr(kv[1]), dNull(), dStr(""), dStr(""), dStr("user"), dStr("string"), dStr("default")})
			}
			return out
		}},
	{schema: "pg_catalog", name: "pg_tables", oid: 12001,
		cols: []vcol{{"schemaname", nameT}, {"tablename", nameT}, {"tableowner", nameT}, {"tablespace", nameT},
			{"hasindexes", boolT}, {"hasrules", boolT}, {"hastriggers", boolT}, {"rowsecurity", boolT}},
		rows: func(s *Session, snap *catalog.Snapshot) []plan.Row {
			var out []plan.Row
			for _, t := range sortedTables(s, snap) {
				out = append(out, plan.Row{dStr(t.Schema), dStr(t.Name), dStr(s.user), dNull(), dBool(!t.RowID || len(t.Indexes) > 0),
					dBool(false), dBool(false), dBool(false)})
			}
			return out
		}},
	{schema: "pg_catalog", name: "pg_attrdef", oid: 2604,
		cols: []vcol{{"oid", oidT}, {"adrelid", oidT}, {"adnum", int2T}, {"adbin", textT}},
		rows: func(s *Session, snap *catalog.Snapshot) []plan.Row {
			var out []plan.Row
			for _, t := range sortedTables(s, snap) {
				for i, c := range t.Columns {
					if c.Hidden || columnDefault(t, t.Columns[i]) == "" {
						continue
					}
					// adbin holds the expression's text: pg_get_expr returns it.
					out = append(out, plan.Row{dOID(t.OID() + 1<<23 + uint32(i)), dOID(t.OID()), dInt(int64(attnum(t, i))), dStr(columnDefault(t, t.Columns[i]))})
				}
			}
			return out
		}},
	{schema: "pg_catalog", name: "pg_collation", oid: 3456,
		cols: []vcol{{"oid", oidT}, {"collname", nameT}, {"collnamespace", oidT}, {"collprovider", charT}, {"collencoding", int4T}},
		rows: func(*Session, *catalog.Snapshot) []plan.Row {
			return []plan.Row{{dOID(100), dStr("default"), dOID(oidPgCatalog), dChar("d"), dInt(-1)},
				{dOID(950), dStr("C"), dOID(oidPgCatalog), dChar("c"), dInt(-1)},
				{dOID(951), dStr("POSIX"), dOID(oidPgCatalog), dChar("c"), dInt(-1)}}
		}},
	{schema: "pg_catalog", name: "pg_partitioned_table", oid: 3350,
		cols: []vcol{{"partrelid", oidT}, {"partstrat", charT}, {"partnatts", int2T}},
		rows: func(*Session, *catalog.Snapshot) []plan.Row { return nil }},
	{schema: "pg_catalog", name: "pg_inherits", oid: 2611,
		cols: []vcol{{"inhrelid", oidT}, {"inhparent", oidT}, {"inhseqno", int4T}, {"inhdetachpending", boolT}},
		rows: func(*Session, *catalog.Snapshot) []plan.Row { return nil }},
	{schema: "information_schema", name: "schemata", oid: 13100,
		cols: []vcol{{"catalog_name", nameT}, {"schema_name", nameT}, {"schema_owner", nameT}},
		rows: func(s *Session, snap *catalog.Snapshot) []plan.Row {
			var out []plan.Row
			for name := range namespaces(s, snap) {
				out = append(out, plan.Row{dStr(s.db), dStr(name), dStr(s.user)})
			}
			return out
		}},
	{schema: "information_schema", name: "tables", oid: 13101,
		cols: []vcol{{"table_catalog", nameT}, {"table_schema", nameT}, {"table_name", nameT}, {"table_type", textT},
			{"is_insertable_into", textT}},
		rows: func(s *Session, snap *catalog.Snapshot) []plan.Row {
			var out []plan.Row
			for _, t := range sortedTables(s, snap) {
				out = append(out, plan.Row{dStr(s.db), dStr(t.Schema), dStr(t.Name), dStr("BASE TABLE"), dStr("YES")})
			}
			for _, v := range sortedViews(s, snap) {
				out = append(out, plan.Row{dStr(s.db), dStr(v.Schema), dStr(v.Name), dStr("VIEW"), dStr("NO")})
			}
			return out
		}},
	{schema: "information_schema", name: "columns", oid: 13102,
		// PostgreSQL 15's columns, in its order (TypeORM reads udt_schema,
		// the identity columns and more).
		cols: []vcol{{"table_catalog", nameT}, {"table_schema", nameT}, {"table_name", nameT}, {"column_name", nameT},
			{"ordinal_position", int4T}, {"column_default", textT}, {"is_nullable", textT}, {"data_type", textT},
			{"character_maximum_length", int4T}, {"character_octet_length", int4T}, {"numeric_precision", int4T},
			{"numeric_precision_radix", int4T}, {"numeric_scale", int4T}, {"datetime_precision", int4T},
			{"interval_type", textT}, {"interval_precision", int4T}, {"character_set_catalog", nameT},
			{"character_set_schema", nameT}, {"character_set_name", nameT}, {"collation_catalog", nameT},
			{"collation_schema", nameT}, {"collation_name", nameT}, {"domain_catalog", nameT}, {"domain_schema", nameT},
			{"domain_name", nameT}, {"udt_catalog", nameT}, {"udt_schema", nameT}, {"udt_name", nameT},
			{"scope_catalog", nameT}, {"scope_schema", nameT}, {"scope_name", nameT}, {"maximum_cardinality", int4T},
			{"dtd_identifier", nameT}, {"is_self_referencing", textT}, {"is_identity", textT},
			{"identity_generation", textT}, {"identity_start", textT}, {"identity_increment", textT},
			{"identity_maximum", textT}, {"identity_minimum", textT}, {"identity_cycle", textT}, {"is_generated", textT},
			{"generation_expression", textT}, {"is_updatable", textT}},
		rows: func(s *Session, snap *catalog.Snapshot) []plan.Row {
			var out []plan.Row
			yesNo := func(b bool) types.Datum { return dStr(map[bool]string{true: "YES", false: "NO"}[b]) }
			add := func(t *catalog.Table, schema, table string, n int, c catalog.Column, def types.Datum) {
				maxLen, octets, prec, radix, scale, dtPrec := dNull(), dNull(), dNull(), dNull(), dNull(), dNull()
				if l := c.Type.CharLen(); l > 0 {
					maxLen, octets = dInt(int64(l)), dInt(int64(4*l))
				} else if c.Type.Family() == types.FamString {
					octets = dInt(1073741824)
				}
				if p, sc, ok := c.Type.NumericPrecScale(); ok {
					prec, scale = dInt(int64(p)), dInt(int64(sc))
				}
				if c.Type.OID == types.OIDNumeric {
					radix = dInt(10)
				}
				// PostgreSQL's binary precisions of the integer and
				// float types (numeric_precision_radix 2).
				switch c.Type.OID {
				case types.OIDInt2:
					prec, radix, scale = dInt(16), dInt(2), dInt(0)
				case types.OIDInt4:
					prec, radix, scale = dInt(32), dInt(2), dInt(0)
				case types.OIDInt8:
					prec, radix, scale = dInt(64), dInt(2), dInt(0)
				case types.OIDFloat4:
					prec, radix = dInt(24), dInt(2)
				case types.OIDFloat8:
					prec, radix = dInt(53), dInt(2)
				case types.OIDDate:
					dtPrec = dInt(0)
				case types.OIDTime, types.OIDTimestamp, types.OIDTimestampTZ, types.OIDInterval:
					p := c.Type.TimePrecision()
					if p < 0 {
						p = 6
					}
					dtPrec = dInt(int64(p))
				}
				dataType := types.FormatType(c.Type.OID, -1)
				udt := ""
				if info := types.Info(c.Type.OID); info != nil {
					udt = info.Name
				}
				idGen, idStart, idInc, idMax, idMin, idCycle := dNull(), dNull(), dNull(), dNull(), dNull(), dStr("NO")
				if c.Identity != "" && t != nil {
					idGen = dStr(map[bool]string{true: "ALWAYS", false: "BY DEFAULT"}[c.Identity == "a"])
					def = dNull() // PostgreSQL shows no default for an identity column
					for _, q := range snap.Sequences[s.db] {
						if q.Schema == t.Schema && q.OwnedBy == t.Name+"."+c.Name {
							idStart, idInc = dStr(fmt.Sprint(q.Start)), dStr(fmt.Sprint(q.Increment))
							idMax, idMin, idCycle = dStr(fmt.Sprint(q.Max)), dStr(fmt.Sprint(q.Min)), yesNo(q.Cycle)
						}
					}
				}
				out = append(out, plan.Row{dStr(s.db), dStr(schema), dStr(table), dStr(c.Name), dInt(int64(n)), def,
					yesNo(!c.NotNull), dStr(dataType), maxLen, octets, prec, radix, scale, dtPrec,
					dNull(), dNull(), dNull(), dNull(), dNull(), dNull(), dNull(), dNull(), dNull(), dNull(), dNull(),
					dStr(s.db), dStr("pg_catalog"), dStr(udt), dNull(), dNull(), dNull(), dNull(),
					dStr(fmt.Sprint(n)), dStr("NO"), yesNo(c.Identity != ""), idGen, idStart, idInc, idMax, idMin, idCycle,
					dStr("NEVER"), dNull(), yesNo(t != nil)})
			}
			for _, t := range sortedTables(s, snap) {
				n := 0
				for _, c := range t.Columns {
					if c.Hidden {
						continue
					}
					n++
					def := dNull()
					if d := columnDefault(t, c); d != "" {
						def = dStr(d)
					}
					add(t, t.Schema, t.Name, n, c, def)
				}
			}
			for _, v := range sortedViews(s, snap) {
				for i, c := range v.Columns {
					add(nil, v.Schema, v.Name, i+1, catalog.Column{Name: c.Name, Type: c.Type}, dNull())
				}
			}
			return out
		}},
	{schema: "information_schema", name: "views", oid: 13108,
		cols: []vcol{{"table_catalog", nameT}, {"table_schema", nameT}, {"table_name", nameT}, {"view_definition", textT},
			{"check_option", textT}, {"is_updatable", textT}, {"is_insertable_into", textT}},
		rows: func(s *Session, snap *catalog.Snapshot) []plan.Row {
			var out []plan.Row
			for _, v := range sortedViews(s, snap) {
				out = append(out, plan.Row{dStr(s.db), dStr(v.Schema), dStr(v.Name), dStr(viewDefinition(v)),
					dStr("NONE"), dStr("NO"), dStr("NO")})
			}
			return out
		}},
	{schema: "pg_catalog", name: "pg_views", oid: 12003,
		cols: []vcol{{"schemaname", nameT}, {"viewname", nameT}, {"viewowner", nameT}, {"definition", textT}},
		rows: func(s *Session, snap *catalog.Snapshot) []plan.Row {
			var out []plan.Row
			for _, v := range sortedViews(s, snap) {
				out = append(out, plan.Row{dStr(v.Schema), dStr(v.Name), dStr(s.user), dStr(viewDefinition(v))})
			}
			return out
		}},
	{schema: "information_schema", name: "table_constraints", oid: 13103,
		cols: []vcol{{"constraint_catalog", nameT}, {"constraint_schema", nameT}, {"constraint_name", nameT},
			{"table_catalog", nameT}, {"table_schema", nameT}, {"table_name", nameT}, {"constraint_type", textT},
			{"is_deferrable", textT}, {"initially_deferred", textT}, {"enforced", textT}, {"nulls_distinct", textT}},
		rows: func(s *Session, snap *catalog.Snapshot) (out []plan.Row) {
			defer func() { out = tableConstraintExtras(out) }()
			for _, t := range sortedTables(s, snap) {
				for _, fk := range t.ForeignKeys {
					out = append(out, plan.Row{dStr(s.db), dStr(t.Schema), dStr(fk.Name), dStr(s.db), dStr(t.Schema), dStr(t.Name),
						dStr("FOREIGN KEY"), yesNo(fk.Deferrable), yesNo(fk.Deferred)})
				}
				if !t.RowID {
					out = append(out, plan.Row{dStr(s.db), dStr(t.Schema), dStr(t.PKName), dStr(s.db), dStr(t.Schema), dStr(t.Name), dStr("PRIMARY KEY")})
				}
				for _, ck := range t.Checks {
					out = append(out, plan.Row{dStr(s.db), dStr(t.Schema), dStr(ck.Name), dStr(s.db), dStr(t.Schema), dStr(t.Name), dStr("CHECK")})
				}
				for _, ix := range uniqueConstraints(t) {
					out = append(out, plan.Row{dStr(s.db), dStr(t.Schema), dStr(ix.Name), dStr(s.db), dStr(t.Schema), dStr(t.Name), dStr("UNIQUE")})
				}
			}
			return out
		}},
	{schema: "information_schema", name: "key_column_usage", oid: 13104,
		cols: []vcol{{"constraint_catalog", nameT}, {"constraint_schema", nameT}, {"constraint_name", nameT},
			{"table_catalog", nameT}, {"table_schema", nameT}, {"table_name", nameT}, {"column_name", nameT}, {"ordinal_position", int4T},
			{"position_in_unique_constraint", int4T}},
		rows: func(s *Session, snap *catalog.Snapshot) (out []plan.Row) {
			defer func() { out = append(withNullPosition(out), fkKeyColumnRows(s, snap)...) }()
			for _, t := range sortedTables(s, snap) {
				if t.RowID {
					continue
				}
				for i, k := range t.Key {
					out = append(out, plan.Row{dStr(s.db), dStr(t.Schema), dStr(t.PKName), dStr(s.db), dStr(t.Schema), dStr(t.Name),
						dStr(t.Columns[k.Column].Name), dInt(int64(i + 1))})
				}
				for _, ix := range uniqueConstraints(t) {
					for i, c := range ix.Columns {
						out = append(out, plan.Row{dStr(s.db), dStr(t.Schema), dStr(ix.Name), dStr(s.db), dStr(t.Schema), dStr(t.Name),
							dStr(t.Columns[t.ColumnByID(c.ID)].Name), dInt(int64(i + 1))})
					}
				}
			}
			return out
		}},
	{schema: "information_schema", name: "constraint_column_usage", oid: 13109,
		// The columns each constraint uses: a key's own, a CHECK's, and
		// for a foreign key the referenced table's (Sequelize's
		// sync({alter}) reads the references from here).
		cols: []vcol{{"table_catalog", nameT}, {"table_schema", nameT}, {"table_name", nameT}, {"column_name", nameT},
			{"constraint_catalog", nameT}, {"constraint_schema", nameT}, {"constraint_name", nameT}},
		rows: func(s *Session, snap *catalog.Snapshot) (out []plan.Row) {
			row := func(t *catalog.Table, col, schema, name string) plan.Row {
				return plan.Row{dStr(s.db), dStr(t.Schema), dStr(t.Name), dStr(col), dStr(s.db), dStr(schema), dStr(name)}
			}
			for _, t := range sortedTables(s, snap) {
				if !t.RowID {
					for _, k := range t.Key {
						out = append(out, row(t, t.Columns[k.Column].Name, t.Schema, t.PKName))
					}
				}
				for _, ix := range uniqueConstraints(t) {
					for _, c := range ix.Columns {
						out = append(out, row(t, t.Columns[t.ColumnByID(c.ID)].Name, t.Schema, ix.Name))
					}
				}
				for _, ck := range t.Checks {
					for _, c := range t.Columns {
						if !c.Hidden && exprNamesColumn(ck.Expr, c.Name) {
							out = append(out, row(t, c.Name, t.Schema, ck.Name))
						}
					}
				}
			}
			eachForeignKey(s, snap, func(t, parent *catalog.Table, fk *catalog.ForeignKey, _ int) {
				for _, id := range fk.RefColumns {
					out = append(out, row(parent, parent.Columns[parent.ColumnByID(id)].Name, t.Schema, fk.Name))
				}
			})
			return out
		}},
	{schema: "information_schema", name: "referential_constraints", oid: 13105,
		cols: []vcol{{"constraint_catalog", nameT}, {"constraint_schema", nameT}, {"constraint_name", nameT},
			{"unique_constraint_catalog", nameT}, {"unique_constraint_schema", nameT}, {"unique_constraint_name", nameT},
			{"match_option", textT}, {"update_rule", textT}, {"delete_rule", textT}},
		rows: referentialConstraintRows},
}

// virtualList breaks the initialisation cycle of pg_class listing the
// virtual relations themselves.
var virtualList func() []vdef

func init() { virtualList = func() []vdef { return virtualDefs } }

func visibleCount(t *catalog.Table) int {
	n := 0
	for _, c := range t.Columns {
		if !c.Hidden {
			n++
		}
	}
	return n
}

// attnum is the pg_attribute number of column i (hidden columns do not
// count).
func attnum(t *catalog.Table, i int) int {
	n := 0
	for j := 0; j <= i; j++ {
		if !t.Columns[j].Hidden {
			n++
		}
	}
	return n
}

func pkeyOID(t *catalog.Table) uint32 { return t.OID() + 1<<22 }

// virtualTable resolves a catalog relation for the binder.
func (s *Session) virtualTable(schema, name string) (*plan.VirtualTable, bool) {
	for i := range virtualDefs {
		d := &virtualDefs[i]
		if d.schema != schema || d.name != name {
			continue
		}
		vt := &plan.VirtualTable{Schema: d.schema, Name: d.name, OID: d.oid}
		for j, c := range d.cols {
			vt.Cols = append(vt.Cols, plan.Column{Name: c.name, T: tOf(c.oid), Table: name, TableOID: d.oid, AttNum: int16(j + 1)})
		}
		vt.Rows = func() ([]plan.Row, error) {
			snap, err := s.snapshot(context.Background())
			if err != nil {
				return nil, err
			}
			return d.rows(s, snap), nil
		}
		return vt, true
	}
	return nil, false
}
