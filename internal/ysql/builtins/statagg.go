package builtins

import (
	"math"

	"github.com/cockroachdb/apd/v3"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Statistical aggregates with PostgreSQL's algorithms, so that the digits
// printed are its own: over integers and numerics exact sums of x and x²
// and numeric_stddev_internal's scales; over floats the Youngs-Cramer
// running sums of float8_accum and float8_regr_accum, merged as
// float8_combine and float8_regr_combine merge parallel workers' states.

// varKind says which of variance/stddev, sample/population a state gives.
type varKind struct{ sample, stddev bool }

var varKinds = map[string]varKind{
	"variance": {sample: true}, "var_samp": {sample: true}, "var_pop": {},
	"stddev": {sample: true, stddev: true}, "stddev_samp": {sample: true, stddev: true}, "stddev_pop": {stddev: true},
}

// numVarState sums a numeric or integer input exactly; NaN and infinities
// are counted apart, as do_numeric_accum does.
type numVarState struct {
	kind        varKind
	isInt       bool
	n, nan, inf int64
	sumX, sumX2 *apd.Decimal // nil: no finite value yet
}

func (s *numVarState) Add(_ *EvalContext, a []types.Datum) error {
	if a[0].Null {
		return nil
	}
	x := numArg(a[0], s.isInt)
	switch {
	case isNaN(x):
		s.nan++
		return nil
	case isInf(x):
		s.inf++
		return nil
	}
	x2, err := numMul(x, x)
	if err != nil {
		return err
	}
	return s.addSums(1, x, x2)
}

// addSums adds n values whose sums are x and x2.
func (s *numVarState) addSums(n int64, x, x2 *apd.Decimal) error {
	if s.sumX == nil {
		s.sumX, s.sumX2 = x, x2
	} else {
		var err error
		if s.sumX, err = numAdd(s.sumX, x); err != nil {
			return err
		}
		if s.sumX2, err = numAdd(s.sumX2, x2); err != nil {
			return err
		}
	}
	s.n += n
	return nil
}

func (s *numVarState) Merge(o AggState) error {
	x := o.(*numVarState)
	s.nan += x.nan
	s.inf += x.inf
	if x.n == 0 {
		return nil
	}
	return s.addSums(x.n, x.sumX, x.sumX2)
}

// Result is numeric_stddev_internal: (N·Σx² − (Σx)²) / (N·(N−1)) or
// / N², divided at select_div_scale and its square root taken at the same
// scale; a numerator at or below zero (equal values) gives a plain 0.
func (s *numVarState) Result() (types.Datum, error) {
	total := s.n + s.nan + s.inf
	if total == 0 || (s.kind.sample && total <= 1) {
		return types.NullDatum, nil
	}
	if s.nan+s.inf > 0 {
		return types.DNumeric(types.NumericNaN()), nil
	}
	rscale := 2 * types.NumericScale(s.sumX)
	n := apd.New(s.n, 0)
	sq, err := numMul(s.sumX, s.sumX)
	if err != nil {
		return types.NullDatum, err
	}
	nx2, err := numMul(n, s.sumX2)
	if err != nil {
		return types.NullDatum, err
	}
	num, err := numSub(nx2, sq)
	if err != nil {
		return types.NullDatum, err
	}
	if num.Sign() <= 0 {
		return types.DNumeric(apd.New(0, 0)), nil
	}
	num = types.RoundNumeric(num, rscale)
	den := apd.New(s.n*s.n, 0)
	if s.kind.sample {
		den = apd.New(s.n*(s.n-1), 0)
	}
	rs := divScale(num, den)
	v := divRound(num, den, rs, false)
	if s.kind.stddev {
		if v, err = sqrtScale(v, rs); err != nil {
			return types.NullDatum, err
		}
	}
	return types.DNumeric(v), nil
}

// sqrtScale is sqrt_var: the square root of a >= 0 rounded to rscale digits.
func sqrtScale(a *apd.Decimal, rscale int) (*apd.Decimal, error) {
	r := new(apd.Decimal)
	if _, err := hp(intDigitsOf(a), rscale).Sqrt(r, a); err != nil {
		return nil, err
	}
	return types.RoundNumeric(r, rscale), nil
}

func (s *numVarState) MarshalBinary() ([]byte, error) {
	b := putField(putField(putField(nil, i64(s.n)), i64(s.nan)), i64(s.inf))
	if s.n == 0 {
		return b, nil
	}
	return putField(putField(b, decBytes(s.sumX)), decBytes(s.sumX2)), nil
}

func (s *numVarState) unmarshal(b []byte) error {
	f, err := getFields(b, 3)
	if err != nil {
		return err
	}
	s.n, s.nan, s.inf = getI64(f[0]), getI64(f[1]), getI64(f[2])
	if s.n == 0 {
		return nil
	}
	f, err = getFields(b, 5)
	if err != nil {
		return err
	}
	if s.sumX, err = getDec(f[3]); err != nil {
		return err
	}
	s.sumX2, err = getDec(f[4])
	return err
}

func errFloatOverflow() error {
	return pgerror.New(pgerror.CodeNumericValueOutOfRange, "value out of range: overflow")
}

// floatVarState is float8_accum's (N, Σx, Sxx), Sxx the sum of squared
// deviations from the running mean.
type floatVarState struct {
	kind       varKind
	n, sx, sxx float64
}

func (s *floatVarState) Add(_ *EvalContext, a []types.Datum) error {
	if a[0].Null {
		return nil
	}
	x := a[0].F
	oldN, oldSx := s.n, s.sx
	s.n++
	s.sx += x
	if oldN == 0 {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			s.sxx = math.NaN()
		}
		return nil
	}
	tmp := x*s.n - s.sx
	s.sxx += tmp * tmp / (s.n * oldN)
	if math.IsInf(s.sx, 0) || math.IsInf(s.sxx, 0) {
		if !math.IsInf(oldSx, 0) && !math.IsInf(x, 0) {
			return errFloatOverflow()
		}
		s.sxx = math.NaN()
	}
	return nil
}

