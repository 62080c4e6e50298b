package builtins

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

func init() {
	regexpReplace := func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		flags := ""
		if len(a) == 4 {
			flags = a[3].S
		}
		re, global, err := compileFlagged(a[1].S, flags)
		if err != nil {
			return types.NullDatum, err
		}
		src, repl := a[0].S, a[2].S
		var sb strings.Builder
		last := 0
		for _, m := range re.FindAllStringSubmatchIndex(src, map[bool]int{true: -1, false: 1}[global]) {
			sb.WriteString(src[last:m[0]])
			expandReplacement(&sb, repl, src, m)
			last = m[1]
			if err := checkLen(int64(sb.Len())); err != nil {
				return types.NullDatum, err
			}
		}
		sb.WriteString(src[last:])
		return types.DString(sb.String()), nil
	}
	addFn("regexp_replace", args(tText, tText, tText), tText, regexpReplace)
	addFn("regexp_replace", args(tText, tText, tText, tText), tText, regexpReplace)

	addFn("to_char", args(tTS, tText), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return toChar(a[0].I, a[1].S, nil)
	})
	addFn("to_char", args(tTSTZ, tText), tText, func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
		return toChar(a[0].I, a[1].S, ctx.loc())
	})
}

// compileFlagged compiles a regular expression with PostgreSQL's option
// letters (g, i, c, q, n/m, s, x is not supported); global reports g.
func compileFlagged(pattern, flags string) (*regexp.Regexp, bool, error) {
	global, fold, quote, newline := false, false, false, false
	for _, f := range flags {
		switch f {
		case 'g':
			global = true
		case 'i':
			fold = true
		case 'c':
			fold = false
		case 'q': // the pattern is a literal string
			quote = true
		case 'n', 'm': // newline-sensitive: . and [^ ] stop at \n, ^ $ match at lines
			newline = true
		case 's':
			newline = false
		default:
			return nil, false, pgerror.New(pgerror.CodeInvalidParameterValue, "invalid regular expression option: %q", string(f))
		}
	}
	if quote {
		pattern = regexp.QuoteMeta(pattern)
	}
	if newline {
		pattern = "(?m-s)" + pattern
	}
	re, err := compileRegex(pattern, fold)
	return re, global, err
}

// expandReplacement writes a regexp_replace replacement: \1..\9 are the
// groups of match m, \& the whole match, \\ a backslash (PostgreSQL's).
func expandReplacement(sb *strings.Builder, repl, src string, m []int) {
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		if c != '\\' || i+1 == len(repl) {
			sb.WriteByte(c)
			continue
		}
		i++
		switch n := repl[i]; {
		case n >= '1' && n <= '9':
			g := int(n - '0')
			if 2*g+1 < len(m) && m[2*g] >= 0 {
				sb.WriteString(src[m[2*g]:m[2*g+1]])
			}
		case n == '&':
			sb.WriteString(src[m[0]:m[1]])
		default:
			sb.WriteByte(n)
		}
	}
}

