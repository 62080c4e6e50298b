package logictest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shaledb/shaledb/internal/server/servertest"
)

// TestConcurrentPointUpdates: clients on all three nodes increment one row
// at once. Autocommit UPDATEs (snapshot isolation, whose point UPDATE reads
// the row without a lock and lets its write detect a newer version) lose
// no increment; under REPEATABLE READ an UPDATE of a row changed since the
// snapshot fails with 40001, and the increments that committed are exactly
// the row's final count; under READ COMMITTED (a point UPDATE reads without
// a lock and runs again locked when its write finds a newer version) none
// fails.
func TestConcurrentPointUpdates(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := servertest.NewClusterWith(t, 3, servertest.Options{YSQL: true})
	addrs := []string{waitYSQL(t, c, 0), waitYSQL(t, c, 1), waitYSQL(t, c, 2)}
	admin := connect(t, addrs[0], "yugabyte")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := admin.Exec(ctx, `CREATE TABLE counters (k int PRIMARY KEY, n int NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	const clients, each = 6, 15
	for _, mode := range []string{"autocommit", "repeatable read", "read committed"} {
		if _, err := admin.Exec(ctx, `INSERT INTO counters VALUES (1, 0) ON CONFLICT (k) DO UPDATE SET n = 0`); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		committed, conflicts := 0, 0
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				conn := connect(t, addrs[i%3], "yugabyte")
				defer conn.Close(ctx)
				for range each {
					var err error
					if mode == "autocommit" {
						_, err = conn.Exec(ctx, `UPDATE counters SET n = n + 1 WHERE k = 1`)
					} else {
						_, err = conn.Exec(ctx, `BEGIN ISOLATION LEVEL `+mode+`; UPDATE counters SET n = n + 1 WHERE k = 1; COMMIT`)
					}
					var pe *pgconn.PgError
					switch {
					case err == nil:
						mu.Lock()
						committed++
						mu.Unlock()
					case mode == "repeatable read" && errors.As(err, &pe) && pe.Code == "40001":
						mu.Lock()
						conflicts++
						mu.Unlock()
						if _, err := conn.Exec(ctx, `ROLLBACK`); err != nil {
							errs <- err
							return
						}
					default:
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("%s: %v", mode, err)
		}
		var n int
		if err := admin.QueryRow(ctx, `SELECT n FROM counters WHERE k = 1`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != committed || (mode != "repeatable read" && committed != clients*each) {
			t.Fatalf("%s: counter %d after %d committed increments of %d (%d conflicts)", mode, n, committed, clients*each, conflicts)
		}
		t.Logf("%s: %d increments committed, %d failed with 40001", mode, committed, conflicts)
	}
}