// combineSxx is float8_combine's merge of two sums of squared deviations.
func combineSxx(n1, n2, s1, s2, sxx1, sxx2 float64) (float64, error) {
	d := s1/n1 - s2/n2
	r := sxx1 + sxx2 + n1*n2*d*d/(n1+n2)
	if math.IsInf(r, 0) && !math.IsInf(sxx1, 0) && !math.IsInf(sxx2, 0) {
		return 0, errFloatOverflow()
	}
	return r, nil
}

// floatPlus is float8_pl: an infinite sum of finite values overflows.
func floatPlus(a, b float64) (float64, error) {
	r := a + b
	if math.IsInf(r, 0) && !math.IsInf(a, 0) && !math.IsInf(b, 0) {
		return 0, errFloatOverflow()
	}
	return r, nil
}

func (s *floatVarState) Merge(o AggState) error {
	x := o.(*floatVarState)
	switch {
	case x.n == 0:
		return nil
	case s.n == 0:
		s.n, s.sx, s.sxx = x.n, x.sx, x.sxx
		return nil
	}
	sxx, err := combineSxx(s.n, x.n, s.sx, x.sx, s.sxx, x.sxx)
	if err != nil {
		return err
	}
	sx, err := floatPlus(s.sx, x.sx)
	if err != nil {
		return err
	}
	s.n, s.sx, s.sxx = s.n+x.n, sx, sxx
	return nil
}

func (s *floatVarState) Result() (types.Datum, error) {
	den := s.n
	if s.kind.sample {
		den = s.n - 1
	}
	if den <= 0 {
		return types.NullDatum, nil
	}
	v := s.sxx / den
	if s.kind.stddev {
		v = math.Sqrt(v)
	}
	return types.DFloat(v), nil
}

func putFloats(fs ...float64) []byte {
	var b []byte
	for _, f := range fs {
		b = putField(b, i64(int64(math.Float64bits(f))))
	}
	return b
}

