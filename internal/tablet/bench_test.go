package tablet_test

// Benchmarks of the storage and replication core: a 3-node RF3 cluster in
// this process (consensustest: real TCP on 127.0.0.x, real Pebble with
// fsync), clients in the same process. scripts/bench.sh runs them with fixed
// settings and prints a table; docs/benchmarks.md records the figures.
//
// They report custom metrics and never assert on timing: a slow machine
// gives low figures, not failures. Every benchmark uses b.Loop, so its setup
// runs once per -count.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/consensus"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/tablet"
)

// benchConfig is the production raft timing (the runtime's defaults).
func benchConfig() consensus.Config { return consensus.Config{} }

// benchValueSize is the size of a benchmark row's one column value.
const benchValueSize = 64

func benchValue(i int) []byte {
	v := make([]byte, benchValueSize)
	for j := range v {
		v[j] = byte('a' + (i+j)%26)
	}
	return v
}

// putRow is a write batch of one row with one 64-byte column.
func putRow(key int, val []byte) *docdb.WriteBatch {
	return &docdb.WriteBatch{Ops: []docdb.WriteOp{{
		Kind: docdb.OpPutRow, RowKey: rowKey(key),
		Columns: []docdb.ColumnValue{{ID: 1, Value: docdb.Bytes(val)}},
	}}}
}

// benchClients are the client concurrencies measured.
var benchClients = []int{1, 8, 64}

// drive runs op from workers goroutines in a closed loop for as long as the
// benchmark loop runs; each loop iteration consumes one completed operation,
// so ns/op is the inverse of the throughput. It reports ops/s, the average
// and p99 latency of the operations, and failed operations (which are
// retried, e.g. while a lease is re-established).
func drive(b *testing.B, workers int, op func(ctx context.Context, worker, seq int) error) {
	done := make(chan struct{}, 4*workers)
	stop := make(chan struct{})
	var failed atomic.Uint64
	lat := make([][]time.Duration, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				if err := op(ctx, w, seq); err != nil {
					failed.Add(1)
					time.Sleep(time.Millisecond)
					continue
				}
				lat[w] = append(lat[w], time.Since(start))
				select {
				case done <- struct{}{}:
				case <-stop:
					return
				}
			}
		}()
	}
	n := 0
	for b.Loop() {
		select {
		case <-done:
		case <-time.After(time.Minute):
			// Not a timing assertion: nothing at all completed for a minute.
			close(stop)
			wg.Wait()
			b.Fatalf("no operation completed for a minute (%d failed)", failed.Load())
		}
		n++
	}
	elapsed := b.Elapsed()
	close(stop)
	wg.Wait()
	all := slices.Concat(lat...)
	slices.Sort(all)
	var sum time.Duration
	for _, d := range all {
		sum += d
	}
	if len(all) > 0 {
		b.ReportMetric(float64(sum.Microseconds())/1e3/float64(len(all)), "avg-ms/op")
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1e3, "p99-ms")
	}
	b.ReportMetric(float64(n)/elapsed.Seconds(), "ops/s")
	b.ReportMetric(float64(failed.Load()), "failed")
}

// leaderCache remembers the leaseholder between operations and looks it up
// again after a failure, as a client's tablet cache would.
type leaderCache struct {
	h   *harness
	cur atomic.Pointer[tablet.Tablet]
}

func (c *leaderCache) do(op func(l *tablet.Tablet) error) error {
	l := c.cur.Load()
	if l == nil {
		if l = c.h.leader(); l == nil {
			return fmt.Errorf("no leaseholder")
		}
		c.cur.Store(l)
	}
	err := op(l)
	if err != nil {
		c.cur.Store(nil)
	}
	return err
}

func runtimeMetrics(h *harness) []consensus.MetricsSnapshot {
	var out []consensus.MetricsSnapshot
	for _, n := range h.Nodes() {
		out = append(out, n.Runtime.Metrics())
	}
	return out
}

