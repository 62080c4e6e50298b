package types

import (
	"math"
	"strconv"
	"time"
)

// Calendar arithmetic as PostgreSQL does it (date2j/j2date, proleptic
// Gregorian, astronomical years: year 0 is 1 BC), and the formatting of
// dates, times and timestamps in DateStyle ISO.

// Special values. PostgreSQL stores ±infinity dates as INT32_MIN/MAX and
// timestamps as INT64_MIN/MAX.
const (
	DateNegInfinity      = math.MinInt32
	DatePosInfinity      = math.MaxInt32
	TimestampNegInfinity = math.MinInt64
	TimestampPosInfinity = math.MaxInt64
)

const (
	usPerSec  = int64(1000000)
	usPerMin  = 60 * usPerSec
	usPerHour = 60 * usPerMin
	usPerDay  = 24 * usPerHour

	// postgresEpochJDate is date2j(2000, 1, 1).
	postgresEpochJDate = 2451545
	// unixEpochJDate is date2j(1970, 1, 1).
	unixEpochJDate = 2440588
	// PGEpochUnixMicros is 2000-01-01 00:00:00 UTC in Unix microseconds.
	PGEpochUnixMicros = int64(postgresEpochJDate-unixEpochJDate) * usPerDay

	// Range limits (PostgreSQL's datetime.h): dates from 4714-11-24 BC
	// (Julian day 0) to 5874897-12-31, timestamps to 294276-12-31.
	minDate        = -postgresEpochJDate                            // Julian day 0
	endDate        = 2147483494 - postgresEpochJDate                // date2j(5874898, 1, 1), exclusive
	minTimestampUs = -int64(postgresEpochJDate) * usPerDay          // Julian day 0
	endTimestampUs = int64(109203528-postgresEpochJDate) * usPerDay // date2j(294277, 1, 1), exclusive
)

func date2j(y, m, d int) int {
	if m > 2 {
		m++
		y += 4800
	} else {
		m += 13
		y += 4799
	}
	century := y / 100
	julian := y*365 - 32167
	julian += y/4 - century + century/4
	julian += 7834*m/256 + d
	return julian
}

func j2date(jd int) (year, month, day int) {
	julian := uint32(jd)
	julian += 32044
	quad := julian / 146097
	extra := (julian-quad*146097)*4 + 3
	julian += 60 + quad*3 + extra/146097
	quad = julian / 1461
	julian -= quad * 1461
	y := int(julian * 4 / 1461)
	if y != 0 {
		julian = (julian+305)%365 + 123
	} else {
		julian = (julian+306)%366 + 123
	}
	y += int(quad * 4)
	year = y - 4800
	quad = julian * 2141 / 65536
	day = int(julian - 7834*quad/256)
	month = int((quad+10)%12 + 1)
	return
}

// DateFromYMD returns the date (days since 2000-01-01) of an astronomical
// year, month and day.
func DateFromYMD(y, m, d int) int64 { return int64(date2j(y, m, d) - postgresEpochJDate) }

// YMDFromDate is the inverse of DateFromYMD.
func YMDFromDate(days int64) (y, m, d int) { return j2date(int(days) + postgresEpochJDate) }

var daysInMonth = [2][13]int{
	{0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31},
	{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31},
}

func isLeap(y int) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func monthDays(y, m int) int {
	if isLeap(y) {
		return daysInMonth[1][m]
	}
	return daysInMonth[0][m]
}

// floorDiv returns a/b rounded towards minus infinity, and the remainder.
func floorDiv(a, b int64) (int64, int64) {
	q, r := a/b, a%b
	if r < 0 {
		q--
		r += b
	}
	return q, r
}

// SplitTimestamp splits microseconds since 2000-01-01 into the date (days)
// and the microseconds into that day.
func SplitTimestamp(us int64) (days, timeUs int64) { return floorDiv(us, usPerDay) }

func appendPad(buf []byte, v int64, width int) []byte {
	s := strconv.FormatInt(v, 10)
	for i := len(s); i < width; i++ {
		buf = append(buf, '0')
	}
	return append(buf, s...)
}

// appendYMD appends YYYY-MM-DD of an astronomical year, returning whether
// the year is BC (the caller appends " BC" at the end).
func appendYMD(buf []byte, y, m, d int) ([]byte, bool) {
	bc := false
	if y <= 0 {
		bc = true
		y = -y + 1
	}
	buf = appendPad(buf, int64(y), 4)
	buf = append(buf, '-')
	buf = appendPad(buf, int64(m), 2)
	buf = append(buf, '-')
	buf = appendPad(buf, int64(d), 2)
	return buf, bc
}

// appendTimeOfDay appends HH:MM:SS[.ffffff] with trailing zeros of the
// fraction removed.
func appendTimeOfDay(buf []byte, us int64) []byte {
	h := us / usPerHour
	us -= h * usPerHour
	m := us / usPerMin
	us -= m * usPerMin
	buf = appendPad(buf, h, 2)
	buf = append(buf, ':')
	buf = appendPad(buf, m, 2)
	buf = append(buf, ':')
	return appendSeconds(buf, us)
}

