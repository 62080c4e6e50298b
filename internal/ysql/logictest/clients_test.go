package logictest

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shaledb/shaledb/internal/server/servertest"
)

// TestClients drives YSQL with real clients: pgx over the extended
// protocol (binary results, parameters, prepared statements, batches) and
// psql over the simple protocol, against a 3-node cluster; DDL through one
// node is used through another.
func TestClients(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := servertest.NewClusterWith(t, 3, servertest.Options{YSQL: true})
	a0, a1 := waitYSQL(t, c, 0), waitYSQL(t, c, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn0 := connect(t, a0, "yugabyte")
	conn1 := connect(t, a1, "yugabyte")

	if _, err := conn0.Exec(ctx, `CREATE TABLE items (id bigint PRIMARY KEY, name text, price numeric(10,2), ok boolean, at timestamptz)`); err != nil {
		t.Fatal(err)
	}
	// Extended protocol with typed parameters, through the other node.
	at := time.Date(2026, 11, 23, 10, 30, 0, 0, time.UTC)
	for i := int64(1); i <= 20; i++ {
		if _, err := conn1.Exec(ctx, `INSERT INTO items VALUES ($1, $2, $3, $4, $5)`, i, "item"+strings.Repeat("x", int(i%3)), "12.50", i%2 == 0, at); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	var name string
	var ok bool
	var when time.Time
	if err := conn0.QueryRow(ctx, `SELECT name, ok, at FROM items WHERE id = $1`, int64(4)).Scan(&name, &ok, &when); err != nil {
		t.Fatal(err)
	}
	if name != "itemx" || !ok || !when.Equal(at) {
		t.Fatalf("row 4: %q %v %v", name, ok, when)
	}
	var n int64
	var total string
	if err := conn0.QueryRow(ctx, `SELECT count(*), sum(price)::text FROM items WHERE ok`).Scan(&n, &total); err != nil {
		t.Fatal(err)
	}
	if n != 10 || total != "125.00" {
		t.Fatalf("aggregate: %d %s", n, total)
	}
	// A batch pipelines several statements in one round trip.
	b := &pgx.Batch{}
	b.Queue(`UPDATE items SET price = price + 1 WHERE id = $1`, int64(1))
	b.Queue(`SELECT price::text FROM items WHERE id = $1`, int64(1))
	br := conn1.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		t.Fatal(err)
	}
	var price string
	if err := br.QueryRow().Scan(&price); err != nil || price != "13.50" {
		t.Fatalf("batch: %q %v", price, err)
	}
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}
	// Errors carry SQLSTATE and position; the connection stays usable.
	_, err := conn0.Exec(ctx, `SELECT nope FROM items`)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42703" || pe.Position != 8 {
		t.Fatalf("undefined column: %#v", err)
	}
	if _, err := conn0.Exec(ctx, `INSERT INTO items (id) VALUES ($1)`, "not a number"); err == nil {
		t.Fatal("a text parameter for a bigint column was accepted")
	}
	if err := conn0.QueryRow(ctx, `SELECT count(*) FROM items`).Scan(&n); err != nil || n != 20 {
		t.Fatalf("after errors: %d %v", n, err)
	}

	// COPY: pgx sends binary COPY data.
	if _, err := conn0.Exec(ctx, `CREATE TABLE bulk (id int PRIMARY KEY, payload text, at timestamptz)`); err != nil {
		t.Fatal(err)
	}
	src := make([][]any, 3000)
	for i := range src {
		src[i] = []any{int32(i), strings.Repeat("p", i%50), at}
	}
	copied, err := conn1.CopyFrom(ctx, pgx.Identifier{"bulk"}, []string{"id", "payload", "at"}, pgx.CopyFromRows(src))
	if err != nil || copied != 3000 {
		t.Fatalf("CopyFrom: %d %v", copied, err)
	}
	if err := conn0.QueryRow(ctx, `SELECT count(*) FROM bulk`).Scan(&n); err != nil || n != 3000 {
		t.Fatalf("rows after COPY: %d %v", n, err)
	}
	if _, err := conn1.CopyFrom(ctx, pgx.Identifier{"bulk"}, []string{"id", "payload", "at"}, pgx.CopyFromRows(src[:1])); !errors.As(err, &pe) || pe.Code != "23505" {
		t.Fatalf("COPY of a duplicate key: %v", err)
	}

	// psql, the simple protocol, several statements in one -c.
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Fatal("psql not found: `make test` installs postgresql-client")
	}
	host, port, _ := net.SplitHostPort(a1)
	out, err := exec.CommandContext(ctx, psql, "-h", host, "-p", port, "-U", "yugabyte", "-d", "yugabyte", "-X", "-A", "-t",
		"-c", "INSERT INTO items (id, name) VALUES (100, 'from psql'); SELECT name FROM items WHERE id = 100;").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "INSERT 0 1\nfrom psql" && strings.TrimSpace(string(out)) != "from psql" {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	out, _ = exec.CommandContext(ctx, psql, "-h", host, "-p", port, "-U", "yugabyte", "-d", "yugabyte", "-X",
		"-c", "SELECT * FROM items WHERE", "-v", "ON_ERROR_STOP=1").CombinedOutput()
	if !strings.Contains(string(out), "syntax error at end of input") {
		t.Fatalf("psql syntax error: %s", out)
	}
	// psql's \copy streams a CSV file through COPY FROM STDIN.
	csv := t.TempDir() + "/rows.csv"
	if err := os.WriteFile(csv, []byte("id,payload,at\n5000,\"a, quoted\",2026-01-02 03:04:05+00\n5001,,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = exec.CommandContext(ctx, psql, "-h", host, "-p", port, "-U", "yugabyte", "-d", "yugabyte", "-X", "-v", "ON_ERROR_STOP=1",
		"-c", `\copy bulk FROM '`+csv+`' WITH (FORMAT csv, HEADER true)`).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "COPY 2") {
		t.Fatalf("psql \\copy: %v\n%s", err, out)
	}
	var payload string
	var nullAt *time.Time
	if err := conn0.QueryRow(ctx, `SELECT payload, at FROM bulk WHERE id = 5000`).Scan(&payload, &nullAt); err != nil || payload != "a, quoted" || nullAt == nil {
		t.Fatalf("csv row: %q %v %v", payload, nullAt, err)
	}
	if err := conn0.QueryRow(ctx, `SELECT payload, at FROM bulk WHERE id = 5001`).Scan(&payload, &nullAt); err == nil {
		t.Fatal("NULL payload scanned into a string")
	}
}
