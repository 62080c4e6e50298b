package exec

import (
	"strconv"

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
