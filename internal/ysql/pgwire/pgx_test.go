package pgwire

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgproto3"
)

func pgxConnect(t *testing.T, ts *testServer, mod func(*pgx.ConnConfig)) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(ts.url())
	if err != nil {
		t.Fatal(err)
	}
	if mod != nil {
		mod(cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	t.Cleanup(cancel)
	return ctx
}

func TestPgxQueries(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	conn := pgxConnect(t, ts, nil)
	ctx := testCtx(t)

	// Query: pgx prepares (Parse/Describe/Sync), then Bind/Execute/Sync
	// asking for binary results.
	rows, err := conn.Query(ctx, "SELECT 4")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var i int32
		var s string
		if err := rows.Scan(&i, &s); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d %s", i, s))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if tag := rows.CommandTag().String(); tag != "SELECT 4" {
		t.Fatalf("tag %q", tag)
	}
	if want := []string{"0 row0", "1 row1", "2 row2", "3 row3"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q", got)
	}

	// Parameters in binary, results in binary.
	var i int32
	var s string
	if err := conn.QueryRow(ctx, "SELECT $1::int4, $2::text", 42, "hello").Scan(&i, &s); err != nil {
		t.Fatal(err)
	}
	if i != 42 || s != "hello" {
		t.Fatalf("echo gave %d %q", i, s)
	}
	// The same statement again comes from pgx's statement cache.
	if err := conn.QueryRow(ctx, "SELECT $1::int4, $2::text", -7, "").Scan(&i, &s); err != nil || i != -7 || s != "" {
		t.Fatalf("echo gave %d %q %v", i, s, err)
	}
	// Text results through the simple protocol, text parameters through
	// pgx's exec mode (no Describe).
	if err := conn.QueryRow(ctx, "SELECT 1", pgx.QueryExecModeSimpleProtocol).Scan(&i, &s); err != nil || i != 0 || s != "row0" {
		t.Fatalf("simple protocol: %d %q %v", i, s, err)
	}
	if err := conn.QueryRow(ctx, "SELECT $1::int4, $2::text", pgx.QueryExecModeExec, 9, "nine").Scan(&i, &s); err != nil || i != 9 || s != "nine" {
		t.Fatalf("exec mode: %d %q %v", i, s, err)
	}

	tag, err := conn.Exec(ctx, "BEGIN")
	if err != nil || tag.String() != "BEGIN" {
		t.Fatalf("Exec: %q %v", tag, err)
	}
	if st := conn.PgConn().TxStatus(); st != 'T' {
		t.Fatalf("tx status %c", st)
	}
	if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if st := conn.PgConn().TxStatus(); st != 'I' {
		t.Fatalf("tx status %c", st)
	}
}

func TestPgxBatch(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	conn := pgxConnect(t, ts, nil)
	ctx := testCtx(t)
	b := &pgx.Batch{}
	b.Queue("SELECT 2")
	b.Queue("SELECT $1::int4, $2::text", 1, "one")
	b.Queue("SELECT $1::int4, $2::text", 2, "two")
	b.Queue("SET application_name = batched")
	br := conn.SendBatch(ctx, b)
	rows, err := br.Query()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	if rows.Err() != nil || n != 2 {
		t.Fatalf("%d rows, %v", n, rows.Err())
	}
	for want := int32(1); want <= 2; want++ {
		var i int32
		var s string
		if err := br.QueryRow().Scan(&i, &s); err != nil || i != want {
			t.Fatalf("row %d: %d %q %v", want, i, s, err)
		}
	}
	if tag, err := br.Exec(); err != nil || tag.String() != "SET" {
		t.Fatalf("%q %v", tag, err)
	}
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}
	if v := conn.PgConn().ParameterStatus("application_name"); v != "batched" {
		t.Fatalf("application_name %q", v)
	}

	// A failing statement in a batch: pgx reports it and the connection
	// stays usable.
	b = &pgx.Batch{}
	b.Queue("SELECT 1")
	b.Queue("FAIL 23505")
	b.Queue("SELECT 1")
	err = conn.SendBatch(ctx, b).Close()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		t.Fatalf("batch error %v", err)
	}
	var one int32
	var s string
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one, &s); err != nil {
		t.Fatal(err)
	}
}

