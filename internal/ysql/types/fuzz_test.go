package types

import (
	"testing"
	"time"
)

var fuzzTypes = []T{TBool, TInt2, TInt4, TInt8, TOID, TFloat4, TFloat8, TNumeric, MakeNumeric(6, 2), TText, MakeVarchar(3), MakeBPChar(3),
	TName, TChar, TBytea, TDate, TTime, TTimestamp, TTimestampTZ, TInterval, TUUID, TJSON, TJSONB, TInt4Array, TTextArray}

// FuzzParseText feeds arbitrary input to every input function: no panics,
// and whatever is accepted prints to text that reads back equal.
func FuzzParseText(f *testing.F) {
	for _, c := range pgTextIOCases {
		typ, err := ParseType(c.typ)
		if err != nil {
			continue
		}
		for i, ft := range fuzzTypes {
			if ft.OID == typ.OID {
				f.Add(c.in, uint8(i))
				break
			}
		}
	}
	ny, _ := LoadZone("America/New_York")
	f.Fuzz(func(t *testing.T, s string, which uint8) {
		typ := fuzzTypes[int(which)%len(fuzzTypes)]
		for _, loc := range []*time.Location{time.UTC, ny} {
			d, err := ParseText(s, typ, loc)
			if err != nil {
				continue
			}
			out := FormatText(d, typ, loc)
			back, err := ParseText(out, typ, loc)
			if err != nil {
				t.Fatalf("%s: %q printed as %q which does not read back: %v", typ, s, out, err)
			}
			if Compare(back, d, typ) != 0 {
				t.Fatalf("%s: %q printed as %q which reads back as %q", typ, s, out, FormatText(back, typ, loc))
			}
			if b, err := EncodeBinary(d, typ); err == nil {
				bd, err := DecodeBinary(b, typ)
				if err != nil || Compare(bd, d, typ) != 0 {
					t.Fatalf("%s: %q binary round trip: %v", typ, s, err)
				}
			}
		}
	})
}

// FuzzParseInterval and FuzzParseTimestamp target the hand-written
// date/time lexers directly.
func FuzzParseInterval(f *testing.F) {
	for _, s := range []string{"1 year 2 mons", "P1Y2M3DT4H5M6.5S", "-1 -2:03", "1-2", "@ 1 minute ago", "2562047788:00:54.775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		iv, err := ParseInterval(s)
		if err != nil {
			return
		}
		out := string(AppendInterval(nil, iv))
		back, err := ParseInterval(out)
		if err != nil || back != iv {
			t.Fatalf("%q -> %+v printed %q -> %+v %v", s, iv, out, back, err)
		}
	})
}

func FuzzParseTimestamp(f *testing.F) {
	for _, s := range []string{"2024-03-05 01:02:03+05:30", "Jan 8 1999 04:05 PM", "J2451187", "19990108T040506", "1999-01-08 BC", "epoch"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		us, err := ParseTimestamp(s, true, time.UTC)
		if err != nil {
			return
		}
		out := string(AppendTimestamp(nil, us, time.UTC))
		back, err := ParseTimestamp(out, true, time.UTC)
		if err != nil || back != us {
			t.Fatalf("%q -> %d printed %q -> %d %v", s, us, out, back, err)
		}
	})
}
