package builtins

import (
	"math"
	"strings"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

const (
	usPerSec  = int64(1000000)
	usPerMin  = 60 * usPerSec
	usPerHour = 60 * usPerMin
	usPerDay  = 24 * usPerHour
)

func errTimestampRange() *pgerror.Error {
	return pgerror.New(pgerror.CodeDatetimeFieldOverflow, "timestamp out of range")
}

func errDateRange() *pgerror.Error {
	return pgerror.New(pgerror.CodeDatetimeFieldOverflow, "date out of range")
}

func errIntervalRange() *pgerror.Error {
	return pgerror.New(pgerror.CodeDatetimeFieldOverflow, "interval out of range")
}

func isInfTS(us int64) bool {
	return us == types.TimestampNegInfinity || us == types.TimestampPosInfinity
}

func isInfDate(d int64) bool { return d == types.DateNegInfinity || d == types.DatePosInfinity }

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// validTS checks PostgreSQL's timestamp range (4714-11-24 BC to 294276).
func validTS(us int64) bool {
	const minTS = -int64(2451545) * 86400000000
	const endTS = int64(109203528-2451545) * 86400000000
	return us >= minTS && us < endTS
}

// TimestampPlusInterval is timestamp + interval (timestamptz + interval
// when loc is set): generate_series over timestamps steps with it.
func TimestampPlusInterval(us int64, iv types.Interval, loc *time.Location) (int64, error) {
	return tsPlusInterval(us, iv, loc)
}

// tsPlusInterval adds an interval to a timestamp (local when loc is nil,
// else a timestamptz whose months and days are added in loc's calendar).
func tsPlusInterval(us int64, iv types.Interval, loc *time.Location) (int64, error) {
	if isInfTS(us) {
		return us, nil
	}
	if iv.Months != 0 || iv.Days != 0 {
		local := us
		if loc != nil {
			local = types.TimestampTZToLocal(us, loc)
		}
		days, tod := types.SplitTimestamp(local)
		y, m, d := types.YMDFromDate(days)
		if iv.Months != 0 {
			total := int64(y)*12 + int64(m-1) + int64(iv.Months)
			y = int(floorDivI(total, 12))
			m = int(total-int64(y)*12) + 1
			if dm := daysIn(y, m); d > dm {
				d = dm
			}
		}
		days = types.DateFromYMD(y, m, d) + int64(iv.Days)
		local = days*usPerDay + tod
		if !validTS(local) {
			return 0, errTimestampRange()
		}
		if loc != nil {
			us = types.TimestampToTZ(local, loc)
		} else {
			us = local
		}
	}
	r, of := addInt(us, iv.Micros)
	if of || !validTS(r) {
		return 0, errTimestampRange()
	}
	return r, nil
}

func floorDivI(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func negInterval(iv types.Interval) (types.Interval, error) {
	if iv.Months == math.MinInt32 || iv.Days == math.MinInt32 || iv.Micros == math.MinInt64 {
		return types.Interval{}, errIntervalRange()
	}
	return types.Interval{Months: -iv.Months, Days: -iv.Days, Micros: -iv.Micros}, nil
}

// justifyHours moves whole days out of the time part (interval_justify_hours).
func justifyHours(iv types.Interval) types.Interval {
	days := iv.Micros / usPerDay
	iv.Micros -= days * usPerDay
	iv.Days += int32(days)
	if iv.Days > 0 && iv.Micros < 0 {
		iv.Micros += usPerDay
		iv.Days--
	} else if iv.Days < 0 && iv.Micros > 0 {
		iv.Micros -= usPerDay
		iv.Days++
	}
	return iv
}

func tsMinusTS(a, b int64) (types.Datum, error) {
	if isInfTS(a) || isInfTS(b) {
		return types.NullDatum, pgerror.New(pgerror.CodeDatetimeFieldOverflow, "cannot subtract infinite timestamps")
	}
	d, of := subInt(a, b)
	if of {
		return types.NullDatum, errIntervalRange()
	}
	return types.DInterval(justifyHours(types.Interval{Micros: d})), nil
}

func ivAdd(a, b types.Interval) (types.Interval, error) {
	m := int64(a.Months) + int64(b.Months)
	d := int64(a.Days) + int64(b.Days)
	us, of := addInt(a.Micros, b.Micros)
	if of || m > math.MaxInt32 || m < math.MinInt32 || d > math.MaxInt32 || d < math.MinInt32 {
		return types.Interval{}, errIntervalRange()
	}
	return types.Interval{Months: int32(m), Days: int32(d), Micros: us}, nil
}

func tsRound(x float64) float64 { return math.RoundToEven(x*1e6) / 1e6 }

// ivMul is interval_mul: fractional months and days cascade down.
func ivMul(iv types.Interval, factor float64) (types.Interval, error) {
	if math.IsNaN(factor) {
		return types.Interval{}, errIntervalRange()
	}
	rm := float64(iv.Months) * factor
	rd := float64(iv.Days) * factor
	if rm > math.MaxInt32 || rm < math.MinInt32 || rd > math.MaxInt32 || rd < math.MinInt32 {
		return types.Interval{}, errIntervalRange()
	}
	r := types.Interval{Months: int32(rm), Days: int32(rd)}
	monthRemDays := (float64(iv.Months)*factor - float64(r.Months)) * 30
	monthRemDays = tsRound(monthRemDays)
	secRem := (float64(iv.Days)*factor - float64(r.Days) + monthRemDays - math.Trunc(monthRemDays)) * 86400
	secRem = tsRound(secRem)
	if math.Abs(secRem) >= 86400 {
		r.Days += int32(secRem / 86400)
		secRem -= math.Trunc(secRem/86400) * 86400
	}
	r.Days += int32(monthRemDays)
	t := math.RoundToEven(float64(iv.Micros)*factor + secRem*1e6)
	if math.IsNaN(t) || t >= 9.2233720368547758e18 || t < -9.2233720368547758e18 {
		return types.Interval{}, errIntervalRange()
	}
	r.Micros = int64(t)
	return r, nil
}

func addDateTimeOps() {
	loc := func(ctx *EvalContext) *time.Location { return ctx.loc() }
	// date ± integer, date - date
	addOp("+", tDate, tI4, tDate, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) { return datePlus(a.I, b.I) })
	addOp("+", tI4, tDate, tDate, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) { return datePlus(b.I, a.I) })
	addOp("-", tDate, tI4, tDate, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) { return datePlus(a.I, -b.I) })
	addOp("-", tDate, tDate, tI4, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		if isInfDate(a.I) || isInfDate(b.I) {
			return types.NullDatum, pgerror.New(pgerror.CodeDatetimeFieldOverflow, "cannot subtract infinite dates")
		}
		return types.DInt(a.I - b.I), nil
	})
	// date + time -> timestamp
	addOp("+", tDate, tTime, tTS, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		if isInfDate(a.I) {
			return types.DMicros(dateToTS(a.I)), nil
		}
		return types.DMicros(a.I*usPerDay + b.I), nil
	})
	addOp("+", tTime, tDate, tTS, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		if isInfDate(b.I) {
			return types.DMicros(dateToTS(b.I)), nil
		}
		return types.DMicros(b.I*usPerDay + a.I), nil
	})
	// date ± interval -> timestamp
	addOp("+", tDate, tIv, tTS, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		r, err := tsPlusInterval(dateToTS(a.I), b.Iv, nil)
		return types.DMicros(r), err
	})
	addOp("+", tIv, tDate, tTS, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		r, err := tsPlusInterval(dateToTS(b.I), a.Iv, nil)
		return types.DMicros(r), err
	})
	addOp("-", tDate, tIv, tTS, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		n, err := negInterval(b.Iv)
		if err != nil {
			return types.NullDatum, err
		}
		r, err := tsPlusInterval(dateToTS(a.I), n, nil)
		return types.DMicros(r), err
	})
	// timestamp(tz) ± interval, timestamp(tz) - timestamp(tz)
	for _, tt := range []types.T{tTS, tTSTZ} {
		tz := tt == tTSTZ
		zone := func(ctx *EvalContext) *time.Location {
			if tz {
				return loc(ctx)
			}
			return nil
		}
		tt := tt
		addOp("+", tt, tIv, tt, func(ctx *EvalContext, a, b types.Datum) (types.Datum, error) {
			r, err := tsPlusInterval(a.I, b.Iv, zone(ctx))
			return types.DMicros(r), err
		})
		addOp("+", tIv, tt, tt, func(ctx *EvalContext, a, b types.Datum) (types.Datum, error) {
			r, err := tsPlusInterval(b.I, a.Iv, zone(ctx))
			return types.DMicros(r), err
		})
		addOp("-", tt, tIv, tt, func(ctx *EvalContext, a, b types.Datum) (types.Datum, error) {
			n, err := negInterval(b.Iv)
			if err != nil {
				return types.NullDatum, err
			}
			r, err := tsPlusInterval(a.I, n, zone(ctx))
			return types.DMicros(r), err
		})
		addOp("-", tt, tt, tIv, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) { return tsMinusTS(a.I, b.I) })
	}
	// time ± interval, time - time
	addOp("+", tTime, tIv, tTime, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		_, r := types.SplitTimestamp(a.I + b.Iv.Micros%usPerDay)
		return types.DMicros(r), nil
	})
	addOp("+", tIv, tTime, tTime, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		_, r := types.SplitTimestamp(b.I + a.Iv.Micros%usPerDay)
		return types.DMicros(r), nil
	})
	addOp("-", tTime, tIv, tTime, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		_, r := types.SplitTimestamp(a.I - b.Iv.Micros%usPerDay)
		return types.DMicros(r), nil
	})
	addOp("-", tTime, tTime, tIv, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		return types.DInterval(types.Interval{Micros: a.I - b.I}), nil
	})
	// interval arithmetic
	addOp("+", tIv, tIv, tIv, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		r, err := ivAdd(a.Iv, b.Iv)
		return types.DInterval(r), err
	})
	addOp("-", tIv, tIv, tIv, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		n, err := negInterval(b.Iv)
		if err != nil {
			return types.NullDatum, err
		}
		r, err := ivAdd(a.Iv, n)
		return types.DInterval(r), err
	})
	addOp("-", types.T{}, tIv, tIv, func(_ *EvalContext, _, b types.Datum) (types.Datum, error) {
		r, err := negInterval(b.Iv)
		return types.DInterval(r), err
	})
	addOp("+", types.T{}, tIv, tIv, func(_ *EvalContext, _, b types.Datum) (types.Datum, error) { return b, nil })
	addOp("*", tIv, tF8, tIv, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		r, err := ivMul(a.Iv, b.F)
		return types.DInterval(r), err
	})
	addOp("*", tF8, tIv, tIv, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		r, err := ivMul(b.Iv, a.F)
		return types.DInterval(r), err
	})
	addOp("/", tIv, tF8, tIv, func(_ *EvalContext, a, b types.Datum) (types.Datum, error) {
		if b.F == 0 {
			return types.NullDatum, errDivZero()
		}
		r, err := ivMul(a.Iv, 1/b.F)
		return types.DInterval(r), err
	})
}

