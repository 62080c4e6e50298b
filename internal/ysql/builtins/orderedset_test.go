package builtins

import (
	"testing"

	"github.com/shaledb/shaledb/internal/ysql/types"
)

// TestOrderedSetFinals checks the final functions over sorted values
// against PostgreSQL 15's results for the same queries.
func TestOrderedSetFinals(t *testing.T) {
	f8 := func(fs ...float64) []types.Datum {
		var out []types.Datum
		for _, f := range fs {
			out = append(out, types.DFloat(f))
		}
		return out
	}
	cases := []struct {
		name   string
		direct []types.T
		sort   types.T
		args   []types.Datum
		vals   []types.Datum
		want   string
	}{
		// percentile_cont(0.5) WITHIN GROUP (ORDER BY x) over 1, 2, 4, 10
		{"percentile_cont", []types.T{tNum}, tI4, f8(0.5), f8(1, 2, 4, 10), "3"},
		// the same, 0.3 and ORDER BY x DESC
		{"percentile_cont", []types.T{tNum}, tI4, f8(0.3), f8(10, 4, 2, 1), "4.6000000000000005"},
		{"percentile_cont", []types.T{types.ArrayOf(tNum)}, tI4,
			[]types.Datum{types.DArray([]types.Datum{types.DFloat(0.1), types.NullDatum, types.DFloat(0.9)})}, f8(1, 2, 4, 10), "{1.3,NULL,8.200000000000001}"},
		{"percentile_disc", []types.T{tNum}, tText, f8(0.5), []types.Datum{types.DString("a"), types.DString("b")}, "a"},
		{"percentile_cont", []types.T{tNum}, tIv, f8(0.5),
			[]types.Datum{types.DInterval(types.Interval{Micros: 7200e6}), types.DInterval(types.Interval{Days: 1})}, "13:00:00"},
		{"percentile_cont", []types.T{tNum}, tF8, f8(0.5), nil, "<NULL>"},
		{"mode", nil, tI4, nil, []types.Datum{types.DInt(1), types.DInt(1), types.DInt(2), types.DInt(2)}, "1"},
	}
	for _, c := range cases {
		a, err := LookupOrderedSet(c.name, c.direct, []types.T{c.sort})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		d, err := a.Final(c.args, c.vals)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := "<NULL>"
		if !d.Null {
			s, err := types.Coerce(d, a.Result, types.TText, types.CastExplicit)
			if err != nil {
				t.Fatal(err)
			}
			got = s.S
		}
		if got != c.want {
			t.Errorf("%s(%v) over %v: got %s, want %s", c.name, c.args, c.vals, got, c.want)
		}
	}
	if _, err := LookupOrderedSet("percentile_cont", []types.T{tNum}, []types.T{tText}); err == nil || err.Error() != "function percentile_cont(numeric, text) does not exist" {
		t.Errorf("percentile_cont over text: %v", err)
	}
	a, _ := LookupOrderedSet("percentile_disc", []types.T{tF8}, []types.T{tI4})
	if _, err := a.Final(f8(2), f8(1)); err == nil || err.Error() != "percentile value 2 is not between 0 and 1" {
		t.Errorf("percentile 2: %v", err)
	}
}
