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

// indexOptions checks CREATE INDEX's WITH (...) as PostgreSQL's btree
// options: fillfactor (an integer from 10 to 100) and deduplicate_items
// (a boolean), each once; anything else is 22023. They were accepted
// whatever they named (the index stores neither).
func indexOptions(opts []*pg.Node) error {
	seen := map[string]bool{}
	for _, o := range opts {
		de := o.GetDefElem()
		if de == nil {
			continue
		}
		name := de.GetDefname()
		if de.GetDefnamespace() != "" {
			return pgerror.New(pgerror.CodeInvalidParameterValue, "unrecognized parameter namespace %q", de.GetDefnamespace())
		}
		if seen[name] {
			return pgerror.New(pgerror.CodeInvalidParameterValue, "parameter %q specified more than once", name)
		}
		seen[name] = true
		v, given := defElemString(de)
		switch name {
		case "fillfactor":
			// parse_int: a fraction rounds (100.5 is 100).
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			n := math.RoundToEven(f)
			if !given || err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				return pgerror.New(pgerror.CodeInvalidParameterValue, "invalid value for integer option %q: %s", name, v)
			}
			if n < 10 || n > 100 {
				return pgerror.New(pgerror.CodeInvalidParameterValue, "value %s out of bounds for option %q", v, name).
					WithDetail(`Valid values are between "10" and "100".`)
			}
		case "deduplicate_items":
			if _, ok := types.ParseBool(v); given && !ok {
				return pgerror.New(pgerror.CodeInvalidParameterValue, "invalid value for boolean option %q: %s", name, v)
			}
		default:
			return pgerror.New(pgerror.CodeInvalidParameterValue, "unrecognized parameter %q", name)
		}
	}
	return nil
}
