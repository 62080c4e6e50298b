package docdb

import (
	"errors"
	"math"
	"testing"
)

// fakeRows answers AddRead from a map and counts the reads.
type fakeRows struct {
	rows  map[string][]ColumnValue
	reads int
}

func (f *fakeRows) read(rowKey []byte, cols []uint32) (Row, bool, error) {
	f.reads++
	vals, ok := f.rows[string(rowKey)]
	if !ok {
		return Row{}, false, nil
	}
	r := Row{Key: rowKey}
	for _, c := range vals {
		for _, want := range cols {
			if c.ID == want {
				r.Columns = append(r.Columns, c)
			}
		}
	}
	return r, true, nil
}

func addOp(row string, cols ...ColumnValue) WriteOp {
	return WriteOp{Kind: OpAddColumns, RowKey: testRowKey(row), Columns: cols}
}

func delta(id uint32, d int64) ColumnValue { return ColumnValue{ID: id, Value: Int64(d)} }

func TestResolveAdds(t *testing.T) {
	f := &fakeRows{rows: map[string][]ColumnValue{
		string(testRowKey("a")): {{ID: 1, Value: Int32(10)}, {ID: 2, Value: Int64(-5)}},
		string(testRowKey("b")): {{ID: 2, Value: Int16(7)}}, // column 1 NULL
	}}
	ops := []WriteOp{
		addOp("a", delta(1, 5), delta(2, 5)),
		addOp("missing", delta(1, 1)),
		addOp("a", delta(1, -20)), // counts over the first add: 15 - 20
		addOp("b", delta(1, 3)),   // NULL stays NULL: a tombstone
		addOp("b", delta(1, 1), delta(2, 1)),
	}
	res, err := ResolveAdds(ops, f.read)
	if err != nil {
		t.Fatal(err)
	}
	out, missing := res.Ops, res.Missing
	if len(res.Sums) != 4 || res.Sums[2].Columns[0].Value.Int != -5 || res.Sums[3].Kind != OpDeleteColumns {
		t.Fatalf("sums %+v: want the writes of adds 0, 2, 3 and 4", res.Sums)
	}
	if len(missing) != 1 || missing[0] != 1 {
		t.Fatalf("missing = %v, want [1]", missing)
	}
	if f.reads != 3 {
		t.Errorf("%d reads, want one per row (3)", f.reads)
	}
	want := []WriteOp{
		{Kind: OpPutColumns, RowKey: testRowKey("a"), Columns: []ColumnValue{{ID: 1, Value: Int32(15)}, {ID: 2, Value: Int64(0)}}},
		{Kind: OpPutColumns, RowKey: testRowKey("a"), Columns: []ColumnValue{{ID: 1, Value: Int32(-5)}}},
		{Kind: OpDeleteColumns, RowKey: testRowKey("b"), Columns: []ColumnValue{{ID: 1}}},
		{Kind: OpPutColumns, RowKey: testRowKey("b"), Columns: []ColumnValue{{ID: 2, Value: Int16(8)}}},
	}
	if len(out) != len(want) {
		t.Fatalf("got %d ops %+v, want %d", len(out), out, len(want))
	}
	for i := range want {
		if out[i].Kind != want[i].Kind || string(out[i].RowKey) != string(want[i].RowKey) || len(out[i].Columns) != len(want[i].Columns) {
			t.Fatalf("op %d = %+v, want %+v", i, out[i], want[i])
		}
		for j, c := range want[i].Columns {
			if got := out[i].Columns[j]; got.ID != c.ID || (out[i].Kind != OpDeleteColumns && !got.Value.Equal(c.Value)) {
				t.Errorf("op %d column %d = %+v, want %+v", i, j, got, c)
			}
		}
	}
	// What it returns is written like any batch; the add itself is not.
	if err := (&WriteBatch{Ops: out}).Ops[0].validateResolved(); err != nil {
		t.Fatal(err)
	}
	if err := ops[0].validateResolved(); err == nil {
		t.Fatal("an unresolved add passed validateResolved")
	}
}

func TestResolveAddsBatchOrder(t *testing.T) {
	f := &fakeRows{rows: map[string][]ColumnValue{}}
	// A put earlier in the batch makes the row exist for the add; a
	// delete after a put makes it absent again.
	ops := []WriteOp{
		{Kind: OpPutRow, RowKey: testRowKey("n"), Columns: []ColumnValue{{ID: 1, Value: Int64(1)}}},
		addOp("n", delta(1, 41)),
		{Kind: OpDeleteRow, RowKey: testRowKey("n")},
		addOp("n", delta(1, 1)),
	}
	res, err := ResolveAdds(ops, f.read)
	if err != nil {
		t.Fatal(err)
	}
	out, missing := res.Ops, res.Missing
	if len(missing) != 1 || missing[0] != 3 || len(out) != 3 || f.reads != 1 {
		t.Fatalf("out %+v missing %v after %d reads; want the last add missing, one read", out, missing, f.reads)
	}
	if got := out[1].Columns[0].Value; out[1].Kind != OpPutColumns || got.Int != 42 {
		t.Fatalf("add after put wrote %+v", out[1])
	}
}

func TestResolveAddsOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		cur   Value
		delta int64
		ok    bool
	}{
		{Int16(math.MaxInt16 - 1), 1, true},
		{Int16(math.MaxInt16), 1, false},
		{Int32(math.MinInt32), -1, false},
		{Int32(math.MaxInt32), -1, true},
		{Int64(math.MaxInt64), 1, false},
		{Int64(math.MinInt64), math.MinInt64, false},
		{Int64(math.MinInt64), math.MaxInt64, true},
		{Int32(0), math.MaxInt32 + 1, false},
	} {
		f := &fakeRows{rows: map[string][]ColumnValue{string(testRowKey("r")): {{ID: 3, Value: tc.cur}}}}
		_, err := ResolveAdds([]WriteOp{addOp("r", delta(3, tc.delta))}, f.read)
		var oor *OutOfRangeError
		switch {
		case tc.ok && err != nil:
			t.Errorf("%v + %d: %v", tc.cur, tc.delta, err)
		case !tc.ok && (!errors.As(err, &oor) || !errors.Is(err, ErrOutOfRange) || oor.Column != 3 || oor.Type != tc.cur.Type):
			t.Errorf("%v + %d: err %v, want out of range of column 3", tc.cur, tc.delta, err)
		}
	}
	f := &fakeRows{rows: map[string][]ColumnValue{string(testRowKey("r")): {{ID: 3, Value: Text("x")}}}}
	if _, err := ResolveAdds([]WriteOp{addOp("r", delta(3, 1))}, f.read); err == nil || errors.Is(err, ErrOutOfRange) {
		t.Errorf("add to a text column: %v", err)
	}
	bad := addOp("r", ColumnValue{ID: 3, Value: Int32(1)})
	if _, err := ResolveAdds([]WriteOp{bad}, f.read); err == nil {
		t.Error("an add with an int32 delta passed")
	}
}

func TestAddBatchRoundTrip(t *testing.T) {
	b := WriteBatch{Ops: []WriteOp{addOp("a", delta(1, -7), delta(4, 1<<40))}}
	var got WriteBatch
	if err := got.Unmarshal(b.Marshal()); err != nil {
		t.Fatal(err)
	}
	if got.Ops[0].Kind != OpAddColumns || got.Ops[0].Columns[0].Value.Int != -7 || got.Ops[0].Columns[1].Value.Int != 1<<40 {
		t.Fatalf("round trip: %+v", got.Ops[0])
	}
}

// TestResolveExisting: column writes and row deletes of rows that do not
// exist (before the batch, or deleted earlier in it) are left out and
// reported with the missing adds; a row the batch writes whole exists for
// the ops after it; rows are read once, for their presence only when no
// add needs their values.
func TestResolveExisting(t *testing.T) {
	f := &fakeRows{rows: map[string][]ColumnValue{
		string(testRowKey("a")): {{ID: 1, Value: Int32(10)}},
		string(testRowKey("b")): {{ID: 1, Value: Int32(1)}},
	}}
	set := func(row string, v int32) WriteOp {
		return WriteOp{Kind: OpPutColumns, RowKey: testRowKey(row), Columns: []ColumnValue{{ID: 1, Value: Int32(v)}}}
	}
	del := func(row string) WriteOp { return WriteOp{Kind: OpDeleteRow, RowKey: testRowKey(row)} }
	ops := []WriteOp{
		set("a", 5), // 0: exists
		set("x", 1), // 1: missing
		del("b"),    // 2: exists
		set("b", 2), // 3: deleted by 2
		{Kind: OpDeleteColumns, RowKey: testRowKey("y"), Columns: []ColumnValue{{ID: 1}}}, // 4: missing
		del("z"), // 5: missing
		{Kind: OpPutRow, RowKey: testRowKey("z"), Columns: []ColumnValue{{ID: 1, Value: Int32(3)}}}, // 6: a put is not refused
		set("z", 4),             // 7: written by 6
		addOp("a", delta(1, 1)), // 8: over 0's 5
		addOp("x", delta(1, 1)), // 9: missing
	}
	res, err := ResolveExisting(ops, f.read)
	if err != nil {
		t.Fatal(err)
	}
	want := []int{1, 3, 4, 5, 9}
	if len(res.Missing) != len(want) {
		t.Fatalf("missing = %v, want %v", res.Missing, want)
	}
	for i := range want {
		if res.Missing[i] != want[i] {
			t.Fatalf("missing = %v, want %v", res.Missing, want)
		}
	}
	if len(res.Ops) != 5 || res.Ops[4].Columns[0].Value.Int != 6 {
		t.Fatalf("ops %+v: want 0, 2, 6, 7 and the add over 5 (6)", res.Ops)
	}
	if f.reads != 5 {
		t.Fatalf("%d reads, want one per row (a, x, b, y, z)", f.reads)
	}
	if res, err := ResolveAdds(ops[:3], f.read); err != nil || len(res.Missing) != 0 || len(res.Ops) != 3 {
		t.Fatalf("ResolveAdds refused writes of missing rows: %+v, %v", res, err)
	}
}
