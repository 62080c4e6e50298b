package builtins

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// to_date and to_timestamp(text, text): the input read by the template's
// patterns (parseDCH) as PostgreSQL's DCH_from_char, the fields then made a
// date as do_to_timestamp does.

func init() {
	addFn("to_timestamp", args(tText, tText), tTSTZ, func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
		return toTimestamp(a[0].S, a[1].S, ctx.loc())
	}).Stable = true
	addFn("to_date", args(tText, tText), tDate, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return toDate(a[0].S, a[1].S)
	}).Stable = true
}

// dchFields are the fields read (TmFromChar); 0 is "not given".
type dchFields struct {
	mode                                 byte
	hh, pm, mi, ss, ssss, d, dd, ddd, mm int
	ms, year, bc, cc, j, us, yysz, ww, w int
	ff, tzsign, tzh, tzm                 int
	clock12                              bool
}

// dchTmResult is the date and time made of the fields.
type dchTmResult struct {
	year, mon, mday, hour, min, sec int
	fsec                            int64
	zone                            int // seconds east, when hasZone
	hasZone                         bool
	fprec                           int
}

func errDTFormat(format string, a ...any) *pgerror.Error {
	return pgerror.New(pgerror.CodeInvalidDatetimeFormat, format, a...)
}

func errFieldOverflow(in string) error {
	return pgerror.New(pgerror.CodeDatetimeFieldOverflow, "date/time field value out of range: \"%s\"", in)
}

// dchReader walks the input.
type dchReader struct {
	in        string
	s         int // position in in
	f         dchFields
	fx        bool
	extraSkip int
}

func (r *dchReader) rest() string { return r.in[r.s:] }

func (r *dchReader) skipSpaces() int {
	n := 0
	for r.s < len(r.in) && isCSpace(r.in[r.s]) {
		r.s++
		n++
	}
	return n
}

func isCSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }

// read reads the input by the template's nodes.
func (r *dchReader) read(nodes []dchNode) error {
	for i := 0; i < len(nodes) && r.s < len(r.in); i++ {
		n := &nodes[i]
		// Spaces before fields (and the input's leading ones) are skipped
		// unless in FX mode.
		if !r.fx && (n.key == nil && i == 0 || n.key != nil && n.key.id != dchFX) {
			r.extraSkip += r.skipSpaces()
		}
		if n.key == nil {
			r.literal(n)
			continue
		}
		if err := r.setMode(n); err != nil {
			return err
		}
		if err := r.field(nodes, i); err != nil {
			return err
		}
		if !r.fx {
			r.extraSkip = r.skipSpaces()
		}
	}
	return nil
}

// literal passes the input over a template character: a space or
// separator matches one space or separator, or nothing, unless FX; other
// text one character whatever it is.
func (r *dchReader) literal(n *dchNode) {
	if r.s >= len(r.in) {
		return
	}
	step := len(firstChar(r.rest()))
	switch {
	case n.kind != 'c' && !r.fx:
		r.extraSkip--
		if c := r.in[r.s]; isCSpace(c) || isSeparatorChar(c) {
			r.s++
			r.extraSkip++
		}
	case n.kind == 'c' && !r.fx && r.extraSkip > 0:
		r.extraSkip--
	default:
		r.s += step
	}
}

func (r *dchReader) setMode(n *dchNode) error {
	m := n.key.mode
	if m == 0 {
		return nil
	}
	if r.f.mode != 0 && r.f.mode != m {
		return errDTFormat("invalid combination of date conventions").
			WithHint("Do not mix Gregorian and ISO week date conventions in a formatting template.")
	}
	r.f.mode = m
	return nil
}

// set stores a field's value, refusing a second, different one.
func set(dest *int, v int, n *dchNode) error {
	if *dest != 0 && *dest != v {
		return errDTFormat("conflicting values for \"%s\" field in formatting string", n.text).
			WithDetail("This value contradicts a previous setting for the same field type.")
	}
	*dest = v
	return nil
}

