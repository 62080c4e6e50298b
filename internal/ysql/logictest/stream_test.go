package logictest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/server/servertest"
)

// TestStreamedResults checks the queries whose rows stream from the scan
// to the client (more rows than a statement reads before it sends any):
// every row once, in key order, through LIMIT and OFFSET, a cursor and a
// portal suspended by Execute's row limit, and all from one snapshot,
// although the later pages are read after other transactions changed the
// table.
func TestStreamedResults(t *testing.T) {
	addrs, admin := ysqlCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const n = 25000 // more than the 10,000 rows a statement reads before it streams
	for _, q := range []string{
		`CREATE TABLE st (k int, v text, PRIMARY KEY (k ASC)) SPLIT AT VALUES ((8000), (16000))`,
		fmt.Sprintf(`INSERT INTO st SELECT g, 'v' || g FROM generate_series(1, %d) g`, n),
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	c := connect(t, addrs[1], "yugabyte")

	t.Run("whole table", func(t *testing.T) {
		rows, err := c.Query(ctx, `SELECT k, v FROM st`)
		if err != nil {
			t.Fatal(err)
		}
		want := 1
		for rows.Next() {
			var k int
			var v string
			if err := rows.Scan(&k, &v); err != nil {
				t.Fatal(err)
			}
			if k != want || v != fmt.Sprint("v", k) {
				t.Fatalf("row %d is (%d, %q)", want, k, v)
			}
			want++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if want != n+1 || rows.CommandTag().String() != fmt.Sprintf("SELECT %d", n) {
			t.Fatalf("%d rows, tag %q", want-1, rows.CommandTag())
		}
	})

	t.Run("limit and offset", func(t *testing.T) {
		ks := queryInts(t, c, `SELECT k FROM st WHERE v <> 'x' LIMIT 12000 OFFSET 5000`)
		if len(ks) != 12000 || ks[0] != 5001 || ks[len(ks)-1] != 17000 {
			t.Fatalf("%d rows, %v .. %v", len(ks), ks[:1], ks[len(ks)-1:])
		}
		for i, k := range ks {
			if k != 5001+i {
				t.Fatalf("row %d is %d", i, k)
			}
		}
	})

	t.Run("distinct and set operations", func(t *testing.T) {
		for _, tc := range []struct {
			q string
			// want is how many times k appears in the result.
			want func(k int) int
		}{
			{`SELECT DISTINCT k % 20000 FROM st`, func(k int) int { return b2i(k >= 0 && k < 20000) }},
			{`SELECT k FROM st UNION ALL SELECT k FROM st WHERE k > 20000`, func(k int) int { return b2i(k >= 1 && k <= n) + b2i(k > 20000 && k <= n) }},
			{`SELECT k FROM st UNION SELECT k + 20000 FROM st`, func(k int) int { return b2i(k >= 1 && k <= n+20000) }},
			{`SELECT k FROM st EXCEPT SELECT k FROM st WHERE k % 2 = 0`, func(k int) int { return b2i(k >= 1 && k <= n && k%2 == 1) }},
			{`SELECT k % 15000 FROM st INTERSECT ALL SELECT k FROM st WHERE k > 3000`, func(k int) int {
				// The left side has 0..14999 (1..10000 twice), the right
				// 3001..25000 once each.
				return b2i(k > 3000 && k < 15000)
			}},
		} {
			counts := map[int]int{}
			for _, k := range queryInts(t, c, tc.q) {
				counts[k]++
			}
			for k := -1; k <= n+20001; k++ {
				if counts[k] != tc.want(k) {
					t.Fatalf("%s: %d appears %d times, want %d", tc.q, k, counts[k], tc.want(k))
				}
				delete(counts, k)
			}
			if len(counts) != 0 {
				t.Fatalf("%s: unexpected values %v", tc.q, counts)
			}
		}
	})

	t.Run("joins", func(t *testing.T) {
		// sb's rows join sm's by m (sm's key: a batched lookup join), by t
		// (a hash join) or by an expression (a nested loop). sm has no
		// id 9: a LEFT JOIN NULL-extends those rows, an inner join drops
		// them.
		for _, q := range []string{
			`CREATE TABLE sm (id int PRIMARY KEY, w text)`,
			`INSERT INTO sm SELECT g, 'w' || g FROM generate_series(0, 8) g`,
			`CREATE TABLE sb (k int, m int, t text, PRIMARY KEY (k ASC)) SPLIT AT VALUES ((12000))`,
			fmt.Sprintf(`INSERT INTO sb SELECT g, g %% 10, 'w' || (g %% 10) FROM generate_series(1, %d) g`, n),
		} {
			if _, err := admin.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		for _, tc := range []struct{ name, on, plan string }{
			{"lookup", `sm.id = sb.m`, "Batched Nested Loop"},
			{"hash", `sm.w = sb.t`, "Hash"},
			{"nested loop", `sm.id = sb.k % 10`, "Nested Loop"},
		} {
			for _, kind := range []string{"JOIN", "LEFT JOIN"} {
				q := fmt.Sprintf(`SELECT sb.k, sm.w FROM sb %s sm ON %s`, kind, tc.on)
				t.Run(tc.name+" "+kind, func(t *testing.T) {
					var plan string // its first line
					if err := c.QueryRow(ctx, "EXPLAIN "+q).Scan(&plan); err != nil || !strings.Contains(plan, tc.plan) {
						t.Fatalf("plan %q (%v), want a %s join", plan, err, tc.plan)
					}
					left := kind == "LEFT JOIN"
					rows, err := c.Query(ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					want, got := 1, 0
					for rows.Next() {
						var k int
						var w *string
						if err := rows.Scan(&k, &w); err != nil {
							t.Fatal(err)
						}
						if !left && want%10 == 9 {
							want++ // no match: not in an inner join
						}
						if k != want || (want%10 == 9) != (w == nil) || w != nil && *w != fmt.Sprint("w", want%10) {
							t.Fatalf("row %d is (%d, %v)", got, k, w)
						}
						want, got = want+1, got+1
					}
					if err := rows.Err(); err != nil {
						t.Fatal(err)
					}
					expect := n
					if !left {
						expect = n - n/10
					}
					if got != expect || rows.CommandTag().String() != fmt.Sprintf("SELECT %d", expect) {
						t.Fatalf("%d rows, tag %q, want %d", got, rows.CommandTag(), expect)
					}
				})
			}
		}
	})

	t.Run("index", func(t *testing.T) {
		// sb (from the joins above) by an index on t; m is not in it.
		if _, err := admin.Exec(ctx, `CREATE INDEX sb_t ON sb (t ASC)`); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct{ q, plan string }{
			{`SELECT k, m, t FROM sb WHERE t >= 'w' ORDER BY t`, "Index Scan"},
			{`SELECT k, k % 10, t FROM sb WHERE t >= 'w' ORDER BY t`, "Index Only Scan"},
		} {
			var plan string // its first line
			if err := c.QueryRow(ctx, "EXPLAIN "+tc.q).Scan(&plan); err != nil || !strings.HasPrefix(plan, tc.plan) {
				t.Fatalf("%s: plan %q (%v), want %s", tc.q, plan, err, tc.plan)
			}
			rows, err := c.Query(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			seen, last := map[int]bool{}, ""
			for rows.Next() {
				var k, m int
				var tv string
				if err := rows.Scan(&k, &m, &tv); err != nil {
					t.Fatal(err)
				}
				if tv < last || seen[k] || m != k%10 || tv != fmt.Sprint("w", m) {
					t.Fatalf("%s: row (%d, %d, %s) after t = %s", tc.q, k, m, tv, last)
				}
				seen[k], last = true, tv
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if len(seen) != n {
				t.Fatalf("%s: %d rows", tc.q, len(seen))
			}
		}
	})

	// change runs, from another node, what the snapshot checks below
	// must not see; undo puts the table back. The changes wait until the
	// stream's read time (at most start) is out of their clock
	// uncertainty window: a change within it fails the later pages with
	// 40001, as the read cannot tell whether it came first (the nodes of
	// this cluster share one clock).
	change := func(t *testing.T, start time.Time) {
		for time.Since(start) <= hlc.DefaultMaxOffset+50*time.Millisecond {
			time.Sleep(10 * time.Millisecond)
		}
		for _, q := range []string{
			`UPDATE st SET v = 'new' WHERE k > 20000`,
			`DELETE FROM st WHERE k = 24000`,
			`INSERT INTO st VALUES (25001, 'new')`,
		} {
			if _, err := admin.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	undo := func(t *testing.T) {
		for _, q := range []string{
			`UPDATE st SET v = 'v' || k WHERE k > 20000`,
			`INSERT INTO st VALUES (24000, 'v24000')`,
			`DELETE FROM st WHERE k = 25001`,
		} {
			if _, err := admin.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	// checkSnapshot checks rows k from..n as the table was before change.
	checkSnapshot := func(t *testing.T, from int, ks []int, vs []string) {
		t.Helper()
		if len(ks) != n-from+1 {
			t.Fatalf("%d rows after %d, want %d", len(ks), from-1, n-from+1)
		}
		for i, k := range ks {
			if k != from+i || vs[i] != fmt.Sprint("v", k) {
				t.Fatalf("row %d is (%d, %q): not the snapshot's", from+i, k, vs[i])
			}
		}
	}

	for _, iso := range []string{"READ COMMITTED", "REPEATABLE READ"} {
		t.Run("cursor "+iso, func(t *testing.T) {
			tx, err := c.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.TxIsoLevel(strings.ToLower(iso))})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			start := time.Now()
			if _, err := tx.Exec(ctx, `DECLARE cur CURSOR FOR SELECT k, v FROM st`); err != nil {
				t.Fatal(err)
			}
			first, _ := queryKV(t, tx.Conn(), `FETCH 12000 FROM cur`)
			if len(first) != 12000 || first[11999] != 12000 {
				t.Fatalf("first FETCH: %d rows", len(first))
			}
			change(t, start)
			defer undo(t)
			var ks []int
			var vs []string
			for {
				k, v := queryKV(t, tx.Conn(), `FETCH 5000 FROM cur`)
				if len(k) == 0 {
					break
				}
				ks, vs = append(ks, k...), append(vs, v...)
			}
			checkSnapshot(t, 12001, ks, vs)
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}

	t.Run("spilled sort", func(t *testing.T) {
		// Past work_mem the sort merges runs from files; its result streams
		// from the merge, and the files are closed when the statement ends,
		// read to the end or dropped (a cursor closed early).
		sc := connect(t, addrs[1], "yugabyte")
		if _, err := sc.Exec(ctx, `SET work_mem = '64kB'`); err != nil {
			t.Fatal(err)
		}
		want := make([]string, n)
		for i := range want {
			want[i] = fmt.Sprint("v", i+1)
		}
		sort.Sort(sort.Reverse(sort.StringSlice(want)))
		rows, err := sc.Query(ctx, `SELECT v FROM st ORDER BY v DESC`)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%d rows out of order (want %d)", len(got), n)
		}
		if open := openSpillFiles(t); open != 0 {
			t.Fatalf("%d spill files open after the statement", open)
		}
		var plan []string
		rows, err = sc.Query(ctx, `EXPLAIN ANALYZE SELECT v FROM st ORDER BY v DESC`)
		if err != nil {
			t.Fatal(err)
		}
		if plan, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(plan, func(l string) bool { return strings.Contains(l, "Sort Method: external merge") }) {
			t.Fatalf("EXPLAIN ANALYZE shows no external merge:\n%s", strings.Join(plan, "\n"))
		}
		for _, q := range []string{`BEGIN`, `DECLARE c CURSOR FOR SELECT v FROM st ORDER BY v`, `FETCH 10 FROM c`} {
			if _, err := sc.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if openSpillFiles(t) == 0 {
			t.Fatal("no spill file open under a cursor that has rows left")
		}
		if _, err := sc.Exec(ctx, `CLOSE c`); err != nil {
			t.Fatal(err)
		}
		if _, err := sc.Exec(ctx, `COMMIT`); err != nil {
			t.Fatal(err)
		}
		if open := openSpillFiles(t); open != 0 {
			t.Fatalf("%d spill files open after the cursor closed", open)
		}
	})

	t.Run("suspended portal", func(t *testing.T) {
		pc := connect(t, addrs[2], "yugabyte")
		if _, err := pc.Exec(ctx, `BEGIN ISOLATION LEVEL REPEATABLE READ`); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		fe := pc.PgConn().Frontend()
		fe.Send(&pgproto3.Parse{Query: `SELECT k, v FROM st`})
		fe.Send(&pgproto3.Bind{ResultFormatCodes: []int16{0}})
		var ks []int
		var vs []string
		// execute sends Execute with a row limit and Sync; it reports
		// whether the portal was suspended.
		execute := func() bool {
			fe.Send(&pgproto3.Execute{MaxRows: 7000})
			fe.Send(&pgproto3.Sync{})
			if err := fe.Flush(); err != nil {
				t.Fatal(err)
			}
			suspended, rows := false, 0
			for {
				msg, err := fe.Receive()
				if err != nil {
					t.Fatal(err)
				}
				switch m := msg.(type) {
				case *pgproto3.DataRow:
					var k int
					if _, err := fmt.Sscan(string(m.Values[0]), &k); err != nil {
						t.Fatal(err)
					}
					ks, vs = append(ks, k), append(vs, string(m.Values[1]))
					rows++
				case *pgproto3.PortalSuspended:
					suspended = true
				case *pgproto3.CommandComplete:
					if string(m.CommandTag) != fmt.Sprintf("SELECT %d", n) {
						t.Fatalf("tag %q", m.CommandTag)
					}
				case *pgproto3.ErrorResponse:
					t.Fatalf("%s: %s", m.Code, m.Message)
				case *pgproto3.ReadyForQuery:
					if suspended && rows != 7000 {
						t.Fatalf("%d rows before the suspension", rows)
					}
					return suspended
				}
			}
		}
		for i := 0; i < 2; i++ {
			if !execute() {
				t.Fatal("the portal ended early")
			}
		}
		change(t, start)
		defer undo(t)
		for execute() {
		}
		checkSnapshot(t, 1, ks, vs)
		if _, err := pc.Exec(ctx, `COMMIT`); err != nil {
			t.Fatal(err)
		}
	})
}

// queryKV runs a query of an integer and a text column.
func queryKV(t *testing.T, c *pgx.Conn, q string) (ks []int, vs []string) {
	t.Helper()
	rows, err := c.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k int
		var v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		ks, vs = append(ks, k), append(vs, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return ks, vs
}

// queryInts runs a query of one integer column.
func queryInts(t *testing.T, c *pgx.Conn, q string) []int {
	t.Helper()
	rows, err := c.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (int, error) {
		var k int
		err := r.Scan(&k)
		return k, err
	})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// TestStreamSnapshotTooOld reads a cursor past the tablets' history
// retention (2 s here): its later pages would read versions GC may have
// removed, so the FETCH fails with PostgreSQL's "snapshot too old"
// (72000) rather than returning what is left, and the connection goes on
// after ROLLBACK.
func TestStreamSnapshotTooOld(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	const retention = 2 * time.Second
	c := servertest.NewClusterWith(t, 3, servertest.Options{YSQL: true, HistoryRetention: retention})
	conn := connect(t, waitYSQL(t, c, 0), "yugabyte")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, q := range []string{
		`CREATE TABLE old (k int PRIMARY KEY, v text)`,
		`INSERT INTO old SELECT g, 'v' || g FROM generate_series(1, 15000) g`,
		`BEGIN`,
		`DECLARE cur CURSOR FOR SELECT k, v FROM old`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	start := time.Now()
	if ks, _ := queryKV(t, conn, `FETCH 11000 FROM cur`); len(ks) != 11000 {
		t.Fatalf("first FETCH: %d rows", len(ks))
	}
	for time.Since(start) <= retention+500*time.Millisecond {
		time.Sleep(50 * time.Millisecond)
	}
	// The rows the stream holds already (the next page of each tablet)
	// may come; a page read now is too old.
	for i := 0; ; i++ {
		rows, err := conn.Query(ctx, `FETCH 1000 FROM cur`)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for rows.Next() {
			got++
		}
		err = rows.Err()
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			if pe.Code != "72000" || pe.Message != "snapshot too old" {
				t.Fatalf("FETCH: %s %s", pe.Code, pe.Message)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if got == 0 || i > 5 {
			t.Fatalf("FETCH %d: %d rows and no error: the old snapshot was read", i, got)
		}
	}
	if _, err := conn.Exec(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM old`).Scan(&n); err != nil || n != 15000 {
		t.Fatalf("after ROLLBACK: %d, %v", n, err)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// openSpillFiles counts the files of spilled operators this process (the
// in-process cluster) holds open: unlinked, so only /proc shows them.
func openSpillFiles(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink("/proc/self/fd/" + fd.Name())
		if err == nil && strings.Contains(target, "/tmp/sort-") && strings.HasSuffix(target, "(deleted)") {
			n++
		}
	}
	return n
}
