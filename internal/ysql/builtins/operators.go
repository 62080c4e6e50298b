package builtins

import (
	"bytes"
	"math"
	"strings"

	"github.com/cockroachdb/apd/v3"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// operators by name.
var operators = map[string][]*Op{}

func addOp(name string, l, r, res types.T, f func(ctx *EvalContext, a, b types.Datum) (types.Datum, error)) {
	operators[name] = append(operators[name], &Op{Name: name, Left: l, Right: r, Result: res,
		Eval: func(ctx *EvalContext, args []types.Datum) (types.Datum, error) {
			if len(args) == 1 {
				return f(ctx, types.Datum{}, args[0])
			}
			return f(ctx, args[0], args[1])
		}})
}

func intRangeErr(t types.T) *pgerror.Error {
	switch t.OID {
	case types.OIDInt2:
		return pgerror.New(pgerror.CodeNumericValueOutOfRange, "smallint out of range")
	case types.OIDInt8:
		return pgerror.New(pgerror.CodeNumericValueOutOfRange, "bigint out of range")
	}
	return pgerror.New(pgerror.CodeNumericValueOutOfRange, "integer out of range")
}

func fits(v int64, t types.T) bool {
	switch t.OID {
	case types.OIDInt2:
		return v >= math.MinInt16 && v <= math.MaxInt16
	case types.OIDInt4:
		return v >= math.MinInt32 && v <= math.MaxInt32
	}
	return true
}

func intResult(v int64, overflow bool, t types.T) (types.Datum, error) {
	if overflow || !fits(v, t) {
		return types.NullDatum, intRangeErr(t)
	}
	return types.DInt(v), nil
}

func floatResult(f float64, a, b float64, t types.T, zeroOK bool) (types.Datum, error) {
	if t.OID == types.OIDFloat4 {
		f = float64(float32(f))
	}
	if math.IsInf(f, 0) && !math.IsInf(a, 0) && !math.IsInf(b, 0) {
		return types.NullDatum, pgerror.New(pgerror.CodeNumericValueOutOfRange, "value out of range: overflow")
	}
	if f == 0 && !zeroOK {
		return types.NullDatum, pgerror.New(pgerror.CodeNumericValueOutOfRange, "value out of range: underflow")
	}
	return types.DFloat(f), nil
}

func addInt(a, b int64) (int64, bool) {
	r := a + b
	return r, (a > 0 && b > 0 && r < 0) || (a < 0 && b < 0 && r >= 0)
}

func subInt(a, b int64) (int64, bool) {
	r := a - b
	return r, (a >= 0 && b < 0 && r < 0) || (a < 0 && b > 0 && r >= 0)
}

func mulInt(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, false
	}
	r := a * b
	return r, r/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64)
}

var intTypes = []types.T{tI2, tI4, tI8}

// widerInt is the result type of a cross-type integer operator.
func widerInt(a, b types.T) types.T {
	rank := map[uint32]int{types.OIDInt2: 0, types.OIDInt4: 1, types.OIDInt8: 2}
	if rank[a.OID] >= rank[b.OID] {
		return a
	}
	return b
}

