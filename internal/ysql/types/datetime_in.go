package types

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// Parsing of date, time, timestamp and timestamptz input, after
// PostgreSQL's ParseDateTime/DecodeDateTime with DateStyle ISO, MDY: ISO
// dates (2024-03-05, 20240305), M/D/Y, month names (Jan 8 1999, 8-Jan-1999,
// January 8, 1999), Julian days (J2451187), times with fractions and
// AM/PM, the ISO "T" separator, zone offsets (+05, +0530, -8:00, Z), zone
// abbreviations (PST, EST, UTC...) and names (America/New_York), BC/AD and
// the special words epoch, infinity, -infinity, allballs, and now, today,
// tomorrow and yesterday (relative to the time given to ParseTextAt, the
// wall clock otherwise).

type dtKind uint8

const (
	dkNumber dtKind = iota // digits, maybe with a fraction
	dkDate                 // digits/letters joined by - / .
	dkTime                 // digits joined by :
	dkString               // letters (maybe a zone name with / _ + -)
	dkTZ                   // +hh[:mm[:ss]] or -hh...
	dkJulian               // J2451187
)

type dtToken struct {
	kind dtKind
	s    string // lower-cased
	orig string // as written (zone names are case-sensitive on disk)
}

// dtFields is the decoded input.
type dtFields struct {
	year, month, day        int
	hasYear, hasMon, hasDay bool
	bc                      bool
	hour, min, sec          int
	us                      int64
	hasTime                 bool
	ampm                    int // 0 none, 1 am, 2 pm
	tzOff                   int // seconds east of UTC
	hasTZ                   bool
	loc                     *time.Location
	special                 string // epoch, infinity, -infinity
	julian                  int
	hasJulian               bool
	twoDigitYear            bool
}

type dtError struct {
	tzRange  bool // time zone displacement out of range (22009)
	overflow bool // date/time field value out of range (22008)
	hint     bool // with the DateStyle hint
	tz       string
}

func (e *dtError) pg(typeName, input string) *pgerror.Error {
	if e.tz != "" {
		return pgerror.New(pgerror.CodeInvalidParameterValue, "time zone \"%s\" not recognized", e.tz)
	}
	if e.tzRange {
		return pgerror.New("22009", "time zone displacement out of range: \"%s\"", input)
	}
	if e.overflow {
		pe := pgerror.New(pgerror.CodeDatetimeFieldOverflow, "date/time field value out of range: \"%s\"", input)
		if e.hint {
			pe.Hint = "Perhaps you need a different \"datestyle\" setting."
		}
		return pe
	}
	return pgerror.New(pgerror.CodeInvalidDatetimeFormat, "invalid input syntax for type %s: \"%s\"", typeName, input)
}