func dateToTS(d int64) int64 {
	switch d {
	case types.DateNegInfinity:
		return types.TimestampNegInfinity
	case types.DatePosInfinity:
		return types.TimestampPosInfinity
	}
	return d * usPerDay
}

func datePlus(d, n int64) (types.Datum, error) {
	if isInfDate(d) {
		return types.DDate(d), nil
	}
	r := d + n
	const minDate, endDate = -2451545, 2147483494 - 2451545
	if r < minDate || r >= endDate {
		return types.NullDatum, errDateRange()
	}
	return types.DDate(r), nil
}

// fields of a local timestamp
type tsFields struct {
	year, month, day, hour, min, sec int
	us                               int64 // microseconds within the second
	days                             int64 // days since 2000-01-01
}

func splitTS(us int64) tsFields {
	days, tod := types.SplitTimestamp(us)
	y, m, d := types.YMDFromDate(days)
	return tsFields{year: y, month: m, day: d, hour: int(tod / usPerHour), min: int(tod / usPerMin % 60),
		sec: int(tod / usPerSec % 60), us: tod % usPerSec, days: days}
}

func (f tsFields) join() int64 {
	return types.DateFromYMD(f.year, f.month, f.day)*usPerDay + int64(f.hour)*usPerHour + int64(f.min)*usPerMin + int64(f.sec)*usPerSec + f.us
}

