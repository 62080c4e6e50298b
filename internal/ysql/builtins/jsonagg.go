package builtins

import (
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// json_agg, jsonb_agg, json_object_agg and jsonb_object_agg take any
// type: their Aggregate is made for the argument types at resolution
// (anyAggs), as anyarray's operators are.

var anyAggs = map[string]func(args []types.T) (*Aggregate, error){
	"json_agg":         func(a []types.T) (*Aggregate, error) { return jsonAgg("json_agg", a, false) },
	"jsonb_agg":        func(a []types.T) (*Aggregate, error) { return jsonAgg("jsonb_agg", a, true) },
	"json_object_agg":  func(a []types.T) (*Aggregate, error) { return jsonObjectAgg("json_object_agg", a, false) },
	"jsonb_object_agg": func(a []types.T) (*Aggregate, error) { return jsonObjectAgg("jsonb_object_agg", a, true) },
	"any_value":        anyValueAgg,
}

// anyValueAgg is any_value(x) (PostgreSQL 16): one of the group's non-NULL
// values, the first met. The planner reads a column that the GROUP BY
// determines (its table's primary key is grouped) through it.
func anyValueAgg(args []types.T) (*Aggregate, error) {
	if len(args) != 1 || args[0].OID == types.OIDUnknown {
		return nil, noAgg("any_value", args)
	}
	t := args[0]
	mk := func() AggState { return &anyValueState{minMaxState{t: t}} }
	return &Aggregate{Name: "any_value", Args: args, Result: t, New: mk,
		Unmarshal: func(b []byte) (AggState, error) { s := mk(); return s, s.(*anyValueState).unmarshal(b) }}, nil
}

// anyValueState keeps the first non-NULL value (min's state, never
// replaced).
type anyValueState struct{ minMaxState }

func (s *anyValueState) Add(_ *EvalContext, a []types.Datum) error {
	if !s.seen && !a[0].Null {
		s.best, s.seen = a[0], true
	}
	return nil
}

func (s *anyValueState) Merge(o AggState) error {
	x := o.(*anyValueState)
	if x.seen {
		return s.Add(nil, []types.Datum{x.best})
	}
	return nil
}

func noAgg(name string, args []types.T) error {
	return pgerror.New(pgerror.CodeUndefinedFunction, "function %s(%s) does not exist", name, typeNames(args)).
		WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
}

func jsonAgg(name string, args []types.T, jsonb bool) (*Aggregate, error) {
	if len(args) != 1 {
		return nil, noAgg(name, args)
	}
	res := tJSON
	if jsonb {
		res = tJSONB
	}
	t := args[0]
	// Arrays and records go on a line of their own after the first.
	nl := t.IsArray() || t.OID == types.OIDRecord
	mk := func() AggState { return &jsonAggState{t: t, jsonb: jsonb, newline: nl} }
	return &Aggregate{Name: name, Args: args, Result: res, New: mk,
		Unmarshal: func(b []byte) (AggState, error) { s := mk(); return s, s.(*jsonAggState).unmarshal(b) }}, nil
}

func jsonObjectAgg(name string, args []types.T, jsonb bool) (*Aggregate, error) {
	if len(args) != 2 {
		return nil, noAgg(name, args)
	}
	res := tJSON
	if jsonb {
		res = tJSONB
	}
	mk := func() AggState { return &jsonAggState{t: args[1], kt: args[0], object: true, jsonb: jsonb} }
	return &Aggregate{Name: name, Args: args, Result: res, New: mk,
		Unmarshal: func(b []byte) (AggState, error) { s := mk(); return s, s.(*jsonAggState).unmarshal(b) }}, nil
}

// jsonAggState keeps the JSON text of each element (of each "key" : value
// pair for the object aggregates), NULLs included as null.
type jsonAggState struct {
	t, kt   types.T
	object  bool
	jsonb   bool
	newline bool
	elems   [][]byte
	size    int64
}

func (s *jsonAggState) Add(ctx *EvalContext, a []types.Datum) error {
	var buf []byte
	if s.object {
		if a[0].Null {
			return jsonErr("field name must not be null")
		}
		var err error
		if buf, err = jsonKey(nil, a[0], s.kt, ctx.loc()); err != nil {
			return err
		}
		buf = append(buf, " : "...)
		buf = types.AppendJSONDatum(buf, a[1], s.t, ctx.loc())
	} else {
		buf = types.AppendJSONDatum(nil, a[0], s.t, ctx.loc())
	}
	s.elems = append(s.elems, buf)
	s.size += int64(len(buf)) + 4
	return checkLen(s.size)
}

func (s *jsonAggState) Merge(o AggState) error {
	s.elems = append(s.elems, o.(*jsonAggState).elems...)
	return nil
}

func (s *jsonAggState) Result() (types.Datum, error) {
	if len(s.elems) == 0 {
		return types.NullDatum, nil
	}
	open, sep, end := "[", ", ", "]"
	switch {
	case s.object:
		open, end = "{ ", " }"
	case s.newline:
		sep = ", \n "
	}
	buf := []byte(open)
	for i, e := range s.elems {
		if i > 0 {
			buf = append(buf, sep...)
		}
		buf = append(buf, e...)
	}
	return jsonResultOf(append(buf, end...), s.jsonb)
}

func (s *jsonAggState) MarshalBinary() ([]byte, error) {
	var buf []byte
	for _, e := range s.elems {
		buf = putField(buf, e)
	}
	return buf, nil
}

func (s *jsonAggState) unmarshal(b []byte) error {
	for len(b) > 0 {
		f, err := getFields(b, 1)
		if err != nil {
			return err
		}
		s.elems = append(s.elems, f[0])
		b = b[len(putField(nil, f[0])):]
	}
	return nil
}
