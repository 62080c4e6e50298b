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
	addrs, admin := ysqlCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := admin.Exec(ctx, "CREATE TABLE nokey (k int NOT NULL, v text)"); err != nil {
		t.Fatal(err)
	}
	const initial = 20000
	if _, err := admin.Exec(ctx, "INSERT INTO nokey SELECT g, 'x' FROM generate_series(1, $1) g", initial); err != nil {
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
				_, err := conn.Exec(ctx, "INSERT INTO nokey VALUES ($1, 'during')", initial+1+w*1000000+i)
				var pe *pgconn.PgError
				switch {
				case err == nil:
					acked.Add(1)
				case errors.As(err, &pe) && (pe.Code == "55P03" || pe.Code == "40001"):
					// Refused while the rows are copied.
					refused.Add(1)
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
	_, alterErr := admin.Exec(ctx, "ALTER TABLE nokey ADD PRIMARY KEY (k)")
	waitAcked(20) // and some after it ends, into the new table
	close(stop)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("an insert during the rewrite: %v", err)
		}
	}
	if alterErr != nil {
		t.Fatalf("ALTER TABLE ADD PRIMARY KEY: %v", alterErr)
	}
	var n, during int64
	if err := admin.QueryRow(ctx, "SELECT count(*), count(*) FILTER (WHERE v = 'during') FROM nokey").Scan(&n, &during); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d inserts acknowledged, %d refused during the rewrite; %d rows after", acked.Load(), refused.Load(), n)
	if during != acked.Load() || n != initial+acked.Load() {
		t.Fatalf("%d rows (%d inserted meanwhile), want %d (%d acknowledged): acknowledged inserts were lost", n, during, initial+acked.Load(), acked.Load())
	}
}