func typeLabel(t types.T) string { return t.String() }

// truncTimestamp is date_trunc on a local timestamp.
func truncTimestamp(unit string, us int64, t types.T) (int64, error) {
	if isInfTS(us) {
		return us, nil
	}
	f := splitTS(us)
	switch strings.ToLower(unit) {
	case "microseconds", "microsecond", "us", "usec", "usecs":
	case "milliseconds", "millisecond", "ms", "msec", "msecs":
		f.us = f.us / 1000 * 1000
	case "second", "seconds", "s", "sec", "secs":
		f.us = 0
	case "minute", "minutes", "m", "min", "mins":
		f.sec, f.us = 0, 0
	case "hour", "hours", "h", "hr", "hrs":
		f.min, f.sec, f.us = 0, 0, 0
	case "day", "days", "d":
		f.hour, f.min, f.sec, f.us = 0, 0, 0, 0
	case "week", "weeks", "w":
		// back to Monday
		dow := int((f.days%7 + 7 + 5) % 7) // 2000-01-01 was a Saturday: Monday=0
		days := f.days - int64(dow)
		return days * usPerDay, nil
	case "month", "months", "mon", "mons":
		f.day, f.hour, f.min, f.sec, f.us = 1, 0, 0, 0, 0
	case "quarter", "qtr":
		f.month = (f.month-1)/3*3 + 1
		f.day, f.hour, f.min, f.sec, f.us = 1, 0, 0, 0, 0
	case "year", "years", "y", "yr", "yrs":
		f.month, f.day, f.hour, f.min, f.sec, f.us = 1, 1, 0, 0, 0, 0
	case "decade", "decades", "dec", "decs":
		if f.year > 0 {
			f.year = f.year / 10 * 10
		} else {
			f.year = -((8 - (f.year - 1)) / 10 * 10)
		}
		f.month, f.day, f.hour, f.min, f.sec, f.us = 1, 1, 0, 0, 0, 0
	case "century", "centuries", "c", "cent":
		if f.year > 0 {
			f.year = (f.year+99)/100*100 - 99
		} else {
			f.year = -((99-(f.year-1))/100)*100 + 1
		}
		f.month, f.day, f.hour, f.min, f.sec, f.us = 1, 1, 0, 0, 0, 0
	case "millennium", "millennia", "mil", "mils":
		if f.year > 0 {
			f.year = (f.year+999)/1000*1000 - 999
		} else {
			f.year = -((999-(f.year-1))/1000)*1000 + 1
		}
		f.month, f.day, f.hour, f.min, f.sec, f.us = 1, 1, 0, 0, 0, 0
	default:
		return 0, pgerror.New(pgerror.CodeInvalidParameterValue, "unit \"%s\" not recognized for type %s", strings.ToLower(unit), typeLabel(t))
	}
	return f.join(), nil
}

