package builtins

import (
	"math"
	"strings"
	"time"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// The JSON operators and functions PostgreSQL 15 has beyond -> and ->>:
// paths (#>, #>>, #-), existence (?|, ?&), jsonb's || and -, the
// constructors (json_build_object, to_json, row_to_json...) and the
// jsonb editing functions (jsonb_set, jsonb_insert).

var tTextArr = types.ArrayOf(tText)

func jsonErr(format string, args ...any) *pgerror.Error {
	return pgerror.New(pgerror.CodeInvalidParameterValue, format, args...)
}

func parseJSONB(s string) (*types.JSONValue, error) { return types.ParseJSON(s, true) }

func jsonbDatum(v *types.JSONValue) types.Datum { return types.DString(v.JSONBString()) }

func addJSONPathOps() {
	for _, jt := range []types.T{tJSON, tJSONB} {
		jsonb := jt == tJSONB
		addOp("#>", jt, tTextArr, jt, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
			return types.JSONPath(a.S, jsonb, b.A, false)
		})
		addOp("#>>", jt, tTextArr, tText, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
			return types.JSONPath(a.S, jsonb, b.A, true)
		})
	}
	addOp("?|", tJSONB, tTextArr, t16, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		return jsonbExists(a.S, b.A, false)
	})
	addOp("?&", tJSONB, tTextArr, t16, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		return jsonbExists(a.S, b.A, true)
	})
	addOp("||", tJSONB, tJSONB, tJSONB, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		return jsonbConcat(a.S, b.S)
	})
	addOp("-", tJSONB, tText, tJSONB, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		return jsonbDeleteKeys(a.S, []types.Datum{b})
	})
	addOp("-", tJSONB, tTextArr, tJSONB, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		return jsonbDeleteKeys(a.S, b.A)
	})
	addOp("-", tJSONB, tI4, tJSONB, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		return jsonbDeleteIndex(a.S, b.I)
	})
	addOp("#-", tJSONB, tTextArr, tJSONB, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		return jsonbEditPath(a.S, b.A, nil, pathDelete)
	})
}

// jsonbHasKey is jsonb's ?: a key of an object, a string element of an
// array, or the string itself.
func jsonbHasKey(v *types.JSONValue, key string) bool {
	switch v.Kind {
	case types.JSONObject:
		return v.Field(key) != nil
	case types.JSONArray:
		for _, e := range v.Arr {
			if e.Kind == types.JSONString && e.Str == key {
				return true
			}
		}
	case types.JSONString:
		return v.Str == key
	}
	return false
}

// jsonbExists is ?| (any) and ?& (all); NULL keys are skipped.
func jsonbExists(doc string, keys []types.Datum, all bool) (types.Datum, error) {
	v, err := parseJSONB(doc)
	if err != nil {
		return types.NullDatum, err
	}
	for _, k := range keys {
		if k.Null {
			continue
		}
		if jsonbHasKey(v, k.S) != all {
			return types.DBool(!all), nil
		}
	}
	return types.DBool(all), nil
}

// jsonbConcat is jsonb || jsonb: two objects merge (the right's values
// win), anything else concatenates as arrays, a scalar or an object
// standing for a one-element array.
func jsonbConcat(a, b string) (types.Datum, error) {
	va, err := parseJSONB(a)
	if err != nil {
		return types.NullDatum, err
	}
	vb, err := parseJSONB(b)
	if err != nil {
		return types.NullDatum, err
	}
	if va.Kind == types.JSONObject && vb.Kind == types.JSONObject {
		out := &types.JSONValue{Kind: types.JSONObject,
			Keys: append(append([]string(nil), va.Keys...), vb.Keys...),
			Vals: append(append([]*types.JSONValue(nil), va.Vals...), vb.Vals...)}
		out.Normalize()
		return jsonbDatum(out), nil
	}
	elems := func(v *types.JSONValue) []*types.JSONValue {
		if v.Kind == types.JSONArray {
			return v.Arr
		}
		return []*types.JSONValue{v}
	}
	out := &types.JSONValue{Kind: types.JSONArray, Arr: append(append([]*types.JSONValue(nil), elems(va)...), elems(vb)...)}
	return jsonbDatum(out), nil
}

