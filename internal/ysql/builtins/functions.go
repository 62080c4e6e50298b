package builtins

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cockroachdb/apd/v3"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// functions by lower-case name.
var functions = map[string][]*Func{}

func addFn(name string, args []types.T, res types.T, f EvalFunc) *Func {
	fn := &Func{Name: name, Args: args, Result: res, Strict: true, Eval: f}
	functions[name] = append(functions[name], fn)
	return fn
}

func args(ts ...types.T) []types.T { return ts }

// PrepareArgs converts call arguments to the parameter types of a
// resolved operator or function, as the executor must before Eval:
// implicit coercion, unknown literals through the input function, and
// anynonarray parameters cast to text. loc is the session zone.
func PrepareArgs(params []types.T, vals []types.Datum, argTypes []types.T, loc *time.Location) ([]types.Datum, error) {
	out := make([]types.Datum, len(vals))
	for i, v := range vals {
		p := argTypes[i]
		if i < len(params) {
			p = params[i]
		}
		switch {
		case v.Null:
			out[i] = v
		case p.OID == AnyNonArray.OID:
			if isUnknown(argTypes[i]) {
				out[i] = v
			} else {
				// Cast to text, as the binder does: true is 'true'.
				d, err := types.CoerceTZ(v, argTypes[i], types.TText, types.CastExplicit, loc)
				if err != nil {
					return nil, err
				}
				out[i] = d
			}
		case p.OID == argTypes[i].OID:
			out[i] = v
		default:
			d, err := types.CoerceTZ(v, argTypes[i], types.T{OID: p.OID, Mod: -1}, types.CastImplicit, loc)
			if err != nil {
				return nil, err
			}
			out[i] = d
		}
	}
	return out, nil
}

func strLen(s string) int64 { return int64(utf8.RuneCountInString(s)) }

// substr is substring(s from start for n) on characters, PostgreSQL's way:
// positions before 1 eat into the length.
func substr(s string, start, n int64, hasLen bool) (string, error) {
	if hasLen && n < 0 {
		return "", pgerror.New("22011", "negative substring length not allowed")
	}
	runes := []rune(s)
	begin := start - 1
	end := int64(len(runes))
	if hasLen {
		e := start - 1 + n
		if n > 0 && e < start-1 { // overflow
			e = end
		}
		end = min(e, end)
	}
	begin = max(begin, 0)
	if begin >= end || begin >= int64(len(runes)) {
		return "", nil
	}
	return string(runes[begin:end]), nil
}

func trimSet(s, chars string, left, right bool) string {
	if left {
		s = strings.TrimLeft(s, chars)
	}
	if right {
		s = strings.TrimRight(s, chars)
	}
	return s
}

// maxValueLen is the most bytes a text or bytea value may hold, as in
// PostgreSQL (1 GB): past it a function fails with 54000 rather than
// allocating what may take the node down (lpad('x', 2000000000) built 8 GB
// of runes).
const maxValueLen = 1<<30 - 1

var errTooLong = pgerror.New(pgerror.CodeProgramLimitExceeded, "requested length too large")

// checkLen fails with "requested length too large" when n bytes exceed
// maxValueLen.
func checkLen(n int64) error {
	if n > maxValueLen {
		return errTooLong
	}
	return nil
}

func pad(s string, n int64, fill string, left bool) (string, error) {
	if n <= 0 {
		return "", nil
	}
	runes := []rune(s)
	if int64(len(runes)) >= n {
		return string(runes[:n]), nil
	}
	f := []rune(fill)
	if len(f) == 0 {
		return s, nil
	}
	need := int(n) - len(runes)
	// Every rune of the fill takes at least a byte.
	if err := checkLen(int64(len(s)) + int64(need)*int64(utf8.RuneLen(slices.Max(f)))); err != nil {
		return "", err
	}
	var p strings.Builder
	if !left {
		p.WriteString(s)
	}
	for i := range need {
		p.WriteRune(f[i%len(f)])
	}
	if left {
		p.WriteString(s)
	}
	return p.String(), nil
}

