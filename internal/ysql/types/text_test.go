package types

import (
	"errors"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

type pgTextIOCase struct {
	typ, in, tz   string
	out           string
	code, msg, dt string
}

// parseLiteral is what 'in'::typ does: the base type's input function,
// then the modifier applied as an explicit cast applies it.
func parseLiteral(in string, t T, loc *time.Location) (Datum, error) {
	base := T{t.OID, -1}
	if t.OID == OIDInterval {
		base = t
	}
	d, err := ParseText(in, base, loc)
	if err != nil {
		return d, err
	}
	return ApplyTypmod(d, t, true)
}

func TestTextIOAgainstPostgres(t *testing.T) {
	for _, c := range pgTextIOCases {
		typ, err := ParseType(c.typ)
		if err != nil {
			t.Fatalf("ParseType(%q): %v", c.typ, err)
		}
		loc, ok := LoadZone(c.tz)
		if !ok {
			t.Fatalf("zone %q", c.tz)
		}
		d, err := parseLiteral(c.in, typ, loc)
		if c.code != "" {
			var pe *pgerror.Error
			if !errors.As(err, &pe) {
				t.Errorf("%s %q (%s): got %v, want error %s %q", c.typ, c.in, c.tz, outOrErr(d, typ, loc, err), c.code, c.msg)
				continue
			}
			if pe.Code != c.code || pe.Message != c.msg || pe.Detail != c.dt {
				t.Errorf("%s %q (%s): error %s %q (%q), want %s %q (%q)", c.typ, c.in, c.tz, pe.Code, pe.Message, pe.Detail, c.code, c.msg, c.dt)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %q (%s): error %v, want %q", c.typ, c.in, c.tz, err, c.out)
			continue
		}
		if got := FormatText(d, typ, loc); got != c.out {
			t.Errorf("%s %q (%s): got %q, want %q", c.typ, c.in, c.tz, got, c.out)
			continue
		}
		// Output must read back to an equal value.
		if typ.OID != OIDName && typ.OID != OIDChar {
			back, err := ParseText(c.out, typ, loc)
			if err != nil {
				t.Errorf("%s: re-reading %q: %v", c.typ, c.out, err)
			} else if Compare(back, d, typ) != 0 {
				t.Errorf("%s: %q re-read as %q", c.typ, c.out, FormatText(back, typ, loc))
			}
		}
	}
}

func outOrErr(d Datum, t T, loc *time.Location, err error) string {
	if err != nil {
		return err.Error()
	}
	return FormatText(d, t, loc)
}

func TestNowRelativeInput(t *testing.T) {
	ny, _ := LoadZone("America/New_York")
	now := time.Date(2024, 3, 5, 3, 30, 0, 0, time.UTC) // 2024-03-04 22:30 in New York
	cases := []struct {
		in  string
		typ T
		out string
	}{
		{"now", TTimestampTZ, "2024-03-04 22:30:00-05"},
		{"today", TTimestampTZ, "2024-03-04 00:00:00-05"},
		{"tomorrow", TDate, "2024-03-05"},
		{"yesterday", TTimestamp, "2024-03-03 00:00:00"},
		{"now", TTime, "22:30:00"},
		{" Today ", TDate, "2024-03-04"},
	}
	for _, c := range cases {
		d, err := ParseTextAt(c.in, c.typ, ny, now)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got := FormatText(d, c.typ, ny); got != c.out {
			t.Errorf("%q::%s: got %q, want %q", c.in, c.typ, got, c.out)
		}
	}
}
