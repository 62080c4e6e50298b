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
				return types.NullDatum, pgerror.New(pgerror.CodeInvalidParameterValue, "invalid regular expression option: %q", string(f))
			}
		}
		pattern := a[1].S
		if quote {
			pattern = regexp.QuoteMeta(pattern)
		}
		if newline {
			pattern = "(?m-s)" + pattern
		}
		re, err := compileRegex(pattern, fold)
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
	for i := 0; i < len(format); {
		rest := format[i:]
		fm := false
		if strings.HasPrefix(strings.ToUpper(rest), "FM") {
			fm, rest, i = true, rest[2:], i+2
		}
		up := strings.ToUpper(rest)
		match := func(p string) bool { return strings.HasPrefix(up, p) }
		n := 0
		switch {
		case rest != "" && rest[0] == '"':
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				end = len(rest) - 1
			}
			sb.WriteString(rest[1 : end+1])
			n = end + 2
		case match("YYYY"):
			num(fm, y, 4)
			n = 4
		case match("YY"):
			num(fm, y%100, 2)
			n = 2
		case match("MONTH"):
			name(fm, time.Month(mo).String(), rest[:5], true)
			n = 5
		case match("MON"):
			name(fm, time.Month(mo).String()[:3], rest[:3], false)
			n = 3
		case match("MM"):
			num(fm, mo, 2)
			n = 2
		case match("DDD"):
			num(fm, doy, 3)
			n = 3
		case match("DD"):
			num(fm, d, 2)
			n = 2
		case match("DAY"):
			name(fm, time.Weekday(wd).String(), rest[:3], true)
			n = 3
		case match("DY"):
			name(fm, time.Weekday(wd).String()[:3], rest[:2], false)
			n = 2
		case match("D"):
			num(fm, wd+1, 1)
			n = 1
		case match("HH24"):
			num(fm, h, 2)
			n = 4
		case match("HH12"):
			num(fm, h12, 2)
			n = 4
		case match("HH"):
			num(fm, h12, 2)
			n = 2
		case match("MI"):
			num(fm, mi, 2)
			n = 2
		case match("SS"):
			num(fm, s, 2)
			n = 2
		case match("MS"):
			num(false, frac/1000, 3)
			n = 2
		case match("US"):
			num(false, frac, 6)
			n = 2
		case match("AM"), match("PM"):
			ampm := map[bool]string{true: "PM", false: "AM"}[h >= 12]
			if rest[0] >= 'a' {
				ampm = strings.ToLower(ampm)
			}
			sb.WriteString(ampm)
			n = 2
		case match("TZ"):
			if rest[0] >= 'a' {
				zone = strings.ToLower(zone)
			}
			sb.WriteString(zone)
			n = 2
		default:
			if rest == "" {
				break
			}
			if rest[0] == '\\' && len(rest) > 1 {
				sb.WriteByte(rest[1])
				n = 2
			} else {
				sb.WriteByte(rest[0])
				n = 1
			}
		}
		i += n
	}
	return types.DString(sb.String()), nil
}