func initcap(s string) string {
	b := []byte(s)
	inWord := false
	for i, c := range b {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' // "C" locale
		if alnum {
			if !inWord && c >= 'a' && c <= 'z' {
				b[i] = c - 32
			} else if inWord && c >= 'A' && c <= 'Z' {
				b[i] = c + 32
			}
		}
		inWord = alnum
	}
	return string(b)
}

func str(f func(s string) string) EvalFunc {
	return func(_ *EvalContext, a []types.Datum) (types.Datum, error) { return types.DString(f(a[0].S)), nil }
}

func floatFn(f func(x float64) (float64, error)) EvalFunc {
	return func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		r, err := f(a[0].F)
		if err != nil {
			return types.NullDatum, err
		}
		return types.DFloat(r), nil
	}
}

func numFn(f func(x *apd.Decimal) (*apd.Decimal, error)) EvalFunc {
	return func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		r, err := f(a[0].D)
		if err != nil {
			return types.NullDatum, err
		}
		return types.DNumeric(r), nil
	}
}

func tsDatum(t time.Time) types.Datum {
	return types.DMicros(t.UnixMicro() - types.PGEpochUnixMicros)
}

func init() {
	// String functions.
	for _, n := range []string{"length", "char_length", "character_length"} {
		addFn(n, args(tText), tI4, func(_ *EvalContext, a []types.Datum) (types.Datum, error) { return types.DInt(strLen(a[0].S)), nil })
		addFn(n, args(tBP), tI4, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
			return types.DInt(strLen(types.TrimBPChar(a[0].S))), nil
		})
	}
	addFn("length", args(tBytea), tI4, func(_ *EvalContext, a []types.Datum) (types.Datum, error) { return types.DInt(int64(len(a[0].B))), nil })
	addFn("octet_length", args(tText), tI4, func(_ *EvalContext, a []types.Datum) (types.Datum, error) { return types.DInt(int64(len(a[0].S))), nil })
	// character's counts the padding (PostgreSQL's bpcharoctetlen); the
	// text one took it, trimmed.
	addFn("octet_length", args(tBP), tI4, func(_ *EvalContext, a []types.Datum) (types.Datum, error) { return types.DInt(int64(len(a[0].S))), nil })
	addFn("octet_length", args(tBytea), tI4, func(_ *EvalContext, a []types.Datum) (types.Datum, error) { return types.DInt(int64(len(a[0].B))), nil })
	addFn("bit_length", args(tText), tI4, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return types.DInt(int64(8 * len(a[0].S))), nil
	})
	addFn("lower", args(tText), tText, str(asciiLower))
	addFn("upper", args(tText), tText, str(asciiUpper))
	addFn("initcap", args(tText), tText, str(initcap))
	addFn("reverse", args(tText), tText, str(func(s string) string {
		r := []rune(s)
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		return string(r)
	}))
	for _, n := range []string{"substr", "substring"} {
		addFn(n, args(tText, tI4), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
			s, err := substr(a[0].S, a[1].I, 0, false)
			return types.DString(s), err
		})
		addFn(n, args(tText, tI4, tI4), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
			s, err := substr(a[0].S, a[1].I, a[2].I, true)
			return types.DString(s), err
		})
	}
	addFn("position", args(tText, tText), tI4, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return strpos(a[0].S, a[1].S), nil
	})
	addFn("strpos", args(tText, tText), tI4, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return strpos(a[0].S, a[1].S), nil
	})
	for _, tr := range []struct {
		name        string
		left, right bool
	}{{"btrim", true, true}, {"ltrim", true, false}, {"rtrim", false, true}} {
		tr := tr
		addFn(tr.name, args(tText), tText, str(func(s string) string { return trimSet(s, " ", tr.left, tr.right) }))
		addFn(tr.name, args(tText, tText), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
			return types.DString(trimSet(a[0].S, a[1].S, tr.left, tr.right)), nil
		})
	}
	addFn("replace", args(tText, tText, tText), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		if a[1].S == "" {
			return a[0], nil
		}
		if len(a[2].S) > len(a[1].S) {
			grow := int64(strings.Count(a[0].S, a[1].S)) * int64(len(a[2].S)-len(a[1].S))
			if err := checkLen(int64(len(a[0].S)) + grow); err != nil {
				return types.NullDatum, err
			}
		}
		return types.DString(strings.ReplaceAll(a[0].S, a[1].S, a[2].S)), nil
	})
	addFn("left", args(tText, tI4), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		r := []rune(a[0].S)
		n := a[1].I
		if n < 0 {
			n = max(int64(len(r))+n, 0)
		}
		return types.DString(string(r[:min(n, int64(len(r)))])), nil
	})
	addFn("right", args(tText, tI4), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		r := []rune(a[0].S)
		n := a[1].I
		if n < 0 {
			n = max(int64(len(r))+n, 0)
		}
		n = min(n, int64(len(r)))
		return types.DString(string(r[int64(len(r))-n:])), nil
	})
	for _, left := range []bool{true, false} {
		name := map[bool]string{true: "lpad", false: "rpad"}[left]
		addFn(name, args(tText, tI4), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
			s, err := pad(a[0].S, a[1].I, " ", left)
			return types.DString(s), err
		})
		addFn(name, args(tText, tI4, tText), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
			s, err := pad(a[0].S, a[1].I, a[2].S, left)
			return types.DString(s), err
		})
	}
	addFn("repeat", args(tText, tI4), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		if a[1].I <= 0 {
			return types.DString(""), nil
		}
		if a[1].I > maxValueLen || checkLen(int64(len(a[0].S))*a[1].I) != nil {
			return types.NullDatum, errTooLong
		}
		return types.DString(strings.Repeat(a[0].S, int(a[1].I))), nil
	})
	addFn("split_part", args(tText, tText, tI4), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		n := a[2].I
		if n == 0 {
			return types.NullDatum, pgerror.New(pgerror.CodeInvalidParameterValue, "field position must not be zero")
		}
		var parts []string
		if a[1].S == "" {
			parts = []string{a[0].S}
			if a[0].S == "" {
				parts = nil
			}
		} else {
			parts = strings.Split(a[0].S, a[1].S)
			if a[0].S == "" {
				parts = nil
			}
		}
		if n < 0 {
			n = int64(len(parts)) + n + 1
		}
		if n < 1 || n > int64(len(parts)) {
			return types.DString(""), nil
		}
		return types.DString(parts[n-1]), nil
	})
	addFn("md5", args(tText), tText, str(func(s string) string { h := md5.Sum([]byte(s)); return hex.EncodeToString(h[:]) }))
	addFn("md5", args(tBytea), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		h := md5.Sum(a[0].B)
		return types.DString(hex.EncodeToString(h[:])), nil
	})
	addFn("ascii", args(tText), tI4, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		if a[0].S == "" {
			return types.DInt(0), nil
		}
		r, _ := utf8.DecodeRuneInString(a[0].S)
		return types.DInt(int64(r)), nil
	})
	addFn("chr", args(tI4), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		if a[0].I == 0 {
			return types.NullDatum, pgerror.New(pgerror.CodeProgramLimitExceeded, "null character not permitted")
		}
		if a[0].I < 0 || a[0].I > utf8.MaxRune || (a[0].I >= 0xd800 && a[0].I <= 0xdfff) {
			return types.NullDatum, pgerror.New(pgerror.CodeProgramLimitExceeded, "requested character too large for encoding: %d", a[0].I)
		}
		return types.DString(string(rune(a[0].I))), nil
	})
	addFn("like_escape", args(tText, tText), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		s, err := LikeEscape(a[0].S, a[1].S)
		return types.DString(s), err
	})
	concat := &Func{Name: "concat", Result: tText, VariadicAny: true, Strict: false,
		EvalVariadic: func(ctx *EvalContext, a []types.Datum, ts []types.T) (types.Datum, error) {
			var sb strings.Builder
			for i, v := range a {
				if !v.Null {
					sb.WriteString(textOf(v, ts[i], ctx.loc()))
					if err := checkLen(int64(sb.Len())); err != nil {
						return types.NullDatum, err
					}
				}
			}
			return types.DString(sb.String()), nil
		}}
	functions["concat"] = append(functions["concat"], concat)
	// pg_typeof(any): the argument's type, as regtype (shown by name).
	typeOf := &Func{Name: "pg_typeof", Result: types.T{OID: types.OIDRegtype, Mod: -1}, VariadicAny: true, Strict: false,
		EvalVariadic: func(_ *EvalContext, a []types.Datum, ts []types.T) (types.Datum, error) {
			if len(ts) != 1 {
				return types.NullDatum, pgerror.New(pgerror.CodeUndefinedFunction, "function pg_typeof takes one argument, not %d", len(ts))
			}
			return types.DInt(int64(ts[0].OID)), nil
		}}
	functions["pg_typeof"] = append(functions["pg_typeof"], typeOf)
	concatWS := &Func{Name: "concat_ws", Args: args(tText), Result: tText, VariadicAny: true, Strict: false,
		EvalVariadic: func(ctx *EvalContext, a []types.Datum, ts []types.T) (types.Datum, error) {
			if a[0].Null {
				return types.NullDatum, nil
			}
			var parts []string
			n := 0
			for i := 1; i < len(a); i++ {
				if !a[i].Null {
					parts = append(parts, textOf(a[i], ts[i], ctx.loc()))
					n += len(parts[len(parts)-1]) + len(a[0].S)
				}
			}
			if err := checkLen(int64(n)); err != nil {
				return types.NullDatum, err
			}
			return types.DString(strings.Join(parts, a[0].S)), nil
		}}
	functions["concat_ws"] = append(functions["concat_ws"], concatWS)
	for _, nulls := range []bool{true, false} {
		name := map[bool]string{true: "num_nulls", false: "num_nonnulls"}[nulls]
		functions[name] = append(functions[name], &Func{Name: name, Result: tI4, VariadicAny: true,
			EvalVariadic: func(_ *EvalContext, a []types.Datum, _ []types.T) (types.Datum, error) {
				n := 0
				for _, v := range a {
					if v.Null == nulls {
						n++
					}
				}
				return types.DInt(int64(n)), nil
			}})
	}

	// Math.
	for _, t := range []types.T{tI2, tI4, tI8} {
		t := t
		addFn("abs", args(t), t, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
			if a[0].I < 0 {
				return intResult(-a[0].I, a[0].I == math.MinInt64, t)
			}
			return a[0], nil
		})
		addFn("mod", args(t, t), t, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
			if a[1].I == 0 {
				return types.NullDatum, errDivZero()
			}
			if a[1].I == -1 {
				return types.DInt(0), nil
			}
			return types.DInt(a[0].I % a[1].I), nil
		})
	}
	addFn("abs", args(tF4), tF4, floatFn(func(x float64) (float64, error) { return math.Abs(x), nil }))
	addFn("abs", args(tF8), tF8, floatFn(func(x float64) (float64, error) { return math.Abs(x), nil }))
	addFn("abs", args(tNum), tNum, numFn(func(x *apd.Decimal) (*apd.Decimal, error) { return numAbs(x), nil }))
	addFn("mod", args(tNum, tNum), tNum, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		r, err := numMod(a[0].D, a[1].D)
		return types.DNumeric(r), err
	})
	addFn("div", args(tNum, tNum), tNum, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		r, err := numDivTrunc(a[0].D, a[1].D)
		return types.DNumeric(r), err
	})
	for _, n := range []string{"ceil", "ceiling"} {
		addFn(n, args(tF8), tF8, floatFn(func(x float64) (float64, error) { return math.Ceil(x), nil }))
		addFn(n, args(tNum), tNum, numFn(func(x *apd.Decimal) (*apd.Decimal, error) { return numCeil(x, false), nil }))
	}
	addFn("floor", args(tF8), tF8, floatFn(func(x float64) (float64, error) { return math.Floor(x), nil }))
	addFn("floor", args(tNum), tNum, numFn(func(x *apd.Decimal) (*apd.Decimal, error) { return numCeil(x, true), nil }))
	addFn("round", args(tF8), tF8, floatFn(func(x float64) (float64, error) { return math.RoundToEven(x), nil }))
	addFn("round", args(tNum), tNum, numFn(func(x *apd.Decimal) (*apd.Decimal, error) { return types.RoundNumeric(x, 0), nil }))
	addFn("round", args(tNum, tI4), tNum, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		s := int(max(min(a[1].I, maxDisplayScale), -maxDisplayScale))
		return types.DNumeric(types.RoundNumeric(a[0].D, s)), nil
	})
	addFn("trunc", args(tF8), tF8, floatFn(func(x float64) (float64, error) { return math.Trunc(x), nil }))
	addFn("trunc", args(tNum), tNum, numFn(func(x *apd.Decimal) (*apd.Decimal, error) { return types.TruncNumeric(x, 0), nil }))
	addFn("trunc", args(tNum, tI4), tNum, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		s := int(max(min(a[1].I, maxDisplayScale), -maxDisplayScale))
		return types.DNumeric(types.TruncNumeric(a[0].D, s)), nil
	})
	for _, n := range []string{"power", "pow"} {
		addFn(n, args(tF8, tF8), tF8, func(_ *EvalContext, a []types.Datum) (types.Datum, error) { return floatPow(a[0].F, a[1].F) })
		addFn(n, args(tNum, tNum), tNum, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
			r, err := numPow(a[0].D, a[1].D)
			return types.DNumeric(r), err
		})
	}
	addFn("sqrt", args(tF8), tF8, func(_ *EvalContext, a []types.Datum) (types.Datum, error) { return floatSqrt(a[0].F) })
	addFn("sqrt", args(tNum), tNum, numFn(numSqrt))
	addFn("exp", args(tF8), tF8, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		x := a[0].F
		r := math.Exp(x)
		if math.IsInf(r, 1) && !math.IsInf(x, 1) {
			return types.NullDatum, pgerror.New(pgerror.CodeNumericValueOutOfRange, "value out of range: overflow")
		}
		if r == 0 && !math.IsInf(x, -1) {
			return types.NullDatum, pgerror.New(pgerror.CodeNumericValueOutOfRange, "value out of range: underflow")
		}
		return types.DFloat(r), nil
	})
	addFn("exp", args(tNum), tNum, numFn(numExp))
	addFn("ln", args(tF8), tF8, floatFn(floatLog(math.Log)))
	addFn("ln", args(tNum), tNum, numFn(numLn))
	addFn("log", args(tF8), tF8, floatFn(floatLog(math.Log10)))
	addFn("log10", args(tF8), tF8, floatFn(floatLog(math.Log10)))
	ten := apd.New(10, 0)
	addFn("log", args(tNum), tNum, numFn(func(x *apd.Decimal) (*apd.Decimal, error) { return numLog(ten, x) }))
	addFn("log10", args(tNum), tNum, numFn(func(x *apd.Decimal) (*apd.Decimal, error) { return numLog(ten, x) }))
	addFn("log", args(tNum, tNum), tNum, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		r, err := numLog(a[0].D, a[1].D)
		return types.DNumeric(r), err
	})
	addFn("sign", args(tF8), tF8, floatFn(func(x float64) (float64, error) {
		switch {
		case x > 0:
			return 1, nil
		case x < 0:
			return -1, nil
		}
		return 0, nil
	}))
	addFn("sign", args(tNum), tNum, numFn(func(x *apd.Decimal) (*apd.Decimal, error) { return numSign(x), nil }))
	addFn("pi", nil, tF8, func(_ *EvalContext, _ []types.Datum) (types.Datum, error) { return types.DFloat(math.Pi), nil })
	addFn("random", nil, tF8, func(ctx *EvalContext, _ []types.Datum) (types.Datum, error) {
		return types.DFloat(ctx.random()), nil
	}).Volatile = true

	// Date and time.
	for _, n := range []string{"now", "transaction_timestamp", "current_timestamp"} {
		addFn(n, nil, tTSTZ, func(ctx *EvalContext, _ []types.Datum) (types.Datum, error) { return tsDatum(ctx.TxnTime), nil }).Stable = true
	}
	addFn("statement_timestamp", nil, tTSTZ, func(ctx *EvalContext, _ []types.Datum) (types.Datum, error) {
		return tsDatum(ctx.StmtTime), nil
	}).Stable = true
	addFn("clock_timestamp", nil, tTSTZ, func(ctx *EvalContext, _ []types.Datum) (types.Datum, error) {
		if ctx != nil && ctx.Clock != nil {
			return tsDatum(ctx.Clock()), nil
		}
		return tsDatum(time.Now()), nil
	}).Volatile = true
	addFn("current_date", nil, tDate, func(ctx *EvalContext, _ []types.Datum) (types.Datum, error) {
		return types.CoerceTZ(tsDatum(ctx.TxnTime), tTSTZ, tDate, types.CastExplicit, ctx.loc())
	}).Stable = true
	addFn("localtimestamp", nil, tTS, func(ctx *EvalContext, _ []types.Datum) (types.Datum, error) {
		return types.DMicros(types.TimestampTZToLocal(tsDatum(ctx.TxnTime).I, ctx.loc())), nil
	}).Stable = true
	addFn("date_trunc", args(tText, tTS), tTS, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		r, err := truncTimestamp(a[0].S, a[1].I, tTS)
		return types.DMicros(r), err
	})
	addFn("date_trunc", args(tText, tTSTZ), tTSTZ, func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
		return truncTimestampTZ(a[0].S, a[1].I, ctx.loc())
	}).Stable = true
	addFn("date_trunc", args(tText, tIv), tIv, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		r, err := truncInterval(a[0].S, a[1].Iv)
		return types.DInterval(r), err
	})
	for _, t := range []types.T{tTS, tTSTZ, tDate, tTime, tIv} {
		t := t
		if t != tDate {
			addFn("date_part", args(tText, t), tF8, func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
				r, err := extract(a[0].S, a[1], t, ctx.loc())
				if err != nil || r == nil {
					return types.NullDatum, err
				}
				return types.DFloat(types.NumericToFloat(r)), nil
			})
		}
		addFn("extract", args(tText, t), tNum, func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
			r, err := extract(a[0].S, a[1], t, ctx.loc())
			if err != nil || r == nil {
				return types.NullDatum, err
			}
			return types.DNumeric(r), nil
		})
	}
	addFn("age", args(tTS, tTS), tIv, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		r, err := age(a[0].I, a[1].I)
		return types.DInterval(r), err
	})
	addFn("age", args(tTSTZ, tTSTZ), tIv, func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
		r, err := age(types.TimestampTZToLocal(a[0].I, ctx.loc()), types.TimestampTZToLocal(a[1].I, ctx.loc()))
		return types.DInterval(r), err
	})
	addFn("age", args(tTSTZ), tIv, func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
		today := types.TimestampTZToLocal(tsDatum(ctx.TxnTime).I, ctx.loc())
		days, _ := types.SplitTimestamp(today)
		r, err := age(days*usPerDay, types.TimestampTZToLocal(a[0].I, ctx.loc()))
		return types.DInterval(r), err
	}).Stable = true
	addFn("to_timestamp", args(tF8), tTSTZ, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		f := a[0].F
		switch {
		case math.IsNaN(f):
			return types.NullDatum, pgerror.New(pgerror.CodeDatetimeFieldOverflow, "timestamp cannot be NaN")
		case math.IsInf(f, 1):
			return types.DMicros(types.TimestampPosInfinity), nil
		case math.IsInf(f, -1):
			return types.DMicros(types.TimestampNegInfinity), nil
		}
		us := math.RoundToEven(f*1e6) - float64(types.PGEpochUnixMicros)
		if us < -211813488000000000 || us >= 9223371331200000000 {
			return types.NullDatum, pgerror.New(pgerror.CodeDatetimeFieldOverflow, "timestamp out of range: \"%s\"", string(types.AppendFloat(nil, f, 64)))
		}
		return types.DMicros(int64(us)), nil
	})
	addFn("make_date", args(tI4, tI4, tI4), tDate, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		d, err := ymdDays(a[0].I, a[1].I, a[2].I)
		if err != nil {
			return types.NullDatum, err
		}
		return datePlus(d, 0)
	})
	addFn("justify_hours", args(tIv), tIv, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return types.DInterval(justifyHours(a[0].Iv)), nil
	})
	addFn("isfinite", args(tDate), t16, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return types.DBool(!isInfDate(a[0].I)), nil
	})
	addFn("isfinite", args(tTS), t16, func(_ *EvalContext, a []types.Datum) (types.Datum, error) { return types.DBool(!isInfTS(a[0].I)), nil })
	addFn("isfinite", args(tTSTZ), t16, func(_ *EvalContext, a []types.Datum) (types.Datum, error) { return types.DBool(!isInfTS(a[0].I)), nil })

	// Other.
	addFn("gen_random_uuid", nil, tUUID, func(_ *EvalContext, _ []types.Datum) (types.Datum, error) {
		var u [16]byte
		if _, err := rand.Read(u[:]); err != nil {
			return types.NullDatum, err
		}
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
		return types.DUUID(u), nil
	}).Volatile = true
	uuidOSSP()
	addFn("format_type", args(tOID, tI4), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		if a[0].Null {
			return types.NullDatum, nil
		}
		if types.Info(uint32(a[0].I)) == nil {
			return types.DString("???"), nil
		}
		mod := int32(-1)
		if !a[1].Null {
			mod = int32(a[1].I)
		}
		return types.DString(types.FormatType(uint32(a[0].I), mod)), nil
	}).Strict = false
	addFn("jsonb_typeof", args(tJSONB), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) { return jsonTypeof(a[0].S) })
	addFn("json_typeof", args(tJSON), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) { return jsonTypeof(a[0].S) })
	addJSONBuildFuncs()
}