func TestPgxErrors(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	conn := pgxConnect(t, ts, nil)
	ctx := testCtx(t)
	_, err := conn.Exec(ctx, "FAIL 23505")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		t.Fatalf("error %T %v", err, err)
	}
	want := pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "23505", Message: "fake failure 23505",
		Detail: "the detail", Hint: "the hint", Position: 6, ConstraintName: "t_pkey", TableName: "t", ColumnName: "c"}
	if !reflect.DeepEqual(*pgErr, want) {
		t.Fatalf("got %+v\nwant %+v", *pgErr, want)
	}
	// A Prepare error (the extended protocol's Parse).
	_, err = conn.Exec(ctx, "BADSYNTAX here")
	if !errors.As(err, &pgErr) || pgErr.Code != "42601" || pgErr.Position != 1 {
		t.Fatalf("error %v", err)
	}
	if err := conn.Ping(ctx); err != nil {
		t.Fatalf("connection broken after errors: %v", err)
	}
}

func TestPgxNoticeAndTx(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	notices := make(chan string, 4)
	conn := pgxConnect(t, ts, func(c *pgx.ConnConfig) {
		c.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices <- n.Severity + " " + n.Message }
	})
	ctx := testCtx(t)
	if _, err := conn.Exec(ctx, "NOTICE hi there"); err != nil {
		t.Fatal(err)
	}
	if n := <-notices; n != "NOTICE hi there" {
		t.Fatalf("notice %q", n)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "FAIL 22012"); err == nil {
		t.Fatal("no error")
	}
	if st := conn.PgConn().TxStatus(); st != 'E' {
		t.Fatalf("tx status %c, want E", st)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if st := conn.PgConn().TxStatus(); st != 'I' {
		t.Fatalf("tx status %c, want I", st)
	}
}

