package logictest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
	addrs, admin := ysqlCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := admin.Exec(ctx, `CREATE TABLE counters (k int PRIMARY KEY, n int NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	const clients, each = 6, 15
	// Each mode runs with the add computed at the tablet (the pushdown,
	// plan.TabletAdds) and with the row read here first.
	for _, run := range []struct{ mode, pushdown string }{
		{"autocommit", "on"}, {"repeatable read", "on"}, {"read committed", "on"},
		{"autocommit", "off"}, {"repeatable read", "off"}, {"read committed", "off"},
	} {
		mode := run.mode
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
				if _, err := conn.Exec(ctx, `SET yb_enable_expression_pushdown = `+run.pushdown); err != nil {
					errs <- err
					return
				}
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
			t.Fatalf("%s, pushdown %s: %v", mode, run.pushdown, err)
		}
		var n int
		if err := admin.QueryRow(ctx, `SELECT n FROM counters WHERE k = 1`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != committed || (mode != "repeatable read" && committed != clients*each) {
			t.Fatalf("%s, pushdown %s: counter %d after %d committed increments of %d (%d conflicts)", mode, run.pushdown, n, committed, clients*each, conflicts)
		}
		t.Logf("%s, pushdown %s: %d increments committed, %d failed with 40001", mode, run.pushdown, committed, conflicts)
	}
	checkTabletAdds(t, ctx, admin)
}

// checkTabletAdds: an UPDATE that only adds to integer columns of one row
// by its key runs as one write the tablet computes (EXPLAIN says so); it
// reports the rows it changed, keeps NULL as NULL, fails with 22003 past
// the type's range, reads back within its transaction, and rolls back;
// the same statements with the pushdown off give the same results.
func checkTabletAdds(t *testing.T, ctx context.Context, conn *pgx.Conn) {
	t.Helper()
	exec := func(sql string, args ...any) int64 {
		t.Helper()
		tag, err := conn.Exec(ctx, sql, args...)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return tag.RowsAffected()
	}
	row := func(k int) string {
		t.Helper()
		var a, s, b *int64
		if err := conn.QueryRow(ctx, `SELECT a, s, b FROM adds WHERE k = $1`, k).Scan(&a, &s, &b); err != nil {
			t.Fatalf("row %d: %v", k, err)
		}
		str := func(p *int64) string {
			if p == nil {
				return "NULL"
			}
			return fmt.Sprint(*p)
		}
		return str(a) + " " + str(s) + " " + str(b)
	}
	wantError := func(code, msg, sql string, args ...any) {
		t.Helper()
		_, err := conn.Exec(ctx, sql, args...)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != code || pe.Message != msg {
			t.Fatalf("%s: %v, want %s %q", sql, err, code, msg)
		}
	}
	exec(`CREATE TABLE adds (k int PRIMARY KEY, a int, s smallint, b bigint, c int CHECK (c > 0))`)
	for _, pushdown := range []string{"on", "off"} {
		exec(`SET yb_enable_expression_pushdown = ` + pushdown)
		exec(`DELETE FROM adds`)
		exec(`INSERT INTO adds VALUES (1, 10, 32766, 9223372036854775806, 1), (2, NULL, NULL, NULL, 1)`)
		var plan strings.Builder
		rows, err := conn.Query(ctx, `EXPLAIN UPDATE adds SET a = a + 1 WHERE k = 1`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan.WriteString(line + "\n")
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
		if pushed := strings.Contains(plan.String(), "Tablet Update: a = a + 1 "); pushed != (pushdown == "on") {
			t.Fatalf("pushdown %s: EXPLAIN\n%s", pushdown, plan.String())
		}
		if n := exec(`UPDATE adds SET a = a + $1 WHERE k = $2`, 5, 1); n != 1 {
			t.Fatalf("pushdown %s: UPDATE of row 1 reports %d rows", pushdown, n)
		}
		if n := exec(`UPDATE adds SET a = a + 5 WHERE k = 3`); n != 0 {
			t.Fatalf("pushdown %s: UPDATE of a missing row reports %d rows", pushdown, n)
		}
		if n := exec(`UPDATE adds SET a = a - 1, s = s + 1, b = b + 1 WHERE k = 2`); n != 1 {
			t.Fatalf("pushdown %s: UPDATE of the NULL row reports %d rows", pushdown, n)
		}
		exec(`UPDATE adds SET a = a - 2, b = b - 3 WHERE k = 1`)
		if got := row(1); got != "13 32766 9223372036854775803" {
			t.Fatalf("pushdown %s: row 1 = %s", pushdown, got)
		}
		if got := row(2); got != "NULL NULL NULL" {
			t.Fatalf("pushdown %s: row 2 = %s", pushdown, got)
		}
		wantError("22003", "smallint out of range", `UPDATE adds SET s = s + 2 WHERE k = 1`)
		wantError("22003", "integer out of range", `UPDATE adds SET a = a + 2147483647 WHERE k = 1`)
		wantError("22003", "bigint out of range", `UPDATE adds SET b = b + 5 WHERE k = 1`)
		// With several columns the message names the one that overflowed.
		wantError("22003", "smallint out of range", `UPDATE adds SET s = s + 2, b = b - 1 WHERE k = 1`)
		wantError("23514", `new row for relation "adds" violates check constraint "adds_c_check"`, `UPDATE adds SET c = c - 1 WHERE k = 1`)
		// Within a transaction: read back, add again, savepoint, rollback.
		exec(`BEGIN`)
		exec(`UPDATE adds SET a = a + 100 WHERE k = 1`)
		if got := row(1); got != "113 32766 9223372036854775803" {
			t.Fatalf("pushdown %s: own add read back: %s", pushdown, got)
		}
		exec(`SAVEPOINT sp`)
		exec(`UPDATE adds SET a = a + 100, s = s - 10 WHERE k = 1`)
		if got := row(1); got != "213 32756 9223372036854775803" {
			t.Fatalf("pushdown %s: second own add: %s", pushdown, got)
		}
		exec(`ROLLBACK TO SAVEPOINT sp`)
		exec(`UPDATE adds SET a = a + 1 WHERE k = 1`)
		if got := row(1); got != "114 32766 9223372036854775803" {
			t.Fatalf("pushdown %s: add after the savepoint rollback: %s", pushdown, got)
		}
		exec(`INSERT INTO adds VALUES (5, 1, 1, 1, 1)`)
		exec(`UPDATE adds SET a = a + 1 WHERE k = 5`)
		exec(`DELETE FROM adds WHERE k = 5`)
		if n := exec(`UPDATE adds SET a = a + 1 WHERE k = 5`); n != 0 {
			t.Fatalf("pushdown %s: add after an own delete reports %d rows", pushdown, n)
		}
		exec(`COMMIT`)
		if got := row(1); got != "114 32766 9223372036854775803" {
			t.Fatalf("pushdown %s: after commit: %s", pushdown, got)
		}
		exec(`BEGIN`)
		exec(`UPDATE adds SET a = a + 1000 WHERE k = 1`)
		exec(`ROLLBACK`)
		exec(`BEGIN ISOLATION LEVEL SERIALIZABLE`)
		exec(`UPDATE adds SET a = a + 1 WHERE k = 1`)
		exec(`COMMIT`)
		if got := row(1); got != "115 32766 9223372036854775803" {
			t.Fatalf("pushdown %s: after rollback and a serializable add: %s", pushdown, got)
		}
	}
	exec(`SET yb_enable_expression_pushdown = on`)
}

// TestConcurrentRangeUpdates: concurrent transactions add to hot rows
// through UPDATEs that read them by a scan (a key range, not a point get;
// one row, or all twelve over several tablets) or through a join (UPDATE
// ... FROM), at READ COMMITTED and REPEATABLE READ, from connections on all
// three nodes. Every committed increment must be in the final sum, at READ
// COMMITTED every transaction commits, and no read restart reaches the
// client. A READ COMMITTED update used to compute the new value from the
// row as read before its lock was granted (an increment committed
// meanwhile was overwritten); statements locking the same rows on several
// tablets at once deadlocked; and a scan that met a value in its clock
// uncertainty window failed the transaction with 40001.
func TestConcurrentRangeUpdates(t *testing.T) {
	addrs, admin := ysqlCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, q := range []string{
		`CREATE TABLE hot (id int PRIMARY KEY, bal int)`,
		`INSERT INTO hot SELECT g, 0 FROM generate_series(1, 12) g`,
		`CREATE TABLE src (pid int PRIMARY KEY, hot int, amount int)`,
		`INSERT INTO src SELECT g, g % 3 + 1, 1 FROM generate_series(1, 30) g`,
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// rows: the rows each statement adds 1 to. "all" locks all twelve
	// rows (on several tablets) in every transaction: locks taken on all
	// tablets at once deadlocked; in key order the transactions queue.
	statements := map[string]struct {
		sql  string
		rows int
	}{
		"range": {`UPDATE hot SET bal = bal + 1 WHERE id >= $1 AND id <= $1`, 1},
		"from":  {`UPDATE hot SET bal = bal + src.amount FROM src WHERE src.hot = hot.id AND src.pid = $1 * 3`, 1},
		"all":   {`UPDATE hot SET bal = bal + 1 WHERE id >= least($1, 1)`, 12},
	}
	for _, iso := range []string{"READ COMMITTED", "REPEATABLE READ"} {
		for name, stmt := range statements {
			t.Run(fmt.Sprintf("%s/%s", iso, name), func(t *testing.T) {
				if _, err := admin.Exec(ctx, `UPDATE hot SET bal = 0`); err != nil {
					t.Fatal(err)
				}
				const workers, each = 6, 15
				var mu sync.Mutex
				committed := 0
				var wg sync.WaitGroup
				errs := make(chan error, workers)
				for w := range workers {
					conn := connect(t, addrs[w%len(addrs)], "yugabyte")
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range each {
							ok, err := addOnce(ctx, conn, iso, stmt.sql, (w+i)%3+1)
							if err != nil {
								errs <- err
								return
							}
							if ok {
								mu.Lock()
								committed++
								mu.Unlock()
							}
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
				var sum int
				if err := admin.QueryRow(ctx, `SELECT sum(bal) FROM hot`).Scan(&sum); err != nil {
					t.Fatal(err)
				}
				if committed == 0 || sum != stmt.rows*committed {
					t.Fatalf("%d transactions of %d increments committed, sum of the rows %d", committed, stmt.rows, sum)
				}
				// READ COMMITTED waits for the rows and works on their
				// latest versions: nothing fails.
				if iso == "READ COMMITTED" && committed != workers*each {
					t.Fatalf("READ COMMITTED: %d of %d transactions committed", committed, workers*each)
				}
				t.Logf("%d of %d transactions committed", committed, workers*each)
			})
		}
	}
}

// addOnce runs one transaction of stmt(arg) at iso. It reports whether it
// committed; a serialization failure or deadlock (40001, 40P01) is a
// transaction that did not, any other error (a read restart among them:
// each transaction's only statement may always run again) a failure.
func addOnce(ctx context.Context, conn *pgx.Conn, iso, stmt string, arg int) (bool, error) {
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.TxIsoLevel(iso)})
	if err != nil {
		return false, err
	}
	if _, err := tx.Exec(ctx, stmt, arg); err != nil {
		_ = tx.Rollback(ctx)
		return false, retryable(err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, retryable(err)
	}
	return true, nil
}

func retryable(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && strings.Contains(pe.Detail, "READ_RESTART") {
		// A read restart is the server's to handle: the statement runs
		// again (READ COMMITTED, or the snapshot-fixing first statement).
		return fmt.Errorf("a read restart reached the client: %v (%s)", err, pe.Detail)
	}
	if errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01") {
		return nil
	}
	return err
}

// TestLockingScansInBatches: a locking scan (SELECT ... FOR UPDATE over a
// range, the rows of an UPDATE or DELETE) locks its rows a batch at a time
// as the scan gives them, so a job queue's LIMIT 1 FOR UPDATE SKIP LOCKED
// holds one job, not every job it could (PostgreSQL's too), and a
// statement over more rows than one lock request takes (lockBatch) reads,
// locks and writes them batch by batch without ever seeing its own writes.
func TestLockingScansInBatches(t *testing.T) {
	addrs, admin := ysqlCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	exec := func(c *pgx.Conn, q string) {
		t.Helper()
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(admin, `CREATE TABLE jobs (id int, state int NOT NULL, PRIMARY KEY (id ASC))`)
	exec(admin, `INSERT INTO jobs SELECT g, 0 FROM generate_series(1, 3000) g`)

	// Two workers each take the first job nobody holds.
	take := `SELECT id FROM jobs WHERE state = 0 ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED`
	var workers []pgx.Tx
	var got []int
	for i := range 2 {
		tx, err := connect(t, addrs[1+i], "yugabyte").Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		var id int
		if err := tx.QueryRow(ctx, take).Scan(&id); err != nil {
			t.Fatalf("worker %d: %s: %v", i, take, err)
		}
		workers, got = append(workers, tx), append(got, id)
	}
	if got[0] != 1 || got[1] != 2 {
		t.Fatalf("the workers took jobs %v; want [1 2]", got)
	}
	for i, tx := range workers {
		if _, err := tx.Exec(ctx, fmt.Sprintf(`UPDATE jobs SET state = 1 WHERE id = %d`, got[i])); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}

	check := func(what, q string, want ...int) {
		t.Helper()
		got := make([]int, len(want))
		dest := make([]any, len(want))
		for i := range got {
			dest[i] = &got[i]
		}
		if err := admin.QueryRow(ctx, q).Scan(dest...); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: %s = %v (%v); want %v", what, q, got, err, want)
		}
	}
	const sums = `SELECT count(*), sum(state), min(id), max(id) FROM jobs`
	exec(admin, `UPDATE jobs SET state = state + 10`)
	check("autocommit UPDATE", sums, 3000, 30002, 1, 3000)
	exec(admin, `BEGIN ISOLATION LEVEL READ COMMITTED; UPDATE jobs SET state = state + 1 WHERE id > 500; COMMIT`)
	check("READ COMMITTED UPDATE", sums, 3000, 32502, 1, 3000)
	// Moved rows land ahead of the scan, which must not meet them again.
	exec(admin, `UPDATE jobs SET id = id + 10000 WHERE id <= 2500`)
	check("UPDATE of the key", `SELECT count(*), min(id), max(id) FROM jobs WHERE id > 10000`, 2500, 10001, 12500)
	check("UPDATE of the key", sums, 3000, 32502, 2501, 12500)
	// A block that wrote the table first reads it whole (with its own
	// writes); the locks still go a batch at a time.
	exec(admin, `BEGIN; INSERT INTO jobs VALUES (1, 5); UPDATE jobs SET state = state - 1; DELETE FROM jobs WHERE id > 11000; COMMIT`)
	check("block", sums, 1501, 14506, 1, 11000)
	exec(admin, `DELETE FROM jobs WHERE state >= 9`)
	check("DELETE", sums, 1, 4, 1, 1)
}
