package workload

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/txncheck"
)

// BankSummary is the Bank workload's part of the summary.
type BankSummary struct {
	Accounts     int    `json:"accounts"`
	Isolation    string `json:"isolation"`
	InitialTotal int64  `json:"initial_total"`
	// FinalTotal is the total the final verify read (with Verify).
	FinalTotal int64 `json:"final_total"`
	// Retries counts transfer attempts that failed with a retryable error
	// (serialization failure, deadlock, abort, read restart) and were
	// retried; CheckRetries the same for snapshot checks.
	Retries      uint64 `json:"retries"`
	CheckRetries uint64 `json:"check_retries"`
	// Unknown counts transfers whose commit answer never came (ambiguous):
	// they may or may not have happened; the history check resolves them.
	Unknown uint64 `json:"unknown"`
}

// bankInitialBalance is every account's balance in a new bank.
const bankInitialBalance = 1000

// bankMarker is the id of the row that says the bank exists and holds its
// total.
const bankMarker = -1

var bankIsolations = map[string]client.Isolation{
	"snapshot": client.Snapshot, "serializable": client.Serializable, "read_committed": client.ReadCommitted,
}

func (c *Config) fillBank() error {
	if c.WriteThreads+c.ReadThreads == 0 && !c.Verify {
		return errors.New("workload: Bank needs transfer (--num-threads-write) or checker (--num-threads-read) threads, or --verify")
	}
	if c.Accounts < 0 || c.Accounts == 1 {
		return fmt.Errorf("workload: --num-accounts %d: want at least 2", c.Accounts)
	}
	if c.Isolation == "" {
		c.Isolation = "mixed"
	}
	if _, ok := bankIsolations[c.Isolation]; !ok && c.Isolation != "mixed" {
		return fmt.Errorf("workload: --isolation %q: want snapshot, serializable, read_committed or mixed", c.Isolation)
	}
	if c.Table == "" {
		c.Table = "bank"
	}
	return nil
}

type bankRun struct {
	cfg      Config
	cl       *client.Client
	table    *client.Table
	rec      *txncheck.Recorder
	proc     string
	accounts int
	total    int64

	transfers    opStats
	checks       opStats
	retries      atomic.Uint64
	checkRetries atomic.Uint64
	unknown      atomic.Uint64
	mismatches   atomic.Uint64
	gaps         gapTracker
}

