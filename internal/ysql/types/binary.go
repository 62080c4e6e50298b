package types

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"

	"github.com/cockroachdb/apd/v3"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// Binary send/recv formats, byte for byte as PostgreSQL's *send functions
// write them (numeric stripped of leading and trailing zero base-10000
// digits as numeric_send does; arrays with lower bound 1). The tests check
// these against pgx's pgtype codecs.

// numeric sign words.
const (
	numericPos    = 0x0000
	numericNeg    = 0x4000
	numericNaN    = 0xC000
	numericPInf   = 0xD000
	numericNInf   = 0xF000
	jsonbVersion1 = 1
)

// EncodeBinary returns d (non-NULL) in t's binary send format.
func EncodeBinary(d Datum, t T) ([]byte, error) { return AppendBinary(nil, d, t) }

// AppendBinary appends d (non-NULL) in t's binary send format.
func AppendBinary(buf []byte, d Datum, t T) ([]byte, error) {
	switch t.OID {
	case OIDBool:
		if d.I != 0 {
			return append(buf, 1), nil
		}
		return append(buf, 0), nil
	case OIDInt2:
		return binary.BigEndian.AppendUint16(buf, uint16(d.I)), nil
	case OIDInt4, OIDDate, OIDOID, OIDRegclass, OIDRegtype, OIDRegproc, OIDRegnamespace, OIDRegrole:
		return binary.BigEndian.AppendUint32(buf, uint32(d.I)), nil
	case OIDInt8, OIDTime, OIDTimestamp, OIDTimestampTZ:
		return binary.BigEndian.AppendUint64(buf, uint64(d.I)), nil
	case OIDFloat4:
		return binary.BigEndian.AppendUint32(buf, math.Float32bits(float32(d.F))), nil
	case OIDFloat8:
		return binary.BigEndian.AppendUint64(buf, math.Float64bits(d.F)), nil
	case OIDNumeric:
		return appendNumericBinary(buf, d.D), nil
	case OIDText, OIDVarchar, OIDBPChar, OIDName, OIDJSON, OIDUnknown:
		return append(buf, d.S...), nil
	case OIDVoid:
		return buf, nil
	case OIDChar:
		if d.S == "" {
			return append(buf, 0), nil
		}
		return append(buf, d.S[0]), nil
	case OIDJSONB:
		buf = append(buf, jsonbVersion1)
		return append(buf, d.S...), nil
	case OIDBytea:
		return append(buf, d.B...), nil
	case OIDInterval:
		buf = binary.BigEndian.AppendUint64(buf, uint64(d.Iv.Micros))
		buf = binary.BigEndian.AppendUint32(buf, uint32(d.Iv.Days))
		return binary.BigEndian.AppendUint32(buf, uint32(d.Iv.Months)), nil
	case OIDUUID:
		return append(buf, d.U[:]...), nil
	}
	if t.IsArray() {
		return appendArrayBinary(buf, d, t)
	}
	return buf, pgerror.New(pgerror.CodeFeatureNotSupported, "binary output of type %s is not supported", t.String())
}

func appendArrayBinary(buf []byte, d Datum, t T) ([]byte, error) {
	el := t.Elem()
	if t.OID == OIDInt2Vector || t.OID == OIDOIDVector {
		el = T{byOID[t.OID].Elem, -1}
	}
	ndim := uint32(1)
	if len(d.A) == 0 {
		ndim = 0
	}
	hasNull := uint32(0)
	for _, e := range d.A {
		if e.Null {
			hasNull = 1
		}
	}
	buf = binary.BigEndian.AppendUint32(buf, ndim)
	buf = binary.BigEndian.AppendUint32(buf, hasNull)
	buf = binary.BigEndian.AppendUint32(buf, el.OID)
	if ndim == 0 {
		return buf, nil
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(d.A)))
	if t.OID == OIDInt2Vector || t.OID == OIDOIDVector {
		buf = binary.BigEndian.AppendUint32(buf, 0) // vectors are zero-based
	} else {
		buf = binary.BigEndian.AppendUint32(buf, 1)
	}
	for _, e := range d.A {
		if e.Null {
			buf = binary.BigEndian.AppendUint32(buf, math.MaxUint32)
			continue
		}
		at := len(buf)
		buf = append(buf, 0, 0, 0, 0)
		var err error
		if buf, err = AppendBinary(buf, e, el); err != nil {
			return buf, err
		}
		binary.BigEndian.PutUint32(buf[at:], uint32(len(buf)-at-4))
	}
	return buf, nil
}

