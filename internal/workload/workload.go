// Package workload is a load generator in the manner of YugabyteDB's
// sample apps: concurrent writers and readers against a cluster through
// the Go client, with periodic throughput and latency lines, a JSON
// summary, and a check that every value read is one that was written.
//
// KeyValue: keys key:0 … key:K-1 in a hash-sharded table. Writer w owns
// the keys i ≡ w (mod writers) and writes them in rounds, each time a new
// version of the value; a value embeds its key, its version and a
// checksum, padded to the value size. Readers read random keys already
// written and check the value belongs to that key, is intact, and is not
// older than the last version acknowledged before the read started. With
// --verify, every key is read back at the end the same way: an
// acknowledged write that is missing is an error.
package workload

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/master/masterpb"
)

// Config configures a run.
type Config struct {
	Workload      string // "KeyValue"
	Nodes         []string
	WriteThreads  int
	ReadThreads   int
	UniqueKeys    int
	ValueSize     int
	Duration      time.Duration
	Namespace     string
	Table         string
	NumTablets    int // 0: the master's default
	RF            int // 0: the cluster's
	FollowerReads bool
	// Verify reads every written key back at the end.
	Verify bool
	// ReportEvery is the period of progress lines (default 5 s).
	ReportEvery time.Duration
	// Out receives progress lines; JSON gets the summary line if set.
	Out  io.Writer
	JSON io.Writer
}

// OpSummary is the summary of one kind of operation.
type OpSummary struct {
	Ops     uint64  `json:"ops"`
	Errors  uint64  `json:"errors"`
	OpsPerS float64 `json:"ops_per_sec"`
	P50Ms   float64 `json:"p50_ms"`
	P99Ms   float64 `json:"p99_ms"`
	MaxMs   float64 `json:"max_ms"`
	AvgMs   float64 `json:"avg_ms"`
}

// Summary is the outcome of a run.
type Summary struct {
	Workload   string    `json:"workload"`
	DurationMs int64     `json:"duration_ms"`
	Read       OpSummary `json:"read"`
	Write      OpSummary `json:"write"`
	// Mismatches counts reads that returned a value that was never written
	// for that key, a corrupt one, or an older one than already
	// acknowledged (each is also counted in Read.Errors).
	Mismatches uint64 `json:"mismatches"`
	// Lost counts acknowledged writes missing at the final verify.
	Lost     uint64 `json:"lost"`
	Verified uint64 `json:"verified"`
	// MaxUnavailableMs is the longest stretch without a successful write
	// (or, without writers, read): the unavailability window of a fault.
	MaxUnavailableMs int64 `json:"max_unavailable_ms"`
}

// ErrCheckFailed is returned when reads saw wrong data or writes were lost.
var ErrCheckFailed = errors.New("workload: data check failed")

type opStats struct {
	hist   histogram
	errors atomic.Uint64
}

// keyState tracks one key: the last version acknowledged and the last one
// attempted (an unacknowledged write may or may not have landed).
type keyState struct {
	acked     atomic.Uint64
	attempted atomic.Uint64
}

type run struct {
	cfg        Config
	table      *client.Table
	keys       []keyState
	read       opStats
	write      opStats
	mismatches atomic.Uint64
	// written counts keys with at least one acknowledged write, for
	// readers to pick from (keys are first written in index order).
	written atomic.Int64
	// lastSuccess (unix ns) and maxGap track unavailability.
	lastSuccess atomic.Int64
	maxGap      atomic.Int64
}

