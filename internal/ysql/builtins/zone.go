package builtins

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// AT TIME ZONE (timezone()), date_bin, make_time/make_timestamp(tz),
// make_interval and the justify functions.

// ZoneByName resolves a time zone (a function's argument, SET TimeZone) as
// PostgreSQL does: names and abbreviations, else a POSIX offset ('+05:30'
// is 5:30 west of UTC).
func ZoneByName(name string) (*time.Location, error) {
	if loc, ok := types.LoadZone(name); ok {
		return loc, nil
	}
	if off, ok := posixOffset(strings.TrimLeft(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")); ok {
		return time.FixedZone(name, -off), nil // POSIX: UTC+3 is 3 hours west
	}
	return nil, pgerror.New(pgerror.CodeInvalidParameterValue, "time zone %q not recognized", name)
}

// SessionZone resolves SET TimeZone's value: as ZoneByName, except that a
// bare hour offset ('+03', '5') is east of UTC there, as PostgreSQL reads
// it ('+05:30' and 'UTC+3' stay POSIX: west).
func SessionZone(name string) (*time.Location, error) {
	if h, err := strconv.Atoi(strings.TrimPrefix(name, "+")); err == nil && h >= -15 && h <= 15 {
		return time.FixedZone(name, h*3600), nil
	}
	return ZoneByName(name)
}

// posixOffset parses [+-]hh[:mm[:ss]] into seconds.
func posixOffset(s string) (int, bool) {
	sign := 1
	switch {
	case strings.HasPrefix(s, "-"):
		sign, s = -1, s[1:]
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	}
	parts := strings.Split(s, ":")
	if len(parts) > 3 || s == "" {
		return 0, false
	}
	secs := 0
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || (i > 0 && v > 59) || len(p) > 2 && i > 0 {
			return 0, false
		}
		secs = secs*60 + v
	}
	for range 3 - len(parts) {
		secs *= 60
	}
	if secs > 15*3600+59*60+59 {
		return 0, false
	}
	return sign * secs, true
}

// intervalZone is AT TIME ZONE INTERVAL: a fixed offset east of UTC.
func intervalZone(iv types.Interval) (*time.Location, error) {
	if iv.Months != 0 || iv.Days != 0 {
		s := string(types.AppendInterval(nil, iv))
		return nil, pgerror.New(pgerror.CodeInvalidParameterValue, "interval time zone %q must not include months or days", s)
	}
	return time.FixedZone("", int(iv.Micros/usPerSec)), nil
}

// atTimeZone converts a timestamptz to local time in loc (toLocal) or a
// timestamp read as local time in loc to a timestamptz.
func atTimeZone(us int64, loc *time.Location, toLocal bool) (types.Datum, error) {
	if isInfTS(us) {
		return types.DMicros(us), nil
	}
	var r int64
	if toLocal {
		r = types.TimestampTZToLocal(us, loc)
	} else {
		r = types.TimestampToTZ(us, loc)
	}
	if !validTS(r) {
		return types.NullDatum, errTimestampRange()
	}
	return types.DMicros(r), nil
}

// ymdDays validates a year, month and day as make_date does (negative
// years are BC) and returns the date.
func ymdDays(y, m, d int64) (int64, error) {
	if y == 0 || m < 1 || m > 12 || d < 1 || y < -4713 || y > 5874897 {
		return 0, pgerror.New(pgerror.CodeDatetimeFieldOverflow, "date field value out of range: %d-%02d-%02d", y, m, d)
	}
	yy := int(y)
	if yy < 0 {
		yy++
	}
	if int(d) > daysIn(yy, int(m)) {
		return 0, pgerror.New(pgerror.CodeDatetimeFieldOverflow, "date field value out of range: %d-%02d-%02d", y, m, d)
	}
	return types.DateFromYMD(yy, int(m), int(d)), nil
}

// cG formats a float as C's %02g does in PostgreSQL's messages.
func cG(f float64) string {
	s := strconv.FormatFloat(f, 'g', 6, 64)
	if len(s) < 2 {
		s = "0" + s
	}
	return s
}

// hmsMicros is a time of day from make_time's fields; 24:00:00 is allowed.
func hmsMicros(h, m int64, sec float64) (int64, error) {
	if h < 0 || m < 0 || m > 59 || !(sec >= 0) || sec > 60 || h > 24 || h == 24 && (m > 0 || sec > 0) {
		return 0, pgerror.New(pgerror.CodeDatetimeFieldOverflow, "time field value out of range: %d:%02d:%s", h, m, cG(sec))
	}
	return (h*60+m)*usPerMin + int64(math.RoundToEven(sec*1e6)), nil
}