func init() {
	// Integer arithmetic: same-type and the cross-type operators
	// PostgreSQL has (int2 op int4 -> int4, int2/int4 op int8 -> int8).
	for _, l := range intTypes {
		for _, r := range intTypes {
			res := widerInt(l, r)
			addOp("+", l, r, res, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
				v, of := addInt(a.I, b.I)
				return intResult(v, of, res)
			})
			addOp("-", l, r, res, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
				v, of := subInt(a.I, b.I)
				return intResult(v, of, res)
			})
			addOp("*", l, r, res, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
				v, of := mulInt(a.I, b.I)
				return intResult(v, of, res)
			})
			addOp("/", l, r, res, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
				if b.I == 0 {
					return types.NullDatum, errDivZero()
				}
				if b.I == -1 {
					return intResult(-a.I, a.I == math.MinInt64, res)
				}
				return types.DInt(a.I / b.I), nil
			})
			if l == r {
				addOp("%", l, r, res, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
					if b.I == 0 {
						return types.NullDatum, errDivZero()
					}
					if b.I == -1 {
						return types.DInt(0), nil
					}
					return types.DInt(a.I % b.I), nil
				})
			}
		}
		t := l
		addOp("-", types.T{}, t, t, func(_ *EvalContext, _, b types.Datum) (types.Datum, error) {
			return intResult(-b.I, b.I == math.MinInt64, t)
		})
		addOp("+", types.T{}, t, t, func(_ *EvalContext, _, b types.Datum) (types.Datum, error) { return b, nil })
		addOp("@", types.T{}, t, t, func(_ *EvalContext, _, b types.Datum) (types.Datum, error) {
			if b.I < 0 {
				return intResult(-b.I, b.I == math.MinInt64, t)
			}
			return b, nil
		})
	}

	// Float arithmetic.
	floatTypes := []types.T{tF4, tF8}
	for _, l := range floatTypes {
		for _, r := range floatTypes {
			res := tF8
			if l == tF4 && r == tF4 {
				res = tF4
			}
			addOp("+", l, r, res, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
				return floatResult(a.F+b.F, a.F, b.F, res, true)
			})
			addOp("-", l, r, res, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
				return floatResult(a.F-b.F, a.F, b.F, res, true)
			})
			addOp("*", l, r, res, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
				return floatResult(a.F*b.F, a.F, b.F, res, a.F == 0 || b.F == 0)
			})
			addOp("/", l, r, res, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
				if b.F == 0 {
					return types.NullDatum, errDivZero()
				}
				return floatResult(a.F/b.F, a.F, b.F, res, a.F == 0 || math.IsInf(b.F, 0))
			})
		}
		t := l
		addOp("-", types.T{}, t, t, func(_ *EvalContext, _, b types.Datum) (types.Datum, error) { return types.DFloat(-b.F), nil })
		addOp("+", types.T{}, t, t, func(_ *EvalContext, _, b types.Datum) (types.Datum, error) { return b, nil })
		addOp("@", types.T{}, t, t, func(_ *EvalContext, _, b types.Datum) (types.Datum, error) { return types.DFloat(math.Abs(b.F)), nil })
	}
	addOp("^", tF8, tF8, tF8, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) { return floatPow(a.F, b.F) })
	addOp("|/", types.T{}, tF8, tF8, func(_ *EvalContext, _, b types.Datum) (types.Datum, error) { return floatSqrt(b.F) })

	// Numeric arithmetic.
	numOp := func(name string, f func(a, b *apd.Decimal) (*apd.Decimal, error)) {
		addOp(name, tNum, tNum, tNum, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
			r, err := f(a.D, b.D)
			if err != nil {
				return types.NullDatum, err
			}
			return types.DNumeric(r), nil
		})
	}
	numOp("+", numAdd)
	numOp("-", numSub)
	numOp("*", numMul)
	numOp("/", numDiv)
	numOp("%", numMod)
	numOp("^", numPow)
	addOp("-", types.T{}, tNum, tNum, func(_ *EvalContext, _, b types.Datum) (types.Datum, error) { return types.DNumeric(numNeg(b.D)), nil })
	addOp("+", types.T{}, tNum, tNum, func(_ *EvalContext, _, b types.Datum) (types.Datum, error) { return b, nil })
	addOp("@", types.T{}, tNum, tNum, func(_ *EvalContext, _, b types.Datum) (types.Datum, error) { return types.DNumeric(numAbs(b.D)), nil })

	// Comparison operators for every orderable type, plus PostgreSQL's
	// cross-type integer, float and date/timestamp families.
	for _, t := range []types.T{t16, tNum, tText, tBP, tName, tChar, tBytea, tDate, tTime, tTS, tTSTZ, tIv, tUUID, tJSONB, tOID} {
		addCompare(t, t, sameTypeCompare(t))
	}
	for _, l := range intTypes {
		for _, r := range intTypes {
			addCompare(l, r, func(a, b types.Datum) int { return cmpI(a.I, b.I) })
		}
	}
	for _, l := range floatTypes {
		for _, r := range floatTypes {
			addCompare(l, r, func(a, b types.Datum) int { return types.CompareFloat(a.F, b.F) })
		}
	}
	addCompare(tName, tText, func(a, b types.Datum) int { return strings.Compare(a.S, b.S) })
	addCompare(tText, tName, func(a, b types.Datum) int { return strings.Compare(a.S, b.S) })
	dateLike := []types.T{tDate, tTS, tTSTZ}
	for _, l := range dateLike {
		for _, r := range dateLike {
			if l == r {
				continue
			}
			addCompare(l, r, crossDateCompare(l, r))
		}
	}

	// Text.
	catText := func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		if err := checkLen(int64(len(a.S)) + int64(len(b.S))); err != nil {
			return types.NullDatum, err
		}
		return types.DString(a.S + b.S), nil
	}
	addOp("||", tText, tText, tText, catText)
	// text || anynonarray and anynonarray || text: the non-text side is
	// passed as its text output (see PrepareArgs).
	addOp("||", tText, AnyNonArray, tText, catText)
	addOp("||", AnyNonArray, tText, tText, catText)
	addOp("||", tBytea, tBytea, tBytea, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		if err := checkLen(int64(len(a.B)) + int64(len(b.B))); err != nil {
			return types.NullDatum, err
		}
		return types.DBytes(append(append([]byte{}, a.B...), b.B...)), nil
	})
	for _, t := range []types.T{tText, tBP, tName} {
		addLikeOps(t)
	}

	addDateTimeOps()
	addJSONOps()
}

func cmpI(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func sameTypeCompare(t types.T) func(a, b types.Datum) int {
	return func(a, b types.Datum) int { return types.Compare(a, b, t) }
}

var compareOps = []struct {
	name string
	test func(c int) bool
}{
	{"=", func(c int) bool { return c == 0 }},
	{"<>", func(c int) bool { return c != 0 }},
	{"<", func(c int) bool { return c < 0 }},
	{"<=", func(c int) bool { return c <= 0 }},
	{">", func(c int) bool { return c > 0 }},
	{">=", func(c int) bool { return c >= 0 }},
}

func addCompare(l, r types.T, cmp func(a, b types.Datum) int) {
	for _, co := range compareOps {
		test := co.test
		addOp(co.name, l, r, t16, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
			return types.DBool(test(cmp(a, b))), nil
		})
	}
	// != is <> (the parser rewrites it; accept both).
	operators["!="] = operators["<>"]
}

