package builtins

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// String functions: SIMILAR TO's pattern translation, translate, overlay,
// encode/decode, hashes, the regexp_* family and string_to_array.

var errGlobalOption = func(fn, hint string) error {
	e := pgerror.New(pgerror.CodeInvalidParameterValue, "%s() does not support the \"global\" option", fn)
	if hint != "" {
		return e.WithHint("%s", hint)
	}
	return e
}

// similarToRegex is similar_to_escape: a SQL regular expression as a
// POSIX one anchored at both ends; esc is the escape character ("" for
// none). Escaped double quotes mark the part substring(... similar ...)
// returns, the only capturing group.
func similarToRegex(p, esc string) (string, error) {
	if utf8.RuneCountInString(esc) > 1 {
		return "", pgerror.New(pgerror.CodeInvalidEscapeSequence, "invalid escape string").WithHint("Escape string must be empty or one character.")
	}
	var sb strings.Builder
	sb.WriteString("^(?:")
	afterEscape, inClass, quotes := false, false, 0
	for _, r := range p {
		switch {
		case afterEscape:
			afterEscape = false
			if r == '"' && !inClass {
				if quotes > 1 {
					return "", pgerror.New("2200C", "SQL regular expression may not contain more than two escape-double-quote separators")
				}
				sb.WriteString([]string{"){1,1}?(", "){1,1}(?:"}[quotes])
				quotes++
				continue
			}
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case esc != "" && string(r) == esc:
			afterEscape = true
		case inClass:
			if r == '\\' {
				sb.WriteByte('\\')
			}
			sb.WriteRune(r)
			inClass = r != ']'
		case r == '[':
			sb.WriteRune(r)
			inClass = true
		case r == '%':
			sb.WriteString(".*")
		case r == '_':
			sb.WriteByte('.')
		case r == '(':
			sb.WriteString("(?:")
		case r == '\\' || r == '.' || r == '^' || r == '$':
			sb.WriteByte('\\')
			sb.WriteRune(r)
		default:
			sb.WriteRune(r)
		}
	}
	sb.WriteString(")$")
	return sb.String(), nil
}

// regexSubstring is substring(s from pattern): the first parenthesized
// group's match when the pattern has groups, else the whole match.
func regexSubstring(s string, re *regexp.Regexp) types.Datum {
	m := re.FindStringSubmatchIndex(s)
	switch {
	case m == nil:
		return types.NullDatum
	case len(m) > 2:
		if m[2] < 0 {
			return types.NullDatum
		}
		return types.DString(s[m[2]:m[3]])
	}
	return types.DString(s[m[0]:m[1]])
}

func translate(s, from, to string) string {
	t := []rune(to)
	var sb strings.Builder
	for _, r := range s {
		i := strings.IndexRune(from, r)
		if i < 0 {
			sb.WriteRune(r)
			continue
		}
		if k := utf8.RuneCountInString(from[:i]); k < len(t) {
			sb.WriteRune(t[k])
		}
	}
	return sb.String()
}

// overlay is overlay(s placing repl from start for n).
func overlay(s, repl string, start, n int64) (types.Datum, error) {
	if start <= 0 || n < 0 {
		return types.NullDatum, pgerror.New("22011", "negative substring length not allowed")
	}
	head, _ := substr(s, 1, start-1, true)
	tail, _ := substr(s, start+n, 0, false)
	return types.DString(head + repl + tail), nil
}

