package builtins

import (
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/ysql/types"
)

type pgAggCase struct {
	typ     string
	vals    []string
	call    string
	rtyp    string
	out     string
	errCode string
}

// TestAggregatesAgainstPostgres runs each aggregate over the rows in one
// state, and split in two at every point with the second half shipped
// through MarshalBinary/Unmarshal and merged, as tablets' partial
// aggregates are.
func TestAggregatesAgainstPostgres(t *testing.T) {
	for _, c := range pgAggCases {
		typ, err := types.ParseType(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		name, argStr, _ := strings.Cut(strings.TrimSuffix(c.call, ")"), "(")
		star := argStr == "*"
		var argTypes []types.T
		var delim types.Datum
		if !star {
			argTypes = []types.T{typ}
			if _, d, ok := strings.Cut(argStr, ", "); ok {
				argTypes = append(argTypes, types.TUnknown)
				if d == "NULL" {
					delim = types.NullDatum
				} else {
					delim = types.DString(strings.Trim(d, "'"))
				}
			}
		}
		agg, err := LookupAggregate(name, argTypes, star)
		if err != nil {
			t.Errorf("%s: %v", c.call, err)
			continue
		}
		var rows [][]types.Datum
		for _, v := range c.vals {
			d := types.NullDatum
			if v != "NULL" {
				if d, err = types.ParseText(v, typ, time.UTC); err != nil {
					t.Fatal(err)
				}
			}
			row := []types.Datum{d}
			if len(argTypes) == 2 {
				row = append(row, delim)
			}
			rows = append(rows, row)
		}
		if got := types.FormatType(agg.Result.OID, -1); got != c.rtyp {
			t.Errorf("%s(%s): result type %s, want %s", c.call, c.typ, got, c.rtyp)
		}
		for split := 0; split <= len(rows); split++ {
			out, err := runSplit(agg, rows, split)
			if err != nil {
				t.Fatalf("%s: %v", c.call, err)
			}
			// Floating-point addition is not associative: a partial sum
			// merged may differ in the last place, as with PostgreSQL's
			// parallel aggregation.
			if out != c.out && agg.Result.Family() == types.FamFloat && split != 0 && split != len(rows) && closeFloats(out, c.out) {
				continue
			}
			if out != c.out {
				t.Errorf("%s over %s %v (split %d): got %q, want %q", c.call, c.typ, c.vals, split, out, c.out)
			}
		}
	}
}

func TestAggregateLookupErrors(t *testing.T) {
	if _, err := LookupAggregate("sum", []types.T{types.TText}, false); err == nil || err.Error() != "function sum(text) does not exist" {
		t.Errorf("sum(text): %v", err)
	}
	if _, err := LookupAggregate("sum", nil, true); err == nil {
		t.Error("sum(*) accepted")
	}
	a, err := LookupAggregate("sum", []types.T{types.TUnknown}, false)
	if err == nil {
		t.Errorf("sum('1') resolved to %v; PostgreSQL says it is not unique", a.Args)
	}
	if !IsAggregate("COUNT") || IsAggregate("lower") {
		t.Error("IsAggregate")
	}
}
