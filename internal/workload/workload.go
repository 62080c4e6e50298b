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
//
// SqlInserts: the same keys, values and checks through YSQL (pgx; Nodes
// are the nodes' YSQL addresses, the calls spread over them): a table
// (k text PRIMARY KEY, v bytea), the first round of each key an INSERT, the
// next ones INSERT ... ON CONFLICT (k) DO UPDATE, reads by primary key.
//
// Bank: N accounts in a hash-sharded table, each holding a balance and the
// id of the transaction that last wrote it. Transfer threads move random
// amounts between random accounts in distributed transactions (read two
// balances, write both; retried on serialization failures); checker
// threads read every balance in one snapshot and count a snapshot whose
// total differs from the bank's as a mismatch. With a history writer,
// every attempt and every snapshot is recorded for package txncheck.
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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/master/masterpb"
)

// Config configures a run.
type Config struct {
	Workload      string // "KeyValue", "SqlInserts" or "Bank"
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
	// Verify reads every written key back at the end (Bank: checks the
	// final total).
	Verify bool
	// Bank: Accounts is the number of accounts of a new bank (0: 100; an
	// existing bank keeps its own, and a different non-zero value is an
	// error). Isolation is snapshot, serializable, read_committed or mixed
	// (transfer thread w at level w mod 3; default mixed).
	Accounts  int
	Isolation string
	// History, if set, receives the Bank's history (package txncheck's
	// format): give it an unbuffered file, so that a process killed at any
	// point leaves whole lines.
	History io.Writer
	// AfterCommit, if set, is called by a Bank transfer right after its
	// commit succeeded, before anything records it. Tests only: they kill
	// the process there, a coordinator dying in the middle of commit.
	AfterCommit func(txn string)
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
	// Bank is set for the Bank workload, whose Write are the committed
	// transfers and Read the snapshot checks.
	Bank *BankSummary `json:"bank,omitempty"`
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

// store is where KeyValue and SqlInserts keep key:i: a table through the
// client, or a YSQL table (sql.go).
type store interface {
	put(ctx context.Context, i int, v []byte, first bool) error
	// get reads key i; follower asks for a follower read.
	get(ctx context.Context, i int, follower bool) (v []byte, found bool, err error)
}

// clientStore is a table through the Go client.
type clientStore struct{ table *client.Table }

func (c clientStore) put(ctx context.Context, i int, v []byte, _ bool) error {
	return c.table.Put(ctx, client.Row{"k": docdb.Text(keyName(i)), "v": docdb.Bytes(v)})
}

func (c clientStore) get(ctx context.Context, i int, follower bool) ([]byte, bool, error) {
	row, found, err := c.table.Read(ctx, client.Row{"k": docdb.Text(keyName(i))}, client.ReadOptions{FollowerReads: follower})
	if err != nil || !found {
		return nil, found, err
	}
	return row["v"].Bytes, true, nil
}

// A value's version is the run's id over the round of the write
// (roundBits bits): a run over a table an earlier run filled tells their
// values apart.
const roundBits = 24

type run struct {
	cfg        Config
	id         uint64 // this run's id, random
	store      store
	keys       []keyState
	read       opStats
	write      opStats
	mismatches atomic.Uint64
	// written counts keys with at least one acknowledged write, for
	// readers to pick from (keys are first written in index order).
	written atomic.Int64
	gaps    gapTracker
}

// gapTracker tracks the longest stretch without a successful operation.
type gapTracker struct {
	lastSuccess atomic.Int64 // unix ns
	maxGap      atomic.Int64
}

func (g *gapTracker) start(now time.Time) { g.lastSuccess.Store(now.UnixNano()) }

func (g *gapTracker) succeeded(now time.Time) {
	g.note(now)
	g.lastSuccess.Store(now.UnixNano())
}

// note counts the stretch up to now (a fault right at the end counts too).
func (g *gapTracker) note(now time.Time) {
	gap := now.UnixNano() - g.lastSuccess.Load()
	for {
		m := g.maxGap.Load()
		if gap <= m || g.maxGap.CompareAndSwap(m, gap) {
			return
		}
	}
}

func (g *gapTracker) maxMs() int64 { return time.Duration(g.maxGap.Load()).Milliseconds() }

func (c *Config) fill() error {
	if c.Workload == "" {
		c.Workload = "KeyValue"
	}
	if c.Workload != "KeyValue" && c.Workload != "Bank" && c.Workload != "SqlInserts" {
		return fmt.Errorf("workload: unknown workload %q (have: KeyValue, SqlInserts, Bank)", c.Workload)
	}
	if c.Workload == "SqlInserts" && c.FollowerReads {
		return errors.New("workload: SqlInserts reads through YSQL: no --follower-reads")
	}
	if len(c.Nodes) == 0 {
		return errors.New("workload: --nodes is required")
	}
	if c.WriteThreads < 0 || c.ReadThreads < 0 {
		return errors.New("workload: negative thread count")
	}
	if c.ReportEvery <= 0 {
		c.ReportEvery = 5 * time.Second
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Namespace == "" {
		c.Namespace = "workload"
	}
	if c.Workload == "Bank" {
		return c.fillBank()
	}
	if c.WriteThreads+c.ReadThreads == 0 {
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
	if c.Table == "" {
		c.Table = "kv"
	}
	return nil
}

// Run runs the workload and returns its summary; the error is
// ErrCheckFailed when the data check failed.
func Run(ctx context.Context, cfg Config) (Summary, error) {
	if err := cfg.fill(); err != nil {
		return Summary{}, err
	}
	if cfg.Workload == "Bank" {
		return runBank(ctx, cfg)
	}
	if cfg.Workload == "SqlInserts" {
		st, err := openSQLStore(ctx, cfg)
		if err != nil {
			return Summary{}, err
		}
		defer st.close()
		return runKV(ctx, cfg, st)
	}
	cl, err := client.Open(ctx, client.Config{Masters: cfg.Nodes})
	if err != nil {
		return Summary{}, err
	}
	defer cl.Close()
	table, err := createTable(ctx, cl, &masterpb.CreateTableRequest{
		Namespace: cfg.Namespace, Name: cfg.Table, IfNotExists: true,
		ReplicationFactor: int32(cfg.RF),
		Schema: &masterpb.Schema{Columns: []*masterpb.ColumnSchema{
			{Id: 1, Name: "k", Type: "text", IsHashKey: true},
			{Id: 2, Name: "v", Type: "bytes", Nullable: true},
		}},
		Partitioning: &masterpb.Partitioning{Kind: masterpb.Partitioning_HASH, NumTablets: uint32(cfg.NumTablets)},
	})
	if err != nil {
		return Summary{}, err
	}
	return runKV(ctx, cfg, clientStore{table})
}

// runKV runs the writers and readers of KeyValue and SqlInserts over st.
func runKV(ctx context.Context, cfg Config, st store) (Summary, error) {
	r := &run{cfg: cfg, id: rand.Uint64() >> roundBits, store: st, keys: make([]keyState, cfg.UniqueKeys)}
	start := time.Now()
	r.gaps.start(start)
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
	report(cfg.Out, cfg.ReportEvery, start, done, []reportItem{{"Read", &r.read.hist}, {"Write", &r.write.hist}}, nil)
	elapsed := time.Since(start)
	r.gaps.note(time.Now())

	s := Summary{Workload: cfg.Workload, DurationMs: elapsed.Milliseconds(), Mismatches: r.mismatches.Load(),
		Read: r.read.summary(elapsed), Write: r.write.summary(elapsed), MaxUnavailableMs: r.gaps.maxMs()}
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

// createTable creates a table if missing and opens it. A table of
// thousands of tablets takes longer than one operation's deadline; the
// master finishes it anyway, and IfNotExists makes the retry safe.
func createTable(ctx context.Context, cl *client.Client, req *masterpb.CreateTableRequest) (*client.Table, error) {
	req.IfNotExists = true
	var err error
	var definitive *client.MasterError // the master's answer: retrying cannot help
	for deadline := time.Now().Add(5 * time.Minute); ; {
		_, err = cl.CreateTable(ctx, req)
		if err == nil || errors.As(err, &definitive) || ctx.Err() != nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("workload: create table: %w", err)
	}
	return cl.OpenTable(ctx, req.Namespace, req.Name)
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

func (r *run) writer(ctx context.Context, w int) {
	n := r.cfg.WriteThreads
	for round := uint64(1); ctx.Err() == nil; round++ {
		for i := w; i < r.cfg.UniqueKeys && ctx.Err() == nil; i += n {
			ks := &r.keys[i]
			ks.attempted.Store(round)
			t0 := time.Now()
			err := r.store.put(ctx, i, value(i, r.id<<roundBits|round, r.cfg.ValueSize), round == 1)
			if err != nil {
				if ctx.Err() == nil {
					r.write.errors.Add(1)
				}
				continue
			}
			now := time.Now()
			r.write.hist.observe(now.Sub(t0))
			if r.cfg.WriteThreads > 0 {
				r.gaps.succeeded(now)
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
		v, found, err := r.store.get(ctx, i, r.cfg.FollowerReads)
		if err != nil {
			if ctx.Err() == nil {
				r.read.errors.Add(1)
			}
			continue
		}
		now := time.Now()
		r.read.hist.observe(now.Sub(t0))
		if r.cfg.WriteThreads == 0 {
			r.gaps.succeeded(now)
		}
		if r.cfg.WriteThreads == 0 {
			continue // reading someone else's data: only read it
		}
		if err := r.check(i, v, found, floor, r.cfg.FollowerReads); err != nil {
			r.mismatches.Add(1)
			r.read.errors.Add(1)
			fmt.Fprintf(r.cfg.Out, "mismatch: %s: %v\n", keyName(i), err)
		}
	}
}

// check validates a read of key i against what was acknowledged before it.
// Follower reads may be stale, so they only need an intact value.
func (r *run) check(i int, val []byte, found bool, floor uint64, stale bool) error {
	if !found {
		if floor > 0 && !stale {
			return fmt.Errorf("missing, but version %d was acknowledged", floor)
		}
		return nil
	}
	version, err := decode(i, val)
	if err != nil {
		return err
	}
	if version>>roundBits != r.id {
		// An earlier run's value: fine until this run's first write of
		// the key is acknowledged.
		if floor > 0 && !stale {
			return fmt.Errorf("a value of another run (version %x), but version %d was acknowledged", version, floor)
		}
		return nil
	}
	v := version & (1<<roundBits - 1)
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
		var val []byte
		var found bool
		var err error
		for attempt := 0; attempt < 5; attempt++ {
			if val, found, err = r.store.get(ctx, i, false); err == nil {
				break
			}
		}
		checked++
		if err != nil {
			lost++
			fmt.Fprintf(r.cfg.Out, "verify: %s: %v\n", keyName(i), err)
			continue
		}
		if err := r.check(i, val, found, floor, false); err != nil {
			lost++
			fmt.Fprintf(r.cfg.Out, "verify: %s: %v\n", keyName(i), err)
		}
	}
	return checked, lost
}

type reportItem struct {
	name string
	h    *histogram
}

// report prints a progress line every period until done: for each item
// "Name: x ops/sec (y ms/op), n total ops", then extra (if any), then the
// uptime, separated by " | ".
func report(out io.Writer, period time.Duration, start time.Time, done <-chan struct{}, items []reportItem, extra func() string) {
	t := time.NewTicker(period)
	defer t.Stop()
	lastN := make([]uint64, len(items))
	lastSum := make([]uint64, len(items))
	last := start
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			secs := now.Sub(last).Seconds()
			var b strings.Builder
			for i, it := range items {
				n, sum := it.h.count.Load(), it.h.sum.Load()
				fmt.Fprintf(&b, "%s: %.2f ops/sec (%.2f ms/op), %d total ops | ", it.name, float64(n-lastN[i])/secs, msPer(sum-lastSum[i], n-lastN[i]), n)
				lastN[i], lastSum[i] = n, sum
			}
			if extra != nil {
				b.WriteString(extra())
				b.WriteString(" | ")
			}
			fmt.Fprintf(&b, "Uptime: %d ms\n", now.Sub(start).Milliseconds())
			io.WriteString(out, b.String())
			last = now
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