func getFloats(b []byte, out ...*float64) error {
	f, err := getFields(b, len(out))
	if err != nil {
		return err
	}
	for i, p := range out {
		*p = math.Float64frombits(uint64(getI64(f[i])))
	}
	return nil
}

func (s *floatVarState) MarshalBinary() ([]byte, error) { return putFloats(s.n, s.sx, s.sxx), nil }
func (s *floatVarState) unmarshal(b []byte) error       { return getFloats(b, &s.n, &s.sx, &s.sxx) }

// regrState is float8_regr_accum's (N, Σx, Sxx, Σy, Syy, Sxy) over the
// rows where neither argument is NULL; the first argument is Y, the
// second X, as in PostgreSQL.
type regrState struct {
	final                    func(s *regrState) types.Datum
	n, sx, sxx, sy, syy, sxy float64
}

func (s *regrState) Add(_ *EvalContext, a []types.Datum) error {
	if a[0].Null || a[1].Null {
		return nil
	}
	y, x := a[0].F, a[1].F
	oldN, oldSx, oldSy := s.n, s.sx, s.sy
	s.n++
	s.sx += x
	s.sy += y
	if oldN == 0 {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			s.sxx, s.sxy = math.NaN(), math.NaN()
		}
		if math.IsNaN(y) || math.IsInf(y, 0) {
			s.syy, s.sxy = math.NaN(), math.NaN()
		}
		return nil
	}
	tx, ty := x*s.n-s.sx, y*s.n-s.sy
	scale := 1 / (s.n * oldN)
	s.sxx += tx * tx * scale
	s.syy += ty * ty * scale
	s.sxy += tx * ty * scale
	return s.checkInf(oldSx, oldSy, x, y)
}

// checkInf is float8_regr_accum's overflow check: infinite sums of finite
// inputs overflow; sums made infinite by infinite inputs become NaN.
func (s *regrState) checkInf(oldSx, oldSy, x, y float64) error {
	inf := func(f float64) bool { return math.IsInf(f, 0) }
	if !inf(s.sx) && !inf(s.sxx) && !inf(s.sy) && !inf(s.syy) && !inf(s.sxy) {
		return nil
	}
	finX, finY := !inf(oldSx) && !inf(x), !inf(oldSy) && !inf(y)
	if ((inf(s.sx) || inf(s.sxx)) && finX) || ((inf(s.sy) || inf(s.syy)) && finY) || (inf(s.sxy) && finX && finY) {
		return errFloatOverflow()
	}
	for _, p := range []*float64{&s.sxx, &s.syy, &s.sxy} {
		if inf(*p) {
			*p = math.NaN()
		}
	}
	return nil
}

func (s *regrState) Merge(o AggState) error {
	x := o.(*regrState)
	switch {
	case x.n == 0:
		return nil
	case s.n == 0:
		*s = regrState{final: s.final, n: x.n, sx: x.sx, sxx: x.sxx, sy: x.sy, syy: x.syy, sxy: x.sxy}
		return nil
	}
	n1, n2, n := s.n, x.n, s.n+x.n
	dx, dy := s.sx/n1-x.sx/n2, s.sy/n1-x.sy/n2
	sxx, err := combineSxx(n1, n2, s.sx, x.sx, s.sxx, x.sxx)
	if err != nil {
		return err
	}
	syy, err := combineSxx(n1, n2, s.sy, x.sy, s.syy, x.syy)
	if err != nil {
		return err
	}
	sxy := s.sxy + x.sxy + n1*n2*dx*dy/n
	if math.IsInf(sxy, 0) && !math.IsInf(s.sxy, 0) && !math.IsInf(x.sxy, 0) {
		return errFloatOverflow()
	}
	sx, err := floatPlus(s.sx, x.sx)
	if err != nil {
		return err
	}
	sy, err := floatPlus(s.sy, x.sy)
	if err != nil {
		return err
	}
	s.n, s.sx, s.sxx, s.sy, s.syy, s.sxy = n, sx, sxx, sy, syy, sxy
	return nil
}

