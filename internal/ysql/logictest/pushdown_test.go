package logictest

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shaledb/shaledb/internal/server/servertest"
)

// TestPushdownFigures loads a table (20,000 rows; 200,000 with SHALE_LONG=1)
// and runs filtered queries with the pushdown to the tablets on and off
// (yb_enable_expression_pushdown), through the extended protocol with
// parameters: it checks that both give the same rows and logs the time of
// each (the median of 3 runs). No timing is asserted.
func TestPushdownFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	rows := 20_000
	if os.Getenv("SHALE_LONG") != "" {
		rows = 200_000
	}
	c := servertest.NewClusterWith(t, 3, servertest.Options{YSQL: true})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	conn := connect(t, waitYSQL(t, c, 0), "yugabyte")
	if _, err := conn.Exec(ctx, `CREATE TABLE pdt (k int PRIMARY KEY, v int, s text, pad text)`); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("p", 100)
	src := pgx.CopyFromSlice(rows, func(i int) ([]any, error) {
		var v any = int32(i % 1000)
		if i%97 == 0 {
			v = nil
		}
		return []any{int32(i), v, "s" + strconv.Itoa(i%10), pad}, nil
	})
	start := time.Now()
	if n, err := conn.CopyFrom(ctx, pgx.Identifier{"pdt"}, []string{"k", "v", "s", "pad"}, src); err != nil || n != int64(rows) {
		t.Fatalf("CopyFrom: %d %v", n, err)
	}
	t.Logf("loaded %d rows in %v", rows, time.Since(start).Round(time.Millisecond))

	queries := []struct {
		sql  string
		args []any
	}{
		{`SELECT count(*) FROM pdt WHERE v > $1`, []any{989}},
		{`SELECT count(*), sum(v), min(s), max(k) FROM pdt WHERE v >= $1 AND s = $2`, []any{500, "s3"}},
		{`SELECT * FROM pdt WHERE v = $1`, []any{123}},
		{`SELECT k, v FROM pdt WHERE v IN ($1, $2) OR v IS NULL`, []any{7, 8}},
		{`SELECT k FROM pdt WHERE v > $1 LIMIT 10`, []any{10}},
		{`SELECT k FROM pdt WHERE v > $1 LIMIT $2 OFFSET $3`, []any{10, 10, 5}},
		{`SELECT k FROM pdt WHERE s = $1 AND v < $2`, []any{"s1", 3}},
		{`SELECT s, count(*), sum(v), min(k) FROM pdt WHERE v >= $1 GROUP BY s`, []any{100}},
		{`SELECT v, count(*), max(s) FROM pdt GROUP BY v`, nil},
	}
	// One run of q in the mode: its rows (sorted) and time.
	run := func(mode, q string, args []any) ([]string, time.Duration) {
		if _, err := conn.Exec(ctx, "SET yb_enable_expression_pushdown = "+mode); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		rs, err := conn.Query(ctx, q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var out []string
		for rs.Next() {
			vals, err := rs.Values()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprint(vals...))
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		d := time.Since(start)
		sort.Strings(out)
		return out, d
	}
	median := func(ds []time.Duration) time.Duration {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	for _, q := range queries {
		// Alternate the modes so that the load of the machine and the
		// state of the tablets (caches, compactions) weigh on both.
		var offs, ons []time.Duration
		var want, got []string
		for i := 0; i < 3; i++ {
			var d time.Duration
			want, d = run("off", q.sql, q.args)
			offs = append(offs, d)
			got, d = run("on", q.sql, q.args)
			ons = append(ons, d)
		}
		if strings.Contains(q.sql, "LIMIT") {
			// Any 10 qualifying rows will do: compare the counts (the
			// rows are checked below).
			if len(got) != len(want) {
				t.Fatalf("%s: %d rows with pushdown, %d without", q.sql, len(got), len(want))
			}
		} else if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: rows differ with pushdown:\n%v\nwithout:\n%v", q.sql, head(got), head(want))
		}
		off, on := median(offs), median(ons)
		t.Logf("%-75s %6d rows  pushdown off %8v  on %8v  (%.1fx)", q.sql, len(got),
			off.Round(time.Millisecond), on.Round(time.Millisecond), off.Seconds()/on.Seconds())
	}
	// The LIMIT query's rows qualify.
	var bad int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM (SELECT k FROM pdt WHERE v > 10 LIMIT 10) x WHERE k % 1000 <= 10 OR k % 97 = 0`).Scan(&bad); err != nil || bad != 0 {
		t.Fatalf("LIMIT rows that do not qualify: %d %v", bad, err)
	}
}

func head(rows []string) []string {
	if len(rows) > 5 {
		return rows[:5]
	}
	return rows
}
