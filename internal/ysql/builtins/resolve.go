package builtins

import (
	"strings"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Resolution of an operator or function call against candidates with
// PostgreSQL's rules (func_select_candidate, simplified):
//
//  1. an exact match of the argument types wins; for a binary operator
//     with one unknown-typed (literal) argument, the unknown is first
//     taken to be of the other argument's type;
//  2. otherwise keep the candidates every argument converts to implicitly
//     (an unknown literal converts to anything);
//  3. then those with the most exact type matches;
//  4. then those taking preferred types (text, float8, numeric's none,
//     timestamptz, interval, bool, oid) where a conversion is needed;
//  5. for unknown arguments: if a candidate takes a string type there,
//     string wins, else the common category of the candidates, preferring
//     its preferred type;
//  6. if known arguments all have one type, assume the unknowns share it.
//
// One survivor is the answer; none is 42883 "does not exist", several
// 42725 "is not unique".

// AnyNonArray is the pseudo-type anynonarray (text || anynonarray).
var AnyNonArray = types.T{OID: 2776, Mod: -1}

func isUnknown(t types.T) bool { return t.OID == types.OIDUnknown }

func category(t types.T) byte {
	if t.OID == AnyNonArray.OID {
		return 'P'
	}
	if ti := t.Info(); ti != nil {
		return ti.Category
	}
	return 'X'
}

func preferred(t types.T) bool {
	ti := t.Info()
	return ti != nil && ti.Preferred
}

// accepts reports whether an argument of type actual can be passed as a
// parameter of type param (implicitly).
func accepts(param, actual types.T) bool {
	if param.OID == actual.OID || isUnknown(actual) {
		return true
	}
	if param.OID == AnyNonArray.OID {
		return !actual.IsArray()
	}
	return types.CanCast(actual, param, types.CastImplicit)
}

func sameOIDs(a, b []types.T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].OID != b[i].OID {
			return false
		}
	}
	return true
}

// selectCandidate returns the index of the chosen candidate, -1 when none
// fits, -2 when several do.
func selectCandidate(cands [][]types.T, args []types.T) int {
	for i, c := range cands {
		if sameOIDs(c, args) {
			return i
		}
	}
	// Binary operator heuristic: unknown op known -> known op known.
	if len(args) == 2 && isUnknown(args[0]) != isUnknown(args[1]) {
		known := args[0]
		if isUnknown(known) {
			known = args[1]
		}
		for i, c := range cands {
			if sameOIDs(c, []types.T{known, known}) {
				return i
			}
		}
	}
	var live []int
	for i, c := range cands {
		if len(c) != len(args) {
			continue
		}
		ok := true
		for j := range c {
			if !accepts(c[j], args[j]) {
				ok = false
				break
			}
		}
		if ok {
			live = append(live, i)
		}
	}
	if len(live) <= 1 {
		if len(live) == 1 {
			return live[0]
		}
		return -1
	}
	// Most exact matches.
	live = keepBest(live, func(i int) int {
		n := 0
		for j, a := range args {
			if !isUnknown(a) && cands[i][j].OID == a.OID {
				n++
			}
		}
		return n
	})
	if len(live) == 1 {
		return live[0]
	}
	// Most preferred types where conversion is needed.
	live = keepBest(live, func(i int) int {
		n := 0
		for j, a := range args {
			if !isUnknown(a) && cands[i][j].OID != a.OID && preferred(cands[i][j]) {
				n++
			}
		}
		return n
	})
	if len(live) == 1 {
		return live[0]
	}
	// Unknown arguments: choose a category per position.
	hasUnknown := false
	for j, a := range args {
		if !isUnknown(a) {
			continue
		}
		hasUnknown = true
		var cat byte
		conflict := false
		sawPreferred := false
		for _, i := range live {
			c := category(cands[i][j])
			switch {
			case cat == 0:
				cat = c
			case c == 'S' || cat == 'S':
				cat = 'S'
			case c != cat:
				conflict = true
			}
		}
		if conflict && cat != 'S' {
			continue
		}
		for _, i := range live {
			if category(cands[i][j]) == cat && preferred(cands[i][j]) {
				sawPreferred = true
			}
		}
		var next []int
		for _, i := range live {
			p := cands[i][j]
			if category(p) != cat {
				continue
			}
			if sawPreferred && !preferred(p) {
				continue
			}
			next = append(next, i)
		}
		if len(next) > 0 {
			live = next
		}
	}
	if len(live) == 1 {
		return live[0]
	}
	// Known arguments all of one type: assume the unknowns have it too.
	if hasUnknown {
		var common types.T
		same := true
		for _, a := range args {
			if isUnknown(a) {
				continue
			}
			if common.OID == 0 {
				common = a
			} else if common.OID != a.OID {
				same = false
			}
		}
		if same && common.OID != 0 {
			var next []int
			for _, i := range live {
				ok := true
				for j, a := range args {
					if isUnknown(a) && !accepts(cands[i][j], common) {
						ok = false
					}
				}
				if ok {
					next = append(next, i)
				}
			}
			if len(next) == 1 {
				return next[0]
			}
		}
	}
	return -2
}

func keepBest(live []int, score func(int) int) []int {
	best := -1
	var out []int
	for _, i := range live {
		s := score(i)
		switch {
		case s > best:
			best = s
			out = []int{i}
		case s == best:
			out = append(out, i)
		}
	}
	return out
}

// typeNames formats argument types for error messages: "integer, text".
func typeNames(args []types.T) string {
	names := make([]string, len(args))
	for i, a := range args {
		names[i] = types.FormatType(a.OID, -1)
	}
	return strings.Join(names, ", ")
}

