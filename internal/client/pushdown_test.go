package client_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/server/servertest"
)

// The pushdown fixture: id int64 (hash key), g int32, v int64, f float64
// (multiples of 0.5, so that float sums are exact in any order), s text;
// each non-key column NULL on some rows.
func pdTable(name string, tablets uint32) *masterpb.CreateTableRequest {
	return &masterpb.CreateTableRequest{
		Namespace: "test", Name: name,
		Schema: &masterpb.Schema{Columns: []*masterpb.ColumnSchema{
			{Id: 1, Name: "id", Type: "int64", IsHashKey: true},
			{Id: 2, Name: "g", Type: "int32", Nullable: true},
			{Id: 3, Name: "v", Type: "int64", Nullable: true},
			{Id: 4, Name: "f", Type: "float64", Nullable: true},
			{Id: 5, Name: "s", Type: "text", Nullable: true},
		}},
		Partitioning: &masterpb.Partitioning{Kind: masterpb.Partitioning_HASH, NumTablets: tablets},
	}
}

func pdRow(i int) client.Row {
	r := client.Row{"id": docdb.Int64(int64(i))}
	if i%10 != 0 {
		r["g"] = docdb.Int32(int32(i % 7))
	}
	if i%13 != 0 {
		r["v"] = docdb.Int64(int64((i*7919)%20001 - 10000))
	}
	if i%17 != 0 {
		r["f"] = docdb.Float64(float64(i%100) * 0.5)
	}
	if i%11 != 0 {
		r["s"] = docdb.Text(fmt.Sprintf("s%03d", i%500))
	}
	return r
}

