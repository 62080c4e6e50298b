package logictest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestAddPrimaryKeyKeepsConcurrentWrites: ALTER TABLE ADD PRIMARY KEY
// copies the rows into a new table and drops the old one. Rows inserted
// through other nodes meanwhile are either refused (55P03 until the copy
// is done) or there afterwards: no acknowledged insert is lost, and the
// table is never missing (the new one takes the old one's name as the old
// one goes, in one catalog change).
func TestAddPrimaryKeyKeepsConcurrentWrites(t *testing.T) {
	rewriteUnderWrites(t, "CREATE TABLE nokey (k int NOT NULL, n int, v text)", "ALTER TABLE nokey ADD PRIMARY KEY (k)")
}

// TestAlterColumnTypeKeepsConcurrentWrites: ALTER COLUMN TYPE writes the
// column again into a new one; a row inserted meanwhile is refused or has
// its value in the new column (else it would read NULL there).
func TestAlterColumnTypeKeepsConcurrentWrites(t *testing.T) {
	rewriteUnderWrites(t, "CREATE TABLE nokey (k int PRIMARY KEY, n int, v text)", "ALTER TABLE nokey ALTER COLUMN n TYPE bigint")
}

// rewriteUnderWrites creates table nokey(k, n, v) with 20,000 rows, runs
// alter while two other nodes insert rows, and checks that every
// acknowledged insert is there afterwards with its n (= k) intact.
func rewriteUnderWrites(t *testing.T, create, alter string) {
	addrs, admin := ysqlCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := admin.Exec(ctx, create); err != nil {
		t.Fatal(err)
	}
	const initial = 20000
	if _, err := admin.Exec(ctx, "INSERT INTO nokey SELECT g, g, 'x' FROM generate_series(1, $1) g", initial); err != nil {
		t.Fatal(err)
	}
	var acked, refused atomic.Int64
	stop := make(chan struct{})
	done := make(chan error, 2)
	for w, addr := range addrs[1:] {
		conn := connect(t, addr, "yugabyte")
		go func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					done <- nil
					return
				default:
				}
				k := initial + 1 + w*1000000 + i
				_, err := conn.Exec(ctx, "INSERT INTO nokey VALUES ($1, $1, 'during')", k)
				var pe *pgconn.PgError
				switch {
				case err == nil:
					acked.Add(1)
				case errors.As(err, &pe) && (pe.Code == "55P03" || pe.Code == "40001"):
					refused.Add(1) // refused while the rows are rewritten
				default:
					done <- err
					return
				}
			}
		}()
	}
	// waitAcked waits for n more acknowledged inserts; a writer's
	// unexpected error fails the test.
	waitAcked := func(n int64) {
		t.Helper()
		want := acked.Load() + n
		for acked.Load() < want {
			select {
			case err := <-done:
				t.Fatalf("an insert during the rewrite: %v", err)
			case <-ctx.Done():
				t.Fatalf("%d inserts acknowledged, %d refused; waited for %d", acked.Load(), refused.Load(), want)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	waitAcked(20) // some inserts land before the ALTER starts
	_, alterErr := admin.Exec(ctx, alter)
	waitAcked(20) // and some after it ends
	close(stop)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("an insert during the rewrite: %v", err)
		}
	}
	if alterErr != nil {
		t.Fatalf("%s: %v", alter, alterErr)
	}
	var n, during, intact int64
	if err := admin.QueryRow(ctx, "SELECT count(*), count(*) FILTER (WHERE v = 'during'), count(*) FILTER (WHERE n = k) FROM nokey").Scan(&n, &during, &intact); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d inserts acknowledged, %d refused during the rewrite; %d rows after, %d with their n", acked.Load(), refused.Load(), n, intact)
	if during != acked.Load() || n != initial+acked.Load() || intact != n {
		t.Fatalf("%d rows (%d inserted meanwhile, %d with their n), want %d (%d acknowledged): acknowledged writes were lost", n, during, intact, initial+acked.Load(), acked.Load())
	}
}