func TestPgxCopyFrom(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	conn := pgxConnect(t, ts, nil)
	ctx := testCtx(t)
	const n = 100_000 // several 64 KiB CopyData messages
	src := pgx.CopyFromSlice(n, func(i int) ([]any, error) { return []any{int32(i), "value " + strconv.Itoa(i)}, nil })
	copied, err := conn.CopyFrom(ctx, pgx.Identifier{"t"}, []string{"a", "b"}, src)
	if err != nil {
		t.Fatal(err)
	}
	if copied != n {
		t.Fatalf("copied %d", copied)
	}
	rows := ts.eng.rows()
	if len(rows) != n {
		t.Fatalf("engine got %d rows", len(rows))
	}
	for _, i := range []int{0, 1, n / 2, n - 1} {
		if want := []string{strconv.Itoa(i), "value " + strconv.Itoa(i)}; !reflect.DeepEqual(rows[i], want) {
			t.Fatalf("row %d = %q, want %q", i, rows[i], want)
		}
	}
	// A source error makes pgx send CopyFail; the connection survives.
	boom := errors.New("source failed")
	_, err = conn.CopyFrom(ctx, pgx.Identifier{"t"}, []string{"a", "b"},
		pgx.CopyFromFunc(func() ([]any, error) { return nil, boom }))
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "57014" || pgErr.Message != "COPY from stdin failed: source failed" {
		t.Fatalf("CopyFrom error %v", err)
	}
	if err := conn.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestPgxCancelRequest(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	conn := pgxConnect(t, ts, func(c *pgx.ConnConfig) {
		c.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
			return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: ioTimeout}
		}
	})
	ctx, cancel := context.WithCancel(testCtx(t))
	errc := make(chan error, 1)
	go func() {
		_, err := conn.Exec(ctx, "SLEEP")
		errc <- err
	}()
	<-ts.eng.sleeping
	cancel()
	if cause := <-ts.eng.slept; cause != errCanceled {
		t.Fatalf("statement cancelled by %v", cause)
	}
	err := <-errc
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "57014" || pgErr.Message != "canceling statement due to user request" {
		t.Fatalf("error %v", err)
	}
	// The cancel ended only the statement.
	if err := conn.Ping(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

func TestCancelRequestNeedsTheKey(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	conn := pgxConnect(t, ts, nil)
	pc := conn.PgConn()
	errc := make(chan error, 1)
	go func() {
		_, err := pc.Exec(context.Background(), "SLEEP").ReadAll()
		errc <- err
	}()
	<-ts.eng.sleeping

	// A wrong key, then an unknown PID: the server handles each before it
	// closes the cancel connection, and neither cancels.
	for _, req := range []struct {
		pid uint32
		key []byte
	}{{pc.PID(), []byte{1, 2, 3, 4}}, {pc.PID() + 1000, pc.SecretKey()}} {
		c := ts.dial(t)
		c.send(&pgproto3.CancelRequest{ProcessID: req.pid, SecretKey: req.key})
		c.expectClosed()
	}
	select {
	case cause := <-ts.eng.slept:
		t.Fatalf("cancelled by %v", cause)
	default:
	}
	c := ts.dial(t)
	c.send(&pgproto3.CancelRequest{ProcessID: pc.PID(), SecretKey: pc.SecretKey()})
	c.expectClosed()
	if cause := <-ts.eng.slept; cause != errCanceled {
		t.Fatalf("cancelled by %v", cause)
	}
	var pgErr *pgconn.PgError
	if err := <-errc; !errors.As(err, &pgErr) || pgErr.Code != "57014" {
		t.Fatalf("error %v", err)
	}
}

func TestDisconnectCancelsStatement(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.connect(t)
	c.send(&pgproto3.Query{String: "SLEEP"})
	<-ts.eng.sleeping
	start := time.Now()
	c.nc.Close()
	if cause := <-ts.eng.slept; cause != errClientGone {
		t.Fatalf("statement cancelled by %v", cause)
	}
	t.Logf("statement cancelled %v after the client left", time.Since(start))
	waitFor(t, "session closed", func() bool { return ts.eng.open.Load() == 0 })
}

func TestReadAheadKeepsPipelinedMessages(t *testing.T) {
	ts := startServer(t, newFakeEngine(), func(c *Config) { c.watchDelay = time.Nanosecond })
	c := ts.connect(t)
	c.send(&pgproto3.Query{String: "STREAM"})
	c.until("DataRow")
	// STREAM now waits; what the client sends meanwhile is read ahead by
	// the disconnect watch and must be served afterwards, in order.
	c.send(&pgproto3.Parse{Query: "SELECT 1"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{},
		&pgproto3.Query{String: "SELECT 2"})
	waitFor(t, "read-ahead", func() bool { return ts.srv.readAhead.Load() > 0 })
	close(ts.eng.release)
	c.until("ReadyForQuery")
	equal(t, c.until("ReadyForQuery"), []string{"ParseComplete", "BindComplete", "DataRow 0|row0", "CommandComplete SELECT 1", "ReadyForQuery I"})
	equal(t, c.until("ReadyForQuery"), []string{"RowDescription i/23/0 s/25/0", "DataRow 0|row0", "DataRow 1|row1", "CommandComplete SELECT 2", "ReadyForQuery I"})
}

func TestPgxDeallocateAll(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	conn := pgxConnect(t, ts, nil)
	ctx := testCtx(t)
	var i int32
	var s string
	if err := conn.QueryRow(ctx, "SELECT $1::int4, $2::text", 1, "a").Scan(&i, &s); err != nil {
		t.Fatal(err)
	}
	// pgx forgets its statements and prepares the same names again: the
	// server must have dropped them too (or Parse fails with 42P05).
	if err := conn.DeallocateAll(ctx); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT $1::int4, $2::text", 2, "b").Scan(&i, &s); err != nil || i != 2 {
		t.Fatalf("after DeallocateAll: %d %v", i, err)
	}
}
