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
	addFn("to_char", args(tIv, tText), tText, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		if a[1].S == "" {
			return types.NullDatum, nil
		}
		return dchFormat(intervalTm(a[0].Iv), a[1].S)
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

// dchTm is what a template writes: PostgreSQL's struct pg_tm. A
// timestamp's year is astronomical (0 is 1 BC); an interval's fields are
// its own, each with the interval's sign.
type dchTm struct {
	year, mon, mday, hour, min, sec int
	fsec                            int // microseconds
	yday, wday                      int
	gmtoff                          int // seconds east of UTC
	zone                            string
	interval                        bool
}

// toChar formats a timestamp (a timestamptz in loc when loc is set) by
// PostgreSQL's to_char template patterns; infinity and an empty template
// give NULL.
func toChar(us int64, format string, loc *time.Location) (types.Datum, error) {
	if isInfTS(us) || format == "" {
		return types.NullDatum, nil
	}
	local, tm := us, dchTm{}
	if loc != nil {
		local = types.TimestampTZToLocal(us, loc)
		tm.gmtoff = int((local - us) / usPerSec)
		tm.zone = time.UnixMicro(us + types.PGEpochUnixMicros).In(loc).Format("MST")
		if tm.zone != "" && (tm.zone[0] == '+' || tm.zone[0] == '-') {
			tm.zone = strings.TrimRight(strings.TrimRight(tm.zone, "0"), ":")
		}
	}
	days, tod := types.SplitTimestamp(local)
	tm.year, tm.mon, tm.mday = types.YMDFromDate(days)
	tm.hour, tm.min, tm.sec, tm.fsec = int(tod/usPerHour), int(tod/usPerMin%60), int(tod/usPerSec%60), int(tod%usPerSec)
	tm.wday = j2day(int(days) + julianEpoch)
	tm.yday = int(days-types.DateFromYMD(tm.year, 1, 1)) + 1
	return dchFormat(tm, format)
}

// intervalTm is PostgreSQL's interval2tm, with yday the span in days at
// 30 days a month.
func intervalTm(iv types.Interval) dchTm {
	t := iv.Micros
	tm := dchTm{year: int(iv.Months / 12), mon: int(iv.Months % 12), mday: int(iv.Days), interval: true}
	tm.hour, t = int(t/usPerHour), t%usPerHour
	tm.min, t = int(t/usPerMin), t%usPerMin
	tm.sec, tm.fsec = int(t/usPerSec), int(t%usPerSec)
	tm.yday = (tm.year*12+tm.mon)*30 + tm.mday
	return tm
}

// julianEpoch is the Julian day of 2000-01-01.
const julianEpoch = 2451545

func date2j(y, m, d int) int { return int(types.DateFromYMD(y, m, d)) + julianEpoch }

// j2day is the weekday of a Julian day, 0 for Sunday.
func j2day(j int) int { return ((j+1)%7 + 7) % 7 }

// isoweek2j is the Julian day of the Monday of ISO week w of year y.
func isoweek2j(y, w int) int {
	day4 := date2j(y, 1, 4)
	return (w-1)*7 + day4 - j2day(day4-1)
}

// isoYearWeek is PostgreSQL's date2isoyear and date2isoweek.
func isoYearWeek(y, m, d int) (int, int) {
	dayn := date2j(y, m, d)
	start := isoweek2j(y, 1)
	if dayn < start {
		y--
		start = isoweek2j(y, 1)
	}
	week := (dayn-start)/7 + 1
	if week >= 52 {
		if next := isoweek2j(y+1, 1); dayn >= next {
			y, week = y+1, (dayn-next)/7+1
		}
	}
	return y, week
}

var (
	monthNames  = [...]string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
	dayNames    = [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	romanMonths = [...]string{"XII", "XI", "X", "IX", "VIII", "VII", "VI", "V", "IV", "III", "II", "I"}
)

func errIntervalFormat() error {
	return pgerror.New(pgerror.CodeInvalidDatetimeFormat, "invalid format specification for an interval value").
		WithHint("Intervals are not tied to specific calendar dates.")
}

// dchFormat writes tm by the template: PostgreSQL's DCH_to_char.
func dchFormat(tm dchTm, format string) (types.Datum, error) {
	var sb strings.Builder
	for _, n := range parseDCH(format) {
		if n.key == nil {
			sb.WriteString(n.text)
			continue
		}
		s, num, err := dchField(&n, &tm)
		if err != nil {
			return types.NullDatum, err
		}
		if num && n.th != 0 && s != "" {
			s += ordinalSuffix(s, n.th == 'L')
		}
		sb.WriteString(s)
	}
	return types.DString(sb.String()), nil
}

// dchField is one pattern's text; num reports a number, which TH follows.
func dchField(n *dchNode, tm *dchTm) (s string, num bool, err error) {
	id := n.key.id
	switch id {
	case dchADDots, dchAD, dchTZ, dchTZH, dchTZM, dchOF, dchMonth, dchMon, dchDay, dchDy, dchD, dchID:
		if tm.interval {
			return "", false, errIntervalFormat()
		}
	}
	width := func(w int) int {
		if n.fm {
			return 0
		}
		return w
	}
	adjYear := func(y int) int {
		if !tm.interval && y <= 0 {
			return 1 - y
		}
		return y
	}
	switch id {
	case dchAMDots, dchAM:
		pm := tm.hour%24 >= 12
		s = map[bool]string{true: "PM", false: "AM"}[pm]
		if id == dchAMDots {
			s = s[:1] + "." + s[1:] + "."
		}
		return caseAs(n, s), false, nil
	case dchADDots, dchAD:
		s = map[bool]string{true: "BC", false: "AD"}[tm.year <= 0]
		if id == dchADDots {
			s = s[:1] + "." + s[1:] + "."
		}
		return caseAs(n, s), false, nil
	case dchHH24:
		return cPad(tm.hour, signWidth(n, tm.hour, 2)), true, nil
	case dchHH12:
		h := tm.hour % 12
		if h == 0 {
			h = 12
		}
		return cPad(h, signWidth(n, h, 2)), true, nil
	case dchMI:
		return cPad(tm.min, signWidth(n, tm.min, 2)), true, nil
	case dchSS:
		return cPad(tm.sec, signWidth(n, tm.sec, 2)), true, nil
	case dchFF, dchMS, dchUS:
		digits := map[dchPat]int{dchFF: n.key.n, dchMS: 3, dchUS: 6}[id]
		div := 1
		for i := digits; i < 6; i++ {
			div *= 10
		}
		return cPad(tm.fsec/div, digits), true, nil
	case dchSSSS:
		return strconv.Itoa(tm.hour*3600 + tm.min*60 + tm.sec), true, nil
	case dchTZ:
		if n.lower() {
			return strings.ToLower(tm.zone), false, nil
		}
		return tm.zone, false, nil
	case dchTZH:
		return offSign(tm.gmtoff) + cPad(abs(tm.gmtoff)/3600, 2), false, nil
	case dchTZM:
		return cPad(abs(tm.gmtoff)%3600/60, 2), false, nil
	case dchOF:
		s = offSign(tm.gmtoff) + cPad(abs(tm.gmtoff)/3600, width(2))
		if m := abs(tm.gmtoff) % 3600 / 60; m != 0 {
			s += ":" + cPad(m, 2)
		}
		return s, false, nil
	case dchMonth, dchMon:
		if tm.mon == 0 {
			return "", false, nil
		}
		return dchName(n, monthNames[tm.mon-1], id == dchMon), false, nil
	case dchDay, dchDy:
		return dchName(n, dayNames[tm.wday], id == dchDy), false, nil
	case dchRM:
		return romanMonth(n, tm), false, nil
	case dchMM:
		return cPad(tm.mon, signWidth(n, tm.mon, 2)), true, nil
	case dchDDD:
		return cPad(tm.yday, width(3)), true, nil
	case dchIDDD:
		iy, _ := isoYearWeek(tm.year, tm.mon, tm.mday)
		return cPad(date2j(tm.year, tm.mon, tm.mday)-isoweek2j(iy, 1)+1, width(3)), true, nil
	case dchDD:
		return cPad(tm.mday, width(2)), true, nil
	case dchD:
		return strconv.Itoa(tm.wday + 1), true, nil
	case dchID:
		return strconv.Itoa((tm.wday+6)%7 + 1), true, nil
	case dchWW:
		return cPad((tm.yday-1)/7+1, width(2)), true, nil
	case dchIW:
		_, w := isoYearWeek(tm.year, tm.mon, tm.mday)
		return cPad(w, width(2)), true, nil
	case dchQ:
		if tm.mon == 0 {
			return "", false, nil
		}
		return strconv.Itoa((tm.mon-1)/3 + 1), true, nil
	case dchCC:
		c := tm.year / 100
		if !tm.interval {
			c = map[bool]int{true: (tm.year-1)/100 + 1, false: tm.year/100 - 1}[tm.year > 0]
		}
		if c > 99 || c < -99 {
			return strconv.Itoa(c), true, nil
		}
		return cPad(c, signWidth(n, c, 2)), true, nil
	case dchYCommaYYY:
		y := adjYear(tm.year)
		return strconv.Itoa(y/1000) + "," + cPad(y%1000, 3), true, nil
	case dchW:
		return strconv.Itoa((tm.mday-1)/7 + 1), true, nil
	case dchJ:
		return strconv.Itoa(date2j(tm.year, tm.mon, tm.mday)), true, nil
	case dchFX:
		return "", false, nil
	}
	// The years: Y to YYYY, I to IYYY, their last digits.
	// The sign widens the field by the calendar year's, as PostgreSQL's.
	y := tm.year
	if id == dchIYYY || id == dchIYY || id == dchIY || id == dchI {
		y, _ = isoYearWeek(tm.year, tm.mon, tm.mday)
	}
	y = adjYear(y)
	digits := map[dchPat]int{dchYYYY: 4, dchIYYY: 4, dchYYY: 3, dchIYY: 3, dchYY: 2, dchIY: 2, dchY: 1, dchI: 1}[id]
	if digits < 4 {
		y %= []int{1, 10, 100, 1000}[digits]
	}
	return cPad(y, signWidth(n, adjYear(tm.year), digits)), true, nil
}

func offSign(off int) string {
	if off >= 0 {
		return "+"
	}
	return "-"
}

// caseAs writes an upper-case word in the case the pattern was written.
func caseAs(n *dchNode, s string) string {
	if n.lower() {
		return strings.ToLower(s)
	}
	return s
}

// dchName is a month's or day's name (abbreviated: its first three
// letters) in the pattern's case; full names are padded to 9 unless FM.
func dchName(n *dchNode, name string, short bool) string {
	if short {
		name = name[:3]
	}
	switch {
	case n.lower():
		name = strings.ToLower(name)
	case !n.title():
		name = strings.ToUpper(name)
	}
	if !short && !n.fm && !n.tm {
		name += strings.Repeat(" ", max(9-len(name), 0))
	}
	return name
}

// romanMonth is RM: December first in romanMonths; an interval's negative
// months count back from December.
func romanMonth(n *dchNode, tm *dchTm) string {
	if tm.mon == 0 && tm.year == 0 {
		return ""
	}
	i := 12 - tm.mon
	switch {
	case tm.mon == 0 && tm.year >= 0:
		i = 0
	case tm.mon == 0:
		i = 11
	case tm.mon < 0:
		i = -(tm.mon + 1)
	}
	s := romanMonths[i]
	if !n.fm {
		s += strings.Repeat(" ", 4-len(s))
	}
	return caseAs(n, s)
}
