package client_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/server/servertest"
)

// benchTable starts a 3-node cluster with a 6-tablet key-value table of
// 1,000 rows for the sub-benchmarks of b (a parent benchmark runs once).
func benchTable(b *testing.B) *client.Table {
	c := servertest.NewCluster(b, 3)
	tb := create(b, open(b, c), hashTable("bench", 6))
	putKV(b, tb, 0, 1000)
	return tb
}

// runParallel runs b.N ops over g goroutines and reports ops/s.
func runParallel(b *testing.B, g int, op func(i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := 0; w < g; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				if err := op(i); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
}

// BenchmarkClientPut: single-row upserts of 100-byte values through the
// router on a 3-node RF3 in-process cluster.
func BenchmarkClientPut(b *testing.B) {
	value := docdb.Text(string(make([]byte, 100)))
	tb := benchTable(b)
	for _, g := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			runParallel(b, g, func(i int) error {
				return tb.Put(context.Background(), client.Row{"k": docdb.Text(key(i % 100000)), "s": value})
			})
		})
	}
}

// BenchmarkClientGet: point reads at the leaders.
func BenchmarkClientGet(b *testing.B) {
	tb := benchTable(b)
	for _, g := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			runParallel(b, g, func(i int) error {
				_, found, err := tb.Get(context.Background(), client.Row{"k": docdb.Text(key(i % 1000))})
				if err == nil && !found {
					err = fmt.Errorf("row %d missing", i%1000)
				}
				return err
			})
		})
	}
}

// BenchmarkParallelPuts: one fast-path put against two puts to two tablets
// sent at once, at one client, in alternating blocks of 20 (so all see the
// same machine): two tablets whose leaders are on one node, and two whose
// leaders are on two nodes; reports each case's median latency. Two writes
// on two tablets should cost little more than one: their Raft rounds
// overlap (docs/architecture.md, "Scheduler"). Run it with a fixed count,
// e.g. -benchtime 6000x.
func BenchmarkParallelPuts(b *testing.B) {
	c := servertest.NewCluster(b, 3)
	tb := create(b, open(b, c), hashTable("parallel", 6))
	ctx := context.Background()
	// One key per tablet, by the node leading it (once the cache knows).
	byNode := map[uint64][]string{}
	seen := map[uint64]bool{}
	for i := 0; len(seen) < 6 && i < 10000; i++ {
		k := fmt.Sprint("p", i)
		id, err := tabletOf(b, tb, k)
		if err != nil {
			b.Fatal(err)
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		row := client.Row{"k": docdb.Text(k), "v": docdb.Int64(0)}
		if err := tb.Put(ctx, row); err != nil {
			b.Fatal(err)
		}
		n, err := tb.LeaderOf(ctx, row)
		if err != nil {
			b.Fatal(err)
		}
		byNode[n] = append(byNode[n], k)
	}
	var one, same, apart []string
	for n, ks := range byNode {
		if one == nil {
			one = ks[:1]
		}
		if len(ks) >= 2 && same == nil {
			same = ks[:2]
		}
		for m, ks2 := range byNode {
			if m != n && apart == nil {
				apart = []string{ks[0], ks2[0]}
			}
		}
	}
	cases := []struct {
		name string
		keys []string
	}{{"one-put", one}, {"two-puts-one-leader-node", same}, {"two-puts-two-leader-nodes", apart}}
	for _, cs := range cases {
		if len(cs.keys) == 0 {
			b.Skipf("no tablets for %s (leaders: %v)", cs.name, byNode)
		}
	}
	const block = 20
	lat := make([][]time.Duration, len(cases))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := (i / block) % len(cases)
		start := time.Now()
		errs := make(chan error, len(cases[k].keys))
		for _, key := range cases[k].keys {
			go func() {
				errs <- tb.Put(ctx, client.Row{"k": docdb.Text(key), "v": docdb.Int64(int64(i))})
			}()
		}
		for range cases[k].keys {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
		if i%block > 0 {
			lat[k] = append(lat[k], time.Since(start))
		}
	}
	for k, cs := range cases {
		if d := lat[k]; len(d) > 0 {
			slices.Sort(d)
			b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, cs.name+"-p50-ms")
		}
	}
}