// BenchmarkReplicatedWrite: tablet.Write of one 64-byte row, replicated to
// RF3 (a majority fsynced before the write returns), at 1, 8 and 64
// concurrent writers. Every writer writes its own keys.
func BenchmarkReplicatedWrite(b *testing.B) {
	h := newHarnessWith(b, 3, []uint64{1, 2, 3}, harnessOptions{runtime: benchConfig()})
	h.waitLeader(b)
	val := benchValue(0)
	for _, writers := range benchClients {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			m0 := runtimeMetrics(h)
			lc := &leaderCache{h: h}
			drive(b, writers, func(ctx context.Context, w, seq int) error {
				return lc.do(func(l *tablet.Tablet) error {
					_, err := l.Write(ctx, putRow(w<<24|seq%(1<<24), val))
					return err
				})
			})
			m1 := runtimeMetrics(h)
			var syncs uint64
			for i, m := range m1 {
				d := consensus.MetricsSnapshot{Cycles: m.Cycles - m0[i].Cycles, Syncs: m.Syncs - m0[i].Syncs,
					CycleTime: m.CycleTime - m0[i].CycleTime, SyncTime: m.SyncTime - m0[i].SyncTime}
				syncs += d.Syncs
				b.Logf("node %d: %d cycles (avg %v), %d fsyncs (avg %v)", i+1, d.Cycles,
					d.CycleTime/time.Duration(max(d.Cycles, 1)), d.Syncs, d.SyncTime/time.Duration(max(d.Syncs, 1)))
			}
			b.ReportMetric(float64(syncs)/b.Elapsed().Seconds(), "fsyncs/s")
		})
	}
}

// BenchmarkLeaderRead: tablet.Get of one 64-byte row at the leaseholder
// (served locally under the lease), at 1, 8 and 64 concurrent readers, over
// 10,000 rows.
func BenchmarkLeaderRead(b *testing.B) {
	const rows = 10_000
	h := newHarnessWith(b, 3, []uint64{1, 2, 3}, harnessOptions{runtime: benchConfig()})
	h.waitLeader(b)
	for i := 0; i < rows; i += 500 {
		h.retry(b, "load", func(ctx context.Context, tb *tablet.Tablet) error {
			wb := &docdb.WriteBatch{}
			for k := i; k < i+500; k++ {
				wb.Ops = append(wb.Ops, putRow(k, benchValue(k)).Ops...)
			}
			_, err := tb.Write(ctx, wb)
			return err
		})
	}
	for _, readers := range benchClients {
		b.Run(fmt.Sprintf("readers=%d", readers), func(b *testing.B) {
			lc := &leaderCache{h: h}
			drive(b, readers, func(ctx context.Context, w, seq int) error {
				return lc.do(func(l *tablet.Tablet) error {
					_, found, err := l.Get(ctx, rowKey(rand.IntN(rows)), nil)
					if err == nil && !found {
						err = fmt.Errorf("row missing")
					}
					return err
				})
			})
		})
	}
}

