package exec

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/cockroachdb/apd/v3"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
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
		if run.f.f != nil {
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

// testSum sums its integer argument and counts the rows it saw.
type testSum struct{ sum, n int64 }

func (a *testSum) Add(args []types.Datum) error {
	if len(args) > 0 && !args[0].Null {
		a.sum += args[0].I
	}
	a.n++
	return nil
}

func (a *testSum) Result() (types.Datum, error) { return types.Datum{I: a.sum*1_000_000 + a.n}, nil }

// A hash aggregation gives every group once with the same aggregates
// (DISTINCT ones too) whether its groups fit work_mem or spill, over one
// level of files or several; its files are closed once the groups are out.
func TestHashAggSpillMatches(t *testing.T) {
	int8T := types.T{OID: types.OIDInt8, Mod: -1}
	dir := t.TempDir()
	r := &runner{ec: &plan.EvalContext{}, s: &Session{e: &Engine{cfg: Config{TempDir: dir}}}}
	rng := rand.New(rand.NewSource(3))
	rows := make([]plan.Row, 60000)
	type want struct{ sum, n, distinct, distinctSum int64 }
	exp := map[int64]*want{}
	seen := map[[2]int64]bool{}
	for i := range rows {
		g, v := int64(rng.Intn(5000)), int64(rng.Intn(40))
		rows[i] = plan.Row{{I: g}, {I: v}}
		w := exp[g]
		if w == nil {
			w = &want{}
			exp[g] = w
		}
		w.sum += v
		w.n++
		if !seen[[2]int64{g, v}] {
			seen[[2]int64{g, v}] = true
			w.distinct++
			w.distinctSum += v
		}
	}
	newSum := func() plan.Aggregator { return &testSum{} }
	a := &plan.Agg{
		Groups: []plan.Expr{&plan.ColRef{Idx: 0, T: int8T}},
		Aggs: []plan.AggCall{
			{Name: "s", Arg: &plan.ColRef{Idx: 1, T: int8T}, New: newSum},
			{Name: "d", Arg: &plan.ColRef{Idx: 1, T: int8T}, Distinct: true, New: newSum},
		},
	}
	for _, c := range []struct {
		budget       int64
		spilledAbove int
	}{{1 << 30, -1}, {512 << 10, 0}, {64 << 10, aggPartitions}} {
		h := &hashAgg{r: r, a: a, budget: c.budget, gts: []types.T{int8T}, spill: newHashSpill(r, "aggregate")}
		if err := h.pass(&sliceSource{rows: slices.Clone(rows)}, 0); err != nil {
			t.Fatal(err)
		}
		out, err := drain(h)
		if err != nil {
			t.Fatal(err)
		}
		if c.spilledAbove < 0 && h.spill.written != 0 || h.spill.written <= c.spilledAbove {
			t.Fatalf("budget %d: %d files written", c.budget, h.spill.written)
		}
		if len(out) != len(exp) {
			t.Fatalf("budget %d: %d groups, want %d", c.budget, len(out), len(exp))
		}
		got := map[int64]bool{}
		for _, row := range out {
			g := row[0].I
			w := exp[g]
			if got[g] || w == nil || row[1].I != w.sum*1_000_000+w.n || row[2].I != w.distinctSum*1_000_000+w.distinct {
				t.Fatalf("budget %d: group %d: %v (twice: %v), want sum %d of %d rows, %d distinct", c.budget, g, row, got[g], w.sum, w.n, w.distinct)
			}
			got[g] = true
		}
		if len(h.spill.pending) != 0 || len(h.spill.parts) != 0 || h.spill.reading != nil {
			t.Fatalf("budget %d: files left open: %d pending, %d being written", c.budget, len(h.spill.pending), len(h.spill.parts))
		}
		t.Logf("budget %d: %d files written", c.budget, h.spill.written)
	}
}

// DISTINCT passes the first row of every key once, spilled or not: the
// keys past work_mem go to files and come after the others.
func TestDistinctSpill(t *testing.T) {
	int8T := types.T{OID: types.OIDInt8, Mod: -1}
	r := &runner{ec: &plan.EvalContext{}, s: &Session{e: &Engine{cfg: Config{TempDir: t.TempDir()}}}, closers: &closers{}}
	rng := rand.New(rand.NewSource(5))
	rows := make([]plan.Row, 50000)
	first := map[int64]int64{} // key -> the row number of its first row
	for i := range rows {
		k := int64(rng.Intn(8000))
		rows[i] = plan.Row{{I: k}, {I: int64(i)}} // column 1 is not part of the key
		if _, ok := first[k]; !ok {
			first[k] = int64(i)
		}
	}
	cols := []plan.Column{{T: int8T}, {T: int8T}}
	for _, budget := range []int64{1 << 30, 8 << 10} { // 8kB: files split again
		d := r.newDistinct(&sliceSource{rows: slices.Clone(rows)}, 1, cols)
		d.budget = budget
		out, err := drain(d)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != len(first) {
			t.Fatalf("budget %d: %d rows, want %d", budget, len(out), len(first))
		}
		got := map[int64]bool{}
		for _, row := range out {
			if got[row[0].I] || first[row[0].I] != row[1].I {
				t.Fatalf("budget %d: key %d passed twice (%v) or not its first row (%d, want %d)", budget, row[0].I, got[row[0].I], row[1].I, first[row[0].I])
			}
			got[row[0].I] = true
		}
		if spilled := d.spill.written; budget < 1<<20 && spilled <= aggPartitions || budget > 1<<20 && spilled != 0 {
			t.Fatalf("budget %d: %d files written", budget, spilled)
		}
		t.Logf("budget %d: %d files written", budget, d.spill.written)
	}
	r.closers.run()
}

type testNode struct{ cols []plan.Column }

func (n *testNode) Columns() []plan.Column { return n.cols }

// A hash join whose right side is on file (Grace) gives the rows of the
// in-memory hash join, for every kind of join: duplicate keys, NULL keys
// on both sides, a condition beyond the keys, right rows no left row
// matches.
func TestGraceJoinMatches(t *testing.T) {
	int8T := types.T{OID: types.OIDInt8, Mod: -1}
	r := &runner{ec: &plan.EvalContext{}, s: &Session{e: &Engine{cfg: Config{TempDir: t.TempDir()}}}, closers: &closers{}}
	defer r.closers.run()
	rng := rand.New(rand.NewSource(9))
	side := func(n, keys int) []plan.Row {
		rows := make([]plan.Row, n)
		for i := range rows {
			k := types.Datum{I: int64(rng.Intn(keys))}
			if rng.Intn(15) == 0 {
				k = types.NullDatum
			}
			rows[i] = plan.Row{k, {I: int64(i)}}
		}
		return rows
	}
	left, right := side(3000, 500), side(2000, 700)
	cols := []plan.Column{{T: int8T}, {T: int8T}}
	for _, kind := range []plan.JoinKind{plan.InnerJoin, plan.LeftJoin, plan.RightJoin, plan.FullJoin} {
		j := &plan.Join{Kind: kind, Left: &testNode{cols: cols}, Right: &testNode{cols: cols},
			EqLeft: []plan.Expr{&plan.ColRef{Idx: 0, T: int8T}}, EqRight: []plan.Expr{&plan.ColRef{Idx: 0, T: int8T}}, // over the right row
			// Beyond the key: the right row number is even or above the left's.
			Cond: &testCond{}}
		want, err := r.joinRows(j, left, right)
		if err != nil {
			t.Fatal(err)
		}
		spill := newHashSpill(r, "hash join")
		for _, row := range right {
			if err := r.spillJoinRow(spill, j.EqRight, []types.T{int8T}, row); err != nil {
				t.Fatal(err)
			}
		}
		got, err := drain(r.newGraceJoin(j, &sliceSource{rows: slices.Clone(left)}, spill))
		if err != nil {
			t.Fatal(err)
		}
		if g, w := joinedSet(got), joinedSet(want); g != w || len(got) != len(want) {
			t.Fatalf("join kind %v: %d rows from the files, %d in memory", kind, len(got), len(want))
		}
		t.Logf("join kind %v: %d rows, %d right files", kind, len(got), spill.written)
	}
}

// A join without equality keys whose right side passes work_mem (a block
// nested loop over the right side on file, the left rows a block at a
// time) gives the rows of the in-memory nested loop, for every kind of
// join, and its file is read once per block.
func TestNestedLoopSpillMatches(t *testing.T) {
	int8T := types.T{OID: types.OIDInt8, Mod: -1}
	r := &runner{ec: &plan.EvalContext{}, s: &Session{e: &Engine{cfg: Config{TempDir: t.TempDir()}}, settings: map[string]string{"work_mem": "64kB"}},
		closers: &closers{}}
	defer r.closers.run()
	rng := rand.New(rand.NewSource(13))
	side := func(n, from, to int) []plan.Row {
		rows := make([]plan.Row, n)
		for i := range rows {
			rows[i] = plan.Row{{I: int64(from + rng.Intn(to-from))}, {I: int64(i)}}
		}
		return rows
	}
	// Keys 0-99 on the left match no right row, 300-499 on the right no
	// left row.
	left, right := side(1000, 0, 300), side(2000, 100, 500)
	cols := []plan.Column{{T: int8T}, {T: int8T}}
	for _, kind := range []plan.JoinKind{plan.InnerJoin, plan.LeftJoin, plan.RightJoin, plan.FullJoin} {
		j := &plan.Join{Kind: kind, Left: &testNode{cols: cols}, Right: &testNode{cols: cols}, Cond: keysAndTestCond{}}
		want, err := r.joinRows(j, left, right)
		if err != nil {
			t.Fatal(err)
		}
		side, err := r.readRightSide(j, &sliceSource{rows: slices.Clone(right)})
		if err != nil {
			t.Fatal(err)
		}
		if side.file == nil || side.rows != nil {
			t.Fatalf("join kind %v: the right side of %d rows is not on file at work_mem 64kB", kind, len(right))
		}
		nl := r.newNestedLoop(j, &sliceSource{rows: slices.Clone(left)}, side.file)
		got, err := drain(nl)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := joinedSet(got), joinedSet(want); g != w || len(got) != len(want) {
			t.Fatalf("join kind %v: %d rows from the file, %d in memory", kind, len(got), len(want))
		}
		if nl.blocks < 2 {
			t.Fatalf("join kind %v: %d blocks of left rows at work_mem 64kB", kind, nl.blocks)
		}
		t.Logf("join kind %v: %d rows, %d blocks", kind, len(got), nl.blocks)
	}
}

// keysAndTestCond is an equality of the first columns (not an equi-join
// key: the join is a nested loop) and testCond.
type keysAndTestCond struct{}

func (keysAndTestCond) Eval(ec *plan.EvalContext, row plan.Row) (types.Datum, error) {
	if row[0].I != row[2].I {
		return types.DBool(false), nil
	}
	return testCond{}.Eval(ec, row)
}
func (keysAndTestCond) Type() types.T { return types.T{OID: types.OIDBool, Mod: -1} }

// testCond holds when the right row's number (column 3) is even or above
// the left row's (column 1); NULL-extended rows never reach it.
type testCond struct{}

func (testCond) Eval(_ *plan.EvalContext, row plan.Row) (types.Datum, error) {
	return types.DBool(row[3].I%2 == 0 || row[3].I > row[1].I), nil
}
func (testCond) Type() types.T { return types.T{OID: types.OIDBool, Mod: -1} }

// joinedSet is the joined rows, sorted, as text.
func joinedSet(rows []plan.Row) string {
	s := make([]string, len(rows))
	for i, row := range rows {
		s[i] = fmt.Sprint(row)
	}
	slices.Sort(s)
	return fmt.Sprint(s)
}

// INTERSECT and EXCEPT, with and without ALL, give the same rows whether
// the right side's counts fit work_mem or go to files.
func TestSetOpSpillMatches(t *testing.T) {
	int8T := types.T{OID: types.OIDInt8, Mod: -1}
	r := &runner{ec: &plan.EvalContext{}, s: &Session{e: &Engine{cfg: Config{TempDir: t.TempDir()}}, settings: map[string]string{}}, closers: &closers{}}
	defer r.closers.run()
	rng := rand.New(rand.NewSource(11))
	side := func(n, keys int) []plan.Row {
		rows := make([]plan.Row, n)
		for i := range rows {
			rows[i] = plan.Row{{I: int64(rng.Intn(keys))}}
		}
		return rows
	}
	left, right := side(20000, 6000), side(15000, 9000)
	for _, op := range []string{"intersect", "except"} {
		for _, all := range []bool{false, true} {
			s := &plan.SetOp{Op: op, All: all}
			var results [2]string
			for i, mem := range []string{"1GB", "64kB"} {
				r.s.settings["work_mem"] = mem
				x := &setOpSource{r: r, s: s, left: &sliceSource{rows: slices.Clone(left)}, ts: []types.T{int8T}, counts: map[string]int{}, seen: map[string]bool{}}
				if err := x.countRight(&sliceSource{rows: slices.Clone(right)}); err != nil {
					t.Fatal(err)
				}
				if (x.rights != nil) != (mem == "64kB") {
					t.Fatalf("%s all=%v work_mem %s: spilled %v", op, all, mem, x.rights != nil)
				}
				out, err := drain(x)
				if err != nil {
					t.Fatal(err)
				}
				results[i] = joinedSet(out)
			}
			if results[0] != results[1] {
				t.Fatalf("%s all=%v: the spilled result differs", op, all)
			}
		}
	}
}

// A spill that fills the disk fails the statement with PostgreSQL's
// 53100 (disk full), not an internal error.
func TestSpillDiskFull(t *testing.T) {
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sf := &spillFile{f: f, w: bufio.NewWriterSize(f, runBufferSize), what: "sort"}
	if err := sf.write([]byte("a row")); err != nil {
		t.Fatal(err) // buffered
	}
	var pe *pgerror.Error
	if err := sf.finish(); !errors.As(err, &pe) || pe.Code != pgerror.CodeDiskFull {
		t.Fatalf("finish on a full disk: %v, want 53100", err)
	}
}

// Ranking window functions computed as the rows pass, each call over its
// own (external) sort, equal a count per partition done by hand, whether
// the sorts spill or not: row_number numbers the rows of a partition in
// order, rank and dense_rank number the distinct order values.
func TestWindowRows(t *testing.T) {
	int8T := types.T{OID: types.OIDInt8, Mod: -1}
	r := &runner{ec: &plan.EvalContext{}, s: &Session{e: &Engine{cfg: Config{TempDir: t.TempDir()}}, settings: map[string]string{}}, closers: &closers{}}
	defer r.closers.run()
	rng := rand.New(rand.NewSource(13))
	rows := make([]plan.Row, 3000)
	for i := range rows {
		rows[i] = plan.Row{{I: int64(rng.Intn(40))}, {I: int64(rng.Intn(25))}, {I: int64(i)}}
	}
	col := func(i int) plan.Expr { return &plan.ColRef{Idx: i, T: int8T} }
	calls := []plan.WindowCall{
		{Name: "row_number", Partition: []plan.Expr{col(0)}, Order: []plan.SortKey{{E: col(2), Desc: true}}},
		{Name: "rank", Partition: []plan.Expr{col(0)}, Order: []plan.SortKey{{E: col(1)}}},
		{Name: "dense_rank", Order: []plan.SortKey{{E: col(1), Desc: true}}},
	}
	// By hand, by the row's number (column 2).
	want := map[int64][3]int64{}
	for _, a := range rows {
		var rn, rk int64 = 1, 1
		above := map[int64]bool{}
		for _, b := range rows {
			if b[0].I == a[0].I && b[2].I > a[2].I {
				rn++
			}
			if b[0].I == a[0].I && b[1].I < a[1].I {
				rk++
			}
			if b[1].I > a[1].I {
				above[b[1].I] = true
			}
		}
		want[a[2].I] = [3]int64{rn, rk, 1 + int64(len(above))}
	}
	for _, mem := range []string{"1GB", "64kB"} {
		r.s.settings["work_mem"] = mem
		src, err := r.windowRows(&sliceSource{rows: slices.Clone(rows)}, calls)
		if err != nil {
			t.Fatal(err)
		}
		out, err := drain(src)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != len(rows) {
			t.Fatalf("work_mem %s: %d rows", mem, len(out))
		}
		for _, row := range out {
			w := want[row[2].I]
			if len(row) != 6 || row[3].I != w[0] || row[4].I != w[1] || row[5].I != w[2] {
				t.Fatalf("work_mem %s: row %v, want %v", mem, row, w)
			}
		}
	}
}

// A subquery run once per outer row releases what its sorts held when it
// is done: the statement's closers do not grow with the outer rows.
func TestSubqueryReleasesItsSorts(t *testing.T) {
	int8T := types.T{OID: types.OIDInt8, Mod: -1}
	r := &runner{ec: &plan.EvalContext{}, s: &Session{e: &Engine{cfg: Config{TempDir: t.TempDir()}}, settings: map[string]string{}}, closers: &closers{}}
	defer r.closers.run()
	var vals [][]plan.Expr
	for i := range 5 {
		vals = append(vals, []plan.Expr{&plan.Const{T: int8T, D: types.Datum{I: int64(5 - i)}}})
	}
	sub := &plan.Sort{Input: &plan.Values{Rows: vals}, Keys: []plan.SortKey{{E: &plan.ColRef{Idx: 0, T: int8T}}}}
	for range 100 {
		rows, err := r.subquery(r.ec, &plan.Subquery{Kind: plan.ArraySubquery, Plan: sub, Correlated: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 5 || rows[0][0].I != 1 || rows[4][0].I != 5 {
			t.Fatalf("sorted subquery rows: %v", rows)
		}
	}
	if n := len(r.closers.fs); n != 0 {
		t.Fatalf("%d closers kept by the statement after 100 subquery runs", n)
	}
}
