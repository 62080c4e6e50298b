package tablet_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/tablet"
)

// pagedGroups runs a grouped AggregateTxn page by page at one read time
// and merges the pages' partial rows; it returns the merged rows by
// formatted group values, and the pages.
func pagedGroups(t *testing.T, tb *tablet.Tablet, opts tablet.ScanOptions) (map[string]string, int) {
	t.Helper()
	span := docdb.TableSpan(tableID)
	m := docdb.NewAggMerger(len(opts.GroupBy), opts.Aggregates)
	var rt hlc.Timestamp
	pages := 0
	for {
		opts.Span = span
		part, resume, at, err := tb.AggregateTxn(context.Background(), opts, tablet.TxnRead{ReadTime: rt})
		if err != nil {
			t.Fatal(err)
		}
		rt = at
		pages++
		if w := len(opts.GroupBy) + len(opts.Aggregates); opts.MaxGroups > 0 && len(part) > opts.MaxGroups*w {
			t.Fatalf("a page of %d partial rows, max groups %d", len(part)/w, opts.MaxGroups)
		}
		if err := m.Add(part); err != nil {
			t.Fatal(err)
		}
		if resume == nil {
			break
		}
		next := docdb.ResumeSpan(span, resume, opts.Reverse)
		if bytes.Equal(next.Start, span.Start) && bytes.Equal(next.End, span.End) {
			t.Fatalf("no progress at %x", resume)
		}
		span = next
	}
	out := map[string]string{}
	for _, r := range m.Rows() {
		k := fmt.Sprint(r[:len(opts.GroupBy)])
		if _, dup := out[k]; dup {
			t.Fatalf("group %s twice after the merge", k)
		}
		out[k] = fmt.Sprint(r[len(opts.GroupBy):])
	}
	return out, pages
}

// TestScanGroupedAggregates: partial aggregates per group over the rows a
// filter qualifies, grouped by a non-key column with NULLs (one group), a
// non-key int column and a descending key column, paged by rows examined
// and by groups, equal per group the model's rows aggregated alone.
func TestScanGroupedAggregates(t *testing.T) {
	h := newHarness(t, 1, []uint64{1})
	model := loadPushdownFixture(t, h)
	tb := h.waitLeader(t)
	specs := []docdb.AggSpec{{Kind: docdb.AggCountStar}, {Kind: docdb.AggCount, Col: colV}, {Kind: docdb.AggSum, Col: colV},
		{Kind: docdb.AggMin, Col: colS}, {Kind: docdb.AggMax, Col: colA}}
	for _, groupBy := range [][]uint32{{colS}, {colG, colS}, {colB}, {colG}} {
		for _, c := range pdFilterCases()[:8] {
			// The model: the qualifying rows by group, each group
			// aggregated alone.
			rows := map[string][]map[uint32]docdb.Value{}
			for _, i := range model.ids(c.keep) {
				r := model[i]
				var key []docdb.Value
				for _, g := range groupBy {
					key = append(key, r[g])
				}
				rows[fmt.Sprint(key)] = append(rows[fmt.Sprint(key)], r)
			}
			want := map[string]string{}
			for k, rs := range rows {
				a, err := docdb.NewAggregator(specs)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rs {
					if err := a.Add(func(col uint32) docdb.Value { return r[col] }); err != nil {
						t.Fatal(err)
					}
				}
				want[k] = fmt.Sprint(a.Results())
			}
			if len(groupBy) == 1 && groupBy[0] == colS && c.name == "v IS NULL" {
				if _, ok := want["[null]"]; !ok {
					t.Fatalf("the fixture has no NULL group for %s: %v", c.name, want)
				}
			}
			for _, o := range []tablet.ScanOptions{{}, {MaxGroups: 1}, {MaxGroups: 4, Reverse: true}, {MaxRows: 7}} {
				o.Filter, o.KeyColumns, o.Aggregates, o.GroupBy = c.p, pdKeyCols, specs, groupBy
				got, pages := pagedGroups(t, tb, o)
				what := fmt.Sprintf("group by %v, %s, max groups %d, max rows %d, reverse %v", groupBy, c.name, o.MaxGroups, o.MaxRows, o.Reverse)
				if o.MaxGroups == 1 && pages < len(want) {
					t.Fatalf("%s: %d pages for %d groups", what, pages, len(want))
				}
				if len(got) != len(want) {
					t.Fatalf("%s: %d groups, want %d:\n got %v\nwant %v", what, len(got), len(want), got, want)
				}
				for k, w := range want {
					if got[k] != w {
						t.Fatalf("%s: group %s = %s, want %s", what, k, got[k], w)
					}
				}
			}
		}
	}
}

// TestScanGroupsWithoutAggregates: group columns alone are an aggregate
// read (the distinct groups); a row scan refuses them.
func TestScanGroupsWithoutAggregates(t *testing.T) {
	h := newHarness(t, 1, []uint64{1})
	loadPushdownFixture(t, h)
	tb := h.waitLeader(t)
	got, _ := pagedGroups(t, tb, tablet.ScanOptions{GroupBy: []uint32{colG}, KeyColumns: pdKeyCols})
	if len(got) != 3 || got["[int32:0]"] != "[]" || got["[int32:2]"] != "[]" {
		t.Fatalf("groups of g: %v", got)
	}
	_, _, _, err := tb.ScanTxn(context.Background(), tablet.ScanOptions{Span: docdb.TableSpan(tableID), GroupBy: []uint32{colG}}, tablet.TxnRead{})
	if !tablet.IsInvalidPushdown(err) {
		t.Fatalf("groups in a row scan: %v", err)
	}
}
