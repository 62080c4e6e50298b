package types

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cockroachdb/apd/v3"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// JSON values: json keeps its input text verbatim (validated); jsonb is
// held as its normalised text, which is what jsonb_out prints: object keys
// sorted by length then bytes, duplicate keys resolved to the last value,
// numbers printed as numeric, ", " and ": " separators.

// JSONKind is the kind of a JSON value.
type JSONKind uint8

// JSON kinds, in jsonb's sort order (null < string < number < bool <
// array < object, except that an empty top-level array sorts below null
// in PostgreSQL; not reproduced).
const (
	JSONNull JSONKind = iota
	JSONString
	JSONNumber
	JSONBool
	JSONArray
	JSONObject
)

// JSONValue is a parsed JSON document.
type JSONValue struct {
	Kind JSONKind
	Bool bool
	Str  string       // string value (unescaped)
	Num  *apd.Decimal // number
	Arr  []*JSONValue
	Keys []string // object keys, in input order (json) or jsonb order
	Vals []*JSONValue
	Raw  string // the value's input text (json), without surrounding space
}

type jsonParser struct {
	s     string
	i     int
	jsonb bool
}

type jsonErr struct {
	detail  string
	unicode bool // unsupported Unicode escape (22P05)
}

func (p *jsonParser) fail(format string, args ...any) *jsonErr {
	return &jsonErr{detail: fmt.Sprintf(format, args...)}
}

func (p *jsonParser) skipSpace() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// token returns the text of the token at p.i, for error details.
func (p *jsonParser) token() string {
	if p.i >= len(p.s) {
		return ""
	}
	// As PostgreSQL's lexer: a number's characters and any letters,
	// digits, _ or $ glued to it, or a run of those, or one character.
	j := p.i
	if c := p.s[j]; c == '-' || isDigit(c) {
		for j < len(p.s) && (isDigit(p.s[j]) || strings.IndexByte("-+.eE", p.s[j]) >= 0) {
			j++
		}
	}
	for j < len(p.s) && jsonAlnum(p.s[j]) {
		j++
	}
	if j == p.i {
		_, n := utf8.DecodeRuneInString(p.s[p.i:])
		j = p.i + n
	}
	return p.s[p.i:j]
}

func jsonAlnum(c byte) bool {
	return isLetter(c) || isDigit(c) || c == '_' || c == '$' || c >= 0x80
}

func (p *jsonParser) unexpectedEnd() *jsonErr { return p.fail("The input string ended unexpectedly.") }

func (p *jsonParser) value() (*JSONValue, *jsonErr) {
	p.skipSpace()
	if p.i >= len(p.s) {
		return nil, p.unexpectedEnd()
	}
	start := p.i
	c := p.s[p.i]
	var v *JSONValue
	var err *jsonErr
	switch {
	case c == '{':
		v, err = p.object()
	case c == '[':
		v, err = p.array()
	case c == '"':
		var s string
		s, err = p.str()
		v = &JSONValue{Kind: JSONString, Str: s}
	case c == '-' || isDigit(c):
		v, err = p.number()
	default:
		tok := p.token()
		switch tok {
		case "true", "false":
			v = &JSONValue{Kind: JSONBool, Bool: tok == "true"}
			p.i += len(tok)
		case "null":
			v = &JSONValue{Kind: JSONNull}
			p.i += len(tok)
		default:
			if tok == "" || strings.IndexByte("{}[],:", tok[0]) >= 0 {
				return nil, p.fail("Expected JSON value, but found \"%s\".", tok)
			}
			return nil, p.fail("Token \"%s\" is invalid.", tok)
		}
	}
	if err != nil {
		return nil, err
	}
	v.Raw = p.s[start:p.i]
	return v, nil
}

func (p *jsonParser) number() (*JSONValue, *jsonErr) {
	start := p.i
	j := p.i
	if p.s[j] == '-' {
		j++
	}
	digStart := j
	for j < len(p.s) && isDigit(p.s[j]) {
		j++
	}
	ok := j > digStart && !(p.s[digStart] == '0' && j-digStart > 1)
	if ok && j < len(p.s) && p.s[j] == '.' {
		j++
		f := j
		for j < len(p.s) && isDigit(p.s[j]) {
			j++
		}
		ok = j > f
	}
	if ok && j < len(p.s) && (p.s[j] == 'e' || p.s[j] == 'E') {
		j++
		if j < len(p.s) && (p.s[j] == '+' || p.s[j] == '-') {
			j++
		}
		f := j
		for j < len(p.s) && isDigit(p.s[j]) {
			j++
		}
		ok = j > f
	}
	// The token must end at a delimiter.
	if !ok || (j < len(p.s) && strings.IndexByte(" \t\n\r{}[],:\"", p.s[j]) < 0) {
		return nil, p.fail("Token \"%s\" is invalid.", p.token())
	}
	p.i = j
	v := &JSONValue{Kind: JSONNumber}
	if p.jsonb {
		d, err := ParseNumeric(p.s[start:j])
		if err != nil {
			return nil, &jsonErr{detail: "numeric:" + err.Error()}
		}
		v.Num = d
	}
	return v, nil
}