var errBadFormat = &dtError{}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func tokenizeDateTime(in string) ([]dtToken, *dtError) {
	var toks []dtToken
	s := in
	lower := strings.ToLower(in)
	i, n := 0, len(s)
	add := func(k dtKind, start, end int) {
		toks = append(toks, dtToken{kind: k, s: lower[start:end], orig: s[start:end]})
	}
	for i < n {
		c := lower[i]
		switch {
		case isSpace(c) || c == ',':
			i++
		case isDigit(c):
			start := i
			for i < n && isDigit(lower[i]) {
				i++
			}
			if i < n && lower[i] == ':' {
				for i < n && (isDigit(lower[i]) || lower[i] == ':' || lower[i] == '.') {
					i++
				}
				add(dkTime, start, i)
			} else if i < n && (lower[i] == '-' || lower[i] == '/' || lower[i] == '.') {
				sep := lower[i]
				if sep == '.' {
					// 12.5 is a number; 1999.01.08 a date.
					j := i + 1
					for j < n && isDigit(lower[j]) {
						j++
					}
					if j < n && lower[j] == '.' {
						for i < n && (isDigit(lower[i]) || lower[i] == '.') {
							i++
						}
						add(dkDate, start, i)
					} else {
						i = j
						add(dkNumber, start, i)
					}
					continue
				}
				for i < n && (isDigit(lower[i]) || isLetter(lower[i]) || lower[i] == sep) {
					if lower[i] == 't' && i+1 < n && isDigit(lower[i+1]) {
						break // ISO 8601 "T" before the time
					}
					i++
				}
				add(dkDate, start, i)
			} else {
				add(dkNumber, start, i)
			}
		case c == '.':
			// a bare fraction: ".5"
			start := i
			i++
			for i < n && isDigit(lower[i]) {
				i++
			}
			add(dkNumber, start, i)
		case isLetter(c):
			start := i
			if c == 'j' && i+1 < n && isDigit(lower[i+1]) {
				i++
				for i < n && isDigit(lower[i]) {
					i++
				}
				toks = append(toks, dtToken{kind: dkJulian, s: lower[start+1 : i]})
				continue
			}
			if c == 't' && i+1 < n && isDigit(lower[i+1]) && len(toks) > 0 {
				i++ // ISO 8601 date/time separator
				continue
			}
			for i < n && isLetter(lower[i]) {
				i++
			}
			if i < n && isDigit(lower[i]) {
				// POSIX-style zone names: EST5EDT, Etc/GMT+5 is handled below.
				j := i
				for j < n && (isLetter(lower[j]) || isDigit(lower[j])) {
					j++
				}
				if _, ok := LoadZone(s[start:j]); ok {
					i = j
				}
			}
			if i < n && (lower[i] == '-' || lower[i] == '.') && i+1 < n && isDigit(lower[i+1]) && monthNum(lower[start:i]) > 0 {
				// Jan-08-1999
				sep := lower[i]
				for i < n && (isDigit(lower[i]) || isLetter(lower[i]) || lower[i] == sep) {
					i++
				}
				add(dkDate, start, i)
				continue
			}
			if i < n && (lower[i] == '/' || lower[i] == '_') {
				for i < n && (isLetter(lower[i]) || isDigit(lower[i]) || strings.IndexByte("/_+-", lower[i]) >= 0) {
					i++
				}
			}
			if i < n && lower[i] == '.' {
				i++ // "a.m.", "Jan." and the like
				for i < n && (isLetter(lower[i]) || lower[i] == '.') {
					i++
				}
			}
			add(dkString, start, i)
		case c == '+' || c == '-':
			start := i
			i++
			if i < n && isDigit(lower[i]) {
				for i < n && (isDigit(lower[i]) || lower[i] == ':' || lower[i] == '.') {
					i++
				}
				add(dkTZ, start, i)
			} else if i < n && isLetter(lower[i]) {
				for i < n && isLetter(lower[i]) {
					i++
				}
				add(dkString, start, i)
			} else {
				return nil, errBadFormat
			}
		default:
			return nil, errBadFormat
		}
	}
	return toks, nil
}

var monthNames = []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
var fullMonthNames = []string{"january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"}

func monthNum(s string) int {
	s = strings.TrimSuffix(s, ".")
	for i := range monthNames {
		if s == monthNames[i] || s == fullMonthNames[i] {
			return i + 1
		}
	}
	if s == "sept" {
		return 9
	}
	return 0
}

var dayNames = map[string]bool{
	"sun": true, "mon": true, "tue": true, "tues": true, "wed": true, "wednes": true, "thu": true, "thur": true, "thurs": true, "fri": true, "sat": true,
	"sunday": true, "monday": true, "tuesday": true, "wednesday": true, "thursday": true, "friday": true, "saturday": true,
}

// tzAbbrevs is a subset of PostgreSQL's "Default" timezone abbreviation
// set (seconds east of UTC).
var tzAbbrevs = map[string]int{
	"utc": 0, "gmt": 0, "ut": 0, "z": 0, "zulu": 0, "wet": 0, "bst": 3600, "west": 3600,
	"cet": 3600, "cest": 7200, "met": 3600, "mest": 7200, "eet": 7200, "eest": 10800,
	"msk": 10800, "ist": 7200, "jst": 32400, "kst": 32400, "hkt": 28800, "sgt": 28800,
	"awst": 28800, "acst": 34200, "acdt": 37800, "aest": 36000, "aedt": 39600,
	"nzst": 43200, "nzdt": 46800,
	"est": -18000, "edt": -14400, "cst": -21600, "cdt": -18000, "mst": -25200, "mdt": -21600,
	"pst": -28800, "pdt": -25200, "akst": -32400, "akdt": -28800, "hst": -36000,
	"ast": -14400, "adt": -10800, "nst": -12600, "ndt": -9000,
}

var (
	zoneIndexOnce sync.Once
	zoneIndex     map[string]string // lower-case name -> name on disk
)

