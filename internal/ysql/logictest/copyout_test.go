package logictest

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shaledb/shaledb/internal/server/servertest"
)

// TestCopyOut: COPY ... TO STDOUT in text and CSV, of a table and of a
// query, as pgx and psql's \copy read it: PostgreSQL's escaping and
// quoting, NULLs, the header, the "COPY n" tag; the text output loads back
// through COPY FROM STDIN unchanged; an error part way ends the copy and
// the connection goes on; files and programs are refused.
func TestCopyOut(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := servertest.NewClusterWith(t, 3, servertest.Options{YSQL: true})
	addr := waitYSQL(t, c, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := connect(t, addr, "yugabyte")
	for _, q := range []string{
		`CREATE TABLE src (k int PRIMARY KEY, s text, n numeric(6,2), b boolean)`,
		`INSERT INTO src VALUES (1, 'plain', 1.50, true), (2, E'tab\there\nnew line', NULL, false),
			(3, E'back\\slash, "quoted"', -2.00, NULL), (4, '', 0, true), (5, NULL, 3.25, false)`,
		`CREATE TABLE dst (k int PRIMARY KEY, s text, n numeric(6,2), b boolean)`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	copyTo := func(sql string) (string, string) {
		t.Helper()
		var buf bytes.Buffer
		tag, err := conn.PgConn().CopyTo(ctx, &buf, sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return buf.String(), tag.String()
	}

	text, tag := copyTo(`COPY (SELECT * FROM src ORDER BY k) TO STDOUT`)
	wantText := "1\tplain\t1.50\tt\n" +
		"2\ttab\\there\\nnew line\t\\N\tf\n" +
		"3\tback\\\\slash, \"quoted\"\t-2.00\t\\N\n" +
		"4\t\t0.00\tt\n" +
		"5\t\\N\t3.25\tf\n"
	if text != wantText || tag != "COPY 5" {
		t.Fatalf("text COPY (%s):\n%q\nwant\n%q", tag, text, wantText)
	}
	csv, _ := copyTo(`COPY (SELECT k, s, n FROM src ORDER BY k) TO STDOUT WITH (FORMAT csv, HEADER true)`)
	wantCSV := "k,s,n\n" +
		"1,plain,1.50\n" +
		"2,\"tab\there\nnew line\",\n" +
		"3,\"back\\slash, \"\"quoted\"\"\",-2.00\n" +
		"4,\"\",0.00\n" +
		"5,,3.25\n"
	if csv != wantCSV {
		t.Fatalf("csv COPY:\n%q\nwant\n%q", csv, wantCSV)
	}
	// A table with a column list, in the table's order of rows.
	cols, tag := copyTo(`COPY src (b, k) TO STDOUT WITH (DELIMITER '|', NULL 'null')`)
	if tag != "COPY 5" || strings.Count(cols, "\n") != 5 || !strings.Contains(cols, "null|3\n") || !strings.Contains(cols, "t|1\n") {
		t.Fatalf("COPY src (b, k) (%s):\n%s", tag, cols)
	}
	// The text output loads back unchanged.
	all, _ := copyTo(`COPY src TO STDOUT`)
	if _, err := conn.PgConn().CopyFrom(ctx, strings.NewReader(all), `COPY dst FROM STDIN`); err != nil {
		t.Fatal(err)
	}
	var diff int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM (SELECT * FROM src EXCEPT SELECT * FROM dst) d`).Scan(&diff); err != nil || diff != 0 {
		t.Fatalf("rows differing after the round trip: %d %v", diff, err)
	}

	// An error part way (row 3 divides by zero) ends the copy; the
	// connection goes on.
	var buf bytes.Buffer
	_, err := conn.PgConn().CopyTo(ctx, &buf, `COPY (SELECT 10 / (3 - k) FROM src ORDER BY k) TO STDOUT`)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "22012" {
		t.Fatalf("division by zero in COPY: %v", err)
	}
	for _, c := range []struct{ sql, code string }{
		{`COPY src TO '/tmp/src.txt'`, "42501"},
		{`COPY src TO PROGRAM 'cat'`, "42501"},
		{`COPY nope TO STDOUT`, "42P01"},
		{`COPY src TO STDOUT WITH (FORMAT binary)`, "0A000"},
		{`COPY (DELETE FROM src RETURNING k) TO STDOUT`, "0A000"},
	} {
		_, err := conn.PgConn().CopyTo(ctx, &buf, c.sql)
		if !errors.As(err, &pgErr) || pgErr.Code != c.code {
			t.Fatalf("%s: %v, want %s", c.sql, err, c.code)
		}
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM src`).Scan(&n); err != nil || n != 5 {
		t.Fatalf("after the errors: %d %v", n, err)
	}

	// psql's \copy ... to a file.
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Fatal("psql not found: `make test` installs postgresql-client")
	}
	host, port, _ := net.SplitHostPort(addr)
	file := t.TempDir() + "/out.csv"
	out, err := exec.CommandContext(ctx, psql, "-h", host, "-p", port, "-U", "yugabyte", "-d", "yugabyte", "-X", "-v", "ON_ERROR_STOP=1",
		"-c", `\copy (SELECT k, s, n FROM src ORDER BY k) TO '`+file+`' WITH (FORMAT csv, HEADER true)`).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "COPY 5") {
		t.Fatalf("psql \\copy to: %v\n%s", err, out)
	}
	if got, err := os.ReadFile(file); err != nil || string(got) != wantCSV {
		t.Fatalf("psql's file:\n%q (%v)\nwant\n%q", got, err, wantCSV)
	}
}
