package client_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/server/servertest"
)

// refGroups is the reference of AggregateGroups: rows grouped in the
// client by the formatted values of cols, each group's aggregates by
// refAggregates, as formatted group values → formatted results.
func refGroups(cols []string, aggs []client.Aggregate, rows []client.Row) map[string]string {
	byGroup := map[string][]client.Row{}
	for _, r := range rows {
		var key []docdb.Value
		for _, c := range cols {
			key = append(key, r[c])
		}
		byGroup[fmt.Sprint(key)] = append(byGroup[fmt.Sprint(key)], r)
	}
	out := map[string]string{}
	for k, rs := range byGroup {
		out[k] = fmt.Sprint(refAggregates(aggs, rs))
	}
	return out
}

// checkGroups compares AggregateGroups rows with refGroups; a group twice
// (partials of two tablets or pages not merged) fails too.
func checkGroups(t *testing.T, what string, got [][]docdb.Value, nGroup int, want map[string]string) {
	t.Helper()
	seen := map[string]string{}
	for _, r := range got {
		k := fmt.Sprint(r[:nGroup])
		if _, dup := seen[k]; dup {
			t.Fatalf("%s: group %s twice", what, k)
		}
		seen[k] = fmt.Sprint(r[nGroup:])
	}
	if len(seen) != len(want) {
		t.Fatalf("%s: %d groups, want %d", what, len(seen), len(want))
	}
	for k, w := range want {
		if seen[k] != w {
			t.Fatalf("%s: group %s = %s, want %s", what, k, seen[k], w)
		}
	}
}

// TestAggregateGroups: aggregates per group computed by the tablets of a
// hash-partitioned table and merged in the client, with a filter, NULL
// group values, small group pages, inside transactions (pushed down, and
// over the transaction's own writes in the client).
func TestAggregateGroups(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	cl := patientClient(t, c)
	n := 3000
	tb := create(t, cl, pdTable("pdg", 6))
	loadRows(t, tb, n, 500, pdRow)
	ref := seqScan(t, tb, client.ScanOptions{})
	aggs := []client.Aggregate{client.CountStar(), client.Count("v"), client.Sum("v"), client.Min("s"), client.Max("id"), client.Sum("f")}
	positive := refCmp("v", client.CmpGT, docdb.Int64(0))

	cases := []struct {
		groupBy []string
		filter  *refFilter
		opts    client.ScanOptions
	}{
		{groupBy: []string{"g"}},
		{groupBy: []string{"g"}, filter: &positive},
		{groupBy: []string{"g"}, opts: client.ScanOptions{MaxGroups: 2, Parallelism: 1}},
		{groupBy: []string{"g"}, opts: client.ScanOptions{MaxGroups: 1, MaxScanRows: 100}},
		{groupBy: []string{"s", "g"}, filter: &positive, opts: client.ScanOptions{MaxGroups: 50}},
		{groupBy: []string{"id"}, opts: client.ScanOptions{MaxGroups: 700}}, // a key column: a group per row
	}
	for _, tc := range cases {
		opts := tc.opts
		opts.GroupBy, opts.Aggregates = tc.groupBy, aggs
		rows := ref
		if tc.filter != nil {
			opts.Filter, rows = tc.filter.f, tc.filter.keep(ref)
		}
		want := refGroups(tc.groupBy, aggs, rows)
		got, err := tb.AggregateGroups(longCtx(t), opts)
		if err != nil {
			t.Fatal(err)
		}
		checkGroups(t, fmt.Sprintf("group by %v filter %v max groups %d", tc.groupBy, opts.Filter, opts.MaxGroups), got, len(tc.groupBy), want)
	}
	if w := refGroups([]string{"g"}, aggs, ref); len(w) != 8 || w["[null]"] == "" {
		t.Fatalf("the fixture's groups of g: %v", w)
	}

	// Group columns alone: the distinct values.
	got, err := tb.AggregateGroups(longCtx(t), client.ScanOptions{GroupBy: []string{"g"}})
	if err != nil || len(got) != 8 || len(got[0]) != 1 {
		t.Fatalf("distinct g: %v %v", got, err)
	}
	// More groups than the merge may hold: ErrTooManyGroups; as many as it
	// may, all of them.
	if _, err := tb.AggregateGroups(longCtx(t), client.ScanOptions{GroupBy: []string{"g"}, MaxMergedGroups: 7}); !errors.Is(err, client.ErrTooManyGroups) {
		t.Fatalf("8 groups, at most 7 merged: %v", err)
	}
	if got, err := tb.AggregateGroups(longCtx(t), client.ScanOptions{GroupBy: []string{"g"}, MaxMergedGroups: 8}); err != nil || len(got) != 8 {
		t.Fatalf("8 groups, at most 8 merged: %d %v", len(got), err)
	}
	// No qualifying rows: no groups; Aggregate refuses group columns.
	none := refCmp("v", client.CmpGT, docdb.Int64(1_000_000))
	if got, err := tb.AggregateGroups(longCtx(t), client.ScanOptions{GroupBy: []string{"g"}, Aggregates: aggs, Filter: none.f}); err != nil || len(got) != 0 {
		t.Fatalf("no rows: %v %v", got, err)
	}
	if _, err := tb.Aggregate(longCtx(t), client.ScanOptions{GroupBy: []string{"g"}, Aggregates: aggs}); !client.IsInvalidArgument(err) {
		t.Fatalf("Aggregate with groups: %v", err)
	}
	if _, err := tb.AggregateGroups(longCtx(t), client.ScanOptions{GroupBy: []string{"nope"}}); !client.IsInvalidArgument(err) {
		t.Fatalf("unknown group column: %v", err)
	}

	for _, iso := range []client.Isolation{client.Snapshot, client.Serializable} {
		tx, err := cl.Begin(longCtx(t), client.TxnOptions{Isolation: iso})
		if err != nil {
			t.Fatal(err)
		}
		opts := client.ScanOptions{GroupBy: []string{"g"}, Aggregates: aggs, Filter: positive.f, MaxGroups: 3}
		got, err := tx.AggregateGroups(longCtx(t), tb, opts)
		if err != nil {
			t.Fatal(err)
		}
		checkGroups(t, fmt.Sprint(iso), got, 1, refGroups([]string{"g"}, aggs, positive.keep(ref)))
		if iso == client.Snapshot {
			// Own writes: a new group, and rows moved to the NULL group.
			ops := []client.Op{{Kind: client.OpPut, Row: client.Row{"id": docdb.Int64(int64(n)), "g": docdb.Int32(100), "v": docdb.Int64(5)}}}
			after := []client.Row{ops[0].Row}
			for _, r := range ref {
				if id := r["id"].Int; id >= 1 && id <= 20 {
					ops = append(ops, client.Op{Kind: client.OpUpdate, Row: client.Row{"id": r["id"], "g": docdb.Null()}})
					moved := client.Row{}
					for k, v := range r {
						moved[k] = v
					}
					delete(moved, "g")
					r = moved
				}
				after = append(after, r)
			}
			if err := tx.Apply(longCtx(t), tb, ops); err != nil {
				t.Fatal(err)
			}
			got, err := tx.AggregateGroups(longCtx(t), tb, opts)
			if err != nil {
				t.Fatal(err)
			}
			checkGroups(t, "own writes", got, 1, refGroups([]string{"g"}, aggs, positive.keep(after)))
		}
		if err := tx.Rollback(longCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
}