func makeTimestamp(a []types.Datum) (int64, error) {
	days, err := ymdDays(a[0].I, a[1].I, a[2].I)
	if err != nil {
		return 0, err
	}
	tod, err := hmsMicros(a[3].I, a[4].I, a[5].F)
	if err != nil {
		return 0, err
	}
	us := days*usPerDay + tod
	if !validTS(us) {
		return 0, pgerror.New(pgerror.CodeDatetimeFieldOverflow, "timestamp out of range: %d-%02d-%02d %d:%02d:%s",
			a[0].I, a[1].I, a[2].I, a[3].I, a[4].I, cG(a[5].F))
	}
	return us, nil
}

// dateBin is date_bin(stride, ts, origin): the start of the stride-wide
// bin, counted from origin, that ts falls in.
func dateBin(stride types.Interval, ts, origin int64) (types.Datum, error) {
	if isInfTS(ts) {
		return types.DMicros(ts), nil
	}
	if isInfTS(origin) {
		return types.NullDatum, pgerror.New(pgerror.CodeDatetimeFieldOverflow, "origin out of range")
	}
	if stride.Months != 0 {
		return types.NullDatum, pgerror.New(pgerror.CodeFeatureNotSupported, "timestamps cannot be binned into intervals containing months or years")
	}
	step, of := mulInt(int64(stride.Days), usPerDay)
	if !of {
		step, of = addInt(step, stride.Micros)
	}
	if of {
		return types.NullDatum, errIntervalRange()
	}
	if step <= 0 {
		return types.NullDatum, pgerror.New(pgerror.CodeDatetimeFieldOverflow, "stride must be greater than zero")
	}
	diff, of := subInt(ts, origin)
	if of {
		return types.NullDatum, errIntervalRange()
	}
	delta := diff - diff%step
	// PostgreSQL bins toward the origin's past for instants before it.
	if origin > ts && step > 1 && diff%step != 0 {
		delta -= step
	}
	r, of := addInt(origin, delta)
	if of || !validTS(r) {
		return types.NullDatum, errTimestampRange()
	}
	return types.DMicros(r), nil
}

// justifyDays moves whole 30-day months out of the days (interval_justify_days).
func justifyDays(iv types.Interval) (types.Interval, error) {
	m := int64(iv.Months) + int64(iv.Days/30)
	iv.Days %= 30
	if m > 0 && iv.Days < 0 {
		iv.Days += 30
		m--
	} else if m < 0 && iv.Days > 0 {
		iv.Days -= 30
		m++
	}
	if m != int64(int32(m)) {
		return iv, errIntervalRange()
	}
	iv.Months = int32(m)
	return iv, nil
}

// justifyInterval is justify_interval: days from the time, months from
// the days, with all parts of one sign.
func justifyInterval(iv types.Interval) (types.Interval, error) {
	m := int64(iv.Months) + int64(iv.Days/30)
	d := int64(iv.Days%30) + iv.Micros/usPerDay
	us := iv.Micros % usPerDay
	m += d / 30
	d %= 30
	if m > 0 && (d < 0 || d == 0 && us < 0) {
		d += 30
		m--
	} else if m < 0 && (d > 0 || d == 0 && us > 0) {
		d -= 30
		m++
	}
	if d > 0 && us < 0 {
		us += usPerDay
		d--
	} else if d < 0 && us > 0 {
		us -= usPerDay
		d++
	}
	if m != int64(int32(m)) {
		return iv, errIntervalRange()
	}
	return types.Interval{Months: int32(m), Days: int32(d), Micros: us}, nil
}

// makeInterval is make_interval(years, months, weeks, days, hours, mins,
// secs), each argument optional from the right.
func makeInterval(a []types.Datum) (types.Datum, error) {
	v := [6]int64{}
	for i := 0; i < 6 && i < len(a); i++ {
		v[i] = a[i].I
	}
	secs := 0.0
	if len(a) == 7 {
		secs = a[6].F
	}
	months := v[0]*12 + v[1]
	days := v[2]*7 + v[3]
	us := float64(v[4])*3600e6 + float64(v[5])*60e6 + math.RoundToEven(secs*1e6)
	if months != int64(int32(months)) || days != int64(int32(days)) || math.IsNaN(us) || math.Abs(us) >= 9.2e18 {
		return types.NullDatum, errIntervalRange()
	}
	return types.DInterval(types.Interval{Months: int32(months), Days: int32(days), Micros: int64(us)}), nil
}

