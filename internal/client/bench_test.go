package client_test

import (
	"context"
	"fmt"
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