// appendSeconds appends SS[.ffffff] of a non-negative microsecond count
// below one minute (or any count: the seconds are not wrapped).
func appendSeconds(buf []byte, us int64) []byte {
	buf = appendPad(buf, us/usPerSec, 2)
	if f := us % usPerSec; f != 0 {
		s := []byte(strconv.FormatInt(f+usPerSec, 10)[1:])
		for s[len(s)-1] == '0' {
			s = s[:len(s)-1]
		}
		buf = append(buf, '.')
		buf = append(buf, s...)
	}
	return buf
}

// AppendDate appends a date as date_out prints it.
func AppendDate(buf []byte, days int64) []byte {
	switch days {
	case DateNegInfinity:
		return append(buf, "-infinity"...)
	case DatePosInfinity:
		return append(buf, "infinity"...)
	}
	y, m, d := YMDFromDate(days)
	buf, bc := appendYMD(buf, y, m, d)
	if bc {
		buf = append(buf, " BC"...)
	}
	return buf
}

// AppendTime appends a time of day as time_out prints it.
func AppendTime(buf []byte, us int64) []byte { return appendTimeOfDay(buf, us) }

// AppendTimestamp appends a timestamp as timestamp_out prints it, or, when
// loc is non-nil, a timestamptz as timestamptz_out prints it in that zone.
func AppendTimestamp(buf []byte, us int64, loc *time.Location) []byte {
	return appendTimestamp(buf, us, loc, false)
}

// appendTimestamp is AppendTimestamp, or (xsd) in the XSD form of JSON:
// a T between date and time, the offset with its minutes (+01:00).
func appendTimestamp(buf []byte, us int64, loc *time.Location, xsd bool) []byte {
	switch us {
	case TimestampNegInfinity:
		return append(buf, "-infinity"...)
	case TimestampPosInfinity:
		return append(buf, "infinity"...)
	}
	off := 0
	if loc != nil {
		off = zoneOffset(us, loc)
		us += int64(off) * usPerSec
	}
	days, tod := SplitTimestamp(us)
	y, m, d := YMDFromDate(days)
	buf, bc := appendYMD(buf, y, m, d)
	if xsd {
		buf = append(buf, 'T')
	} else {
		buf = append(buf, ' ')
	}
	buf = appendTimeOfDay(buf, tod)
	if loc != nil {
		buf = appendOffset(buf, off)
		if xsd && off%3600 == 0 {
			buf = append(buf, ":00"...)
		}
	}
	if bc {
		buf = append(buf, " BC"...)
	}
	return buf
}

// appendOffset appends a UTC offset in seconds east as +HH, +HH:MM or
// +HH:MM:SS.
func appendOffset(buf []byte, off int) []byte {
	if off < 0 {
		buf = append(buf, '-')
		off = -off
	} else {
		buf = append(buf, '+')
	}
	buf = appendPad(buf, int64(off/3600), 2)
	if off%3600 != 0 {
		buf = append(buf, ':')
		buf = appendPad(buf, int64(off/60%60), 2)
		if off%60 != 0 {
			buf = append(buf, ':')
			buf = appendPad(buf, int64(off%60), 2)
		}
	}
	return buf
}

// zoneOffset returns loc's UTC offset (seconds east) at the instant us
// (microseconds since 2000-01-01 UTC).
func zoneOffset(us int64, loc *time.Location) int {
	secs, _ := floorDiv(us, usPerSec)
	_, off := time.Unix(secs+PGEpochUnixMicros/usPerSec, 0).In(loc).Zone()
	return off
}

// localToUTCOffset returns the offset to subtract from a local time
// (seconds since 2000-01-01, as if UTC) to get UTC in loc, resolving a
// daylight-saving gap or overlap as PostgreSQL does: in a spring-forward
// gap the offset before the transition, in a fall-back overlap the offset
// after it.
func localToUTCOffset(localSecs int64, loc *time.Location) int {
	const day = 86400
	unix := localSecs + PGEpochUnixMicros/usPerSec
	_, before := time.Unix(unix-2*day, 0).In(loc).Zone()
	_, after := time.Unix(unix+2*day, 0).In(loc).Zone()
	if before == after {
		// No transition nearby (or a round trip): the offset at the
		// guessed instant is right unless the guess crossed one.
		_, o := time.Unix(unix-int64(before), 0).In(loc).Zone()
		return o
	}
	_, end := time.Unix(unix-2*day, 0).In(loc).ZoneBounds()
	if end.IsZero() {
		return before
	}
	boundary := end.Unix()
	bt, at := unix-int64(before), unix-int64(after)
	switch {
	case bt < boundary && at < boundary:
		return before
	case bt >= boundary && at >= boundary:
		return after
	case bt > at:
		return before
	}
	return after
}