func appendNumericBinary(buf []byte, d *apd.Decimal) []byte {
	word := func(v int) { buf = binary.BigEndian.AppendUint16(buf, uint16(v)) }
	if d == nil {
		d = apd.New(0, 0)
	}
	switch d.Form {
	case apd.NaN, apd.NaNSignaling:
		word(0)
		word(0)
		word(numericNaN)
		word(0)
		return buf
	case apd.Infinite:
		word(0)
		word(0)
		if d.Negative {
			word(numericNInf)
		} else {
			word(numericPInf)
		}
		word(0x20) // what numeric_send writes for infinities
		return buf
	}
	dscale := NumericScale(d)
	digits := d.Coeff.Text(10)
	if d.Exponent > 0 {
		digits += strings.Repeat("0", int(d.Exponent))
	}
	// Split at the decimal point and pad both sides to whole base-10000
	// digits.
	var intPart, fracPart string
	if len(digits) > dscale {
		intPart, fracPart = digits[:len(digits)-dscale], digits[len(digits)-dscale:]
	} else {
		fracPart = strings.Repeat("0", dscale-len(digits)) + digits
	}
	if r := len(intPart) % 4; r != 0 {
		intPart = strings.Repeat("0", 4-r) + intPart
	}
	if r := len(fracPart) % 4; r != 0 {
		fracPart += strings.Repeat("0", 4-r)
	}
	all := intPart + fracPart
	groups := make([]int, 0, len(all)/4)
	for i := 0; i < len(all); i += 4 {
		v, _ := strconv.Atoi(all[i : i+4])
		groups = append(groups, v)
	}
	weight := len(intPart)/4 - 1
	for len(groups) > 0 && groups[0] == 0 {
		groups = groups[1:]
		weight--
	}
	for len(groups) > 0 && groups[len(groups)-1] == 0 {
		groups = groups[:len(groups)-1]
	}
	sign := numericPos
	if d.Negative && len(groups) > 0 {
		sign = numericNeg
	}
	if len(groups) == 0 {
		weight = 0
	}
	word(len(groups))
	word(weight)
	word(sign)
	word(dscale)
	for _, g := range groups {
		word(g)
	}
	return buf
}

func errBinary(t T) *pgerror.Error {
	return pgerror.New(pgerror.CodeInvalidBinaryRepresentation, "incorrect binary data format")
}

func errInsufficient() *pgerror.Error {
	return pgerror.New(pgerror.CodeInvalidBinaryRepresentation, "insufficient data left in message")
}

// DecodeBinary parses t's binary receive format (a bound parameter's
// value).
func DecodeBinary(b []byte, t T) (Datum, error) {
	need := func(n int) error {
		if len(b) < n {
			return errInsufficient()
		}
		if len(b) > n {
			return errBinary(t)
		}
		return nil
	}
	switch t.OID {
	case OIDBool:
		if err := need(1); err != nil {
			return NullDatum, err
		}
		return DBool(b[0] != 0), nil
	case OIDInt2:
		if err := need(2); err != nil {
			return NullDatum, err
		}
		return DInt(int64(int16(binary.BigEndian.Uint16(b)))), nil
	case OIDInt4, OIDDate:
		if err := need(4); err != nil {
			return NullDatum, err
		}
		return DInt(int64(int32(binary.BigEndian.Uint32(b)))), nil
	case OIDOID, OIDRegclass, OIDRegtype, OIDRegproc, OIDRegnamespace, OIDRegrole:
		if err := need(4); err != nil {
			return NullDatum, err
		}
		return DInt(int64(binary.BigEndian.Uint32(b))), nil
	case OIDInt8, OIDTime, OIDTimestamp, OIDTimestampTZ:
		if err := need(8); err != nil {
			return NullDatum, err
		}
		v := int64(binary.BigEndian.Uint64(b))
		if t.OID == OIDTime && (v < 0 || v > usPerDay) {
			return NullDatum, pgerror.New(pgerror.CodeInvalidBinaryRepresentation, "time out of range")
		}
		if (t.OID == OIDTimestamp || t.OID == OIDTimestampTZ) && v != TimestampNegInfinity && v != TimestampPosInfinity && (v < minTimestampUs || v >= endTimestampUs) {
			return NullDatum, pgerror.New(pgerror.CodeDatetimeFieldOverflow, "timestamp out of range")
		}
		return DInt(v), nil
	case OIDFloat4:
		if err := need(4); err != nil {
			return NullDatum, err
		}
		return DFloat(float64(math.Float32frombits(binary.BigEndian.Uint32(b)))), nil
	case OIDFloat8:
		if err := need(8); err != nil {
			return NullDatum, err
		}
		return DFloat(math.Float64frombits(binary.BigEndian.Uint64(b))), nil
	case OIDNumeric:
		d, err := decodeNumericBinary(b)
		if err != nil {
			return NullDatum, err
		}
		return DNumeric(d), nil
	case OIDText, OIDVarchar, OIDBPChar, OIDUnknown:
		s := string(b)
		if err := CheckText(s); err != nil {
			return NullDatum, err
		}
		return DString(s), nil
	case OIDName:
		s := string(b)
		if err := CheckText(s); err != nil {
			return NullDatum, err
		}
		return DString(truncateName(s)), nil
	case OIDVoid:
		return DString(""), nil
	case OIDChar:
		if len(b) == 0 || b[0] == 0 {
			return DString(""), nil
		}
		return DString(string(b[:1])), nil
	case OIDJSON:
		return ParseText(string(b), t, nil)
	case OIDJSONB:
		if len(b) < 1 {
			return NullDatum, errInsufficient()
		}
		if b[0] != jsonbVersion1 {
			return NullDatum, pgerror.New(pgerror.CodeInvalidBinaryRepresentation, "unsupported jsonb version number %d", b[0])
		}
		return ParseText(string(b[1:]), t, nil)
	case OIDBytea:
		return DBytes(append([]byte(nil), b...)), nil
	case OIDInterval:
		if err := need(16); err != nil {
			return NullDatum, err
		}
		return DInterval(Interval{
			Micros: int64(binary.BigEndian.Uint64(b)),
			Days:   int32(binary.BigEndian.Uint32(b[8:])),
			Months: int32(binary.BigEndian.Uint32(b[12:])),
		}), nil
	case OIDUUID:
		if err := need(16); err != nil {
			return NullDatum, err
		}
		var u [16]byte
		copy(u[:], b)
		return DUUID(u), nil
	}
	if t.IsArray() {
		return decodeArrayBinary(b, t)
	}
	return NullDatum, pgerror.New(pgerror.CodeFeatureNotSupported, "binary input of type %s is not supported", t.String())
}

