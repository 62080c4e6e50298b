package logictest

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/server/servertest"
)

// TestOrderedLimitReads checks with EXPLAIN ANALYZE's row counts that a
// LIMIT over an ordered scan (primary key forward and backward, across
// tablets; an index scan and its base rows) reads only the rows it
// returns, and that without the pushdown the same queries read every
// row (so the counts measure the reads).
func TestOrderedLimitReads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := servertest.NewClusterWith(t, 3, servertest.Options{YSQL: true})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn := connect(t, waitYSQL(t, c, 0), "yugabyte")
	for _, sql := range []string{
		`CREATE TABLE ol (a int, b int, v int, s text, PRIMARY KEY (a ASC, b DESC)) SPLIT AT VALUES ((3), (6))`,
		`INSERT INTO ol SELECT g / 100, g % 100, g % 37, 's' || g FROM generate_series(0, 999) g`,
		`CREATE INDEX ol_v ON ol (v DESC)`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// reads runs EXPLAIN ANALYZE and returns the rows the scan read from
	// the index and the table (-1: not shown) and the rows returned.
	reads := func(q string) (index, table, rows int) {
		t.Helper()
		rs, err := conn.Query(ctx, "EXPLAIN ANALYZE "+q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var lines []string
		for rs.Next() {
			var l string
			if err := rs.Scan(&l); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, l)
		}
		if err := rs.Err(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		index, table, rows = -1, -1, -1
		re := regexp.MustCompile(`^\s*(Storage Index Rows Read|Storage Table Rows Read|Rows): (\d+)$`)
		for _, l := range lines {
			m := re.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			n, _ := strconv.Atoi(m[2])
			switch m[1] {
			case "Storage Index Rows Read":
				index = n
			case "Storage Table Rows Read":
				table = n
			default:
				rows = n
			}
		}
		t.Logf("%s\n%s", q, strings.Join(lines, "\n"))
		return index, table, rows
	}
	cases := []struct {
		q                  string
		index, table, rows int
		offIndex, offTable int // with the pushdown off
	}{
		// Backward over three tablets, from the last one.
		{q: `SELECT * FROM ol ORDER BY a DESC, b LIMIT 10`, index: -1, table: 10, rows: 10, offIndex: -1, offTable: 1000},
		// Forward, OFFSET included in what is read.
		{q: `SELECT a, b FROM ol ORDER BY a, b DESC LIMIT 5 OFFSET 195`, index: -1, table: 200, rows: 5, offIndex: -1, offTable: 1000},
		// Equality prefix, ORDER BY the next key column (backward).
		{q: `SELECT * FROM ol WHERE a = 4 ORDER BY b LIMIT 5`, index: -1, table: 5, rows: 5, offIndex: -1, offTable: 100},
		// An index scan: 7 index rows, then 7 table rows.
		{q: `SELECT a, b, s FROM ol WHERE v < 30 ORDER BY v DESC LIMIT 7`, index: 7, table: 7, rows: 7, offIndex: 1000 * 30 / 37, offTable: 1000 * 30 / 37},
		// A filter the tablets cannot evaluate (LIKE): the scan stops in
		// the page that brings the third row passing it, (0, 77), the
		// 23rd in key order; pages of 3, 6, 12 and 24 rows.
		{q: `SELECT a, b FROM ol WHERE s LIKE '%7' LIMIT 3`, index: -1, table: 45, rows: 3, offIndex: -1, offTable: 1000},
		// An index-only scan, backward: NULLS FIRST is what it gives.
		{q: `SELECT v FROM ol ORDER BY v NULLS FIRST LIMIT 3`, index: 3, table: -1, rows: 3, offIndex: 1000, offTable: -1},
	}
	for _, tc := range cases {
		if i, tb, n := reads(tc.q); i != tc.index || tb != tc.table || n != tc.rows {
			t.Errorf("%s: read %d index rows, %d table rows, returned %d; want %d, %d, %d", tc.q, i, tb, n, tc.index, tc.table, tc.rows)
		}
	}
	// SKIP LOCKED: a row locked by another transaction is skipped and the
	// next one returned, so the limit must not stop the scan before it.
	other := connect(t, waitYSQL(t, c, 1), "yugabyte")
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT * FROM ol WHERE a = 9 AND b IN (0, 99) FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		q    string
		a, b int
	}{
		{`SELECT a, b FROM ol ORDER BY a DESC, b LIMIT 1 FOR UPDATE SKIP LOCKED`, 9, 1},
		// Through ol_v backward: v = 0 first (g = 999, 962, ...).
		{`SELECT a, b FROM ol ORDER BY v NULLS FIRST, a DESC, b DESC LIMIT 1 FOR UPDATE SKIP LOCKED`, 9, 62},
	} {
		var a, b int
		if err := conn.QueryRow(ctx, tc.q).Scan(&a, &b); err != nil || a != tc.a || b != tc.b {
			t.Errorf("%s: (%d, %d) %v; want (%d, %d)", tc.q, a, b, err, tc.a, tc.b)
		}
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SET yb_enable_expression_pushdown = off"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		if i, tb, n := reads(tc.q); i < tc.offIndex || tb < tc.offTable || n != tc.rows {
			t.Errorf("pushdown off: %s: read %d index rows, %d table rows, returned %d; want at least %d, %d, and %d", tc.q, i, tb, n, tc.offIndex, tc.offTable, tc.rows)
		}
	}
}
