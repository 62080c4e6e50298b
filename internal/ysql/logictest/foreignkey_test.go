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

// TestForeignKeys checks what foreignkeys.test cannot: error details and
// hints, notices, COPY, and a parent deleted while a child referencing it
// is being inserted by another transaction (never a child without its
// parent).
func TestForeignKeys(t *testing.T) {
	addrs, conn := ysqlCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	exec := func(c *pgx.Conn, sql string) {
		t.Helper()
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	wantErr := func(err error, code, msg, detail, hint string) {
		t.Helper()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != code || pe.Message != msg || pe.Detail != detail || pe.Hint != hint {
			t.Fatalf("got %#v\nwant %s %q %q %q", err, code, msg, detail, hint)
		}
	}
	exec(conn, `CREATE TABLE p (k int PRIMARY KEY, n int)`)
	exec(conn, `CREATE TABLE c (id int PRIMARY KEY, p int REFERENCES p)`)
	exec(conn, `INSERT INTO p VALUES (1, 0), (2, 0), (3, 0)`)
	exec(conn, `INSERT INTO c VALUES (1, 1)`)

	t.Run("details", func(t *testing.T) {
		_, err := conn.Exec(ctx, `INSERT INTO c VALUES (2, 5)`)
		wantErr(err, "23503", `insert or update on table "c" violates foreign key constraint "c_p_fkey"`,
			`Key (p)=(5) is not present in table "p".`, "")
		_, err = conn.Exec(ctx, `DELETE FROM p WHERE k = 1`)
		wantErr(err, "23503", `update or delete on table "p" violates foreign key constraint "c_p_fkey" on table "c"`,
			`Key (k)=(1) is still referenced from table "c".`, "")
		_, err = conn.Exec(ctx, `DROP TABLE p`)
		wantErr(err, "2BP01", `cannot drop table p because other objects depend on it`,
			`constraint c_p_fkey on table c depends on table p`, `Use DROP ... CASCADE to drop the dependent objects too.`)
		_, err = conn.Exec(ctx, `TRUNCATE p`)
		wantErr(err, "0A000", `cannot truncate a table referenced in a foreign key constraint`,
			`Table "c" references "p".`, `Truncate table "c" at the same time, or use TRUNCATE ... CASCADE.`)
	})

	t.Run("copy", func(t *testing.T) {
		rows := pgx.CopyFromSlice(600, func(i int) ([]any, error) {
			p := int32(1 + i%3)
			if i == 550 {
				p = 9
			}
			return []any{int32(100 + i), p}, nil
		})
		_, err := conn.CopyFrom(ctx, pgx.Identifier{"c"}, []string{"id", "p"}, rows)
		wantErr(err, "23503", `insert or update on table "c" violates foreign key constraint "c_p_fkey"`,
			`Key (p)=(9) is not present in table "p".`, "")
		good := pgx.CopyFromSlice(600, func(i int) ([]any, error) { return []any{int32(100 + i), int32(1 + i%3)}, nil })
		if n, err := conn.CopyFrom(ctx, pgx.Identifier{"c"}, []string{"id", "p"}, good); err != nil || n != 600 {
			t.Fatalf("COPY: %d %v", n, err)
		}
		exec(conn, `DELETE FROM c WHERE id >= 100`)
	})

	// A child inserted in an open transaction holds its parent: the
	// parent's delete waits for it, then finds the child; a parent deleted
	// in an open transaction is not there for a child inserted meanwhile.
	t.Run("concurrent", func(t *testing.T) {
		other := connect(t, addrs[1], "yugabyte")
		orphans := func() {
			t.Helper()
			var n int
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM c WHERE p IS NOT NULL AND p NOT IN (SELECT k FROM p)`).Scan(&n); err != nil || n != 0 {
				t.Fatalf("children without a parent: %d %v", n, err)
			}
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO c VALUES (10, 2)`); err != nil {
			t.Fatal(err)
		}
		deleted := make(chan error, 1)
		go func() {
			_, err := other.Exec(ctx, `DELETE FROM p WHERE k = 2`)
			deleted <- err
		}()
		commitErr := tx.Commit(ctx)
		err = <-deleted
		if commitErr == nil && err == nil {
			t.Fatal("both the child insert and the parent delete succeeded")
		}
		orphans()

		tx, err = other.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM p WHERE k = 3`); err != nil {
			t.Fatal(err)
		}
		inserted := make(chan error, 1)
		go func() {
			_, err := conn.Exec(ctx, `INSERT INTO c VALUES (11, 3)`)
			inserted <- err
		}()
		commitErr = tx.Commit(ctx)
		err = <-inserted
		if commitErr == nil && err == nil {
			t.Fatal("both the parent delete and the child insert succeeded")
		}
		orphans()
	})

	// Children hold their parent FOR KEY SHARE, as in PostgreSQL: two
	// transactions that each insert a child and then update the parent's
	// other columns (an order's line, then its total) both commit. With
	// FOR SHARE the first update waited for the other's lock and the
	// second then deadlocked (40P01).
	t.Run("key share", func(t *testing.T) {
		other := connect(t, addrs[1], "yugabyte")
		exec(conn, `INSERT INTO p VALUES (4, 0)`)
		t1, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t2, err := other.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i, tx := range []pgx.Tx{t1, t2} {
			if _, err := tx.Exec(ctx, `INSERT INTO c VALUES ($1, 4)`, 40+i); err != nil {
				t.Fatal(err)
			}
		}
		// Not blocked by t2's child: it returns while t2 is open (or
		// fails once waiting for it has taken 20 s).
		uctx, ucancel := context.WithTimeout(ctx, 20*time.Second)
		_, err = t1.Exec(uctx, `UPDATE p SET n = n + 1 WHERE k = 4`)
		ucancel()
		if err != nil {
			t.Fatalf("t1's update: %v", err)
		}
		updated := make(chan error, 1)
		go func() {
			_, err := t2.Exec(ctx, `UPDATE p SET n = n + 1 WHERE k = 4`) // waits for t1
			updated <- err
		}()
		if err := t1.Commit(ctx); err != nil {
			t.Fatalf("t1: %v", err)
		}
		if err := <-updated; err != nil {
			t.Fatalf("t2's update: %v", err)
		}
		if err := t2.Commit(ctx); err != nil {
			t.Fatalf("t2: %v", err)
		}
		var n, children int
		if err := conn.QueryRow(ctx, `SELECT n, (SELECT count(*) FROM c WHERE p = 4) FROM p WHERE k = 4`).Scan(&n, &children); err != nil || n != 2 || children != 2 {
			t.Fatalf("n = %d, %d children, %v; want 2, 2", n, children, err)
		}

		// The explicit locks conflict as PostgreSQL's table says
		// (NOWAIT: 55P03 on a conflict).
		modes := []string{"KEY SHARE", "SHARE", "NO KEY UPDATE", "UPDATE"}
		var got [][]string
		for _, held := range modes {
			var line []string
			for _, wanted := range modes {
				tx, err := conn.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx.Exec(ctx, `SELECT * FROM p WHERE k = 4 FOR `+held); err != nil {
					t.Fatal(err)
				}
				otx, err := other.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				_, err = otx.Exec(ctx, `SELECT * FROM p WHERE k = 4 FOR `+wanted+` NOWAIT`)
				var pe *pgconn.PgError
				switch {
				case err == nil:
					line = append(line, "ok")
				case errors.As(err, &pe):
					line = append(line, pe.Code)
				default:
					t.Fatal(err)
				}
				_ = otx.Rollback(ctx)
				_ = tx.Rollback(ctx)
			}
			got = append(got, line)
		}
		want := [][]string{
			{"ok", "ok", "ok", "55P03"},
			{"ok", "ok", "55P03", "55P03"},
			{"ok", "55P03", "55P03", "55P03"},
			{"55P03", "55P03", "55P03", "55P03"},
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("lock conflicts (held by row, wanted by column):\n%v\nwant\n%v", got, want)
		}
	})

	t.Run("notices", func(t *testing.T) {
		var notices []string
		cfg := conn.Config().Copy()
		cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices = append(notices, n.Message) }
		nc, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close(ctx)
		exec(nc, `DROP TABLE p CASCADE`)
		if len(notices) != 1 || notices[0] != "drop cascades to constraint c_p_fkey on table c" {
			t.Fatalf("notices %q", notices)
		}
		// DROP CONSTRAINT IF EXISTS of none says so, as PostgreSQL (it
		// said nothing).
		exec(nc, `ALTER TABLE c DROP CONSTRAINT IF EXISTS nosuch`)
		if len(notices) != 2 || notices[1] != `constraint "nosuch" of relation "c" does not exist, skipping` {
			t.Fatalf("notices %q", notices)
		}
		exec(nc, `INSERT INTO c VALUES (20, 20)`)
	})
}
