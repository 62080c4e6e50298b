package logictest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestSchemaChangeEverywhereAtOnce: a schema change made through one node
// holds on every node once it returns, before their heartbeats bring its
// catalog version. DDL through another node finds a table created a moment
// ago, a constraint added through one node is enforced by the others on
// their next write, and a column added through one is written and read
// through the others.
func TestSchemaChangeEverywhereAtOnce(t *testing.T) {
	addrs, admin := ysqlCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	others := []*pgx.Conn{connect(t, addrs[1], "yugabyte"), connect(t, addrs[2], "yugabyte")}
	exec := func(c *pgx.Conn, sql string) {
		t.Helper()
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	wantCode := func(c *pgx.Conn, sql, code string) {
		t.Helper()
		_, err := c.Exec(ctx, sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != code {
			t.Fatalf("%s: %v, want SQLSTATE %s", sql, err, code)
		}
	}

	for round := range 4 {
		// DDL through the other nodes right after a CREATE through the
		// first: they decide on the master's catalog, not their copy.
		name := fmt.Sprintf("sc%d", round)
		exec(admin, "CREATE TABLE "+name+" (k int PRIMARY KEY, v int)")
		exec(others[0], "ALTER TABLE "+name+" ADD COLUMN w int")
		exec(others[1], "CREATE INDEX ON "+name+" (w)")

		// A CHECK and a NOT NULL added through the first node refuse the
		// others' next writes.
		exec(admin, fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT positive CHECK (v > 0)", name))
		for _, c := range others {
			wantCode(c, "INSERT INTO "+name+" VALUES (1, -1, 0)", "23514")
		}
		exec(admin, "ALTER TABLE "+name+" ALTER COLUMN w SET NOT NULL")
		for _, c := range others {
			wantCode(c, "INSERT INTO "+name+" VALUES (2, 1, NULL)", "23502")
		}

		// A column added through the first node is written and read
		// through the others at once (their clients had the table's
		// old columns cached: "unknown column").
		exec(admin, "ALTER TABLE "+name+" ADD COLUMN z int")
		for i, c := range others {
			exec(c, fmt.Sprintf("INSERT INTO %s VALUES (%d, 1, 0, %d)", name, 100+i, 7+i))
			var z int
			if err := c.QueryRow(ctx, fmt.Sprintf("SELECT z FROM %s WHERE k = %d", name, 100+i)).Scan(&z); err != nil || z != 7+i {
				t.Fatalf("round %d, node %d: z = %d, %v; want %d", round, i+2, z, err, 7+i)
			}
		}
	}
}
