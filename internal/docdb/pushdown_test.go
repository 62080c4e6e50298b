package docdb

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shaledb/shaledb/internal/hlc"
)

// getter reads a row given as values by column id; a missing one is NULL.
func getter(vals map[uint32]Value) func(uint32) Value {
	return func(c uint32) Value { return vals[c] }
}

func cmp(op PredOp, col uint32, v Value) *Pred { return &Pred{Op: op, Col: col, Vals: []Value{v}} }

func TestPredComparisons(t *testing.T) {
	row := getter(map[uint32]Value{1: Int64(5), 2: Text("m"), 3: Float64(math.NaN())})
	T, F, U := TruthTrue, TruthFalse, TruthUnknown
	cases := []struct {
		p    *Pred
		want Truth
	}{
		{cmp(PredEQ, 1, Int64(5)), T}, {cmp(PredEQ, 1, Int64(4)), F},
		{cmp(PredNE, 1, Int64(5)), F}, {cmp(PredNE, 1, Int64(4)), T},
		{cmp(PredLT, 1, Int64(6)), T}, {cmp(PredLT, 1, Int64(5)), F},
		{cmp(PredLE, 1, Int64(5)), T}, {cmp(PredLE, 1, Int64(4)), F},
		{cmp(PredGT, 1, Int64(4)), T}, {cmp(PredGT, 1, Int64(5)), F},
		{cmp(PredGE, 1, Int64(5)), T}, {cmp(PredGE, 1, Int64(6)), F},
		{cmp(PredLT, 2, Text("n")), T}, {cmp(PredGT, 2, Text("ma")), F},
		// NaN is the greatest float and equal to itself (Compare's order).
		{cmp(PredGT, 3, Float64(math.Inf(1))), T}, {cmp(PredEQ, 3, Float64(math.NaN())), T},
		// NULL on either side: UNKNOWN, for every comparison.
		{cmp(PredEQ, 4, Int64(5)), U}, {cmp(PredNE, 4, Int64(5)), U}, {cmp(PredLT, 4, Int64(5)), U},
		{cmp(PredGE, 1, Null()), U}, {cmp(PredEQ, 4, Null()), U},
		{&Pred{Op: PredIsNull, Col: 4}, T}, {&Pred{Op: PredIsNull, Col: 1}, F},
		{&Pred{Op: PredIsNotNull, Col: 4}, F}, {&Pred{Op: PredIsNotNull, Col: 1}, T},
		// IN: TRUE on a match even with NULLs listed; else UNKNOWN with a
		// NULL on either side; else FALSE.
		{&Pred{Op: PredIn, Col: 1, Vals: []Value{Int64(1), Int64(5)}}, T},
		{&Pred{Op: PredIn, Col: 1, Vals: []Value{Null(), Int64(5)}}, T},
		{&Pred{Op: PredIn, Col: 1, Vals: []Value{Int64(1), Int64(2)}}, F},
		{&Pred{Op: PredIn, Col: 1, Vals: []Value{Int64(1), Null()}}, U},
		{&Pred{Op: PredIn, Col: 1}, F},
		{&Pred{Op: PredIn, Col: 4, Vals: []Value{Int64(1)}}, U},
		{&Pred{Op: PredIn, Col: 4}, U},
	}
	for _, c := range cases {
		if err := c.p.Validate(); err != nil {
			t.Fatalf("%s: %v", c.p, err)
		}
		if got := c.p.Eval(row); got != c.want {
			t.Errorf("%s = %s, want %s", c.p, got, c.want)
		}
	}
}

