package types

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// ParseText parses s with t's input function, applying t's modifier as the
// input function does when given a typmod (COPY, a column's default): a
// too-long varchar/char is 22001 unless the excess is spaces, numeric is
// rounded and checked, timestamps are rounded to their precision. loc is
// the session time zone for timestamptz input without a zone (nil: UTC).
func ParseText(s string, t T, loc *time.Location) (Datum, error) {
	return ParseTextAt(s, t, loc, time.Now())
}

// ParseTextAt is ParseText with the time that 'now', 'today', 'tomorrow'
// and 'yesterday' are relative to (the transaction's start).
func ParseTextAt(s string, t T, loc *time.Location, now time.Time) (Datum, error) {
	d, err := parseBaseAt(s, t, loc, now)
	if err != nil {
		return NullDatum, err
	}
	if t.Mod >= 0 {
		return applyTypmod(d, t, false)
	}
	return d, nil
}

func invalidSyntax(typeName, s string) *pgerror.Error {
	return pgerror.New(pgerror.CodeInvalidTextRepresentation, "invalid input syntax for type %s: \"%s\"", typeName, s)
}

func parseBase(s string, t T, loc *time.Location) (Datum, error) {
	return parseBaseAt(s, t, loc, time.Now())
}

func parseBaseAt(s string, t T, loc *time.Location, now time.Time) (Datum, error) {
	if loc == nil {
		loc = time.UTC
	}
	switch t.OID {
	case OIDBool:
		b, ok := ParseBool(s)
		if !ok {
			return NullDatum, invalidSyntax("boolean", s)
		}
		return DBool(b), nil
	case OIDInt2:
		v, err := parseInt(s, 16, "smallint")
		return DInt(v), err
	case OIDInt4:
		v, err := parseInt(s, 32, "integer")
		return DInt(v), err
	case OIDInt8:
		v, err := parseInt(s, 64, "bigint")
		return DInt(v), err
	case OIDOID, OIDRegclass, OIDRegtype, OIDRegproc, OIDRegnamespace, OIDRegrole:
		v, err := parseOID(s, byOID[t.OID].Name)
		return DInt(v), err
	case OIDFloat4:
		f, err := ParseFloat(s, 32)
		return DFloat(f), err
	case OIDFloat8:
		f, err := ParseFloat(s, 64)
		return DFloat(f), err
	case OIDNumeric:
		d, err := ParseNumeric(s)
		if err != nil {
			return NullDatum, err
		}
		return DNumeric(d), nil
	case OIDText, OIDVarchar, OIDBPChar, OIDUnknown:
		if err := CheckText(s); err != nil {
			return NullDatum, err
		}
		return DString(s), nil
	case OIDName:
		if err := CheckText(s); err != nil {
			return NullDatum, err
		}
		return DString(truncateName(s)), nil
	case OIDChar:
		return DString(parseChar(s)), nil
	case OIDVoid: // void_in takes any text
		return DString(""), nil
	case OIDBytea:
		b, err := ParseBytea(s)
		return DBytes(b), err
	case OIDDate:
		v, err := parseDateAt(s, now, loc)
		return DDate(v), err
	case OIDTime:
		v, err := parseTimeAt(s, now, loc)
		return DMicros(v), err
	case OIDTimestamp:
		v, err := parseTimestampAt(s, false, loc, now)
		return DMicros(v), err
	case OIDTimestampTZ:
		v, err := parseTimestampAt(s, true, loc, now)
		return DMicros(v), err
	case OIDInterval:
		iv, err := ParseInterval(s)
		return DInterval(iv), err
	case OIDUUID:
		u, err := ParseUUID(s)
		return DUUID(u), err
	case OIDJSON:
		if err := ValidateJSON(s); err != nil {
			return NullDatum, err
		}
		return DString(s), nil
	case OIDJSONB:
		n, err := NormalizeJSONB(s)
		return DString(n), err
	}
	if t.IsArray() {
		return parseArray(s, t, loc, now)
	}
	return NullDatum, pgerror.New(pgerror.CodeFeatureNotSupported, "input of type %s is not supported", t.String())
}

// CheckText refuses what PostgreSQL's UTF8 text cannot hold.
func CheckText(s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return pgerror.New(pgerror.CodeCharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\": 0x00")
	}
	if !utf8.ValidString(s) {
		for i := 0; i < len(s); {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n <= 1 {
				return pgerror.New(pgerror.CodeCharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\": 0x%02x", s[i])
			}
			i += n
		}
	}
	return nil
}

// NameDataLen is PostgreSQL's NAMEDATALEN: names hold at most 63 bytes.
const NameDataLen = 64

func truncateName(s string) string {
	if len(s) < NameDataLen {
		return s
	}
	n := NameDataLen - 1
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func parseChar(s string) string {
	// charin: \ooo is an octal byte; otherwise the first byte.
	if len(s) == 4 && s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7' {
		return string([]byte{(s[1]-'0')<<6 | (s[2]-'0')<<3 | (s[3] - '0')})
	}
	if s == "" || s[0] == 0 {
		return ""
	}
	return s[:1]
}

