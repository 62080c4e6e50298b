package builtins

import (
	"math"
	"math/big"

	"github.com/cockroachdb/apd/v3"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Integer bitwise operators, gcd/lcm, factorial, cbrt, the trigonometric
// functions (the degree variants exact at the usual angles, as
// PostgreSQL's), width_bucket and the numeric scale functions.

func errInputRange() error {
	return pgerror.New(pgerror.CodeNumericValueOutOfRange, "input is out of range")
}

// shift is << and >> as PostgreSQL's C does on x86: the count is taken
// modulo the width the value is computed in (int2 is computed as int4).
func shift(v, n int64, t types.T, left bool) int64 {
	if t.OID == types.OIDInt8 {
		if left {
			return v << (uint64(n) & 63)
		}
		return v >> (uint64(n) & 63)
	}
	var r int32
	if left {
		r = int32(v) << (uint32(n) & 31)
	} else {
		r = int32(v) >> (uint32(n) & 31)
	}
	if t.OID == types.OIDInt2 {
		return int64(int16(r))
	}
	return int64(r)
}

func addBitOps() {
	for _, t := range []types.T{tI2, tI4, tI8} {
		for name, f := range map[string]func(a, b int64) int64{
			"&": func(a, b int64) int64 { return a & b },
			"|": func(a, b int64) int64 { return a | b },
			"#": func(a, b int64) int64 { return a ^ b },
		} {
			addOp(name, t, t, t, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) { return types.DInt(f(a.I, b.I)), nil })
		}
		addOp("~", types.T{}, t, t, func(_ *EvalContext, _, b types.Datum) (types.Datum, error) { return types.DInt(^b.I), nil })
		addOp("<<", t, tI4, t, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
			return types.DInt(shift(a.I, b.I, t, true)), nil
		})
		addOp(">>", t, tI4, t, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
			return types.DInt(shift(a.I, b.I, t, false)), nil
		})
	}
}

func gcdInt(a, b int64, t types.T) (types.Datum, error) {
	lo := int64(math.MinInt64)
	if t.OID == types.OIDInt4 {
		lo = math.MinInt32
	}
	if (a == lo && (b == 0 || b == lo)) || (b == lo && a == 0) {
		return types.NullDatum, intRangeErr(t)
	}
	for b != 0 {
		a, b = b, a%b
	}
	if a < 0 {
		a = -a
	}
	return types.DInt(a), nil
}

func lcmInt(a, b int64, t types.T) (types.Datum, error) {
	if a == 0 || b == 0 {
		return types.DInt(0), nil
	}
	g, err := gcdInt(a, b, t)
	if err != nil {
		return g, err
	}
	r, of := mulInt(a/g.I, b)
	if of || !fits(r, t) || r == math.MinInt64 {
		return types.NullDatum, intRangeErr(t)
	}
	if r < 0 {
		r = -r
	}
	if !fits(r, t) {
		return types.NullDatum, intRangeErr(t)
	}
	return types.DInt(r), nil
}

// numGCD is gcd (or lcm) on numerics: both scaled to integers by the
// larger scale, the result at that scale.
func numGCD(a, b *apd.Decimal, lcm bool) (*apd.Decimal, error) {
	if isNaN(a) || isNaN(b) {
		return types.NumericNaN(), nil
	}
	if isInf(a) || isInf(b) {
		return nil, pgerror.New(pgerror.CodeInvalidParameterValue, "cannot compute %s of infinity", map[bool]string{true: "least common multiple", false: "greatest common divisor"}[lcm])
	}
	exp := min(a.Exponent, b.Exponent, 0)
	scaled := func(d *apd.Decimal) *big.Int {
		x := d.Coeff.MathBigInt()
		x.Mul(x, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Exponent-exp)), nil))
		return x
	}
	x, y := scaled(a), scaled(b)
	g := new(big.Int).GCD(nil, nil, x, y)
	if lcm {
		if x.Sign() == 0 || y.Sign() == 0 {
			g.SetInt64(0)
		} else {
			g.Mul(x.Quo(x, g), y)
		}
	}
	r := new(apd.Decimal)
	r.Coeff.SetMathBigInt(g.Abs(g))
	r.Exponent = exp
	return r, nil
}

