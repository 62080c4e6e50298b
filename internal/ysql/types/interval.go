package types

import (
	"math"
	"strconv"
	"strings"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// Interval input (PostgreSQL's DecodeInterval and DecodeISO8601Interval) and
// output in IntervalStyle postgres.

// AppendInterval appends iv as interval_out prints it with IntervalStyle
// postgres: "1 year 2 mons 3 days 04:05:06.5", "-1 days +02:00:00".
func AppendInterval(buf []byte, iv Interval) []byte {
	year := iv.Months / 12
	mon := iv.Months % 12
	mday := iv.Days
	t := iv.Micros
	hour := t / usPerHour
	t -= hour * usPerHour
	min := t / usPerMin
	t -= min * usPerMin
	sec := t // seconds and fraction, in microseconds

	isZero, isBefore := true, false
	addPart := func(value int64, unit string) {
		if value == 0 {
			return
		}
		if !isZero {
			buf = append(buf, ' ')
		}
		if isBefore && value > 0 {
			buf = append(buf, '+')
		}
		buf = strconv.AppendInt(buf, value, 10)
		buf = append(buf, ' ')
		buf = append(buf, unit...)
		if value != 1 {
			buf = append(buf, 's')
		}
		isBefore = value < 0
		isZero = false
	}
	addPart(int64(year), "year")
	addPart(int64(mon), "mon")
	addPart(int64(mday), "day")
	if isZero || hour != 0 || min != 0 || sec != 0 {
		minus := hour < 0 || min < 0 || sec < 0
		if !isZero {
			buf = append(buf, ' ')
		}
		if minus {
			buf = append(buf, '-')
		} else if isBefore {
			buf = append(buf, '+')
		}
		buf = appendPad(buf, abs64(hour), 2)
		buf = append(buf, ':')
		buf = appendPad(buf, abs64(min), 2)
		buf = append(buf, ':')
		buf = appendSeconds(buf, abs64(sec))
	}
	return buf
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// interval field bits, to refuse a unit given twice ("1 day 1 day").
const (
	fmYear = 1 << iota
	fmMonth
	fmDay
	fmHour
	fmMinute
	fmSecond
	fmMilli
	fmMicro
	fmWeek
	fmDecade
	fmCentury
	fmMillennium
)

var intervalUnits = map[string]int{
	"microsecond": fmMicro, "microseconds": fmMicro, "microsecon": fmMicro, "us": fmMicro, "usec": fmMicro, "usecs": fmMicro, "useconds": fmMicro,
	"millisecond": fmMilli, "milliseconds": fmMilli, "millisecon": fmMilli, "ms": fmMilli, "msec": fmMilli, "msecs": fmMilli, "mseconds": fmMilli,
	"second": fmSecond, "seconds": fmSecond, "s": fmSecond, "sec": fmSecond, "secs": fmSecond,
	"minute": fmMinute, "minutes": fmMinute, "m": fmMinute, "min": fmMinute, "mins": fmMinute,
	"hour": fmHour, "hours": fmHour, "h": fmHour, "hr": fmHour, "hrs": fmHour,
	"day": fmDay, "days": fmDay, "d": fmDay,
	"week": fmWeek, "weeks": fmWeek, "w": fmWeek,
	"month": fmMonth, "months": fmMonth, "mon": fmMonth, "mons": fmMonth,
	"year": fmYear, "years": fmYear, "y": fmYear, "yr": fmYear, "yrs": fmYear,
	"decade": fmDecade, "decades": fmDecade, "dec": fmDecade, "decs": fmDecade,
	"century": fmCentury, "centuries": fmCentury, "c": fmCentury, "cent": fmCentury,
	"millennium": fmMillennium, "millennia": fmMillennium, "mil": fmMillennium, "mils": fmMillennium,
}

type ivAcc struct {
	months, days int64
	usInt        int64
	overflow     bool
}

func (a *ivAcc) addMicros(v int64) {
	r, of := addOverflow(a.usInt, v)
	a.usInt = r
	a.overflow = a.overflow || of
}

func (a *ivAcc) addFracMicros(frac float64, scale float64) {
	if frac == 0 {
		return
	}
	v := math.RoundToEven(frac * scale)
	if math.Abs(v) > 9.2e18 {
		a.overflow = true
		return
	}
	a.addMicros(int64(v))
}

func (a *ivAcc) addFracDays(frac float64, scale float64) {
	if frac == 0 {
		return
	}
	frac *= scale
	extra := math.Trunc(frac)
	a.days += int64(extra)
	frac -= extra
	a.addFracMicros(frac, float64(usPerDay))
}

func addOverflow(a, b int64) (int64, bool) {
	r := a + b
	return r, (a > 0 && b > 0 && r < 0) || (a < 0 && b < 0 && r >= 0)
}

func mulOverflow(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, false
	}
	r := a * b
	return r, r/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64)
}