func (p *jsonParser) str() (string, *jsonErr) {
	p.i++ // opening quote
	var sb strings.Builder
	for {
		if p.i >= len(p.s) {
			return "", p.unexpectedEnd()
		}
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return sb.String(), nil
		case c < 0x20:
			return "", p.fail("Character with value 0x%02x must be escaped.", c)
		case c == '\\':
			p.i++
			if p.i >= len(p.s) {
				return "", p.unexpectedEnd()
			}
			e := p.s[p.i]
			p.i++
			switch e {
			case '"', '\\', '/':
				sb.WriteByte(e)
			case 'b':
				sb.WriteByte('\b')
			case 'f':
				sb.WriteByte('\f')
			case 'n':
				sb.WriteByte('\n')
			case 'r':
				sb.WriteByte('\r')
			case 't':
				sb.WriteByte('\t')
			case 'u':
				r, err := p.hex4()
				if err != nil {
					return "", err
				}
				if r >= 0xd800 && r <= 0xdbff && p.i+1 < len(p.s) && p.s[p.i] == '\\' && p.s[p.i+1] == 'u' {
					save := p.i
					p.i += 2
					lo, err := p.hex4()
					if err != nil {
						return "", err
					}
					if lo >= 0xdc00 && lo <= 0xdfff {
						r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
					} else if p.jsonb {
						return "", &jsonErr{detail: "Unicode low surrogate must follow a high surrogate."}
					} else {
						p.i = save
					}
				}
				if r >= 0xd800 && r <= 0xdfff {
					if p.jsonb {
						return "", &jsonErr{detail: "Unicode low surrogate must follow a high surrogate."}
					}
					// json only checks the syntax; the text is kept.
					r = utf8.RuneError
				}
				if r == 0 && p.jsonb {
					return "", &jsonErr{detail: "\\u0000 cannot be converted to text.", unicode: true}
				}
				sb.WriteRune(r)
			default:
				esc := "\\" + string(e)
				if e >= 0x80 {
					_, n := utf8.DecodeRuneInString(p.s[p.i-1:])
					esc = "\\" + p.s[p.i-1:p.i-1+n]
				}
				return "", p.fail("Escape sequence \"%s\" is invalid.", esc)
			}
		default:
			sb.WriteByte(c)
			p.i++
		}
	}
}

func (p *jsonParser) hex4() (rune, *jsonErr) {
	if p.i+4 > len(p.s) {
		return 0, p.fail("\"\\u\" must be followed by four hexadecimal digits.")
	}
	v, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 32)
	if err != nil {
		return 0, p.fail("\"\\u\" must be followed by four hexadecimal digits.")
	}
	p.i += 4
	return rune(v), nil
}

func (p *jsonParser) array() (*JSONValue, *jsonErr) {
	p.i++
	v := &JSONValue{Kind: JSONArray}
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return v, nil
	}
	for {
		e, err := p.value()
		if err != nil {
			return nil, err
		}
		v.Arr = append(v.Arr, e)
		p.skipSpace()
		if p.i >= len(p.s) {
			return nil, p.unexpectedEnd()
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return v, nil
		default:
			return nil, p.fail("Expected \",\" or \"]\", but found \"%s\".", p.token())
		}
	}
}

func (p *jsonParser) object() (*JSONValue, *jsonErr) {
	p.i++
	v := &JSONValue{Kind: JSONObject}
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return v, nil
	}
	for first := true; ; first = false {
		p.skipSpace()
		if p.i >= len(p.s) {
			return nil, p.unexpectedEnd()
		}
		if p.s[p.i] != '"' {
			if first {
				return nil, p.fail("Expected string or \"}\", but found \"%s\".", p.token())
			}
			return nil, p.fail("Expected string, but found \"%s\".", p.token())
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.i >= len(p.s) {
			return nil, p.unexpectedEnd()
		}
		if p.s[p.i] != ':' {
			return nil, p.fail("Expected \":\", but found \"%s\".", p.token())
		}
		p.i++
		val, err := p.value()
		if err != nil {
			return nil, err
		}
		v.Keys = append(v.Keys, k)
		v.Vals = append(v.Vals, val)
		p.skipSpace()
		if p.i >= len(p.s) {
			return nil, p.unexpectedEnd()
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return v, nil
		default:
			return nil, p.fail("Expected \",\" or \"}\", but found \"%s\".", p.token())
		}
	}
}