func truncInterval(unit string, iv types.Interval) (types.Interval, error) {
	years := iv.Months / 12
	months := iv.Months % 12
	days := iv.Days
	t := iv.Micros
	h := t / usPerHour
	t -= h * usPerHour
	m := t / usPerMin
	t -= m * usPerMin
	s := t / usPerSec
	us := t % usPerSec
	mk := func(y, mo, d int32, hh, mm, ss, uu int64) types.Interval {
		return types.Interval{Months: y*12 + mo, Days: d, Micros: hh*usPerHour + mm*usPerMin + ss*usPerSec + uu}
	}
	switch strings.ToLower(unit) {
	case "microseconds", "microsecond", "us", "usec", "usecs":
		return iv, nil
	case "milliseconds", "millisecond", "ms", "msec", "msecs":
		return mk(years, months, days, h, m, s, us/1000*1000), nil
	case "second", "seconds", "s", "sec", "secs":
		return mk(years, months, days, h, m, s, 0), nil
	case "minute", "minutes", "m", "min", "mins":
		return mk(years, months, days, h, m, 0, 0), nil
	case "hour", "hours", "h", "hr", "hrs":
		return mk(years, months, days, h, 0, 0, 0), nil
	case "day", "days", "d":
		return mk(years, months, days, 0, 0, 0, 0), nil
	case "month", "months", "mon", "mons":
		return mk(years, months, 0, 0, 0, 0, 0), nil
	case "quarter", "qtr":
		return mk(years, months/3*3, 0, 0, 0, 0, 0), nil
	case "year", "years", "y", "yr", "yrs":
		return mk(years, 0, 0, 0, 0, 0, 0), nil
	case "decade", "decades", "dec", "decs":
		return mk(years/10*10, 0, 0, 0, 0, 0, 0), nil
	case "century", "centuries", "c", "cent":
		return mk(years/100*100, 0, 0, 0, 0, 0, 0), nil
	case "millennium", "millennia", "mil", "mils":
		return mk(years/1000*1000, 0, 0, 0, 0, 0, 0), nil
	case "week", "weeks", "w":
		return types.Interval{}, pgerror.New(pgerror.CodeFeatureNotSupported, "unit \"week\" not supported for type interval").
			WithDetail("Months usually have fractional weeks.")
	}
	return types.Interval{}, pgerror.New(pgerror.CodeInvalidParameterValue, "unit \"%s\" not recognized for type interval", strings.ToLower(unit))
}

