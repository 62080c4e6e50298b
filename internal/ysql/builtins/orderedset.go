package builtins

import (
	"fmt"
	"math"
	"strings"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Ordered-set aggregates (agg(direct) WITHIN GROUP (ORDER BY v)): the
// executor collects a group's non-NULL values of v, sorted as the ORDER
// BY says, and Final computes the result from them and the direct
// arguments (evaluated once per group, as PostgreSQL does).

// OrderedSetAgg is an ordered-set aggregate resolved for its argument
// types.
type OrderedSetAgg struct {
	Name   string
	Direct []types.T // the direct arguments are cast to these
	Sort   types.T   // the ORDER BY value is cast to this
	Result types.T
	Final  func(direct []types.Datum, vals []types.Datum) (types.Datum, error)
}

var orderedSets = map[string]func(direct []types.T, sort types.T) *OrderedSetAgg{
	"percentile_cont": percentileCont,
	"percentile_disc": percentileDisc,
	"mode":            modeAgg,
}

// IsOrderedSetAggregate reports whether name is an ordered-set aggregate.
func IsOrderedSetAggregate(name string) bool {
	_, ok := orderedSets[strings.TrimPrefix(strings.ToLower(name), "pg_catalog.")]
	return ok
}

// LookupOrderedSet resolves name(direct) WITHIN GROUP (ORDER BY sort...).
func LookupOrderedSet(name string, direct, sort []types.T) (*OrderedSetAgg, error) {
	name = strings.TrimPrefix(strings.ToLower(name), "pg_catalog.")
	if mk := orderedSets[name]; mk != nil && len(sort) == 1 {
		if a := mk(direct, sort[0]); a != nil {
			return a, nil
		}
	}
	return nil, noAgg(name, append(append([]types.T(nil), direct...), sort...))
}

var tF8Array = types.ArrayOf(tF8)

// fractionArg resolves a percentile's direct argument: a fraction or an
// array of them.
func fractionArg(direct []types.T) (types.T, bool) {
	if len(direct) != 1 {
		return types.T{}, false
	}
	if direct[0].OID == types.OIDUnknown { // a literal is read as one fraction
		return tF8, true
	}
	switch selectCandidate([][]types.T{{tF8}, {tF8Array}}, direct) {
	case 0:
		return tF8, true
	case 1:
		return tF8Array, true
	}
	return types.T{}, false
}

func percentileCont(direct []types.T, sort types.T) *OrderedSetAgg {
	frac, ok := fractionArg(direct)
	if !ok {
		return nil
	}
	var lerp func(lo, hi types.Datum, p float64) (types.Datum, error)
	switch {
	case sort.OID == types.OIDInterval:
		lerp = lerpInterval
	case types.CanCast(sort, tF8, types.CastImplicit):
		sort, lerp = tF8, lerpFloat
	default:
		return nil
	}
	pick := func(p float64, vals []types.Datum) (types.Datum, error) {
		pos := p * float64(len(vals)-1)
		lo, hi := int(math.Floor(pos)), int(math.Ceil(pos))
		if lo == hi {
			return vals[lo], nil
		}
		return lerp(vals[lo], vals[hi], pos-float64(lo))
	}
	return percentileAgg("percentile_cont", frac, sort, pick)
}

func lerpFloat(lo, hi types.Datum, p float64) (types.Datum, error) {
	return types.DFloat(lo.F + (hi.F-lo.F)*p), nil
}

// lerpInterval is interval_lerp: lo + (hi - lo) * p.
func lerpInterval(lo, hi types.Datum, p float64) (types.Datum, error) {
	neg := types.Interval{Months: -lo.Iv.Months, Days: -lo.Iv.Days, Micros: -lo.Iv.Micros}
	diff, err := ivAdd(hi.Iv, neg)
	if err != nil {
		return types.NullDatum, err
	}
	if diff, err = ivMul(diff, p); err != nil {
		return types.NullDatum, err
	}
	r, err := ivAdd(lo.Iv, diff)
	return types.DInterval(r), err
}

func percentileDisc(direct []types.T, sort types.T) *OrderedSetAgg {
	frac, ok := fractionArg(direct)
	if !ok {
		return nil
	}
	pick := func(p float64, vals []types.Datum) (types.Datum, error) {
		k := int(math.Ceil(p * float64(len(vals))))
		return vals[max(k, 1)-1], nil
	}
	return percentileAgg("percentile_disc", frac, sort, pick)
}

// percentileAgg is a percentile aggregate of one fraction, or of an array
// of them giving an array of results (NULL for a NULL fraction).
func percentileAgg(name string, frac, sort types.T, pick func(p float64, vals []types.Datum) (types.Datum, error)) *OrderedSetAgg {
	a := &OrderedSetAgg{Name: name, Direct: []types.T{frac}, Sort: sort, Result: sort}
	if frac == tF8 {
		a.Final = func(direct, vals []types.Datum) (types.Datum, error) {
			if direct[0].Null {
				return types.NullDatum, nil
			}
			if err := checkFraction(direct[0].F); err != nil || len(vals) == 0 {
				return types.NullDatum, err
			}
			return pick(direct[0].F, vals)
		}
		return a
	}
	a.Result = types.ArrayOf(sort)
	a.Final = func(direct, vals []types.Datum) (types.Datum, error) {
		if len(vals) == 0 || direct[0].Null {
			return types.NullDatum, nil
		}
		out := make([]types.Datum, len(direct[0].A))
		for i, p := range direct[0].A {
			out[i] = types.NullDatum
			if p.Null {
				continue
			}
			if err := checkFraction(p.F); err != nil {
				return types.NullDatum, err
			}
			v, err := pick(p.F, vals)
			if err != nil {
				return types.NullDatum, err
			}
			out[i] = v
		}
		return types.DArray(out), nil
	}
	return a
}

func checkFraction(p float64) error {
	if p < 0 || p > 1 || math.IsNaN(p) {
		return pgerror.New(pgerror.CodeNumericValueOutOfRange, "percentile value %s is not between 0 and 1", fmtG(p))
	}
	return nil
}

// fmtG prints a float as C's %g does (PostgreSQL's message format).
func fmtG(f float64) string {
	if math.IsNaN(f) {
		return "NaN"
	}
	return fmt.Sprintf("%.6g", f)
}

// modeAgg is mode(): the most frequent value, the first in the sort
// order among equally frequent ones.
func modeAgg(direct []types.T, sort types.T) *OrderedSetAgg {
	if len(direct) != 0 {
		return nil
	}
	return &OrderedSetAgg{Name: "mode", Sort: sort, Result: sort,
		Final: func(_, vals []types.Datum) (types.Datum, error) {
			best, bestN := types.NullDatum, 0
			for i := 0; i < len(vals); {
				j := i + 1
				for j < len(vals) && types.Compare(vals[i], vals[j], sort) == 0 {
					j++
				}
				if j-i > bestN {
					best, bestN = vals[i], j-i
				}
				i = j
			}
			return best, nil
		}}
}
