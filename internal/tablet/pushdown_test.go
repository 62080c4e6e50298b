package tablet_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/tablet"
)

// Pushdown fixture: rows keyed (a int64 asc, b text desc), key columns 10
// and 11; columns 1 v int64, 2 s text, 3 f float64, 4 g int32, each NULL
// (absent) on some rows. Some rows are deleted again (tombstones the scan
// still steps over) and some exist only through an UPDATE of a column (no
// liveness marker).
const (
	colA, colB             = 10, 11
	colV, colS, colF, colG = 1, 2, 3, 4
	pdRows                 = 400
)

var pdKeyCols = []uint32{colA, colB}

func pdKey(i int) []byte {
	return docdb.DocKey{TableID: tableID, RangeParts: []docdb.KeyPart{
		{Value: docdb.Int64(int64(i))}, {Value: docdb.Text(pdB(i)), Desc: true}}}.Encode()
}

func pdB(i int) string { return string(rune('a' + i%26)) }

// pdModel is what the fixture holds: the live rows' values by column id,
// key columns included.
type pdModel map[int]map[uint32]docdb.Value

func loadPushdownFixture(t *testing.T, h *harness) pdModel {
	t.Helper()
	model := pdModel{}
	var wb docdb.WriteBatch
	for i := 0; i < pdRows; i++ {
		vals := map[uint32]docdb.Value{colA: docdb.Int64(int64(i)), colB: docdb.Text(pdB(i))}
		var cols []docdb.ColumnValue
		if i%5 != 0 {
			vals[colV] = docdb.Int64(int64(i*7%101 - 50))
		}
		if i%7 != 0 {
			vals[colS] = docdb.Text(fmt.Sprintf("s%02d", i%13))
		}
		if i%11 != 0 {
			vals[colF] = docdb.Float64(float64(i%40) * 0.25)
		}
		vals[colG] = docdb.Int32(int32(i % 3))
		for _, id := range []uint32{colV, colS, colF, colG} {
			if v, ok := vals[id]; ok {
				cols = append(cols, docdb.ColumnValue{ID: id, Value: v})
			}
		}
		kind := docdb.OpPutRow
		if i%19 == 0 {
			kind = docdb.OpPutColumns // exists through its columns only
		}
		wb.Ops = append(wb.Ops, docdb.WriteOp{Kind: kind, RowKey: pdKey(i), Columns: cols})
		model[i] = vals
	}
	write := func(wb *docdb.WriteBatch) {
		h.retry(t, "write", func(ctx context.Context, tb *tablet.Tablet) error {
			_, err := tb.Write(ctx, wb)
			return err
		})
	}
	write(&wb)
	var del docdb.WriteBatch
	for i := 0; i < pdRows; i += 17 {
		del.Ops = append(del.Ops, docdb.WriteOp{Kind: docdb.OpDeleteRow, RowKey: pdKey(i)})
		delete(model, i)
	}
	write(&del)
	return model
}

