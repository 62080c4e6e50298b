package builtins

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

func init() {
	// format(formatstr text [, formatarg "any" [, ...]]), as PostgreSQL's
	// text_format: %s, %I, %L and %% with positions (%2$s), the - flag and
	// widths (a number, *, or *n$).
	format := &Func{Name: "format", Args: args(tText), Result: tText, VariadicAny: true, Strict: false,
		EvalVariadic: func(ctx *EvalContext, a []types.Datum, ts []types.T) (types.Datum, error) {
			if a[0].Null {
				return types.NullDatum, nil
			}
			vals := make([]*string, len(a)-1)
			for i := 1; i < len(a); i++ {
				if !a[i].Null {
					s := textOf(a[i], ts[i], ctx.loc())
					vals[i-1] = &s
				}
			}
			out, err := Format(a[0].S, vals)
			if err != nil {
				return types.NullDatum, err
			}
			if err := checkLen(int64(len(out))); err != nil {
				return types.NullDatum, err
			}
			return types.DString(out), nil
		}}
	functions["format"] = append(functions["format"], format)
	addFn("format", args(tText), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		out, err := Format(a[0].S, nil)
		return types.DString(out), err
	})
}

// Format expands PostgreSQL's format() string f over args (nil: NULL).
func Format(f string, args []*string) (string, error) {
	var b strings.Builder
	next := 0 // the argument an unnumbered specifier takes
	i := 0
	for i < len(f) {
		c := f[i]
		if c != '%' {
			b.WriteByte(c)
			i++
			continue
		}
		i++
		if i >= len(f) {
			return "", formatErr("unterminated format() type specifier").WithHint(`For a single "%%" use "%%%%".`)
		}
		if f[i] == '%' {
			b.WriteByte('%')
			i++
			continue
		}
		// [n$][-][width|*|*n$]type
		argPos := -1
		if n, rest, ok := formatNumber(f, i); ok && rest < len(f) && f[rest] == '$' {
			if n == 0 {
				return "", formatErr("format specifies argument 0, but arguments are numbered from 1")
			}
			argPos, i = n-1, rest+1
		}
		left := false
		for i < len(f) && f[i] == '-' {
			left, i = true, i+1
		}
		width := 0
		if i < len(f) && f[i] == '*' {
			i++
			wpos := next
			if n, rest, ok := formatNumber(f, i); ok && rest < len(f) && f[rest] == '$' {
				if n == 0 {
					return "", formatErr("format specifies argument 0, but arguments are numbered from 1")
				}
				wpos, i = n-1, rest+1
			}
			next = wpos + 1
			if wpos >= len(args) {
				return "", formatErr("too few arguments for format()")
			}
			if args[wpos] != nil {
				w, err := strconv.Atoi(strings.TrimSpace(*args[wpos]))
				if err != nil {
					return "", pgerror.New(pgerror.CodeInvalidTextRepresentation, "invalid input syntax for type integer: %q", *args[wpos])
				}
				if w < 0 {
					left, w = true, -w
				}
				width = w
			}
		} else if n, rest, ok := formatNumber(f, i); ok {
			width, i = n, rest
		}
		if i >= len(f) {
			return "", formatErr("unterminated format() type specifier").WithHint(`For a single "%%" use "%%%%".`)
		}
		typ := f[i]
		i++
		if typ != 's' && typ != 'I' && typ != 'L' {
			r, _ := utf8.DecodeRuneInString(f[i-1:])
			return "", formatErr("unrecognized format() type specifier %q", string(r)).WithHint(`For a single "%%" use "%%%%".`)
		}
		if argPos < 0 {
			argPos = next
		}
		next = argPos + 1
		if argPos >= len(args) {
			return "", formatErr("too few arguments for format()")
		}
		v := args[argPos]
		var s string
		switch typ {
		case 's':
			if v != nil {
				s = *v
			}
		case 'I':
			if v == nil {
				return "", pgerror.New(pgerror.CodeNullValueNotAllowed, "null values cannot be formatted as an SQL identifier")
			}
			s = QuoteIdent(*v)
		case 'L':
			s = "NULL"
			if v != nil {
				s = QuoteLiteral(*v)
			}
		}
		pad := width - utf8.RuneCountInString(s)
		if pad > 0 && !left {
			b.WriteString(strings.Repeat(" ", pad))
		}
		b.WriteString(s)
		if pad > 0 && left {
			b.WriteString(strings.Repeat(" ", pad))
		}
	}
	return b.String(), nil
}

// formatNumber reads the decimal number at f[i:], if there is one.
func formatNumber(f string, i int) (n, rest int, ok bool) {
	j := i
	for j < len(f) && f[j] >= '0' && f[j] <= '9' {
		j++
	}
	if j == i {
		return 0, i, false
	}
	n, err := strconv.Atoi(f[i:j])
	if err != nil {
		return 0, i, false
	}
	return n, j, true
}

func formatErr(format string, args ...any) *pgerror.Error {
	return pgerror.New(pgerror.CodeInvalidParameterValue, format, args...)
}