// LoadZone resolves a time zone name case-insensitively, as PostgreSQL
// does: IANA names (America/New_York), UTC/GMT and the abbreviations of the
// default set. nil, false when unknown.
func LoadZone(name string) (*time.Location, bool) {
	lower := strings.ToLower(name)
	if lower == "utc" || lower == "gmt" || lower == "z" || lower == "zulu" || lower == "ut" || lower == "etc/utc" {
		return time.UTC, true
	}
	if loc, err := time.LoadLocation(name); err == nil && name != "" && name != "Local" {
		return loc, true
	}
	zoneIndexOnce.Do(buildZoneIndex)
	if real, ok := zoneIndex[lower]; ok {
		if loc, err := time.LoadLocation(real); err == nil {
			return loc, true
		}
	}
	// Title-case each component: america/new_york -> America/New_York.
	parts := strings.Split(lower, "/")
	for i, p := range parts {
		words := strings.Split(p, "_")
		for j, w := range words {
			if w != "" {
				words[j] = strings.ToUpper(w[:1]) + w[1:]
			}
		}
		parts[i] = strings.Join(words, "_")
	}
	if loc, err := time.LoadLocation(strings.Join(parts, "/")); err == nil {
		return loc, true
	}
	if off, ok := tzAbbrevs[lower]; ok {
		return time.FixedZone(strings.ToUpper(name), off), true
	}
	return nil, false
}

func buildZoneIndex() {
	zoneIndex = map[string]string{}
	root := "/usr/share/zoneinfo"
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		zoneIndex[strings.ToLower(rel)] = rel
		return nil
	})
}

// parseDateTimeFields decodes date/time input. forTime is set for the time
// type (a lone number is then hhmmss, not a date).
func parseDateTimeFields(in string, forTime bool) (*dtFields, *dtError) {
	f := &dtFields{}
	trimmed := strings.ToLower(strings.TrimSpace(in))
	switch trimmed {
	case "epoch", "infinity", "+infinity", "-infinity", "now", "today", "tomorrow", "yesterday":
		f.special = strings.TrimPrefix(trimmed, "+")
		return f, nil
	case "allballs":
		f.hasTime = true
		f.hasTZ = true
		return f, nil
	}
	toks, err := tokenizeDateTime(in)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, errBadFormat
	}
	for ti := 0; ti < len(toks); ti++ {
		t := toks[ti]
		switch t.kind {
		case dkTime:
			if f.hasTime {
				return nil, errBadFormat
			}
			if err := f.decodeTime(t.s); err != nil {
				return nil, err
			}
		case dkDate:
			if f.hasYear || f.hasMon || f.hasDay {
				return nil, errBadFormat
			}
			if err := f.decodeDate(t.s); err != nil {
				return nil, err
			}
		case dkJulian:
			v, e := strconv.Atoi(t.s)
			if e != nil {
				return nil, errBadFormat
			}
			f.julian, f.hasJulian = v, true
			y, m, d := j2date(v)
			f.year, f.month, f.day = y, m, d
			f.hasYear, f.hasMon, f.hasDay = true, true, true
		case dkTZ:
			if f.hasTZ {
				return nil, errBadFormat
			}
			// "2024-03-05 -8" and also "1999-01-08 04:05:06-08"
			off, ok := parseTZOffset(t.s)
			if !ok {
				return nil, errBadFormat
			}
			if off > 15*3600 || off < -15*3600 {
				return nil, &dtError{tzRange: true}
			}
			f.tzOff, f.hasTZ = off, true
		case dkNumber:
			if err := f.decodeNumber(t.s, forTime, ti+1 < len(toks) && toks[ti+1].kind == dkTime); err != nil {
				return nil, err
			}
		case dkString:
			s := strings.TrimSuffix(t.s, ".")
			switch {
			case monthNum(s) > 0 && !f.hasMon:
				f.month, f.hasMon = monthNum(s), true
			case dayNames[s]:
			case s == "am" || s == "a.m":
				f.ampm = 1
			case s == "pm" || s == "p.m":
				f.ampm = 2
			case s == "bc" || s == "b.c":
				f.bc = true
			case s == "ad" || s == "a.d":
			case s == "at" || s == "on":
			default:
				if f.hasTZ {
					return nil, errBadFormat
				}
				if off, ok := tzAbbrevs[s]; ok {
					f.tzOff, f.hasTZ = off, true
					continue
				}
				if !strings.ContainsAny(s, "/_") && len(s) < 3 {
					return nil, errBadFormat
				}
				loc, ok := LoadZone(t.orig)
				if !ok {
					if strings.Contains(s, "/") {
						return nil, &dtError{tz: t.s}
					}
					return nil, errBadFormat
				}
				f.loc, f.hasTZ = loc, true
			}
		}
	}
	if f.ampm != 0 {
		if !f.hasTime || f.hour > 12 || f.hour < 0 {
			return nil, &dtError{overflow: true}
		}
		if f.ampm == 1 && f.hour == 12 {
			f.hour = 0
		} else if f.ampm == 2 && f.hour != 12 {
			f.hour += 12
		}
	}
	if f.hasYear {
		if f.bc {
			if f.year <= 0 {
				return nil, &dtError{overflow: true}
			}
			f.year = -(f.year - 1)
		} else if f.twoDigitYear {
			if f.year < 70 {
				f.year += 2000
			} else if f.year < 100 {
				f.year += 1900
			}
		}
	}
	return f, nil
}