func TestPredThreeValuedLogic(t *testing.T) {
	row := getter(map[uint32]Value{1: Int64(1)})
	lit := map[Truth]*Pred{
		TruthTrue:    cmp(PredEQ, 1, Int64(1)),
		TruthFalse:   cmp(PredEQ, 1, Int64(2)),
		TruthUnknown: cmp(PredEQ, 2, Int64(1)), // column 2 is NULL
	}
	truths := []Truth{TruthFalse, TruthUnknown, TruthTrue}
	// SQL's tables: AND is the minimum, OR the maximum, NOT the mirror,
	// in the order FALSE < UNKNOWN < TRUE.
	for _, a := range truths {
		if got := (&Pred{Op: PredNot, Args: []*Pred{lit[a]}}).Eval(row); got != TruthTrue-a {
			t.Errorf("NOT %s = %s", a, got)
		}
		for _, b := range truths {
			and := &Pred{Op: PredAnd, Args: []*Pred{lit[a], lit[b]}}
			or := &Pred{Op: PredOr, Args: []*Pred{lit[a], lit[b]}}
			if got := and.Eval(row); got != min(a, b) {
				t.Errorf("%s AND %s = %s", a, b, got)
			}
			if got := or.Eval(row); got != max(a, b) {
				t.Errorf("%s OR %s = %s", a, b, got)
			}
		}
	}
	if got := (&Pred{Op: PredAnd}).Eval(row); got != TruthTrue {
		t.Errorf("empty AND = %s", got)
	}
	if got := (&Pred{Op: PredOr}).Eval(row); got != TruthFalse {
		t.Errorf("empty OR = %s", got)
	}
	// NOT (col > 0) is not TRUE for a NULL column: the row is dropped by
	// both the filter and its negation.
	gt := cmp(PredGT, 2, Int64(0))
	if gt.Eval(row) == TruthTrue || (&Pred{Op: PredNot, Args: []*Pred{gt}}).Eval(row) == TruthTrue {
		t.Error("a NULL comparison or its negation qualified")
	}
}

func TestPredValidate(t *testing.T) {
	bad := []*Pred{
		{Op: 0},
		{Op: 99},
		{Op: PredNot},
		{Op: PredNot, Args: []*Pred{cmp(PredEQ, 1, Int64(1)), cmp(PredEQ, 1, Int64(1))}},
		{Op: PredEQ, Col: 1},
		{Op: PredLT, Col: 1, Vals: []Value{Int64(1), Int64(2)}},
		{Op: PredIsNull, Col: 1, Vals: []Value{Int64(1)}},
		{Op: PredAnd, Vals: []Value{Int64(1)}},
		{Op: PredAnd, Args: []*Pred{nil}},
		{Op: PredIn, Col: 1, Args: []*Pred{cmp(PredEQ, 1, Int64(1))}},
	}
	for _, p := range bad {
		if err := p.Validate(); !errors.Is(err, ErrInvalidPushdown) {
			t.Errorf("%+v: %v", p, err)
		}
	}
	deep := cmp(PredEQ, 1, Int64(1))
	for range maxPredDepth + 1 {
		deep = &Pred{Op: PredNot, Args: []*Pred{deep}}
	}
	if err := deep.Validate(); !errors.Is(err, ErrInvalidPushdown) {
		t.Errorf("deep predicate: %v", err)
	}
}

func aggregate(t *testing.T, specs []AggSpec, rows []map[uint32]Value) []Value {
	t.Helper()
	a, err := NewAggregator(specs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := a.Add(getter(r)); err != nil {
			t.Fatal(err)
		}
	}
	return a.Results()
}

func TestAggregator(t *testing.T) {
	specs := []AggSpec{{Kind: AggCountStar}, {Kind: AggCount, Col: 1}, {Kind: AggSum, Col: 1}, {Kind: AggSum, Col: 2},
		{Kind: AggMin, Col: 1}, {Kind: AggMax, Col: 1}, {Kind: AggMin, Col: 3}, {Kind: AggMax, Col: 3}, {Kind: AggSum, Col: 4}}
	rows := []map[uint32]Value{
		{1: Int32(5), 2: Float64(0.5), 3: Text("b")},
		{1: Int32(-7), 3: Text("a")},
		{2: Float32(1.25)},
		{1: Int32(100), 2: Float64(-0.25), 3: Text("c")},
	}
	got := aggregate(t, specs, rows)
	want := []Value{Int64(4), Int64(3), Int64(98), Float64(1.5), Int32(-7), Int32(100), Text("a"), Text("c"), Null()}
	for i := range want {
		if got[i].Type != want[i].Type || !got[i].Equal(want[i]) {
			t.Errorf("%s: %s, want %s", specs[i].Kind, got[i], want[i])
		}
	}
	// No rows: counts 0, the others NULL.
	empty := aggregate(t, specs, nil)
	for i, v := range empty {
		if (i < 2) != (v.Type == TypeInt64 && v.Int == 0) || (i >= 2 && !v.IsNull()) {
			t.Errorf("%s over no rows: %s", specs[i].Kind, v)
		}
	}
}

