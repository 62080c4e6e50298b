package logictest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/shaledb/shaledb/internal/server/servertest"
)

// counter reads a counter of a node's registry.
func counter(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestSingleRowFastPath: an UPDATE or DELETE of one row by its key, alone
// in its batch, runs as one tablet write without a distributed
// transaction (as a single-row INSERT does), with PostgreSQL's results:
// the rows changed, 0 for a missing row, values that land, an add over the
// latest value; so does an INSERT ... ON CONFLICT of one row that needs no
// existing row (DO NOTHING, DO UPDATE SET v = EXCLUDED.v). What the fast
// path cannot do runs in a transaction with the usual errors: a NULL for a
// NOT NULL column (23502, the row shown), a CHECK on a set column (23514),
// RETURNING, an upsert reading the existing row or with a WHERE,
// statements in a block.
func TestSingleRowFastPath(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := servertest.NewClusterWith(t, 3, servertest.Options{YSQL: true})
	conn := connect(t, waitYSQL(t, c, 0), "yugabyte")
	reg := c.Servers[0].Metrics().Prometheus()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exec := func(sql string, args ...any) int64 {
		t.Helper()
		tag, err := conn.Exec(ctx, sql, args...)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return tag.RowsAffected()
	}
	exec(`CREATE TABLE fp (k int PRIMARY KEY, v varchar(5) NOT NULL, n int, c int CHECK (c > 0))`)
	exec(`INSERT INTO fp VALUES (1, 'a', 10, 1), (2, 'b', 20, 2), (3, 'c', NULL, 3)`)

	single, txns := counter(t, reg, "shale_ysql_single_row_writes_total"), counter(t, reg, "shale_ysql_transactions_total")
	for _, st := range []struct {
		sql  string
		args []any
		rows int64
	}{
		{`UPDATE fp SET v = $1 WHERE k = $2`, []any{"x", 1}, 1},
		{`UPDATE fp SET v = 'y' WHERE k = 99`, nil, 0},
		{`UPDATE fp SET n = n + $1 WHERE k = $2`, []any{5, 1}, 1},
		{`UPDATE fp SET n = NULL WHERE k = 2`, nil, 1},
		{`DELETE FROM fp WHERE k = $1`, []any{3}, 1},
		{`DELETE FROM fp WHERE k = 3`, nil, 0},
		{`INSERT INTO fp VALUES (4, 'd', 40, 4)`, nil, 1},
		{`INSERT INTO fp VALUES (5, 'e', 50, 5) ON CONFLICT (k) DO NOTHING`, nil, 1},
		{`INSERT INTO fp VALUES ($1, 'x', 0, 9) ON CONFLICT (k) DO NOTHING`, []any{5}, 0},
		{`INSERT INTO fp VALUES (5, $1, 51, 5) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v, n = EXCLUDED.n + 1`, []any{"f"}, 1},
		{`INSERT INTO fp VALUES (6, 'g', 60, 6) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v`, nil, 1},
		{`INSERT INTO fp VALUES (6, 'h', 0, 6) ON CONFLICT DO NOTHING`, nil, 0},
	} {
		if n := exec(st.sql, st.args...); n != st.rows {
			t.Fatalf("%s: %d rows, want %d", st.sql, n, st.rows)
		}
	}
	if d := counter(t, reg, "shale_ysql_single_row_writes_total") - single; d != 12 {
		t.Fatalf("%v statements on the fast path, want 12", d)
	}
	if d := counter(t, reg, "shale_ysql_transactions_total") - txns; d != 0 {
		t.Fatalf("%v distributed transactions for single-row statements, want 0", d)
	}
	want := "1 x 15 1|2 b NULL 2|4 d 40 4|5 f 52 5|6 g 60 6"
	if got := rowsText(t, ctx, conn, `SELECT k, v, n, c FROM fp ORDER BY k`); got != want {
		t.Fatalf("rows: %s, want %s", got, want)
	}

	wantError := func(code, msg, detail, sql string) {
		t.Helper()
		_, err := conn.Exec(ctx, sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != code || pe.Message != msg || pe.Detail != detail {
			t.Fatalf("%s: %v (detail %q), want %s %q %q", sql, err, pe.Detail, code, msg, detail)
		}
	}
	single, txns = counter(t, reg, "shale_ysql_single_row_writes_total"), counter(t, reg, "shale_ysql_transactions_total")
	wantError("23502", `null value in column "v" of relation "fp" violates not-null constraint`,
		"Failing row contains (1, null, 15, 1).", `UPDATE fp SET v = NULL WHERE k = 1`)
	wantError("23514", `new row for relation "fp" violates check constraint "fp_c_check"`,
		"Failing row contains (1, x, 15, 0).", `UPDATE fp SET c = 0 WHERE k = 1`)
	wantError("22001", "value too long for type character varying(5)", "", `UPDATE fp SET v = 'toolong' WHERE k = 1`)
	var v string
	if err := conn.QueryRow(ctx, `UPDATE fp SET v = 'r' WHERE k = 2 RETURNING v`).Scan(&v); err != nil || v != "r" {
		t.Fatalf("UPDATE ... RETURNING: %q, %v", v, err)
	}
	// Upserts that need the existing row, or say what they wrote.
	if n := exec(`INSERT INTO fp VALUES (5, 'i', 1, 5) ON CONFLICT (k) DO UPDATE SET n = fp.n + EXCLUDED.n`); n != 1 {
		t.Fatalf("upsert over the existing row: %d rows", n)
	}
	if n := exec(`INSERT INTO fp VALUES (5, 'j', 1, 5) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v WHERE fp.n > 100`); n != 0 {
		t.Fatalf("upsert with a WHERE that holds for no row: %d rows", n)
	}
	if err := conn.QueryRow(ctx, `INSERT INTO fp VALUES (6, 'k', 0, 6) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v RETURNING v`).Scan(&v); err != nil || v != "k" {
		t.Fatalf("upsert ... RETURNING: %q, %v", v, err)
	}
	exec(`BEGIN`)
	exec(`UPDATE fp SET n = n + 1 WHERE k = 1`)
	exec(`DELETE FROM fp WHERE k = 4`)
	exec(`COMMIT`)
	if d := counter(t, reg, "shale_ysql_single_row_writes_total") - single; d != 0 {
		t.Fatalf("%v of the statements that need a row or a block took the fast path", d)
	}
	if d := counter(t, reg, "shale_ysql_transactions_total") - txns; d < 7 {
		t.Fatalf("%v distributed transactions, want one at least for each of the NOT NULL update, the RETURNINGs, the upserts over the row, the block", d)
	}
	want = "1 x 16 1|2 r NULL 2|5 f 53 5|6 k 60 6"
	if got := rowsText(t, ctx, conn, `SELECT k, v, n, c FROM fp ORDER BY k`); got != want {
		t.Fatalf("rows: %s, want %s", got, want)
	}
}

// rowsText runs a query and renders its rows as "a b|c d" (NULL as NULL).
func rowsText(t *testing.T, ctx context.Context, conn *pgx.Conn, sql string) string {
	t.Helper()
	rows, err := conn.Query(ctx, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		var cols []string
		for _, v := range vals {
			if v == nil {
				cols = append(cols, "NULL")
			} else {
				cols = append(cols, fmt.Sprint(v))
			}
		}
		out = append(out, strings.Join(cols, " "))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return strings.Join(out, "|")
}

// TestSingleRowFastPathCounts: clients on all three nodes insert one row
// (ON CONFLICT DO NOTHING) and delete it, at once, on the fast path. Each
// statement's row count is exact, so the rows the inserts report, less
// those the deletes report, is whether the row exists at the end.
func TestSingleRowFastPathCounts(t *testing.T) {
	addrs, admin := ysqlCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := admin.Exec(ctx, `CREATE TABLE flip (k int PRIMARY KEY, v int)`); err != nil {
		t.Fatal(err)
	}
	const clients, each = 6, 40
	var inserted, deleted atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn := connect(t, addrs[i%3], "yugabyte")
			defer conn.Close(ctx)
			for j := range each {
				sql := `INSERT INTO flip VALUES (1, $1) ON CONFLICT (k) DO NOTHING`
				args := []any{j}
				if (i+j)%2 == 1 {
					sql, args = `DELETE FROM flip WHERE k = 1`, nil
				}
				tag, err := conn.Exec(ctx, sql, args...)
				if err != nil {
					errs <- fmt.Errorf("%s: %w", sql, err)
					return
				}
				if tag.Insert() {
					inserted.Add(tag.RowsAffected())
				} else {
					deleted.Add(tag.RowsAffected())
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var n int64
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM flip`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if inserted.Load()-deleted.Load() != n {
		t.Fatalf("%d inserted, %d deleted, %d rows at the end", inserted.Load(), deleted.Load(), n)
	}
	if inserted.Load() == 0 || deleted.Load() == 0 {
		t.Fatalf("%d inserted, %d deleted: the clients did not interleave", inserted.Load(), deleted.Load())
	}
	t.Logf("%d inserted, %d deleted, %d rows at the end", inserted.Load(), deleted.Load(), n)
}