func runBank(ctx context.Context, cfg Config) (Summary, error) {
	cl, err := client.Open(ctx, client.Config{Masters: cfg.Nodes})
	if err != nil {
		return Summary{}, err
	}
	defer cl.Close()
	table, err := createTable(ctx, cl, &masterpb.CreateTableRequest{
		Namespace: cfg.Namespace, Name: cfg.Table, ReplicationFactor: int32(cfg.RF),
		Schema: &masterpb.Schema{Columns: []*masterpb.ColumnSchema{
			{Id: 1, Name: "id", Type: "int64", IsHashKey: true},
			{Id: 2, Name: "balance", Type: "int64", Nullable: true},
			{Id: 3, Name: "txn", Type: "bytes", Nullable: true},
		}},
		Partitioning: &masterpb.Partitioning{Kind: masterpb.Partitioning_HASH, NumTablets: uint32(cfg.NumTablets)},
	})
	if err != nil {
		return Summary{}, err
	}
	var tag [2]byte
	_, _ = crand.Read(tag[:])
	b := &bankRun{cfg: cfg, cl: cl, table: table, proc: fmt.Sprintf("%d-%x", os.Getpid(), tag)}
	if cfg.History != nil {
		b.rec = txncheck.NewRecorder(cfg.History)
	}
	if err := b.open(ctx); err != nil {
		return Summary{}, err
	}
	if b.rec != nil {
		b.rec.Open(b.accounts, b.total/int64(b.accounts))
	}

	start := time.Now()
	b.gaps.start(start)
	if cfg.WriteThreads+cfg.ReadThreads > 0 {
		runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
		var wg sync.WaitGroup
		for w := 0; w < cfg.WriteThreads; w++ {
			wg.Add(1)
			go func() { defer wg.Done(); b.transferer(runCtx, w) }()
		}
		for i := 0; i < cfg.ReadThreads; i++ {
			wg.Add(1)
			go func() { defer wg.Done(); b.checker(runCtx) }()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		report(cfg.Out, cfg.ReportEvery, start, done, []reportItem{{"Transfers", &b.transfers.hist}, {"Checks", &b.checks.hist}}, func() string {
			return fmt.Sprintf("Retries: %d | Unknown: %d | Mismatches: %d", b.retries.Load(), b.unknown.Load(), b.mismatches.Load())
		})
		cancel()
	}
	elapsed := time.Since(start)
	b.gaps.note(time.Now())

	bs := &BankSummary{Accounts: b.accounts, Isolation: cfg.Isolation, InitialTotal: b.total}
	var verified uint64
	if cfg.Verify {
		// The final read runs even after an interrupt stopped the load.
		vctx, vcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		final, err := b.verify(vctx)
		vcancel()
		if err != nil {
			return Summary{}, err
		}
		bs.FinalTotal, verified = final, uint64(b.accounts)
	}
	if b.rec != nil {
		if err := b.rec.Err(); err != nil {
			return Summary{}, fmt.Errorf("workload: history: %w", err)
		}
	}
	bs.Retries, bs.CheckRetries, bs.Unknown = b.retries.Load(), b.checkRetries.Load(), b.unknown.Load()
	s := Summary{Workload: cfg.Workload, DurationMs: elapsed.Milliseconds(), Mismatches: b.mismatches.Load(),
		Read: b.checks.summary(elapsed), Write: b.transfers.summary(elapsed), Verified: verified,
		MaxUnavailableMs: b.gaps.maxMs(), Bank: bs}
	if cfg.JSON != nil {
		j, _ := json.Marshal(s)
		fmt.Fprintln(cfg.JSON, string(j))
	}
	if s.Mismatches > 0 {
		return s, fmt.Errorf("%w: %d snapshots with a wrong total", ErrCheckFailed, s.Mismatches)
	}
	return s, nil
}

// open creates the bank once (every account and the marker row in one
// transaction, so that concurrent workloads agree on one) and learns its
// shape.
func (b *bankRun) open(ctx context.Context) error {
	n := b.cfg.Accounts
	if n == 0 {
		n = 100
	}
	for {
		err := b.cl.RunTxn(ctx, client.TxnOptions{Isolation: client.Snapshot}, func(ctx context.Context, tx *client.Txn) error {
			_, found, err := tx.Get(ctx, b.table, client.Row{"id": docdb.Int64(bankMarker)})
			if err != nil || found {
				return err
			}
			ops := []client.Op{{Kind: client.OpPut, Row: client.Row{"id": docdb.Int64(bankMarker), "balance": docdb.Int64(int64(n) * bankInitialBalance)}}}
			for i := range n {
				ops = append(ops, client.Op{Kind: client.OpPut, Row: client.Row{"id": docdb.Int64(int64(i)), "balance": docdb.Int64(bankInitialBalance)}})
			}
			return tx.Apply(ctx, b.table, ops)
		})
		if err == nil {
			break
		}
		// A lost commit answer or a timeout: look again (the marker
		// says whether it happened).
		if ctx.Err() != nil || (!client.IsAmbiguous(err) && !client.IsTimeout(err)) {
			return fmt.Errorf("workload: create the bank: %w", err)
		}
	}
	var rows []client.Row
	err := b.cl.RunTxn(ctx, client.TxnOptions{Isolation: client.Snapshot}, func(ctx context.Context, tx *client.Txn) error {
		var err error
		rows, err = tx.Scan(ctx, b.table, client.ScanOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("workload: read the bank: %w", err)
	}
	ids := map[int64]bool{}
	for _, r := range rows {
		if id := r["id"].Int; id == bankMarker {
			b.total = r["balance"].Int
		} else {
			ids[id] = true
		}
	}
	b.accounts = len(ids)
	for i := range b.accounts {
		if !ids[int64(i)] {
			return fmt.Errorf("workload: %s.%s is not a bank: account %d missing", b.cfg.Namespace, b.cfg.Table, i)
		}
	}
	if b.accounts < 2 || b.total != int64(b.accounts)*bankInitialBalance {
		return fmt.Errorf("workload: %s.%s is not a bank: %d accounts, total %d", b.cfg.Namespace, b.cfg.Table, b.accounts, b.total)
	}
	if b.cfg.Accounts != 0 && b.cfg.Accounts != b.accounts {
		return fmt.Errorf("workload: the bank %s.%s has %d accounts, not %d (--num-accounts)", b.cfg.Namespace, b.cfg.Table, b.accounts, b.cfg.Accounts)
	}
	return nil
}

func (b *bankRun) isolation(w int) client.Isolation {
	if iso, ok := bankIsolations[b.cfg.Isolation]; ok {
		return iso
	}
	return client.Isolation(w % 3)
}

// version is an account row as read.
func version(r client.Row) txncheck.Version {
	v := txncheck.Version{Balance: r["balance"].Int}
	if w := r["txn"]; !w.IsNull() {
		v.Writer = hex.EncodeToString(w.Bytes)
	}
	return v
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (b *bankRun) transferer(ctx context.Context, w int) {
	iso := b.isolation(w)
	rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
	for ctx.Err() == nil {
		from := rng.IntN(b.accounts)
		to := rng.IntN(b.accounts - 1)
		if to >= from {
			to++
		}
		amount := int64(rng.IntN(10) + 1)
		start := time.Now()
		// Retry the transfer in new transactions while they fail with a
		// retryable error, as client.RunTxn does, each attempt recorded.
		backoff := 2 * time.Millisecond
		for ctx.Err() == nil {
			outcome, err := b.attempt(ctx, iso, from, to, amount)
			switch {
			case err == nil:
				now := time.Now()
				b.transfers.hist.observe(now.Sub(start))
				b.gaps.succeeded(now)
			case outcome == txncheck.Unknown:
				b.unknown.Add(1)
			case client.IsRetryable(err):
				b.retries.Add(1)
				sleepCtx(ctx, backoff+rand.N(backoff))
				backoff = min(2*backoff, 100*time.Millisecond)
				continue
			case ctx.Err() == nil:
				b.transfers.errors.Add(1)
			}
			break
		}
	}
}

// attempt runs one transaction of a transfer and records it. The outcome
// is that of the commit ("" if it was never sent).
func (b *bankRun) attempt(ctx context.Context, iso client.Isolation, from, to int, amount int64) (txncheck.Outcome, error) {
	invoke := time.Now()
	tx, err := b.cl.Begin(ctx, client.TxnOptions{Isolation: iso})
	if err != nil {
		return "", err
	}
	id := tx.ID()
	t := txncheck.Transfer{Txn: hex.EncodeToString(id[:]), Proc: b.proc, Iso: iso.String(), From: from, To: to, Amount: amount,
		Invoke: invoke.UnixNano()}
	read := func(a int) (txncheck.Version, error) {
		key := client.Row{"id": docdb.Int64(int64(a))}
		var r client.Row
		var found bool
		var err error
		if iso == client.ReadCommitted {
			r, found, err = tx.GetForUpdate(ctx, b.table, key, client.ForUpdate, client.WaitOnConflict)
		} else {
			r, found, err = tx.Get(ctx, b.table, key)
		}
		if err == nil && !found {
			err = fmt.Errorf("workload: account %d is missing", a)
		}
		return version(r), err
	}
	readBoth := false
	if t.ReadFrom, err = read(from); err == nil {
		if t.ReadTo, err = read(to); err == nil {
			readBoth = true
			err = tx.Apply(ctx, b.table, []client.Op{
				{Kind: client.OpUpdate, Row: client.Row{"id": docdb.Int64(int64(from)), "balance": docdb.Int64(t.ReadFrom.Balance - amount), "txn": docdb.Bytes(id[:])}},
				{Kind: client.OpUpdate, Row: client.Row{"id": docdb.Int64(int64(to)), "balance": docdb.Int64(t.ReadTo.Balance + amount), "txn": docdb.Bytes(id[:])}},
			})
		}
	}
	if err != nil {
		// The commit was never sent: the transaction cannot commit.
		_ = tx.Rollback(context.WithoutCancel(ctx))
		if readBoth && b.rec != nil {
			t.Outcome, t.Complete = txncheck.Aborted, time.Now().UnixNano()
			b.rec.Transfer(t)
		}
		return "", err
	}
	if b.rec != nil {
		b.rec.Transfer(t) // the commit is about to be sent
	}
	// A stopping workload still learns the outcome of a commit it sent.
	err = tx.Commit(context.WithoutCancel(ctx))
	outcome := txncheck.Aborted // the record says ABORTED
	switch {
	case err == nil:
		outcome = txncheck.Committed
		if b.cfg.AfterCommit != nil {
			b.cfg.AfterCommit(t.Txn)
		}
	case client.IsAmbiguous(err):
		outcome = txncheck.Unknown
	}
	if b.rec != nil {
		at := time.Now().UnixNano()
		if outcome == txncheck.Unknown {
			at = 0
		}
		b.rec.Outcome(t.Txn, outcome, at)
	}
	return outcome, err
}

// snapshot reads every balance in one snapshot (a read-only snapshot
// transaction). Missing accounts read as zero with no writer.
func (b *bankRun) snapshot(ctx context.Context) ([]txncheck.Version, string, error) {
	tx, err := b.cl.Begin(ctx, client.TxnOptions{Isolation: client.Snapshot})
	if err != nil {
		return nil, "", err
	}
	rows, err := tx.Scan(ctx, b.table, client.ScanOptions{})
	_ = tx.Commit(ctx) // read only: nothing to send
	if err != nil {
		return nil, "", err
	}
	vs := make([]txncheck.Version, b.accounts)
	for _, r := range rows {
		if id := r["id"].Int; id >= 0 && id < int64(b.accounts) {
			vs[id] = version(r)
		}
	}
	return vs, tx.ReadTime().String(), nil
}

// checkSnapshot counts a snapshot with a wrong total (or rows missing) as
// a mismatch and records it; it returns the total.
func (b *bankRun) checkSnapshot(vs []txncheck.Version, at string, invoke, complete time.Time, final bool) int64 {
	var sum int64
	for _, v := range vs {
		sum += v.Balance
	}
	if sum != b.total {
		b.mismatches.Add(1)
		what := "snapshot"
		if final {
			what = "final snapshot"
		}
		fmt.Fprintf(b.cfg.Out, "mismatch: %s at %s: total %d, want %d\n", what, at, sum, b.total)
	}
	if b.rec != nil {
		b.rec.Read(txncheck.Read{Proc: b.proc, Invoke: invoke.UnixNano(), Complete: complete.UnixNano(), Balances: vs, Final: final})
	}
	return sum
}

func (b *bankRun) checker(ctx context.Context) {
	for ctx.Err() == nil {
		invoke := time.Now()
		vs, at, err := b.snapshot(ctx)
		if err != nil {
			switch {
			case ctx.Err() != nil:
			case client.IsRetryable(err):
				b.checkRetries.Add(1)
			default:
				b.checks.errors.Add(1)
				sleepCtx(ctx, 10*time.Millisecond)
			}
			continue
		}
		complete := time.Now()
		b.checks.hist.observe(complete.Sub(invoke))
		if b.cfg.WriteThreads == 0 {
			b.gaps.succeeded(complete)
		}
		if b.checkSnapshot(vs, at, invoke, complete, false) != b.total {
			b.checks.errors.Add(1)
		}
	}
}

// verify reads the final total (retrying failed reads until ctx ends).
func (b *bankRun) verify(ctx context.Context) (int64, error) {
	backoff := 50 * time.Millisecond
	for {
		invoke := time.Now()
		vs, at, err := b.snapshot(ctx)
		if err == nil {
			return b.checkSnapshot(vs, at, invoke, time.Now(), true), nil
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("workload: verify: %w", err)
		}
		sleepCtx(ctx, backoff)
		backoff = min(2*backoff, time.Second)
	}
}
