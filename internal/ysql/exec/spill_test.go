package exec

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/cockroachdb/apd/v3"

	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// A run record gives back every field of every kind of datum: NULL,
// integers, floats (negative zero and NaN too), strings, bytes (empty and
// absent told apart), decimals with their scale, intervals, uuids and
// arrays of them.
func TestRunRecordRoundTrip(t *testing.T) {
	dec := func(s string) *apd.Decimal {
		d, _, err := apd.NewFromString(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	row := []types.Datum{
		types.NullDatum, {I: -7}, {I: math.MaxInt64}, {F: 1.5}, {F: math.Copysign(0, -1)}, {F: math.NaN()},
		{S: "héllo"}, {B: []byte{}}, {B: []byte{0, 1, 255}}, {D: dec("-123.4500")}, {D: dec("NaN")}, {D: dec("1E+40")},
		{Iv: types.Interval{Months: -3, Days: 40, Micros: 5}}, {U: [16]byte{1, 2, 3, 15: 9}},
		{A: []types.Datum{{I: 1}, types.NullDatum, {S: "x"}}}, {A: []types.Datum{}}, {I: 3, S: "both"},
	}
	kr := keyedRow{row: row, vals: []types.Datum{{S: "key"}, types.NullDatum}, seq: 12345}
	var got keyedRow
	if err := decodeKeyedRow(appendKeyedRow(nil, &kr), &got); err != nil {
		t.Fatal(err)
	}
	if got.seq != kr.seq || len(got.row) != len(row) || !reflect.DeepEqual(got.vals, kr.vals) {
		t.Fatalf("got %+v", got)
	}
	for i, d := range row {
		g := got.row[i]
		switch {
		case d.D != nil:
			if g.D == nil || g.D.String() != d.D.String() || g.D.Exponent != d.D.Exponent {
				t.Errorf("datum %d: decimal %v, want %v", i, g.D, d.D)
			}
		case math.IsNaN(d.F):
			if !math.IsNaN(g.F) {
				t.Errorf("datum %d: %v, want NaN", i, g.F)
			}
		case d.F == 0 && math.Signbit(d.F):
			if g.F != 0 || !math.Signbit(g.F) {
				t.Errorf("datum %d: %v, want -0", i, g.F)
			}
		default:
			if !reflect.DeepEqual(g, d) {
				t.Errorf("datum %d: %+v, want %+v", i, g, d)
			}
		}
	}
	// A cut or corrupt record is an error, not a panic.
	rec := appendKeyedRow(nil, &kr)
	for n := range rec {
		_ = decodeKeyedRow(rec[:n], &got)
	}
}

// An external sort gives the rows in the order of the in-memory stable
// sort, whatever work_mem makes it spill: nothing spilled, a few runs
// merged, and more runs than maxMergeWidth (merged in two passes). The
// run files are gone once the rows are out.
func TestExternalSortMatchesSort(t *testing.T) {
	int8T := types.T{OID: types.OIDInt8, Mod: -1}
	textT := types.T{OID: types.OIDText, Mod: -1}
	dir := t.TempDir()
	r := &runner{ec: &plan.EvalContext{}, s: &Session{e: &Engine{cfg: Config{TempDir: dir}}}}
	rng := rand.New(rand.NewSource(7))
	rows := make([]plan.Row, 30000)
	for i := range rows {
		a := types.Datum{I: int64(rng.Intn(50))}
		if rng.Intn(10) == 0 {
			a = types.NullDatum
		}
		rows[i] = plan.Row{a, {S: fmt.Sprintf("%03d", rng.Intn(300))}, {I: int64(i)}}
	}
	keys := []plan.SortKey{{E: &plan.ColRef{Idx: 0, T: int8T}, NullsFirst: true}, {E: &plan.ColRef{Idx: 1, T: textT}, Desc: true}}
	want, err := r.sort(slices.Clone(rows), keys)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		budget        int64
		spillsAtLeast int
	}{{1 << 30, 0}, {2 << 20, 2}, {64 << 10, maxMergeWidth + 1}} {
		ex := &externalSort{r: r, keys: keys, budget: c.budget}
		src, err := ex.sort(&limitSource{in: &sliceSource{rows: slices.Clone(rows)}, left: -1})
		if err != nil {
			t.Fatal(err)
		}
		got, err := drain(src)
		if err != nil {
			t.Fatal(err)
		}
		if ex.spills < c.spillsAtLeast || c.spillsAtLeast == 0 && ex.spills != 0 {
			t.Fatalf("budget %d: %d runs written, want at least %d", c.budget, ex.spills, c.spillsAtLeast)
		}
		if g, w := seqs(got), seqs(want); g != w {
			t.Fatalf("budget %d (%d runs): order differs from the in-memory sort", c.budget, ex.spills)
		}
		if open := openRunFiles(t, ex); open != 0 {
			t.Fatalf("budget %d: %d run files still open after the last row", c.budget, open)
		}
		ex.close()
		t.Logf("budget %d: %d runs written", c.budget, ex.spills)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("files left in the temporary directory: %v", left)
	}
}

func openRunFiles(t *testing.T, ex *externalSort) int {
	t.Helper()
	n := 0
	for _, run := range ex.runs {
		if run.f != nil {
			n++
		}
	}
	return n
}

func TestParseMemory(t *testing.T) {
	for in, want := range map[string]int64{"4MB": 4 << 20, "64kB": 64 << 10, "1GB": 1 << 30, "1024": 1 << 20, " 2 MB ": 2 << 20, "65536B": 64 << 10} {
		if got, err := parseMemory(in); err != nil || got != want {
			t.Errorf("parseMemory(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "abc", "4XB", "-1MB", "63kB", "10", "99999999999TB"} {
		if _, err := parseMemory(in); err == nil {
			t.Errorf("parseMemory(%q) took it", in)
		}
	}
}
