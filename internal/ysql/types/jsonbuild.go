package types

import (
	"strconv"
	"strings"
	"time"
)

// Building JSON from SQL values, as PostgreSQL's datum_to_json: numbers
// and booleans as themselves, json as its text, jsonb as its output,
// arrays and records as JSON arrays and objects, dates and timestamps in
// ISO 8601, anything else as a string of its text output.

// AppendJSONDatum appends d (of type t) as to_json renders it; loc is the
// session zone for timestamptz.
func AppendJSONDatum(buf []byte, d Datum, t T, loc *time.Location) []byte {
	if d.Null {
		return append(buf, "null"...)
	}
	switch t.OID {
	case OIDBool:
		if d.I != 0 {
			return append(buf, "true"...)
		}
		return append(buf, "false"...)
	case OIDInt2, OIDInt4, OIDInt8, OIDFloat4, OIDFloat8, OIDNumeric:
		start := len(buf)
		buf = AppendText(buf, d, t, loc)
		if !validJSONNumber(string(buf[start:])) { // NaN, Infinity
			s := string(buf[start:])
			return AppendJSONString(buf[:start], s)
		}
		return buf
	case OIDJSON, OIDJSONB:
		return append(buf, d.S...)
	case OIDDate, OIDTimestamp, OIDTimestampTZ:
		return AppendJSONString(buf, string(appendJSONDateTime(nil, d, t, loc)))
	case OIDRecord:
		return appendJSONRecord(buf, d, t, loc, ":", ",")
	}
	if t.IsArray() && t.OID != OIDInt2Vector && t.OID != OIDOIDVector {
		buf = append(buf, '[')
		for i, e := range d.A {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = AppendJSONDatum(buf, e, t.Elem(), loc)
		}
		return append(buf, ']')
	}
	return AppendJSONString(buf, FormatText(d, t, loc))
}

// appendJSONRecord appends a record as an object of its fields.
func appendJSONRecord(buf []byte, d Datum, t T, loc *time.Location, colon, comma string) []byte {
	names, ts := RecordFields(t)
	buf = append(buf, '{')
	for i, f := range d.A {
		if i >= len(ts) {
			break
		}
		if i > 0 {
			buf = append(buf, comma...)
		}
		buf = AppendJSONString(buf, names[i])
		buf = append(buf, colon...)
		buf = AppendJSONDatum(buf, f, ts[i], loc)
	}
	return append(buf, '}')
}

// AppendJSONRecord appends a record as row_to_json renders it, with
// pretty's line breaks between the fields.
func AppendJSONRecord(buf []byte, d Datum, t T, loc *time.Location, pretty bool) []byte {
	if pretty {
		return appendJSONRecord(buf, d, t, loc, ":", ",\n ")
	}
	return appendJSONRecord(buf, d, t, loc, ":", ",")
}

// validJSONNumber reports whether s (a number's text output) is a JSON
// number, which NaN and Infinity are not.
func validJSONNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	return s != "" && s[0] >= '0' && s[0] <= '9'
}

// appendJSONDateTime appends a date, timestamp or timestamptz in the XSD
// form JSON uses: 2020-01-01T10:00:00+01:00, infinity as is.
func appendJSONDateTime(buf []byte, d Datum, t T, loc *time.Location) []byte {
	switch t.OID {
	case OIDDate:
		return AppendDate(buf, d.I)
	case OIDTimestampTZ:
		if loc == nil {
			loc = time.UTC
		}
		return appendTimestamp(buf, d.I, loc, true)
	}
	return appendTimestamp(buf, d.I, nil, true)
}

// JSONBOf returns d as to_jsonb makes it: its to_json text, normalised.
func JSONBOf(d Datum, t T, loc *time.Location) (string, error) {
	if t.OID == OIDJSONB && !d.Null {
		return d.S, nil
	}
	return NormalizeJSONB(string(AppendJSONDatum(nil, d, t, loc)))
}

// ParseJSONB parses a jsonb value (already valid, normalised).
func ParseJSONB(s string) (*JSONValue, error) { return ParseJSON(s, true) }

// Normalize puts a jsonb value built or changed in place back in jsonb's
// form: object keys sorted, the last of duplicates kept.
func (v *JSONValue) Normalize() { v.normalize() }

// JSONText returns a value as the ->> operators and the _text functions
// give it: strings unescaped, JSON null as SQL NULL.
func JSONText(v *JSONValue, jsonb bool) Datum { return jsonResult(v, jsonb, true) }

// JSONOut returns a value's text as json (its input text) or jsonb.
func JSONOut(v *JSONValue, jsonb bool) string { return v.out(jsonb) }

// JSONPath implements #> and #>> (asText): the value at path, each
// element a key of an object or an index (negative from the end) of an
// array; NULL when a step is missing or a path element is NULL.
func JSONPath(doc string, jsonb bool, path []Datum, asText bool) (Datum, error) {
	v, err := ParseJSON(doc, jsonb)
	if err != nil {
		return NullDatum, err
	}
	if v = JSONStep(v, path); v == nil {
		return NullDatum, nil
	}
	return jsonResult(v, jsonb, asText), nil
}

// JSONStep follows path from v (nil when it leads nowhere).
func JSONStep(v *JSONValue, path []Datum) *JSONValue {
	for _, p := range path {
		if p.Null {
			return nil
		}
		switch v.Kind {
		case JSONObject:
			v = v.Field(p.S)
		case JSONArray:
			i, ok := JSONArrayIndex(p.S)
			if i < 0 {
				i += len(v.Arr)
			}
			if !ok || i < 0 || i >= len(v.Arr) {
				return nil
			}
			v = v.Arr[i]
		default:
			return nil
		}
		if v == nil {
			return nil
		}
	}
	return v
}

// Field returns an object's value for key (the last of duplicates), or
// nil.
func (v *JSONValue) Field(key string) *JSONValue {
	for i := len(v.Keys) - 1; i >= 0; i-- {
		if v.Keys[i] == key {
			return v.Vals[i]
		}
	}
	return nil
}

// JSONArrayIndex reads a path element as an array index the way
// PostgreSQL does (strtol: leading space and a sign allowed, the whole
// text an int4).
func JSONArrayIndex(s string) (int, bool) {
	i, err := strconv.ParseInt(strings.TrimLeft(s, " \t\n\r\v\f"), 10, 32)
	return int(i), err == nil
}

// JSONKindName is the kind's name in error messages and json_typeof.
func JSONKindName(k JSONKind) string {
	return [...]string{"null", "string", "number", "boolean", "array", "object"}[k]
}