func factorial(n int64) (*apd.Decimal, error) {
	if n < 0 {
		return nil, pgerror.New(pgerror.CodeNumericValueOutOfRange, "factorial of a negative number is undefined")
	}
	if n > 32177 { // past numeric's 131072 digits before the point
		return nil, pgerror.New(pgerror.CodeNumericValueOutOfRange, "value overflows numeric format")
	}
	f := new(big.Int).MulRange(1, max(n, 1))
	r := new(apd.Decimal)
	r.Coeff.SetMathBigInt(f)
	return r, nil
}

// radiansPerDegree is a variable so that x*radiansPerDegree rounds as
// PostgreSQL's C does (Go folds constant expressions exactly).
var radiansPerDegree = 0.0174532925199432957692

var (
	sin30         = math.Sin(30 * radiansPerDegree)
	oneMinusCos60 = 1.0 - math.Cos(60*radiansPerDegree)
	asin05        = math.Asin(0.5)
	acos05        = math.Acos(0.5)
	atan1         = math.Atan(1.0)
	tan45         = sindQ1(45) / cosdQ1(45)
	cot45         = cosdQ1(45) / sindQ1(45)
)

func sind0to30(x float64) float64 { return math.Sin(x*radiansPerDegree) / sin30 / 2 }
func cosd0to60(x float64) float64 {
	return 1 - (1-math.Cos(x*radiansPerDegree))/oneMinusCos60/2
}

func sindQ1(x float64) float64 {
	if x <= 30 {
		return sind0to30(x)
	}
	return cosd0to60(90 - x)
}

func cosdQ1(x float64) float64 {
	if x <= 60 {
		return cosd0to60(x)
	}
	return sind0to30(90 - x)
}

func asindQ1(x float64) float64 {
	if x <= 0.5 {
		return math.Asin(x) / asin05 * 30
	}
	return 90 - math.Acos(x)/acos05*60
}

func acosdQ1(x float64) float64 {
	if x <= 0.5 {
		return 90 - math.Asin(x)/asin05*30
	}
	return math.Acos(x) / acos05 * 60
}

// degreeArg reduces an angle in degrees to [0, 90] for sind (kind 's'),
// cosd ('c') and tand/cotd ('t'), returning the sign of the result.
func degreeArg(x float64, kind byte) (float64, float64) {
	sign := 1.0
	x = math.Mod(x, 360)
	if x < 0 {
		x = -x
		if kind != 'c' {
			sign = -sign
		}
	}
	if x > 180 {
		x = 360 - x
		if kind != 'c' {
			sign = -sign
		}
	}
	if x > 90 {
		x = 180 - x
		if kind != 's' {
			sign = -sign
		}
	}
	return x, sign
}

// trig wraps a float8 function of one angle: NaN gives NaN, infinity is
// out of range.
func trig(f func(x float64) float64) EvalFunc {
	return func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		x := a[0].F
		if math.IsNaN(x) {
			return types.DFloat(x), nil
		}
		if math.IsInf(x, 0) {
			return types.NullDatum, errInputRange()
		}
		return types.DFloat(f(x)), nil // tand(90) is Infinity
	}
}

// inverse wraps an inverse function defined on [lo, hi].
func inverse(lo, hi float64, f func(x float64) float64) EvalFunc {
	return func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		x := a[0].F
		if math.IsNaN(x) {
			return types.DFloat(x), nil
		}
		if x < lo || x > hi {
			return types.NullDatum, errInputRange()
		}
		return types.DFloat(f(x)), nil
	}
}