// toChar formats a timestamp (a timestamptz in loc when loc is set) by
// PostgreSQL's to_char template patterns: the year, month, day, hour,
// minute, second and fraction fields, names of months and days, AM/PM,
// TZ, with the FM prefix; other text is copied, "quoted" text literally.
func toChar(us int64, format string, loc *time.Location) (types.Datum, error) {
	if isInfTS(us) {
		return types.NullDatum, nil
	}
	local, zone := us, ""
	if loc != nil {
		local = types.TimestampTZToLocal(us, loc)
		zone = time.UnixMicro(us).In(loc).Format("MST")
		if zone != "" && (zone[0] == '+' || zone[0] == '-') {
			zone = strings.TrimRight(strings.TrimRight(zone, "0"), ":")
		}
	}
	days, tod := types.SplitTimestamp(local)
	y, mo, d := types.YMDFromDate(days)
	h, mi, s, frac := int(tod/3600e6), int(tod/60e6%60), int(tod/1e6%60), int(tod%1e6)
	wd := int((days%7 + 7 + 6) % 7) // 2000-01-01 (day 0) was a Saturday
	doy := int(days - types.DateFromYMD(y, 1, 1) + 1)
	var sb strings.Builder
	num := func(fm bool, v, width int) {
		s := strconv.Itoa(v)
		if !fm {
			for len(s) < width {
				s = "0" + s
			}
		}
		sb.WriteString(s)
	}
	// name writes a month's or day's name in the pattern's case; full
	// names are padded to 9 unless FM.
	name := func(fm bool, full, pattern string, pad bool) {
		switch {
		case pattern == strings.ToUpper(pattern):
			full = strings.ToUpper(full)
		case pattern[1] >= 'a' && pattern[1] <= 'z':
			if pattern[0] >= 'a' {
				full = strings.ToLower(full)
			}
		}
		if !fm && pad {
			for len(full) < 9 {
				full += " "
			}
		}
		sb.WriteString(full)
	}
	h12 := h % 12
	if h12 == 0 {
		h12 = 12
	}
	// The template patterns, longer ones before their prefixes: each
	// writes its field (rest is the format from the pattern on, for the
	// case of names).
	numField := func(v, width int) func(bool, string) {
		return func(fm bool, _ string) { num(fm, v, width) }
	}
	ampm := func(_ bool, rest string) {
		v := map[bool]string{true: "PM", false: "AM"}[h >= 12]
		if rest[0] >= 'a' {
			v = strings.ToLower(v)
		}
		sb.WriteString(v)
	}
	fields := []struct {
		pat   string
		write func(fm bool, rest string)
	}{
		{"YYYY", numField(y, 4)},
		{"YY", numField(y%100, 2)},
		{"MONTH", func(fm bool, rest string) { name(fm, time.Month(mo).String(), rest[:5], true) }},
		{"MON", func(fm bool, rest string) { name(fm, time.Month(mo).String()[:3], rest[:3], false) }},
		{"MM", numField(mo, 2)},
		{"DDD", numField(doy, 3)},
		{"DD", numField(d, 2)},
		{"DAY", func(fm bool, rest string) { name(fm, time.Weekday(wd).String(), rest[:3], true) }},
		{"DY", func(fm bool, rest string) { name(fm, time.Weekday(wd).String()[:3], rest[:2], false) }},
		{"D", numField(wd+1, 1)},
		{"HH24", numField(h, 2)},
		{"HH12", numField(h12, 2)},
		{"HH", numField(h12, 2)},
		{"MI", numField(mi, 2)},
		{"SS", numField(s, 2)},
		{"MS", func(bool, string) { num(false, frac/1000, 3) }},
		{"US", func(bool, string) { num(false, frac, 6) }},
		{"AM", ampm},
		{"PM", ampm},
		{"TZ", func(_ bool, rest string) {
			if rest[0] >= 'a' {
				zone = strings.ToLower(zone)
			}
			sb.WriteString(zone)
		}},
	}
	for i := 0; i < len(format); {
		rest := format[i:]
		fm := false
		if strings.HasPrefix(strings.ToUpper(rest), "FM") {
			fm, rest, i = true, rest[2:], i+2
		}
		if rest == "" {
			break
		}
		up := strings.ToUpper(rest)
		n := 0
		for _, f := range fields {
			if strings.HasPrefix(up, f.pat) {
				f.write(fm, rest)
				n = len(f.pat)
				break
			}
		}
		switch {
		case n > 0:
		case rest[0] == '"':
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				end = len(rest) - 1
			}
			sb.WriteString(rest[1 : end+1])
			n = end + 2
		case rest[0] == '\\' && len(rest) > 1:
			sb.WriteByte(rest[1])
			n = 2
		default:
			sb.WriteByte(rest[0])
			n = 1
		}
		i += n
	}
	return types.DString(sb.String()), nil
}