// field reads the value of pattern nodes[i].
func (r *dchReader) field(nodes []dchNode, i int) error {
	n := &nodes[i]
	f := &r.f
	num := func(dest *int, width int) (int, error) { return r.int(dest, width, nodes, i) }
	var err error
	var used int
	if dest, width := r.intField(n.key); dest != nil {
		_, err = num(dest, width)
	}
	switch n.key.id {
	case dchFX:
		r.fx = true
	case dchAMDots, dchAM:
		words := []string{"am", "pm", "AM", "PM"}
		if n.key.id == dchAMDots {
			words = []string{"a.m.", "p.m.", "A.M.", "P.M."}
		}
		f.clock12 = true
		return r.wordField(n, words, &f.pm, func(v int) int { return v % 2 })
	case dchHH12:
		f.clock12 = true
	case dchMS:
		used, err = num(&f.ms, 3)
		f.ms *= []int{1, 100, 10, 1}[min(used, 3)]
	case dchFF, dchUS:
		width := 6
		if n.key.id == dchFF {
			f.ff, width = n.key.n, n.key.n
		}
		used, err = num(&f.us, width)
		f.us *= int(math.Pow10(6 - min(used, 6)))
	case dchTZ, dchOF:
		return pgerror.New(pgerror.CodeFeatureNotSupported, "formatting field \"%s\" is only supported in to_char", n.text)
	case dchTZH:
		r.tzSign()
		_, err = num(&f.tzh, 2)
	case dchTZM:
		if f.tzsign == 0 {
			f.tzsign = 1
		}
		_, err = num(&f.tzm, 2)
	case dchADDots, dchAD:
		words := []string{"ad", "bc", "AD", "BC"}
		if n.key.id == dchADDots {
			words = []string{"a.d.", "b.c.", "A.D.", "B.C."}
		}
		return r.wordField(n, words, &f.bc, func(v int) int { return v % 2 })
	case dchMonth, dchMon:
		return r.wordField(n, shortNames(monthNames[:], n.key.id == dchMon), &f.mm, func(v int) int { return v + 1 })
	case dchDay, dchDy:
		err := r.wordField(n, shortNames(dayNames[:], n.key.id == dchDy), &f.d, func(v int) int { return v })
		f.d++ // Sunday is 1
		return err
	case dchID:
		f.d = f.d%7 + 1 // Sunday is 1, as D has it
	case dchYCommaYYY:
		return r.yCommaYYY(n)
	case dchYYYY, dchIYYY, dchYYY, dchIYY, dchYY, dchIY, dchY, dchI:
		return r.year(nodes, i)
	case dchRM:
		romans := []string{"xii", "xi", "x", "ix", "viii", "vii", "vi", "v", "iv", "iii", "ii", "i"}
		return r.wordField(n, romans, &f.mm, func(v int) int { return 12 - v })
	}
	if err == nil {
		r.skipTH(n)
	}
	return err
}

// intField is where a plain number pattern's value goes, and its width;
// nil for the others. Q is read but not used: which day of the quarter
// would it be?
func (r *dchReader) intField(k *dchKey) (*int, int) {
	f := &r.f
	switch k.id {
	case dchHH12, dchHH24:
		return &f.hh, 2
	case dchMI:
		return &f.mi, 2
	case dchSS:
		return &f.ss, 2
	case dchSSSS:
		return &f.ssss, len(k.name)
	case dchMM:
		return &f.mm, 2
	case dchDDD, dchIDDD:
		return &f.ddd, 3
	case dchDD:
		return &f.dd, 2
	case dchD, dchID:
		return &f.d, 1
	case dchWW, dchIW:
		return &f.ww, 2
	case dchQ:
		return new(int), 1
	case dchCC:
		return &f.cc, 2
	case dchW:
		return &f.w, 1
	case dchJ:
		return &f.j, 1
	}
	return nil, 0
}

// tzSign reads TZH's sign; a minus taken as a separator before it counts.
func (r *dchReader) tzSign() {
	if c := r.in[r.s]; c == '+' || c == '-' || c == ' ' {
		r.f.tzsign = map[bool]int{true: -1, false: 1}[c == '-']
		r.s++
		return
	}
	r.f.tzsign = 1
	if r.extraSkip > 0 && r.s > 0 && r.in[r.s-1] == '-' {
		r.f.tzsign = -1
	}
}

// skipTH passes two characters for a TH suffix.
func (r *dchReader) skipTH(n *dchNode) {
	if n.th == 0 {
		return
	}
	for k := 0; k < 2 && r.s < len(r.in); k++ {
		r.s += len(firstChar(r.rest()))
	}
}

// year reads the Y, YY, YYY, YYYY patterns (and their ISO forms): fewer
// than four digits are a year near 2020.
func (r *dchReader) year(nodes []dchNode, i int) error {
	n := &nodes[i]
	digits := map[dchPat]int{dchYYYY: 4, dchIYYY: 4, dchYYY: 3, dchIYY: 3, dchYY: 2, dchIY: 2, dchY: 1, dchI: 1}[n.key.id]
	used, err := r.int(&r.f.year, digits, nodes, i)
	if err != nil {
		return err
	}
	if digits < 4 && used < 4 {
		r.f.year = adjustYearTo2020(r.f.year)
	}
	r.f.yysz = digits
	r.skipTH(n)
	return nil
}