// canonicalUnit maps a unit name and its abbreviations to one spelling.
func canonicalUnit(u string) string {
	switch strings.ToLower(u) {
	case "microseconds", "microsecond", "us", "usec", "usecs", "useconds":
		return "microseconds"
	case "milliseconds", "millisecond", "ms", "msec", "msecs", "mseconds":
		return "milliseconds"
	case "second", "seconds", "s", "sec", "secs":
		return "second"
	case "minute", "minutes", "m", "min", "mins":
		return "minute"
	case "hour", "hours", "h", "hr", "hrs":
		return "hour"
	case "day", "days", "d":
		return "day"
	case "week", "weeks", "w":
		return "week"
	case "month", "months", "mon", "mons":
		return "month"
	case "quarter", "qtr":
		return "quarter"
	case "year", "years", "y", "yr", "yrs":
		return "year"
	case "decade", "decades", "dec", "decs":
		return "decade"
	case "century", "centuries", "c", "cent":
		return "century"
	case "millennium", "millennia", "mil", "mils":
		return "millennium"
	}
	return strings.ToLower(u)
}

// numScaled returns v / 10^scale as a numeric with that scale.
func numScaled(v int64, scale int) *apd.Decimal {
	return apd.New(v, int32(-scale))
}

// extract returns the value of a date/time field as a numeric with
// PostgreSQL 15's extract() scale (date_part returns its float8).
func extract(unit string, d types.Datum, t types.T, loc *time.Location) (*apd.Decimal, error) {
	u := canonicalUnit(unit)
	notSupported := func() (*apd.Decimal, error) {
		return nil, pgerror.New(pgerror.CodeFeatureNotSupported, "unit \"%s\" not supported for type %s", strings.ToLower(unit), typeLabel(t))
	}
	notRecognized := func() (*apd.Decimal, error) {
		return nil, pgerror.New(pgerror.CodeInvalidParameterValue, "unit \"%s\" not recognized for type %s", strings.ToLower(unit), typeLabel(t))
	}
	switch t.OID {
	case types.OIDTime:
		sec := d.I % usPerMin
		switch u {
		case "microseconds":
			return numScaled(sec, 0), nil
		case "milliseconds":
			return numScaled(sec, 3), nil
		case "second":
			return numScaled(sec, 6), nil
		case "minute":
			return numScaled(d.I/usPerMin%60, 0), nil
		case "hour":
			return numScaled(d.I/usPerHour, 0), nil
		case "epoch":
			return numScaled(d.I, 6), nil
		case "day", "month", "year", "decade", "century", "millennium", "quarter", "week", "dow", "doy", "isodow", "isoyear", "julian":
			return notSupported()
		}
		return notRecognized()
	case types.OIDInterval:
		iv := d.Iv
		switch u {
		case "microseconds":
			return numScaled(iv.Micros%usPerMin, 0), nil
		case "milliseconds":
			return numScaled(iv.Micros%usPerMin, 3), nil
		case "second":
			return numScaled(iv.Micros%usPerMin, 6), nil
		case "minute":
			return numScaled(iv.Micros/usPerMin%60, 0), nil
		case "hour":
			return numScaled(iv.Micros/usPerHour, 0), nil
		case "day":
			return numScaled(int64(iv.Days), 0), nil
		case "month":
			return numScaled(int64(iv.Months%12), 0), nil
		case "quarter":
			return numScaled(int64(iv.Months%12/3+1), 0), nil
		case "year":
			return numScaled(int64(iv.Months/12), 0), nil
		case "decade":
			return numScaled(int64(iv.Months/120), 0), nil
		case "century":
			return numScaled(int64(iv.Months/1200), 0), nil
		case "millennium":
			return numScaled(int64(iv.Months/12000), 0), nil
		case "epoch":
			// 365.25 days a year, 30 days a month.
			secs := 31557600*int64(iv.Months/12) + 2592000*int64(iv.Months%12) + 86400*int64(iv.Days)
			r := new(apd.Decimal)
			_, _ = exact.Add(r, apd.New(secs, 0), numScaled(iv.Micros, 6))
			return types.RoundNumeric(r, 6), nil
		}
		if u == "week" || u == "dow" || u == "doy" || u == "isodow" || u == "isoyear" || u == "julian" || u == "timezone" {
			return notSupported()
		}
		return notRecognized()
	}
	// date, timestamp, timestamptz
	us := d.I
	isDate := t.OID == types.OIDDate
	if isDate {
		if isInfDate(d.I) {
			us = dateToTS(d.I)
		} else {
			us = d.I * usPerDay
		}
	}
	if isInfTS(us) {
		switch u {
		case "epoch", "year", "decade", "century", "millennium", "julian", "isoyear":
			return types.NumericInf(us == types.TimestampNegInfinity), nil
		}
		return nil, nil
	}
	local := us
	offset := 0
	if t.OID == types.OIDTimestampTZ {
		local = types.TimestampTZToLocal(us, loc)
		offset = int((local - us) / usPerSec)
	}
	f := splitTS(local)
	if isDate {
		switch u {
		case "microseconds", "milliseconds", "second", "minute", "hour":
			return notSupported()
		}
	}
	switch u {
	case "microseconds":
		return numScaled(int64(f.sec)*usPerSec+f.us, 0), nil
	case "milliseconds":
		return numScaled(int64(f.sec)*usPerSec+f.us, 3), nil
	case "second":
		return numScaled(int64(f.sec)*usPerSec+f.us, 6), nil
	case "minute":
		return numScaled(int64(f.min), 0), nil
	case "hour":
		return numScaled(int64(f.hour), 0), nil
	case "day":
		return numScaled(int64(f.day), 0), nil
	case "month":
		return numScaled(int64(f.month), 0), nil
	case "quarter":
		return numScaled(int64((f.month-1)/3+1), 0), nil
	case "year":
		y := f.year
		if y <= 0 {
			y--
		}
		return numScaled(int64(y), 0), nil
	case "decade":
		if f.year >= 0 {
			return numScaled(int64(f.year/10), 0), nil
		}
		return numScaled(-int64((8-(f.year-1))/10), 0), nil
	case "century":
		if f.year > 0 {
			return numScaled(int64((f.year+99)/100), 0), nil
		}
		return numScaled(-int64((99-(f.year-1))/100), 0), nil
	case "millennium":
		if f.year > 0 {
			return numScaled(int64((f.year+999)/1000), 0), nil
		}
		return numScaled(-int64((999-(f.year-1))/1000), 0), nil
	case "dow":
		return numScaled(int64((f.days%7+7+6)%7), 0), nil // 2000-01-01 was a Saturday (6)
	case "isodow":
		dow := (f.days%7 + 7 + 6) % 7
		if dow == 0 {
			dow = 7
		}
		return numScaled(dow, 0), nil
	case "doy":
		return numScaled(f.days-types.DateFromYMD(f.year, 1, 1)+1, 0), nil
	case "week":
		_, w := isoWeek(f.days)
		return numScaled(int64(w), 0), nil
	case "isoyear":
		y, _ := isoWeek(f.days)
		if y <= 0 {
			y--
		}
		return numScaled(int64(y), 0), nil
	case "julian":
		j := f.days + 2451545
		if isDate {
			return numScaled(j, 0), nil
		}
		// Julian day plus fraction of the (local) day.
		tod := local - f.days*usPerDay
		frac, err := numDiv(apd.New(tod, 0), apd.New(usPerDay, 0))
		if err != nil {
			return nil, err
		}
		return numAdd(apd.New(j, 0), frac)
	case "epoch":
		if isDate {
			return numScaled((d.I+10957)*86400, 0), nil
		}
		return numScaled(us+types.PGEpochUnixMicros, 6), nil
	case "timezone":
		if t.OID != types.OIDTimestampTZ {
			return notSupported()
		}
		return numScaled(int64(offset), 0), nil
	case "timezone_hour":
		if t.OID != types.OIDTimestampTZ {
			return notSupported()
		}
		return numScaled(int64(offset/3600), 0), nil
	case "timezone_minute":
		if t.OID != types.OIDTimestampTZ {
			return notSupported()
		}
		return numScaled(int64(offset/60%60), 0), nil
	}
	return notRecognized()
}