func TestAggregatorSumOverflow(t *testing.T) {
	specs := []AggSpec{{Kind: AggSum, Col: 1}}
	big := []map[uint32]Value{{1: Int64(math.MaxInt64)}, {1: Int64(math.MaxInt64)}, {1: Int64(3)}}
	got := aggregate(t, specs, big)[0]
	if got.Type != TypeDecimal || string(got.Bytes) != "18446744073709551617" {
		t.Fatalf("sum past int64: %s", got)
	}
	// Back inside the range: int64 again.
	got = aggregate(t, specs, append(big, map[uint32]Value{1: Int64(math.MinInt64)}, map[uint32]Value{1: Int64(math.MinInt64)}))[0]
	if got.Type != TypeInt64 || got.Int != 1 {
		t.Fatalf("sum back in range: %s", got)
	}
	got = aggregate(t, specs, []map[uint32]Value{{1: Int64(math.MinInt64)}, {1: Int64(-1)}})[0]
	if got.Type != TypeDecimal || string(got.Bytes) != "-9223372036854775809" {
		t.Fatalf("sum below int64: %s", got)
	}
	// Merging partials: int64 + int64 overflowing, decimal + int64.
	m, err := MergeAggregate(AggSum, Int64(math.MaxInt64), Int64(1))
	if err != nil || m.Type != TypeDecimal || string(m.Bytes) != "9223372036854775808" {
		t.Fatalf("merge past int64: %s %v", m, err)
	}
	m, err = MergeAggregate(AggSum, m, Int64(-2))
	if err != nil || m.Type != TypeInt64 || m.Int != math.MaxInt64-1 {
		t.Fatalf("merge back: %s %v", m, err)
	}
	if m, err = MergeAggregate(AggSum, Null(), Int64(3)); err != nil || m.Int != 3 {
		t.Fatalf("merge with NULL: %s %v", m, err)
	}
	if m, err = MergeAggregate(AggSum, Float64(0.5), Float64(0.25)); err != nil || m.Float != 0.75 {
		t.Fatalf("float merge: %s %v", m, err)
	}
	if _, err = MergeAggregate(AggSum, Float64(0.5), Int64(1)); !errors.Is(err, ErrInvalidPushdown) {
		t.Fatalf("float + int merge: %v", err)
	}
	for _, k := range []AggKind{AggMin, AggMax} {
		m, err := MergeAggregate(k, Int64(3), Int64(9))
		want := map[AggKind]int64{AggMin: 3, AggMax: 9}[k]
		if err != nil || m.Int != want {
			t.Fatalf("%s merge: %s %v", k, m, err)
		}
		if m, _ = MergeAggregate(k, Null(), Int64(9)); m.Int != 9 {
			t.Fatalf("%s merge with NULL: %s", k, m)
		}
	}
	if m, err = MergeAggregate(AggCountStar, Int64(3), Int64(4)); err != nil || m.Int != 7 {
		t.Fatalf("count merge: %s %v", m, err)
	}
}