func addTrig() {
	plain := func(f func(float64) float64) func(float64) (float64, error) {
		return func(x float64) (float64, error) { return f(x), nil }
	}
	addFn("sin", args(tF8), tF8, trig(math.Sin))
	addFn("cos", args(tF8), tF8, trig(math.Cos))
	addFn("tan", args(tF8), tF8, trig(math.Tan))
	addFn("cot", args(tF8), tF8, trig(func(x float64) float64 { return 1 / math.Tan(x) }))
	addFn("asin", args(tF8), tF8, inverse(-1, 1, math.Asin))
	addFn("acos", args(tF8), tF8, inverse(-1, 1, math.Acos))
	addFn("atan", args(tF8), tF8, floatFn(plain(math.Atan)))
	addFn("atan2", args(tF8, tF8), tF8, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return types.DFloat(math.Atan2(a[0].F, a[1].F)), nil
	})
	addFn("sind", args(tF8), tF8, trig(func(x float64) float64 {
		x, sign := degreeArg(x, 's')
		return sign * sindQ1(x)
	}))
	addFn("cosd", args(tF8), tF8, trig(func(x float64) float64 {
		x, sign := degreeArg(x, 'c')
		return sign * cosdQ1(x)
	}))
	addFn("tand", args(tF8), tF8, trig(func(x float64) float64 {
		x, sign := degreeArg(x, 't')
		return sign*(sindQ1(x)/cosdQ1(x)/tan45) + 0 // no minus zero, as PostgreSQL
	}))
	addFn("cotd", args(tF8), tF8, trig(func(x float64) float64 {
		x, sign := degreeArg(x, 't')
		return sign*(cosdQ1(x)/sindQ1(x)/cot45) + 0
	}))
	addFn("asind", args(tF8), tF8, inverse(-1, 1, func(x float64) float64 {
		if x >= 0 {
			return asindQ1(x)
		}
		return -asindQ1(-x)
	}))
	addFn("acosd", args(tF8), tF8, inverse(-1, 1, func(x float64) float64 {
		if x >= 0 {
			return acosdQ1(x)
		}
		return 90 + asindQ1(-x)
	}))
	addFn("atand", args(tF8), tF8, floatFn(plain(func(x float64) float64 { return math.Atan(x) / atan1 * 45 })))
	addFn("atan2d", args(tF8, tF8), tF8, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return types.DFloat(math.Atan2(a[0].F, a[1].F) / atan1 * 45), nil
	})
	addFn("sinh", args(tF8), tF8, floatFn(plain(math.Sinh)))
	addFn("cosh", args(tF8), tF8, floatFn(plain(math.Cosh)))
	addFn("tanh", args(tF8), tF8, floatFn(plain(math.Tanh)))
	addFn("asinh", args(tF8), tF8, floatFn(plain(math.Asinh)))
	addFn("acosh", args(tF8), tF8, inverse(1, math.Inf(1), math.Acosh))
	addFn("atanh", args(tF8), tF8, inverse(-1, 1, math.Atanh))
	addFn("degrees", args(tF8), tF8, floatFn(plain(func(x float64) float64 { return x / radiansPerDegree })))
	addFn("radians", args(tF8), tF8, floatFn(plain(func(x float64) float64 { return x * radiansPerDegree })))
	addFn("cbrt", args(tF8), tF8, floatFn(plain(math.Cbrt)))
}

func errWidthBucket(msg string) error { return pgerror.New("2201G", "%s", msg) }

// widthBucket is width_bucket on float8: the 1-based bucket of count equal
// buckets between lo and hi that x falls in, 0 and count+1 outside.
func widthBucket(x, lo, hi float64, count int64) (types.Datum, error) {
	switch {
	case count <= 0:
		return types.NullDatum, errWidthBucket("count must be greater than zero")
	case math.IsNaN(x) || math.IsNaN(lo) || math.IsNaN(hi):
		return types.NullDatum, errWidthBucket("operand, lower bound, and upper bound cannot be NaN")
	case math.IsInf(lo, 0) || math.IsInf(hi, 0):
		return types.NullDatum, errWidthBucket("lower and upper bounds must be finite")
	case lo == hi:
		return types.NullDatum, errWidthBucket("lower bound cannot equal upper bound")
	}
	if lo > hi { // a descending histogram: mirror it
		x, lo, hi = -x, -lo, -hi
		if x < lo {
			return types.DInt(0), nil
		}
		if x >= hi {
			return bucketPastEnd(count)
		}
	} else if x < lo {
		return types.DInt(0), nil
	} else if x >= hi {
		return bucketPastEnd(count)
	}
	var r float64
	if span := hi - lo; !math.IsInf(span, 0) {
		r = float64(count) * ((x - lo) / span)
	} else {
		r = float64(count) * ((x/2 - lo/2) / (hi/2 - lo/2))
	}
	b := min(int64(r), count-1)
	return types.DInt(b + 1), nil
}