// loadRows writes rows [0, n) in batches from 4 goroutines.
func loadRows(t testing.TB, tb *client.Table, n, batch int, row func(i int) client.Row) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for from := w * batch; from < n; from += 4 * batch {
				var ops []client.Op
				for i := from; i < min(from+batch, n); i++ {
					ops = append(ops, client.Op{Kind: client.OpPut, Row: row(i)})
				}
				if err := tb.Apply(context.Background(), ops); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// seqScan is the reference: the Scanner's own page-by-page iteration,
// which reads one tablet after another.
func seqScan(t testing.TB, tb *client.Table, opts client.ScanOptions) []client.Row {
	t.Helper()
	sc := tb.Scan(longCtx(t), opts)
	var out []client.Row
	for sc.Next() {
		out = append(out, sc.Row())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// ---- A reference evaluator, independent of the one under test ----

type tri int8

const (
	triF tri = iota
	triU
	triT
)

func triOf(b bool) tri {
	if b {
		return triT
	}
	return triF
}

// refFilter is a client.Filter together with its meaning in plain Go.
type refFilter struct {
	f    *client.Filter
	eval func(r client.Row) tri
}

func refCmp(col string, op client.CmpOp, c docdb.Value) refFilter {
	return refFilter{client.Cmp(col, op, c), func(r client.Row) tri {
		v := r[col]
		if v.IsNull() || c.IsNull() {
			return triU
		}
		x := v.Compare(c)
		return triOf(map[client.CmpOp]bool{client.CmpEQ: x == 0, client.CmpNE: x != 0, client.CmpLT: x < 0,
			client.CmpLE: x <= 0, client.CmpGT: x > 0, client.CmpGE: x >= 0}[op])
	}}
}

func refIsNull(col string, not bool) refFilter {
	f := client.IsNull(col)
	if not {
		f = client.IsNotNull(col)
	}
	return refFilter{f, func(r client.Row) tri { return triOf(r[col].IsNull() != not) }}
}

func refIn(col string, vals ...docdb.Value) refFilter {
	return refFilter{client.In(col, vals...), func(r client.Row) tri {
		v := r[col]
		if v.IsNull() {
			return triU
		}
		out := triF
		for _, c := range vals {
			if c.IsNull() {
				out = triU
			} else if v.Compare(c) == 0 {
				return triT
			}
		}
		return out
	}}
}

func refAnd(fs ...refFilter) refFilter {
	var cf []*client.Filter
	for _, f := range fs {
		cf = append(cf, f.f)
	}
	return refFilter{client.And(cf...), func(r client.Row) tri {
		out := triT
		for _, f := range fs {
			out = min(out, f.eval(r))
		}
		return out
	}}
}

func refOr(fs ...refFilter) refFilter {
	var cf []*client.Filter
	for _, f := range fs {
		cf = append(cf, f.f)
	}
	return refFilter{client.Or(cf...), func(r client.Row) tri {
		out := triF
		for _, f := range fs {
			out = max(out, f.eval(r))
		}
		return out
	}}
}

func refNot(f refFilter) refFilter {
	return refFilter{client.Not(f.f), func(r client.Row) tri { return triT - f.eval(r) }}
}

func (f refFilter) keep(rows []client.Row) []client.Row {
	var out []client.Row
	for _, r := range rows {
		if f.f == nil || f.eval(r) == triT {
			out = append(out, r)
		}
	}
	return out
}

// pdColumns generate random constants of the fixture's columns.
var pdColumns = map[string]func(rng *rand.Rand) docdb.Value{
	"id": func(rng *rand.Rand) docdb.Value { return docdb.Int64(int64(rng.IntN(21000))) },
	"g":  func(rng *rand.Rand) docdb.Value { return docdb.Int32(int32(rng.IntN(8))) },
	"v":  func(rng *rand.Rand) docdb.Value { return docdb.Int64(int64(rng.IntN(20001) - 10000)) },
	"f":  func(rng *rand.Rand) docdb.Value { return docdb.Float64(float64(rng.IntN(100)) * 0.5) },
	"s":  func(rng *rand.Rand) docdb.Value { return docdb.Text(fmt.Sprintf("s%03d", rng.IntN(500))) },
}

func randFilter(rng *rand.Rand, depth int) refFilter {
	names := []string{"id", "g", "v", "f", "s"}
	col := names[rng.IntN(len(names))]
	val := func() docdb.Value {
		if rng.IntN(15) == 0 {
			return docdb.Null()
		}
		return pdColumns[col](rng)
	}
	if depth < 3 && rng.IntN(3) == 0 {
		var args []refFilter
		for n := rng.IntN(4); n > 0; n-- {
			args = append(args, randFilter(rng, depth+1))
		}
		switch rng.IntN(3) {
		case 0:
			return refAnd(args...)
		case 1:
			return refOr(args...)
		default:
			return refNot(randFilter(rng, depth+1))
		}
	}
	switch rng.IntN(8) {
	case 0:
		return refIsNull(col, rng.IntN(2) == 0)
	case 1:
		var vals []docdb.Value
		for n := rng.IntN(4); n > 0; n-- {
			vals = append(vals, val())
		}
		return refIn(col, vals...)
	}
	return refCmp(col, client.CmpOp(1+rng.IntN(6)), val())
}

// refAggregates computes aggs over rows in plain Go.
func refAggregates(aggs []client.Aggregate, rows []client.Row) []docdb.Value {
	out := make([]docdb.Value, len(aggs))
	for i, a := range aggs {
		var n int64
		var isum int64
		var fsum float64
		var ext docdb.Value
		for _, r := range rows {
			v := r[a.Column]
			if a.Kind == docdb.AggCountStar {
				n++
				continue
			}
			if v.IsNull() {
				continue
			}
			n++
			switch a.Kind {
			case docdb.AggSum:
				if v.Type == docdb.TypeFloat64 {
					fsum += v.Float
				} else {
					isum += v.Int // the fixture's sums stay far inside int64
				}
			case docdb.AggMin:
				if ext.IsNull() || v.Compare(ext) < 0 {
					ext = v
				}
			case docdb.AggMax:
				if ext.IsNull() || v.Compare(ext) > 0 {
					ext = v
				}
			}
		}
		switch a.Kind {
		case docdb.AggCountStar, docdb.AggCount:
			out[i] = docdb.Int64(n)
		case docdb.AggSum:
			switch {
			case n == 0:
			case a.Column == "f":
				out[i] = docdb.Float64(fsum)
			default:
				out[i] = docdb.Int64(isum)
			}
		default:
			out[i] = ext
		}
	}
	return out
}

var pdAggs = []client.Aggregate{client.CountStar(), client.Count("v"), client.Count("id"), client.Sum("v"), client.Sum("g"),
	client.Sum("f"), client.Min("v"), client.Max("v"), client.Min("s"), client.Max("s"), client.Min("f"), client.Max("id")}

func sameValues(a, b []docdb.Value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

func ids(rows []client.Row) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r["id"].Int
	}
	return out
}

func sortedIDs(rows []client.Row) []int64 {
	out := ids(rows)
	slices.Sort(out)
	return out
}

// pdFilters are fixed filters: every operator, NULLs, the key column.
func pdFilters() []refFilter {
	return []refFilter{
		{},
		refCmp("v", client.CmpGT, docdb.Int64(5000)),
		refCmp("v", client.CmpLE, docdb.Int64(-9000)),
		refAnd(refCmp("id", client.CmpGE, docdb.Int64(1000)), refCmp("id", client.CmpLT, docdb.Int64(1100))),
		refCmp("id", client.CmpEQ, docdb.Int64(4242)),
		refCmp("s", client.CmpNE, docdb.Text("s007")),
		refIsNull("g", false),
		refIn("g", docdb.Int32(1), docdb.Null(), docdb.Int32(3)),
		refNot(refIn("g", docdb.Int32(1), docdb.Int32(3))),
		refOr(refCmp("f", client.CmpLT, docdb.Float64(1)), refIsNull("s", false)),
		refNot(refOr(refCmp("v", client.CmpGT, docdb.Int64(0)), refCmp("f", client.CmpGE, docdb.Float64(25)))),
		refCmp("v", client.CmpEQ, docdb.Null()),
		refCmp("v", client.CmpGT, docdb.Int64(1<<40)), // nothing
	}
}

// longCtx is the context of one operation of these tests.
func longCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// patientClient opens a client whose operations and attempts outlast a
// slow, shared machine: these tests scan tens of thousands of rows many
// times, and must not fail because the machine is slow.
func patientClient(t testing.TB, c *servertest.Cluster) *client.Client {
	t.Helper()
	cl, err := client.Open(longCtx(t), client.Config{Masters: c.Addrs, Timeout: time.Minute, AttemptTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestPushdown: filters, aggregates and parallel scans on a 3-node
// cluster against computations in the client over a sequential scan.
func TestPushdown(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	cl := patientClient(t, c)
	n, randomFilters := 20000, 24
	if testing.Short() {
		n, randomFilters = 4000, 8
	}
	tb := create(t, cl, pdTable("pd", 8))
	loadRows(t, tb, n, 1000, pdRow)
	ref := seqScan(t, tb, client.ScanOptions{})
	if len(ref) != n {
		t.Fatalf("%d rows loaded, want %d", len(ref), n)
	}

	// checkAll compares the pushed-down results of every fixed filter with
	// the reference rows.
	checkAll := func(t *testing.T, tb *client.Table, ref []client.Row, filters []refFilter) {
		t.Helper()
		for _, f := range filters {
			want := f.keep(ref)
			got, err := tb.ScanAll(longCtx(t), client.ScanOptions{Filter: f.f})
			if err != nil {
				t.Fatalf("%s: %v", f.f, err)
			}
			if !slices.Equal(ids(got), ids(want)) {
				t.Fatalf("%s: %d rows, want %d", f.f, len(got), len(want))
			}
			res, err := tb.Aggregate(longCtx(t), client.ScanOptions{Filter: f.f, Aggregates: pdAggs})
			if err != nil {
				t.Fatalf("%s: %v", f.f, err)
			}
			if w := refAggregates(pdAggs, want); !sameValues(res, w) {
				t.Fatalf("%s: aggregates %v, want %v", f.f, res, w)
			}
		}
	}

	t.Run("parallel scan", func(t *testing.T) {
		for _, p := range []int{0, 1, 3} {
			got, err := tb.ScanAll(longCtx(t), client.ScanOptions{Parallelism: p, PageSize: 700})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(got), ids(ref)) {
				t.Fatalf("parallelism %d: rows differ from the sequential scan", p)
			}
		}
		got, err := tb.ScanAll(longCtx(t), client.ScanOptions{Reverse: true, ReadOptions: client.ReadOptions{Columns: []string{"v"}}})
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(ids(ref))
		slices.Reverse(want)
		if !slices.Equal(ids(got), want) {
			t.Fatal("reverse parallel scan out of order")
		}
		for _, r := range got {
			if _, ok := r["s"]; ok {
				t.Fatal("projection ignored")
			}
		}
	})

	t.Run("filters and aggregates", func(t *testing.T) { checkAll(t, tb, ref, pdFilters()) })

	// Keep: a filter the client evaluates; Limit counts the rows it keeps,
	// with and without a pushed filter, alone and inside a transaction
	// (where an own write must be seen by it).
	t.Run("client-side filter with a limit", func(t *testing.T) {
		keep := func(r client.Row) (bool, error) { return r["id"].Int%97 == 5, nil }
		var want []client.Row
		for _, r := range ref {
			if ok, _ := keep(r); ok {
				want = append(want, r)
			}
		}
		for _, limit := range []int{1, 7, 150} {
			got, err := tb.ScanAll(longCtx(t), client.ScanOptions{Keep: keep, Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			if w := want[:min(limit, len(want))]; !slices.Equal(ids(got), ids(w)) {
				t.Fatalf("limit %d: %v, want %v", limit, ids(got), ids(w))
			}
		}
		tx, err := cl.Begin(longCtx(t), client.TxnOptions{Isolation: client.Snapshot})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(longCtx(t)) }()
		// Row 5 passes the filter; deleted here, the next ones take its place.
		if err := tx.Apply(longCtx(t), tb, []client.Op{{Kind: client.OpDelete, Row: client.Row{"id": docdb.Int64(5)}}}); err != nil {
			t.Fatal(err)
		}
		var wantTx []client.Row
		for _, r := range want {
			if r["id"].Int != 5 {
				wantTx = append(wantTx, r)
			}
		}
		got, err := tx.Scan(longCtx(t), tb, client.ScanOptions{Keep: keep, Limit: 7})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(sortedIDs(got), sortedIDs(wantTx[:7])) {
			t.Fatalf("in a transaction that deleted row 5: %v, want %v", sortedIDs(got), sortedIDs(wantTx[:7]))
		}
	})

	t.Run("count star", func(t *testing.T) {
		for _, p := range []int{0, 1} {
			res, err := tb.Aggregate(longCtx(t), client.ScanOptions{Aggregates: []client.Aggregate{client.CountStar()}, Parallelism: p})
			if err != nil || res[0].Int != int64(n) {
				t.Fatalf("parallelism %d: count(*) = %v, %v", p, res, err)
			}
		}
		// At followers (a fresh safe point: at most 1 ms stale), or at
		// the leaders where a follower cannot serve.
		res, err := tb.Aggregate(longCtx(t), client.ScanOptions{Aggregates: []client.Aggregate{client.CountStar(), client.Sum("v")},
			ReadOptions: client.ReadOptions{FollowerReads: true, MaxStaleness: time.Millisecond}})
		if w := refAggregates([]client.Aggregate{client.CountStar(), client.Sum("v")}, ref); err != nil || !sameValues(res, w) {
			t.Fatalf("follower reads: %v, want %v (%v)", res, w, err)
		}
	})

	t.Run("small pages", func(t *testing.T) {
		// A budget of 50 examined rows a request: most requests of a
		// selective filter come back empty, and the scans go on.
		f := refAnd(refCmp("v", client.CmpGT, docdb.Int64(9000)), refIsNull("s", true))
		want := f.keep(ref)
		got, err := tb.ScanAll(longCtx(t), client.ScanOptions{Filter: f.f, MaxScanRows: 50, PageSize: 3})
		if err != nil || !slices.Equal(ids(got), ids(want)) {
			t.Fatalf("%d rows, want %d (%v)", len(got), len(want), err)
		}
		got = seqScan(t, tb, client.ScanOptions{Filter: f.f, MaxScanRows: 50, PageSize: 3})
		if !slices.Equal(ids(got), ids(want)) {
			t.Fatalf("scanner: %d rows, want %d", len(got), len(want))
		}
		got, err = tb.ScanAll(longCtx(t), client.ScanOptions{Filter: f.f, MaxScanRows: 50, Limit: 7})
		if err != nil || !slices.Equal(ids(got), ids(want[:7])) {
			t.Fatalf("limit 7: %v (%v)", ids(got), err)
		}
		res, err := tb.Aggregate(longCtx(t), client.ScanOptions{Filter: f.f, Aggregates: pdAggs, MaxScanRows: 50})
		if err != nil || !sameValues(res, refAggregates(pdAggs, want)) {
			t.Fatalf("aggregates %v (%v)", res, err)
		}
	})

	t.Run("random filters", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		for i := 0; i < randomFilters; i++ {
			f := randFilter(rng, 0)
			want := f.keep(ref)
			opts := client.ScanOptions{Filter: f.f}
			if i%4 == 0 {
				opts.MaxScanRows = 1 + rng.IntN(500)
			}
			got, err := tb.ScanAll(longCtx(t), opts)
			if err != nil {
				t.Fatalf("%s: %v", f.f, err)
			}
			if !slices.Equal(ids(got), ids(want)) {
				t.Fatalf("%s: %d rows, want %d", f.f, len(got), len(want))
			}
			if i%3 == 0 {
				opts.Aggregates = pdAggs
				res, err := tb.Aggregate(longCtx(t), opts)
				if err != nil || !sameValues(res, refAggregates(pdAggs, want)) {
					t.Fatalf("%s: aggregates %v, want %v (%v)", f.f, res, refAggregates(pdAggs, want), err)
				}
			}
		}
	})

	t.Run("transactions", func(t *testing.T) {
		// Selective: serializable reads lock the rows they return.
		f := refAnd(refCmp("v", client.CmpGT, docdb.Int64(9000)), refCmp("g", client.CmpEQ, docdb.Int32(3)))
		for _, iso := range []client.Isolation{client.Snapshot, client.Serializable, client.ReadCommitted} {
			tx, err := cl.Begin(longCtx(t), client.TxnOptions{Isolation: iso})
			if err != nil {
				t.Fatal(err)
			}
			res, err := tx.Aggregate(longCtx(t), tb, client.ScanOptions{Filter: f.f, Aggregates: pdAggs})
			if err != nil || !sameValues(res, refAggregates(pdAggs, f.keep(ref))) {
				t.Fatalf("%s: %v, %v", iso, res, err)
			}
			rows, err := tx.Scan(longCtx(t), tb, client.ScanOptions{Filter: f.f})
			if err != nil || !slices.Equal(ids(rows), ids(f.keep(ref))) {
				t.Fatalf("%s: scan of %d rows, %v", iso, len(rows), err)
			}
			if err := tx.Commit(longCtx(t)); err != nil {
				t.Fatal(err)
			}
		}

		// Own writes: new rows, updates that move rows into and out of
		// the filters, deletes.
		model := map[int64]client.Row{}
		for _, r := range ref {
			model[r["id"].Int] = r
		}
		tx, err := cl.Begin(longCtx(t), client.TxnOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var ops []client.Op
		for i := 0; i < 30; i++ {
			r := pdRow(n + i)
			ops = append(ops, client.Op{Kind: client.OpPut, Row: r})
			model[int64(n+i)] = r
		}
		for i := 0; i < 60; i++ {
			id := int64(i * 97)
			upd := client.Row{"id": docdb.Int64(id), "v": docdb.Int64(int64(9000 + i)), "s": docdb.Null()}
			if i%2 == 1 {
				upd["v"] = docdb.Int64(-int64(i))
			}
			ops = append(ops, client.Op{Kind: client.OpUpdate, Row: upd})
			m := client.Row{}
			for k, v := range model[id] {
				m[k] = v
			}
			// An UPDATE of a missing row (-short) creates it.
			m["id"], m["v"] = upd["id"], upd["v"]
			delete(m, "s")
			model[id] = m
		}
		for i := 0; i < 40; i++ {
			id := int64(i*131 + 7)
			ops = append(ops, client.Op{Kind: client.OpDelete, Row: client.Row{"id": docdb.Int64(id)}})
			delete(model, id)
		}
		if err := tx.Apply(longCtx(t), tb, ops); err != nil {
			t.Fatal(err)
		}
		var after []client.Row
		for _, r := range model {
			after = append(after, r)
		}
		// Unfiltered, rows moved into the filter and out of it (the
		// transaction stays short: its record expires in 2 s without
		// heartbeats, and a loaded machine delays them).
		for _, f := range pdFilters()[:3] {
			want := f.keep(after)
			res, err := tx.Aggregate(longCtx(t), tb, client.ScanOptions{Filter: f.f, Aggregates: pdAggs})
			if err != nil || !sameValues(res, refAggregates(pdAggs, want)) {
				t.Fatalf("own writes, %s: %v, want %v (%v)", f.f, res, refAggregates(pdAggs, want), err)
			}
			rows, err := tx.Scan(longCtx(t), tb, client.ScanOptions{Filter: f.f})
			if err != nil || !slices.Equal(sortedIDs(rows), sortedIDs(want)) {
				t.Fatalf("own writes, %s: scan of %d rows, want %d (%v)", f.f, len(rows), len(want), err)
			}
		}
		// Outside the transaction its intents are invisible.
		res, err := tb.Aggregate(longCtx(t), client.ScanOptions{Aggregates: pdAggs})
		if err != nil || !sameValues(res, refAggregates(pdAggs, ref)) {
			t.Fatalf("pending writes leaked: %v, %v", res, err)
		}
		if err := tx.Commit(longCtx(t)); err != nil {
			t.Fatal(err)
		}
		// Committed (intents maybe not applied yet): visible to all.
		sort.Slice(after, func(i, j int) bool { return after[i]["id"].Int < after[j]["id"].Int })
		for _, f := range pdFilters() {
			res, err := tb.Aggregate(longCtx(t), client.ScanOptions{Filter: f.f, Aggregates: pdAggs})
			if w := refAggregates(pdAggs, f.keep(after)); err != nil || !sameValues(res, w) {
				t.Fatalf("after commit, %s: %v, want %v (%v)", f.f, res, w, err)
			}
		}
		ref = seqScan(t, tb, client.ScanOptions{})
		if !slices.Equal(sortedIDs(ref), sortedIDs(after)) {
			t.Fatal("sequential scan after commit differs from the model")
		}
	})

	t.Run("after splits", func(t *testing.T) {
		ms := c.Masters()
		info, err := servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.GetTableResponse, error) {
			return mc.GetTable(ctx, &masterpb.GetTableRequest{Namespace: "test", Name: "pd"})
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, loc := range info.GetTablets()[:3] {
			if _, err := servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.SplitTabletResponse, error) {
				return mc.SplitTablet(ctx, &masterpb.SplitTabletRequest{TabletId: loc.GetTablet().GetTabletId()})
			}); err != nil {
				t.Fatal(err)
			}
		}
		// The client's cache still has the parents: the scans find out.
		checkAll(t, tb, ref, pdFilters()[:6])
		res, err := tb.Aggregate(longCtx(t), client.ScanOptions{Aggregates: []client.Aggregate{client.CountStar()}})
		if err != nil || res[0].Int != int64(len(ref)) {
			t.Fatalf("count(*) after splits: %v, %v", res, err)
		}
	})

	t.Run("range table", func(t *testing.T) {
		rt := create(t, cl, rangeTable("pdr"))
		loadRows(t, rt, 2000, 250, func(i int) client.Row {
			r := client.Row{"a": docdb.Int64(int64(i)), "b": docdb.Text(fmt.Sprintf("b%d", i%9))}
			if i%4 != 0 {
				r["v"] = docdb.Int64(int64(i % 50))
			}
			return r
		})
		all := seqScan(t, rt, client.ScanOptions{})
		for _, f := range []refFilter{
			refAnd(refCmp("b", client.CmpGE, docdb.Text("b5")), refCmp("v", client.CmpLT, docdb.Int64(20))),
			refOr(refCmp("a", client.CmpLT, docdb.Int64(10)), refCmp("a", client.CmpGE, docdb.Int64(1990))),
			refNot(refIsNull("v", false)),
		} {
			want := f.keep(all)
			for _, reverse := range []bool{false, true} {
				got, err := rt.ScanAll(longCtx(t), client.ScanOptions{Filter: f.f, Reverse: reverse, MaxScanRows: 100})
				if err != nil {
					t.Fatal(err)
				}
				w := slices.Clone(want)
				if reverse {
					slices.Reverse(w)
				}
				if fmt.Sprint(keysOf(got)) != fmt.Sprint(keysOf(w)) {
					t.Fatalf("%s reverse=%v: %d rows, want %d", f.f, reverse, len(got), len(w))
				}
			}
			aggs := []client.Aggregate{client.CountStar(), client.Min("a"), client.Max("b"), client.Sum("v"), client.Max("v")}
			res, err := rt.Aggregate(longCtx(t), client.ScanOptions{Filter: f.f, Aggregates: aggs})
			if err != nil {
				t.Fatal(err)
			}
			if w := refAggregates(aggs, want); !sameValues(res, w) {
				t.Fatalf("%s: %v, want %v", f.f, res, w)
			}
		}
		// A bounded range scan with a filter and a limit, backwards.
		f := refCmp("v", client.CmpEQ, docdb.Int64(7))
		got, err := rt.ScanAll(longCtx(t), client.ScanOptions{Start: client.Row{"a": docdb.Int64(500)}, End: client.Row{"a": docdb.Int64(1500)},
			Reverse: true, Filter: f.f, Limit: 5})
		var want []client.Row
		for _, r := range slices.Backward(all) {
			if a := r["a"].Int; a >= 500 && a < 1500 && f.eval(r) == triT && len(want) < 5 {
				want = append(want, r)
			}
		}
		if err != nil || fmt.Sprint(keysOf(got)) != fmt.Sprint(keysOf(want)) {
			t.Fatalf("bounded reverse scan: %v, want %v (%v)", keysOf(got), keysOf(want), err)
		}
	})

	t.Run("sum past int64", func(t *testing.T) {
		bt := create(t, cl, pdTable("pdbig", 4))
		loadRows(t, bt, 40, 10, func(i int) client.Row {
			return client.Row{"id": docdb.Int64(int64(i)), "v": docdb.Int64(math.MaxInt64 - int64(i))}
		})
		res, err := bt.Aggregate(longCtx(t), client.ScanOptions{Aggregates: []client.Aggregate{client.Sum("v"), client.Sum("g")}})
		// 40 * (2^63 - 1) - 780
		if err != nil || res[0].Type != docdb.TypeDecimal || string(res[0].Bytes) != "368934881474191031500" || !res[1].IsNull() {
			t.Fatalf("sum: %v, %v", res, err)
		}
	})

	t.Run("invalid", func(t *testing.T) {
		for name, opts := range map[string]client.ScanOptions{
			"unknown column":  {Filter: client.Cmp("nope", client.CmpEQ, docdb.Int64(1)), Aggregates: pdAggs},
			"type mismatch":   {Filter: client.Cmp("v", client.CmpEQ, docdb.Int32(1)), Aggregates: pdAggs},
			"in mismatch":     {Filter: client.In("s", docdb.Text("a"), docdb.Int64(1)), Aggregates: pdAggs},
			"sum of text":     {Aggregates: []client.Aggregate{client.Sum("s")}},
			"unknown agg col": {Aggregates: []client.Aggregate{client.Max("nope")}},
			"limit":           {Aggregates: pdAggs, Limit: 3},
			"no aggregates":   {},
			"bad operator":    {Filter: client.Cmp("v", 99, docdb.Int64(1)), Aggregates: pdAggs},
		} {
			if _, err := tb.Aggregate(longCtx(t), opts); !client.IsInvalidArgument(err) {
				t.Errorf("%s: %v", name, err)
			}
		}
		if _, err := tb.ScanAll(longCtx(t), client.ScanOptions{Aggregates: pdAggs}); !client.IsInvalidArgument(err) {
			t.Errorf("aggregates in a row scan: %v", err)
		}
	})
}

func keysOf(rows []client.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprintf("%d/%s", r["a"].Int, strings.TrimPrefix(r["b"].String(), "text:"))
	}
	return out
}
