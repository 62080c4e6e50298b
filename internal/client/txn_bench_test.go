package client_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/server/servertest"
)

// BenchmarkTxn compares a fast-path single-row write (no status record)
// with a snapshot transaction writing 2 rows on 2 tablets and one writing
// 10 rows, at 1, 8 and 64 clients, on a 3-node RF3 in-process cluster.
// Every transaction writes rows no other client touches, so nothing
// conflicts: this is the protocol's cost.
func BenchmarkTxn(b *testing.B) {
	for _, cs := range txnBenchCases(b) {
		for _, g := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("%s/clients=%d", cs.name, g), func(b *testing.B) {
				runParallel(b, g, cs.op)
			})
		}
	}
}

// BenchmarkTxnLatency: the cases of BenchmarkTxn at one client, run in
// alternating blocks of 20 operations so that all three see the same
// machine (on a shared machine the load changes between BenchmarkTxn's
// sub-benchmarks); reports each case's median latency and the
// transactions' latency as a multiple of the fast-path write's. Run it
// with a fixed count, e.g. -benchtime 600x.
func BenchmarkTxnLatency(b *testing.B) {
	cases := txnBenchCases(b)
	lat := make([][]time.Duration, len(cases))
	const block = 20
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := (i / block) % len(cases)
		start := time.Now()
		if err := cases[k].op(i); err != nil {
			b.Fatal(err)
		}
		if i%block > 0 { // the first of a block pays for the previous case's background work
			lat[k] = append(lat[k], time.Since(start))
		}
	}
	median := func(d []time.Duration) time.Duration {
		if len(d) == 0 {
			return 0
		}
		slices.Sort(d)
		return d[len(d)/2]
	}
	fast := median(lat[0])
	for k, cs := range cases {
		m := median(lat[k])
		b.ReportMetric(float64(m.Microseconds())/1000, cs.name+"-p50-ms")
		if k > 0 && fast > 0 {
			b.ReportMetric(float64(m)/float64(fast), cs.name+"-x")
		}
	}
}

type txnBenchCase struct {
	name string
	op   func(i int) error
}

// txnBenchCases starts the cluster of the transaction benchmarks and
// returns their cases: a fast-path write, a 2-tablet and a 10-row
// transaction.
func txnBenchCases(b *testing.B) []txnBenchCase {
	c := servertest.NewCluster(b, 3)
	cl := open(b, c)
	tb := create(b, cl, hashTable("txnbench", 6))
	// Two keys on different tablets for the 2-tablet transaction.
	m := map[uint64]string{}
	var keys2 []string
	for i := 0; len(keys2) < 2 && i < 1000; i++ {
		k := fmt.Sprint("pair", i)
		id, err := tabletOf(b, tb, k)
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := m[id]; !ok {
			m[id] = k
			keys2 = append(keys2, k)
		}
	}
	var seq atomic.Int64
	ctx := context.Background()
	return []txnBenchCase{
		{"fast-path-1-row", func(i int) error {
			return tb.Put(ctx, client.Row{"k": docdb.Text(fmt.Sprint("fp", seq.Add(1))), "v": docdb.Int64(int64(i))})
		}},
		{"txn-2-tablets", func(i int) error {
			n := seq.Add(1)
			return cl.RunTxn(ctx, client.TxnOptions{}, func(ctx context.Context, tx *client.Txn) error {
				return tx.Apply(ctx, tb, []client.Op{
					{Kind: client.OpPut, Row: client.Row{"k": docdb.Text(fmt.Sprint(keys2[0], "-", n)), "v": docdb.Int64(n)}},
					{Kind: client.OpPut, Row: client.Row{"k": docdb.Text(fmt.Sprint(keys2[1], "-", n)), "v": docdb.Int64(n)}},
				})
			})
		}},
		{"txn-10-rows", func(i int) error {
			n := seq.Add(1)
			return cl.RunTxn(ctx, client.TxnOptions{}, func(ctx context.Context, tx *client.Txn) error {
				ops := make([]client.Op, 10)
				for j := range ops {
					ops[j] = client.Op{Kind: client.OpPut, Row: client.Row{"k": docdb.Text(fmt.Sprint("t10-", n, "-", j)), "v": docdb.Int64(n)}}
				}
				return tx.Apply(ctx, tb, ops)
			})
		}},
	}
}