// ParseJSON parses a JSON document; jsonb also parses numbers and
// normalises objects (sorted keys, last duplicate wins).
func ParseJSON(s string, jsonb bool) (*JSONValue, error) {
	p := &jsonParser{s: s, jsonb: jsonb}
	v, err := p.value()
	if err == nil {
		p.skipSpace()
		if p.i < len(p.s) {
			err = p.fail("Token \"%s\" is invalid.", p.token())
		}
	}
	if err != nil {
		if err.unicode {
			return nil, pgerror.New(pgerror.CodeUntranslatableCharacter, "unsupported Unicode escape sequence").WithDetail("%s", err.detail)
		}
		if strings.HasPrefix(err.detail, "numeric:") {
			return nil, pgerror.New(pgerror.CodeNumericValueOutOfRange, "%s", strings.TrimPrefix(err.detail, "numeric:"))
		}
		return nil, pgerror.New(pgerror.CodeInvalidTextRepresentation, "invalid input syntax for type json").WithDetail("%s", err.detail)
	}
	if jsonb {
		v.normalize()
	}
	return v, nil
}

// jsonbKeyLess is jsonb's key order: shorter keys first, then bytewise.
func jsonbKeyLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

func (v *JSONValue) normalize() {
	switch v.Kind {
	case JSONArray:
		for _, e := range v.Arr {
			e.normalize()
		}
	case JSONObject:
		last := map[string]int{}
		for i, k := range v.Keys {
			last[k] = i
		}
		var keys []string
		var vals []*JSONValue
		for i, k := range v.Keys {
			if last[k] == i {
				keys = append(keys, k)
				vals = append(vals, v.Vals[i])
			}
		}
		idx := make([]int, len(keys))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return jsonbKeyLess(keys[idx[a]], keys[idx[b]]) })
		v.Keys = make([]string, len(idx))
		v.Vals = make([]*JSONValue, len(idx))
		for i, j := range idx {
			v.Keys[i] = keys[j]
			v.Vals[i] = vals[j]
			v.Vals[i].normalize()
		}
	}
}

// AppendJSONB appends v in jsonb_out's format.
func (v *JSONValue) AppendJSONB(buf []byte) []byte {
	switch v.Kind {
	case JSONNull:
		return append(buf, "null"...)
	case JSONBool:
		if v.Bool {
			return append(buf, "true"...)
		}
		return append(buf, "false"...)
	case JSONNumber:
		if v.Num == nil {
			return append(buf, v.Raw...)
		}
		return AppendNumeric(buf, v.Num)
	case JSONString:
		return AppendJSONString(buf, v.Str)
	case JSONArray:
		buf = append(buf, '[')
		for i, e := range v.Arr {
			if i > 0 {
				buf = append(buf, ", "...)
			}
			buf = e.AppendJSONB(buf)
		}
		return append(buf, ']')
	default:
		buf = append(buf, '{')
		for i, k := range v.Keys {
			if i > 0 {
				buf = append(buf, ", "...)
			}
			buf = AppendJSONString(buf, k)
			buf = append(buf, ": "...)
			buf = v.Vals[i].AppendJSONB(buf)
		}
		return append(buf, '}')
	}
}

// AppendJSONString appends s as a JSON string literal, escaped as
// PostgreSQL's escape_json does.
func AppendJSONString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\b':
			buf = append(buf, `\b`...)
		case '\f':
			buf = append(buf, `\f`...)
		case '\n':
			buf = append(buf, `\n`...)
		case '\r':
			buf = append(buf, `\r`...)
		case '\t':
			buf = append(buf, `\t`...)
		case '"':
			buf = append(buf, `\"`...)
		case '\\':
			buf = append(buf, `\\`...)
		default:
			if c < 0x20 {
				buf = append(buf, `\u00`...)
				buf = append(buf, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
			} else {
				buf = append(buf, c)
			}
		}
	}
	return append(buf, '"')
}

// JSONBString returns v in jsonb_out's format.
func (v *JSONValue) JSONBString() string { return string(v.AppendJSONB(nil)) }

// NormalizeJSONB parses s as jsonb and returns its normalised text.
func NormalizeJSONB(s string) (string, error) {
	v, err := ParseJSON(s, true)
	if err != nil {
		return "", err
	}
	return v.JSONBString(), nil
}

