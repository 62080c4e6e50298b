package docdb

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shaledb/shaledb/internal/hlc"
)

// Grouped partial aggregates: group columns 1 (int32) and 2 (text), each
// NULL (absent) on some rows; aggregates over 3 (int64) and 4 (text).
var groupSpecs = []AggSpec{{Kind: AggCountStar}, {Kind: AggCount, Col: 3}, {Kind: AggSum, Col: 3},
	{Kind: AggMin, Col: 4}, {Kind: AggMax, Col: 3}}

func groupRows(n int, seed uint64) []map[uint32]Value {
	rng := rand.New(rand.NewPCG(seed, 1))
	rows := make([]map[uint32]Value, n)
	for i := range rows {
		r := map[uint32]Value{}
		if g := rng.IntN(4); g > 0 { // 0: NULL
			r[1] = Int32(int32(g - 2)) // -1, 0, 1
		}
		switch rng.IntN(3) {
		case 0:
			r[2] = Text("")
		case 1:
			r[2] = Text("x")
		}
		if rng.IntN(5) > 0 {
			r[3] = Int64(int64(rng.IntN(100) - 50))
		}
		r[4] = Text(fmt.Sprintf("t%d", rng.IntN(50)))
		rows[i] = r
	}
	return rows
}

// groupModel is what grouped aggregates over rows must give: per group
// (formatted group values), the results of an ungrouped Aggregator over
// the group's rows.
func groupModel(t *testing.T, rows []map[uint32]Value) map[string]string {
	t.Helper()
	byGroup := map[string][]map[uint32]Value{}
	for _, r := range rows {
		k := fmt.Sprint([]Value{r[1], r[2]})
		byGroup[k] = append(byGroup[k], r)
	}
	out := map[string]string{}
	for k, rs := range byGroup {
		out[k] = fmt.Sprint(aggregate(t, groupSpecs, rs))
	}
	return out
}

// groupResults splits flat grouped results into rows keyed as groupModel.
func groupResults(t *testing.T, flat []Value, nGroup int) map[string]string {
	t.Helper()
	w := nGroup + len(groupSpecs)
	if len(flat)%w != 0 {
		t.Fatalf("%d values for rows of %d", len(flat), w)
	}
	out := map[string]string{}
	for ; len(flat) > 0; flat = flat[w:] {
		k := fmt.Sprint(flat[:nGroup])
		if _, dup := out[k]; dup {
			t.Fatalf("group %s twice", k)
		}
		out[k] = fmt.Sprint(flat[nGroup:w])
	}
	return out
}

func sameGroups(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d groups, want %d:\n got %v\nwant %v", what, len(got), len(want), got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Fatalf("%s: group %s = %s, want %s", what, k, got[k], w)
		}
	}
}