func encode(b []byte, format string) (types.Datum, error) {
	switch strings.ToLower(format) {
	case "hex":
		return types.DString(strings.TrimPrefix(types.FormatText(types.DBytes(b), tBytea, nil), `\x`)), nil
	case "base64":
		s := base64.StdEncoding.EncodeToString(b)
		var sb strings.Builder
		for len(s) > 76 { // PostgreSQL breaks lines at 76 characters
			sb.WriteString(s[:76])
			sb.WriteByte('\n')
			s = s[76:]
		}
		sb.WriteString(s)
		return types.DString(sb.String()), nil
	case "escape":
		var sb strings.Builder
		for _, c := range b {
			switch {
			case c == '\\':
				sb.WriteString(`\\`)
			case c == 0 || c >= 0x80:
				sb.WriteString(`\` + strconv.FormatInt(int64(c)>>6, 8) + strconv.FormatInt(int64(c)>>3&7, 8) + strconv.FormatInt(int64(c)&7, 8))
			default:
				sb.WriteByte(c)
			}
		}
		return types.DString(sb.String()), nil
	}
	return types.NullDatum, pgerror.New(pgerror.CodeInvalidParameterValue, "unrecognized encoding: %q", format)
}

func decode(s, format string) (types.Datum, error) {
	switch strings.ToLower(format) {
	case "hex":
		b, err := types.ParseBytea(`\x` + s)
		return types.DBytes(b), err
	case "base64":
		b, err := base64Decode(s)
		return types.DBytes(b), err
	case "escape":
		if strings.HasPrefix(s, `\x`) || strings.HasPrefix(s, `\X`) {
			return types.NullDatum, pgerror.New(pgerror.CodeInvalidTextRepresentation, "invalid input syntax for type bytea")
		}
		b, err := types.ParseBytea(s)
		return types.DBytes(b), err
	}
	return types.NullDatum, pgerror.New(pgerror.CodeInvalidParameterValue, "unrecognized encoding: %q", format)
}

// base64Decode decodes as PostgreSQL's pg_base64_decode: whitespace is
// skipped and its errors name the offending symbol.
func base64Decode(s string) ([]byte, error) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	var out []byte
	buf, pos, end := 0, 0, 0
	for i, r := range s {
		b := 0
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			continue
		case r == '=':
			if end == 0 {
				if pos != 2 && pos != 3 {
					return nil, pgerror.New(pgerror.CodeInvalidParameterValue, "unexpected \"=\" while decoding base64 sequence")
				}
				end = pos - 1
			}
		default:
			b = strings.IndexRune(alphabet, r)
			if b < 0 {
				_, n := utf8.DecodeRuneInString(s[i:])
				return nil, pgerror.New(pgerror.CodeInvalidParameterValue, "invalid symbol \"%s\" found while decoding base64 sequence", s[i:i+n])
			}
		}
		buf = buf<<6 | b
		if pos++; pos == 4 {
			out = append(out, byte(buf>>16))
			if end == 0 || end > 1 {
				out = append(out, byte(buf>>8))
			}
			if end == 0 || end > 2 {
				out = append(out, byte(buf))
			}
			buf, pos = 0, 0
		}
	}
	if pos != 0 {
		return nil, pgerror.New(pgerror.CodeInvalidParameterValue, "invalid base64 end sequence").
			WithHint("Input data is missing padding, is truncated, or is otherwise corrupted.")
	}
	return out, nil
}

// encodingName normalizes an encoding name as PostgreSQL does (case and
// punctuation aside) to the ones supported here; "" when unknown.
func encodingName(name string) string {
	var sb strings.Builder
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			sb.WriteRune(r)
		}
	}
	switch sb.String() {
	case "utf8", "unicode":
		return "UTF8"
	case "latin1", "iso88591":
		return "LATIN1"
	case "sqlascii":
		return "SQL_ASCII"
	}
	return ""
}

func convertTo(s, enc string) (types.Datum, error) {
	switch encodingName(enc) {
	case "UTF8", "SQL_ASCII":
		return types.DBytes([]byte(s)), nil
	case "LATIN1":
		out := make([]byte, 0, len(s))
		for i, r := range s {
			if r > 0xff {
				n := utf8.RuneLen(r)
				return types.NullDatum, pgerror.New(pgerror.CodeUntranslatableCharacter,
					"character with byte sequence %s in encoding \"UTF8\" has no equivalent in encoding \"LATIN1\"", hexBytes(s[i:i+n]))
			}
			out = append(out, byte(r))
		}
		return types.DBytes(out), nil
	}
	return types.NullDatum, pgerror.New(pgerror.CodeInvalidParameterValue, "invalid destination encoding name %q", enc)
}

func convertFrom(b []byte, enc string) (types.Datum, error) {
	switch encodingName(enc) {
	case "UTF8", "SQL_ASCII":
		s := string(b)
		return types.DString(s), types.CheckText(s)
	case "LATIN1":
		r := make([]rune, len(b))
		for i, c := range b {
			if c == 0 {
				return types.NullDatum, pgerror.New(pgerror.CodeCharacterNotInRepertoire, "invalid byte sequence for encoding \"LATIN1\": 0x00")
			}
			r[i] = rune(c)
		}
		return types.DString(string(r)), nil
	}
	return types.NullDatum, pgerror.New(pgerror.CodeInvalidParameterValue, "invalid source encoding name %q", enc)
}

func hexBytes(s string) string {
	parts := make([]string, len(s))
	for i := range len(s) {
		parts[i] = "0x" + strconv.FormatUint(uint64(s[i])|0x100, 16)[1:]
	}
	return strings.Join(parts, " ")
}

// regexSplit is regexp_split_to_array: the text between matches, zero-
// length matches at either end or right after another match ignored.
func regexSplit(s string, re *regexp.Regexp) []types.Datum {
	var out []types.Datum
	last := 0
	for _, m := range re.FindAllStringIndex(s, -1) {
		if m[0] == m[1] && (m[0] == 0 || m[0] == len(s) || m[0] == last) {
			continue
		}
		out = append(out, types.DString(s[last:m[0]]))
		last = m[1]
	}
	return append(out, types.DString(s[last:]))
}

// stringToArray is string_to_array(s, delim, null): a NULL delimiter
// splits into characters, an empty one gives s whole.
func stringToArray(a []types.Datum) types.Datum {
	s := a[0].S
	var parts []string
	switch {
	case s == "":
		parts = nil
	case a[1].Null:
		for _, r := range s {
			parts = append(parts, string(r))
		}
	case a[1].S == "":
		parts = []string{s}
	default:
		parts = strings.Split(s, a[1].S)
	}
	out := make([]types.Datum, len(parts))
	for i, p := range parts {
		out[i] = types.DString(p)
		if len(a) == 3 && !a[2].Null && p == a[2].S {
			out[i] = types.NullDatum
		}
	}
	return types.DArray(out)
}

// regexArgs is the shared start of regexp_count, _instr, _like and _substr:
// the pattern compiled with flags (no g) and the text from start (1-based).
func regexArgs(fn string, s, pattern, flags string, start int64) (*regexp.Regexp, string, int, error) {
	if start <= 0 {
		return nil, "", 0, pgerror.New(pgerror.CodeInvalidParameterValue, "invalid value for parameter \"start\": %d", start)
	}
	re, global, err := compileFlagged(pattern, flags)
	if err != nil {
		return nil, "", 0, err
	}
	if global {
		return nil, "", 0, errGlobalOption(fn, "")
	}
	off := len(s)
	if r := []rune(s); start-1 < int64(len(r)) {
		off = len(string(r[:start-1]))
	}
	return re, s[off:], off, nil
}

func optArg(a []types.Datum, i int, def types.Datum) types.Datum {
	if i < len(a) {
		return a[i]
	}
	return def
}

// nthMatch finds the n-th match (1-based) of re in s and returns the
// byte span of group sub (0: the whole match); nil when there is none.
func nthMatch(re *regexp.Regexp, s string, n, sub int64) ([]int, error) {
	if n <= 0 {
		return nil, pgerror.New(pgerror.CodeInvalidParameterValue, "invalid value for parameter \"n\": %d", n)
	}
	if sub < 0 {
		return nil, pgerror.New(pgerror.CodeInvalidParameterValue, "invalid value for parameter \"subexpr\": %d", sub)
	}
	if sub > int64(re.NumSubexp()) {
		return nil, nil
	}
	ms := re.FindAllStringSubmatchIndex(s, int(min(n, 1<<30)))
	if int64(len(ms)) < n || ms[n-1][2*sub] < 0 {
		return nil, nil
	}
	m := ms[n-1]
	return []int{m[2*sub], m[2*sub+1]}, nil
}

func init() {
	addFn("similar_to_escape", args(tText), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		r, err := similarToRegex(a[0].S, `\`)
		return types.DString(r), err
	})
	addFn("similar_to_escape", args(tText, tText), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		r, err := similarToRegex(a[0].S, a[1].S)
		return types.DString(r), err
	})
	addFn("substring", args(tText, tText), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		re, err := compileRegex(a[1].S, false)
		if err != nil {
			return types.NullDatum, err
		}
		return regexSubstring(a[0].S, re), nil
	})
	addFn("substring", args(tText, tText, tText), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		p, err := similarToRegex(a[1].S, a[2].S)
		if err != nil {
			return types.NullDatum, err
		}
		re, err := compileRegex(p, false)
		if err != nil {
			return types.NullDatum, err
		}
		return regexSubstring(a[0].S, re), nil
	})
	addFn("translate", args(tText, tText, tText), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return types.DString(translate(a[0].S, a[1].S, a[2].S)), nil
	})
	addFn("starts_with", args(tText, tText), t16, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return types.DBool(strings.HasPrefix(a[0].S, a[1].S)), nil
	})
	addOp("^@", tText, tText, t16, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		return types.DBool(strings.HasPrefix(a.S, b.S)), nil
	})
	addFn("overlay", args(tText, tText, tI4), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return overlay(a[0].S, a[1].S, a[2].I, strLen(a[1].S))
	})
	addFn("overlay", args(tText, tText, tI4, tI4), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return overlay(a[0].S, a[1].S, a[2].I, a[3].I)
	})
	addFn("to_hex", args(tI4), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return types.DString(strconv.FormatUint(uint64(uint32(a[0].I)), 16)), nil
	})
	addFn("to_hex", args(tI8), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return types.DString(strconv.FormatUint(uint64(a[0].I), 16)), nil
	})
	addFn("quote_literal", args(AnyNonArray), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return types.DString(QuoteLiteral(a[0].S)), nil
	})
	addFn("encode", args(tBytea, tText), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) { return encode(a[0].B, a[1].S) })
	addFn("decode", args(tText, tText), tBytea, func(_ *EvalContext, a []types.Datum) (types.Datum, error) { return decode(a[0].S, a[1].S) })
	addFn("convert_to", args(tText, tName), tBytea, func(_ *EvalContext, a []types.Datum) (types.Datum, error) { return convertTo(a[0].S, a[1].S) })
	addFn("convert_from", args(tBytea, tName), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) { return convertFrom(a[0].B, a[1].S) })
	hashes := map[string]func([]byte) []byte{
		"sha224": func(b []byte) []byte { h := sha256.Sum224(b); return h[:] },
		"sha256": func(b []byte) []byte { h := sha256.Sum256(b); return h[:] },
		"sha384": func(b []byte) []byte { h := sha512.Sum384(b); return h[:] },
		"sha512": func(b []byte) []byte { h := sha512.Sum512(b); return h[:] },
	}
	for name, h := range hashes {
		addFn(name, args(tBytea), tBytea, func(_ *EvalContext, a []types.Datum) (types.Datum, error) { return types.DBytes(h(a[0].B)), nil })
	}
	addRegexFuncs()
}

func addRegexFuncs() {
	tTextArr := types.TTextArray
	match := func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		re, global, err := compileFlagged(a[1].S, optArg(a, 2, types.DString("")).S)
		if err != nil {
			return types.NullDatum, err
		}
		if global {
			return types.NullDatum, errGlobalOption("regexp_match", "Use the regexp_matches function instead.")
		}
		m := re.FindStringSubmatchIndex(a[0].S)
		if m == nil {
			return types.NullDatum, nil
		}
		if len(m) == 2 {
			return types.DArray([]types.Datum{types.DString(a[0].S[m[0]:m[1]])}), nil
		}
		var out []types.Datum
		for g := 1; 2*g < len(m); g++ {
			if m[2*g] < 0 {
				out = append(out, types.NullDatum)
			} else {
				out = append(out, types.DString(a[0].S[m[2*g]:m[2*g+1]]))
			}
		}
		return types.DArray(out), nil
	}
	addFn("regexp_match", args(tText, tText), tTextArr, match)
	addFn("regexp_match", args(tText, tText, tText), tTextArr, match)
	split := func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		re, global, err := compileFlagged(a[1].S, optArg(a, 2, types.DString("")).S)
		if err != nil {
			return types.NullDatum, err
		}
		if global {
			return types.NullDatum, errGlobalOption("regexp_split_to_array", "")
		}
		return types.DArray(regexSplit(a[0].S, re)), nil
	}
	addFn("regexp_split_to_array", args(tText, tText), tTextArr, split)
	addFn("regexp_split_to_array", args(tText, tText, tText), tTextArr, split)
	for _, n := range []int{2, 3} {
		addFn("string_to_array", args(tText, tText, tText)[:n], tTextArr, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
			if a[0].Null {
				return types.NullDatum, nil
			}
			return stringToArray(a), nil
		}).Strict = false
	}
	one := types.DInt(1)
	noFlags := types.DString("")
	count := func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		re, s, _, err := regexArgs("regexp_count", a[0].S, a[1].S, optArg(a, 3, noFlags).S, optArg(a, 2, one).I)
		if err != nil {
			return types.NullDatum, err
		}
		return types.DInt(int64(len(re.FindAllStringIndex(s, -1)))), nil
	}
	for n := 2; n <= 4; n++ {
		addFn("regexp_count", args(tText, tText, tI4, tText)[:n], tI4, count)
	}
	like := func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		re, s, _, err := regexArgs("regexp_like", a[0].S, a[1].S, optArg(a, 2, noFlags).S, 1)
		if err != nil {
			return types.NullDatum, err
		}
		return types.DBool(re.MatchString(s)), nil
	}
	addFn("regexp_like", args(tText, tText), t16, like)
	addFn("regexp_like", args(tText, tText, tText), t16, like)
	// regexp_substr(s, pattern, start, n, flags, subexpr)
	substr := func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		re, s, _, err := regexArgs("regexp_substr", a[0].S, a[1].S, optArg(a, 4, noFlags).S, optArg(a, 2, one).I)
		if err != nil {
			return types.NullDatum, err
		}
		m, err := nthMatch(re, s, optArg(a, 3, one).I, optArg(a, 5, types.DInt(0)).I)
		if m == nil || err != nil {
			return types.NullDatum, err
		}
		return types.DString(s[m[0]:m[1]]), nil
	}
	for n := 2; n <= 6; n++ {
		addFn("regexp_substr", args(tText, tText, tI4, tI4, tText, tI4)[:n], tText, substr)
	}
	// regexp_instr(s, pattern, start, n, endoption, flags, subexpr)
	instr := func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		re, s, off, err := regexArgs("regexp_instr", a[0].S, a[1].S, optArg(a, 5, noFlags).S, optArg(a, 2, one).I)
		if err != nil {
			return types.NullDatum, err
		}
		end := optArg(a, 4, types.DInt(0)).I
		if end != 0 && end != 1 {
			return types.NullDatum, pgerror.New(pgerror.CodeInvalidParameterValue, "invalid value for parameter \"endoption\": %d", end)
		}
		m, err := nthMatch(re, s, optArg(a, 3, one).I, optArg(a, 6, types.DInt(0)).I)
		if err != nil {
			return types.NullDatum, err
		}
		if m == nil {
			return types.DInt(0), nil
		}
		return types.DInt(strLen(a[0].S[:off+m[end]]) + 1), nil
	}
	for n := 2; n <= 7; n++ {
		addFn("regexp_instr", args(tText, tText, tI4, tI4, tI4, tText, tI4)[:n], tI4, instr)
	}
}