// adjustYearTo2020: 0-69 are 20xx, 70-99 19xx, 100-519 2xxx, 520-999 1xxx.
func adjustYearTo2020(y int) int {
	switch {
	case y < 70:
		return y + 2000
	case y < 100:
		return y + 1900
	case y < 520:
		return y + 2000
	case y < 1000:
		return y + 1000
	}
	return y
}

// yCommaYYY reads Y,YYY: thousands, a comma, then the rest of the year.
func (r *dchReader) yCommaYYY(n *dchNode) error {
	s := r.rest()
	th, p, ok := scanCInt(s)
	if ok && p < len(s) && s[p] == ',' {
		// sscanf's %03d: at most three characters after any spaces.
		sp := len(s[p+1:]) - len(strings.TrimLeft(s[p+1:], " \t\n\r\v\f"))
		if rest, q, ok2 := scanCInt(s[p+1 : min(len(s), p+1+sp+3)]); ok2 {
			if err := set(&r.f.year, th*1000+rest, n); err != nil {
				return err
			}
			r.f.yysz = 4
			r.s += p + 1 + q
			r.skipTH(n)
			return nil
		}
	}
	return errDTFormat("invalid input string for \"Y,YYY\"")
}

// scanCInt reads an integer as strtol: leading spaces, a sign, digits; it
// returns the value, the length read and whether there were digits.
func scanCInt(s string) (int, int, bool) {
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	start := i
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == digits {
		return 0, 0, false
	}
	v, err := strconv.ParseInt(s[start:i], 10, 64)
	if err != nil {
		v = math.MaxInt64
		if s[start] == '-' {
			v = math.MinInt64
		}
	}
	return int(v), i, true
}

// int reads a number for pattern nodes[i] (from_char_parse_int_len):
// exactly width characters, or as many digits as there are under FM or
// when a non-digit follows in the template. It returns the length read.
func (r *dchReader) int(dest *int, width int, nodes []dchNode, i int) (int, error) {
	n := &nodes[i]
	init := r.s
	r.skipSpaces()
	s := r.rest()
	cp := s
	if len(cp) > width {
		cp = cp[:width]
	}
	var v int
	if n.fm || nextIsSeparator(nodes, i) {
		val, used, ok := scanCInt(r.in[init:])
		if ok {
			v, r.s = val, init+used
		} else {
			r.s = init
		}
	} else {
		if len(cp) < width {
			return 0, errDTFormat("source string too short for \"%s\" formatting field", n.text).
				WithDetail("Field requires %d characters, but only %d remain.", width, len(cp)).
				WithHint("If your source string is not fixed-width, try using the \"FM\" modifier.")
		}
		val, used, ok := scanCInt(cp)
		if ok && used < width {
			return 0, errDTFormat("invalid value \"%s\" for \"%s\"", cp, n.text).
				WithDetail("Field requires %d characters, but only %d could be parsed.", width, used).
				WithHint("If your source string is not fixed-width, try using the \"FM\" modifier.")
		}
		if ok {
			v, r.s = val, r.s+used
		}
	}
	if r.s == init {
		return 0, errDTFormat("invalid value \"%s\" for \"%s\"", cp, n.text).WithDetail("Value must be an integer.")
	}
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, pgerror.New(pgerror.CodeDatetimeFieldOverflow, "value for \"%s\" in source string is out of range", n.text).
			WithDetail("Value must be in the range %d to %d.", math.MinInt32, math.MaxInt32)
	}
	return r.s - init, set(dest, v, n)
}

// nextIsSeparator: the field ends where its digits do, as the template
// has no digit pattern or digit right after it.
func nextIsSeparator(nodes []dchNode, i int) bool {
	if nodes[i].th != 0 {
		return true
	}
	if i+1 == len(nodes) {
		return true
	}
	next := &nodes[i+1]
	if next.key != nil {
		return !next.key.digit
	}
	return !(len(next.text) == 1 && next.text[0] >= '0' && next.text[0] <= '9')
}

func shortNames(names []string, short bool) []string {
	if !short {
		return names
	}
	out := make([]string, len(names))
	for i, s := range names {
		out[i] = s[:3]
	}
	return out
}

