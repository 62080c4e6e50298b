package logictest

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
// latest value. What the fast path cannot do runs in a transaction with
// the usual errors: a NULL for a NOT NULL column (23502, the row shown), a
// CHECK on a set column (23514), RETURNING, statements in a block.
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
	} {
		if n := exec(st.sql, st.args...); n != st.rows {
			t.Fatalf("%s: %d rows, want %d", st.sql, n, st.rows)
		}
	}
	if d := counter(t, reg, "shale_ysql_single_row_writes_total") - single; d != 7 {
		t.Fatalf("%v statements on the fast path, want 7", d)
	}
	if d := counter(t, reg, "shale_ysql_transactions_total") - txns; d != 0 {
		t.Fatalf("%v distributed transactions for single-row statements, want 0", d)
	}
	want := "1 x 15 1|2 b NULL 2|4 d 40 4"
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
	exec(`BEGIN`)
	exec(`UPDATE fp SET n = n + 1 WHERE k = 1`)
	exec(`DELETE FROM fp WHERE k = 4`)
	exec(`COMMIT`)
	if d := counter(t, reg, "shale_ysql_single_row_writes_total") - single; d != 0 {
		t.Fatalf("%v of the statements that need a row or a block took the fast path", d)
	}
	if d := counter(t, reg, "shale_ysql_transactions_total") - txns; d < 4 {
		t.Fatalf("%v distributed transactions, want one at least for each of the NOT NULL update, the RETURNING, the block", d)
	}
	want = "1 x 16 1|2 r NULL 2"
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