// jsonbDeleteKeys is jsonb - text and jsonb - text[]: the keys out of an
// object, the equal strings out of an array.
func jsonbDeleteKeys(doc string, keys []types.Datum) (types.Datum, error) {
	v, err := parseJSONB(doc)
	if err != nil {
		return types.NullDatum, err
	}
	if v.Kind != types.JSONObject && v.Kind != types.JSONArray {
		return types.NullDatum, jsonErr("cannot delete from scalar")
	}
	drop := func(s string) bool {
		for _, k := range keys {
			if !k.Null && k.S == s {
				return true
			}
		}
		return false
	}
	out := &types.JSONValue{Kind: v.Kind}
	if v.Kind == types.JSONObject {
		for i, k := range v.Keys {
			if !drop(k) {
				out.Keys, out.Vals = append(out.Keys, k), append(out.Vals, v.Vals[i])
			}
		}
		return jsonbDatum(out), nil
	}
	for _, e := range v.Arr {
		if e.Kind != types.JSONString || !drop(e.Str) {
			out.Arr = append(out.Arr, e)
		}
	}
	return jsonbDatum(out), nil
}

// jsonbDeleteIndex is jsonb - integer on an array (negative from the end;
// out of range deletes nothing).
func jsonbDeleteIndex(doc string, idx int64) (types.Datum, error) {
	v, err := parseJSONB(doc)
	if err != nil {
		return types.NullDatum, err
	}
	switch v.Kind {
	case types.JSONObject:
		return types.NullDatum, jsonErr("cannot delete from object using integer index")
	case types.JSONArray:
	default:
		return types.NullDatum, jsonErr("cannot delete from scalar")
	}
	n := int64(len(v.Arr))
	if idx < 0 {
		idx += n
	}
	if idx < 0 || idx >= n {
		return types.DString(doc), nil
	}
	out := &types.JSONValue{Kind: types.JSONArray, Arr: append(append([]*types.JSONValue(nil), v.Arr[:idx]...), v.Arr[idx+1:]...)}
	return jsonbDatum(out), nil
}

// What setPath does at the end of the path (PostgreSQL's JB_PATH_*).
const (
	pathCreate = 1 << iota
	pathDelete
	pathReplace
	pathInsertBefore
	pathInsertAfter

	pathCreateOrInsert = pathCreate | pathInsertBefore | pathInsertAfter
)

// jsonbEditPath is jsonb_set, jsonb_insert and #-: op applied with nv at
// path in doc.
func jsonbEditPath(doc string, path []types.Datum, nv *types.JSONValue, op int) (types.Datum, error) {
	v, err := parseJSONB(doc)
	if err != nil {
		return types.NullDatum, err
	}
	if v.Kind != types.JSONObject && v.Kind != types.JSONArray {
		if op == pathDelete {
			return types.NullDatum, jsonErr("cannot delete path in scalar")
		}
		return types.NullDatum, jsonErr("cannot set path in scalar")
	}
	empty := len(v.Keys) == 0 && len(v.Arr) == 0
	if len(path) == 0 || empty && op&(pathDelete|pathReplace) != 0 {
		return types.DString(doc), nil
	}
	out, err := setPath(v, path, 0, nv, op)
	if err != nil {
		return types.NullDatum, err
	}
	return jsonbDatum(out), nil
}

// setPath returns v with op done at path[level:], as PostgreSQL's
// setPath: a step through a scalar changes nothing.
func setPath(v *types.JSONValue, path []types.Datum, level int, nv *types.JSONValue, op int) (*types.JSONValue, error) {
	if path[level].Null {
		return nil, pgerror.New(pgerror.CodeNullValueNotAllowed, "path element at position %d is null", level+1)
	}
	switch v.Kind {
	case types.JSONObject:
		return setPathObject(v, path, level, nv, op)
	case types.JSONArray:
		return setPathArray(v, path, level, nv, op)
	}
	return v, nil
}