// BenchmarkTxnContended: 32 clients increment 4 counters (read FOR UPDATE,
// then write), waiting on conflicts (PostgreSQL-like) or failing fast and
// retrying, under snapshot isolation and read committed; reports commits/s
// and the share of attempts aborted.
func BenchmarkTxnContended(b *testing.B) {
	c := servertest.NewCluster(b, 3)
	cl := open(b, c)
	tb := create(b, cl, hashTable("contended", 4))
	ctx := context.Background()
	for i := range 4 {
		if err := tb.Put(ctx, client.Row{"k": docdb.Text(fmt.Sprint("c", i)), "v": docdb.Int64(0)}); err != nil {
			b.Fatal(err)
		}
	}
	for _, iso := range []struct {
		name string
		iso  client.Isolation
	}{{"snapshot", client.Snapshot}, {"read-committed", client.ReadCommitted}} {
		for _, p := range []struct {
			name string
			wait client.WaitPolicy
		}{{"wait-on-conflict", client.WaitOnConflict}, {"fail-fast", client.FailOnConflict}} {
			b.Run(iso.name+"/"+p.name, func(b *testing.B) {
				var attempts atomic.Int64
				runParallel(b, 32, func(i int) error {
					key := client.Row{"k": docdb.Text(fmt.Sprint("c", i%4))}
					return cl.RunTxn(ctx, client.TxnOptions{Isolation: iso.iso, Wait: p.wait}, func(ctx context.Context, tx *client.Txn) error {
						attempts.Add(1)
						r, _, err := tx.GetForUpdate(ctx, tb, key, client.ForUpdate, p.wait)
						if err != nil {
							return err
						}
						return tx.Put(ctx, tb, client.Row{"k": key["k"], "v": docdb.Int64(val(r) + 1)})
					})
				})
				b.ReportMetric(100*float64(attempts.Load()-int64(b.N))/float64(attempts.Load()), "abort%")
			})
		}
	}
}

// tabletOf is the id of the tablet holding key k.
func tabletOf(b *testing.B, tb *client.Table, k string) (uint64, error) {
	return tb.TabletOf(context.Background(), client.Row{"k": docdb.Text(k)})
}

// BenchmarkTxnLargeApply: one transaction inserts 100,000 rows (pgbench
// -i's load at scale 1) into a 3-tablet table of a 3-node RF3 cluster, in
// statements of 1,000 rows, and commits; reports how long its intents take
// to be applied on every replica after the commit (apply-s) next to the
// writes (write-s). Run it with -benchtime 1x.
func BenchmarkTxnLargeApply(b *testing.B) {
	const rows, batch = 100_000, 1_000
	c := servertest.NewCluster(b, 3)
	cl := open(b, c)
	ctx := context.Background()
	filler := docdb.Text(fmt.Sprintf("%84s", ""))
	var write, apply time.Duration
	for i := 0; i < b.N; i++ {
		tb := create(b, cl, hashTable(fmt.Sprint("large", i), 3))
		start := time.Now()
		tx, err := cl.Begin(ctx, client.TxnOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for r := 0; r < rows; r += batch {
			ops := make([]client.Op, batch)
			for j := range ops {
				ops[j] = client.Op{Kind: client.OpInsert, Row: client.Row{"k": docdb.Text(fmt.Sprintf("aid:%07d", r+j)), "v": docdb.Int64(0), "s": filler}}
			}
			if err := tx.Apply(ctx, tb, ops); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		committed := time.Now()
		write += committed.Sub(start)
		// A replica forgets a transaction once the batch that applied its
		// intents there is in the engine.
		consensustest.WaitFor(b, 10*time.Minute, "every intent applied on every replica", func() bool {
			for _, s := range c.Servers {
				for _, tab := range s.Node().Tablets() {
					if len(tab.StaleTxns(0)) > 0 {
						return false
					}
				}
			}
			return true
		})
		apply += time.Since(committed)
		res, err := tb.Aggregate(ctx, client.ScanOptions{Aggregates: []client.Aggregate{client.CountStar()}})
		if err != nil || res[0].Int != rows {
			b.Fatalf("%v rows after the commit (%v), want %d", res, err, rows)
		}
	}
	b.ReportMetric(write.Seconds()/float64(b.N), "write-s")
	b.ReportMetric(apply.Seconds()/float64(b.N), "apply-s")
}