// wordField reads one of words into dest (as val makes its index).
func (r *dchReader) wordField(n *dchNode, words []string, dest *int, val func(int) int) error {
	v, err := r.word(words, n)
	if err != nil {
		return err
	}
	return set(dest, val(v), n)
}

// word matches the input against words, ignoring case; the first that
// matches wins.
func (r *dchReader) word(words []string, n *dchNode) (int, error) {
	s := r.rest()
	for i, w := range words {
		if len(s) >= len(w) && strings.EqualFold(s[:len(w)], w) {
			r.s += len(w)
			return i, nil
		}
	}
	cp := s
	if k := strings.IndexAny(cp, " \t\n\r\v\f"); k >= 0 {
		cp = cp[:k]
	}
	return 0, errDTFormat("invalid value \"%s\" for \"%s\"", cp, n.text).
		WithDetail("The given value did not match any of the allowed values for this field.")
}

// dchParse reads in by format and makes the date and time fields.
func dchParse(in, format string) (*dchTmResult, error) {
	r := &dchReader{in: in}
	if err := r.read(parseDCH(format)); err != nil {
		return nil, err
	}
	return r.f.tm(in)
}

// tm is do_to_timestamp's making of a date and time from the fields.
func (f *dchFields) tm(in string) (*dchTmResult, error) {
	tm := &dchTmResult{mon: 1, mday: 1}
	if f.ssss != 0 {
		tm.hour, tm.min, tm.sec = f.ssss/3600, f.ssss%3600/60, f.ssss%60
	}
	if f.ss != 0 {
		tm.sec = f.ss
	}
	if f.mi != 0 {
		tm.min = f.mi
	}
	if f.hh != 0 {
		tm.hour = f.hh
	}
	if f.clock12 {
		if tm.hour < 1 || tm.hour > 12 {
			return nil, errDTFormat("hour \"%d\" is invalid for the 12-hour clock", tm.hour).
				WithHint("Use the 24-hour clock, or give an hour between 1 and 12.")
		}
		if f.pm != 0 && tm.hour < 12 {
			tm.hour += 12
		} else if f.pm == 0 && tm.hour == 12 {
			tm.hour = 0
		}
	}
	dateGiven := f.year != 0 || f.cc != 0
	f.setYear(tm)
	if f.j != 0 {
		tm.year, tm.mon, tm.mday = types.YMDFromDate(int64(f.j - julianEpoch))
		dateGiven = true
	}
	dayGiven, monGiven := false, false
	if f.ww != 0 {
		if f.mode == 'I' {
			j := isoweek2j(tm.year, f.ww)
			if f.d != 0 {
				j += map[bool]int{true: f.d - 2, false: 6}[f.d > 1]
			}
			tm.year, tm.mon, tm.mday = types.YMDFromDate(int64(j - julianEpoch))
			dateGiven, dayGiven, monGiven = true, true, true
		} else {
			f.ddd = (f.ww-1)*7 + 1
		}
	}
	if f.w != 0 {
		f.dd = (f.w-1)*7 + 1
	}
	if f.dd != 0 {
		tm.mday, dayGiven = f.dd, true
	}
	if f.mm != 0 {
		tm.mon, monGiven = f.mm, true
	}
	if f.ddd != 0 && (tm.mon <= 1 || tm.mday <= 1) {
		if tm.year == 0 && f.bc == 0 {
			return nil, errDTFormat("cannot calculate day of year without year information")
		}
		dayGiven, monGiven = true, true
		if f.mode == 'I' {
			dateGiven = true
			tm.year, tm.mon, tm.mday = types.YMDFromDate(int64(isoweek2j(tm.year, 1) - 1 + f.ddd - julianEpoch))
		} else {
			f.dayOfYear(tm)
		}
	}
	tm.fsec = int64(f.ms)*1000 + int64(f.us)
	tm.fprec = f.ff
	if (dateGiven || dayGiven || monGiven) && !validDate(tm, dateGiven || f.j != 0, monGiven, dayGiven) {
		return nil, errFieldOverflow(in)
	}
	if tm.hour < 0 || tm.hour >= 24 || tm.min < 0 || tm.min >= 60 || tm.sec < 0 || tm.sec >= 60 || tm.fsec < 0 || tm.fsec >= usPerSec {
		return nil, errFieldOverflow(in)
	}
	if f.tzsign != 0 {
		if f.tzh < 0 || f.tzh > 15 || f.tzm < 0 || f.tzm >= 60 {
			return nil, pgerror.New(pgerror.CodeInvalidTimeZoneDisplacement, "time zone displacement out of range: \"%s\"", in)
		}
		tm.hasZone, tm.zone = true, f.tzsign*(f.tzh*3600+f.tzm*60)
	}
	return tm, nil
}