// crossDateCompare compares date, timestamp and timestamptz values of
// different types by converting both to timestamptz (in UTC: the session
// zone does not matter for the order of date vs timestamp).
func crossDateCompare(l, r types.T) func(a, b types.Datum) int {
	toUs := func(t types.T, d types.Datum) int64 {
		if t.OID == types.OIDDate {
			switch d.I {
			case types.DateNegInfinity:
				return types.TimestampNegInfinity
			case types.DatePosInfinity:
				return types.TimestampPosInfinity
			}
			return d.I * 86400000000
		}
		return d.I
	}
	return func(a, b types.Datum) int { return cmpI(toUs(l, a), toUs(r, b)) }
}

func floatPow(a, b float64) (types.Datum, error) {
	if a == 0 && b < 0 {
		return types.NullDatum, pgerror.New("2201F", "zero raised to a negative power is undefined")
	}
	if a < 0 && b != math.Trunc(b) && !math.IsInf(b, 0) {
		return types.NullDatum, pgerror.New("2201F", "a negative number raised to a non-integer power yields a complex result")
	}
	r := math.Pow(a, b)
	if math.IsInf(r, 0) && !math.IsInf(a, 0) && !math.IsInf(b, 0) {
		return types.NullDatum, pgerror.New(pgerror.CodeNumericValueOutOfRange, "value out of range: overflow")
	}
	if r == 0 && a != 0 && !math.IsInf(b, 0) {
		return types.NullDatum, pgerror.New(pgerror.CodeNumericValueOutOfRange, "value out of range: underflow")
	}
	return types.DFloat(r), nil
}

func floatSqrt(a float64) (types.Datum, error) {
	if a < 0 {
		return types.NullDatum, pgerror.New("2201F", "cannot take square root of a negative number")
	}
	return types.DFloat(math.Sqrt(a)), nil
}

func addJSONOps() {
	for _, jt := range []types.T{tJSON, tJSONB} {
		jsonb := jt == tJSONB
		jt := jt
		addOp("->", jt, tText, jt, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
			return types.JSONField(a.S, jsonb, b.S, false)
		})
		addOp("->>", jt, tText, tText, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
			return types.JSONField(a.S, jsonb, b.S, true)
		})
		addOp("->", jt, tI4, jt, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
			return types.JSONIndex(a.S, jsonb, b.I, false)
		})
		addOp("->>", jt, tI4, tText, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
			return types.JSONIndex(a.S, jsonb, b.I, true)
		})
	}
	addOp("?", tJSONB, tText, t16, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		v, err := parseJSONB(a.S)
		if err != nil {
			return types.NullDatum, err
		}
		return types.DBool(jsonbHasKey(v, b.S)), nil
	})
	addJSONPathOps()
	addOp("@>", tJSONB, tJSONB, t16, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		va, err := types.ParseJSON(a.S, true)
		if err != nil {
			return types.NullDatum, err
		}
		vb, err := types.ParseJSON(b.S, true)
		if err != nil {
			return types.NullDatum, err
		}
		return types.DBool(jsonContains(va, vb, true)), nil
	})
	addOp("<@", tJSONB, tJSONB, t16, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		va, err := types.ParseJSON(a.S, true)
		if err != nil {
			return types.NullDatum, err
		}
		vb, err := types.ParseJSON(b.S, true)
		if err != nil {
			return types.NullDatum, err
		}
		return types.DBool(jsonContains(vb, va, true)), nil
	})
}

// jsonContains is jsonb's @>: objects contain objects whose pairs they
// contain; arrays contain arrays whose elements they contain; a top-level
// array contains a scalar it has as an element.
func jsonContains(a, b *types.JSONValue, top bool) bool {
	if a.Kind == types.JSONArray && b.Kind != types.JSONArray && b.Kind != types.JSONObject && top {
		for _, e := range a.Arr {
			if jsonEqual(e, b) {
				return true
			}
		}
		return false
	}
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case types.JSONObject:
		for i, k := range b.Keys {
			found := false
			for j, ak := range a.Keys {
				if ak == k {
					found = jsonContains(a.Vals[j], b.Vals[i], false)
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	case types.JSONArray:
		for _, be := range b.Arr {
			found := false
			for _, ae := range a.Arr {
				if (ae.Kind == types.JSONArray || ae.Kind == types.JSONObject) && ae.Kind == be.Kind {
					if jsonContains(ae, be, false) {
						found = true
						break
					}
				} else if jsonEqual(ae, be) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
	return jsonEqual(a, b)
}

func jsonEqual(a, b *types.JSONValue) bool {
	return bytes.Equal(a.AppendJSONB(nil), b.AppendJSONB(nil)) ||
		(a.Kind == types.JSONNumber && b.Kind == types.JSONNumber && types.CompareNumeric(a.Num, b.Num) == 0)
}