// ValidateJSON checks that s is valid json.
func ValidateJSON(s string) error {
	_, err := ParseJSON(s, false)
	return err
}

// text returns the value as the ->> operators return it: strings
// unescaped, null as SQL NULL (ok false), other values as JSON text.
func (v *JSONValue) text(jsonb bool) (string, bool) {
	switch v.Kind {
	case JSONNull:
		return "", false
	case JSONString:
		return v.Str, true
	}
	return v.out(jsonb), true
}

func (v *JSONValue) out(jsonb bool) string {
	if jsonb {
		return v.JSONBString()
	}
	return v.Raw
}

// JSONField implements -> and ->> with a text key (asText for ->>) on a
// json (jsonb false) or jsonb document. A missing key or a non-object
// gives NULL.
func JSONField(doc string, jsonb bool, key string, asText bool) (Datum, error) {
	v, err := ParseJSON(doc, jsonb)
	if err != nil {
		return NullDatum, err
	}
	if v.Kind != JSONObject {
		return NullDatum, nil
	}
	// json: the last occurrence of a duplicate key wins for -> too.
	for i := len(v.Keys) - 1; i >= 0; i-- {
		if v.Keys[i] == key {
			return jsonResult(v.Vals[i], jsonb, asText), nil
		}
	}
	return NullDatum, nil
}

// JSONIndex implements -> and ->> with an integer index (negative counts
// from the end) on an array.
func JSONIndex(doc string, jsonb bool, idx int64, asText bool) (Datum, error) {
	v, err := ParseJSON(doc, jsonb)
	if err != nil {
		return NullDatum, err
	}
	if v.Kind != JSONArray {
		return NullDatum, nil
	}
	n := int64(len(v.Arr))
	if idx < 0 {
		idx += n
	}
	if idx < 0 || idx >= n {
		return NullDatum, nil
	}
	return jsonResult(v.Arr[idx], jsonb, asText), nil
}

func jsonResult(v *JSONValue, jsonb, asText bool) Datum {
	if asText {
		s, ok := v.text(jsonb)
		if !ok {
			return NullDatum
		}
		return DString(s)
	}
	return DString(v.out(jsonb))
}

// CompareJSONB orders two jsonb documents as jsonb's btree does: by kind
// (null < string < number < bool < array < object), arrays by length then
// element by element, objects by size then keys (in storage order, compared
// bytewise) and values. Top-level scalars are one-element "raw scalar"
// arrays as in PostgreSQL: '[]' sorts below every scalar, and a scalar
// below a one-element array.
func CompareJSONB(a, b string) int {
	va, err1 := ParseJSON(a, true)
	vb, err2 := ParseJSON(b, true)
	if err1 != nil || err2 != nil {
		return strings.Compare(a, b)
	}
	wrap := func(v *JSONValue) (*JSONValue, bool) {
		if v.Kind == JSONArray || v.Kind == JSONObject {
			return v, false
		}
		return &JSONValue{Kind: JSONArray, Arr: []*JSONValue{v}}, true
	}
	wa, rawA := wrap(va)
	wb, rawB := wrap(vb)
	if wa.Kind == JSONArray && wb.Kind == JSONArray {
		if len(wa.Arr) != len(wb.Arr) {
			return cmp3(len(wa.Arr), len(wb.Arr))
		}
		if rawA != rawB {
			if rawA {
				return -1
			}
			return 1
		}
	}
	return compareJSONValues(wa, wb)
}

func compareJSONValues(a, b *JSONValue) int {
	if a.Kind != b.Kind {
		return cmp3(int(a.Kind), int(b.Kind))
	}
	switch a.Kind {
	case JSONNull:
		return 0
	case JSONString:
		return strings.Compare(a.Str, b.Str)
	case JSONNumber:
		return CompareNumeric(a.Num, b.Num)
	case JSONBool:
		return cmp3(b2i(a.Bool), b2i(b.Bool))
	case JSONArray:
		if len(a.Arr) != len(b.Arr) {
			return cmp3(len(a.Arr), len(b.Arr))
		}
		for i := range a.Arr {
			if c := compareJSONValues(a.Arr[i], b.Arr[i]); c != 0 {
				return c
			}
		}
		return 0
	default:
		if len(a.Keys) != len(b.Keys) {
			return cmp3(len(a.Keys), len(b.Keys))
		}
		for i := range a.Keys {
			if c := strings.Compare(a.Keys[i], b.Keys[i]); c != 0 {
				return c
			}
			if c := compareJSONValues(a.Vals[i], b.Vals[i]); c != 0 {
				return c
			}
		}
		return 0
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func cmp3(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