// LookupOperator resolves a binary operator (or a prefix operator, with
// left of OID 0) for the given argument types.
func LookupOperator(name string, left, right types.T) (*Op, error) {
	if name == "!=" {
		name = "<>"
	}
	prefix := left.OID == 0
	ops := operators[name]
	var cands [][]types.T
	var idx []int
	for i, op := range ops {
		if (op.Left.OID == 0) != prefix {
			continue
		}
		if prefix {
			cands = append(cands, []types.T{op.Right})
		} else {
			cands = append(cands, []types.T{op.Left, op.Right})
		}
		idx = append(idx, i)
	}
	args := []types.T{left, right}
	if prefix {
		args = []types.T{right}
	}
	if op := arrayCompare(name, left, right); op != nil {
		return op, nil
	}
	if op := arrayConcat(name, left, right); op != nil {
		return op, nil
	}
	k := selectCandidate(cands, args)
	desc := types.FormatType(left.OID, -1) + " " + name + " " + types.FormatType(right.OID, -1)
	if prefix {
		desc = name + " " + types.FormatType(right.OID, -1)
	}
	switch k {
	case -1:
		e := pgerror.New(pgerror.CodeUndefinedFunction, "operator does not exist: %s", desc)
		if prefix {
			return nil, e.WithHint("No operator matches the given name and argument type. You might need to add an explicit type cast.")
		}
		return nil, e.WithHint("No operator matches the given name and argument types. You might need to add explicit type casts.")
	case -2:
		return nil, pgerror.New(pgerror.CodeAmbiguousFunction, "operator is not unique: %s", desc).
			WithHint("Could not choose a best candidate operator. You might need to add explicit type casts.")
	}
	return ops[idx[k]], nil
}

// Mutable reports whether a function of that name may return different
// results for the same arguments (some overload is volatile or stable):
// PostgreSQL refuses such functions where a stored result must not
// change, as in an index predicate.
func Mutable(name string) bool {
	for _, f := range functions[strings.TrimPrefix(strings.ToLower(name), "pg_catalog.")] {
		if f.Volatile || f.Stable {
			return true
		}
	}
	return false
}

// LookupFunction resolves a function call for the given argument types.
// Aggregates are looked up with LookupAggregate.
func LookupFunction(name string, args []types.T) (*Func, error) {
	name = strings.TrimPrefix(strings.ToLower(name), "pg_catalog.")
	fns := functions[name]
	var cands [][]types.T
	var idx []int
	for i, f := range fns {
		if f.VariadicAny {
			if len(args) > len(f.Args) { // VARIADIC "any" needs at least one
				c := append([]types.T(nil), f.Args...)
				for j := len(f.Args); j < len(args); j++ {
					c = append(c, args[j]) // "any" takes the argument as it is
				}
				cands = append(cands, c)
				idx = append(idx, i)
			}
			continue
		}
		cands = append(cands, f.Args)
		idx = append(idx, i)
	}
	k := selectCandidate(cands, args)
	switch k {
	case -1:
		return nil, pgerror.New(pgerror.CodeUndefinedFunction, "function %s(%s) does not exist", name, typeNames(args)).
			WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
	case -2:
		return nil, pgerror.New(pgerror.CodeAmbiguousFunction, "function %s(%s) is not unique", name, typeNames(args)).
			WithHint("Could not choose a best candidate function. You might need to add explicit type casts.")
	}
	if f := fns[idx[k]]; f.Check != nil {
		if err := f.Check(args); err != nil {
			return nil, err
		}
	}
	return fns[idx[k]], nil
}

// ResolveUnknown returns the type an unknown-typed literal takes when
// nothing else decides it (a SELECT list, UNION): text.
func ResolveUnknown() types.T { return types.TText }

// arrayCompare is anyarray's comparison operators (array_eq, array_lt...):
// two arrays of one type, or an array and an unknown literal taken to be
// of the array's type, compare element by element.
func arrayCompare(name string, left, right types.T) *Op {
	at := left
	if isUnknown(left) {
		at = right
	}
	if !at.IsArray() || !(left.OID == right.OID || isUnknown(left) || isUnknown(right)) {
		return nil
	}
	for _, co := range compareOps {
		if co.name == name || name == "!=" && co.name == "<>" {
			test := co.test
			return &Op{Name: name, Left: at, Right: at, Result: t16,
				Eval: func(_ *EvalContext, args []types.Datum) (types.Datum, error) {
					return types.DBool(test(types.Compare(args[0], args[1], at))), nil
				}}
		}
	}
	return nil
}

// arrayConcat is anyarray || anyarray, anyarray || anyelement and
// anyelement || anyarray (array_cat, array_append, array_prepend); an
// unknown literal next to an array is taken to be an array of its type.
func arrayConcat(name string, left, right types.T) *Op {
	if name != "||" {
		return nil
	}
	switch {
	case left.IsArray() && (right.OID == left.OID || isUnknown(right)):
		return &Op{Name: name, Left: left, Right: left, Result: left,
			Eval: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
				return types.DArray(append(append([]types.Datum(nil), a[0].A...), a[1].A...)), nil
			}}
	case isUnknown(left) && right.IsArray():
		return &Op{Name: name, Left: right, Right: right, Result: right,
			Eval: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
				return types.DArray(append(append([]types.Datum(nil), a[0].A...), a[1].A...)), nil
			}}
	case left.IsArray() && right.OID == left.Elem().OID:
		return &Op{Name: name, Left: left, Right: right, Result: left,
			Eval: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
				return types.DArray(append(append([]types.Datum(nil), a[0].A...), a[1])), nil
			}}
	case right.IsArray() && left.OID == right.Elem().OID:
		return &Op{Name: name, Left: left, Right: right, Result: right,
			Eval: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
				return types.DArray(append([]types.Datum{a[0]}, a[1].A...)), nil
			}}
	}
	return nil
}
