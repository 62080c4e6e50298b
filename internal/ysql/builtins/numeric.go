package builtins

import (
	"math"
	"strings"

	"github.com/cockroachdb/apd/v3"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// numeric arithmetic with PostgreSQL's result scales.

const (
	minSigDigits    = 16   // NUMERIC_MIN_SIG_DIGITS
	maxDisplayScale = 1000 // NUMERIC_MAX_DISPLAY_SCALE
)

var exact = apd.BaseContext

func errDivZero() *pgerror.Error { return pgerror.New(pgerror.CodeDivisionByZero, "division by zero") }

func isNaN(d *apd.Decimal) bool { return d.Form == apd.NaN || d.Form == apd.NaNSignaling }
func isInf(d *apd.Decimal) bool { return d.Form == apd.Infinite }

func numAdd(a, b *apd.Decimal) (*apd.Decimal, error) {
	if isNaN(a) || isNaN(b) {
		return types.NumericNaN(), nil
	}
	if isInf(a) || isInf(b) {
		if isInf(a) && isInf(b) && a.Negative != b.Negative {
			return types.NumericNaN(), nil
		}
		if isInf(a) {
			return types.NumericInf(a.Negative), nil
		}
		return types.NumericInf(b.Negative), nil
	}
	r := new(apd.Decimal)
	if _, err := exact.Add(r, a, b); err != nil {
		return nil, pgerror.New(pgerror.CodeNumericValueOutOfRange, "value overflows numeric format")
	}
	return norm(r), nil
}

func numNeg(a *apd.Decimal) *apd.Decimal {
	if isNaN(a) {
		return a
	}
	r := new(apd.Decimal).Neg(a)
	return norm(r)
}

func numSub(a, b *apd.Decimal) (*apd.Decimal, error) { return numAdd(a, numNeg(b)) }

func numMul(a, b *apd.Decimal) (*apd.Decimal, error) {
	if isNaN(a) || isNaN(b) {
		return types.NumericNaN(), nil
	}
	if isInf(a) || isInf(b) {
		if a.IsZero() || b.IsZero() {
			return types.NumericNaN(), nil
		}
		return types.NumericInf(a.Negative != b.Negative), nil
	}
	r := new(apd.Decimal)
	if _, err := exact.Mul(r, a, b); err != nil {
		return nil, pgerror.New(pgerror.CodeNumericValueOutOfRange, "value overflows numeric format")
	}
	return norm(r), nil
}

func norm(d *apd.Decimal) *apd.Decimal {
	if d.Form == apd.Finite && d.Coeff.Sign() == 0 {
		d.Negative = false
	}
	if d.Form == apd.Finite && d.Exponent > 0 {
		return types.RoundNumeric(d, 0)
	}
	return d
}

// nbaseWeight returns the weight (power of 10000) and value of the first
// non-zero base-10000 digit of d, as PostgreSQL's NumericVar holds it.
func nbaseWeight(d *apd.Decimal) (weight, first int) {
	if d.Form != apd.Finite || d.Coeff.Sign() == 0 {
		return 0, 0
	}
	digits := d.Coeff.Text(10)
	p := len(digits) - 1 + int(d.Exponent) // exponent of the leading digit
	w := p / 4
	if p < 0 && p%4 != 0 {
		w--
	}
	n := p - 4*w + 1 // digits of the leading group
	lead := digits
	if len(lead) < n {
		lead += strings.Repeat("0", n-len(lead))
	}
	for _, c := range lead[:n] {
		first = first*10 + int(c-'0')
	}
	return w, first
}

// divScale is PostgreSQL's select_div_scale.
func divScale(a, b *apd.Decimal) int {
	w1, f1 := nbaseWeight(a)
	w2, f2 := nbaseWeight(b)
	qweight := w1 - w2
	if f1 <= f2 {
		qweight--
	}
	rscale := minSigDigits - qweight*4
	rscale = max(rscale, types.NumericScale(a), types.NumericScale(b), 0)
	return min(rscale, maxDisplayScale)
}

// divRound returns a/b rounded half away from zero to rscale digits.
func divRound(a, b *apd.Decimal, rscale int, trunc bool) *apd.Decimal {
	k := int(a.Exponent) - int(b.Exponent) + rscale
	num := new(apd.BigInt).Set(&a.Coeff)
	den := new(apd.BigInt).Set(&b.Coeff)
	ten := apd.NewBigInt(10)
	if k >= 0 {
		num.Mul(num, new(apd.BigInt).Exp(ten, apd.NewBigInt(int64(k)), nil))
	} else {
		den.Mul(den, new(apd.BigInt).Exp(ten, apd.NewBigInt(int64(-k)), nil))
	}
	q, rem := new(apd.BigInt), new(apd.BigInt)
	q.QuoRem(num, den, rem)
	if !trunc {
		rem.Mul(rem, apd.NewBigInt(2))
		if rem.Cmp(den) >= 0 {
			q.Add(q, apd.NewBigInt(1))
		}
	}
	r := &apd.Decimal{Exponent: int32(-rscale), Negative: a.Negative != b.Negative}
	r.Coeff.Set(q)
	return norm(r)
}

func numDiv(a, b *apd.Decimal) (*apd.Decimal, error) {
	if isNaN(a) || isNaN(b) {
		return types.NumericNaN(), nil
	}
	if b.Form == apd.Finite && b.IsZero() {
		return nil, errDivZero()
	}
	if isInf(a) {
		if isInf(b) {
			return types.NumericNaN(), nil
		}
		return types.NumericInf(a.Negative != b.Negative), nil
	}
	if isInf(b) {
		return apd.New(0, 0), nil
	}
	return divRound(a, b, divScale(a, b), false), nil
}

// numDivTrunc is div(a, b): the integer quotient truncated towards zero.
func numDivTrunc(a, b *apd.Decimal) (*apd.Decimal, error) {
	if b.Form == apd.Finite && b.IsZero() {
		return nil, errDivZero()
	}
	return divRound(a, b, 0, true), nil
}

func numMod(a, b *apd.Decimal) (*apd.Decimal, error) {
	if isNaN(a) || isNaN(b) {
		return types.NumericNaN(), nil
	}
	if b.Form == apd.Finite && b.IsZero() {
		return nil, errDivZero()
	}
	if isInf(a) {
		return types.NumericNaN(), nil
	}
	if isInf(b) {
		return a, nil
	}
	q := divRound(a, b, 0, true)
	p, err := numMul(q, b)
	if err != nil {
		return nil, err
	}
	r, err := numSub(a, p)
	if err != nil {
		return nil, err
	}
	return types.RoundNumeric(r, max(types.NumericScale(a), types.NumericScale(b))), nil
}

// hp returns a context with enough precision for results rounded to
// rscale digits after the point with intDigits before it.
func hp(intDigits, rscale int) *apd.Context {
	c := apd.BaseContext.WithPrecision(uint32(max(intDigits, 1) + rscale + 10))
	c.Rounding = apd.RoundHalfEven
	return c
}

func intDigitsOf(d *apd.Decimal) int {
	if d.Form != apd.Finite || d.IsZero() {
		return 1
	}
	n := int(d.NumDigits()) + int(d.Exponent)
	return max(n, 1)
}

func numSqrt(a *apd.Decimal) (*apd.Decimal, error) {
	if isNaN(a) {
		return a, nil
	}
	if a.Sign() < 0 {
		return nil, pgerror.New("2201F", "cannot take square root of a negative number")
	}
	if isInf(a) {
		return a, nil
	}
	w, _ := nbaseWeight(a)
	sweight := (w+1)*4/2 - 1
	rscale := minSigDigits - sweight
	rscale = min(max(rscale, types.NumericScale(a), 0), maxDisplayScale)
	r := new(apd.Decimal)
	if _, err := hp(intDigitsOf(a), rscale).Sqrt(r, a); err != nil {
		return nil, err
	}
	return types.RoundNumeric(r, rscale), nil
}

// lnDWeight is PostgreSQL's estimate_ln_dweight.
func lnDWeight(a *apd.Decimal) int {
	if a.Sign() <= 0 || a.Form != apd.Finite {
		return 0
	}
	f, _ := a.Float64()
	if f >= 0.9 && f <= 1.1 {
		x := new(apd.Decimal)
		_, _ = exact.Sub(x, a, apd.New(1, 0))
		if x.IsZero() {
			return 0
		}
		return int(x.NumDigits()) + int(x.Exponent) - 1
	}
	lnv := math.Log(f)
	if math.IsInf(f, 1) || f == 0 {
		// beyond float range: ln(a) ≈ (digits + exponent) * ln 10
		lnv = float64(int(a.NumDigits())+int(a.Exponent)) * math.Ln10
	}
	return int(math.Log10(math.Abs(lnv)))
}

func numLn(a *apd.Decimal) (*apd.Decimal, error) {
	if isNaN(a) {
		return a, nil
	}
	if a.Sign() == 0 {
		return nil, pgerror.New("2201E", "cannot take logarithm of zero")
	}
	if a.Sign() < 0 {
		return nil, pgerror.New("2201E", "cannot take logarithm of a negative number")
	}
	if isInf(a) {
		return a, nil
	}
	rscale := minSigDigits - lnDWeight(a)
	rscale = min(max(rscale, types.NumericScale(a), 0), maxDisplayScale)
	r := new(apd.Decimal)
	if _, err := hp(10, rscale).Ln(r, a); err != nil {
		return nil, err
	}
	return types.RoundNumeric(r, rscale), nil
}

// numLog is log(base, x).
func numLog(base, x *apd.Decimal) (*apd.Decimal, error) {
	if isNaN(base) || isNaN(x) {
		return types.NumericNaN(), nil
	}
	for _, v := range []*apd.Decimal{base, x} {
		if v.Sign() == 0 {
			return nil, pgerror.New("2201E", "cannot take logarithm of zero")
		}
		if v.Sign() < 0 {
			return nil, pgerror.New("2201E", "cannot take logarithm of a negative number")
		}
	}
	rscale := minSigDigits - (lnDWeight(x) - lnDWeight(base))
	rscale = min(max(rscale, types.NumericScale(base), types.NumericScale(x), 0), maxDisplayScale)
	c := hp(10, rscale+10)
	lb, lx := new(apd.Decimal), new(apd.Decimal)
	if _, err := c.Ln(lb, base); err != nil {
		return nil, err
	}
	if lb.IsZero() {
		return nil, errDivZero()
	}
	if _, err := c.Ln(lx, x); err != nil {
		return nil, err
	}
	r := new(apd.Decimal)
	if _, err := c.Quo(r, lx, lb); err != nil {
		return nil, err
	}
	return types.RoundNumeric(r, rscale), nil
}

func numExp(a *apd.Decimal) (*apd.Decimal, error) {
	if isNaN(a) {
		return a, nil
	}
	if isInf(a) {
		if a.Negative {
			return apd.New(0, 0), nil
		}
		return a, nil
	}
	f, _ := a.Float64()
	val := f * 0.434294481903252
	val = math.Max(math.Min(val, 2000), -2000)
	rscale := minSigDigits - int(val)
	rscale = min(max(rscale, types.NumericScale(a), 0), maxDisplayScale)
	if val > 131072 {
		return nil, pgerror.New(pgerror.CodeNumericValueOutOfRange, "value overflows numeric format")
	}
	r := new(apd.Decimal)
	if _, err := hp(int(math.Max(val, 0))+2, rscale).Exp(r, a); err != nil {
		return nil, pgerror.New(pgerror.CodeNumericValueOutOfRange, "value overflows numeric format")
	}
	return types.RoundNumeric(r, rscale), nil
}

func numPow(base, exp *apd.Decimal) (*apd.Decimal, error) {
	if isNaN(base) || isNaN(exp) {
		if (isNaN(base) && exp.Form == apd.Finite && exp.IsZero()) || (isNaN(exp) && base.Cmp(apd.New(1, 0)) == 0) {
			return apd.New(1, 0), nil
		}
		return types.NumericNaN(), nil
	}
	if base.Form != apd.Finite || exp.Form != apd.Finite {
		return nil, pgerror.Unsupported("infinite arguments to power()")
	}
	if base.IsZero() && exp.Sign() < 0 {
		return nil, pgerror.New("2201F", "zero raised to a negative power is undefined")
	}
	ie, intErr := exp.Int64()
	frac, integ := new(apd.Decimal), new(apd.Decimal)
	exp.Modf(integ, frac)
	isInt := frac.IsZero()
	if base.Sign() < 0 && !isInt {
		return nil, pgerror.New("2201F", "a negative number raised to a non-integer power yields a complex result")
	}
	if base.IsZero() && !isInt {
		// Zero to a (positive) non-integer power: zero at
		// NUMERIC_MIN_SIG_DIGITS as PostgreSQL's power_var, not log(0)
		// (which overflowed).
		return types.RoundNumeric(apd.New(0, 0), minSigDigits), nil
	}
	var rscale int
	if isInt && intErr == nil && ie >= math.MinInt32 && ie <= math.MaxInt32 {
		rscale = min(max(minSigDigits, types.NumericScale(base), 0), maxDisplayScale)
	} else {
		bf, _ := new(apd.Decimal).Abs(base).Float64()
		ef, _ := exp.Float64()
		val := ef * math.Log(bf) * 0.434294481903252
		rscale = minSigDigits - int(val)
		rscale = min(max(rscale, types.NumericScale(base), types.NumericScale(exp), 0), maxDisplayScale)
	}
	if exp.IsZero() {
		// x ^ 0 is 1, 0 ^ 0 too (the decimal library refuses 0 ^ 0).
		return types.RoundNumeric(apd.New(1, 0), rscale), nil
	}
	bf, _ := new(apd.Decimal).Abs(base).Float64()
	ef, _ := exp.Float64()
	mag := ef * math.Log10(math.Max(bf, 1e-300))
	if mag > 131072 {
		return nil, pgerror.New(pgerror.CodeNumericValueOutOfRange, "value overflows numeric format")
	}
	r := new(apd.Decimal)
	if _, err := hp(int(math.Max(mag, 0))+2, rscale+int(math.Max(-mag, 0))).Pow(r, base, exp); err != nil {
		return nil, pgerror.New(pgerror.CodeNumericValueOutOfRange, "value overflows numeric format")
	}
	return types.RoundNumeric(r, rscale), nil
}

func numAbs(a *apd.Decimal) *apd.Decimal {
	if isNaN(a) {
		return a
	}
	return new(apd.Decimal).Abs(a)
}

func numCeil(a *apd.Decimal, floor bool) *apd.Decimal {
	if a.Form != apd.Finite {
		return a
	}
	t := types.TruncNumeric(a, 0)
	if t.Cmp(a) != 0 {
		if floor && a.Negative {
			t, _ = numSub(t, apd.New(1, 0))
		} else if !floor && !a.Negative {
			t, _ = numAdd(t, apd.New(1, 0))
		}
	}
	return norm(types.RoundNumeric(t, 0))
}

func numSign(a *apd.Decimal) *apd.Decimal {
	if isNaN(a) {
		return a
	}
	return apd.New(int64(a.Sign()), 0)
}