func setPathObject(v *types.JSONValue, path []types.Datum, level int, nv *types.JSONValue, op int) (*types.JSONValue, error) {
	key, last := path[level].S, level == len(path)-1
	out := &types.JSONValue{Kind: types.JSONObject}
	add := func(k string, val *types.JSONValue) {
		out.Keys, out.Vals = append(out.Keys, k), append(out.Vals, val)
	}
	if len(v.Keys) == 0 && op&pathCreateOrInsert != 0 && last {
		add(key, nv)
	}
	done := false
	for i, k := range v.Keys {
		switch {
		case !done && k == key && last:
			if op&(pathInsertBefore|pathInsertAfter) != 0 {
				return nil, jsonErr("cannot replace existing key").WithHint("Try using the function jsonb_set to replace key value.")
			}
			done = true
			if op&pathDelete == 0 {
				add(k, nv)
			}
		case !done && k == key:
			child, err := setPath(v.Vals[i], path, level+1, nv, op)
			if err != nil {
				return nil, err
			}
			add(k, child)
		default:
			add(k, v.Vals[i])
			if op&pathCreateOrInsert != 0 && !done && last && i == len(v.Keys)-1 {
				add(key, nv)
			}
		}
	}
	out.Normalize()
	return out, nil
}

func setPathArray(v *types.JSONValue, path []types.Datum, level int, nv *types.JSONValue, op int) (*types.JSONValue, error) {
	n, last := len(v.Arr), level == len(path)-1
	idx, ok := types.JSONArrayIndex(path[level].S)
	if !ok {
		return nil, pgerror.New(pgerror.CodeInvalidTextRepresentation, "path element at position %d is not an integer: \"%s\"", level+1, path[level].S)
	}
	if idx < 0 {
		if -idx > n {
			idx = math.MinInt
		} else {
			idx += n
		}
	}
	idx = min(idx, n)
	out := &types.JSONValue{Kind: types.JSONArray}
	done := false
	if (idx == math.MinInt || n == 0) && last && op&pathCreateOrInsert != 0 {
		out.Arr = append(out.Arr, nv)
		done = true
	}
	for i, e := range v.Arr {
		switch {
		case i == idx && last:
			if op&(pathInsertBefore|pathCreate) != 0 {
				out.Arr = append(out.Arr, nv)
			}
			if op&(pathInsertAfter|pathInsertBefore) != 0 {
				out.Arr = append(out.Arr, e)
			}
			if op&(pathInsertAfter|pathReplace) != 0 {
				out.Arr = append(out.Arr, nv)
			}
			done = true
		case i == idx:
			child, err := setPath(e, path, level+1, nv, op)
			if err != nil {
				return nil, err
			}
			out.Arr = append(out.Arr, child)
		default:
			out.Arr = append(out.Arr, e)
			if op&pathCreateOrInsert != 0 && !done && last && i == n-1 {
				out.Arr = append(out.Arr, nv)
			}
		}
	}
	return out, nil
}

// jsonbSet is jsonb_set(target, path, new [, create_missing]) and
// jsonb_insert(target, path, new [, insert_after]) (insert).
func jsonbSet(a []types.Datum, insert bool) (types.Datum, error) {
	nv, err := parseJSONB(a[2].S)
	if err != nil {
		return types.NullDatum, err
	}
	flag := len(a) > 3 && a[3].Bool()
	op := pathCreate
	switch {
	case insert && flag:
		op = pathInsertAfter
	case insert:
		op = pathInsertBefore
	case len(a) > 3 && !flag:
		op = pathReplace
	}
	return jsonbEditPath(a[0].S, a[1].A, nv, op)
}

// jsonKey renders an object key given as a SQL value: scalars as the JSON
// string of their JSON text (1 gives "1").
func jsonKey(buf []byte, d types.Datum, t types.T, loc *time.Location) ([]byte, error) {
	if t.IsArray() || t.OID == types.OIDRecord || t.OID == types.OIDJSON || t.OID == types.OIDJSONB {
		return nil, jsonErr("key value must be scalar, not array, composite, or json")
	}
	start := len(buf)
	buf = types.AppendJSONDatum(buf, d, t, loc)
	if buf[start] == '"' {
		return buf, nil
	}
	s := string(buf[start:])
	return types.AppendJSONString(buf[:start], s), nil
}