// truncTimestampTZ is date_trunc on a timestamptz in the zone loc.
func truncTimestampTZ(unit string, us int64, loc *time.Location) (types.Datum, error) {
	if isInfTS(us) {
		return types.DMicros(us), nil
	}
	local := types.TimestampTZToLocal(us, loc)
	r, err := truncTimestamp(unit, local, tTSTZ)
	if err != nil {
		return types.NullDatum, err
	}
	if u := canonicalUnit(unit); u == "microseconds" || u == "milliseconds" || u == "second" || u == "minute" || u == "hour" {
		// Below a day PostgreSQL keeps the instant's own UTC offset.
		return types.DMicros(us - (local - r)), nil
	}
	return types.DMicros(types.TimestampToTZ(r, loc)), nil
}

func jsonTypeof(doc string) (types.Datum, error) {
	v, err := types.ParseJSON(doc, false)
	if err != nil {
		return types.NullDatum, err
	}
	return types.DString(types.JSONKindName(v.Kind)), nil
}

func floatLog(f func(float64) float64) func(float64) (float64, error) {
	return func(x float64) (float64, error) {
		if x == 0 {
			return 0, pgerror.New("2201E", "cannot take logarithm of zero")
		}
		if x < 0 {
			return 0, pgerror.New("2201E", "cannot take logarithm of a negative number")
		}
		return f(x), nil
	}
}

func strpos(s, sub string) types.Datum {
	i := strings.Index(s, sub)
	if i < 0 {
		return types.DInt(0)
	}
	return types.DInt(int64(utf8.RuneCountInString(s[:i])) + 1)
}

// textOf renders a value as concat() does: bool as t/f, others with their
// output function.
func textOf(d types.Datum, t types.T, loc *time.Location) string {
	if t.OID == types.OIDUnknown {
		return d.S
	}
	return types.FormatText(d, t, loc)
}
