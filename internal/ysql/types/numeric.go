package types

import (
	"strconv"
	"strings"

	"github.com/cockroachdb/apd/v3"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// numeric values are *apd.Decimal whose exponent is minus the display
// scale (1.50 is 150e-2; 1e5 is held as 100000e0), with NaN and ±Infinity
// as apd's NaN and Infinite forms and no negative zero.

const (
	numericMaxWeightDigits = 131072 // digits before the decimal point
	numericMaxDScale       = 16383  // digits after
)

var bigTen = apd.NewBigInt(10)

// pow10 returns 10^n as an apd.BigInt.
func pow10(n int) *apd.BigInt {
	r := apd.NewBigInt(0)
	return r.Exp(bigTen, apd.NewBigInt(int64(n)), nil)
}

// NumericNaN, NumericInf and NumericNegInf return the special values.
func NumericNaN() *apd.Decimal { return &apd.Decimal{Form: apd.NaN} }

// NumericInf returns +Infinity (neg false) or -Infinity.
func NumericInf(neg bool) *apd.Decimal { return &apd.Decimal{Form: apd.Infinite, Negative: neg} }

// NumericScale returns the display scale of a finite numeric.
func NumericScale(d *apd.Decimal) int {
	if d.Exponent < 0 {
		return int(-d.Exponent)
	}
	return 0
}

// normNumeric makes d canonical: non-negative exponent folded into the
// coefficient, no negative zero.
func normNumeric(d *apd.Decimal) *apd.Decimal {
	if d.Form != apd.Finite {
		if d.Form == apd.NaNSignaling {
			d.Form = apd.NaN
		}
		if d.Form == apd.NaN {
			d.Negative = false
		}
		return d
	}
	if d.Exponent > 0 {
		d.Coeff.Mul(&d.Coeff, pow10(int(d.Exponent)))
		d.Exponent = 0
	}
	if d.Coeff.Sign() == 0 {
		d.Negative = false
	}
	return d
}

func numericOverflow() *pgerror.Error {
	return pgerror.New(pgerror.CodeNumericValueOutOfRange, "value overflows numeric format")
}

// ParseNumeric parses numeric input as numeric_in does.
func ParseNumeric(s string) (*apd.Decimal, error) {
	in := strings.TrimSpace(s)
	bad := func() (*apd.Decimal, error) {
		return nil, pgerror.New(pgerror.CodeInvalidTextRepresentation, "invalid input syntax for type numeric: \"%s\"", s)
	}
	switch strings.ToLower(in) {
	case "nan":
		return NumericNaN(), nil
	case "infinity", "+infinity", "inf", "+inf":
		return NumericInf(false), nil
	case "-infinity", "-inf":
		return NumericInf(true), nil
	}
	i := 0
	neg := false
	if i < len(in) && (in[i] == '+' || in[i] == '-') {
		neg = in[i] == '-'
		i++
	}
	var digits []byte
	scale := 0
	sawDigit, sawPoint := false, false
	for ; i < len(in); i++ {
		c := in[i]
		if c == '.' {
			if sawPoint {
				return bad()
			}
			sawPoint = true
			continue
		}
		if !isDigit(c) {
			break
		}
		sawDigit = true
		digits = append(digits, c)
		if sawPoint {
			scale++
		}
	}
	if !sawDigit {
		return bad()
	}
	exp := int64(0)
	if i < len(in) && (in[i] == 'e' || in[i] == 'E') {
		i++
		eneg := false
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			eneg = in[i] == '-'
			i++
		}
		start := i
		for ; i < len(in) && isDigit(in[i]); i++ {
			exp = exp*10 + int64(in[i]-'0')
			if exp > 1000000000 {
				return bad()
			}
		}
		if i == start {
			return bad()
		}
		if eneg {
			exp = -exp
		}
		if exp > numericMaxWeightDigits*2 || exp < -numericMaxDScale*2 {
			return nil, numericOverflow()
		}
	}
	if i != len(in) {
		return bad()
	}
	d := new(apd.Decimal)
	if _, ok := d.Coeff.SetString(string(digits), 10); !ok {
		return bad()
	}
	e := exp - int64(scale)
	d.Exponent = int32(e)
	d.Negative = neg
	if e < -numericMaxDScale {
		return nil, numericOverflow()
	}
	normNumeric(d)
	if int(d.NumDigits())+int(d.Exponent) > numericMaxWeightDigits {
		return nil, numericOverflow()
	}
	return d, nil
}

// NumericString formats d as numeric_out does: plain notation keeping the
// scale; NaN, Infinity, -Infinity.
func NumericString(d *apd.Decimal) string { return string(AppendNumeric(nil, d)) }

// AppendNumeric appends NumericString(d).
func AppendNumeric(buf []byte, d *apd.Decimal) []byte {
	switch d.Form {
	case apd.NaN, apd.NaNSignaling:
		return append(buf, "NaN"...)
	case apd.Infinite:
		if d.Negative {
			return append(buf, "-Infinity"...)
		}
		return append(buf, "Infinity"...)
	}
	if d.Coeff.Sign() == 0 && d.Negative {
		c := *d
		c.Negative = false
		return c.Append(buf, 'f')
	}
	return d.Append(buf, 'f')
}