func (c *Config) fill() error {
	if c.Workload == "" {
		c.Workload = "KeyValue"
	}
	if c.Workload != "KeyValue" {
		return fmt.Errorf("workload: unknown workload %q (have: KeyValue)", c.Workload)
	}
	if len(c.Nodes) == 0 {
		return errors.New("workload: --nodes is required")
	}
	if c.WriteThreads < 0 || c.ReadThreads < 0 || c.WriteThreads+c.ReadThreads == 0 {
		return errors.New("workload: need at least one reader or writer thread")
	}
	if c.UniqueKeys <= 0 {
		return errors.New("workload: --num-unique-keys must be positive")
	}
	if c.ValueSize < 16 {
		c.ValueSize = 16 // room for key index, version and checksum
	}
	if c.ValueSize > 1<<20 {
		return errors.New("workload: --value-size at most 1 MiB")
	}
	if c.Namespace == "" {
		c.Namespace = "workload"
	}
	if c.Table == "" {
		c.Table = "kv"
	}
	if c.ReportEvery <= 0 {
		c.ReportEvery = 5 * time.Second
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	return nil
}

// Run runs the workload and returns its summary; the error is
// ErrCheckFailed when the data check failed.
func Run(ctx context.Context, cfg Config) (Summary, error) {
	if err := cfg.fill(); err != nil {
		return Summary{}, err
	}
	cl, err := client.Open(ctx, client.Config{Masters: cfg.Nodes})
	if err != nil {
		return Summary{}, err
	}
	defer cl.Close()
	req := &masterpb.CreateTableRequest{
		Namespace: cfg.Namespace, Name: cfg.Table, IfNotExists: true,
		ReplicationFactor: int32(cfg.RF),
		Schema: &masterpb.Schema{Columns: []*masterpb.ColumnSchema{
			{Id: 1, Name: "k", Type: "text", IsHashKey: true},
			{Id: 2, Name: "v", Type: "bytes", Nullable: true},
		}},
		Partitioning: &masterpb.Partitioning{Kind: masterpb.Partitioning_HASH, NumTablets: uint32(cfg.NumTablets)},
	}
	// A table of thousands of tablets takes longer than one operation's
	// deadline; the master finishes it anyway, and IfNotExists makes the
	// retry safe.
	var definitive *client.MasterError // the master's answer: retrying cannot help
	for deadline := time.Now().Add(5 * time.Minute); ; {
		_, err = cl.CreateTable(ctx, req)
		if err == nil || errors.As(err, &definitive) || ctx.Err() != nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		return Summary{}, fmt.Errorf("workload: create table: %w", err)
	}
	table, err := cl.OpenTable(ctx, cfg.Namespace, cfg.Table)
	if err != nil {
		return Summary{}, err
	}
	r := &run{cfg: cfg, table: table, keys: make([]keyState, cfg.UniqueKeys)}
	start := time.Now()
	r.lastSuccess.Store(start.UnixNano())
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var wg sync.WaitGroup
	for w := 0; w < cfg.WriteThreads; w++ {
		wg.Add(1)
		go func() { defer wg.Done(); r.writer(runCtx, w) }()
	}
	for i := 0; i < cfg.ReadThreads; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); r.reader(runCtx, rand.New(rand.NewPCG(uint64(i), uint64(start.UnixNano())))) }()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	r.report(start, done)
	elapsed := time.Since(start)
	r.noteGap(time.Now()) // a fault right at the end counts too

	s := Summary{Workload: cfg.Workload, DurationMs: elapsed.Milliseconds(), Mismatches: r.mismatches.Load(),
		Read: r.read.summary(elapsed), Write: r.write.summary(elapsed), MaxUnavailableMs: time.Duration(r.maxGap.Load()).Milliseconds()}
	if cfg.Verify {
		s.Verified, s.Lost = r.verify(ctx)
	}
	if cfg.JSON != nil {
		b, _ := json.Marshal(s)
		fmt.Fprintln(cfg.JSON, string(b))
	}
	if s.Mismatches > 0 || s.Lost > 0 {
		return s, fmt.Errorf("%w: %d mismatched reads, %d lost writes", ErrCheckFailed, s.Mismatches, s.Lost)
	}
	return s, nil
}

func keyName(i int) string { return fmt.Sprintf("key:%d", i) }

// value encodes key index, version and a checksum, padded to size.
func value(i int, version uint64, size int) []byte {
	b := make([]byte, size)
	binary.BigEndian.PutUint32(b, uint32(i))
	binary.BigEndian.PutUint64(b[4:], version)
	for j := 16; j < size; j++ {
		b[j] = byte(uint64(i)*31 + version*17 + uint64(j))
	}
	binary.BigEndian.PutUint32(b[12:], crc32.ChecksumIEEE(append(b[:12:12], b[16:]...)))
	return b
}

// decode checks a value read for key i and returns its version.
func decode(i int, b []byte) (uint64, error) {
	if len(b) < 16 {
		return 0, fmt.Errorf("value of %d bytes", len(b))
	}
	if got := int(binary.BigEndian.Uint32(b)); got != i {
		return 0, fmt.Errorf("value of key %d found under key %d", got, i)
	}
	if crc32.ChecksumIEEE(append(b[:12:12], b[16:]...)) != binary.BigEndian.Uint32(b[12:]) {
		return 0, errors.New("checksum mismatch")
	}
	return binary.BigEndian.Uint64(b[4:]), nil
}

func (r *run) succeeded(now time.Time) {
	r.noteGap(now)
	r.lastSuccess.Store(now.UnixNano())
}

func (r *run) noteGap(now time.Time) {
	gap := now.UnixNano() - r.lastSuccess.Load()
	for {
		m := r.maxGap.Load()
		if gap <= m || r.maxGap.CompareAndSwap(m, gap) {
			return
		}
	}
}

func (r *run) writer(ctx context.Context, w int) {
	n := r.cfg.WriteThreads
	for round := uint64(1); ctx.Err() == nil; round++ {
		for i := w; i < r.cfg.UniqueKeys && ctx.Err() == nil; i += n {
			ks := &r.keys[i]
			ks.attempted.Store(round)
			t0 := time.Now()
			err := r.table.Put(ctx, client.Row{"k": docdb.Text(keyName(i)), "v": docdb.Bytes(value(i, round, r.cfg.ValueSize))})
			if err != nil {
				if ctx.Err() == nil {
					r.write.errors.Add(1)
				}
				continue
			}
			now := time.Now()
			r.write.hist.observe(now.Sub(t0))
			if r.cfg.WriteThreads > 0 {
				r.succeeded(now)
			}
			ks.acked.Store(round)
			if round == 1 {
				for {
					cur := r.written.Load()
					if int64(i) < cur || r.written.CompareAndSwap(cur, int64(i)+1) {
						break
					}
				}
			}
		}
	}
}