// apply adds value (integer part iv, fraction fv of the same sign) of unit.
func (a *ivAcc) apply(unit int, iv int64, fv float64) {
	mul := func(x, y int64) int64 {
		r, of := mulOverflow(x, y)
		a.overflow = a.overflow || of
		return r
	}
	switch unit {
	case fmMicro:
		a.addMicros(iv)
		a.addFracMicros(fv, 1)
	case fmMilli:
		a.addMicros(mul(iv, 1000))
		a.addFracMicros(fv, 1000)
	case fmSecond:
		a.addMicros(mul(iv, usPerSec))
		a.addFracMicros(fv, float64(usPerSec))
	case fmMinute:
		a.addMicros(mul(iv, usPerMin))
		a.addFracMicros(fv, float64(usPerMin))
	case fmHour:
		a.addMicros(mul(iv, usPerHour))
		a.addFracMicros(fv, float64(usPerHour))
	case fmDay:
		a.days += iv
		a.addFracMicros(fv, float64(usPerDay))
	case fmWeek:
		a.days += mul(iv, 7)
		a.addFracDays(fv, 7)
	case fmMonth:
		a.months += iv
		a.addFracDays(fv, 30)
	case fmYear:
		a.months += mul(iv, 12)
		a.months += int64(math.RoundToEven(fv * 12))
	case fmDecade:
		a.months += mul(iv, 120)
		a.months += int64(math.RoundToEven(fv * 120))
	case fmCentury:
		a.months += mul(iv, 1200)
		a.months += int64(math.RoundToEven(fv * 1200))
	case fmMillennium:
		a.months += mul(iv, 12000)
		a.months += int64(math.RoundToEven(fv * 12000))
	}
	if a.days > math.MaxInt32 || a.days < math.MinInt32 {
		a.overflow = true
	}
	if a.months > math.MaxInt64/2 || a.months < math.MinInt64/2 {
		a.overflow = true
	}
}

