package logictest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	osexec "os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/server/servertest"
	"github.com/shaledb/shaledb/internal/ysql/catalog"
)

// TestIndexBackfillConcurrentWriters creates a secondary index and a unique
// index on a table while writers on every node insert, update (moving rows
// between index keys and changing primary keys) and delete rows, alone and
// in transaction blocks. Afterwards each index must hold exactly one row
// per table row, with that row's values: nothing lost, nothing extra.
func TestIndexBackfillConcurrentWriters(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := servertest.NewClusterWith(t, 3, servertest.Options{YSQL: true})
	addrs := []string{waitYSQL(t, c, 0), waitYSQL(t, c, 1), waitYSQL(t, c, 2)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin := connect(t, addrs[0], "yugabyte")
	if _, err := admin.Exec(ctx, `CREATE TABLE bf (id bigint PRIMARY KEY, k int, v bigint) SPLIT INTO 3 TABLETS`); err != nil {
		t.Fatal(err)
	}
	const preload = 3000
	src := pgx.CopyFromSlice(preload, func(i int) ([]any, error) { return []any{int64(i), int32(i % 40), int64(i)}, nil })
	if _, err := admin.CopyFrom(ctx, pgx.Identifier{"bf"}, []string{"id", "k", "v"}, src); err != nil {
		t.Fatal(err)
	}

	// Writers: writer w owns the ids with w+1 in the millions and the v
	// values with w+1 in the billions, so inserts and v updates never
	// collide; k moves freely; any row may be updated or deleted.
	var stop atomic.Bool
	var ops [3]atomic.Int64
	errs := make(chan error, 3)
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		conn := connect(t, addrs[w], "yugabyte")
		wg.Add(1)
		go func(w int, conn *pgx.Conn) {
			defer wg.Done()
			errs <- runWriter(ctx, conn, w, preload, &stop, &ops[w])
		}(w, conn)
	}
	waitOps := func(min int64) {
		t.Helper()
		for i := range ops {
			for ops[i].Load() < min {
				select {
				case err := <-errs:
					t.Fatalf("writer stopped: %v", err)
				case <-ctx.Done():
					t.Fatal(ctx.Err())
				case <-time.After(10 * time.Millisecond):
				}
			}
		}
	}
	waitOps(20)
	before := [3]int64{ops[0].Load(), ops[1].Load(), ops[2].Load()}
	if _, err := admin.Exec(ctx, `CREATE INDEX bf_k ON bf (k)`); err != nil {
		t.Fatalf("CREATE INDEX: %v", err)
	}
	if _, err := admin.Exec(ctx, `CREATE UNIQUE INDEX bf_v ON bf (v)`); err != nil {
		t.Fatalf("CREATE UNIQUE INDEX: %v", err)
	}
	during := [3]int64{ops[0].Load() - before[0], ops[1].Load() - before[1], ops[2].Load() - before[2]}
	// Some more writes with the indexes readable, then stop.
	waitOps(ops[0].Load() + 20)
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("writer statements while the indexes were built: %v", during)

	// The table as SQL sees it, and both indexes read raw from storage.
	type row struct{ id, k, v int64 }
	rows, err := admin.Query(ctx, `SELECT id, k, v FROM bf`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]row{}
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.k, &r.v); err != nil {
			t.Fatal(err)
		}
		want[r.id] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	cl, err := client.Open(ctx, client.Config{Masters: c.Addrs})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	snap, err := catalog.NewCache(cl).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tbl, ok := snap.Table("yugabyte", "public", "bf")
	if !ok || len(tbl.Indexes) != 2 {
		t.Fatalf("table bf: %v, indexes %+v", ok, tbl)
	}
	col := func(name string) string { return catalog.StorageColumn(&tbl.Columns[tbl.ColumnIndex(name)]) }
	for _, ix := range tbl.Indexes {
		if !ix.Readable() {
			t.Fatalf("index %s is %q, not readable", ix.Name, ix.State)
		}
		it, err := cl.OpenTable(ctx, catalog.MasterNamespace("yugabyte"), catalog.MasterName("public", ix.Name))
		if err != nil {
			t.Fatal(err)
		}
		entries, err := it.ScanAll(ctx, client.ScanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		indexed := col("k")
		if ix.Unique {
			indexed = col("v")
		}
		seen := map[int64]bool{}
		var problems []string
		for _, e := range entries {
			id, val := intOf(e[col("id")]), intOf(e[indexed])
			r, exists := want[id]
			switch {
			case seen[id]:
				problems = append(problems, fmt.Sprintf("row %d indexed twice", id))
			case !exists:
				problems = append(problems, fmt.Sprintf("entry (%d, %d) of a row that does not exist", val, id))
			case ix.Unique && val != r.v || !ix.Unique && val != r.k:
				problems = append(problems, fmt.Sprintf("entry (%d, %d) of row %+v", val, id, r))
			}
			seen[id] = true
		}
		for id := range want {
			if !seen[id] {
				problems = append(problems, fmt.Sprintf("row %+v missing", want[id]))
			}
		}
		sort.Strings(problems)
		if len(problems) > 0 {
			t.Errorf("index %s (%d entries, %d rows): %d problems, first: %s", ix.Name, len(entries), len(want), len(problems),
				strings.Join(problems[:min(10, len(problems))], "; "))
		}
	}
	// And through SQL: the planner uses the indexes and finds every row.
	for k := int64(0); k < 40; k += 13 {
		var n, m int64
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM bf WHERE k = $1`, k).Scan(&n); err != nil {
			t.Fatal(err)
		}
		for _, r := range want {
			if r.k == k {
				m++
			}
		}
		if n != m {
			t.Errorf("k = %d: the index finds %d rows, the table has %d", k, n, m)
		}
	}
}

func intOf(v docdb.Value) int64 { return v.Int }

// runWriter writes until stop, counting statements; serialization
// failures and deadlocks are retried as clients do, anything else ends it.
func runWriter(ctx context.Context, conn *pgx.Conn, w, preload int, stop *atomic.Bool, ops *atomic.Int64) error {
	rnd := rand.New(rand.NewPCG(uint64(w), 7))
	nextID := int64(w+1) * 1_000_000
	nextV := int64(w+1) * 1_000_000_000
	var mine []int64
	anyID := func() int64 {
		if len(mine) > 0 && rnd.IntN(2) == 0 {
			return mine[rnd.IntN(len(mine))]
		}
		return int64(rnd.IntN(preload))
	}
	retryable := func(err error) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
	}
	for !stop.Load() {
		var err error
		switch op := rnd.IntN(6); op {
		case 0:
			nextID++
			nextV++
			if _, err = conn.Exec(ctx, `INSERT INTO bf VALUES ($1, $2, $3)`, nextID, rnd.IntN(40), nextV); err == nil {
				mine = append(mine, nextID)
			}
		case 1:
			_, err = conn.Exec(ctx, `UPDATE bf SET k = $2 WHERE id = $1`, anyID(), rnd.IntN(40))
		case 2:
			nextV++
			_, err = conn.Exec(ctx, `UPDATE bf SET v = $2 WHERE id = $1`, anyID(), nextV)
		case 3:
			_, err = conn.Exec(ctx, `DELETE FROM bf WHERE id = $1`, anyID())
		case 4:
			// A primary-key change: the row moves in the table and in
			// both indexes.
			nextID++
			_, err = conn.Exec(ctx, `UPDATE bf SET id = $2 WHERE id = $1`, anyID(), nextID)
		case 5:
			nextID++
			nextV++
			err = txBlock(ctx, conn, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, `UPDATE bf SET k = k + 1 WHERE id = $1`, anyID()); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `INSERT INTO bf VALUES ($1, $2, $3)`, nextID, rnd.IntN(40), nextV); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `DELETE FROM bf WHERE id = $1`, anyID())
				return err
			})
		}
		if err != nil && !retryable(err) {
			return fmt.Errorf("writer %d: %w", w, err)
		}
		ops.Add(1)
	}
	return nil
}

func txBlock(ctx context.Context, conn *pgx.Conn, fn func(pgx.Tx) error) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

// TestIndexErrorsAndCopy checks what the logic tests cannot: the detail
// of a unique violation, COPY into a table with indexes, and a unique
// index created through one node being enforced at once by another.
func TestIndexErrorsAndCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := servertest.NewClusterWith(t, 3, servertest.Options{YSQL: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn0 := connect(t, waitYSQL(t, c, 0), "yugabyte")
	conn1 := connect(t, waitYSQL(t, c, 1), "yugabyte")
	exec := func(conn *pgx.Conn, sql string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	unique := func(err error, constraint, detail string) {
		t.Helper()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "23505" || pe.ConstraintName != constraint || pe.Detail != detail {
			t.Fatalf("want 23505 on %s with detail %q, got %v (%+v)", constraint, detail, err, pe)
		}
	}
	exec(conn0, `CREATE TABLE p (id int PRIMARY KEY, a int, b text, UNIQUE (a, b))`)
	exec(conn0, `CREATE UNIQUE INDEX p_b ON p (b)`)
	// Created through node 1: enforced there without waiting.
	exec(conn1, `INSERT INTO p VALUES (1, 1, 'one')`)
	_, err := conn1.Exec(ctx, `INSERT INTO p VALUES (2, 2, 'one')`)
	unique(err, "p_b", "Key (b)=(one) already exists.")
	_, err = conn0.Exec(ctx, `INSERT INTO p VALUES (2, 1, 'one')`)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23505" {
		t.Fatalf("want 23505, got %v", err)
	}
	exec(conn0, `DROP INDEX p_b`)
	_, err = conn1.Exec(ctx, `INSERT INTO p VALUES (2, 1, 'one')`)
	unique(err, "p_a_b_key", "Key (a, b)=(1, one) already exists.")

	// COPY maintains the indexes, and a duplicate in one fails the batch.
	src := pgx.CopyFromSlice(500, func(i int) ([]any, error) {
		return []any{int32(i + 10), int32(i % 7), fmt.Sprintf("c%d", i)}, nil
	})
	if n, err := conn1.CopyFrom(ctx, pgx.Identifier{"p"}, []string{"id", "a", "b"}, src); err != nil || n != 500 {
		t.Fatalf("COPY: %d %v", n, err)
	}
	var n int
	if err := conn0.QueryRow(ctx, `SELECT count(*) FROM p WHERE a = 3 AND b = 'c3'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("after COPY: %d %v", n, err)
	}
	dup := pgx.CopyFromSlice(2, func(i int) ([]any, error) { return []any{int32(1000 + i), int32(3), "c3"}, nil })
	_, err = conn1.CopyFrom(ctx, pgx.Identifier{"p"}, []string{"id", "a", "b"}, dup)
	unique(err, "p_a_b_key", "Key (a, b)=(3, c3) already exists.")
	if err := conn0.QueryRow(ctx, `SELECT count(*) FROM p`).Scan(&n); err != nil || n != 501 {
		t.Fatalf("after the failed COPY: %d rows %v", n, err)
	}

	// psql lists the indexes: \di, and the query of \d's "Indexes:"
	// footer (the whole of \d needs catalog relations not generated yet).
	exec(conn0, `CREATE INDEX p_b_part ON p (b) INCLUDE (a) WHERE a > 2`)
	psql, err := osexec.LookPath("psql")
	if err != nil {
		t.Fatal("psql not found: `make test` installs postgresql-client")
	}
	host, port, _ := strings.Cut(waitYSQL(t, c, 2), ":")
	out, err := osexec.CommandContext(ctx, psql, "-h", host, "-p", port, "-U", "yugabyte", "-d", "yugabyte", "-X", "-A", "-t",
		"-c", `\di`).CombinedOutput()
	if err != nil {
		t.Fatalf("psql \\di: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "public|p_a_b_key|index|yugabyte|p\npublic|p_b_part|index|yugabyte|p\npublic|p_pkey|index|yugabyte|p"; got != want {
		t.Errorf("psql \\di:\n%s\nwant:\n%s", got, want)
	}
	var oid uint32
	if err := conn0.QueryRow(ctx, `SELECT oid FROM pg_class WHERE relname = 'p' AND relkind = 'r'`).Scan(&oid); err != nil {
		t.Fatal(err)
	}
	rows, err := conn0.Query(ctx, `SELECT c2.relname, i.indisprimary, i.indisunique, i.indisclustered, i.indisvalid,
  pg_catalog.pg_get_indexdef(i.indexrelid, 0, true), pg_catalog.pg_get_constraintdef(con.oid, true), contype,
  condeferrable, condeferred, i.indisreplident, c2.reltablespace
FROM pg_catalog.pg_class c, pg_catalog.pg_class c2, pg_catalog.pg_index i
  LEFT JOIN pg_catalog.pg_constraint con ON (conrelid = i.indrelid AND conindid = i.indexrelid AND contype IN ('p','u','x'))
WHERE c.oid = '`+fmt.Sprint(oid)+`' AND c.oid = i.indrelid AND i.indexrelid = c2.oid
ORDER BY i.indisprimary DESC, c2.relname`, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		vals := rows.RawValues()
		var parts []string
		for _, v := range vals[:8] {
			parts = append(parts, string(v))
		}
		got = append(got, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"p_pkey|t|t|f|t|CREATE UNIQUE INDEX p_pkey ON public.p USING lsm (id HASH)|PRIMARY KEY (id HASH)|p",
		"p_a_b_key|f|t|f|t|CREATE UNIQUE INDEX p_a_b_key ON public.p USING lsm (a HASH, b ASC)|UNIQUE (a, b)|u",
		"p_b_part|f|f|f|t|CREATE INDEX p_b_part ON public.p USING lsm (b HASH) INCLUDE (a) WHERE (a > 2)||",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("\\d's index query:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A transaction block open in another database does not hold up
	// CREATE INDEX; one open in the same database does, until it ends
	// (it may still write without knowing of the index).
	exec(conn0, `CREATE DATABASE other`)
	otherConn := connect(t, waitYSQL(t, c, 1), "other")
	exec(otherConn, `BEGIN`)
	exec(otherConn, `SELECT 1`)
	exec(conn0, `CREATE INDEX p_a ON p (a)`)
	exec(otherConn, `COMMIT`)
	exec(conn1, `BEGIN`)
	exec(conn1, `UPDATE p SET a = 100 WHERE id = 1`)
	done := make(chan error, 1)
	go func() {
		_, err := conn0.Exec(ctx, `CREATE INDEX p_a2 ON p (a)`)
		done <- err
	}()
	conn2 := connect(t, waitYSQL(t, c, 2), "yugabyte")
	for {
		var ready bool
		err := conn2.QueryRow(ctx, `SELECT i.indisready FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'p_a2'`).Scan(&ready)
		if err == nil && !ready {
			break // delete-only: the build waits for the open block
		}
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			t.Fatalf("CREATE INDEX ended while a block that began before it was open: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	select {
	case err := <-done:
		t.Fatalf("CREATE INDEX ended while a block that began before it was open: %v", err)
	default:
	}
	exec(conn1, `INSERT INTO p VALUES (5000, 77, 'late')`)
	exec(conn1, `COMMIT`)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var ids []int32
	rows, err = conn2.Query(ctx, `SELECT id FROM p WHERE a = 100 OR a = 77 ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int32
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if len(ids) != 2 || ids[0] != 1 || ids[1] != 5000 {
		t.Fatalf("rows written by the block, read through the new index: %v", ids)
	}
	var plan string
	if err := conn2.QueryRow(ctx, `EXPLAIN SELECT id FROM p WHERE a = 77`).Scan(&plan); err != nil || !strings.HasPrefix(plan, "Index") {
		t.Fatalf("plan: %q %v", plan, err)
	}
}