func parseTZOffset(s string) (int, bool) {
	sign := 1
	if s[0] == '-' {
		sign = -1
	}
	s = s[1:]
	var h, m, sec int
	var err error
	if strings.Contains(s, ":") {
		parts := strings.Split(s, ":")
		if len(parts) > 3 {
			return 0, false
		}
		vals := make([]int, 3)
		for i, p := range parts {
			if vals[i], err = strconv.Atoi(p); err != nil || p == "" {
				return 0, false
			}
		}
		h, m, sec = vals[0], vals[1], vals[2]
	} else {
		if strings.Contains(s, ".") {
			return 0, false
		}
		v, err := strconv.Atoi(s)
		if err != nil {
			return 0, false
		}
		switch {
		case len(s) <= 2:
			h = v
		case len(s) <= 4:
			h, m = v/100, v%100
		case len(s) <= 6:
			h, m, sec = v/10000, v/100%100, v%100
		default:
			return 0, false
		}
	}
	if m >= 60 || sec >= 60 {
		return 0, false
	}
	return sign * (h*3600 + m*60 + sec), true
}

func (f *dtFields) decodeTime(s string) *dtError {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return errBadFormat
	}
	h, err := strconv.Atoi(parts[0])
	if err != nil {
		return errBadFormat
	}
	var m int
	var us int64
	if len(parts) == 2 && strings.Contains(parts[1], ".") {
		// mm:ss.fff is not allowed for timestamps; PostgreSQL reads
		// hh:mm only. Treat "12:34.5" as a bad format.
		return errBadFormat
	}
	if m, err = strconv.Atoi(parts[1]); err != nil || parts[1] == "" {
		return errBadFormat
	}
	if len(parts) == 3 {
		v, ok := parseSecondsUs(parts[2])
		if !ok {
			return errBadFormat
		}
		us = v
	}
	if h < 0 || h > 24 || m < 0 || m > 59 || us < 0 || us > 60*usPerSec || (h == 24 && (m > 0 || us > 0)) {
		return &dtError{overflow: true}
	}
	f.hour, f.min, f.sec, f.us = h, m, int(us/usPerSec), us%usPerSec
	f.hasTime = true
	return nil
}

// parseSecondsUs parses SS[.fffffffff] into microseconds, rounding the
// fraction to the nearest microsecond (half away from zero, as rint on a
// positive value does... PostgreSQL uses rint: half to even).
func parseSecondsUs(s string) (int64, bool) {
	intPart, frac, _ := strings.Cut(s, ".")
	if intPart == "" && frac == "" {
		return 0, false
	}
	var sec int64
	if intPart != "" {
		v, err := strconv.ParseInt(intPart, 10, 64)
		if err != nil || v < 0 {
			return 0, false
		}
		sec = v
	}
	us := int64(0)
	if frac != "" {
		for _, c := range frac {
			if c < '0' || c > '9' {
				return 0, false
			}
		}
		fv, err := strconv.ParseFloat("0."+frac, 64)
		if err != nil {
			return 0, false
		}
		us = int64(math.RoundToEven(fv * 1e6))
	}
	return sec*usPerSec + us, true
}

