package types

import (
	"bytes"
	"encoding/binary"
	"hash/fnv"
	"math"
	"math/bits"
	"strings"

	"github.com/cockroachdb/apd/v3"
)

// Compare returns -1, 0 or +1 ordering two non-NULL values of type t as
// PostgreSQL's default btree operator class does: text bytewise ("C"
// collation), bpchar ignoring trailing spaces, floats with NaN above
// everything and equal to itself, numeric NaN above Infinity, intervals by
// their 30-day-month span, jsonb by jsonb's ordering.
func Compare(a, b Datum, t T) int {
	switch t.Family() {
	case FamBool, FamInt, FamDate, FamTime, FamTimestamp, FamTimestampTZ:
		return cmpI64(a.I, b.I)
	case FamFloat:
		return CompareFloat(a.F, b.F)
	case FamNumeric:
		return CompareNumeric(a.D, b.D)
	case FamString, FamUnknown:
		if t.OID == OIDBPChar {
			return strings.Compare(TrimBPChar(a.S), TrimBPChar(b.S))
		}
		return strings.Compare(a.S, b.S)
	case FamBytes:
		return bytes.Compare(a.B, b.B)
	case FamInterval:
		return CompareInterval(a.Iv, b.Iv)
	case FamUUID:
		return bytes.Compare(a.U[:], b.U[:])
	case FamJSON:
		if t.OID == OIDJSONB {
			return CompareJSONB(a.S, b.S)
		}
		return strings.Compare(a.S, b.S)
	case FamArray:
		el := t.Elem()
		if t.OID == OIDInt2Vector || t.OID == OIDOIDVector {
			el = T{byOID[t.OID].Elem, -1}
		}
		for i := 0; i < len(a.A) && i < len(b.A); i++ {
			x, y := a.A[i], b.A[i]
			switch {
			case x.Null && y.Null:
				continue
			case x.Null:
				return 1 // NULL elements sort last
			case y.Null:
				return -1
			}
			if c := Compare(x, y, el); c != 0 {
				return c
			}
		}
		return cmpI64(int64(len(a.A)), int64(len(b.A)))
	}
	return 0
}

// Equal reports whether Compare(a, b, t) == 0.
func Equal(a, b Datum, t T) bool { return Compare(a, b, t) == 0 }