// ParseBool parses boolean input as parse_bool does: true/false, yes/no,
// on/off, 1/0 and unique prefixes, case-insensitive, surrounding
// whitespace allowed.
func ParseBool(s string) (bool, bool) {
	v := strings.ToLower(strings.TrimSpace(s))
	if v == "" {
		return false, false
	}
	switch v[0] {
	case 't':
		if strings.HasPrefix("true", v) {
			return true, true
		}
	case 'f':
		if strings.HasPrefix("false", v) {
			return false, true
		}
	case 'y':
		if strings.HasPrefix("yes", v) {
			return true, true
		}
	case 'n':
		if strings.HasPrefix("no", v) {
			return false, true
		}
	case 'o':
		if len(v) >= 2 {
			if strings.HasPrefix("on", v) {
				return true, true
			}
			if strings.HasPrefix("off", v) {
				return false, true
			}
		}
	case '1':
		if v == "1" {
			return true, true
		}
	case '0':
		if v == "0" {
			return false, true
		}
	}
	return false, false
}

// parseInt parses int2/int4/int8 input as pg_strtoint16/32/64 do.
func parseInt(s string, bits int, typeName string) (int64, error) {
	v := strings.TrimSpace(s)
	body := v
	if body != "" && (body[0] == '+' || body[0] == '-') {
		body = body[1:]
	}
	if body == "" {
		return 0, invalidSyntax(typeName, s)
	}
	for i := 0; i < len(body); i++ {
		if !isDigit(body[i]) {
			return 0, invalidSyntax(typeName, s)
		}
	}
	n, err := strconv.ParseInt(v, 10, bits)
	if err != nil {
		return 0, pgerror.New(pgerror.CodeNumericValueOutOfRange, "value \"%s\" is out of range for type %s", s, typeName)
	}
	return n, nil
}

// parseOID parses oid input (oidin): an unsigned 32-bit number; negative
// values down to -2^31 wrap around as in PostgreSQL.
func parseOID(s, typeName string) (int64, error) {
	v := strings.TrimSpace(s)
	if v == "" {
		return 0, invalidSyntax(typeName, s)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		for i := 0; i < len(v); i++ {
			if !isDigit(v[i]) && !(i == 0 && (v[i] == '-' || v[i] == '+')) {
				return 0, invalidSyntax(typeName, s)
			}
		}
		return 0, pgerror.New(pgerror.CodeNumericValueOutOfRange, "value \"%s\" is out of range for type %s", s, typeName)
	}
	if n > math.MaxUint32 || n < math.MinInt32 {
		return 0, pgerror.New(pgerror.CodeNumericValueOutOfRange, "value \"%s\" is out of range for type %s", s, typeName)
	}
	return int64(uint32(n)), nil
}

// ParseFloat parses float4 (bits 32) or float8 input as float4in/float8in
// do: NaN, [+-]Infinity, [+-]inf, decimal and exponent forms, surrounding
// whitespace; out-of-range values (including underflow to zero) are 22003.
func ParseFloat(s string, bits int) (float64, error) {
	typeName := "double precision"
	if bits == 32 {
		typeName = "real"
	}
	v := strings.TrimSpace(s)
	switch strings.ToLower(v) {
	case "nan", "+nan", "-nan":
		return math.NaN(), nil
	case "infinity", "+infinity", "inf", "+inf":
		return math.Inf(1), nil
	case "-infinity", "-inf":
		return math.Inf(-1), nil
	}
	if v == "" || strings.ContainsAny(v, "_xXpPiInN") {
		return 0, invalidSyntax(typeName, s)
	}
	f, err := strconv.ParseFloat(v, bits)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, pgerror.New(pgerror.CodeNumericValueOutOfRange, "\"%s\" is out of range for type %s", s, typeName)
		}
		return 0, invalidSyntax(typeName, s)
	}
	if f == 0 && hasNonZeroMantissa(v) {
		return 0, pgerror.New(pgerror.CodeNumericValueOutOfRange, "\"%s\" is out of range for type %s", s, typeName)
	}
	return f, nil
}

func hasNonZeroMantissa(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == 'e' || c == 'E' {
			return false
		}
		if c >= '1' && c <= '9' {
			return true
		}
	}
	return false
}