// setYear: a year with fewer than three digits and CC is a year of that
// century; BC years count back from year 0 (1 BC).
func (f *dchFields) setYear(tm *dchTmResult) {
	switch {
	case f.year != 0 && f.cc != 0 && f.yysz <= 2:
		cc := f.cc
		if f.bc != 0 {
			cc = -cc
		}
		y := f.year % 100
		switch {
		case y == 0 && cc >= 0:
			tm.year = cc * 100
		case y == 0:
			tm.year = cc*100 + 1
		case cc >= 0:
			tm.year = y + (cc-1)*100
		default:
			tm.year = (cc+1)*100 - y + 1
		}
	case f.year != 0:
		tm.year = f.year
		if f.bc != 0 {
			tm.year = -tm.year
		}
		if tm.year < 0 {
			tm.year++
		}
	case f.cc != 0:
		cc := f.cc
		if f.bc != 0 {
			cc = -cc
		}
		if cc >= 0 {
			tm.year = (cc-1)*100 + 1
		} else {
			tm.year = cc*100 + 1
		}
	}
}

// dayOfYear sets the month and day (those not given) of Gregorian day ddd.
func (f *dchFields) dayOfYear(tm *dchTmResult) {
	leap := tm.year%4 == 0 && (tm.year%100 != 0 || tm.year%400 == 0)
	sum, i := 0, 1
	for ; i <= 12; i++ {
		days := daysIn(2001, i)
		if i == 2 && leap {
			days = 29
		}
		if f.ddd <= sum+days {
			break
		}
		sum += days
	}
	if tm.mon <= 1 {
		tm.mon = i
	}
	if tm.mday <= 1 {
		tm.mday = f.ddd - sum
	}
}

// validDate is ValidateDate's checks of the given fields.
func validDate(tm *dchTmResult, year, mon, day bool) bool {
	if mon && (tm.mon < 1 || tm.mon > 12) {
		return false
	}
	if day && (tm.mday < 1 || tm.mday > 31) {
		return false
	}
	if year && mon && day && tm.mday > daysIn(tm.year, tm.mon) {
		return false
	}
	return true
}

func toTimestamp(in, format string, loc *time.Location) (types.Datum, error) {
	tm, err := dchParse(in, format)
	if err != nil {
		return types.NullDatum, err
	}
	if !julianValid(tm.year, tm.mon) {
		return types.NullDatum, errTimestampRange()
	}
	days := types.DateFromYMD(tm.year, tm.mon, tm.mday)
	if days < -julianEpoch-1 || days > 109203528-julianEpoch+1 { // days*usPerDay would overflow
		return types.NullDatum, errTimestampRange()
	}
	local := days*usPerDay +
		int64(tm.hour)*usPerHour + int64(tm.min)*usPerMin + int64(tm.sec)*usPerSec + tm.fsec
	us := local - int64(tm.zone)*usPerSec
	if !tm.hasZone {
		us = types.TimestampToTZ(local, loc)
	}
	if !validTS(us) {
		return types.NullDatum, errTimestampRange()
	}
	if tm.fprec > 0 {
		us = roundMicros(us, tm.fprec)
	}
	return types.DMicros(us), nil
}

// roundMicros rounds a timestamp to prec fraction digits, half away from
// zero as AdjustTimestampForTypmod.
func roundMicros(us int64, prec int) int64 {
	unit := int64(math.Pow10(6 - prec))
	if us >= 0 {
		return (us + unit/2) / unit * unit
	}
	return -((-us + unit/2) / unit * unit)
}

// julianValid is IS_VALID_JULIAN, which looks at years and months only:
// from November 4714 BC to May 5874898.
func julianValid(y, m int) bool {
	return (y > -4713 || y == -4713 && m >= 11) && (y < 5874898 || y == 5874898 && m < 6)
}

func toDate(in, format string) (types.Datum, error) {
	tm, err := dchParse(in, format)
	if err != nil {
		return types.NullDatum, err
	}
	days := types.DateFromYMD(tm.year, tm.mon, tm.mday)
	if !julianValid(tm.year, tm.mon) || days < -julianEpoch || days >= int64(2147483494-julianEpoch) {
		return types.NullDatum, pgerror.New(pgerror.CodeDatetimeFieldOverflow, "date out of range: \"%s\"", in)
	}
	return types.DDate(days), nil
}
