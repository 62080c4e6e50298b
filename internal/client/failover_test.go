package client_test

import (
	"context"
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

// TestNodeFailure: writers keep going while the node holding the most
// tablet leaders (and maybe the master leader) stops; after re-election
// the writes continue and every acknowledged write reads back.
func TestNodeFailure(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	c.WaitMasters(30 * time.Second) // a master quorum survives the stop
	cl := open(t, c)
	tb := create(t, cl, hashTable("kv", 6))
	putKV(t, tb, 0, 100) // every tablet has a leader

	// The master learns the leaders from the tservers' reports: wait
	// until it knows every tablet's.
	leaders := map[uint64]int{}
	consensustest.WaitFor(t, 20*time.Second, "the master knows every leader", func() bool {
		resp, err := servertest.Call(t, cl.Masters(), func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.GetTableResponse, error) {
			return mc.GetTable(ctx, &masterpb.GetTableRequest{Namespace: "test", Name: "kv"})
		})
		if err != nil {
			t.Fatal(err)
		}
		clear(leaders)
		for _, loc := range resp.GetTablets() {
			if loc.GetLeaderNode() == 0 {
				return false
			}
			leaders[loc.GetLeaderNode()]++
		}
		return len(resp.GetTablets()) > 0
	})
	var victim uint64
	for node, n := range leaders {
		if victim == 0 || n > leaders[victim] {
			victim = node
		}
	}

	const writers = 4
	var (
		stop     atomic.Bool
		stopped  atomic.Bool
		mu       sync.Mutex
		acked    []string
		after    atomic.Int64 // acks after the node stopped
		failures atomic.Int64
		slowest  atomic.Int64 // the longest put, ns: the unavailability seen
		wg       sync.WaitGroup
	)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				k := fmt.Sprintf("w%d-%d", w, i)
				began := time.Now()
				err := tb.Put(context.Background(), client.Row{"k": docdb.Text(k), "v": docdb.Int64(int64(i))})
				for d := int64(time.Since(began)); ; {
					if old := slowest.Load(); d <= old || slowest.CompareAndSwap(old, d) {
						break
					}
				}
				if err != nil {
					failures.Add(1)
					t.Logf("put %s: %v", k, err)
					continue
				}
				mu.Lock()
				acked = append(acked, k)
				mu.Unlock()
				if stopped.Load() {
					after.Add(1)
				}
			}
		}()
	}
	t.Cleanup(func() { stop.Store(true); wg.Wait() }) // also when a wait below fails
	// The load runs on every tablet before the fault.
	consensustest.WaitFor(t, 20*time.Second, "200 writes before the stop", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 200
	})
	c.Stop(c.Index(victim))
	stopped.Store(true)
	t.Logf("stopped node %d (leader of %d of 6 tablets)", victim, leaders[victim])
	consensustest.WaitFor(t, 20*time.Second, "200 writes after the stop", func() bool { return after.Load() >= 200 })
	stop.Store(true)
	wg.Wait()
	t.Logf("%d writes acknowledged, %d after the stop, %d failed, slowest put %v, %d table lookups",
		len(acked), after.Load(), failures.Load(), time.Duration(slowest.Load()), cl.Stats().TableLoads)

	// Every acknowledged write is there, read by a fresh client too.
	fresh := open(t, c)
	ft, err := fresh.OpenTable(ctxT(t), "test", "kv")
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range acked {
		tbl := tb
		if i%2 == 1 {
			tbl = ft
		}
		if _, found, err := tbl.Get(ctxT(t), client.Row{"k": docdb.Text(k)}); err != nil || !found {
			t.Fatalf("acknowledged write %s: found %v, %v", k, found, err)
		}
	}
	got, err := ft.ScanAll(ctxT(t), client.ScanOptions{})
	if err != nil || len(got) < len(acked)+100 {
		t.Fatalf("scan after failover: %d rows (want >= %d), %v", len(got), len(acked)+100, err)
	}
}

// TestDeadline: a deadline that passes while no replica answers is a
// CodeTimeout for reads and, for writes that may have been sent, an
// ambiguous or timeout error.
func TestDeadline(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	cl := open(t, c)
	tb := create(t, cl, hashTable("kv", 2))
	putKV(t, tb, 0, 10)
	// No replica answers: every node is down. (With only two of three
	// down, a leader may still serve reads while its lease lasts.)
	c.Stop(0)
	c.Stop(1)
	c.Stop(2)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	_, _, err := tb.Get(ctx, client.Row{"k": docdb.Text(key(1))})
	cancel()
	if !client.IsTimeout(err) {
		t.Fatalf("get with no replica up: %v", err)
	}
	t.Logf("get: %v", err)
	ctx, cancel = context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	err = tb.Put(ctx, client.Row{"k": docdb.Text("x")})
	if !client.IsTimeout(err) && !client.IsAmbiguous(err) {
		t.Fatalf("put with no replica up: %v", err)
	}
	t.Logf("put: %v", err)
}