func cmpI64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// CompareFloat orders floats as float8_cmp: NaN equals NaN and is above
// every other value; -0 equals 0.
func CompareFloat(a, b float64) int {
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func numericClass(d *apd.Decimal) int {
	switch d.Form {
	case apd.NaN, apd.NaNSignaling:
		return 3
	case apd.Infinite:
		if d.Negative {
			return -2
		}
		return 2
	}
	return 0
}

// CompareNumeric orders numerics: -Infinity < finite < Infinity < NaN.
func CompareNumeric(a, b *apd.Decimal) int {
	if a == nil || b == nil {
		switch {
		case a == nil && b == nil:
			return 0
		case a == nil:
			return -1
		}
		return 1
	}
	ca, cb := numericClass(a), numericClass(b)
	if ca != 0 || cb != 0 {
		return cmpI64(int64(ca), int64(cb))
	}
	return a.Cmp(b)
}

// TrimBPChar removes the trailing spaces that are not significant in
// character(n).
func TrimBPChar(s string) string { return strings.TrimRight(s, " ") }

// intervalSpan returns PostgreSQL's interval_cmp_value as a 128-bit number
// (hi, lo): (months*30 + days) * usPerDay + micros.
func intervalSpan(iv Interval) (hi int64, lo uint64) {
	days := int64(iv.Months)*30 + int64(iv.Days)
	// days * usPerDay as 128 bits
	neg := days < 0
	ud := uint64(days)
	if neg {
		ud = uint64(-days)
	}
	h, l := bits.Mul64(ud, uint64(usPerDay))
	if neg {
		l = ^l + 1
		h = ^h
		if l == 0 {
			h++
		}
	}
	// add micros (sign-extended)
	m := uint64(iv.Micros)
	mh := uint64(0)
	if iv.Micros < 0 {
		mh = math.MaxUint64
	}
	var carry uint64
	l, carry = bits.Add64(l, m, 0)
	h, _ = bits.Add64(h, mh, carry)
	return int64(h), l
}

// CompareInterval orders intervals by their span with months as 30 days
// and days as 24 hours, as PostgreSQL does ('1 mon' = '30 days').
func CompareInterval(a, b Interval) int {
	ah, al := intervalSpan(a)
	bh, bl := intervalSpan(b)
	if ah != bh {
		return cmpI64(ah, bh)
	}
	switch {
	case al < bl:
		return -1
	case al > bl:
		return 1
	}
	return 0
}

// AppendKey appends a byte string that is equal for two values exactly
// when Compare says they are equal (not order-preserving): for GROUP BY,
// DISTINCT and hash joins. Composite keys may concatenate these: every
// encoding is self-delimiting.
func AppendKey(buf []byte, d Datum, t T) []byte {
	if d.Null {
		return append(buf, 0)
	}
	buf = append(buf, 1)
	switch t.Family() {
	case FamBool, FamInt, FamDate, FamTime, FamTimestamp, FamTimestampTZ:
		return binary.BigEndian.AppendUint64(buf, uint64(d.I))
	case FamFloat:
		f := d.F
		if math.IsNaN(f) {
			f = math.NaN()
		} else if f == 0 {
			f = 0
		}
		return binary.BigEndian.AppendUint64(buf, math.Float64bits(f))
	case FamNumeric:
		return appendLenPrefixed(buf, numericKey(d.D))
	case FamString, FamUnknown:
		s := d.S
		if t.OID == OIDBPChar {
			s = TrimBPChar(s)
		}
		return appendLenPrefixed(buf, s)
	case FamBytes:
		return appendLenPrefixed(buf, string(d.B))
	case FamInterval:
		h, l := intervalSpan(d.Iv)
		buf = binary.BigEndian.AppendUint64(buf, uint64(h))
		return binary.BigEndian.AppendUint64(buf, l)
	case FamUUID:
		return append(buf, d.U[:]...)
	case FamJSON:
		if t.OID == OIDJSONB {
			if v, err := ParseJSON(d.S, true); err == nil {
				return appendLenPrefixed(buf, string(canonicalJSON(nil, v)))
			}
		}
		return appendLenPrefixed(buf, d.S)
	case FamArray:
		el := t.Elem()
		if t.OID == OIDInt2Vector || t.OID == OIDOIDVector {
			el = T{byOID[t.OID].Elem, -1}
		}
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(d.A)))
		for _, e := range d.A {
			buf = AppendKey(buf, e, el)
		}
		return buf
	}
	return buf
}

func appendLenPrefixed(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

// numericKey is a canonical text of a numeric: trailing fractional zeros
// removed, so 1.50 and 1.5 agree.
func numericKey(d *apd.Decimal) string {
	if d == nil {
		return "0"
	}
	switch d.Form {
	case apd.NaN, apd.NaNSignaling:
		return "NaN"
	case apd.Infinite:
		if d.Negative {
			return "-Inf"
		}
		return "Inf"
	}
	return NumericString(stripTrailingZeros(d))
}

// canonicalJSON renders v with numbers in canonical form, so that jsonb
// values that compare equal render equal.
func canonicalJSON(buf []byte, v *JSONValue) []byte {
	switch v.Kind {
	case JSONNumber:
		return append(buf, numericKey(v.Num)...)
	case JSONArray:
		buf = append(buf, '[')
		for _, e := range v.Arr {
			buf = canonicalJSON(buf, e)
			buf = append(buf, ',')
		}
		return append(buf, ']')
	case JSONObject:
		buf = append(buf, '{')
		for i, k := range v.Keys {
			buf = AppendJSONString(buf, k)
			buf = append(buf, ':')
			buf = canonicalJSON(buf, v.Vals[i])
			buf = append(buf, ',')
		}
		return append(buf, '}')
	}
	return v.AppendJSONB(buf)
}

// Hash returns a hash of d that is equal for values that compare equal.
func Hash(d Datum, t T) uint64 {
	h := fnv.New64a()
	var scratch [64]byte
	_, _ = h.Write(AppendKey(scratch[:0], d, t))
	return h.Sum64()
}