// RoundNumeric rounds a finite d to scale digits after the point (negative:
// to tens, hundreds...), half away from zero as PostgreSQL's round_var,
// and sets the display scale to max(scale, 0).
func RoundNumeric(d *apd.Decimal, scale int) *apd.Decimal {
	if d.Form != apd.Finite {
		return d
	}
	r := new(apd.Decimal)
	r.Negative = d.Negative
	cur := -int(d.Exponent)
	switch {
	case cur <= scale:
		// Only extends the display scale (never negative).
		target := scale
		if target < 0 {
			target = 0
		}
		if target < cur {
			target = cur
		}
		r.Coeff.Mul(&d.Coeff, pow10(target-cur))
		r.Exponent = int32(-target)
	default:
		k := cur - scale
		div := pow10(k)
		q, rem := new(apd.BigInt), new(apd.BigInt)
		q.QuoRem(&d.Coeff, div, rem)
		rem.Mul(rem, apd.NewBigInt(2))
		if rem.Cmp(div) >= 0 {
			q.Add(q, apd.NewBigInt(1))
		}
		if scale < 0 {
			q.Mul(q, pow10(-scale))
			r.Exponent = 0
		} else {
			r.Exponent = int32(-scale)
		}
		r.Coeff.Set(q)
	}
	return normNumeric(r)
}

// TruncNumeric truncates a finite d to scale digits (towards zero).
func TruncNumeric(d *apd.Decimal, scale int) *apd.Decimal {
	if d.Form != apd.Finite || -int(d.Exponent) <= scale {
		return RoundNumeric(d, scale)
	}
	k := -int(d.Exponent) - scale
	r := new(apd.Decimal)
	r.Negative = d.Negative
	r.Coeff.Quo(&d.Coeff, pow10(k))
	if scale < 0 {
		r.Coeff.Mul(&r.Coeff, pow10(-scale))
		r.Exponent = 0
	} else {
		r.Exponent = int32(-scale)
	}
	return normNumeric(r)
}

// ApplyNumericTypmod rounds d to numeric(p,s) and checks that it fits, as
// PostgreSQL's apply_typmod: 22003 "numeric field overflow".
func ApplyNumericTypmod(d *apd.Decimal, t T) (*apd.Decimal, error) {
	p, s, ok := t.NumericPrecScale()
	if !ok {
		return d, nil
	}
	switch d.Form {
	case apd.NaN, apd.NaNSignaling:
		return d, nil
	case apd.Infinite:
		return nil, pgerror.New(pgerror.CodeNumericValueOutOfRange, "numeric field overflow").
			WithDetail("A field with precision %d, scale %d cannot hold an infinite value.", p, s)
	}
	r := RoundNumeric(d, s)
	maxDigits := p - s
	if r.Coeff.Sign() != 0 && int(r.NumDigits())+int(r.Exponent) > maxDigits {
		e := pgerror.New(pgerror.CodeNumericValueOutOfRange, "numeric field overflow")
		if maxDigits != 0 {
			e.WithDetail("A field with precision %d, scale %d must round to an absolute value less than 10^%d.", p, s, maxDigits)
		} else {
			e.WithDetail("A field with precision %d, scale %d must round to an absolute value less than 1.", p, s)
		}
		return nil, e
	}
	return r, nil
}

// NumericFromInt returns i as a numeric.
func NumericFromInt(i int64) *apd.Decimal { return apd.New(i, 0) }

// NumericFromFloat converts a float to numeric as float8_numeric does: the
// value printed with 15 significant digits (6 for float4).
func NumericFromFloat(f float64, float4 bool) (*apd.Decimal, error) {
	switch {
	case f != f:
		return NumericNaN(), nil
	case f > 1.7976931348623157e308:
		return NumericInf(false), nil
	case f < -1.7976931348623157e308:
		return NumericInf(true), nil
	}
	digits := 15
	if float4 {
		digits = 6
	}
	s := strconv.FormatFloat(f, 'e', digits-1, 64)
	d, err := ParseNumeric(s)
	if err != nil {
		return nil, err
	}
	// %.15g drops trailing zeros of the fraction.
	return stripTrailingZeros(d), nil
}

// stripTrailingZeros removes fractional trailing zeros (1.500 -> 1.5).
func stripTrailingZeros(d *apd.Decimal) *apd.Decimal {
	if d.Form != apd.Finite {
		return d
	}
	r := new(apd.Decimal).Set(d)
	ten := apd.NewBigInt(10)
	q, rem := new(apd.BigInt), new(apd.BigInt)
	for r.Exponent < 0 && r.Coeff.Sign() != 0 {
		q.QuoRem(&r.Coeff, ten, rem)
		if rem.Sign() != 0 {
			break
		}
		r.Coeff.Set(q)
		r.Exponent++
	}
	if r.Coeff.Sign() == 0 && r.Exponent < 0 {
		r.Exponent = 0
	}
	return r
}

// NumericToFloat converts to float64 (float8 of a numeric: via its text).
func NumericToFloat(d *apd.Decimal) float64 {
	switch d.Form {
	case apd.NaN, apd.NaNSignaling:
		return nan()
	case apd.Infinite:
		if d.Negative {
			return negInf()
		}
		return posInf()
	}
	f, _ := strconv.ParseFloat(d.Text('e'), 64)
	return f
}

// NumericToInt rounds d half away from zero to an integer; ok is false when
// it is NaN, infinite or does not fit in int64.
func NumericToInt(d *apd.Decimal) (int64, bool) {
	if d.Form != apd.Finite {
		return 0, false
	}
	r := RoundNumeric(d, 0)
	if r.NumDigits() > 19 {
		return 0, false
	}
	v, err := r.Int64()
	if err != nil {
		return 0, false
	}
	return v, true
}
