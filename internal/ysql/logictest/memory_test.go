package logictest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shaledb/shaledb/internal/server/servertest"
)

// Under a small query memory budget (--max-sql-memory) what streams or
// spills runs and what would be held past the budget fails with 53200,
// leaving the connection usable and the budget given back: the failing
// query fails again the same way, and the others still run after it.
func TestQueryMemoryBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	const budget = 48 << 20
	c := servertest.NewClusterWith(t, 3, servertest.Options{YSQL: true, MaxSQLMemory: budget})
	conn := connect(t, waitYSQL(t, c, 0), "yugabyte")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// Ten million rows through a lateral join: it streams.
	lateral := `SELECT count(*) FROM generate_series(1, 4) a, LATERAL generate_series(1, a * 1000000) b`
	// A join without keys over a million right rows: held up to work_mem.
	nestedLoop := `SELECT count(*) FROM generate_series(1, 3) a JOIN generate_series(1, 1000000) b ON a.a < b.b`
	// The rows of an IN subquery are held whole.
	inList := `SELECT count(*) FROM generate_series(1, 10) a WHERE a IN (SELECT g FROM generate_series(1, 2000000) g)`

	countIs(t, ctx, conn, lateral, 10000000)
	mustExec(t, ctx, conn, `SET work_mem = '1MB'`)
	countIs(t, ctx, conn, nestedLoop, 2999994) // spills
	mustExec(t, ctx, conn, `RESET work_mem`)
	for range 2 {
		outOfMemory(t, ctx, conn, nestedLoop, "a join's right side") // 64MB of work_mem passes the budget
		outOfMemory(t, ctx, conn, inList, "a subquery")
		countIs(t, ctx, conn, `SELECT 1`, 1)
		countIs(t, ctx, conn, lateral, 10000000)
	}
}

func mustExec(t *testing.T, ctx context.Context, conn *pgx.Conn, q string) {
	t.Helper()
	if _, err := conn.Exec(ctx, q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func countIs(t *testing.T, ctx context.Context, conn *pgx.Conn, q string, want int64) {
	t.Helper()
	var n int64
	if err := conn.QueryRow(ctx, q).Scan(&n); err != nil || n != want {
		t.Fatalf("%s: %d, %v; want %d", q, n, err, want)
	}
}

// outOfMemory checks that q fails with 53200, naming what ran out.
func outOfMemory(t *testing.T, ctx context.Context, conn *pgx.Conn, q, what string) {
	t.Helper()
	var n int64
	err := conn.QueryRow(ctx, q).Scan(&n)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "53200" || pe.Message != "out of memory" ||
		!strings.Contains(pe.Detail, what) || !strings.Contains(pe.Detail, "--max-sql-memory") {
		t.Fatalf("%s: %d, %v (%+v); want 53200 out of memory holding %s", q, n, err, *pe, what)
	}
}
