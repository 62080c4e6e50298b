package exec

import (
	"fmt"
	"math"
	"strings"

	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Catalog relations clients join on that have no rows here (no policies,
// triggers, rules, publications, foreign tables, extended statistics ...).
// Their columns are PostgreSQL 15's, written as "name:type" the way
// format_type prints them; pg_node_tree is text and aclitem[] text[].
var emptyRelations = []struct {
	name string
	oid  uint32
	cols string
}{
	{"pg_policy", 3256, `oid:oid polname:name polrelid:oid polcmd:"char" polpermissive:boolean polroles:oid[] polqual:pg_node_tree polwithcheck:pg_node_tree`},
	{"pg_trigger", 2620, `oid:oid tgrelid:oid tgparentid:oid tgname:name tgfoid:oid tgtype:smallint tgenabled:"char" tgisinternal:boolean tgconstrrelid:oid tgconstrindid:oid tgconstraint:oid tgdeferrable:boolean tginitdeferred:boolean tgnargs:smallint tgattr:int2vector tgargs:bytea tgqual:pg_node_tree tgoldtable:name tgnewtable:name`},
	{"pg_statistic_ext", 3381, `oid:oid stxrelid:oid stxname:name stxnamespace:oid stxowner:oid stxstattarget:integer stxkeys:int2vector stxkind:"char"[] stxexprs:pg_node_tree`},
	{"pg_publication", 6104, `oid:oid pubname:name pubowner:oid puballtables:boolean pubinsert:boolean pubupdate:boolean pubdelete:boolean pubtruncate:boolean pubviaroot:boolean`},
	{"pg_publication_rel", 6106, `oid:oid prpubid:oid prrelid:oid prqual:pg_node_tree prattrs:int2vector`},
	{"pg_publication_namespace", 6237, `oid:oid pnpubid:oid pnnspid:oid`},
	{"pg_rewrite", 2618, `oid:oid rulename:name ev_class:oid ev_type:"char" ev_enabled:"char" is_instead:boolean ev_qual:pg_node_tree ev_action:pg_node_tree`},
	{"pg_foreign_table", 3118, `ftrelid:oid ftserver:oid ftoptions:text[]`},
	{"pg_foreign_server", 1417, `oid:oid srvname:name srvowner:oid srvfdw:oid srvtype:text srvversion:text srvacl:aclitem[] srvoptions:text[]`},
	{"pg_foreign_data_wrapper", 2328, `oid:oid fdwname:name fdwowner:oid fdwhandler:oid fdwvalidator:oid fdwacl:aclitem[] fdwoptions:text[]`},
	{"pg_event_trigger", 3466, `oid:oid evtname:name evtevent:name evtowner:oid evtfoid:oid evtenabled:"char" evttags:text[]`},
	{"pg_enum", 3501, `oid:oid enumtypid:oid enumsortorder:real enumlabel:name`},
	{"pg_range", 3541, `rngtypid:oid rngsubtype:oid rngmultitypid:oid rngcollation:oid rngsubopc:oid rngcanonical:regproc rngsubdiff:regproc`},
	{"pg_seclabel", 3596, `objoid:oid classoid:oid objsubid:integer provider:text label:text`},
	{"pg_shdescription", 2396, `objoid:oid classoid:oid description:text`},
	{"pg_auth_members", 1261, `roleid:oid member:oid grantor:oid admin_option:boolean`},
	{"pg_default_acl", 826, `oid:oid defaclrole:oid defaclnamespace:oid defaclobjtype:"char" defaclacl:aclitem[]`},
	{"pg_init_privs", 3394, `objoid:oid classoid:oid objsubid:integer privtype:"char" initprivs:aclitem[]`},
	{"pg_conversion", 2607, `oid:oid conname:name connamespace:oid conowner:oid conforencoding:integer contoencoding:integer conproc:regproc condefault:boolean`},
	{"pg_proc", 1255, `oid:oid proname:name pronamespace:oid proowner:oid prolang:oid procost:real prorows:real provariadic:oid prosupport:regproc prokind:"char" prosecdef:boolean proleakproof:boolean proisstrict:boolean proretset:boolean provolatile:"char" proparallel:"char" pronargs:smallint pronargdefaults:smallint prorettype:oid proargtypes:oidvector proallargtypes:oid[] proargmodes:"char"[] proargnames:text[] proargdefaults:pg_node_tree protrftypes:oid[] prosrc:text probin:text prosqlbody:pg_node_tree proconfig:text[] proacl:aclitem[]`},
	{"pg_views", 12028, `schemaname:name viewname:name viewowner:name definition:text`},
	{"pg_matviews", 12038, `schemaname:name matviewname:name matviewowner:name tablespace:name hasindexes:boolean ispopulated:boolean definition:text`},
}

// colSpec parses "name:type ..." into virtual columns.
func colSpec(spec string) []vcol {
	var out []vcol
	for _, f := range strings.Fields(spec) {
		name, typ, _ := strings.Cut(f, ":")
		switch typ {
		case "pg_node_tree":
			typ = "text"
		case "aclitem[]":
			typ = "text[]"
		}
		t, err := types.ParseType(typ)
		if err != nil {
			panic(fmt.Sprintf("virtual column %s: %v", f, err))
		}
		out = append(out, vcol{name, t.OID})
	}
	return out
}

func sortedSequences(s *Session, snap *catalog.Snapshot) []*catalog.Sequence {
	return byName(snap.Sequences[s.db])
}

func sortedViews(s *Session, snap *catalog.Snapshot) []*catalog.View { return byName(snap.Views[s.db]) }

// sequenceType is the type a sequence was made for (its maximum tells).
func sequenceType(q *catalog.Sequence) uint32 {
	switch q.Max {
	case math.MaxInt32:
		return types.OIDInt4
	case math.MaxInt16:
		return types.OIDInt2
	}
	return types.OIDInt8
}

const (
	oidDefaultTablespace = 1663
	oidGlobalTablespace  = 1664
	oidHeapAM            = 2
	oidLSMAM             = 9900
)

// relAM is pg_class.relam: tables are heap (PostgreSQL 15's table access
// method), indexes YugabyteDB's lsm.
func relAM(relkind string) uint32 {
	switch relkind {
	case "r":
		return oidHeapAM
	case "i":
		return oidLSMAM
	}
	return 0
}

// indOption is a key column's pg_index.indoption: DESC (1) with NULLS
// FIRST (2) for descending range columns, YugabyteDB's HASH (4) for hash
// columns.
func indOption(k catalog.KeyColumn) int64 {
	switch {
	case k.Hash:
		return 4
	case k.Desc:
		return 3
	}
	return 0
}

var clientDefs = []vdef{
	{schema: "pg_catalog", name: "pg_locks", oid: 12005,
		cols: colSpec(`locktype:text database:oid relation:oid page:integer tuple:smallint virtualxid:text transactionid:text classid:oid objid:oid objsubid:smallint virtualtransaction:text pid:integer mode:text granted:boolean fastpath:boolean waitstart:timestamptz`),
		rows: func(s *Session, _ *catalog.Snapshot) []plan.Row { return s.e.advisoryLockRows() }},
	{schema: "pg_catalog", name: "pg_stat_activity", oid: 12006,
		cols: colSpec(`datid:oid datname:name pid:integer leader_pid:integer usesysid:oid usename:name application_name:text client_addr:text client_hostname:text client_port:integer backend_start:timestamptz xact_start:timestamptz query_start:timestamptz state_change:timestamptz wait_event_type:text wait_event:text state:text backend_xid:text backend_xmin:text query_id:bigint query:text backend_type:text`),
		rows: func(s *Session, snap *catalog.Snapshot) []plan.Row {
			return s.e.activityRows(func(db string) uint32 {
				if d, ok := snap.Databases[db]; ok {
					return d.OID
				}
				return 0
			})
		}},
	{schema: "pg_catalog", name: "pg_extension", oid: 3079,
		cols: colSpec(`oid:oid extname:name extowner:oid extnamespace:oid extrelocatable:boolean extversion:text extconfig:oid[] extcondition:text[]`),
		rows: func(*Session, *catalog.Snapshot) []plan.Row {
			// plpgsql, installed in every database as in PostgreSQL
			// (psql's \dx lists it).
			return []plan.Row{{dOID(13546), dStr("plpgsql"), dOID(oidBootUser), dOID(oidPgCatalog), dBool(false), dStr("1.0"), dNull(), dNull()}}
		}},
	// The statistics views list the tables with no counts kept (zeros,
	// NULL times): tools and ORMs join them for the table names
	// (Sequelize reads column comments through pg_statio_all_tables).
	{schema: "pg_catalog", name: "pg_statio_all_tables", oid: 12010, cols: colSpec(statioCols), rows: statioRows},
	{schema: "pg_catalog", name: "pg_statio_user_tables", oid: 12011, cols: colSpec(statioCols), rows: statioRows},
	{schema: "pg_catalog", name: "pg_stat_all_tables", oid: 12012, cols: colSpec(statTablesCols), rows: statTablesRows},
	{schema: "pg_catalog", name: "pg_stat_user_tables", oid: 12013, cols: colSpec(statTablesCols), rows: statTablesRows},
	{schema: "pg_catalog", name: "pg_tablespace", oid: 1213,
		cols: colSpec(`oid:oid spcname:name spcowner:oid spcacl:aclitem[] spcoptions:text[]`),
		rows: func(*Session, *catalog.Snapshot) []plan.Row {
			return []plan.Row{{dOID(oidDefaultTablespace), dStr("pg_default"), dOID(oidBootUser), dNull(), dNull()},
				{dOID(oidGlobalTablespace), dStr("pg_global"), dOID(oidBootUser), dNull(), dNull()}}
		}},
	{schema: "pg_catalog", name: "pg_sequence", oid: 2224,
		cols: colSpec(`seqrelid:oid seqtypid:oid seqstart:bigint seqincrement:bigint seqmax:bigint seqmin:bigint seqcache:bigint seqcycle:boolean`),
		rows: func(s *Session, snap *catalog.Snapshot) []plan.Row {
			var out []plan.Row
			for _, q := range sortedSequences(s, snap) {
				out = append(out, plan.Row{dOID(q.OID), dOID(sequenceType(q)), dInt(q.Start), dInt(q.Increment), dInt(q.Max),
					dInt(q.Min), dInt(q.Cache), dBool(q.Cycle)})
			}
			return out
		}},
	{schema: "pg_catalog", name: "pg_indexes", oid: 12004,
		cols: colSpec(`schemaname:name tablename:name indexname:name tablespace:name indexdef:text`),
		rows: func(s *Session, snap *catalog.Snapshot) []plan.Row {
			var out []plan.Row
			for _, t := range byName(snap.Tables[s.db]) {
				if !t.RowID {
					out = append(out, plan.Row{dStr(t.Schema), dStr(t.Name), dStr(t.PKName), dNull(), dStr(pkeyDef(t))})
				}
				for i := range t.Indexes {
					if def, ok := s.indexDef(t.Indexes[i].OID()); ok {
						out = append(out, plan.Row{dStr(t.Schema), dStr(t.Name), dStr(t.Indexes[i].Name), dNull(), dStr(def)})
					}
				}
			}
			return out
		}},
	{schema: "pg_catalog", name: "pg_sequences", oid: 12002,
		cols: colSpec(`schemaname:name sequencename:name sequenceowner:name data_type:regtype start_value:bigint min_value:bigint max_value:bigint increment_by:bigint cycle:boolean cache_size:bigint last_value:bigint`),
		rows: func(s *Session, snap *catalog.Snapshot) []plan.Row {
			// last_value is NULL, as PostgreSQL shows it to a role that
			// may not read the sequence: nodes hand out values from
			// blocks of their own, and the last given is not kept.
			var out []plan.Row
			for _, q := range sortedSequences(s, snap) {
				out = append(out, plan.Row{dStr(q.Schema), dStr(q.Name), dStr(s.user), dOID(sequenceType(q)), dInt(q.Start),
					dInt(q.Min), dInt(q.Max), dInt(q.Increment), dBool(q.Cycle), dInt(q.Cache), dNull()})
			}
			return out
		}},
	{schema: "pg_catalog", name: "pg_depend", oid: 2608,
		cols: colSpec(`classid:oid objid:oid objsubid:integer refclassid:oid refobjid:oid refobjsubid:integer deptype:"char"`),
		rows: func(s *Session, snap *catalog.Snapshot) []plan.Row {
			// A SERIAL column's sequence depends on the column (auto), an
			// identity column's internally.
			var out []plan.Row
			for _, q := range sortedSequences(s, snap) {
				tname, col, ok := strings.Cut(q.OwnedBy, ".")
				if !ok {
					continue
				}
				t, ok := snap.Table(s.db, q.Schema, tname)
				if !ok {
					continue
				}
				i := t.ColumnIndex(col)
				if i < 0 {
					continue
				}
				dep := "a"
				if t.Columns[i].Identity != "" {
					dep = "i"
				}
				out = append(out, plan.Row{dOID(oidPgClass), dOID(q.OID), dInt(0), dOID(oidPgClass), dOID(t.OID()),
					dInt(int64(attnum(t, i))), dChar(dep)})
			}
			return out
		}},
}

const oidPgClass = 1259

// indexAttributes are pg_attribute's rows of indexes: one per key column,
// copied from the table's column (PostgreSQL gives an index relation its
// own attributes), for the pg_index rows whose index has none yet.
func indexAttributes(s *Session, snap *catalog.Snapshot, attrs []plan.Row) []plan.Row {
	var index []plan.Row
	for _, d := range virtualDefs {
		if d.schema == "pg_catalog" && d.name == "pg_index" {
			index = d.rows(s, snap)
		}
	}
	type key struct {
		rel uint32
		num int64
	}
	byKey := map[key]plan.Row{}
	has := map[uint32]bool{}
	for _, a := range attrs {
		byKey[key{uint32(a[0].I), a[4].I}] = a
		has[uint32(a[0].I)] = true
	}
	var out []plan.Row
	for _, ix := range index {
		idx, rel := uint32(ix[0].I), uint32(ix[1].I)
		if has[idx] {
			continue
		}
		for i, k := range ix[13].A {
			a, ok := byKey[key{rel, k.I}]
			if !ok {
				continue
			}
			row := append(plan.Row(nil), a...)
			row[0], row[4], row[7], row[9] = dOID(idx), dInt(int64(i+1)), dBool(false), dChar("")
			out = append(out, row)
		}
	}
	return out
}

func init() {
	for i := range virtualDefs {
		if d := &virtualDefs[i]; d.schema == "pg_catalog" && d.name == "pg_attribute" {
			tableAttrs := d.rows
			d.rows = func(s *Session, snap *catalog.Snapshot) []plan.Row {
				rows := tableAttrs(s, snap)
				return append(rows, indexAttributes(s, snap, rows)...)
			}
		}
	}
	virtualDefs = append(virtualDefs, clientDefs...)
	for _, r := range emptyRelations {
		virtualDefs = append(virtualDefs, vdef{schema: "pg_catalog", name: r.name, oid: r.oid, cols: colSpec(r.cols),
			rows: func(*Session, *catalog.Snapshot) []plan.Row { return nil }})
	}
}

// Constraint OIDs are derived from the table's: the primary key's and
// each CHECK's in their own ranges (table OIDs stay below 1<<22 above
// FirstUserOID), so that consecutive tables do not share them.
func pkeyConstraintOID(t *catalog.Table) uint32 { return t.OID() + 3<<22 }

func checkOID(t *catalog.Table, i int) uint32 { return t.OID() + uint32(4+i)<<22 }

const statioCols = `relid:oid schemaname:name relname:name heap_blks_read:bigint heap_blks_hit:bigint idx_blks_read:bigint idx_blks_hit:bigint toast_blks_read:bigint toast_blks_hit:bigint tidx_blks_read:bigint tidx_blks_hit:bigint`

const statTablesCols = `relid:oid schemaname:name relname:name seq_scan:bigint seq_tup_read:bigint idx_scan:bigint idx_tup_fetch:bigint n_tup_ins:bigint n_tup_upd:bigint n_tup_del:bigint n_tup_hot_upd:bigint n_live_tup:bigint n_dead_tup:bigint n_mod_since_analyze:bigint n_ins_since_vacuum:bigint last_vacuum:timestamptz last_autovacuum:timestamptz last_analyze:timestamptz last_autoanalyze:timestamptz vacuum_count:bigint autovacuum_count:bigint analyze_count:bigint autoanalyze_count:bigint`

func statioRows(s *Session, snap *catalog.Snapshot) []plan.Row {
	var out []plan.Row
	for _, t := range sortedTables(s, snap) {
		z := dInt(0)
		out = append(out, plan.Row{dOID(t.OID()), dStr(t.Schema), dStr(t.Name), z, z, z, z, dNull(), dNull(), dNull(), dNull()})
	}
	return out
}

func statTablesRows(s *Session, snap *catalog.Snapshot) []plan.Row {
	var out []plan.Row
	for _, t := range sortedTables(s, snap) {
		row := plan.Row{dOID(t.OID()), dStr(t.Schema), dStr(t.Name)}
		for range 12 {
			row = append(row, dInt(0))
		}
		for range 4 {
			row = append(row, dNull())
		}
		for range 4 {
			row = append(row, dInt(0))
		}
		out = append(out, row)
	}
	return out
}