func decodeArrayBinary(b []byte, t T) (Datum, error) {
	el := t.Elem()
	if t.OID == OIDInt2Vector || t.OID == OIDOIDVector {
		el = T{byOID[t.OID].Elem, -1}
	}
	u32 := func() (uint32, error) {
		if len(b) < 4 {
			return 0, errInsufficient()
		}
		v := binary.BigEndian.Uint32(b)
		b = b[4:]
		return v, nil
	}
	ndim, err := u32()
	if err != nil {
		return NullDatum, err
	}
	if _, err := u32(); err != nil { // has-null flag
		return NullDatum, err
	}
	elemOID, err := u32()
	if err != nil {
		return NullDatum, err
	}
	if elemOID != el.OID {
		return NullDatum, pgerror.New(pgerror.CodeDatatypeMismatch, "binary data has array element type %d (%s) instead of expected %d (%s)",
			elemOID, FormatType(elemOID, -1), el.OID, FormatType(el.OID, -1))
	}
	if ndim == 0 {
		return DArray([]Datum{}), nil
	}
	if ndim != 1 {
		return NullDatum, pgerror.Unsupported("multidimensional arrays")
	}
	n, err := u32()
	if err != nil {
		return NullDatum, err
	}
	if _, err := u32(); err != nil { // lower bound
		return NullDatum, err
	}
	if int64(n) > int64(len(b)/4) {
		return NullDatum, errInsufficient()
	}
	out := make([]Datum, 0, n)
	for i := uint32(0); i < n; i++ {
		l, err := u32()
		if err != nil {
			return NullDatum, err
		}
		if l == math.MaxUint32 {
			out = append(out, NullDatum)
			continue
		}
		if uint64(l) > uint64(len(b)) {
			return NullDatum, errInsufficient()
		}
		e, err := DecodeBinary(b[:l], el)
		if err != nil {
			return NullDatum, err
		}
		out = append(out, e)
		b = b[l:]
	}
	if len(b) != 0 {
		return NullDatum, errBinary(t)
	}
	return DArray(out), nil
}

func decodeNumericBinary(b []byte) (*apd.Decimal, error) {
	if len(b) < 8 {
		return nil, errInsufficient()
	}
	ndigits := int(binary.BigEndian.Uint16(b))
	weight := int(int16(binary.BigEndian.Uint16(b[2:])))
	sign := int(binary.BigEndian.Uint16(b[4:]))
	dscale := int(binary.BigEndian.Uint16(b[6:]))
	b = b[8:]
	if len(b) != ndigits*2 {
		if len(b) < ndigits*2 {
			return nil, errInsufficient()
		}
		return nil, pgerror.New(pgerror.CodeInvalidBinaryRepresentation, "incorrect binary data format")
	}
	switch sign {
	case numericNaN:
		return NumericNaN(), nil
	case numericPInf:
		return NumericInf(false), nil
	case numericNInf:
		return NumericInf(true), nil
	case numericPos, numericNeg:
	default:
		return nil, pgerror.New(pgerror.CodeInvalidBinaryRepresentation, "invalid sign in external \"numeric\" value")
	}
	if dscale&0xc000 != 0 {
		return nil, pgerror.New(pgerror.CodeInvalidBinaryRepresentation, "invalid scale in external \"numeric\" value")
	}
	var sb strings.Builder
	for i := 0; i < ndigits; i++ {
		g := int(binary.BigEndian.Uint16(b[2*i:]))
		if g >= 10000 {
			return nil, pgerror.New(pgerror.CodeInvalidBinaryRepresentation, "invalid digit in external \"numeric\" value")
		}
		s := strconv.Itoa(g)
		sb.WriteString(strings.Repeat("0", 4-len(s)))
		sb.WriteString(s)
	}
	d := new(apd.Decimal)
	if ndigits == 0 {
		d.Exponent = int32(-dscale)
		return normNumeric(d), nil
	}
	d.Coeff.SetString(sb.String(), 10)
	// value = digits × 10000^(weight - ndigits + 1)
	d.Exponent = int32(4 * (weight - ndigits + 1))
	d.Negative = sign == numericNeg
	r := RoundNumeric(normNumeric(d), dscale)
	return r, nil
}
