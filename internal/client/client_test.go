package client_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/server/servertest"
)

func open(t testing.TB, c *servertest.Cluster) *client.Client {
	t.Helper()
	return openWith(t, c, client.Config{})
}

// openWith opens a client of c with cfg (its masters set to c's nodes).
func openWith(t testing.TB, c *servertest.Cluster, cfg client.Config) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg.Masters = c.Addrs
	cl, err := client.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func hashTable(name string, tablets uint32) *masterpb.CreateTableRequest {
	return &masterpb.CreateTableRequest{
		Namespace: "test", Name: name,
		Schema: &masterpb.Schema{Columns: []*masterpb.ColumnSchema{
			{Id: 1, Name: "k", Type: "text", IsHashKey: true},
			{Id: 2, Name: "v", Type: "int64", Nullable: true},
			{Id: 3, Name: "s", Type: "text", Nullable: true},
		}},
		Partitioning: &masterpb.Partitioning{Kind: masterpb.Partitioning_HASH, NumTablets: tablets},
	}
}

// rangeTable is range-partitioned on (a asc, b desc), split at a = 500,
// 1000 and 1500.
func rangeTable(name string) *masterpb.CreateTableRequest {
	var splits [][]byte
	for _, a := range []int64{500, 1000, 1500} {
		splits = append(splits, client.RangeSplitPoint(docdb.KeyPart{Value: docdb.Int64(a)}))
	}
	return &masterpb.CreateTableRequest{
		Namespace: "test", Name: name,
		Schema: &masterpb.Schema{Columns: []*masterpb.ColumnSchema{
			{Id: 1, Name: "a", Type: "int64", IsRangeKey: true},
			{Id: 2, Name: "b", Type: "text", IsRangeKey: true, Descending: true},
			{Id: 3, Name: "v", Type: "int64", Nullable: true},
		}},
		Partitioning: &masterpb.Partitioning{Kind: masterpb.Partitioning_RANGE, SplitPoints: splits},
	}
}