// buildObject is json_build_object and jsonb_build_object (alternating
// keys and values).
func buildObject(ctx *EvalContext, a []types.Datum, ts []types.T, jsonb bool) (types.Datum, error) {
	name := "json_build_object"
	if jsonb {
		name = "jsonb_build_object"
	}
	if len(a)%2 != 0 {
		return types.NullDatum, jsonErr("argument list must have even number of elements").
			WithHint("The arguments of %s() must consist of alternating keys and values.", name)
	}
	buf := []byte{'{'}
	for i := 0; i < len(a); i += 2 {
		if a[i].Null {
			if jsonb {
				return types.NullDatum, jsonErr("argument %d: key must not be null", i+1)
			}
			return types.NullDatum, jsonErr("argument %d cannot be null", i+1).WithHint("Object keys should be text.")
		}
		if i > 0 {
			buf = append(buf, ", "...)
		}
		var err error
		if buf, err = jsonKey(buf, a[i], ts[i], ctx.loc()); err != nil {
			return types.NullDatum, err
		}
		buf = append(buf, " : "...)
		buf = types.AppendJSONDatum(buf, a[i+1], ts[i+1], ctx.loc())
	}
	return jsonResultOf(append(buf, '}'), jsonb)
}

// buildArray is json_build_array and jsonb_build_array.
func buildArray(ctx *EvalContext, a []types.Datum, ts []types.T, jsonb bool) (types.Datum, error) {
	buf := []byte{'['}
	for i := range a {
		if i > 0 {
			buf = append(buf, ", "...)
		}
		buf = types.AppendJSONDatum(buf, a[i], ts[i], ctx.loc())
	}
	return jsonResultOf(append(buf, ']'), jsonb)
}

// jsonResultOf returns built json text as json, or normalised as jsonb.
func jsonResultOf(buf []byte, jsonb bool) (types.Datum, error) {
	if !jsonb {
		return types.DString(string(buf)), nil
	}
	s, err := types.NormalizeJSONB(string(buf))
	return types.DString(s), err
}

// anyFunc registers a function of one or more arguments of any type;
// check, when set, vets their types (see oneArg).
func anyFunc(name string, res types.T, strict bool, f func(ctx *EvalContext, a []types.Datum, ts []types.T) (types.Datum, error), check func([]types.T) error) {
	functions[name] = append(functions[name], &Func{Name: name, Result: res, VariadicAny: true, Strict: strict, EvalVariadic: f, Check: check})
}

// oneArg checks the arguments of a polymorphic function as PostgreSQL's
// resolution would: a first argument that want takes, then a boolean
// when withBool. An untyped literal is left to the call (errUnknownArg).
func oneArg(name string, want func(types.T) bool, withBool bool) func([]types.T) error {
	return func(ts []types.T) error {
		ok := len(ts) == 1 || len(ts) == 2 && withBool && (ts[1].OID == types.OIDBool || ts[1].OID == types.OIDUnknown)
		if ok && (want(ts[0]) || ts[0].OID == types.OIDUnknown) {
			return nil
		}
		return pgerror.New(pgerror.CodeUndefinedFunction, "function %s(%s) does not exist", name, typeNames(ts)).
			WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
	}
}

// errUnknownArg is a polymorphic function's error for an untyped literal
// argument, raised when it is called, as PostgreSQL's (without position).
func errUnknownArg(ts []types.T) error {
	if ts[0].OID == types.OIDUnknown {
		return pgerror.New(pgerror.CodeDatatypeMismatch, "could not determine polymorphic type because input has type unknown")
	}
	return nil
}

func anyType(types.T) bool { return true }

func isRecord(t types.T) bool { return t.OID == types.OIDRecord }