func (f *dtFields) decodeDate(s string) *dtError {
	var sep string
	for _, c := range []string{"-", "/", "."} {
		if strings.Contains(s, c) {
			sep = c
			break
		}
	}
	parts := strings.Split(s, sep)
	if len(parts) != 3 {
		if len(parts) == 2 && sep == "-" {
			// "Jan-1999"? Not supported.
			return errBadFormat
		}
		return errBadFormat
	}
	// Month names anywhere.
	var nums []string
	for _, p := range parts {
		if p == "" {
			return errBadFormat
		}
		if isLetter(p[0]) {
			m := monthNum(p)
			if m == 0 || f.hasMon {
				return errBadFormat
			}
			f.month, f.hasMon = m, true
			continue
		}
		for i := 0; i < len(p); i++ {
			if !isDigit(p[i]) {
				return errBadFormat
			}
		}
		nums = append(nums, p)
	}
	atoi := func(p string) int { v, _ := strconv.Atoi(p); return v }
	if f.hasMon {
		if len(nums) != 2 {
			return errBadFormat
		}
		// 08-Jan-1999 (D-Mon-Y) or 1999-Jan-08 (Y-Mon-D)
		if len(nums[0]) >= 3 {
			f.setYear(nums[0])
			f.day = atoi(nums[1])
		} else {
			f.day = atoi(nums[0])
			f.setYear(nums[1])
		}
		f.hasDay = true
		return f.checkDate()
	}
	if len(parts[0]) >= 3 {
		// Y-M-D
		f.setYear(parts[0])
		f.month, f.day = atoi(parts[1]), atoi(parts[2])
	} else {
		// M-D-Y (DateStyle MDY)
		f.month, f.day = atoi(parts[0]), atoi(parts[1])
		f.setYear(parts[2])
	}
	f.hasMon, f.hasDay = true, true
	return f.checkDate()
}

func (f *dtFields) setYear(p string) {
	v, _ := strconv.Atoi(p)
	f.year, f.hasYear = v, true
	f.twoDigitYear = len(p) <= 2
}

func (f *dtFields) checkDate() *dtError {
	if f.month < 1 || f.month > 12 {
		return &dtError{overflow: true, hint: true}
	}
	if f.day < 1 || f.day > 31 {
		return &dtError{overflow: true, hint: true}
	}
	return nil
}

func (f *dtFields) decodeNumber(s string, forTime, beforeTime bool) *dtError {
	if strings.Contains(s, ".") {
		if strings.HasPrefix(s, ".") && f.hasTime {
			return errBadFormat
		}
		// yyyymmdd.hhmmss? Not supported; a bare fraction isn't either.
		return errBadFormat
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return errBadFormat
	}
	haveDate := f.hasYear && f.hasMon && f.hasDay
	switch {
	case !haveDate && !f.hasMon && !f.hasDay && !f.hasYear && len(s) == 8 && !forTime:
		f.year, f.month, f.day = v/10000, v/100%100, v%100
		f.hasYear, f.hasMon, f.hasDay = true, true, true
		return f.checkDate()
	case !haveDate && !f.hasMon && !f.hasYear && len(s) == 6 && !forTime:
		f.year, f.month, f.day = v/10000, v/100%100, v%100
		f.hasYear, f.hasMon, f.hasDay = true, true, true
		f.twoDigitYear = true
		return f.checkDate()
	case (haveDate || forTime) && !f.hasTime && (len(s) == 6 || len(s) == 4):
		if len(s) == 4 {
			v *= 100
		}
		f.hour, f.min, f.sec = v/10000, v/100%100, v%100
		f.hasTime = true
		if f.hour > 24 || f.min > 59 || f.sec > 60 {
			return &dtError{overflow: true}
		}
		return nil
	case f.hasMon && !f.hasDay && len(s) <= 2:
		f.day, f.hasDay = v, true
		if v < 1 || v > 31 {
			return &dtError{overflow: true}
		}
		return nil
	case !f.hasMon && !f.hasDay && len(s) <= 2:
		// 8 Jan 1999: day before the month name
		f.day, f.hasDay = v, true
		if v < 1 || v > 31 {
			return &dtError{overflow: true}
		}
		return nil
	case !f.hasYear:
		f.setYear(s)
		return nil
	}
	_ = beforeTime
	return errBadFormat
}

// finish validates the date part and returns the date in days; needDate
// makes a missing date an error.
func (f *dtFields) date() (int64, *dtError) {
	if !f.hasYear || !f.hasMon || !f.hasDay {
		return 0, errBadFormat
	}
	if f.year == 0 && !f.bc && !f.hasJulian {
		// Year 0 does not exist (PostgreSQL: "date/time field value out of range").
		return 0, &dtError{overflow: true}
	}
	if f.day > monthDays(f.year, f.month) {
		return 0, &dtError{overflow: true}
	}
	return DateFromYMD(f.year, f.month, f.day), nil
}

func (f *dtFields) timeUs() int64 {
	return int64(f.hour)*usPerHour + int64(f.min)*usPerMin + int64(f.sec)*usPerSec + f.us
}