func TestGroupAggregator(t *testing.T) {
	rows := groupRows(300, 1)
	a, err := NewGroupAggregator([]uint32{1, 2}, groupSpecs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := a.Add(getter(r)); err != nil {
			t.Fatal(err)
		}
	}
	want := groupModel(t, rows)
	// 4 values of column 1 (NULL one of them) by 3 of column 2: NULLs
	// form one group, apart from 0 and the empty string.
	if len(want) != 12 {
		t.Fatalf("fixture has %d groups", len(want))
	}
	sameGroups(t, "grouped", groupResults(t, a.Results(), 2), want)
	if _, ok := want[fmt.Sprint([]Value{Null(), Null()})]; !ok {
		t.Fatal("no (NULL, NULL) group")
	}

	// No rows: no groups (an ungrouped aggregator still has its row).
	empty, _ := NewGroupAggregator([]uint32{1}, groupSpecs)
	if r := empty.Results(); len(r) != 0 {
		t.Fatalf("groups over no rows: %v", r)
	}
	// Only group columns, no aggregates: the distinct group values.
	keys, _ := NewGroupAggregator([]uint32{2}, nil)
	for _, r := range rows {
		if err := keys.Add(getter(r)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, v := range keys.Results() {
		got = append(got, v.String())
	}
	slices.Sort(got)
	if want := []string{"null", `text:""`, `text:"x"`}; !slices.Equal(got, want) {
		t.Fatalf("distinct groups %v, want %v", got, want)
	}
}

// TestGroupKeyEncoding: values whose encodings run together (text is not
// self-delimiting) still form different groups.
func TestGroupKeyEncoding(t *testing.T) {
	a, _ := NewGroupAggregator([]uint32{1, 2}, []AggSpec{{Kind: AggCountStar}})
	for _, r := range []map[uint32]Value{
		{1: Text("ab"), 2: Text("c")}, {1: Text("a"), 2: Text("bc")}, {1: Text("abc")}, {2: Text("abc")},
		{1: Text("a"), 2: Text("bc")},
	} {
		if err := a.Add(getter(r)); err != nil {
			t.Fatal(err)
		}
	}
	got := fmt.Sprint(a.Results())
	want := fmt.Sprint([]Value{Text("ab"), Text("c"), Int64(1), Text("a"), Text("bc"), Int64(2),
		Text("abc"), Null(), Int64(1), Null(), Text("abc"), Int64(1)})
	if got != want {
		t.Fatalf("groups %s, want %s", got, want)
	}
}

// TestAggMerger: partial results of the rows cut into pages anyhow, merged
// in any order, equal the results over all the rows at once.
func TestAggMerger(t *testing.T) {
	rows := groupRows(500, 2)
	want := groupModel(t, rows)
	rng := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 20; round++ {
		var pages [][]Value
		for rest := rows; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(60))
			a, _ := NewGroupAggregator([]uint32{1, 2}, groupSpecs)
			for _, r := range rest[:n] {
				if err := a.Add(getter(r)); err != nil {
					t.Fatal(err)
				}
			}
			pages, rest = append(pages, a.Results()), rest[n:]
		}
		rng.Shuffle(len(pages), func(i, j int) { pages[i], pages[j] = pages[j], pages[i] })
		// Two mergers, as two tablets' pieces, merged into one.
		m, other := NewAggMerger(2, groupSpecs), NewAggMerger(2, groupSpecs)
		for i, p := range pages {
			into := m
			if i%2 == 1 {
				into = other
			}
			if err := into.Add(p); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.Merge(other); err != nil {
			t.Fatal(err)
		}
		var flat []Value
		for _, r := range m.Rows() {
			flat = append(flat, r...)
		}
		sameGroups(t, fmt.Sprintf("round %d (%d pages)", round, len(pages)), groupResults(t, flat, 2), want)
	}
	// Without group columns: one row, the results over no rows until
	// partials come.
	m := NewAggMerger(0, groupSpecs)
	if got := fmt.Sprint(m.Rows()); got != fmt.Sprint([][]Value{aggregate(t, groupSpecs, nil)}) {
		t.Fatalf("no partials: %s", got)
	}
	if err := m.Add(aggregate(t, groupSpecs, rows[:10])); err != nil {
		t.Fatal(err)
	}
	if err := m.Add(aggregate(t, groupSpecs, rows[10:])); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(m.Rows()[0]), fmt.Sprint(aggregate(t, groupSpecs, rows)); got != want {
		t.Fatalf("ungrouped merge %s, want %s", got, want)
	}
	if err := NewAggMerger(1, groupSpecs).Add(make([]Value, len(groupSpecs))); !errors.Is(err, ErrInvalidPushdown) {
		t.Fatalf("partials of the wrong width: %v", err)
	}
}

// TestScanGroupPages: a scan with a grouping aggregator stops its page
// once MaxGroups groups are held; the pages' partials merge to the
// results of one unbounded scan, forward and backward.
func TestScanGroupPages(t *testing.T) {
	eng := openTestEngine(t)
	rows := groupRows(200, 5)
	var wb WriteBatch
	for i, r := range rows {
		var cols []ColumnValue
		for c := uint32(1); c <= 4; c++ {
			if v, ok := r[c]; ok {
				cols = append(cols, ColumnValue{ID: c, Value: v})
			}
		}
		key := DocKey{TableID: 3, RangeParts: []KeyPart{{Value: Int64(int64(i))}}}.Encode()
		wb.Ops = append(wb.Ops, WriteOp{Kind: OpPutRow, RowKey: key, Columns: cols})
	}
	if err := ApplyWriteBatch(eng, 10, &wb); err != nil {
		t.Fatal(err)
	}
	want := groupModel(t, rows)
	filter := &Pred{Op: PredIsNotNull, Col: 4} // every row
	for _, maxGroups := range []int{0, 1, 3, 100} {
		for _, reverse := range []bool{false, true} {
			m := NewAggMerger(2, groupSpecs)
			span, pages := TableSpan(3), 0
			for {
				a, _ := NewGroupAggregator([]uint32{1, 2}, groupSpecs)
				_, resume, err := Scan(eng, ScanOptions{ReadOptions: ReadOptions{ReadTime: hlc.Timestamp(20)}, Span: span,
					Reverse: reverse, Filter: filter, Aggregator: a, MaxGroups: maxGroups})
				if err != nil {
					t.Fatal(err)
				}
				pages++
				res := a.Results()
				if maxGroups > 0 && len(res) > maxGroups*(2+len(groupSpecs)) {
					t.Fatalf("max groups %d: a page of %d values", maxGroups, len(res))
				}
				if err := m.Add(res); err != nil {
					t.Fatal(err)
				}
				if resume == nil {
					break
				}
				span = ResumeSpan(span, resume, reverse)
				if pages > len(rows) {
					t.Fatal("scan does not end")
				}
			}
			if maxGroups == 1 && pages < len(want) {
				t.Fatalf("max groups 1: %d pages for %d groups", pages, len(want))
			}
			var flat []Value
			for _, r := range m.Rows() {
				flat = append(flat, r...)
			}
			what := fmt.Sprintf("max groups %d reverse %v (%d pages)", maxGroups, reverse, pages)
			sameGroups(t, what, groupResults(t, flat, 2), want)
		}
	}
}

// An ungrouped aggregator ignores MaxGroups (it always has its one group).
func TestScanMaxGroupsUngrouped(t *testing.T) {
	eng := openTestEngine(t)
	var wb WriteBatch
	for i := 0; i < 5; i++ {
		key := DocKey{TableID: 3, RangeParts: []KeyPart{{Value: Int64(int64(i))}}}.Encode()
		wb.Ops = append(wb.Ops, WriteOp{Kind: OpPutRow, RowKey: key, Columns: []ColumnValue{{ID: 1, Value: Int64(1)}}})
	}
	if err := ApplyWriteBatch(eng, 10, &wb); err != nil {
		t.Fatal(err)
	}
	a, _ := NewAggregator([]AggSpec{{Kind: AggCountStar}})
	_, resume, err := Scan(eng, ScanOptions{ReadOptions: ReadOptions{ReadTime: 20}, Span: TableSpan(3), Aggregator: a, MaxGroups: 1})
	if err != nil || resume != nil || fmt.Sprint(a.Results()) != fmt.Sprint([]Value{Int64(5)}) {
		t.Fatalf("count %v resume %x err %v", a.Results(), resume, err)
	}
}