func (s *regrState) Result() (types.Datum, error) { return s.final(s), nil }

func (s *regrState) MarshalBinary() ([]byte, error) {
	return putFloats(s.n, s.sx, s.sxx, s.sy, s.syy, s.sxy), nil
}
func (s *regrState) unmarshal(b []byte) error {
	return getFloats(b, &s.n, &s.sx, &s.sxx, &s.sy, &s.syy, &s.sxy)
}

// regrFinal returns f's value, NULL over fewer than min rows.
func regrFinal(min float64, f func(s *regrState) types.Datum) func(s *regrState) types.Datum {
	return func(s *regrState) types.Datum {
		if s.n < min {
			return types.NullDatum
		}
		return f(s)
	}
}

func fl(f float64) types.Datum { return types.DFloat(f) }

// regrFinals are the final functions of PostgreSQL's float8_regr_* family.
var regrFinals = map[string]func(s *regrState) types.Datum{
	"regr_sxx":   regrFinal(1, func(s *regrState) types.Datum { return fl(s.sxx) }),
	"regr_syy":   regrFinal(1, func(s *regrState) types.Datum { return fl(s.syy) }),
	"regr_sxy":   regrFinal(1, func(s *regrState) types.Datum { return fl(s.sxy) }),
	"regr_avgx":  regrFinal(1, func(s *regrState) types.Datum { return fl(s.sx / s.n) }),
	"regr_avgy":  regrFinal(1, func(s *regrState) types.Datum { return fl(s.sy / s.n) }),
	"covar_pop":  regrFinal(1, func(s *regrState) types.Datum { return fl(s.sxy / s.n) }),
	"covar_samp": regrFinal(2, func(s *regrState) types.Datum { return fl(s.sxy / (s.n - 1)) }),
	"corr": regrFinal(1, func(s *regrState) types.Datum {
		if s.sxx == 0 || s.syy == 0 { // a horizontal or vertical line
			return types.NullDatum
		}
		return fl(s.sxy / math.Sqrt(s.sxx*s.syy))
	}),
	"regr_r2": regrFinal(1, func(s *regrState) types.Datum {
		switch {
		case s.sxx == 0:
			return types.NullDatum
		case s.syy == 0:
			return fl(1)
		}
		return fl(s.sxy * s.sxy / (s.sxx * s.syy))
	}),
	"regr_slope": regrFinal(1, func(s *regrState) types.Datum {
		if s.sxx == 0 {
			return types.NullDatum
		}
		return fl(s.sxy / s.sxx)
	}),
	"regr_intercept": regrFinal(1, func(s *regrState) types.Datum {
		if s.sxx == 0 {
			return types.NullDatum
		}
		return fl((s.sy - s.sx*s.sxy/s.sxx) / s.n)
	}),
}

func addStatAggs() {
	for name, k := range varKinds {
		k := k
		for _, t := range []types.T{tI2, tI4, tI8} {
			addAggArgs(name, []types.T{t}, tNum, func() AggState { return &numVarState{kind: k, isInt: true} })
		}
		addAggArgs(name, []types.T{tNum}, tNum, func() AggState { return &numVarState{kind: k} })
		for _, t := range []types.T{tF4, tF8} {
			addAggArgs(name, []types.T{t}, tF8, func() AggState { return &floatVarState{kind: k} })
		}
	}
	for name, f := range regrFinals {
		f := f
		addAggArgs(name, []types.T{tF8, tF8}, tF8, func() AggState { return &regrState{final: f} })
	}
	// regr_count only counts (int8inc_float8_float8): no sums to overflow.
	addAggArgs("regr_count", []types.T{tF8, tF8}, tI8, func() AggState { return &pairCountState{} })
}

// pairCountState counts the rows where neither argument is NULL.
type pairCountState struct{ countState }

func (s *pairCountState) Add(_ *EvalContext, a []types.Datum) error {
	if !a[0].Null && !a[1].Null {
		s.n++
	}
	return nil
}
func (s *pairCountState) Merge(o AggState) error { s.n += o.(*pairCountState).n; return nil }