// nowRelative returns the local and UTC microseconds of now, today,
// tomorrow or yesterday in loc.
func nowRelative(special string, now time.Time, loc *time.Location) (local, utc int64) {
	if loc == nil {
		loc = time.UTC
	}
	nowUs := now.UnixMicro() - PGEpochUnixMicros
	local = TimestampTZToLocal(nowUs, loc)
	if special == "now" {
		return local, nowUs
	}
	days, _ := SplitTimestamp(local)
	switch special {
	case "tomorrow":
		days++
	case "yesterday":
		days--
	}
	local = days * usPerDay
	return local, TimestampToTZ(local, loc)
}

// ParseDate parses date input ('today' and 'now' by the wall clock in UTC).
func ParseDate(s string) (int64, error) { return parseDateAt(s, time.Now(), time.UTC) }

func parseDateAt(s string, now time.Time, loc *time.Location) (int64, error) {
	f, e := parseDateTimeFields(s, false)
	if e != nil {
		return 0, e.pg("date", s)
	}
	switch f.special {
	case "now", "today", "tomorrow", "yesterday":
		local, _ := nowRelative(f.special, now, loc)
		days, _ := SplitTimestamp(local)
		return days, nil
	case "epoch":
		return DateFromYMD(1970, 1, 1), nil
	case "infinity":
		return DatePosInfinity, nil
	case "-infinity":
		return DateNegInfinity, nil
	}
	d, e := f.date()
	if e != nil {
		return 0, e.pg("date", s)
	}
	if d < minDate || d >= endDate {
		return 0, pgerror.New(pgerror.CodeDatetimeFieldOverflow, "date out of range: \"%s\"", s)
	}
	return d, nil
}

// ParseTime parses time input (a date and a zone are accepted and ignored).
func ParseTime(s string) (int64, error) { return parseTimeAt(s, time.Now(), time.UTC) }

func parseTimeAt(s string, now time.Time, loc *time.Location) (int64, error) {
	f, e := parseDateTimeFields(s, true)
	if e != nil {
		return 0, e.pg("time", s)
	}
	if f.special == "now" {
		local, _ := nowRelative("now", now, loc)
		_, tod := SplitTimestamp(local)
		return tod, nil
	}
	if f.special != "" || !f.hasTime {
		return 0, errBadFormat.pg("time", s)
	}
	if f.hasYear || f.hasMon || f.hasDay {
		if _, e := f.date(); e != nil {
			return 0, e.pg("time", s)
		}
	}
	return f.timeUs(), nil
}

// ParseTimestamp parses timestamp input; with tz set it is timestamptz
// input, and a local time without zone is read in loc.
func ParseTimestamp(s string, tz bool, loc *time.Location) (int64, error) {
	return parseTimestampAt(s, tz, loc, time.Now())
}

func parseTimestampAt(s string, tz bool, loc *time.Location, now time.Time) (int64, error) {
	typeName := "timestamp"
	if tz {
		typeName = "timestamp with time zone"
	}
	f, e := parseDateTimeFields(s, false)
	if e != nil {
		return 0, e.pg(typeName, s)
	}
	switch f.special {
	case "epoch":
		return -PGEpochUnixMicros, nil
	case "infinity":
		return TimestampPosInfinity, nil
	case "-infinity":
		return TimestampNegInfinity, nil
	case "now", "today", "tomorrow", "yesterday":
		local, utc := nowRelative(f.special, now, loc)
		if tz {
			return utc, nil
		}
		return local, nil
	}
	d, e := f.date()
	if e != nil {
		return 0, e.pg(typeName, s)
	}
	if d < minDate || d >= endDate {
		return 0, pgerror.New(pgerror.CodeDatetimeFieldOverflow, "timestamp out of range: \"%s\"", s)
	}
	us := d*usPerDay + f.timeUs()
	if tz {
		var off int
		switch {
		case f.loc != nil:
			off = localToUTCOffset(floorDivSecs(us), f.loc)
		case f.hasTZ:
			off = f.tzOff
		case loc != nil:
			off = localToUTCOffset(floorDivSecs(us), loc)
		}
		us -= int64(off) * usPerSec
	}
	if us < minTimestampUs || us >= endTimestampUs {
		return 0, pgerror.New(pgerror.CodeDatetimeFieldOverflow, "timestamp out of range: \"%s\"", s)
	}
	return us, nil
}

func floorDivSecs(us int64) int64 {
	q, _ := floorDiv(us, usPerSec)
	return q
}