// isoWeek returns the ISO 8601 year and week of a date (days since 2000-01-01).
func isoWeek(days int64) (year, week int) {
	y, m, d := types.YMDFromDate(days)
	t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
	return t.ISOWeek()
}

// age is age(a, b): the symbolic difference in years, months, days.
func age(a, b int64) (types.Interval, error) {
	if isInfTS(a) || isInfTS(b) {
		return types.Interval{}, pgerror.New(pgerror.CodeDatetimeFieldOverflow, "cannot subtract infinite timestamps")
	}
	f1, f2 := splitTS(a), splitTS(b)
	us := f1.us - f2.us
	sec := f1.sec - f2.sec
	mn := f1.min - f2.min
	hr := f1.hour - f2.hour
	day := f1.day - f2.day
	mon := f1.month - f2.month
	yr := f1.year - f2.year
	neg := a < b
	if neg {
		us, sec, mn, hr, day, mon, yr = -us, -sec, -mn, -hr, -day, -mon, -yr
	}
	for us < 0 {
		us += usPerSec
		sec--
	}
	for sec < 0 {
		sec += 60
		mn--
	}
	for mn < 0 {
		mn += 60
		hr--
	}
	for hr < 0 {
		hr += 24
		day--
	}
	for day < 0 {
		if neg {
			day += daysIn(f1.year, f1.month)
		} else {
			day += daysIn(f2.year, f2.month)
		}
		mon--
	}
	for mon < 0 {
		mon += 12
		yr--
	}
	if neg {
		us, sec, mn, hr, day, mon, yr = -us, -sec, -mn, -hr, -day, -mon, -yr
	}
	return types.Interval{Months: int32(yr*12 + mon), Days: int32(day),
		Micros: int64(hr)*usPerHour + int64(mn)*usPerMin + int64(sec)*usPerSec + us}, nil
}