func addJSONBuildFuncs() {
	for _, jsonb := range []bool{false, true} {
		jsonb := jsonb
		prefix, res := "json", tJSON
		if jsonb {
			prefix, res = "jsonb", tJSONB
		}
		anyFunc(prefix+"_build_object", res, false, func(ctx *EvalContext, a []types.Datum, ts []types.T) (types.Datum, error) {
			return buildObject(ctx, a, ts, jsonb)
		}, nil)
		addFn(prefix+"_build_object", nil, res, func(*EvalContext, []types.Datum) (types.Datum, error) { return types.DString("{}"), nil })
		anyFunc(prefix+"_build_array", res, false, func(ctx *EvalContext, a []types.Datum, ts []types.T) (types.Datum, error) {
			return buildArray(ctx, a, ts, jsonb)
		}, nil)
		addFn(prefix+"_build_array", nil, res, func(*EvalContext, []types.Datum) (types.Datum, error) { return types.DString("[]"), nil })
		name := "to_" + prefix
		anyFunc(name, res, true, func(ctx *EvalContext, a []types.Datum, ts []types.T) (types.Datum, error) {
			if err := errUnknownArg(ts); err != nil {
				return types.NullDatum, err
			}
			return jsonResultOf(types.AppendJSONDatum(nil, a[0], ts[0], ctx.loc()), jsonb)
		}, oneArg(name, anyType, false))
	}
	anyFunc("row_to_json", tJSON, true, func(ctx *EvalContext, a []types.Datum, ts []types.T) (types.Datum, error) {
		if err := errUnknownArg(ts); err != nil {
			return types.NullDatum, err
		}
		pretty := len(a) > 1 && a[1].Bool()
		return types.DString(string(types.AppendJSONRecord(nil, a[0], ts[0], ctx.loc(), pretty))), nil
	}, oneArg("row_to_json", isRecord, true))
	anyFunc("array_to_json", tJSON, true, func(ctx *EvalContext, a []types.Datum, ts []types.T) (types.Datum, error) {
		if err := errUnknownArg(ts); err != nil {
			return types.NullDatum, err
		}
		if len(a) < 2 || !a[1].Bool() {
			return types.DString(string(types.AppendJSONDatum(nil, a[0], ts[0], ctx.loc()))), nil
		}
		buf := []byte{'['}
		for i, e := range a[0].A {
			if i > 0 {
				buf = append(buf, ",\n "...)
			}
			buf = types.AppendJSONDatum(buf, e, ts[0].Elem(), ctx.loc())
		}
		return types.DString(string(append(buf, ']'))), nil
	}, oneArg("array_to_json", types.T.IsArray, true))
	for _, jt := range []types.T{tJSON, tJSONB} {
		addJSONTypeFuncs(jt)
	}
	for _, insert := range []bool{false, true} {
		insert := insert
		name := "jsonb_set"
		if insert {
			name = "jsonb_insert"
		}
		edit := func(_ *EvalContext, a []types.Datum) (types.Datum, error) { return jsonbSet(a, insert) }
		addFn(name, args(tJSONB, tTextArr, tJSONB), tJSONB, edit)
		addFn(name, args(tJSONB, tTextArr, tJSONB, t16), tJSONB, edit)
	}
	addFn("jsonb_pretty", args(tJSONB), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		v, err := parseJSONB(a[0].S)
		if err != nil {
			return types.NullDatum, err
		}
		return types.DString(string(appendLayout(nil, v, 0, true))), nil
	})
	for _, jsonb := range []bool{false, true} {
		addJSONObjectFuncs(jsonb)
	}
}

// addJSONTypeFuncs adds the functions json and jsonb both have, for jt.
func addJSONTypeFuncs(jt types.T) {
	jsonb := jt == tJSONB
	prefix := "json"
	if jsonb {
		prefix = "jsonb"
	}
	addFn(prefix+"_array_length", args(jt), tI4, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		v, err := types.ParseJSON(a[0].S, jsonb)
		if err != nil {
			return types.NullDatum, err
		}
		switch v.Kind {
		case types.JSONArray:
			return types.DInt(int64(len(v.Arr))), nil
		case types.JSONObject:
			return types.NullDatum, jsonErr("cannot get array length of a non-array")
		}
		return types.NullDatum, jsonErr("cannot get array length of a scalar")
	})
	addFn(prefix+"_strip_nulls", args(jt), jt, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		v, err := types.ParseJSON(a[0].S, jsonb)
		if err != nil {
			return types.NullDatum, err
		}
		stripNulls(v)
		if jsonb {
			return jsonbDatum(v), nil
		}
		return types.DString(string(appendLayout(nil, v, 0, false))), nil
	})
	for _, asText := range []bool{false, true} {
		name, res := prefix+"_extract_path", jt
		if asText {
			name, res = name+"_text", tText
		}
		f := &Func{Name: name, Args: args(jt), Result: res, VariadicAny: true, Strict: true,
			EvalVariadic: func(_ *EvalContext, a []types.Datum, _ []types.T) (types.Datum, error) {
				return types.JSONPath(a[0].S, jsonb, a[1:], asText)
			}}
		functions[name] = append(functions[name], f)
	}
}

