package types

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"time"
)

// FormatText returns d as PostgreSQL 15's output function prints it
// (DateStyle ISO, IntervalStyle postgres, extra_float_digits 1). loc is the
// session time zone for timestamptz (nil means UTC). d must not be NULL.
func FormatText(d Datum, t T, loc *time.Location) string {
	return string(AppendText(nil, d, t, loc))
}

// AppendText appends FormatText(d, t, loc) to buf.
func AppendText(buf []byte, d Datum, t T, loc *time.Location) []byte {
	switch t.OID {
	case OIDBool:
		if d.I != 0 {
			return append(buf, 't')
		}
		return append(buf, 'f')
	case OIDInt2, OIDInt4, OIDInt8:
		return strconv.AppendInt(buf, d.I, 10)
	case OIDOID, OIDRegclass, OIDRegtype, OIDRegproc, OIDRegnamespace, OIDRegrole:
		return strconv.AppendUint(buf, uint64(uint32(d.I)), 10)
	case OIDFloat4:
		return AppendFloat(buf, d.F, 32)
	case OIDFloat8:
		return AppendFloat(buf, d.F, 64)
	case OIDNumeric:
		if d.D == nil {
			return append(buf, '0')
		}
		return AppendNumeric(buf, d.D)
	case OIDText, OIDVarchar, OIDBPChar, OIDName, OIDJSON, OIDJSONB, OIDUnknown:
		return append(buf, d.S...)
	case OIDChar:
		return appendCharOut(buf, d.S)
	case OIDVoid:
		return buf
	case OIDBytea:
		buf = append(buf, `\x`...)
		return hex.AppendEncode(buf, d.B)
	case OIDDate:
		return AppendDate(buf, d.I)
	case OIDTime:
		return AppendTime(buf, d.I)
	case OIDTimestamp:
		return AppendTimestamp(buf, d.I, nil)
	case OIDTimestampTZ:
		if loc == nil {
			loc = time.UTC
		}
		return AppendTimestamp(buf, d.I, loc)
	case OIDInterval:
		return AppendInterval(buf, d.Iv)
	case OIDUUID:
		return AppendUUID(buf, d.U)
	case OIDInt2Vector, OIDOIDVector:
		el := T{byOID[t.OID].Elem, -1}
		for i, e := range d.A {
			if i > 0 {
				buf = append(buf, ' ')
			}
			buf = AppendText(buf, e, el, loc)
		}
		return buf
	}
	if t.IsArray() {
		return appendArrayText(buf, d, t.Elem(), loc)
	}
	if t.OID == OIDRecord {
		return appendRecordText(buf, d, t, loc)
	}
	return buf
}

// appendCharOut prints a "char": the byte itself, \ooo for bytes with the
// high bit set, nothing for \0.
func appendCharOut(buf []byte, s string) []byte {
	if s == "" || s[0] == 0 {
		return buf
	}
	c := s[0]
	if c >= 0x80 {
		return append(buf, '\\', '0'+(c>>6), '0'+(c>>3)&7, '0'+c&7)
	}
	return append(buf, c)
}

// AppendUUID appends the canonical 8-4-4-4-12 lower-case form.
func AppendUUID(buf []byte, u [16]byte) []byte {
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:], u[10:])
	return append(buf, s[:]...)
}

// AppendFloatDigits appends f as float4out / float8out print it under
// extra_float_digits efd: above 0 the shortest exact string (AppendFloat),
// else %g with 6 (float4) or 15 (float8) significant digits plus efd.
func AppendFloatDigits(buf []byte, f float64, bits, efd int) []byte {
	if efd > 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return AppendFloat(buf, f, bits)
	}
	prec := 15 + efd
	if bits == 32 {
		prec = 6 + efd
	}
	return strconv.AppendFloat(buf, f, 'g', max(prec, 1), bits)
}

// AppendFloat appends f as float4out (bits 32) or float8out (bits 64) print
// it: the shortest string that reads back exactly, in %g style with
// exponent thresholds of 6 (float4) or 15 (float8) digits, and Infinity,
// -Infinity and NaN.
func AppendFloat(buf []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(buf, "NaN"...)
	case math.IsInf(f, 1):
		return append(buf, "Infinity"...)
	case math.IsInf(f, -1):
		return append(buf, "-Infinity"...)
	case f == 0:
		if math.Signbit(f) {
			return append(buf, "-0"...)
		}
		return append(buf, '0')
	}
	e := strconv.FormatFloat(f, 'e', -1, bits) // -d.ddde±dd
	neg := e[0] == '-'
	if neg {
		e = e[1:]
	}
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	digits := strings.Replace(mant, ".", "", 1)
	maxFixed := 15
	if bits == 32 {
		maxFixed = 6
	}
	if neg {
		buf = append(buf, '-')
	}
	if exp < -4 || exp >= maxFixed {
		buf = append(buf, digits[0])
		if len(digits) > 1 {
			buf = append(buf, '.')
			buf = append(buf, digits[1:]...)
		}
		buf = append(buf, 'e')
		if exp < 0 {
			buf = append(buf, '-')
			exp = -exp
		} else {
			buf = append(buf, '+')
		}
		return appendPad(buf, int64(exp), 2)
	}
	if exp < 0 {
		buf = append(buf, "0."...)
		for i := -1; i > exp; i-- {
			buf = append(buf, '0')
		}
		return append(buf, digits...)
	}
	if len(digits) <= exp+1 {
		buf = append(buf, digits...)
		for i := len(digits); i <= exp; i++ {
			buf = append(buf, '0')
		}
		return buf
	}
	buf = append(buf, digits[:exp+1]...)
	buf = append(buf, '.')
	return append(buf, digits[exp+1:]...)
}

// appendArrayText prints a 1-D array as array_out does: {1,2,NULL},
// elements quoted when empty, NULL-like or containing special characters.
func appendArrayText(buf []byte, d Datum, elem T, loc *time.Location) []byte {
	buf = append(buf, '{')
	var scratch []byte
	for i, e := range d.A {
		if i > 0 {
			buf = append(buf, ',')
		}
		if e.Null {
			buf = append(buf, "NULL"...)
			continue
		}
		scratch = AppendText(scratch[:0], e, elem, loc)
		if arrayNeedsQuote(scratch) {
			buf = append(buf, '"')
			for _, c := range scratch {
				if c == '"' || c == '\\' {
					buf = append(buf, '\\')
				}
				buf = append(buf, c)
			}
			buf = append(buf, '"')
		} else {
			buf = append(buf, scratch...)
		}
	}
	return append(buf, '}')
}

func arrayNeedsQuote(s []byte) bool {
	if len(s) == 0 || strings.EqualFold(string(s), "NULL") {
		return true
	}
	for _, c := range s {
		switch c {
		case '{', '}', ',', '"', '\\', ' ', '\t', '\n', '\r', '\v', '\f':
			return true
		}
	}
	return false
}

func nan() float64    { return math.NaN() }
func posInf() float64 { return math.Inf(1) }
func negInf() float64 { return math.Inf(-1) }
