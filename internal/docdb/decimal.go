package docdb

import (
	"bytes"
	"strconv"
	"strings"
)

// Decimals are held as decimal strings (Value.Bytes) until a real decimal
// type arrives. Comparison and key encoding parse them into
// sign, exponent and significant digits:
//
//	value = ±0.d1d2…dn × 10^exp, d1 != 0, dn != 0
//
// Key payload (ascending): a class byte (1 negative, 2 zero, 3 positive);
// for non-zero values the exponent (int32, sign bit flipped, BE) and the
// digits as ASCII followed by a 0x00 terminator. Bigger exponents are bigger
// magnitudes and, for equal exponents, the digit strings order like the
// magnitudes (a digit string that is a prefix of another is the smaller).
// Negative values invert the exponent and digit bytes so that larger
// magnitudes sort first. NaN and infinities are not supported.

const (
	decNeg  byte = 1
	decZero byte = 2
	decPos  byte = 3
	// decInvalid is the comparison class of a string that does not parse:
	// it sorts after every number; such values cannot be key-encoded.
	decInvalid byte = 4

	// Bounds that keep exponent arithmetic far from int32 overflow: the
	// exponent literal, the number of digits and the normalized exponent.
	maxExponentLiteral = 1 << 26
	maxDecimalDigits   = 1 << 24
	maxDecimalExponent = 1 << 25
)

type decimal struct {
	class  byte
	exp    int32
	digits []byte // significant digits, ASCII, no leading or trailing zeros
}

// parseDecimal parses [+-]digits[.digits][(e|E)[+-]digits]. ok is false
// for anything else.
func parseDecimal(s []byte) (d decimal, ok bool) {
	i := 0
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	var digits []byte
	pointPos, sawPoint, nDigits := 0, false, 0
	for ; i < len(s); i++ {
		c := s[i]
		if c == '.' {
			if sawPoint {
				return decimal{}, false
			}
			sawPoint = true
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		nDigits++
		if nDigits > maxDecimalDigits {
			return decimal{}, false
		}
		if !sawPoint {
			pointPos++
		}
		digits = append(digits, c)
	}
	if nDigits == 0 {
		return decimal{}, false
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		start := i
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			exp = exp*10 + int(s[i]-'0')
			if exp > maxExponentLiteral {
				return decimal{}, false
			}
		}
		if i == start {
			return decimal{}, false
		}
		if eneg {
			exp = -exp
		}
	}
	if i != len(s) {
		return decimal{}, false
	}
	e := pointPos + exp
	for len(digits) > 0 && digits[0] == '0' {
		digits = digits[1:]
		e--
	}
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	if len(digits) == 0 {
		return decimal{class: decZero}, true
	}
	if e > maxDecimalExponent || e < -maxDecimalExponent {
		return decimal{}, false
	}
	d = decimal{class: decPos, exp: int32(e), digits: digits}
	if neg {
		d.class = decNeg
	}
	return d, true
}

func classifyDecimal(s []byte) decimal {
	d, ok := parseDecimal(s)
	if !ok {
		return decimal{class: decInvalid, digits: s}
	}
	return d
}

// compareDecimal orders decimal strings numerically; unparsable strings sort
// after all numbers, bytewise among themselves.
func compareDecimal(a, b []byte) int {
	da, db := classifyDecimal(a), classifyDecimal(b)
	if da.class != db.class {
		return cmpInt(int64(da.class), int64(db.class))
	}
	switch da.class {
	case decZero:
		return 0
	case decInvalid:
		return bytes.Compare(a, b)
	}
	c := cmpInt(int64(da.exp), int64(db.exp))
	if c == 0 {
		c = bytes.Compare(da.digits, db.digits)
	}
	if da.class == decNeg {
		c = -c
	}
	return c
}

// appendDecimalKey appends the ascending key payload of s; ok is false if s
// does not parse.
func appendDecimalKey(dst []byte, s []byte) ([]byte, bool) {
	d, ok := parseDecimal(s)
	if !ok {
		return dst, false
	}
	dst = append(dst, d.class)
	if d.class == decZero {
		return dst, true
	}
	start := len(dst)
	e := uint32(d.exp) ^ 1<<31
	dst = append(dst, byte(e>>24), byte(e>>16), byte(e>>8), byte(e))
	dst = append(dst, d.digits...)
	dst = append(dst, 0)
	if d.class == decNeg {
		invert(dst[start:])
	}
	return dst, true
}

// decodeDecimalKey decodes a payload written by appendDecimalKey whose bytes
// are XORed with inv, returning the canonical string and the rest.
func decodeDecimalKey(src []byte, inv byte) (string, []byte, error) {
	if len(src) < 1 {
		return "", nil, errTruncated
	}
	class := src[0] ^ inv
	src = src[1:]
	switch class {
	case decZero:
		return "0", src, nil
	case decPos, decNeg:
	default:
		return "", nil, corruptf("bad decimal class %d", class)
	}
	if class == decNeg {
		inv ^= 0xff
	}
	if len(src) < 4 {
		return "", nil, errTruncated
	}
	e := int32((uint32(src[0]^inv)<<24 | uint32(src[1]^inv)<<16 | uint32(src[2]^inv)<<8 | uint32(src[3]^inv)) ^ 1<<31)
	src = src[4:]
	end := -1
	for i, c := range src {
		if c^inv == 0 {
			end = i
			break
		}
	}
	if end <= 0 {
		return "", nil, corruptf("bad decimal digits")
	}
	digits := make([]byte, end)
	for i := range digits {
		c := src[i] ^ inv
		if c < '0' || c > '9' {
			return "", nil, corruptf("bad decimal digit %q", c)
		}
		digits[i] = c
	}
	if digits[0] == '0' || digits[end-1] == '0' || e > maxDecimalExponent || e < -maxDecimalExponent {
		return "", nil, corruptf("non-canonical decimal")
	}
	return formatDecimal(class == decNeg, digits, int(e)), src[end+1:], nil
}

// formatDecimal renders ±0.digits × 10^e in plain notation when that is
// short, else in scientific notation.
func formatDecimal(neg bool, digits []byte, e int) string {
	var sb strings.Builder
	if neg {
		sb.WriteByte('-')
	}
	n := len(digits)
	switch {
	case e <= 0 && e > -20:
		sb.WriteString("0.")
		sb.WriteString(strings.Repeat("0", -e))
		sb.Write(digits)
	case e > 0 && e < n:
		sb.Write(digits[:e])
		sb.WriteByte('.')
		sb.Write(digits[e:])
	case e >= n && e <= 40:
		sb.Write(digits)
		sb.WriteString(strings.Repeat("0", e-n))
	default:
		sb.WriteByte(digits[0])
		if n > 1 {
			sb.WriteByte('.')
			sb.Write(digits[1:])
		}
		sb.WriteString("e")
		sb.WriteString(strconv.Itoa(e - 1))
	}
	return sb.String()
}
