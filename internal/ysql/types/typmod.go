package types

import (
	"strings"
	"unicode/utf8"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// applyTypmod coerces d to t's modifier: the length of varchar(n) and
// char(n) (explicit casts truncate silently; otherwise only trailing spaces
// may be cut and anything else is 22001), numeric(p,s) rounding and range,
// the fractional precision of times, timestamps and intervals.
func applyTypmod(d Datum, t T, explicit bool) (Datum, error) {
	if d.Null || t.Mod < 0 {
		return d, nil
	}
	switch t.OID {
	case OIDVarchar, OIDBPChar:
		n := t.CharLen()
		s := d.S
		l := utf8.RuneCountInString(s)
		if l > n {
			cut := runePrefix(s, n)
			if !explicit && strings.TrimRight(s[len(cut):], " ") != "" {
				return NullDatum, pgerror.New(pgerror.CodeStringDataRightTruncation, "value too long for type %s", t.String())
			}
			s = cut
			l = n
		}
		if t.OID == OIDBPChar && l < n {
			s += strings.Repeat(" ", n-l)
		}
		return DString(s), nil
	case OIDNumeric:
		if d.D == nil {
			return d, nil
		}
		r, err := ApplyNumericTypmod(d.D, t)
		if err != nil {
			return NullDatum, err
		}
		return DNumeric(r), nil
	case OIDTime:
		if p := t.TimePrecision(); p >= 0 && p < 6 {
			scale := pow10i(6 - p)
			d.I = (d.I + scale/2) / scale * scale
		}
		return d, nil
	case OIDTimestamp, OIDTimestampTZ:
		if p := t.TimePrecision(); p >= 0 && p < 6 && d.I != TimestampNegInfinity && d.I != TimestampPosInfinity {
			d.I = roundHalfAway(d.I, pow10i(6-p))
			if d.I < minTimestampUs || d.I >= endTimestampUs {
				return NullDatum, pgerror.New(pgerror.CodeDatetimeFieldOverflow, "timestamp out of range")
			}
		}
		return d, nil
	case OIDInterval:
		if p := t.TimePrecision(); p >= 0 && p < 6 {
			d.Iv.Micros = roundHalfAway(d.Iv.Micros, pow10i(6-p))
		}
		return d, nil
	}
	if t.IsArray() && d.A != nil {
		el := t.Elem()
		out := make([]Datum, len(d.A))
		for i, e := range d.A {
			v, err := applyTypmod(e, el, explicit)
			if err != nil {
				return NullDatum, err
			}
			out[i] = v
		}
		return DArray(out), nil
	}
	return d, nil
}

// ApplyTypmod applies t's modifier to d (already of t's base type); with
// explicit set, as an explicit cast does (varchar truncation), otherwise as
// an assignment does.
func ApplyTypmod(d Datum, t T, explicit bool) (Datum, error) { return applyTypmod(d, t, explicit) }

func runePrefix(s string, n int) string {
	i := 0
	for k := 0; k < n && i < len(s); k++ {
		_, sz := utf8.DecodeRuneInString(s[i:])
		i += sz
	}
	return s[:i]
}

func pow10i(n int) int64 {
	r := int64(1)
	for ; n > 0; n-- {
		r *= 10
	}
	return r
}

func roundHalfAway(v, scale int64) int64 {
	if v >= 0 {
		return (v + scale/2) / scale * scale
	}
	return -((-v + scale/2) / scale * scale)
}