func init() {
	byName := func(d types.Datum) (*time.Location, error) { return ZoneByName(d.S) }
	byInterval := func(d types.Datum) (*time.Location, error) { return intervalZone(d.Iv) }
	for _, z := range []struct {
		arg  types.T
		zone func(types.Datum) (*time.Location, error)
	}{{tText, byName}, {tIv, byInterval}} {
		for _, toLocal := range []bool{true, false} {
			from, to := tTS, tTSTZ
			if toLocal {
				from, to = tTSTZ, tTS
			}
			addFn("timezone", args(z.arg, from), to, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
				loc, err := z.zone(a[0])
				if err != nil {
					return types.NullDatum, err
				}
				return atTimeZone(a[1].I, loc, toLocal)
			})
		}
	}
	addFn("date_trunc", args(tText, tTSTZ, tText), tTSTZ, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		loc, err := ZoneByName(a[2].S)
		if err != nil {
			return types.NullDatum, err
		}
		return truncTimestampTZ(a[0].S, a[1].I, loc)
	})
	for _, t := range []types.T{tTS, tTSTZ} {
		addFn("date_bin", args(tIv, t, t), t, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
			return dateBin(a[0].Iv, a[1].I, a[2].I)
		})
	}
	addFn("make_time", args(tI4, tI4, tF8), tTime, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		us, err := hmsMicros(a[0].I, a[1].I, a[2].F)
		return types.DMicros(us), err
	})
	makeTS := args(tI4, tI4, tI4, tI4, tI4, tF8)
	addFn("make_timestamp", makeTS, tTS, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		us, err := makeTimestamp(a)
		return types.DMicros(us), err
	})
	addFn("make_timestamptz", makeTS, tTSTZ, func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
		us, err := makeTimestamp(a)
		if err != nil {
			return types.NullDatum, err
		}
		return atTimeZone(us, ctx.loc(), false)
	}).Stable = true
	addFn("make_timestamptz", append(makeTS, tText), tTSTZ, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		us, err := makeTimestamp(a)
		if err != nil {
			return types.NullDatum, err
		}
		loc, err := ZoneByName(a[6].S)
		if off, ok := posixOffset(a[6].S); ok && strings.ContainsAny(a[6].S[:1], "+-") {
			// A numeric zone here is ISO's: +2 is east of UTC.
			loc, err = time.FixedZone(a[6].S, off), nil
		}
		if err != nil {
			return types.NullDatum, err
		}
		return atTimeZone(us, loc, false)
	})
	ivArgs := args(tI4, tI4, tI4, tI4, tI4, tI4, tF8)
	for n := range len(ivArgs) + 1 {
		addFn("make_interval", ivArgs[:n], tIv, func(_ *EvalContext, a []types.Datum) (types.Datum, error) { return makeInterval(a) })
	}
	addFn("justify_days", args(tIv), tIv, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		r, err := justifyDays(a[0].Iv)
		return types.DInterval(r), err
	})
	addFn("justify_interval", args(tIv), tIv, func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		r, err := justifyInterval(a[0].Iv)
		return types.DInterval(r), err
	})
	// PostgreSQL 15 has no infinite intervals.
	addFn("isfinite", args(tIv), t16, func(_ *EvalContext, _ []types.Datum) (types.Datum, error) { return types.DBool(true), nil })
	addFn("localtime", nil, tTime, func(ctx *EvalContext, _ []types.Datum) (types.Datum, error) {
		_, tod := types.SplitTimestamp(types.TimestampTZToLocal(tsDatum(ctx.TxnTime).I, ctx.loc()))
		return types.DMicros(tod), nil
	}).Stable = true
	addFn("timeofday", nil, tText, func(ctx *EvalContext, _ []types.Datum) (types.Datum, error) {
		now := time.Now()
		if ctx != nil && ctx.Clock != nil {
			now = ctx.Clock()
		}
		return types.DString(now.In(ctx.loc()).Format("Mon Jan 02 15:04:05.000000 2006 MST")), nil
	}).Volatile = true
}
