package client_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/server/servertest"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

func txnSetup(t *testing.T, name string, tablets uint32) (*servertest.Cluster, *client.Client, *client.Table) {
	t.Helper()
	c := servertest.NewCluster(t, 3)
	cl := open(t, c)
	return c, cl, create(t, cl, hashTable(name, tablets))
}

func val(r client.Row) int64 { return r["v"].Int }

func begin(t *testing.T, cl *client.Client, iso client.Isolation) *client.Txn {
	t.Helper()
	tx, err := cl.Begin(ctxT(t), client.TxnOptions{Isolation: iso})
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// waitNoIntents waits until no tablet of any node holds an intent.
func waitNoIntents(t *testing.T, c *servertest.Cluster) {
	t.Helper()
	var last int
	consensustest.WaitFor(t, 20*time.Second, "every intent applied or removed", func() bool {
		last = 0
		for _, s := range c.Servers {
			if s == nil {
				continue
			}
			for _, tb := range s.Node().Tablets() {
				n, err := tb.IntentCount()
				if err != nil {
					t.Fatal(err)
				}
				last += n
			}
		}
		return last == 0
	})
}

func TestTxnReadYourWritesCommitRollbackSavepoint(t *testing.T) {
	c, cl, tb := txnSetup(t, "ryw", 4)
	ctx := ctxT(t)
	if err := tb.Put(ctx, client.Row{"k": docdb.Text("a"), "v": docdb.Int64(1)}); err != nil {
		t.Fatal(err)
	}
	for _, iso := range []client.Isolation{client.Snapshot, client.Serializable, client.ReadCommitted} {
		t.Run(iso.String(), func(t *testing.T) {
			tx := begin(t, cl, iso)
			key := client.Row{"k": docdb.Text("b-" + iso.String())}
			if err := tx.Put(ctx, tb, client.Row{"k": key["k"], "v": docdb.Int64(7), "s": docdb.Text("x")}); err != nil {
				t.Fatal(err)
			}
			if err := tx.Update(ctx, tb, client.Row{"k": docdb.Text("a"), "v": docdb.Int64(2)}); err != nil {
				t.Fatal(err)
			}
			// Inside: own writes; outside: nothing yet.
			if r, ok, err := tx.Get(ctx, tb, key); err != nil || !ok || val(r) != 7 || string(r["s"].Bytes) != "x" {
				t.Fatalf("own write: %v %v %v", r, ok, err)
			}
			if r, ok, err := tb.Get(ctx, key); err != nil || ok {
				t.Fatalf("outside sees an uncommitted write: %v %v %v", r, ok, err)
			}
			if r, _, err := tb.Get(ctx, client.Row{"k": docdb.Text("a")}); err != nil || val(r) != 1 {
				t.Fatalf("outside sees %v %v", r, err)
			}
			// A savepoint rollback undoes what follows it only.
			if err := tx.Savepoint("sp"); err != nil {
				t.Fatal(err)
			}
			if err := tx.Delete(ctx, tb, key); err != nil {
				t.Fatal(err)
			}
			if _, ok, _ := tx.Get(ctx, tb, key); ok {
				t.Fatal("own delete not seen")
			}
			if err := tx.RollbackToSavepoint(ctx, "sp"); err != nil {
				t.Fatal(err)
			}
			if r, ok, err := tx.Get(ctx, tb, key); err != nil || !ok || val(r) != 7 {
				t.Fatalf("after rollback to savepoint: %v %v %v", r, ok, err)
			}
			rows, err := tx.Scan(ctx, tb, client.ScanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int64{}
			for _, r := range rows {
				seen[string(r["k"].Bytes)] = val(r)
			}
			if seen["a"] != 2 || seen[string(key["k"].Bytes)] != 7 {
				t.Fatalf("scan inside the transaction: %v", seen)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if r, ok, err := tb.Get(ctx, key); err != nil || !ok || val(r) != 7 {
				t.Fatalf("after commit: %v %v %v", r, ok, err)
			}
			if r, _, err := tb.Get(ctx, client.Row{"k": docdb.Text("a")}); err != nil || val(r) != 2 {
				t.Fatalf("after commit: %v %v", r, err)
			}
			// Rollback leaves nothing behind.
			tx = begin(t, cl, iso)
			gone := client.Row{"k": docdb.Text("rolled-back-" + iso.String())}
			if err := tx.Put(ctx, tb, client.Row{"k": gone["k"], "v": docdb.Int64(1)}); err != nil {
				t.Fatal(err)
			}
			if err := tx.Update(ctx, tb, client.Row{"k": docdb.Text("a"), "v": docdb.Int64(99)}); err != nil {
				t.Fatal(err)
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			if _, ok, err := tb.Get(ctx, gone); err != nil || ok {
				t.Fatalf("rolled back row exists: %v %v", ok, err)
			}
			if r, _, err := tb.Get(ctx, client.Row{"k": docdb.Text("a")}); err != nil || val(r) != 2 {
				t.Fatalf("rolled back update visible: %v %v", r, err)
			}
			if err := tb.Put(ctx, client.Row{"k": docdb.Text("a"), "v": docdb.Int64(1)}); err != nil {
				t.Fatal(err)
			}
		})
	}
	waitNoIntents(t, c)
}

// TestTxnNoLostUpdate: concurrent read-modify-write increments of a few
// counters lose nothing, under snapshot isolation (conflicts retried) and
// read committed with FOR UPDATE.
func TestTxnNoLostUpdate(t *testing.T) {
	c, cl, tb := txnSetup(t, "counters", 4)
	ctx := ctxT(t)
	const counters, workers, each = 3, 6, 8
	for i := range counters {
		if err := tb.Put(ctx, client.Row{"k": docdb.Text(fmt.Sprint("c", i)), "v": docdb.Int64(0)}); err != nil {
			t.Fatal(err)
		}
	}
	var conflicts atomic.Int64
	run := func(iso client.Isolation, forUpdate bool) {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					key := client.Row{"k": docdb.Text(fmt.Sprint("c", (w+i)%counters))}
					err := cl.RunTxn(ctx, client.TxnOptions{Isolation: iso}, func(ctx context.Context, tx *client.Txn) error {
						var r client.Row
						var err error
						if forUpdate {
							r, _, err = tx.GetForUpdate(ctx, tb, key, client.ForUpdate, client.WaitOnConflict)
						} else {
							r, _, err = tx.Get(ctx, tb, key)
						}
						if err != nil {
							if client.IsRetryable(err) {
								conflicts.Add(1)
							}
							return err
						}
						err = tx.Put(ctx, tb, client.Row{"k": key["k"], "v": docdb.Int64(val(r) + 1)})
						if client.IsRetryable(err) {
							conflicts.Add(1)
						}
						return err
					})
					if err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	run(client.Snapshot, false)
	run(client.ReadCommitted, true)
	run(client.Serializable, false)
	var total int64
	for i := range counters {
		r, _, err := tb.Get(ctx, client.Row{"k": docdb.Text(fmt.Sprint("c", i))})
		if err != nil {
			t.Fatal(err)
		}
		total += val(r)
	}
	if want := int64(3 * workers * each); total != want {
		t.Fatalf("counters sum to %d, want %d: lost updates", total, want)
	}
	t.Logf("%d increments, %d retried conflicts", 3*workers*each, conflicts.Load())
	waitNoIntents(t, c)
}

// TestTxnWriteSkew: two doctors on call each check that the other is on
// call and go off call. Snapshot isolation allows both to go (write
// skew); serializable does not.
func TestTxnWriteSkew(t *testing.T) {
	_, cl, tb := txnSetup(t, "doctors", 4)
	ctx := ctxT(t)
	skew := func(iso client.Isolation) (committed int, onCall int64) {
		for _, d := range []string{"alice", "bob"} {
			if err := tb.Put(ctx, client.Row{"k": docdb.Text(d), "v": docdb.Int64(1)}); err != nil {
				t.Fatal(err)
			}
		}
		t1, t2 := begin(t, cl, iso), begin(t, cl, iso)
		both := func(tx *client.Txn) int64 {
			var n int64
			for _, d := range []string{"alice", "bob"} {
				r, _, err := tx.Get(ctx, tb, client.Row{"k": docdb.Text(d)})
				if err != nil {
					t.Fatal(err)
				}
				n += val(r)
			}
			return n
		}
		if both(t1) != 2 || both(t2) != 2 {
			t.Fatal("both doctors should be on call")
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, p := range []struct {
			tx *client.Txn
			me string
		}{{t1, "alice"}, {t2, "bob"}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := p.tx.Update(ctx, tb, client.Row{"k": docdb.Text(p.me), "v": docdb.Int64(0)})
				if err == nil {
					err = p.tx.Commit(ctx)
				} else {
					_ = p.tx.Rollback(ctx)
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err == nil {
				committed++
			} else if !client.IsRetryable(err) {
				t.Fatalf("%s: unexpected error %v", iso, err)
			}
		}
		for _, d := range []string{"alice", "bob"} {
			r, _, err := tb.Get(ctx, client.Row{"k": docdb.Text(d)})
			if err != nil {
				t.Fatal(err)
			}
			onCall += val(r)
		}
		return committed, onCall
	}
	if n, on := skew(client.Snapshot); n != 2 || on != 0 {
		t.Fatalf("snapshot: %d committed, %d on call; want write skew (2, 0)", n, on)
	}
	if n, on := skew(client.Serializable); n != 1 || on != 1 {
		t.Fatalf("serializable: %d committed, %d on call; want (1, 1)", n, on)
	}
}

// TestTxnDeadlockNoWaitSkipLocked: a lock cycle is detected and one side
// aborted with CodeDeadlock; NOWAIT fails at once; SKIP LOCKED skips.
func TestTxnDeadlockNoWaitSkipLocked(t *testing.T) {
	_, cl, tb := txnSetup(t, "locks", 4)
	ctx := ctxT(t)
	a, b := client.Row{"k": docdb.Text("a")}, client.Row{"k": docdb.Text("b")}
	for _, k := range []client.Row{a, b} {
		if err := tb.Put(ctx, client.Row{"k": k["k"], "v": docdb.Int64(0)}); err != nil {
			t.Fatal(err)
		}
	}
	t1, t2 := begin(t, cl, client.ReadCommitted), begin(t, cl, client.ReadCommitted)
	if _, err := t1.Lock(ctx, tb, []client.Row{a}, client.ForUpdate, client.WaitOnConflict); err != nil {
		t.Fatal(err)
	}
	if _, err := t2.Lock(ctx, tb, []client.Row{b}, client.ForUpdate, client.WaitOnConflict); err != nil {
		t.Fatal(err)
	}
	// NOWAIT and SKIP LOCKED from a third transaction.
	t3 := begin(t, cl, client.ReadCommitted)
	if _, err := t3.Lock(ctx, tb, []client.Row{a}, client.ForUpdate, client.NoWait); client.SQLState(err) != "55P03" {
		t.Fatalf("NOWAIT on a locked row: %v", err)
	}
	c := client.Row{"k": docdb.Text("c")}
	skipped, err := t3.Lock(ctx, tb, []client.Row{a, b, c}, client.ForUpdate, client.SkipLocked)
	if err != nil || len(skipped) != 2 {
		t.Fatalf("SKIP LOCKED: skipped %v, err %v", skipped, err)
	}
	if err := t3.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// The cycle.
	start := time.Now()
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, p := range []struct {
		tx  *client.Txn
		row client.Row
	}{{t1, b}, {t2, a}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := p.tx.Lock(ctx, tb, []client.Row{p.row}, client.ForUpdate, client.WaitOnConflict)
			if err != nil {
				_ = p.tx.Rollback(ctx)
			} else {
				err = p.tx.Commit(ctx)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	var deadlocks, ok int
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case client.SQLState(err) == "40P01":
			deadlocks++
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if deadlocks != 1 || ok != 1 {
		t.Fatalf("%d deadlock errors and %d commits, want 1 and 1 (%v)", deadlocks, ok, errs)
	}
	t.Logf("deadlock resolved in %v", time.Since(start).Round(time.Millisecond))
}

// TestTxnAbandonedLocksExpire: a transaction whose coordinator stops
// heartbeating (its client is gone) loses its locks once its record
// expires; a writer waiting for it goes ahead.
func TestTxnAbandonedLocksExpire(t *testing.T) {
	c, cl, tb := txnSetup(t, "abandoned", 2)
	ctx := ctxT(t)
	key := client.Row{"k": docdb.Text("x")}
	other := open(t, c)
	tx, err := other.Begin(ctx, client.TxnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Put(ctx, tb, client.Row{"k": key["k"], "v": docdb.Int64(1)}); err != nil {
		t.Fatal(err)
	}
	tx.Abandon() // the coordinator dies: no heartbeat, no commit, no rollback
	start := time.Now()
	err = cl.RunTxn(ctx, client.TxnOptions{}, func(ctx context.Context, tx *client.Txn) error {
		return tx.Put(ctx, tb, client.Row{"k": key["k"], "v": docdb.Int64(2)})
	})
	if err != nil {
		t.Fatal(err)
	}
	waited := time.Since(start)
	if r, _, err := tb.Get(ctx, key); err != nil || val(r) != 2 {
		t.Fatalf("got %v %v", r, err)
	}
	t.Logf("the waiting writer went ahead after %v (expiry 2 s)", waited.Round(time.Millisecond))
	waitNoIntents(t, c)
}

// TestTxnBank: transfers between accounts on many tablets at every
// isolation level, while snapshot readers check that the total never
// changes; then a node is stopped and restarted under the same load.
func TestTxnBank(t *testing.T) {
	c, cl, tb := txnSetup(t, "bank", 8)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const accounts, initial = 20, 100
	for i := range accounts {
		if err := tb.Put(ctx, client.Row{"k": docdb.Text(fmt.Sprint("acct", i)), "v": docdb.Int64(initial)}); err != nil {
			t.Fatal(err)
		}
	}
	// phase runs the load until script returns; script waits on the
	// load's progress (more transfers, more consistent snapshots) rather
	// than on the clock.
	phase := func(script func(progress func(what string, transfers, checks int64))) {
		pctx, pcancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer func() {
			pcancel()
			wg.Wait()
		}()
		var transfers, checks atomic.Int64
		progress := func(what string, moreTransfers, moreChecks int64) {
			tt, tc := transfers.Load()+moreTransfers, checks.Load()+moreChecks
			consensustest.WaitFor(t, time.Minute, what, func() bool {
				return transfers.Load() >= tt && checks.Load() >= tc
			})
		}
		for w := range 6 {
			iso := client.Isolation(w % 3)
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 7))
				for pctx.Err() == nil {
					from, to := rng.IntN(accounts), rng.IntN(accounts)
					if from == to {
						continue
					}
					amount := int64(rng.IntN(10) + 1)
					err := cl.RunTxn(pctx, client.TxnOptions{Isolation: iso}, func(ctx context.Context, tx *client.Txn) error {
						get := func(i int) (int64, error) {
							k := client.Row{"k": docdb.Text(fmt.Sprint("acct", i))}
							var r client.Row
							var err error
							if iso == client.ReadCommitted {
								r, _, err = tx.GetForUpdate(ctx, tb, k, client.ForUpdate, client.WaitOnConflict)
							} else {
								r, _, err = tx.Get(ctx, tb, k)
							}
							return val(r), err
						}
						fb, err := get(from)
						if err != nil {
							return err
						}
						tbal, err := get(to)
						if err != nil {
							return err
						}
						return tx.Apply(ctx, tb, []client.Op{
							{Kind: client.OpUpdate, Row: client.Row{"k": docdb.Text(fmt.Sprint("acct", from)), "v": docdb.Int64(fb - amount)}},
							{Kind: client.OpUpdate, Row: client.Row{"k": docdb.Text(fmt.Sprint("acct", to)), "v": docdb.Int64(tbal + amount)}},
						})
					})
					if err == nil {
						transfers.Add(1)
					} else if pctx.Err() == nil && !client.IsAmbiguous(err) && !client.IsTimeout(err) {
						t.Errorf("transfer: %v", err)
						return
					}
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pctx.Err() == nil {
				tx := begin(t, cl, client.Snapshot)
				rows, err := tx.Scan(pctx, tb, client.ScanOptions{})
				_ = tx.Rollback(ctx)
				if err != nil {
					if pctx.Err() == nil && !client.IsRetryable(err) && !client.IsTimeout(err) {
						t.Errorf("check: %v", err)
					}
					continue
				}
				var sum int64
				for _, r := range rows {
					sum += val(r)
				}
				if len(rows) != accounts || sum != accounts*initial {
					t.Errorf("snapshot at %s: %d accounts, total %d, want %d", tx.ReadTime(), len(rows), sum, accounts*initial)
					return
				}
				checks.Add(1)
			}
		}()
		script(progress)
		pcancel()
		wg.Wait()
		t.Logf("%d transfers, %d consistent snapshots", transfers.Load(), checks.Load())
	}
	phase(func(progress func(string, int64, int64)) {
		progress("transfers and checks on a healthy cluster", 100, 20)
	})
	phase(func(progress func(string, int64, int64)) {
		progress("load before the fault", 20, 2)
		c.Stop(2)
		progress("transfers and checks with node 3 down", 30, 3)
		c.Start(2, []string{c.Addrs[0]})
		progress("transfers and checks after node 3 is back", 30, 3)
	})
	waitNoIntents(t, c)
	var sum int64
	rows, err := tb.ScanAll(ctx, client.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		sum += val(r)
	}
	if sum != accounts*initial {
		t.Fatalf("final total %d, want %d", sum, accounts*initial)
	}
}

// TestTxnPlainWriteWaitsForLocks: a write outside any transaction waits
// for a pending transaction's lock on the row instead of slipping under
// it (which would lose the plain write when the transaction commits).
func TestTxnPlainWriteWaitsForLocks(t *testing.T) {
	_, cl, tb := txnSetup(t, "plain", 2)
	ctx := ctxT(t)
	key := client.Row{"k": docdb.Text("r")}
	if err := tb.Put(ctx, client.Row{"k": key["k"], "v": docdb.Int64(1)}); err != nil {
		t.Fatal(err)
	}
	tx := begin(t, cl, client.Snapshot)
	r, _, err := tx.GetForUpdate(ctx, tb, key, client.ForUpdate, client.WaitOnConflict)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- tb.Put(ctx, client.Row{"k": key["k"], "v": docdb.Int64(100)}) }()
	if err := tx.Put(ctx, tb, client.Row{"k": key["k"], "v": docdb.Int64(val(r) + 1)}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("the plain write finished (%v) while the row was locked", err)
	default:
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The plain write came after the transaction: its value stands.
	if r, _, err := tb.Get(ctx, key); err != nil || val(r) != 100 {
		t.Fatalf("got %v %v, want 100", r, err)
	}
}

// waitingFor reports whether waiter's status record says it waits for
// blocker (a waiter re-reports its wait while it lasts).
func waitingFor(t *testing.T, cl *client.Client, waiter, blocker *client.Txn) bool {
	t.Helper()
	res, err := cl.TxnStatus(ctxT(t), tspb.TxnStatusRequest_GET, waiter.ID(), 0, nil)
	if err != nil {
		return false
	}
	for _, b := range res.WaitingFor {
		if b == blocker.ID() {
			return true
		}
	}
	return false
}

func phantomRow(a int64, b string) client.Row {
	return client.Row{"a": docdb.Int64(a), "b": docdb.Text(b), "v": docdb.Int64(1)}
}

func scanRange(ctx context.Context, tx *client.Txn, tb *client.Table, lo, hi int64, limit int) ([]client.Row, error) {
	// Two rows a page: a scan's pages lock adjacent spans.
	return tx.Scan(ctx, tb, client.ScanOptions{Start: client.Row{"a": docdb.Int64(lo)}, End: client.Row{"a": docdb.Int64(hi)}, Limit: limit, PageSize: 2})
}

// TestTxnPhantomRangeSkew: two transactions each count the rows of a key
// range (both ranges span two tablets) and insert a row into the other's
// range. Snapshot isolation lets both commit, a result no serial order
// gives (each insert is a phantom the other's count missed); serializable
// range locks make the inserts wait for each other, and deadlock detection
// aborts one.
func TestTxnPhantomRangeSkew(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	cl := open(t, c)
	tb := create(t, cl, rangeTable("phantom_skew"))
	ctx := ctxT(t)
	for _, a := range []int64{450, 480, 520, 1450, 1480, 1520} {
		if err := tb.Put(ctx, phantomRow(a, "seed")); err != nil {
			t.Fatal(err)
		}
	}
	ranges := [2][2]int64{{400, 600}, {1400, 1600}}
	skew := func(iso client.Isolation, round int64) (committed int) {
		txs := []*client.Txn{begin(t, cl, iso), begin(t, cl, iso)}
		for i, tx := range txs {
			rows, err := scanRange(ctx, tx, tb, ranges[i][0], ranges[i][1], 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) < 3 {
				t.Fatalf("%s: transaction %d counted %d rows", iso, i, len(rows))
			}
		}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, tx := range txs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				other := ranges[1-i]
				err := tx.Put(ctx, tb, phantomRow(other[0]+10+round, fmt.Sprint("from-", i)))
				if err == nil {
					err = tx.Commit(ctx)
				} else {
					_ = tx.Rollback(ctx)
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err == nil {
				committed++
			} else if !client.IsRetryable(err) {
				t.Fatalf("%s: unexpected error %v", iso, err)
			}
		}
		return committed
	}
	if n := skew(client.Snapshot, 0); n != 2 {
		t.Fatalf("snapshot: %d committed, want the anomaly (2)", n)
	}
	if n := skew(client.Serializable, 1); n != 1 {
		t.Fatalf("serializable: %d committed, want 1", n)
	}
	waitNoIntents(t, c)
}

// TestTxnPhantomInsertWaits: a serializable scan (LIMIT 3, two rows a page)
// read-locks the span it covered up to the last row returned: an insert
// into it, even into the gap between its pages, waits until the scanner
// commits; an insert past the last row returned does not; a savepoint
// rollback or a rollback releases the lock, and a reverse scan locks from
// its end down. Under snapshot isolation the insert does not wait.
func TestTxnPhantomInsertWaits(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	cl := open(t, c)
	tb := create(t, cl, rangeTable("phantom_wait"))
	ctx := ctxT(t)
	for a := int64(410); a < 600; a += 10 {
		if err := tb.Put(ctx, phantomRow(a, "x")); err != nil {
			t.Fatal(err)
		}
	}
	t1 := begin(t, cl, client.Serializable)
	rows, err := scanRange(ctx, t1, tb, 400, 600, 3)
	if err != nil || len(rows) != 3 || rows[2]["a"].Int != 430 {
		t.Fatalf("scan: %v %v", rows, err)
	}
	// Past the last row returned: no wait.
	t3 := begin(t, cl, client.Serializable)
	if err := t3.Put(ctx, tb, phantomRow(435, "after")); err != nil {
		t.Fatal(err)
	}
	if err := t3.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// (420, "a") sorts after (420, "x") (b descends) and before 430: in the
	// gap between the scan's first page and its second.
	t2 := begin(t, cl, client.Serializable)
	t2Done := make(chan error, 1)
	go func() {
		err := t2.Put(ctx, tb, phantomRow(420, "a"))
		if err == nil {
			err = t2.Commit(ctx)
		}
		t2Done <- err
	}()
	plainDone := make(chan error, 1)
	go func() { plainDone <- tb.Put(ctx, phantomRow(405, "plain")) }()
	consensustest.WaitFor(t, 20*time.Second, "t2 waits for t1", func() bool { return waitingFor(t, cl, t2, t1) })
	// t1 still sees exactly what it saw: nothing got in.
	again, err := scanRange(ctx, t1, tb, 400, 600, 3)
	if err != nil || fmt.Sprint(again) != fmt.Sprint(rows) {
		t.Fatalf("second scan: %v %v, first %v", again, err, rows)
	}
	select {
	case err := <-t2Done:
		t.Fatalf("the insert into the locked span finished (%v) before t1 ended", err)
	case err := <-plainDone:
		t.Fatalf("the plain insert into the locked span finished (%v) before t1 ended", err)
	default:
	}
	if err := t1.Put(ctx, tb, phantomRow(2000, "count")); err != nil {
		t.Fatal(err)
	}
	if err := t1.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-t2Done; err != nil {
		t.Fatalf("t2 after t1 committed: %v", err)
	}
	if err := <-plainDone; err != nil {
		t.Fatalf("the plain insert after t1 committed: %v", err)
	}
	all, err := tb.ScanAll(ctx, client.ScanOptions{Start: client.Row{"a": docdb.Int64(400)}, End: client.Row{"a": docdb.Int64(440)}})
	if err != nil || len(all) != 6 {
		t.Fatalf("rows below 440: %v %v", all, err)
	}

	// A savepoint rollback releases the range lock taken after it.
	t4 := begin(t, cl, client.Serializable)
	if err := t4.Savepoint("sp"); err != nil {
		t.Fatal(err)
	}
	if _, err := scanRange(ctx, t4, tb, 400, 600, 0); err != nil {
		t.Fatal(err)
	}
	if err := t4.RollbackToSavepoint(ctx, "sp"); err != nil {
		t.Fatal(err)
	}
	t5 := begin(t, cl, client.Serializable)
	if err := t5.Put(ctx, tb, phantomRow(455, "after-rollback")); err != nil {
		t.Fatal(err)
	}
	for _, tx := range []*client.Txn{t5, t4} {
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// A reverse scan locks from its end down to the last row returned; a
	// rollback releases the lock.
	t8 := begin(t, cl, client.Serializable)
	rev, err := t8.Scan(ctx, tb, client.ScanOptions{Start: client.Row{"a": docdb.Int64(400)}, End: client.Row{"a": docdb.Int64(600)}, Limit: 3, PageSize: 2, Reverse: true})
	if err != nil || len(rev) != 3 || rev[2]["a"].Int != 570 {
		t.Fatalf("reverse scan: %v %v", rev, err)
	}
	t9 := begin(t, cl, client.Serializable)
	if err := t9.Put(ctx, tb, phantomRow(565, "below")); err != nil {
		t.Fatal(err)
	}
	t9Done := make(chan error, 1)
	go func() {
		err := t9.Put(ctx, tb, phantomRow(585, "inside"))
		if err == nil {
			err = t9.Commit(ctx)
		}
		t9Done <- err
	}()
	consensustest.WaitFor(t, 20*time.Second, "t9 waits for t8", func() bool { return waitingFor(t, cl, t9, t8) })
	if err := t8.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-t9Done; err != nil {
		t.Fatalf("t9 after t8 rolled back: %v", err)
	}

	// Snapshot isolation takes no range locks: the insert goes ahead.
	t6 := begin(t, cl, client.Snapshot)
	if _, err := scanRange(ctx, t6, tb, 400, 600, 0); err != nil {
		t.Fatal(err)
	}
	t7 := begin(t, cl, client.Snapshot)
	if err := t7.Put(ctx, tb, phantomRow(465, "snapshot")); err != nil {
		t.Fatal(err)
	}
	for _, tx := range []*client.Txn{t7, t6} {
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waitNoIntents(t, c)
}

// TestTxnOwnRead: a point read that the transaction's own writes decide
// (whether the row exists, and each column asked for) is answered from
// them, and the answer is the tablet's; a read they do not decide, or any
// read after a failed write, asks the tablet.
func TestTxnOwnRead(t *testing.T) {
	_, cl, tb := txnSetup(t, "ownread", 4)
	ctx := ctxT(t)
	for _, k := range []string{"a", "c", "d"} {
		if err := tb.Put(ctx, client.Row{"k": docdb.Text(k), "v": docdb.Int64(1), "s": docdb.Text("old")}); err != nil {
			t.Fatal(err)
		}
	}
	key := func(k string) client.Row { return client.Row{"k": docdb.Text(k)} }
	for _, iso := range []client.Isolation{client.Snapshot, client.Serializable, client.ReadCommitted} {
		t.Run(iso.String(), func(t *testing.T) {
			tx := begin(t, cl, iso)
			defer func() { _ = tx.Rollback(ctx) }()
			write := func(op client.Op) {
				t.Helper()
				if err := tx.Apply(ctx, tb, []client.Op{op}); err != nil {
					t.Fatal(err)
				}
			}
			write(client.Op{Kind: client.OpUpdate, Row: client.Row{"k": docdb.Text("a"), "v": docdb.Int64(2)}})
			write(client.Op{Kind: client.OpPut, Row: client.Row{"k": docdb.Text("b"), "v": docdb.Int64(7)}})
			write(client.Op{Kind: client.OpDelete, Row: key("c")})
			write(client.Op{Kind: client.OpDelete, Row: key("d")})
			write(client.Op{Kind: client.OpPut, Row: client.Row{"k": docdb.Text("d"), "v": docdb.Int64(5)}})
			write(client.Op{Kind: client.OpUpdate, Row: client.Row{"k": docdb.Text("e"), "v": docdb.Null()}})
			cases := []struct {
				key     string
				columns []string
				own     bool
			}{
				{"a", []string{"v"}, true},   // the updated column
				{"a", nil, false},            // s is the tablet's
				{"b", []string{"v"}, true},   // put
				{"b", []string{"s"}, false},  // not in the put
				{"c", nil, true},             // deleted
				{"d", nil, true},             // deleted, then put: s is gone
				{"e", []string{"v"}, false},  // a NULL update does not say whether e exists
				{"zz", []string{"v"}, false}, // never written
			}
			for _, tc := range cases {
				own, ownFound, ok := tx.OwnRead(tb, key(tc.key), tc.columns...)
				if ok != tc.own {
					t.Fatalf("%s %v: answered from own writes %v, want %v", tc.key, tc.columns, ok, tc.own)
				}
				srv, srvFound, err := tx.ServerGet(ctx, tb, key(tc.key), tc.columns...)
				if err != nil {
					t.Fatal(err)
				}
				if ok && (ownFound != srvFound || fmt.Sprint(own) != fmt.Sprint(srv)) {
					t.Fatalf("%s %v: own writes say %v %v, the tablet %v %v", tc.key, tc.columns, own, ownFound, srv, srvFound)
				}
				got, gotFound, err := tx.Get(ctx, tb, key(tc.key), tc.columns...)
				if err != nil || gotFound != srvFound || fmt.Sprint(got) != fmt.Sprint(srv) {
					t.Fatalf("%s %v: Get %v %v %v, the tablet %v %v", tc.key, tc.columns, got, gotFound, err, srv, srvFound)
				}
			}
			// A failed write (a duplicate insert) leaves the reads to the tablet.
			if err := tx.Apply(ctx, tb, []client.Op{{Kind: client.OpInsert, Row: client.Row{"k": docdb.Text("b"), "v": docdb.Int64(9)}}}); err == nil {
				t.Fatal("duplicate insert succeeded")
			}
			if _, _, ok := tx.OwnRead(tb, key("a"), "v"); ok {
				t.Fatal("answered from own writes after a failed write")
			}
		})
	}
}

// TestTxnCommitWaitedOn: a COMMIT answers waited_on when a participant
// asked for the record while the transaction was pending (the coordinator
// then tells the participants at once instead of after the linger), and
// only then.
func TestTxnCommitWaitedOn(t *testing.T) {
	_, cl, _ := txnSetup(t, "waitedon", 1)
	ctx := ctxT(t)
	var asked, quiet docdb.TxnID
	copy(asked[:], "waited-on-asked!")
	copy(quiet[:], "waited-on-quiet!")
	if res, err := cl.TxnStatus(ctx, tspb.TxnStatusRequest_GET, asked, 0, nil); err != nil || res.State != tspb.TxnState_PENDING {
		t.Fatalf("GET of a transaction without a record: %+v %v, want PENDING", res, err)
	}
	for _, tc := range []struct {
		id   docdb.TxnID
		want bool
	}{{asked, true}, {quiet, false}, {asked, false}} {
		res, err := cl.TxnStatus(ctx, tspb.TxnStatusRequest_COMMIT, tc.id, 0, nil)
		if err != nil || res.State != tspb.TxnState_COMMITTED {
			t.Fatalf("COMMIT: %+v %v", res, err)
		}
		if res.WaitedOn != tc.want {
			t.Errorf("COMMIT of %q: waited on %v, want %v", tc.id[:], res.WaitedOn, tc.want)
		}
	}
}
