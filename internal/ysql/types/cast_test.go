package types

import (
	"errors"
	"testing"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

type pgCastCase struct {
	ctx                CastContext
	v, from, to, tz    string
	out, code, msg, dt string
}

func TestCastsAgainstPostgres(t *testing.T) {
	for _, c := range pgCastCases {
		from, err1 := ParseType(c.from)
		to, err2 := ParseType(c.to)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s/%s: %v %v", c.from, c.to, err1, err2)
		}
		loc, _ := LoadZone(c.tz)
		d, err := ParseText(c.v, from, loc)
		if err != nil {
			t.Fatalf("%q::%s: %v", c.v, c.from, err)
		}
		got, err := CoerceTZ(d, from, to, c.ctx, loc)
		name := c.v + "::" + c.from + " -> " + c.to
		if c.code != "" {
			var pe *pgerror.Error
			if !errors.As(err, &pe) || pe.Code != c.code || pe.Message != c.msg || pe.Detail != c.dt {
				t.Errorf("%s (%d): got %v, want %s %q (%q)", name, c.ctx, outOrErr(got, to, loc, err), c.code, c.msg, c.dt)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s (%d): %v, want %q", name, c.ctx, err, c.out)
			continue
		}
		if s := FormatText(got, to, loc); s != c.out {
			t.Errorf("%s (%d, %s): got %q, want %q", name, c.ctx, c.tz, s, c.out)
		}
	}
}

func TestCanCast(t *testing.T) {
	cases := []struct {
		from, to T
		ctx      CastContext
		want     bool
	}{
		{TInt4, TInt8, CastImplicit, true},
		{TInt8, TInt4, CastImplicit, false},
		{TInt8, TInt4, CastAssignment, true},
		{TFloat8, TNumeric, CastImplicit, false},
		{TNumeric, TFloat8, CastImplicit, true},
		{TInt4, TText, CastImplicit, false},
		{TInt4, TText, CastAssignment, true},
		{TText, TInt4, CastAssignment, false},
		{TText, TInt4, CastExplicit, true},
		{TUnknown, TDate, CastImplicit, true},
		{TDate, TTimestampTZ, CastImplicit, true},
		{TTimestampTZ, TDate, CastImplicit, false},
		{TBool, TInt4, CastAssignment, false},
		{TBool, TInt4, CastExplicit, true},
		{TInt4, TBool, CastExplicit, true},
		{TUUID, TInt4, CastExplicit, false},
		{TJSON, TJSONB, CastAssignment, true},
		{TVarchar, TText, CastImplicit, true},
		{TText, MakeVarchar(3), CastImplicit, true},
		{TBPChar, TText, CastImplicit, true},
		{TDate, TInt4, CastExplicit, false},
	}
	for _, c := range cases {
		if got := CanCast(c.from, c.to, c.ctx); got != c.want {
			t.Errorf("%s -> %s in %d: %v, want %v", c.from, c.to, c.ctx, got, c.want)
		}
	}
	if _, err := Coerce(DInt(1), TDate, TInt4, CastExplicit); pgerror.Code(err) != "42846" {
		t.Errorf("date -> integer: %v", err)
	}
	if d, err := Coerce(NullDatum, TText, TInt4, CastExplicit); err != nil || !d.Null {
		t.Errorf("NULL: %v %v", d, err)
	}
}