// envInt reads a positive integer from the environment, or returns def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkIdleMultiRaft: 3 nodes, SHALE_BENCH_IDLE_TABLETS (default 4000)
// tablets with a replica on every node, nothing written. Once every group
// has quiesced, it measures over the benchmark time (one iteration = 100 ms
// of idling) the frames and raft messages sent between the nodes and the
// process CPU, and reports goroutines and heap per tablet (three replicas
// each, all in this process).
func BenchmarkIdleMultiRaft(b *testing.B) {
	tablets := envInt("SHALE_BENCH_IDLE_TABLETS", 4000)
	heap0, goroutines0 := heapInUse(), runtime.NumGoroutine()
	descs := make([]tablet.Descriptor, tablets)
	for i := range descs {
		table := uint32(1000 + i)
		descs[i] = tablet.Descriptor{ID: uint64(1000 + i), TableID: table, Span: docdb.TableSpan(table)}
	}
	setup := time.Now()
	h := newHarnessWith(b, 3, []uint64{1, 2, 3}, harnessOptions{runtime: benchConfig(), descs: descs})
	opened := time.Since(setup)
	// Wait until every replica of every group is quiesced (and so has a
	// leader). A machine too slow to get there is reported, not failed.
	nodes := h.Nodes()
	quiesced := func() (n int) {
		for _, node := range nodes {
			for _, d := range descs {
				if g, ok := node.Runtime.Group(d.ID); ok && g.Status().Quiesced {
					n++
				}
			}
		}
		return n
	}
	deadline := time.Now().Add(3 * time.Minute)
	q := 0
	for q = quiesced(); q < 3*tablets && time.Now().Before(deadline); q = quiesced() {
		time.Sleep(200 * time.Millisecond)
	}
	settled := time.Since(setup)
	if q < 3*tablets {
		b.Logf("only %d of %d replicas quiesced after %v", q, 3*tablets, settled)
	}
	time.Sleep(time.Second) // let the last quiesce heartbeats and acks drain
	leaders := map[uint64]int{}
	for _, node := range nodes {
		for _, d := range descs {
			if g, ok := node.Runtime.Group(d.ID); ok && g.Status().Role == consensus.RoleLeader {
				leaders[node.ID]++
			}
		}
	}
	b.Logf("%d tablets: opened in %v, all quiesced after %v; leaders per node %v", tablets, opened.Round(time.Millisecond), settled.Round(time.Millisecond), leaders)

	counts := func() (frames, msgs uint64) {
		for _, n := range nodes {
			s := n.Transport.Stats()
			frames += s.FramesSent
			msgs += s.MessagesSent
		}
		return frames, msgs
	}
	// SHALE_BENCH_IDLE_CPUPROFILE names a file for a CPU profile of the
	// idle window alone (go test -cpuprofile would include the setup).
	if path := os.Getenv("SHALE_BENCH_IDLE_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	frames0, msgs0 := counts()
	cpu0 := cpuTime()
	for b.Loop() {
		time.Sleep(100 * time.Millisecond)
	}
	elapsed := b.Elapsed()
	cpu := cpuTime() - cpu0
	frames, msgs := counts()
	goroutines := runtime.NumGoroutine() - goroutines0
	heap := heapInUse()
	b.ReportMetric(float64(frames-frames0)/elapsed.Seconds(), "frames/s")
	b.ReportMetric(float64(msgs-msgs0)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(100*cpu.Seconds()/elapsed.Seconds(), "cpu-%")
	b.ReportMetric(float64(goroutines)/float64(tablets), "goroutines/tablet")
	b.ReportMetric(float64(int64(heap)-int64(heap0))/1024/float64(tablets), "heap-KB/tablet")
	b.ReportMetric(100*float64(q)/float64(3*tablets), "quiesced-%")
}

// BenchmarkSnapshotTransfer: a new replica of a tablet holding 100,000 rows
// catches up by snapshot; one iteration adds a learner on a fresh node,
// waits for the ingested snapshot, then removes it again. MB/s counts the
// snapshot bytes streamed over the time from the membership change to the
// ingested snapshot.
func BenchmarkSnapshotTransfer(b *testing.B) {
	const rows = 100_000
	h := newHarnessWith(b, 3, []uint64{1, 2, 3}, harnessOptions{runtime: benchConfig()})
	h.waitLeader(b)
	h.loadRows(b, rows, 2000, "r")
	var bytes uint64
	var took time.Duration
	for b.Loop() {
		b.StopTimer()
		node := h.AddNode().ID
		l := h.waitLeader(b)
		b.StartTimer()
		_, sent, elapsed := h.addLearnerBySnapshot(b, l, node, rows)
		b.StopTimer()
		bytes += sent
		took += elapsed
		h.retry(b, "remove the learner", func(ctx context.Context, tb *tablet.Tablet) error {
			return tb.Group().RemoveReplica(ctx, node)
		})
		h.StopNode(node)
		b.StartTimer()
	}
	b.ReportMetric(float64(bytes)/1e6/took.Seconds(), "MB/s")
	b.ReportMetric(float64(rows)*float64(b.N)/took.Seconds(), "keys/s")
	b.ReportMetric(float64(bytes)/float64(b.N)/1e6, "MB/snapshot")
}
