package logictest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shaledb/shaledb/internal/server/servertest"
	"github.com/shaledb/shaledb/internal/storage"
)

// TestObjectSizes loads a table with an index and checks the size
// functions against what the tablets report in their heartbeats: the
// table and its index get non-zero sizes (before any flush: the memtable
// counts), the totals add up, catalog relations are 0, an unknown oid is
// NULL, and bad names are PostgreSQL's errors. psql's \dt+ shows the size.
func TestObjectSizes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	// Memtables large enough that nothing flushes: the sizes come from
	// what the tablets wrote to the memtable, exactly (sstable sizes are
	// estimates from the LSM's metadata).
	c := servertest.NewClusterWith(t, 3, servertest.Options{YSQL: true,
		Engine: &storage.Options{CacheSize: 8 << 20, MemTableSize: 64 << 20}})
	addr := waitYSQL(t, c, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := connect(t, addr, "yugabyte")
	if _, err := admin.Exec(ctx, `CREATE DATABASE sizedb`); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, addr, "sizedb")
	for _, q := range []string{
		`CREATE TABLE big (id bigint PRIMARY KEY, name text, n int)`,
		`CREATE INDEX big_n ON big (n)`,
		`CREATE TABLE other (k int PRIMARY KEY)`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	const rows = 3000
	src := pgx.CopyFromSlice(rows, func(i int) ([]any, error) {
		return []any{int64(i), strings.Repeat("x", 50) + strconv.Itoa(i), int32(i % 100)}, nil
	})
	if n, err := conn.CopyFrom(ctx, pgx.Identifier{"big"}, []string{"id", "name", "n"}, src); err != nil || n != rows {
		t.Fatalf("CopyFrom: %d %v", n, err)
	}

	// Sizes reach the master with the leaders' next heartbeats: wait
	// until they are there and consistent with each other.
	type sizes struct{ table, indexes, total, rel, index, main, fsm, db, dbByOID, other int64 }
	var s sizes
	check := func() string {
		err := conn.QueryRow(ctx, `SELECT pg_table_size('big'), pg_indexes_size('big'), pg_total_relation_size('big'),
			pg_relation_size('big'), pg_relation_size('big_n'), pg_relation_size('big'::regclass, 'main'),
			pg_relation_size('big', 'fsm'), pg_database_size(current_database()),
			(SELECT pg_database_size(oid) FROM pg_database WHERE datname = 'sizedb'), pg_total_relation_size('other')`).
			Scan(&s.table, &s.indexes, &s.total, &s.rel, &s.index, &s.main, &s.fsm, &s.db, &s.dbByOID, &s.other)
		switch {
		case err != nil:
			t.Fatal(err)
		case s.table <= 0 || s.index <= 0:
			return "table or index without a size"
		case s.indexes != s.index:
			return "pg_indexes_size != the index's pg_relation_size"
		case s.total != s.table+s.indexes:
			return "pg_total_relation_size != pg_table_size + pg_indexes_size"
		case s.rel != s.table || s.main != s.table || s.fsm != 0:
			return "pg_relation_size (main fork) != pg_table_size, or fsm fork not 0"
		case s.db < s.total+s.other || s.dbByOID != s.db:
			return "pg_database_size below its tables' sizes, or by oid != by name"
		}
		return ""
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		why := check()
		if why == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sizes after 30s: %s: %+v", why, s)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Logf("sizes: %+v", s)

	// Relations without a storage table of their own: 0. An oid naming
	// nothing: NULL.
	for _, q := range []string{
		`SELECT pg_relation_size('pg_class')`, `SELECT pg_total_relation_size('pg_catalog.pg_class'::regclass)`,
		`SELECT pg_table_size('information_schema.tables')`, `SELECT pg_relation_size('big_pkey')`,
		`SELECT pg_indexes_size('big_n')`, `SELECT pg_relation_size('big_n', 'vm')`,
	} {
		var n int64
		if err := conn.QueryRow(ctx, q).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s: %d %v, want 0", q, n, err)
		}
	}
	for _, q := range []string{
		`SELECT pg_relation_size(999999::oid)`, `SELECT pg_table_size(999999)`, `SELECT pg_total_relation_size(999999::regclass)`,
		`SELECT pg_indexes_size(999999::oid)`, `SELECT pg_relation_size(NULL::regclass)`,
	} {
		var n *int64
		if err := conn.QueryRow(ctx, q).Scan(&n); err != nil || n != nil {
			t.Errorf("%s: %v %v, want NULL", q, n, err)
		}
	}
	for _, tc := range []struct{ q, code string }{
		{`SELECT pg_table_size('nosuch')`, "42P01"},
		{`SELECT pg_relation_size('big', 'bogus')`, "22023"},
		{`SELECT pg_database_size('nosuchdb')`, "3D000"},
		{`SELECT pg_database_size(999999::oid)`, "3D000"},
	} {
		var n int64
		err := conn.QueryRow(ctx, tc.q).Scan(&n)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != tc.code {
			t.Errorf("%s: %v, want SQLSTATE %s", tc.q, err, tc.code)
		}
	}

	// psql's \dt+ and \d+ call pg_table_size.
	out := psqlRun(t, addr, "sizedb", `\dt+ big`)
	if !strings.Contains(out, "big") || strings.Contains(out, "0 bytes") {
		t.Errorf("\\dt+ big:\n%s", out)
	}
	if out := psqlRun(t, addr, "sizedb", `\d+ big`, `\di+ big_n`, `\l+ sizedb`); !strings.Contains(out, "big_n") {
		t.Errorf("\\d+ big, \\di+ big_n, \\l+ sizedb:\n%s", out)
	}
}
