package plan

import (
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// The JSON set-returning functions: json(b)_each(_text),
// json(b)_array_elements(_text) and json(b)_object_keys, in FROM and in
// the select list. Each is an entry of srfs added here.

func init() {
	for _, jsonb := range []bool{false, true} {
		prefix, jt := "json", tJSON
		if jsonb {
			prefix, jt = "jsonb", tJSONB
		}
		srfs[prefix+"_each"] = jsonSRF(jt, []Column{{Name: "key", T: tText}, {Name: "value", T: jt}}, jsonEach(prefix+"_each", jsonb, false))
		srfs[prefix+"_each_text"] = jsonSRF(jt, []Column{{Name: "key", T: tText}, {Name: "value", T: tText}}, jsonEach(prefix+"_each_text", jsonb, true))
		srfs[prefix+"_array_elements"] = jsonSRF(jt, []Column{{Name: "value", T: jt}}, jsonElements(prefix+"_array_elements", jsonb, false))
		srfs[prefix+"_array_elements_text"] = jsonSRF(jt, []Column{{Name: "value", T: tText}}, jsonElements(prefix+"_array_elements_text", jsonb, true))
		srfs[prefix+"_object_keys"] = jsonSRF(jt, []Column{{Name: prefix + "_object_keys", T: tText}}, jsonKeys(prefix+"_object_keys", jsonb))
	}
}

var (
	tJSON  = types.TJSON
	tJSONB = types.TJSONB
)

// jsonSRF is a function of one json or jsonb argument (jt; an untyped
// literal is read as jt) with columns cols, whose rows rows makes from the
// parsed document.
func jsonSRF(jt types.T, cols []Column, rows func(v *types.JSONValue) ([]Row, error)) SRF {
	return SRF{
		Cols: func(args []types.T) ([]Column, bool) {
			if len(args) != 1 || args[0].OID != jt.OID && args[0].OID != types.OIDUnknown {
				return nil, false
			}
			return append([]Column(nil), cols...), true
		},
		Rows: func(_ []types.T, vals []types.Datum) ([]Row, error) {
			if vals[0].Null {
				return nil, nil
			}
			v, err := types.ParseJSON(vals[0].S, jt.OID == types.OIDJSONB)
			if err != nil {
				return nil, err
			}
			return rows(v)
		},
		OutNames: cols[0].Name == "value",
	}
}

// jsonValueDatum is a JSON value as a column of json, jsonb or (asText,
// as ->> gives it) text.
func jsonValueDatum(v *types.JSONValue, jsonb, asText bool) types.Datum {
	if asText {
		return types.JSONText(v, jsonb)
	}
	return types.DString(types.JSONOut(v, jsonb))
}

// jsonKindErr is the error of a JSON function given the wrong kind of
// document: json's and jsonb's messages differ.
func jsonKindErr(format string, args ...any) error {
	return pgerror.New(pgerror.CodeInvalidParameterValue, format, args...)
}

func jsonEach(name string, jsonb, asText bool) func(v *types.JSONValue) ([]Row, error) {
	return func(v *types.JSONValue) ([]Row, error) {
		switch {
		case v.Kind == types.JSONObject:
		case jsonb:
			return nil, jsonKindErr("cannot call %s on a non-object", name)
		case v.Kind == types.JSONArray:
			return nil, jsonKindErr("cannot deconstruct an array as an object")
		default:
			return nil, jsonKindErr("cannot deconstruct a scalar")
		}
		out := make([]Row, len(v.Keys))
		for i, k := range v.Keys {
			out[i] = Row{types.DString(k), jsonValueDatum(v.Vals[i], jsonb, asText)}
		}
		return out, nil
	}
}

func jsonElements(name string, jsonb, asText bool) func(v *types.JSONValue) ([]Row, error) {
	return func(v *types.JSONValue) ([]Row, error) {
		switch {
		case v.Kind == types.JSONArray:
		case jsonb && v.Kind == types.JSONObject:
			return nil, jsonKindErr("cannot extract elements from an object")
		case jsonb:
			return nil, jsonKindErr("cannot extract elements from a scalar")
		case v.Kind == types.JSONObject:
			return nil, jsonKindErr("cannot call %s on a non-array", name)
		default:
			return nil, jsonKindErr("cannot call %s on a scalar", name)
		}
		out := make([]Row, len(v.Arr))
		for i, e := range v.Arr {
			out[i] = Row{jsonValueDatum(e, jsonb, asText)}
		}
		return out, nil
	}
}

func jsonKeys(name string, jsonb bool) func(v *types.JSONValue) ([]Row, error) {
	return func(v *types.JSONValue) ([]Row, error) {
		switch v.Kind {
		case types.JSONObject:
		case types.JSONArray:
			return nil, jsonKindErr("cannot call %s on an array", name)
		default:
			return nil, jsonKindErr("cannot call %s on a scalar", name)
		}
		// json keeps duplicate keys; each is a row.
		out := make([]Row, len(v.Keys))
		for i, k := range v.Keys {
			out[i] = Row{types.DString(k)}
		}
		return out, nil
	}
}