func create(t testing.TB, cl *client.Client, req *masterpb.CreateTableRequest) *client.Table {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cl.CreateTable(ctx, req); err != nil {
		t.Fatal(err)
	}
	tb, err := cl.OpenTable(ctx, req.GetNamespace(), req.GetName())
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func rows(t testing.TB) int {
	if testing.Short() {
		return 400
	}
	return 2000
}

func key(i int) string { return fmt.Sprintf("key-%05d", i) }

// putKV writes rows [from, to) of the hash table in batches of 100.
func putKV(t testing.TB, tb *client.Table, from, to int) {
	t.Helper()
	var ops []client.Op
	for i := from; i < to; i++ {
		ops = append(ops, client.Op{Kind: client.OpPut, Row: client.Row{"k": docdb.Text(key(i)), "v": docdb.Int64(int64(i))}})
		if len(ops) == 100 || i == to-1 {
			if err := tb.Apply(ctxT(t), ops); err != nil {
				t.Fatal(err)
			}
			ops = nil
		}
	}
}

func checkKV(t testing.TB, tb *client.Table, keys []int) {
	t.Helper()
	for _, i := range keys {
		row, found, err := tb.Get(ctxT(t), client.Row{"k": docdb.Text(key(i))})
		if err != nil {
			t.Fatal(err)
		}
		if !found || row["v"].Int != int64(i) || string(row["k"].Bytes) != key(i) {
			t.Fatalf("row %d: found %v, %v", i, found, row)
		}
	}
}

// TestClient runs the client against one 3-node cluster: hash and range
// tables read, written and scanned, TTL, bad input, leader moves, a
// dropped and recreated table, and 32 concurrent goroutines.
func TestClient(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	cl := open(t, c)
	n := rows(t)

	t.Run("hash", func(t *testing.T) {
		tb := create(t, cl, hashTable("kv", 6))
		putKV(t, tb, 0, n)
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		checkKV(t, tb, all)
		if _, found, err := tb.Get(ctxT(t), client.Row{"k": docdb.Text("nope")}); err != nil || found {
			t.Fatalf("missing row: found %v, %v", found, err)
		}

		// A full scan visits all 6 tablets in hash order, in pages.
		got, err := tb.ScanAll(ctxT(t), client.ScanOptions{PageSize: 97})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != n {
			t.Fatalf("scan: %d rows, want %d", len(got), n)
		}
		seen := map[string]bool{}
		var prev []byte
		for _, r := range got {
			k, _ := tb.RowKey(r)
			if string(k) <= string(prev) {
				t.Fatalf("scan out of key order at %v", r)
			}
			prev = k
			seen[string(r["k"].Bytes)] = true
		}
		if len(seen) != n {
			t.Fatalf("scan: %d distinct rows", len(seen))
		}
		rev, err := tb.ScanAll(ctxT(t), client.ScanOptions{Reverse: true, PageSize: 50})
		if err != nil || len(rev) != n {
			t.Fatalf("reverse scan: %d rows, %v", len(rev), err)
		}
		for i := range rev {
			if string(rev[i]["k"].Bytes) != string(got[n-1-i]["k"].Bytes) {
				t.Fatalf("reverse scan differs at %d", i)
			}
		}
		lim, err := tb.ScanAll(ctxT(t), client.ScanOptions{Limit: 250, PageSize: 100})
		if err != nil || len(lim) != 250 {
			t.Fatalf("limit: %d rows, %v", len(lim), err)
		}
		// Projection: only s (absent) and the key.
		proj, err := tb.ScanAll(ctxT(t), client.ScanOptions{Limit: 5, ReadOptions: client.ReadOptions{Columns: []string{"s"}}})
		if err != nil || len(proj) != 5 {
			t.Fatalf("projection: %d rows, %v", len(proj), err)
		}
		for _, r := range proj {
			if _, ok := r["v"]; ok || len(r) != 1 {
				t.Fatalf("projected row %v", r)
			}
		}
		// A scan inside one hash key.
		one, err := tb.ScanAll(ctxT(t), client.ScanOptions{Start: client.Row{"k": docdb.Text(key(7))}, End: client.Row{"k": docdb.Text(key(7))}, EndInclusive: true})
		if err != nil || len(one) != 1 || one[0]["v"].Int != 7 {
			t.Fatalf("one hash key: %v, %v", one, err)
		}

		// Follower reads: the tservers refuse them as unsupported for now,
		// so the client falls back to the leaders.
		fr := client.ReadOptions{FollowerReads: true, MaxStaleness: time.Second}
		if r, found, err := tb.Read(ctxT(t), client.Row{"k": docdb.Text(key(9))}, fr); err != nil || !found || r["v"].Int != 9 {
			t.Fatalf("follower read: %v %v %v", r, found, err)
		}
		if fs, err := tb.ScanAll(ctxT(t), client.ScanOptions{Limit: 10, ReadOptions: fr}); err != nil || len(fs) != 10 {
			t.Fatalf("follower scan: %d rows, %v", len(fs), err)
		}

		// Update one column, then null it; delete a row.
		if err := tb.Update(ctxT(t), client.Row{"k": docdb.Text(key(1)), "s": docdb.Text("x")}); err != nil {
			t.Fatal(err)
		}
		if r, _, err := tb.Get(ctxT(t), client.Row{"k": docdb.Text(key(1))}, "s"); err != nil || string(r["s"].Bytes) != "x" || r["v"].Type != docdb.TypeNull {
			t.Fatalf("after update: %v, %v", r, err)
		}
		if err := tb.Put(ctxT(t), client.Row{"k": docdb.Text(key(1)), "s": docdb.Null()}); err != nil {
			t.Fatal(err)
		}
		if r, _, err := tb.Get(ctxT(t), client.Row{"k": docdb.Text(key(1))}); err != nil || r["v"].Int != 1 || r["s"].Type != docdb.TypeNull {
			t.Fatalf("after null: %v, %v", r, err)
		}
		if err := tb.Delete(ctxT(t), client.Row{"k": docdb.Text(key(2))}); err != nil {
			t.Fatal(err)
		}
		if _, found, err := tb.Get(ctxT(t), client.Row{"k": docdb.Text(key(2))}); err != nil || found {
			t.Fatalf("deleted row: found %v, %v", found, err)
		}
	})

	t.Run("range", func(t *testing.T) {
		tb := create(t, cl, rangeTable("events"))
		var ops []client.Op
		for i := 0; i < n; i++ {
			a := int64(i * 2000 / n)
			b := fmt.Sprintf("b%d", i%2)
			ops = append(ops, client.Op{Kind: client.OpPut, Row: client.Row{"a": docdb.Int64(a), "b": docdb.Text(b), "v": docdb.Int64(int64(i))}})
		}
		if err := tb.Apply(ctxT(t), ops); err != nil { // one batch over 4 tablets
			t.Fatal(err)
		}
		got, err := tb.ScanAll(ctxT(t), client.ScanOptions{PageSize: 128})
		if err != nil || len(got) != n {
			t.Fatalf("scan: %d rows, %v", len(got), err)
		}
		for i := 1; i < len(got); i++ {
			pa, a := got[i-1]["a"].Int, got[i]["a"].Int
			if pa > a || (pa == a && string(got[i-1]["b"].Bytes) <= string(got[i]["b"].Bytes)) {
				t.Fatalf("range scan out of order at %d: %v then %v", i, got[i-1], got[i])
			}
		}
		// Bounds across a split point, forward and reverse.
		lo, hi := int64(400), int64(1100)
		want := 0
		for _, r := range got {
			if r["a"].Int >= lo && r["a"].Int < hi {
				want++
			}
		}
		opts := client.ScanOptions{Start: client.Row{"a": docdb.Int64(lo)}, End: client.Row{"a": docdb.Int64(hi)}, PageSize: 33}
		fw, err := tb.ScanAll(ctxT(t), opts)
		if err != nil || len(fw) != want || fw[0]["a"].Int != lo {
			t.Fatalf("bounded scan: %d rows (want %d), %v", len(fw), want, err)
		}
		opts.Reverse, opts.Limit = true, 10
		rv, err := tb.ScanAll(ctxT(t), opts)
		if err != nil || len(rv) != 10 || rv[0]["a"].Int != fw[len(fw)-1]["a"].Int || string(rv[0]["b"].Bytes) != string(fw[len(fw)-1]["b"].Bytes) {
			t.Fatalf("bounded reverse scan: %v, %v", rv, err)
		}
		r, found, err := tb.Get(ctxT(t), client.Row{"a": docdb.Int64(1500), "b": docdb.Text("b0")})
		if err != nil || !found {
			t.Fatalf("get: %v %v", found, err)
		}
		t.Logf("row at a split point: %v", r)
	})

	t.Run("ttl", func(t *testing.T) {
		tb, err := cl.OpenTable(ctxT(t), "test", "kv")
		if err != nil {
			t.Fatal(err)
		}
		k := client.Row{"k": docdb.Text("ttl")}
		if err := tb.Put(ctxT(t), client.Row{"k": docdb.Text("ttl"), "v": docdb.Int64(1)}, client.WithTTL(300*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if _, found, err := tb.Get(ctxT(t), k); err != nil || !found {
			t.Fatalf("fresh TTL row: %v %v", found, err)
		}
		consensustest.WaitFor(t, 10*time.Second, "the TTL row to expire", func() bool {
			_, found, err := tb.Get(ctxT(t), k)
			return err == nil && !found
		})
	})

	t.Run("bad input", func(t *testing.T) {
		if _, err := cl.OpenTable(ctxT(t), "test", "nope"); !client.IsTableNotFound(err) {
			t.Fatalf("unknown table: %v", err)
		}
		tb, err := cl.OpenTable(ctxT(t), "test", "kv")
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			err  error
		}{
			{"missing key", tb.Put(ctxT(t), client.Row{"v": docdb.Int64(1)})},
			{"wrong type", tb.Put(ctxT(t), client.Row{"k": docdb.Text("a"), "v": docdb.Text("1")})},
			{"wrong key type", tb.Put(ctxT(t), client.Row{"k": docdb.Int64(1)})},
			{"null key", tb.Put(ctxT(t), client.Row{"k": docdb.Null()})},
			{"unknown column", tb.Put(ctxT(t), client.Row{"k": docdb.Text("a"), "zz": docdb.Int64(1)})},
			{"empty update", tb.Update(ctxT(t), client.Row{"k": docdb.Text("a")})},
			{"delete with value", tb.Delete(ctxT(t), client.Row{"k": docdb.Text("a"), "v": docdb.Int64(1)})},
			{"get projection", func() error { _, _, err := tb.Get(ctxT(t), client.Row{"k": docdb.Text("a")}, "zz"); return err }()},
			{"scan bound", func() error {
				_, err := tb.ScanAll(ctxT(t), client.ScanOptions{Start: client.Row{"v": docdb.Int64(1)}})
				return err
			}()},
		} {
			if !client.IsInvalidArgument(tc.err) {
				t.Errorf("%s: %v", tc.name, tc.err)
			} else {
				t.Logf("%s: %v", tc.name, tc.err)
			}
		}
	})

	t.Run("leader moves", func(t *testing.T) {
		tb, err := cl.OpenTable(ctxT(t), "test", "kv")
		if err != nil {
			t.Fatal(err)
		}
		checkKV(t, tb, []int{0, 3, 4, 5, 6}) // warm the cache
		// Move every tablet's leader and wait until the old leaders know
		// the new ones, so their NOT_LEADER answers carry the hint. The
		// master's idea of the leader may lag (the balancer moves leaders
		// too): a refused stepdown is tried again.
		for i := 0; i < 6; i++ {
			var id, old uint64
			consensustest.Retry(t, 20*time.Second, "leader stepdown", func(ctx context.Context) error {
				var resp *masterpb.GetTableResponse
				err := cl.Masters().Call(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
					r, err := mc.GetTable(ctx, &masterpb.GetTableRequest{Namespace: "test", Name: "kv"})
					resp = r
					return r.GetError(), err
				})
				if err != nil {
					return err
				}
				loc := resp.GetTablets()[i]
				id, old = loc.GetTablet().GetTabletId(), loc.GetLeaderNode()
				if old == 0 {
					return errors.New("the master does not know the leader yet")
				}
				return cl.Masters().Call(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
					r, err := mc.LeaderStepdown(ctx, &masterpb.LeaderStepdownRequest{TabletId: id})
					return r.GetError(), err
				})
			})
			consensustest.WaitFor(t, 10*time.Second, "a new leader known to the old one", func() bool {
				i := c.Index(old)
				if i < 0 {
					return false
				}
				tab, ok := c.Servers[i].Node().Tablet(id)
				if !ok {
					return false
				}
				l := tab.Group().Status().Leader
				return l != 0 && l != old
			})
		}
		before := cl.Stats().TableLoads
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		checkKV(t, tb, all[3:])
		if loads := cl.Stats().TableLoads - before; loads != 0 {
			t.Fatalf("following NOT_LEADER hints took %d master lookups", loads)
		}
	})

	t.Run("drop and recreate", func(t *testing.T) {
		other := open(t, c)
		tb := create(t, cl, hashTable("dr", 3))
		if err := tb.Put(ctxT(t), client.Row{"k": docdb.Text("a"), "v": docdb.Int64(1)}); err != nil {
			t.Fatal(err)
		}
		// Another client drops the table and makes a new one of the same
		// name with another schema (v is text now).
		if err := other.DropTable(ctxT(t), "test", "dr", false); err != nil {
			t.Fatal(err)
		}
		req := hashTable("dr", 2)
		req.Schema.Columns[1].Type = "text"
		nt := create(t, other, req)
		if err := nt.Put(ctxT(t), client.Row{"k": docdb.Text("b"), "v": docdb.Text("new")}); err != nil {
			t.Fatal(err)
		}
		// The first client's handle is bound to the dropped table.
		err := tb.Put(ctxT(t), client.Row{"k": docdb.Text("a"), "v": docdb.Int64(2)})
		if !client.IsTableNotFound(err) {
			t.Fatalf("write to a dropped table: %v", err)
		}
		t.Logf("stale handle: %v", err)
		// Its cache forgot the name: opening again finds the new table.
		tb2, err := cl.OpenTable(ctxT(t), "test", "dr")
		if err != nil {
			t.Fatal(err)
		}
		if tb2.ID() == tb.ID() {
			t.Fatalf("reopened the dropped table %d", tb.ID())
		}
		r, found, err := tb2.Get(ctxT(t), client.Row{"k": docdb.Text("b")})
		if err != nil || !found || string(r["v"].Bytes) != "new" {
			t.Fatalf("new table: %v %v %v", r, found, err)
		}
		if _, found, _ := tb2.Get(ctxT(t), client.Row{"k": docdb.Text("a")}); found {
			t.Fatal("a row of the dropped table in the new one")
		}
		if err := cl.DropTable(ctxT(t), "test", "nope", false); !client.IsCode(err, masterpb.MasterError_NOT_FOUND) {
			t.Fatalf("drop unknown table: %v", err)
		}
		if err := cl.DropTable(ctxT(t), "test", "nope", true); err != nil {
			t.Fatal(err)
		}
		tables, err := cl.ListTables(ctxT(t))
		if err != nil || len(tables) < 3 {
			t.Fatalf("list tables: %v, %v", tables, err)
		}
	})

	t.Run("32 goroutines", func(t *testing.T) {
		// A fresh client: the goroutines share its cold cache and its
		// table lookups coalesce.
		cc := open(t, c)
		tb, err := cc.OpenTable(ctxT(t), "test", "kv")
		if err != nil {
			t.Fatal(err)
		}
		per := n / 32
		var wg sync.WaitGroup
		var failures atomic.Int64
		for g := 0; g < 32; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < per; i++ {
					k := fmt.Sprintf("g%02d-%d", g, i)
					if err := tb.Put(ctxT(t), client.Row{"k": docdb.Text(k), "v": docdb.Int64(int64(i))}); err != nil {
						t.Error(err)
						failures.Add(1)
						return
					}
					r, found, err := tb.Get(ctxT(t), client.Row{"k": docdb.Text(k)})
					if err != nil || !found || r["v"].Int != int64(i) {
						t.Errorf("%s: %v %v %v", k, r, found, err)
						failures.Add(1)
						return
					}
				}
			}()
		}
		wg.Wait()
		t.Logf("32 goroutines: %d puts and gets each, %d table lookups", per, cc.Stats().TableLoads)
	})
}