// ParseBytea parses bytea input: hex format (\x0a0b, whitespace between
// pairs allowed) or escape format (\\ for a backslash, \ooo octal bytes).
func ParseBytea(s string) ([]byte, error) {
	if strings.HasPrefix(s, `\x`) || strings.HasPrefix(s, `\X`) {
		out := make([]byte, 0, (len(s)-2)/2)
		for i := 2; i < len(s); {
			c := s[i]
			if isSpace(c) {
				i++
				continue
			}
			hi, ok := unhex(c)
			if !ok {
				_, n := utf8.DecodeRuneInString(s[i:])
				return nil, pgerror.New(pgerror.CodeInvalidParameterValue, "invalid hexadecimal digit: \"%s\"", s[i:i+n])
			}
			if i+1 >= len(s) {
				return nil, pgerror.New(pgerror.CodeInvalidParameterValue, "invalid hexadecimal data: odd number of digits")
			}
			lo, ok := unhex(s[i+1])
			if !ok {
				_, n := utf8.DecodeRuneInString(s[i+1:])
				return nil, pgerror.New(pgerror.CodeInvalidParameterValue, "invalid hexadecimal digit: \"%s\"", s[i+1:i+1+n])
			}
			out = append(out, hi<<4|lo)
			i += 2
		}
		return out, nil
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 < len(s) && s[i+1] == '\\' {
			out = append(out, '\\')
			i += 2
			continue
		}
		if i+3 < len(s) && s[i+1] >= '0' && s[i+1] <= '3' && s[i+2] >= '0' && s[i+2] <= '7' && s[i+3] >= '0' && s[i+3] <= '7' {
			out = append(out, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
			i += 4
			continue
		}
		return nil, pgerror.New(pgerror.CodeInvalidTextRepresentation, "invalid input syntax for type bytea")
	}
	return out, nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// ParseUUID parses uuid input: 32 hex digits, optionally in braces, with a
// hyphen allowed after any group of four digits.
func ParseUUID(s string) ([16]byte, error) {
	var u [16]byte
	in := s
	braces := strings.HasPrefix(in, "{")
	if braces {
		in = in[1:]
	}
	n := 0
	i := 0
	for n < 32 {
		if i >= len(in) {
			return u, invalidSyntax("uuid", s)
		}
		if n > 0 && n%4 == 0 && in[i] == '-' {
			i++
			if i >= len(in) {
				return u, invalidSyntax("uuid", s)
			}
		}
		v, ok := unhex(in[i])
		if !ok {
			return u, invalidSyntax("uuid", s)
		}
		if n%2 == 0 {
			u[n/2] = v << 4
		} else {
			u[n/2] |= v
		}
		n++
		i++
	}
	if braces {
		if i >= len(in) || in[i] != '}' {
			return u, invalidSyntax("uuid", s)
		}
		i++
	}
	if i != len(in) {
		return u, invalidSyntax("uuid", s)
	}
	return u, nil
}

// parseArray parses a one-dimensional array literal: {1,2,NULL},
// {"a b","x\"y"}.
func parseArray(s string, t T, loc *time.Location, now time.Time) (Datum, error) {
	elem := t.Elem()
	bad := func(detail string) (Datum, error) {
		return NullDatum, pgerror.New(pgerror.CodeInvalidTextRepresentation, "malformed array literal: \"%s\"", s).WithDetail("%s", detail)
	}
	if t.OID == OIDInt2Vector || t.OID == OIDOIDVector {
		var out []Datum
		for _, f := range strings.Fields(s) {
			d, err := ParseText(f, elem, loc)
			if err != nil {
				return NullDatum, err
			}
			out = append(out, d)
		}
		return DArray(out), nil
	}
	in := strings.TrimSpace(s)
	if !strings.HasPrefix(in, "{") {
		return bad("Array value must start with \"{\" or dimension information.")
	}
	i := 1
	out := []Datum{}
	skip := func() {
		for i < len(in) && isSpace(in[i]) {
			i++
		}
	}
	skip()
	if i < len(in) && in[i] == '}' {
		i++
		skip()
		if i != len(in) {
			return bad("Junk after closing right brace.")
		}
		return DArray(out), nil
	}
	for {
		skip()
		if i >= len(in) {
			return bad("Unexpected end of input.")
		}
		if in[i] == '{' {
			return NullDatum, pgerror.Unsupported("multidimensional arrays")
		}
		var sb strings.Builder
		quoted := false
		if in[i] == '"' {
			quoted = true
			i++
			for {
				if i >= len(in) {
					return bad("Unexpected end of input.")
				}
				c := in[i]
				if c == '\\' && i+1 < len(in) {
					sb.WriteByte(in[i+1])
					i += 2
					continue
				}
				if c == '"' {
					i++
					break
				}
				sb.WriteByte(c)
				i++
			}
			skip()
		} else {
			for i < len(in) && in[i] != ',' && in[i] != '}' {
				c := in[i]
				if c == '"' || c == '{' {
					return bad("Unexpected array element.")
				}
				if c == '\\' && i+1 < len(in) {
					sb.WriteByte(in[i+1])
					i += 2
					continue
				}
				sb.WriteByte(c)
				i++
			}
		}
		v := sb.String()
		if !quoted {
			v = strings.TrimRight(v, " \t\n\r\v\f")
			if v == "" {
				return bad("Unexpected \",\" character.")
			}
		}
		if !quoted && strings.EqualFold(v, "NULL") {
			out = append(out, NullDatum)
		} else {
			d, err := ParseTextAt(v, elem, loc, now)
			if err != nil {
				return NullDatum, err
			}
			out = append(out, d)
		}
		if i >= len(in) {
			return bad("Unexpected end of input.")
		}
		if in[i] == ',' {
			i++
			continue
		}
		if in[i] == '}' {
			i++
			skip()
			if i != len(in) {
				return bad("Junk after closing right brace.")
			}
			return DArray(out), nil
		}
		return bad("Unexpected array element.")
	}
}
