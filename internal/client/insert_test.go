package client_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
)

func kv(k string, v int64) client.Row {
	return client.Row{"k": docdb.Text(k), "v": docdb.Int64(v)}
}

// wantDup checks that err is a duplicate key naming op index.
func wantDup(t *testing.T, what string, err error, index int) {
	t.Helper()
	i, ok := client.DuplicateIndex(err)
	if !ok || i != index || client.SQLState(err) != "23505" || client.IsRetryable(err) {
		t.Fatalf("%s: want a duplicate key of op %d, got %v (index %d, %v)", what, index, err, i, ok)
	}
}

// TestInsert: OpInsert through Table.Apply and Txn.Apply on a 4-tablet hash
// table: duplicates against committed rows, own writes and the batch itself,
// the colliding op named in the caller's ops across tablets, and the
// transaction usable after a failed batch.
func TestInsert(t *testing.T) {
	c, cl, tb := txnSetup(t, "ins", 4)
	ctx := ctxT(t)
	if err := tb.Insert(ctx, kv("a", 1)); err != nil {
		t.Fatal(err)
	}
	wantDup(t, "plain insert of a committed row", tb.Insert(ctx, kv("a", 2)), 0)
	if r, _, err := tb.Get(ctx, client.Row{"k": docdb.Text("a")}); err != nil || val(r) != 1 {
		t.Fatalf("row a: %v %v", r, err)
	}
	// A batch over every tablet, some ops writing two DocDB ops (a NULL
	// column is a column delete), with a committed row at index 27.
	batch := func(prefix string, dupAt int, dupKey string) []client.Op {
		var ops []client.Op
		for i := 0; i < 40; i++ {
			row := kv(fmt.Sprintf("%s-%02d", prefix, i), int64(i))
			if i%3 == 0 {
				row["s"] = docdb.Null()
			}
			if i == dupAt {
				row["k"] = docdb.Text(dupKey)
			}
			ops = append(ops, client.Op{Kind: client.OpInsert, Row: row})
		}
		return ops
	}
	ops := batch("p", 27, "a")
	wantDup(t, "plain batch", tb.Apply(ctx, ops), 27)
	// The colliding tablet's batch wrote nothing (plain writes are atomic
	// per tablet only).
	dupTablet, err := tb.TabletOf(ctx, client.Row{"k": docdb.Text("a")})
	if err != nil {
		t.Fatal(err)
	}
	for i, op := range ops {
		id, err := tb.TabletOf(ctx, op.Row)
		if err != nil {
			t.Fatal(err)
		}
		if _, found, err := tb.Get(ctx, client.Row{"k": op.Row["k"]}); err != nil || (id == dupTablet && i != 27 && found) {
			t.Fatalf("op %d on the colliding tablet: found %v %v", i, found, err)
		}
	}
	// Twice in one batch: the second is the duplicate.
	ops = batch("q", 31, "q-05")
	wantDup(t, "a key twice in one plain batch", tb.Apply(ctx, ops), 31)

	// Transactions.
	for _, iso := range []client.Isolation{client.Snapshot, client.ReadCommitted, client.Serializable} {
		t.Run(iso.String(), func(t *testing.T) {
			p := "t" + fmt.Sprint(int(iso))
			tx := begin(t, cl, iso)
			if err := tx.Insert(ctx, tb, kv(p+"-own", 1)); err != nil {
				t.Fatal(err)
			}
			// The own-write overlay sees an insert as a put.
			if r, found, err := tx.Get(ctx, tb, client.Row{"k": docdb.Text(p + "-own")}); err != nil || !found || val(r) != 1 {
				t.Fatalf("own insert read back: %v %v %v", r, found, err)
			}
			wantDup(t, "own insert, then insert", tx.Insert(ctx, tb, kv(p+"-own", 2)), 0)
			// A failed batch over every tablet leaves nothing behind: the
			// transaction goes on as if it had not happened.
			ops := batch(p, 33, "a")
			wantDup(t, "transactional batch", tx.Apply(ctx, tb, ops), 33)
			ops = batch(p+"x", 12, p+"-own")
			wantDup(t, "transactional batch over an own row", tx.Apply(ctx, tb, ops), 12)
			ops = batch(p+"y", 39, p+"y-00")
			wantDup(t, "a key twice in one transactional batch", tx.Apply(ctx, tb, ops), 39)
			for _, k := range []string{p + "-00", p + "-32", p + "-34", p + "x-00", p + "y-00", p + "y-38"} {
				if r, found, err := tx.Get(ctx, tb, client.Row{"k": docdb.Text(k)}); err != nil || found {
					t.Fatalf("row %s of a failed batch: %v %v %v", k, r, found, err)
				}
			}
			// Own delete, then insert; a savepoint rollback undoes an insert.
			if err := tx.Delete(ctx, tb, client.Row{"k": docdb.Text(p + "-own")}); err != nil {
				t.Fatal(err)
			}
			if err := tx.Insert(ctx, tb, kv(p+"-own", 3)); err != nil {
				t.Fatalf("insert after the own delete: %v", err)
			}
			if err := tx.Savepoint("s"); err != nil {
				t.Fatal(err)
			}
			if err := tx.Insert(ctx, tb, kv(p+"-sp", 1)); err != nil {
				t.Fatal(err)
			}
			if err := tx.RollbackToSavepoint(ctx, "s"); err != nil {
				t.Fatal(err)
			}
			if err := tx.Apply(ctx, tb, batch(p, -1, "")); err != nil {
				t.Fatalf("the batch without its duplicate: %v", err)
			}
			if err := tx.Insert(ctx, tb, kv(p+"-sp", 2)); err != nil {
				t.Fatalf("insert after the savepoint rollback: %v", err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			for k, want := range map[string]int64{p + "-own": 3, p + "-sp": 2, p + "-33": 33, p + "-00": 0} {
				if r, found, err := tb.Get(ctx, client.Row{"k": docdb.Text(k)}); err != nil || !found || val(r) != want {
					t.Fatalf("row %s after the commit: %v %v %v", k, r, found, err)
				}
			}
			for _, k := range []string{p + "x-00", p + "y-00"} {
				if _, found, err := tb.Get(ctx, client.Row{"k": docdb.Text(k)}); err != nil || found {
					t.Fatalf("row %s of a failed batch after the commit: %v %v", k, found, err)
				}
			}
		})
	}
	waitNoIntents(t, c)
}

// TestConcurrentInserts: transactions race to insert the same keys; for
// each key exactly one commits, the others fail with a conflict
// (retryable) or a duplicate key.
func TestConcurrentInserts(t *testing.T) {
	_, cl, tb := txnSetup(t, "race", 2)
	ctx := ctxT(t)
	for _, iso := range []client.Isolation{client.Snapshot, client.ReadCommitted} {
		for round := 0; round < 5; round++ {
			k := fmt.Sprintf("%s-%d", iso, round)
			const racers = 3
			var wg sync.WaitGroup
			errs := make([]error, racers)
			start := make(chan struct{})
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					tx, err := cl.Begin(ctx, client.TxnOptions{Isolation: iso})
					if err != nil {
						errs[i] = err
						return
					}
					<-start
					if err := tx.Insert(ctx, tb, kv(k, int64(i))); err != nil {
						_ = tx.Rollback(ctx)
						errs[i] = err
						return
					}
					errs[i] = tx.Commit(ctx)
				}()
			}
			close(start)
			wg.Wait()
			winner := -1
			for i, err := range errs {
				code, _ := client.CodeOf(err)
				switch {
				case err == nil && winner >= 0:
					t.Fatalf("%s: two inserts committed (%d and %d)", k, winner, i)
				case err == nil:
					winner = i
				case code != client.CodeTxnConflict && code != client.CodeDuplicateKey && code != client.CodeTxnAborted:
					t.Fatalf("%s: racer %d: %v", k, i, err)
				}
			}
			if winner < 0 {
				t.Fatalf("%s: no insert committed: %v", k, errs)
			}
			if r, found, err := tb.Get(ctx, client.Row{"k": docdb.Text(k)}); err != nil || !found || val(r) != int64(winner) {
				t.Fatalf("%s: %v %v %v, want the winner %d", k, r, found, err, winner)
			}
		}
	}
}
