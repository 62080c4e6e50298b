package exec

import (
	"math"
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// viewOptions checks CREATE VIEW's WITH (...) as PostgreSQL's
// view_reloptions does: only security_barrier and security_invoker
// (booleans), each once; anything else is 22023 rather than silently
// kept. It says whether check_option was given (views are not updatable
// here: the caller refuses it).
func viewOptions(opts []*pg.Node) (checkOption bool, err error) {
	for _, o := range opts {
		// DefineView refuses a check_option before it reads the others.
		if de := o.GetDefElem(); de != nil && de.GetDefnamespace() == "" && de.GetDefname() == "check_option" {
			return true, nil
		}
	}
	seen := map[string]bool{}
	for _, o := range opts {
		de := o.GetDefElem()
		if de == nil || de.GetDefnamespace() != "" {
			continue // toast.* options are the table's, ignored for a view
		}
		name := de.GetDefname()
		if seen[name] {
			return false, pgerror.New(pgerror.CodeInvalidParameterValue, "parameter %q specified more than once", name)
		}
		seen[name] = true
		v, given := defElemString(de)
		switch name {
		case "security_barrier", "security_invoker":
			if _, ok := types.ParseBool(v); given && !ok {
				return false, pgerror.New(pgerror.CodeInvalidParameterValue, "invalid value for boolean option %q: %s", name, v)
			}
		default:
			return false, pgerror.New(pgerror.CodeInvalidParameterValue, "unrecognized parameter %q", name)
		}
	}
	return checkOption, nil
}

// defElemString is a DefElem's value as defGetString reads it; given is
// false for a bare name (WITH (security_barrier), which means true).
func defElemString(de *pg.DefElem) (v string, given bool) {
	a := de.GetArg()
	switch {
	case a == nil:
		return "true", false
	case a.GetString_() != nil:
		return a.GetString_().GetSval(), true
	case a.GetInteger() != nil:
		return strconv.Itoa(int(a.GetInteger().GetIval())), true
	case a.GetFloat() != nil:
		return a.GetFloat().GetFval(), true
	case a.GetBoolean() != nil:
		return strconv.FormatBool(a.GetBoolean().GetBoolval()), true
	case a.GetTypeName() != nil:
		names := a.GetTypeName().GetNames()
		return names[len(names)-1].GetString_().GetSval(), true
	}
	return "", true
}

// relOption is a storage parameter's kind and, for numbers, its bounds
// (PostgreSQL's reloptions.c); heapOnly ones have no toast.* form.
type relOption struct {
	kind     byte // 'i' integer, 'r' real, 'b' boolean, 'e' vacuum_index_cleanup
	min, max float64
	heapOnly bool
}

// indexOptionKinds are btree's options. The index stores neither; they
// were accepted whatever they named.
var indexOptionKinds = map[string]relOption{
	"fillfactor":        {kind: 'i', min: 10, max: 100},
	"deduplicate_items": {kind: 'b'},
}

// tableOptionKinds are PostgreSQL 15's heap reloptions, with YugabyteDB's
// colocation (this cluster does not colocate tables: accepted, ignored).
// None changes how a table is stored here; they are checked, as
// PostgreSQL checks them, so that a typo is an error and not a setting
// silently dropped.
var tableOptionKinds = map[string]relOption{
	"fillfactor":                            {'i', 10, 100, true},
	"toast_tuple_target":                    {'i', 128, 8160, true},
	"parallel_workers":                      {'i', 0, 1024, true},
	"autovacuum_enabled":                    {kind: 'b'},
	"autovacuum_vacuum_threshold":           {'i', 0, math.MaxInt32, false},
	"autovacuum_vacuum_insert_threshold":    {'i', -1, math.MaxInt32, false},
	"autovacuum_analyze_threshold":          {'i', 0, math.MaxInt32, false},
	"autovacuum_vacuum_cost_limit":          {'i', 1, 10000, false},
	"autovacuum_freeze_min_age":             {'i', 0, 1000000000, false},
	"autovacuum_freeze_max_age":             {'i', 100000, 2000000000, false},
	"autovacuum_freeze_table_age":           {'i', 0, 2000000000, false},
	"autovacuum_multixact_freeze_min_age":   {'i', 0, 1000000000, false},
	"autovacuum_multixact_freeze_max_age":   {'i', 10000, 2000000000, false},
	"autovacuum_multixact_freeze_table_age": {'i', 0, 2000000000, false},
	"log_autovacuum_min_duration":           {'i', -1, math.MaxInt32, false},
	"autovacuum_vacuum_cost_delay":          {'r', 0, 100, false},
	"autovacuum_vacuum_scale_factor":        {'r', 0, 100, false},
	"autovacuum_vacuum_insert_scale_factor": {'r', 0, 100, false},
	"autovacuum_analyze_scale_factor":       {'r', 0, 100, false},
	"user_catalog_table":                    {kind: 'b', heapOnly: true},
	"vacuum_index_cleanup":                  {kind: 'e'},
	"vacuum_truncate":                       {kind: 'b'},
	"colocation":                            {kind: 'b', heapOnly: true},
	"colocated":                             {kind: 'b', heapOnly: true},
}

// indexOptions checks CREATE INDEX's WITH (...) as PostgreSQL's btree
// options: fillfactor (an integer from 10 to 100) and deduplicate_items
// (a boolean), each once; anything else is 22023.
func indexOptions(opts []*pg.Node) error {
	return relOptions(opts, indexOptionKinds, false)
}

// tableOptions checks CREATE TABLE's WITH (...) as PostgreSQL's
// heap_reloptions does; toast.* options are the TOAST table's. WITH (oids =
// false) is accepted, as PostgreSQL 12 and later accept it; WITH OIDS is
// not.
func tableOptions(opts []*pg.Node) error {
	rest := make([]*pg.Node, 0, len(opts))
	for _, o := range opts {
		de := o.GetDefElem()
		if de == nil || de.GetDefnamespace() != "" || de.GetDefname() != "oids" {
			rest = append(rest, o)
			continue
		}
		v, _ := defElemString(de)
		if b, ok := types.ParseBool(v); !ok || b {
			return pgerror.New(pgerror.CodeFeatureNotSupported, "tables declared WITH OIDS are not supported")
		}
	}
	return relOptions(rest, tableOptionKinds, true)
}

// relOptions checks storage parameters as PostgreSQL's parseRelOptions
// does: known names (kinds), each once, values of their kind within their
// bounds, no namespace but toast.* (when toast) for the options that have
// that form; anything else is 22023.
func relOptions(opts []*pg.Node, kinds map[string]relOption, toast bool) error {
	seen := map[string]bool{}
	for _, o := range opts {
		de := o.GetDefElem()
		if de == nil {
			continue
		}
		name, ns := de.GetDefname(), de.GetDefnamespace()
		if ns != "" && (!toast || ns != "toast") {
			return pgerror.New(pgerror.CodeInvalidParameterValue, "unrecognized parameter namespace %q", ns)
		}
		if seen[ns+"."+name] {
			return pgerror.New(pgerror.CodeInvalidParameterValue, "parameter %q specified more than once", name)
		}
		seen[ns+"."+name] = true
		opt, ok := kinds[name]
		if !ok || ns != "" && opt.heapOnly {
			return pgerror.New(pgerror.CodeInvalidParameterValue, "unrecognized parameter %q", name)
		}
		v, given := defElemString(de)
		switch opt.kind {
		case 'b':
			if _, ok := types.ParseBool(v); given && !ok {
				return pgerror.New(pgerror.CodeInvalidParameterValue, "invalid value for boolean option %q: %s", name, v)
			}
		case 'e':
			if _, ok := types.ParseBool(v); !ok && !strings.EqualFold(v, "auto") {
				return pgerror.New(pgerror.CodeInvalidParameterValue, "invalid value for enum option %q: %s", name, v).
					WithDetail(`Valid values are "on", "off", and "auto".`)
			}
		default:
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if !given || err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				kind := "integer"
				if opt.kind == 'r' {
					kind = "floating point"
				}
				return pgerror.New(pgerror.CodeInvalidParameterValue, "invalid value for %s option %q: %s", kind, name, v)
			}
			if opt.kind == 'i' {
				f = math.RoundToEven(f) // parse_int: a fraction rounds (100.5 is 100)
			}
			if f < opt.min || f > opt.max {
				return pgerror.New(pgerror.CodeInvalidParameterValue, "value %s out of bounds for option %q", v, name).
					WithDetail(`Valid values are between "%s" and "%s".`, strconv.FormatFloat(opt.min, 'f', -1, 64), strconv.FormatFloat(opt.max, 'f', -1, 64))
			}
		}
	}
	return nil
}

// checkTablespace checks a TABLESPACE clause: only pg_default is a place
// a relation may go (one cluster-wide storage here, as PostgreSQL's
// default tablespace); pg_global holds PostgreSQL's shared catalogs only.
func checkTablespace(name string) error {
	switch name {
	case "", "pg_default":
		return nil
	case "pg_global":
		return pgerror.New(pgerror.CodeInvalidParameterValue, "only shared relations can be placed in pg_global tablespace")
	}
	return pgerror.New(pgerror.CodeUndefinedObject, "tablespace %q does not exist", name)
}