// splitNumber parses [+-]digits[.digits] into integer part and a fraction
// of the same sign.
func splitNumber(s string) (int64, float64, bool) {
	if s == "" {
		return 0, 0, false
	}
	neg := false
	body := s
	if body[0] == '+' || body[0] == '-' {
		neg = body[0] == '-'
		body = body[1:]
	}
	ip, fp, hasFrac := strings.Cut(body, ".")
	if ip == "" && (!hasFrac || fp == "") {
		return 0, 0, false
	}
	var iv int64
	if ip != "" {
		for i := 0; i < len(ip); i++ {
			if !isDigit(ip[i]) {
				return 0, 0, false
			}
		}
		v, err := strconv.ParseInt(ip, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		iv = v
	}
	var fv float64
	if hasFrac && fp != "" {
		for i := 0; i < len(fp); i++ {
			if !isDigit(fp[i]) {
				return 0, 0, false
			}
		}
		fv, _ = strconv.ParseFloat("0."+fp, 64)
	}
	if neg {
		iv, fv = -iv, -fv
	}
	return iv, fv, true
}

// ParseInterval parses interval input.
func ParseInterval(s string) (Interval, error) {
	bad := func() (Interval, error) {
		return Interval{}, pgerror.New(pgerror.CodeInvalidDatetimeFormat, "invalid input syntax for type interval: \"%s\"", s)
	}
	fieldOverflow := func() (Interval, error) {
		return Interval{}, pgerror.New("22015", "interval field value out of range: \"%s\"", s)
	}
	in := strings.ToLower(strings.TrimSpace(s))
	if strings.HasPrefix(in, "p") {
		acc, ok := parseISOInterval(in[1:])
		if !ok {
			return bad()
		}
		return acc.result()
	}
	// Lex: numbers (with sign, fraction, ':' or '-' inside), words.
	type tok struct {
		s      string
		isWord bool
	}
	var toks []tok
	for i := 0; i < len(in); {
		c := in[i]
		switch {
		case isSpace(c) || c == ',' || c == '@':
			i++
		case isDigit(c) || c == '+' || c == '-' || c == '.':
			j := i + 1
			for j < len(in) && (isDigit(in[j]) || in[j] == '.' || in[j] == ':' || in[j] == '-') {
				j++
			}
			toks = append(toks, tok{s: in[i:j]})
			i = j
		case isLetter(c):
			j := i
			for j < len(in) && isLetter(in[j]) {
				j++
			}
			toks = append(toks, tok{s: in[i:j], isWord: true})
			i = j
		default:
			return bad()
		}
	}
	if len(toks) == 0 {
		return bad()
	}
	var acc ivAcc
	mask := 0
	ago := false
	unit := -1        // the unit of the number to the left, -1 for none yet
	implicit := false // unit came from a time field, not a word
	use := func(bit int) bool {
		if mask&bit != 0 {
			return false
		}
		mask |= bit
		return true
	}
	// Right to left, as PostgreSQL: a word gives the unit of the number
	// before it; a time field makes the number before it days; a number
	// without a unit is seconds.
	for i := len(toks) - 1; i >= 0; i-- {
		t := toks[i]
		if t.isWord {
			if t.s == "ago" {
				if i != len(toks)-1 || ago {
					return bad()
				}
				ago = true
				continue
			}
			u, ok := intervalUnits[t.s]
			if !ok || (unit != -1 && !implicit) {
				return bad()
			}
			unit, implicit = u, false
			continue
		}
		switch {
		case strings.Contains(t.s, ":"):
			if unit != -1 && !implicit {
				return bad()
			}
			us, ok, overflow := parseIntervalTime(t.s)
			if overflow && !ok && us == -1 {
				return bad()
			}
			if overflow {
				return fieldOverflow()
			}
			if !ok || !use(fmHour|fmMinute|fmSecond) {
				return bad()
			}
			acc.addMicros(us)
			unit, implicit = fmDay, true
		case strings.Count(strings.TrimLeft(t.s, "+-"), "-") == 1 && (unit == -1 || implicit):
			// SQL standard year-month: 1-2
			neg := strings.HasPrefix(t.s, "-")
			ys, ms, _ := strings.Cut(strings.TrimLeft(t.s, "+-"), "-")
			y, e1 := strconv.ParseInt(ys, 10, 64)
			m, e2 := strconv.ParseInt(ms, 10, 64)
			if e1 != nil || e2 != nil || !use(fmYear|fmMonth) {
				return bad()
			}
			if m > 11 {
				return fieldOverflow()
			}
			v := y*12 + m
			if neg {
				v = -v
			}
			acc.months += v
		default:
			iv, fv, ok := splitNumber(t.s)
			if !ok {
				return bad()
			}
			if iv > math.MaxInt32 || iv < math.MinInt32 {
				return fieldOverflow()
			}
			u := unit
			if u == -1 {
				u = fmSecond
			}
			if !use(u) {
				return bad()
			}
			acc.apply(u, iv, fv)
			unit, implicit = -1, false
		}
		if acc.overflow {
			return fieldOverflow()
		}
	}
	if unit != -1 && !implicit {
		// a unit word with no number before it
		return bad()
	}
	if ago {
		acc.months, acc.days, acc.usInt = -acc.months, -acc.days, -acc.usInt
	}
	return acc.result()
}

func (a *ivAcc) result() (Interval, error) {
	if a.overflow || a.months > math.MaxInt32 || a.months < math.MinInt32 || a.days > math.MaxInt32 || a.days < math.MinInt32 {
		return Interval{}, pgerror.New(pgerror.CodeDatetimeFieldOverflow, "interval out of range")
	}
	return Interval{Months: int32(a.months), Days: int32(a.days), Micros: a.usInt}, nil
}

// parseIntervalTime parses [+-]h:m[:s[.f]] (or m:s.f) into microseconds.
func parseIntervalTime(s string) (us int64, ok, overflow bool) {
	neg := false
	if s[0] == '+' || s[0] == '-' {
		neg = s[0] == '-'
		s = s[1:]
	}
	parts := strings.Split(s, ":")
	if len(parts) > 3 {
		return 0, false, false
	}
	var h, m int64
	var sec int64
	var err error
	if h, err = strconv.ParseInt(parts[0], 10, 64); err != nil {
		return 0, false, false
	}
	if len(parts) == 2 && strings.Contains(parts[1], ".") {
		// mm:ss.fff
		m = h
		h = 0
		v, ok := parseSecondsUs(parts[1])
		if !ok {
			return 0, false, false
		}
		sec = v
	} else {
		if m, err = strconv.ParseInt(parts[1], 10, 64); err != nil {
			return 0, false, false
		}
		if len(parts) == 3 {
			v, ok := parseSecondsUs(parts[2])
			if !ok {
				return 0, false, false
			}
			sec = v
		}
	}
	if m > 59 || sec >= 60*usPerSec || m < 0 || h < 0 {
		return 0, false, true
	}
	hu, of := mulOverflow(h, usPerHour)
	if of {
		return -1, false, true
	}
	us, of = addOverflow(hu, m*usPerMin+sec)
	if of || (neg && us == math.MinInt64) {
		return -1, false, true
	}
	if neg {
		us = -us
	}
	return us, true, false
}

// parseISOInterval parses the part after "P" of ISO 8601 "format with
// designators" (P1Y2M3DT4H5M6.5S, P1W) or "alternative format"
// (P0001-02-03T04:05:06).
func parseISOInterval(s string) (ivAcc, bool) {
	var acc ivAcc
	if s == "" {
		return acc, false
	}
	datePart, timePart, hasT := strings.Cut(s, "t")
	if strings.Contains(datePart, "-") && len(datePart) >= 4 && isDigit(datePart[0]) && !strings.ContainsAny(datePart, "ymwd") {
		// alternative format
		p := strings.Split(datePart, "-")
		if len(p) != 3 {
			return acc, false
		}
		var v [3]int64
		for i := range p {
			x, err := strconv.ParseInt(p[i], 10, 64)
			if err != nil {
				return acc, false
			}
			v[i] = x
		}
		acc.months = v[0]*12 + v[1]
		acc.days = v[2]
		if hasT {
			us, ok, _ := parseIntervalTime(timePart)
			if !ok {
				return acc, false
			}
			acc.addMicros(us)
		}
		return acc, true
	}
	parse := func(part string, inTime bool) bool {
		for part != "" {
			j := 0
			for j < len(part) && (isDigit(part[j]) || part[j] == '.' || part[j] == '-' || part[j] == '+') {
				j++
			}
			if j == 0 || j == len(part) {
				return false
			}
			iv, fv, ok := splitNumber(part[:j])
			if !ok {
				return false
			}
			var unit int
			switch part[j] {
			case 'y':
				unit = fmYear
			case 'm':
				unit = fmMonth
				if inTime {
					unit = fmMinute
				}
			case 'w':
				unit = fmWeek
			case 'd':
				unit = fmDay
			case 'h':
				unit = fmHour
			case 's':
				unit = fmSecond
			default:
				return false
			}
			if inTime != (unit == fmHour || unit == fmMinute || unit == fmSecond) {
				return false
			}
			acc.apply(unit, iv, fv)
			part = part[j+1:]
		}
		return true
	}
	if !parse(datePart, false) {
		return acc, false
	}
	if hasT && !parse(timePart, true) {
		return acc, false
	}
	return acc, true
}
