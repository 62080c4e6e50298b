package logictest

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shaledb/shaledb/internal/server/servertest"
)

// TestCopyInsert loads 20,000 rows with pgx's CopyFrom (binary COPY, one
// implicit transaction per 5,000 rows) and logs the rate; then checks that
// duplicate keys are found wherever they are: against committed rows,
// inside one COPY, inside one multi-row INSERT and inside a transaction
// block, and that ON CONFLICT still sees them. No timing is asserted.
func TestCopyInsert(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := servertest.NewClusterWith(t, 3, servertest.Options{YSQL: true})
	a0, a1 := waitYSQL(t, c, 0), waitYSQL(t, c, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn0 := connect(t, a0, "yugabyte")
	conn1 := connect(t, a1, "yugabyte")
	if _, err := conn0.Exec(ctx, `CREATE TABLE load (id bigint PRIMARY KEY, name text, n int)`); err != nil {
		t.Fatal(err)
	}
	const rows = 20_000
	src := pgx.CopyFromSlice(rows, func(i int) ([]any, error) {
		return []any{int64(i), "row " + strconv.Itoa(i), int32(i % 1000)}, nil
	})
	start := time.Now()
	copied, err := conn1.CopyFrom(ctx, pgx.Identifier{"load"}, []string{"id", "name", "n"}, src)
	elapsed := time.Since(start)
	if err != nil || copied != rows {
		t.Fatalf("CopyFrom: %d %v", copied, err)
	}
	t.Logf("COPY of %d rows (3 columns) took %v: %.0f rows/s", rows, elapsed.Round(time.Millisecond), rows/elapsed.Seconds())
	var n, sum int64
	if err := conn0.QueryRow(ctx, `SELECT count(*), sum(n) FROM load`).Scan(&n, &sum); err != nil || n != rows || sum != 20*499500 {
		t.Fatalf("after COPY: count %d sum %d %v", n, sum, err)
	}
	var name string
	if err := conn0.QueryRow(ctx, `SELECT name FROM load WHERE id = 12345`).Scan(&name); err != nil || name != "row 12345" {
		t.Fatalf("row 12345: %q %v", name, err)
	}

	unique := func(what string, err error, detail string) {
		t.Helper()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "23505" || pe.ConstraintName != "load_pkey" {
			t.Fatalf("%s: want 23505 on load_pkey, got %v", what, err)
		}
		if pe.Detail != detail {
			t.Fatalf("%s: detail %q, want %q", what, pe.Detail, detail)
		}
	}
	// absent checks rows a failed statement would have written (point
	// reads: a count(*) scans everything).
	absent := func(ids ...int64) {
		t.Helper()
		for _, id := range ids {
			err := conn0.QueryRow(ctx, `SELECT name FROM load WHERE id = $1`, id).Scan(&name)
			if !errors.Is(err, pgx.ErrNoRows) {
				t.Fatalf("row %d of a failed statement: %q %v", id, name, err)
			}
		}
	}
	// A COPY whose 700th row exists: the error names it, and nothing of
	// the COPY is written (one transaction for these 1,000 rows).
	dup := pgx.CopyFromSlice(1000, func(i int) ([]any, error) {
		id := int64(rows + i)
		if i == 700 {
			id = 19_999
		}
		return []any{id, "again", int32(0)}, nil
	})
	_, err = conn0.CopyFrom(ctx, pgx.Identifier{"load"}, []string{"id", "name", "n"}, dup)
	unique("COPY over a committed row", err, "Key (id)=(19999) already exists.")
	absent(rows, rows+699, rows+701, rows+999)
	// Two equal keys inside one COPY, in different batches of the statement.
	twice := pgx.CopyFromSlice(1500, func(i int) ([]any, error) {
		id := int64(rows + i)
		if i == 1400 {
			id = rows + 3
		}
		return []any{id, "twice", int32(0)}, nil
	})
	_, err = conn1.CopyFrom(ctx, pgx.Identifier{"load"}, []string{"id", "name", "n"}, twice)
	unique("COPY with a key twice", err, "Key (id)=(20003) already exists.")
	absent(rows, rows+3, rows+1399, rows+1499)
	// Inside one multi-row INSERT (one batch).
	_, err = conn0.Exec(ctx, `INSERT INTO load VALUES (30000, 'a', 1), (30001, 'b', 2), (30000, 'c', 3)`)
	unique("INSERT with a key twice", err, "Key (id)=(30000) already exists.")
	absent(30000, 30001)
	// In a transaction block: the own earlier insert is seen, the block
	// fails, and a savepoint rollback brings it back to life.
	tx, err := conn1.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO load VALUES (40000, 'x', 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SAVEPOINT s`); err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(ctx, `INSERT INTO load VALUES (40001, 'y', 1), (40000, 'x again', 2)`)
	unique("INSERT of the block's own row", err, "Key (id)=(40000) already exists.")
	if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT s`); err != nil {
		t.Fatal(err)
	}
	// The own row deleted: inserting it again is fine.
	if _, err := tx.Exec(ctx, `DELETE FROM load WHERE id = 40000`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO load VALUES (40000, 'x2', 1), (40001, 'y', 1)`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := conn0.QueryRow(ctx, `SELECT name FROM load WHERE id = 40000`).Scan(&name); err != nil || name != "x2" {
		t.Fatalf("row 40000: %q %v", name, err)
	}
	// ON CONFLICT over a batch with existing rows and a repeated key.
	tag, err := conn0.Exec(ctx, `INSERT INTO load VALUES (50000, 'new', 1), (5, 'old', 1), (50000, 'again', 1), (50001, 'new', 1) ON CONFLICT DO NOTHING`)
	if err != nil || tag.RowsAffected() != 2 {
		t.Fatalf("ON CONFLICT DO NOTHING: %v %v", tag, err)
	}
	tag, err = conn0.Exec(ctx, `INSERT INTO load VALUES (6, 'x', 1), (50002, 'new', 1) ON CONFLICT (id) DO UPDATE SET name = load.name || '!'`)
	if err != nil || tag.RowsAffected() != 2 {
		t.Fatalf("ON CONFLICT DO UPDATE: %v %v", tag, err)
	}
	if err := conn0.QueryRow(ctx, `SELECT name FROM load WHERE id = 6`).Scan(&name); err != nil || name != "row 6!" {
		t.Fatalf("row 6: %q %v", name, err)
	}
	if err := conn0.QueryRow(ctx, `SELECT count(*) FROM load`).Scan(&n); err != nil || n != rows+5 {
		t.Fatalf("count at the end: %d %v", n, err)
	}
}