// ids returns the model's rows for which keep holds, ascending.
func (m pdModel) ids(keep func(r map[uint32]docdb.Value) bool) []int {
	var out []int
	for i, r := range m {
		if keep(r) {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out
}

func rowIDs(t *testing.T, rows []docdb.Row) []int {
	t.Helper()
	out := make([]int, len(rows))
	for i, r := range rows {
		k, err := docdb.DecodeDocKey(r.Key)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = int(k.RangeParts[0].Value.Int)
	}
	return out
}

func eq(op docdb.PredOp, col uint32, v docdb.Value) *docdb.Pred {
	return &docdb.Pred{Op: op, Col: col, Vals: []docdb.Value{v}}
}

func and(ps ...*docdb.Pred) *docdb.Pred { return &docdb.Pred{Op: docdb.PredAnd, Args: ps} }
func or(ps ...*docdb.Pred) *docdb.Pred  { return &docdb.Pred{Op: docdb.PredOr, Args: ps} }
func not(p *docdb.Pred) *docdb.Pred     { return &docdb.Pred{Op: docdb.PredNot, Args: []*docdb.Pred{p}} }

// isNull reports whether a model row's column is NULL.
func isNull(r map[uint32]docdb.Value, c uint32) bool { return r[c].IsNull() }

// pdFilterCases pair predicates with the rows they must keep, written out
// in plain Go with SQL's NULL rules.
func pdFilterCases() []struct {
	name string
	p    *docdb.Pred
	keep func(r map[uint32]docdb.Value) bool
} {
	v := func(r map[uint32]docdb.Value) int64 { return r[colV].Int }
	return []struct {
		name string
		p    *docdb.Pred
		keep func(r map[uint32]docdb.Value) bool
	}{
		{"v = 6", eq(docdb.PredEQ, colV, docdb.Int64(6)), func(r map[uint32]docdb.Value) bool { return !isNull(r, colV) && v(r) == 6 }},
		{"v != 6", eq(docdb.PredNE, colV, docdb.Int64(6)), func(r map[uint32]docdb.Value) bool { return !isNull(r, colV) && v(r) != 6 }},
		{"v < -20", eq(docdb.PredLT, colV, docdb.Int64(-20)), func(r map[uint32]docdb.Value) bool { return !isNull(r, colV) && v(r) < -20 }},
		{"v <= -20", eq(docdb.PredLE, colV, docdb.Int64(-20)), func(r map[uint32]docdb.Value) bool { return !isNull(r, colV) && v(r) <= -20 }},
		{"v > 40", eq(docdb.PredGT, colV, docdb.Int64(40)), func(r map[uint32]docdb.Value) bool { return !isNull(r, colV) && v(r) > 40 }},
		{"v >= 40", eq(docdb.PredGE, colV, docdb.Int64(40)), func(r map[uint32]docdb.Value) bool { return !isNull(r, colV) && v(r) >= 40 }},
		{"v IS NULL", &docdb.Pred{Op: docdb.PredIsNull, Col: colV}, func(r map[uint32]docdb.Value) bool { return isNull(r, colV) }},
		{"s IS NOT NULL", &docdb.Pred{Op: docdb.PredIsNotNull, Col: colS}, func(r map[uint32]docdb.Value) bool { return !isNull(r, colS) }},
		{"s IN (s03, NULL, s07)", &docdb.Pred{Op: docdb.PredIn, Col: colS, Vals: []docdb.Value{docdb.Text("s03"), docdb.Null(), docdb.Text("s07")}},
			func(r map[uint32]docdb.Value) bool {
				return !isNull(r, colS) && (string(r[colS].Bytes) == "s03" || string(r[colS].Bytes) == "s07")
			}},
		{"NOT (s IN (s03, NULL))", not(&docdb.Pred{Op: docdb.PredIn, Col: colS, Vals: []docdb.Value{docdb.Text("s03"), docdb.Null()}}),
			func(map[uint32]docdb.Value) bool { return false }}, // never TRUE: FALSE or UNKNOWN inside
		{"NOT (v > 0)", not(eq(docdb.PredGT, colV, docdb.Int64(0))), func(r map[uint32]docdb.Value) bool { return !isNull(r, colV) && v(r) <= 0 }},
		{"v > 0 OR s = s05", or(eq(docdb.PredGT, colV, docdb.Int64(0)), eq(docdb.PredEQ, colS, docdb.Text("s05"))),
			func(r map[uint32]docdb.Value) bool {
				return (!isNull(r, colV) && v(r) > 0) || (!isNull(r, colS) && string(r[colS].Bytes) == "s05")
			}},
		{"NOT (v > 0 OR f < 2)", not(or(eq(docdb.PredGT, colV, docdb.Int64(0)), eq(docdb.PredLT, colF, docdb.Float64(2)))),
			func(r map[uint32]docdb.Value) bool {
				return !isNull(r, colV) && v(r) <= 0 && !isNull(r, colF) && r[colF].Float >= 2
			}},
		{"NOT (v > 0 AND f < 2)", not(and(eq(docdb.PredGT, colV, docdb.Int64(0)), eq(docdb.PredLT, colF, docdb.Float64(2)))),
			func(r map[uint32]docdb.Value) bool {
				return (!isNull(r, colV) && v(r) <= 0) || (!isNull(r, colF) && r[colF].Float >= 2)
			}},
		{"v = NULL", eq(docdb.PredEQ, colV, docdb.Null()), func(map[uint32]docdb.Value) bool { return false }},
		{"NOT v = NULL", not(eq(docdb.PredEQ, colV, docdb.Null())), func(map[uint32]docdb.Value) bool { return false }},
		// Key columns, decoded from the row key.
		{"a >= 100 AND a < 130", and(eq(docdb.PredGE, colA, docdb.Int64(100)), eq(docdb.PredLT, colA, docdb.Int64(130))),
			func(r map[uint32]docdb.Value) bool { return r[colA].Int >= 100 && r[colA].Int < 130 }},
		{"b = c", eq(docdb.PredEQ, colB, docdb.Text("c")), func(r map[uint32]docdb.Value) bool { return string(r[colB].Bytes) == "c" }},
		{"b IN (x, y) AND g = 1", and(&docdb.Pred{Op: docdb.PredIn, Col: colB, Vals: []docdb.Value{docdb.Text("x"), docdb.Text("y")}},
			eq(docdb.PredEQ, colG, docdb.Int32(1))),
			func(r map[uint32]docdb.Value) bool {
				b := string(r[colB].Bytes)
				return (b == "x" || b == "y") && r[colG].Int == 1
			}},
		{"empty AND", and(), func(map[uint32]docdb.Value) bool { return true }},
		{"empty OR", or(), func(map[uint32]docdb.Value) bool { return false }},
	}
}

// pagedScan scans span page by page at one read time, checking every page
// against the limit and that the scan moves forward; it returns the rows
// and the number of pages.
func pagedScan(t *testing.T, tb *tablet.Tablet, opts tablet.ScanOptions) ([]docdb.Row, int) {
	t.Helper()
	span := docdb.TableSpan(tableID)
	var rt hlc.Timestamp
	var out []docdb.Row
	pages := 0
	for {
		opts.Span = span
		rows, resume, at, err := tb.ScanTxn(context.Background(), opts, tablet.TxnRead{ReadTime: rt})
		if err != nil {
			t.Fatal(err)
		}
		rt = at
		pages++
		if opts.Limit > 0 && len(rows) > opts.Limit {
			t.Fatalf("page of %d rows, limit %d", len(rows), opts.Limit)
		}
		out = append(out, rows...)
		if resume == nil {
			return out, pages
		}
		next := docdb.ResumeSpan(span, resume, opts.Reverse)
		if (!opts.Reverse && bytes.Compare(next.Start, span.Start) <= 0) || (opts.Reverse && bytes.Compare(next.End, span.End) >= 0) {
			t.Fatalf("no progress: span %x..%x resumes at %x", span.Start, span.End, resume)
		}
		span = next
		if pages > 10*pdRows {
			t.Fatal("scan does not end")
		}
	}
}

func TestScanFilter(t *testing.T) {
	h := newHarness(t, 1, []uint64{1})
	model := loadPushdownFixture(t, h)
	tb := h.waitLeader(t)
	for _, c := range pdFilterCases() {
		want := model.ids(c.keep)
		// One request, then pages: small limits and a budget of examined
		// rows that a filter dropping most rows hits long before the
		// limit, forward and reverse.
		for _, o := range []tablet.ScanOptions{
			{},
			{Limit: 3, MaxRows: 10},
			{Limit: 1000, MaxRows: 1},
			{Limit: 2, MaxRows: 7, Reverse: true},
			{Limit: 5, Columns: []uint32{colG}},
		} {
			o.Filter, o.KeyColumns = c.p, pdKeyCols
			rows, pages := pagedScan(t, tb, o)
			got := rowIDs(t, rows)
			if o.Reverse {
				slices.Reverse(got)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s (limit %d, max rows %d, reverse %v): rows %v, want %v", c.name, o.Limit, o.MaxRows, o.Reverse, got, want)
			}
			if o.MaxRows == 1 && pages < len(model) {
				t.Fatalf("%s: %d pages with a budget of one row for %d rows", c.name, pages, len(model))
			}
			// Rows carry the projection only, not the filter's columns.
			if o.Columns != nil {
				for _, r := range rows {
					for _, cv := range r.Columns {
						if cv.ID != colG {
							t.Fatalf("%s: column %d outside the projection", c.name, cv.ID)
						}
					}
				}
			}
		}
	}
}

// pagedAggregate runs AggregateTxn page by page at one read time and
// merges the partial results.
func pagedAggregate(t *testing.T, tb *tablet.Tablet, opts tablet.ScanOptions) ([]docdb.Value, int) {
	t.Helper()
	span := docdb.TableSpan(tableID)
	var rt hlc.Timestamp
	var acc []docdb.Value
	pages := 0
	for {
		opts.Span = span
		part, resume, at, err := tb.AggregateTxn(context.Background(), opts, tablet.TxnRead{ReadTime: rt})
		if err != nil {
			t.Fatal(err)
		}
		rt = at
		pages++
		if acc == nil {
			acc = part
		} else {
			for i, s := range opts.Aggregates {
				if acc[i], err = docdb.MergeAggregate(s.Kind, acc[i], part[i]); err != nil {
					t.Fatal(err)
				}
			}
		}
		if resume == nil {
			return acc, pages
		}
		next := docdb.ResumeSpan(span, resume, opts.Reverse)
		if bytes.Equal(next.Start, span.Start) && bytes.Equal(next.End, span.End) {
			t.Fatalf("no progress at %x", resume)
		}
		span = next
	}
}

func TestScanAggregates(t *testing.T) {
	h := newHarness(t, 1, []uint64{1})
	model := loadPushdownFixture(t, h)
	tb := h.waitLeader(t)
	specs := []docdb.AggSpec{
		{Kind: docdb.AggCountStar}, {Kind: docdb.AggCount, Col: colV}, {Kind: docdb.AggSum, Col: colV},
		{Kind: docdb.AggSum, Col: colF}, {Kind: docdb.AggSum, Col: colG}, {Kind: docdb.AggMin, Col: colS},
		{Kind: docdb.AggMax, Col: colS}, {Kind: docdb.AggMin, Col: colA}, {Kind: docdb.AggMax, Col: colB},
		{Kind: docdb.AggMax, Col: colF},
	}
	for _, c := range pdFilterCases() {
		// The expected results, computed here over the model.
		var count, countV, sumV, sumG int64
		var sumF float64
		var nF int
		var minS, maxS, maxB, maxF, minA docdb.Value
		for _, i := range model.ids(c.keep) {
			r := model[i]
			count++
			if !isNull(r, colV) {
				countV++
				sumV += r[colV].Int
			}
			if !isNull(r, colF) {
				nF++
				sumF += r[colF].Float
				if maxF.IsNull() || r[colF].Float > maxF.Float {
					maxF = r[colF]
				}
			}
			sumG += r[colG].Int
			if !isNull(r, colS) && (minS.IsNull() || string(r[colS].Bytes) < string(minS.Bytes)) {
				minS = r[colS]
			}
			if !isNull(r, colS) && (maxS.IsNull() || string(r[colS].Bytes) > string(maxS.Bytes)) {
				maxS = r[colS]
			}
			if maxB.IsNull() || string(r[colB].Bytes) > string(maxB.Bytes) {
				maxB = r[colB]
			}
			if minA.IsNull() || r[colA].Int < minA.Int {
				minA = r[colA]
			}
		}
		nullIf := func(v docdb.Value, none bool) docdb.Value {
			if none {
				return docdb.Null()
			}
			return v
		}
		want := []docdb.Value{docdb.Int64(count), docdb.Int64(countV), nullIf(docdb.Int64(sumV), countV == 0),
			nullIf(docdb.Float64(sumF), nF == 0), nullIf(docdb.Int64(sumG), count == 0), minS, maxS, minA, maxB, maxF}
		for _, o := range []tablet.ScanOptions{{}, {MaxRows: 7}, {MaxRows: 1, Reverse: true}} {
			o.Filter, o.KeyColumns, o.Aggregates = c.p, pdKeyCols, specs
			got, pages := pagedAggregate(t, tb, o)
			if o.MaxRows == 1 && pages < len(model) {
				t.Fatalf("%s: %d pages for a budget of one row", c.name, pages)
			}
			for i := range want {
				if got[i].Type != want[i].Type || !got[i].Equal(want[i]) {
					t.Fatalf("%s (max rows %d): %s(%d) = %s, want %s", c.name, o.MaxRows, specs[i].Kind, specs[i].Col, got[i], want[i])
				}
			}
		}
	}
}

func TestScanPushdownErrors(t *testing.T) {
	h := newHarness(t, 1, []uint64{1})
	loadPushdownFixture(t, h)
	tb := h.waitLeader(t)
	ctx := context.Background()
	span := docdb.TableSpan(tableID)
	cases := []struct {
		name string
		run  func() error
	}{
		{"SUM of text", func() error {
			_, _, _, err := tb.AggregateTxn(ctx, tablet.ScanOptions{Span: span, Aggregates: []docdb.AggSpec{{Kind: docdb.AggSum, Col: colS}}}, tablet.TxnRead{})
			return err
		}},
		{"limit with aggregates", func() error {
			_, _, _, err := tb.AggregateTxn(ctx, tablet.ScanOptions{Span: span, Limit: 5, Aggregates: []docdb.AggSpec{{Kind: docdb.AggCountStar}}}, tablet.TxnRead{})
			return err
		}},
		{"aggregates in a row scan", func() error {
			_, _, _, err := tb.ScanTxn(ctx, tablet.ScanOptions{Span: span, Aggregates: []docdb.AggSpec{{Kind: docdb.AggCountStar}}}, tablet.TxnRead{})
			return err
		}},
		{"malformed filter", func() error {
			_, _, _, err := tb.ScanTxn(ctx, tablet.ScanOptions{Span: span, Filter: &docdb.Pred{Op: docdb.PredNot}}, tablet.TxnRead{})
			return err
		}},
		{"key columns that do not fit", func() error {
			_, _, _, err := tb.ScanTxn(ctx, tablet.ScanOptions{Span: span, Filter: eq(docdb.PredEQ, colA, docdb.Int64(1)), KeyColumns: []uint32{colA}}, tablet.TxnRead{})
			return err
		}},
	}
	for _, c := range cases {
		if err := c.run(); !tablet.IsInvalidPushdown(err) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// TestAggregateSumOverflowAcrossPages: an int64 SUM that leaves the int64
// range inside one page comes back as an exact decimal, and pages merge.
func TestAggregateSumOverflowAcrossPages(t *testing.T) {
	h := newHarness(t, 1, []uint64{1})
	h.waitLeader(t)
	var wb docdb.WriteBatch
	for i := 0; i < 6; i++ {
		wb.Ops = append(wb.Ops, docdb.WriteOp{Kind: docdb.OpPutRow, RowKey: rowKey(i),
			Columns: []docdb.ColumnValue{{ID: 1, Value: docdb.Int64(math.MaxInt64 - int64(i))}}})
	}
	h.retry(t, "write", func(ctx context.Context, tb *tablet.Tablet) error {
		_, err := tb.Write(ctx, &wb)
		return err
	})
	tb := h.waitLeader(t)
	for _, maxRows := range []int{0, 1, 4} {
		got, _ := pagedAggregate(t, tb, tablet.ScanOptions{MaxRows: maxRows, Aggregates: []docdb.AggSpec{{Kind: docdb.AggSum, Col: 1}}})
		// 6 * (2^63-1) - 15
		if got[0].Type != docdb.TypeDecimal || string(got[0].Bytes) != "55340232221128654827" {
			t.Fatalf("max rows %d: sum %s", maxRows, got[0])
		}
	}
}