func TestAggregatorRejectsSumOfOtherTypes(t *testing.T) {
	a, err := NewAggregator([]AggSpec{{Kind: AggSum, Col: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Add(getter(map[uint32]Value{1: Text("x")})); !errors.Is(err, ErrInvalidPushdown) {
		t.Fatalf("SUM of text: %v", err)
	}
	if _, err := NewAggregator([]AggSpec{{Kind: 0}}); !errors.Is(err, ErrInvalidPushdown) {
		t.Fatalf("kind 0: %v", err)
	}
}

func TestRowViewKeyColumns(t *testing.T) {
	key := DocKey{TableID: 7, HasHash: true, Hash: 3, HashParts: []KeyPart{{Value: Text("h")}},
		RangeParts: []KeyPart{{Value: Int64(4), Desc: true}}}.Encode()
	row := Row{Key: key, Columns: []ColumnValue{{ID: 3, Value: Int64(30)}, {ID: 9, Value: Text("z")}}}
	v := RowView{KeyColumns: []uint32{1, 2}}
	v.Reset(&row)
	for col, want := range map[uint32]Value{1: Text("h"), 2: Int64(4), 3: Int64(30), 9: Text("z"), 5: Null()} {
		if got := v.Get(col); got.Type != want.Type || !got.Equal(want) {
			t.Errorf("column %d = %s, want %s", col, got, want)
		}
	}
	if v.Err() != nil {
		t.Fatal(v.Err())
	}
	v = RowView{KeyColumns: []uint32{1}}
	v.Reset(&row)
	v.Get(1)
	if !errors.Is(v.Err(), ErrInvalidPushdown) {
		t.Fatalf("key columns that do not fit: %v", v.Err())
	}
}

// TestScanMatchesGetRow: random histories (puts of rows and columns,
// column and row deletes, at increasing times), scanned forward and
// backward at random times, with and without projections, pages and a
// filter, return exactly the rows GetRow finds one by one (a fresh
// iterator and seeks: independent of the scan's skipped seeks).
func TestScanMatchesGetRow(t *testing.T) {
	eng := openTestEngine(t)
	rng := rand.New(rand.NewPCG(7, 8))
	key := func(i int) []byte {
		return DocKey{TableID: 3, RangeParts: []KeyPart{{Value: Int64(int64(i))}}}.Encode()
	}
	const keys, steps = 60, 400
	for step := 1; step <= steps; step++ {
		var wb WriteBatch
		for n := 1 + rng.IntN(4); n > 0; n-- {
			k := key(rng.IntN(keys))
			col := ColumnValue{ID: uint32(1 + rng.IntN(6)), Value: Int64(int64(rng.IntN(100)))}
			switch rng.IntN(6) {
			case 0:
				wb.Ops = append(wb.Ops, WriteOp{Kind: OpDeleteRow, RowKey: k})
			case 1:
				wb.Ops = append(wb.Ops, WriteOp{Kind: OpDeleteColumns, RowKey: k, Columns: []ColumnValue{{ID: col.ID}}})
			case 2, 3:
				wb.Ops = append(wb.Ops, WriteOp{Kind: OpPutColumns, RowKey: k, Columns: []ColumnValue{col}})
			default:
				wb.Ops = append(wb.Ops, WriteOp{Kind: OpPutRow, RowKey: k, Columns: []ColumnValue{col}})
			}
		}
		if err := ApplyWriteBatch(eng, hlc.Timestamp(step*10), &wb); err != nil {
			t.Fatal(err)
		}
	}
	span := TableSpan(3)
	for round := 0; round < 200; round++ {
		at := hlc.Timestamp(rng.IntN(steps*10 + 20))
		// A projection: some of the columns, in order (read column by
		// column, with Nexts or seeks), checked against whole rows.
		var cols []uint32
		if rng.IntN(2) == 0 {
			cols = []uint32{}
			for c := uint32(1); c <= 6; c++ {
				if rng.IntN(2) == 0 {
					cols = append(cols, c)
				}
			}
			if len(cols) == 0 {
				cols = append(cols, uint32(1+rng.IntN(6)))
			}
		}
		reverse := rng.IntN(2) == 0
		var filter *Pred
		if rng.IntN(3) == 0 {
			filter = &Pred{Op: PredGT, Col: uint32(1 + rng.IntN(3)), Vals: []Value{Int64(int64(rng.IntN(100)))}}
		}
		var want []string
		for i := 0; i < keys; i++ {
			row, found, err := GetRow(eng, key(i), ReadOptions{ReadTime: at})
			if err != nil {
				t.Fatal(err)
			}
			if cols != nil {
				row.Columns = trimColumns(row.Columns, cols)
			}
			if found && filter != nil {
				full, _, _ := GetRow(eng, key(i), ReadOptions{ReadTime: at})
				v := RowView{}
				v.Reset(&full)
				found = filter.Eval(v.Get) == TruthTrue
			}
			if found {
				want = append(want, fmt.Sprint(row.Key, row.Columns))
			}
		}
		if reverse {
			slices.Reverse(want)
		}
		var got []string
		s := span
		limit, maxRows := rng.IntN(5), rng.IntN(8)
		for pages := 0; ; pages++ {
			rows, resume, err := Scan(eng, ScanOptions{ReadOptions: ReadOptions{ReadTime: at, Columns: cols}, Span: s,
				Limit: limit, Reverse: reverse, Filter: filter, MaxRows: maxRows})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				got = append(got, fmt.Sprint(r.Key, r.Columns))
			}
			if resume == nil {
				break
			}
			s = ResumeSpan(s, resume, reverse)
			if pages > 10*keys {
				t.Fatal("scan does not end")
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d at %d cols %v reverse %v filter %v limit %d max rows %d:\n got %v\nwant %v", round, at, cols, reverse, filter, limit, maxRows, got, want)
		}
	}
}