// stripNulls drops the object fields whose value is null, at any depth.
func stripNulls(v *types.JSONValue) {
	switch v.Kind {
	case types.JSONArray:
		for _, e := range v.Arr {
			stripNulls(e)
		}
	case types.JSONObject:
		var keys []string
		var vals []*types.JSONValue
		for i, e := range v.Vals {
			if e.Kind != types.JSONNull {
				stripNulls(e)
				keys, vals = append(keys, v.Keys[i]), append(vals, e)
			}
		}
		v.Keys, v.Vals = keys, vals
	}
}

// appendLayout prints a value without white space, as json's rewriting
// functions (json_strip_nulls) do, or (pretty) in jsonb_pretty's layout:
// one value a line, four spaces a level, empty containers open and
// closed on two lines.
func appendLayout(buf []byte, v *types.JSONValue, depth int, pretty bool) []byte {
	indent := func(b []byte, d int) []byte {
		if !pretty {
			return b
		}
		b = append(b, '\n')
		return append(b, strings.Repeat("    ", d)...)
	}
	colon := ":"
	if pretty {
		colon = ": "
	}
	switch v.Kind {
	case types.JSONArray:
		buf = append(buf, '[')
		for i, e := range v.Arr {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendLayout(indent(buf, depth+1), e, depth+1, pretty)
		}
		return append(indent(buf, depth), ']')
	case types.JSONObject:
		buf = append(buf, '{')
		for i, k := range v.Keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = types.AppendJSONString(indent(buf, depth+1), k)
			buf = append(buf, colon...)
			buf = appendLayout(buf, v.Vals[i], depth+1, pretty)
		}
		return append(indent(buf, depth), '}')
	case types.JSONString:
		return types.AppendJSONString(buf, v.Str)
	}
	return append(buf, v.Raw...)
}

// addJSONObjectFuncs adds json_object / jsonb_object (text[] of
// alternating keys and values, or a text[] of keys and one of values).
func addJSONObjectFuncs(jsonb bool) {
	name, res := "json_object", tJSON
	if jsonb {
		name, res = "jsonb_object", tJSONB
	}
	addFn(name, args(tTextArr), res, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		if len(a[0].A)%2 != 0 {
			return types.NullDatum, pgerror.New("2202E", "array must have even number of elements")
		}
		var keys, vals []types.Datum
		for i := 0; i < len(a[0].A); i += 2 {
			keys, vals = append(keys, a[0].A[i]), append(vals, a[0].A[i+1])
		}
		return jsonObject(keys, vals, jsonb)
	})
	addFn(name, args(tTextArr, tTextArr), res, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		if len(a[0].A) != len(a[1].A) {
			return types.NullDatum, pgerror.New("2202E", "mismatched array dimensions")
		}
		return jsonObject(a[0].A, a[1].A, jsonb)
	})
}

func jsonObject(keys, vals []types.Datum, jsonb bool) (types.Datum, error) {
	buf := []byte{'{'}
	for i, k := range keys {
		if k.Null {
			return types.NullDatum, pgerror.New(pgerror.CodeNullValueNotAllowed, "null value not allowed for object key")
		}
		if i > 0 {
			buf = append(buf, ", "...)
		}
		buf = types.AppendJSONString(buf, k.S)
		buf = append(buf, " : "...)
		if vals[i].Null {
			buf = append(buf, "null"...)
		} else {
			buf = types.AppendJSONString(buf, vals[i].S)
		}
	}
	return jsonResultOf(append(buf, '}'), jsonb)
}