func (r *run) reader(ctx context.Context, rnd *rand.Rand) {
	opts := client.ReadOptions{FollowerReads: r.cfg.FollowerReads}
	for ctx.Err() == nil {
		n := int(r.written.Load())
		if r.cfg.WriteThreads == 0 {
			n = r.cfg.UniqueKeys
		}
		if n == 0 {
			time.Sleep(time.Millisecond) // nothing written yet
			continue
		}
		i := rnd.IntN(n)
		floor := r.keys[i].acked.Load()
		t0 := time.Now()
		row, found, err := r.table.Read(ctx, client.Row{"k": docdb.Text(keyName(i))}, opts)
		if err != nil {
			if ctx.Err() == nil {
				r.read.errors.Add(1)
			}
			continue
		}
		now := time.Now()
		r.read.hist.observe(now.Sub(t0))
		if r.cfg.WriteThreads == 0 {
			r.succeeded(now)
		}
		if r.cfg.WriteThreads == 0 {
			continue // reading someone else's data: only read it
		}
		if err := r.check(i, row, found, floor, opts.FollowerReads); err != nil {
			r.mismatches.Add(1)
			r.read.errors.Add(1)
			fmt.Fprintf(r.cfg.Out, "mismatch: %s: %v\n", keyName(i), err)
		}
	}
}

// check validates a read of key i against what was acknowledged before it.
// Follower reads may be stale, so they only need an intact value.
func (r *run) check(i int, row client.Row, found bool, floor uint64, stale bool) error {
	if !found {
		if floor > 0 && !stale {
			return fmt.Errorf("missing, but version %d was acknowledged", floor)
		}
		return nil
	}
	v, err := decode(i, row["v"].Bytes)
	if err != nil {
		return err
	}
	if !stale && v < floor {
		return fmt.Errorf("version %d, but %d was acknowledged before the read", v, floor)
	}
	if top := r.keys[i].attempted.Load(); v > top {
		return fmt.Errorf("version %d was never written (last attempt %d)", v, top)
	}
	return nil
}

// verify reads every key once more; it returns how many were checked and
// how many acknowledged writes are missing or older than acknowledged.
func (r *run) verify(ctx context.Context) (checked, lost uint64) {
	for i := range r.keys {
		floor := r.keys[i].acked.Load()
		if floor == 0 {
			continue
		}
		var row client.Row
		var found bool
		var err error
		for attempt := 0; attempt < 5; attempt++ {
			if row, found, err = r.table.Get(ctx, client.Row{"k": docdb.Text(keyName(i))}); err == nil {
				break
			}
		}
		checked++
		if err != nil {
			lost++
			fmt.Fprintf(r.cfg.Out, "verify: %s: %v\n", keyName(i), err)
			continue
		}
		if err := r.check(i, row, found, floor, false); err != nil {
			lost++
			fmt.Fprintf(r.cfg.Out, "verify: %s: %v\n", keyName(i), err)
		}
	}
	return checked, lost
}

// report prints a progress line every ReportEvery until done.
func (r *run) report(start time.Time, done <-chan struct{}) {
	t := time.NewTicker(r.cfg.ReportEvery)
	defer t.Stop()
	var lastR, lastW uint64
	var lastRSum, lastWSum uint64
	last := start
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			secs := now.Sub(last).Seconds()
			rn, wn := r.read.hist.count.Load(), r.write.hist.count.Load()
			rs, ws := r.read.hist.sum.Load(), r.write.hist.sum.Load()
			fmt.Fprintf(r.cfg.Out, "Read: %.2f ops/sec (%.2f ms/op), %d total ops | Write: %.2f ops/sec (%.2f ms/op), %d total ops | Uptime: %d ms\n",
				float64(rn-lastR)/secs, msPer(rs-lastRSum, rn-lastR), rn,
				float64(wn-lastW)/secs, msPer(ws-lastWSum, wn-lastW), wn,
				now.Sub(start).Milliseconds())
			lastR, lastW, lastRSum, lastWSum, last = rn, wn, rs, ws, now
		}
	}
}

func msPer(sumNs, n uint64) float64 {
	if n == 0 {
		return 0
	}
	return float64(sumNs) / float64(n) / 1e6
}

func (s *opStats) summary(elapsed time.Duration) OpSummary {
	h := &s.hist
	n := h.count.Load()
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	return OpSummary{
		Ops: n, Errors: s.errors.Load(), OpsPerS: float64(n) / elapsed.Seconds(),
		P50Ms: ms(h.quantile(0.5)), P99Ms: ms(h.quantile(0.99)), MaxMs: ms(time.Duration(h.max.Load())),
		AvgMs: msPer(h.sum.Load(), n),
	}
}
