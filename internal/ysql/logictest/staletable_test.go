package logictest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestTableRecreatedThroughAnotherNode: a table dropped and created again
// through one node is written and read through the others at once, before
// their heartbeats bring the new catalog version: a statement that met the
// old table's absence runs again on the current catalog. In a block that
// used the old table the statement fails with 40001, and the retried
// transaction works.
func TestTableRecreatedThroughAnotherNode(t *testing.T) {
	addrs, admin := ysqlCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	others := []*pgx.Conn{connect(t, addrs[1], "yugabyte"), connect(t, addrs[2], "yugabyte")}
	exec := func(c *pgx.Conn, sql string, args ...any) {
		t.Helper()
		if _, err := c.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(admin, "CREATE TABLE again (k int PRIMARY KEY, v text)")
	for i, c := range others {
		exec(c, "INSERT INTO again VALUES ($1, 'old')", i) // the nodes know the first table
	}
	for round := range 3 {
		exec(admin, "DROP TABLE again")
		exec(admin, "CREATE TABLE again (k int PRIMARY KEY, v text)")
		for i, c := range others {
			exec(c, "INSERT INTO again VALUES ($1, 'new')", 10*round+i) // autocommit, extended protocol
			var n int
			if err := c.QueryRow(ctx, "SELECT count(*) FROM again").Scan(&n); err != nil || n != i+1 {
				t.Fatalf("round %d, node %d: %d rows, %v; want %d", round, i+2, n, err, i+1)
			}
		}
	}

	// A block that read the old table: its next statement, if its node has
	// not heard of the new catalog yet (a heartbeat may come first), fails
	// with 40001, not an internal error; the transaction run again writes
	// the new table.
	block := func(recreate bool) error {
		tx, err := others[0].Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		var n int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM again").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if recreate {
			exec(admin, "DROP TABLE again")
			exec(admin, "CREATE TABLE again (k int PRIMARY KEY, v text)")
		}
		if _, err := tx.Exec(ctx, "INSERT INTO again VALUES (100, 'in a block')"); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}
	err := block(true)
	var pe *pgconn.PgError
	if err != nil && (!errors.As(err, &pe) || pe.Code != "40001") {
		t.Fatalf("a block's write after its table was dropped and created again: %v, want success or 40001", err)
	}
	if err != nil {
		t.Logf("the block failed as it should: %v", err)
		if err := block(false); err != nil {
			t.Fatalf("the block run again: %v", err)
		}
	}
	var v string
	if err := admin.QueryRow(ctx, "SELECT v FROM again WHERE k = 100").Scan(&v); err != nil || v != "in a block" {
		t.Fatalf("the block's row: %q, %v", v, err)
	}
}