func bucketPastEnd(count int64) (types.Datum, error) {
	if count == math.MaxInt32 {
		return types.NullDatum, intRangeErr(tI4)
	}
	return types.DInt(count + 1), nil
}

// widthBucketNum is width_bucket on numeric, exactly.
func widthBucketNum(x, lo, hi *apd.Decimal, count int64) (types.Datum, error) {
	switch {
	case count <= 0:
		return types.NullDatum, errWidthBucket("count must be greater than zero")
	case isNaN(x) || isNaN(lo) || isNaN(hi):
		return types.NullDatum, errWidthBucket("operand, lower bound, and upper bound cannot be NaN")
	case isInf(lo) || isInf(hi):
		return types.NullDatum, errWidthBucket("lower and upper bounds must be finite")
	case lo.Cmp(hi) == 0:
		return types.NullDatum, errWidthBucket("lower bound cannot equal upper bound")
	}
	desc := lo.Cmp(hi) > 0
	below, above := x.Cmp(lo) < 0, x.Cmp(hi) >= 0
	if desc {
		below, above = x.Cmp(lo) > 0, x.Cmp(hi) <= 0
	}
	if below {
		return types.DInt(0), nil
	}
	if above {
		return bucketPastEnd(count)
	}
	// floor(count * (x - lo) / (hi - lo)) + 1, both differences of one sign.
	num, den := new(apd.Decimal), new(apd.Decimal)
	c := apd.BaseContext.WithPrecision(2000)
	_, _ = c.Sub(num, x, lo)
	_, _ = c.Mul(num, num, apd.New(count, 0))
	_, _ = c.Sub(den, hi, lo)
	q := new(apd.Decimal)
	_, _ = c.QuoInteger(q, num, den)
	b, _ := q.Int64()
	return types.DInt(min(b, count-1) + 1), nil
}

// minScale is the fewest fraction digits that hold d exactly.
func minScale(d *apd.Decimal) int64 {
	if d.Exponent >= 0 || d.IsZero() {
		return 0
	}
	r := new(apd.Decimal)
	r.Reduce(d)
	return max(-int64(r.Exponent), 0)
}

func addMathFuncs() {
	for _, t := range []types.T{tI4, tI8} {
		addFn("gcd", args(t, t), t, func(_ *EvalContext, a []types.Datum) (types.Datum, error) { return gcdInt(a[0].I, a[1].I, t) })
		addFn("lcm", args(t, t), t, func(_ *EvalContext, a []types.Datum) (types.Datum, error) { return lcmInt(a[0].I, a[1].I, t) })
	}
	for _, lcm := range []bool{false, true} {
		addFn(map[bool]string{false: "gcd", true: "lcm"}[lcm], args(tNum, tNum), tNum, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
			r, err := numGCD(a[0].D, a[1].D, lcm)
			return types.DNumeric(r), err
		})
	}
	addFn("factorial", args(tI8), tNum, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		r, err := factorial(a[0].I)
		return types.DNumeric(r), err
	})
	addFn("width_bucket", args(tF8, tF8, tF8, tI4), tI4, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return widthBucket(a[0].F, a[1].F, a[2].F, a[3].I)
	})
	addFn("width_bucket", args(tNum, tNum, tNum, tI4), tI4, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return widthBucketNum(a[0].D, a[1].D, a[2].D, a[3].I)
	})
	addFn("scale", args(tNum), tI4, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		if isNaN(a[0].D) || isInf(a[0].D) {
			return types.NullDatum, nil
		}
		return types.DInt(max(-int64(a[0].D.Exponent), 0)), nil
	})
	addFn("min_scale", args(tNum), tI4, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		if isNaN(a[0].D) || isInf(a[0].D) {
			return types.NullDatum, nil
		}
		return types.DInt(minScale(a[0].D)), nil
	})
	addFn("trim_scale", args(tNum), tNum, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		if isNaN(a[0].D) || isInf(a[0].D) {
			return a[0], nil
		}
		return types.DNumeric(types.RoundNumeric(a[0].D, int(minScale(a[0].D)))), nil
	})
}

func init() {
	addBitOps()
	addTrig()
	addMathFuncs()
}
