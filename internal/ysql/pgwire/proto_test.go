package pgwire

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

func TestStartup(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.dial(t)
	c.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters: map[string]string{"user": "tester", "database": "db", "application_name": "app1"}})
	got := c.until("ReadyForQuery")
	equal(t, got, []string{
		"AuthenticationOk",
		"ParameterStatus DateStyle=ISO, MDY",
		"ParameterStatus TimeZone=UTC",
		"ParameterStatus application_name=app1",
		"ParameterStatus client_encoding=UTF8",
		"ParameterStatus integer_datetimes=on",
		"ParameterStatus server_encoding=UTF8",
		"ParameterStatus server_version=15.2-shale",
		"ParameterStatus standard_conforming_strings=on",
		"BackendKeyData",
		"ReadyForQuery I",
	})
	ts.eng.mu.Lock()
	user := ts.eng.startup["user"]
	ts.eng.mu.Unlock()
	if user != "tester" {
		t.Fatalf("engine got user %q", user)
	}
	// Two connections get different PIDs, and the engine sees them.
	ts.connect(t)
	a, b := <-ts.eng.infos, <-ts.eng.infos
	if a.BackendPID == b.BackendPID || a.BackendPID == 0 || !strings.HasPrefix(a.RemoteAddr, "127.0.0.1:") {
		t.Fatalf("conn infos %+v %+v", a, b)
	}
}

func TestSSLAndGSSRequestDeclined(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	for _, req := range []pgproto3.FrontendMessage{&pgproto3.SSLRequest{}, &pgproto3.GSSEncRequest{}} {
		c := ts.dial(t)
		c.send(req)
		c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
		b := make([]byte, 1)
		if _, err := io.ReadFull(c.nc, b); err != nil || b[0] != 'N' {
			t.Fatalf("%T: got %q, %v; want N", req, b, err)
		}
		c.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
			Parameters: map[string]string{"user": "tester"}})
		c.until("ReadyForQuery")
		equal(t, c.query("SELECT 1"), []string{"RowDescription i/23/0 s/25/0", "DataRow 0|row0", "CommandComplete SELECT 1", "ReadyForQuery I"})
	}
}

func TestUnsupportedProtocolVersion(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.dial(t)
	c.send(&pgproto3.StartupMessage{ProtocolVersion: 2 << 16, Parameters: map[string]string{"user": "tester"}})
	equal(t, []string{c.recv()}, []string{"ErrorResponse FATAL 0A000 unsupported frontend protocol 2.0: server supports 3.0 to 3.0"})
	c.expectClosed()
	if n := ts.eng.open.Load(); n != 0 {
		t.Fatalf("%d sessions opened", n)
	}
}

func TestProtocol32NegotiatedDown(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.dial(t)
	c.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion32,
		Parameters: map[string]string{"user": "tester", "_pq_.future": "1"}})
	got := withoutParams(c.until("ReadyForQuery"))
	equal(t, got, []string{"NegotiateProtocolVersion 0 [_pq_.future]", "AuthenticationOk", "BackendKeyData", "ReadyForQuery I"})
	ts.eng.mu.Lock()
	_, leaked := ts.eng.startup["_pq_.future"]
	ts.eng.mu.Unlock()
	if leaked {
		t.Fatal("protocol option passed to the engine as a parameter")
	}
}

func TestBadStartupPacket(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.dial(t)
	// A length beyond PostgreSQL's startup packet limit.
	c.nc.Write(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 20000), pgproto3.ProtocolVersion30))
	got := c.recv()
	if !strings.HasPrefix(got, "ErrorResponse FATAL 08P01 invalid startup packet") {
		t.Fatalf("got %s", got)
	}
	c.expectClosed()
}

func TestStartupTimeout(t *testing.T) {
	ts := startServer(t, newFakeEngine(), func(c *Config) { c.StartupTimeout = 50 * time.Millisecond })
	c := ts.dial(t)
	c.expectClosed() // without a startup message the server hangs up
}

func TestNewSessionError(t *testing.T) {
	eng := newFakeEngine()
	eng.newErr = pgerror.New(pgerror.CodeInvalidCatalogName, `database "nope" does not exist`)
	ts := startServer(t, eng, nil)
	c := ts.dial(t)
	c.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "x"}})
	equal(t, c.until("ErrorResponse"), []string{"AuthenticationOk", `ErrorResponse FATAL 3D000 database "nope" does not exist`})
	c.expectClosed()
}

func TestMaxConnections(t *testing.T) {
	ts := startServer(t, newFakeEngine(), func(c *Config) { c.MaxConnections = 1 })
	first := ts.connect(t)
	c := ts.dial(t)
	c.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "x"}})
	equal(t, []string{c.recv()}, []string{"ErrorResponse FATAL 53300 sorry, too many clients already"})
	c.expectClosed()
	// The slot frees when the first connection ends.
	first.send(&pgproto3.Terminate{})
	first.expectClosed()
	deadline := time.Now().Add(ioTimeout)
	for {
		c := ts.dial(t)
		c.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "x"}})
		if c.recv() == "AuthenticationOk" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("slot never freed")
		}
	}
}

func TestSimpleQuery(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.connect(t)
	equal(t, c.query("SELECT 2; SELECT 0;"), []string{
		"RowDescription i/23/0 s/25/0", "DataRow 0|row0", "DataRow 1|row1", "CommandComplete SELECT 2",
		"RowDescription i/23/0 s/25/0", "CommandComplete SELECT 0",
		"ReadyForQuery I",
	})
	// An error skips the rest of the query; one ReadyForQuery ends it.
	equal(t, c.query("SELECT 1; FAIL 22012; SELECT 1"), []string{
		"RowDescription i/23/0 s/25/0", "DataRow 0|row0", "CommandComplete SELECT 1",
		"ErrorResponse ERROR 22012 fake failure 22012",
		"ReadyForQuery I",
	})
	if failed, _ := ts.eng.lastSync.Load().(bool); !failed {
		t.Fatal("Sync after a failed simple query was not told it failed")
	}
	equal(t, c.query(" ; "), []string{"EmptyQueryResponse", "ReadyForQuery I"})
	equal(t, c.query("SPLITFAIL"), []string{"ErrorResponse ERROR 42601 unterminated quoted string", "ReadyForQuery I"})
	equal(t, c.query("BADSYNTAX"), []string{`ErrorResponse ERROR 42601 syntax error at or near "BADSYNTAX"`, "ReadyForQuery I"})
	// Transaction status follows the session.
	equal(t, c.query("BEGIN"), []string{"CommandComplete BEGIN", "ReadyForQuery T"})
	equal(t, c.query("FAIL 23505"), []string{"ErrorResponse ERROR 23505 fake failure 23505", "ReadyForQuery E"})
	equal(t, c.query("SELECT 1"), []string{"ErrorResponse ERROR 25P02 current transaction is aborted, commands ignored until end of transaction block", "ReadyForQuery E"})
	equal(t, c.query("ROLLBACK"), []string{"CommandComplete ROLLBACK", "ReadyForQuery I"})
	if failed, _ := ts.eng.lastSync.Load().(bool); failed {
		t.Fatal("Sync after a good simple query was told it failed")
	}
}

func TestNoticesAndParameterStatus(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.connect(t)
	equal(t, c.query("NOTICE hello; SET application_name = 'newapp'; SET application_name = 'newapp'"), []string{
		"CommandComplete DO", "NoticeResponse NOTICE hello",
		"CommandComplete SET", "ParameterStatus application_name=newapp",
		"CommandComplete SET", // unchanged: not reported again
		"ReadyForQuery I",
	})
	// Extended protocol too.
	c.send(&pgproto3.Parse{Query: "NOTICE again"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	equal(t, c.until("ReadyForQuery"), []string{"ParseComplete", "BindComplete", "NoticeResponse NOTICE again", "CommandComplete DO", "ReadyForQuery I"})
}

func TestExtendedMaxRowsAndSuspend(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.connect(t)
	c.send(
		&pgproto3.Parse{Name: "s5", Query: "SELECT 5"},
		&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s5", ResultFormatCodes: []int16{1, 0}},
		&pgproto3.Execute{Portal: "p", MaxRows: 2},
		&pgproto3.Execute{Portal: "p", MaxRows: 2},
		&pgproto3.Sync{},
	)
	equal(t, c.until("ReadyForQuery"), []string{
		"ParseComplete", "BindComplete",
		"DataRow 0x00000000|row0", "DataRow 0x00000001|row1", "PortalSuspended",
		"DataRow 0x00000002|row2", "DataRow 0x00000003|row3", "PortalSuspended",
		"ReadyForQuery I",
	})
	// Idle after Sync: the named portal was closed with its transaction.
	c.send(&pgproto3.Execute{Portal: "p"}, &pgproto3.Sync{})
	equal(t, c.until("ReadyForQuery"), []string{`ErrorResponse ERROR 34000 portal "p" does not exist`, "ReadyForQuery I"})

	// Inside a transaction block the portal survives Sync and resumes.
	c.send(
		&pgproto3.Parse{Query: "BEGIN"}, &pgproto3.Bind{}, &pgproto3.Execute{},
		&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s5"},
		&pgproto3.Execute{Portal: "p", MaxRows: 3},
		&pgproto3.Sync{},
	)
	equal(t, c.until("ReadyForQuery"), []string{
		"ParseComplete", "BindComplete", "CommandComplete BEGIN", "BindComplete",
		"DataRow 0|row0", "DataRow 1|row1", "DataRow 2|row2", "PortalSuspended", "ReadyForQuery T",
	})
	c.send(&pgproto3.Execute{Portal: "p", MaxRows: 3}, &pgproto3.Sync{})
	equal(t, c.until("ReadyForQuery"), []string{"DataRow 3|row3", "DataRow 4|row4", "CommandComplete SELECT 2", "ReadyForQuery T"})
	equal(t, c.query("COMMIT"), []string{"CommandComplete COMMIT", "ReadyForQuery I"})
}

func TestExtendedErrorSkipsToSync(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.connect(t)
	syncs := ts.eng.syncs.Load()
	c.send(
		&pgproto3.Parse{Query: "FAIL 40001"}, &pgproto3.Bind{}, &pgproto3.Execute{},
		// All skipped, Flush included:
		&pgproto3.Parse{Name: "x", Query: "SELECT 1"}, &pgproto3.Bind{PreparedStatement: "x"},
		&pgproto3.Describe{ObjectType: 'P'}, &pgproto3.Execute{}, &pgproto3.Flush{},
		&pgproto3.Query{String: "SELECT 1"},
		&pgproto3.Sync{},
	)
	equal(t, c.until("ReadyForQuery"), []string{"ParseComplete", "BindComplete", "ErrorResponse ERROR 40001 fake failure 40001", "ReadyForQuery I"})
	if got := ts.eng.syncs.Load() - syncs; got != 1 {
		t.Fatalf("%d Session.Sync calls, want 1", got)
	}
	if failed, _ := ts.eng.lastSync.Load().(bool); !failed {
		t.Fatal("Session.Sync not told the batch failed")
	}
	// The skipped Parse did not create "x"; after Sync all works again.
	c.send(&pgproto3.Bind{PreparedStatement: "x"}, &pgproto3.Sync{})
	equal(t, c.until("ReadyForQuery"), []string{`ErrorResponse ERROR 26000 prepared statement "x" does not exist`, "ReadyForQuery I"})
	c.send(&pgproto3.Parse{Query: "SELECT 1"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	equal(t, c.until("ReadyForQuery"), []string{"ParseComplete", "BindComplete", "DataRow 0|row0", "CommandComplete SELECT 1", "ReadyForQuery I"})
}

func TestDescribe(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.connect(t)
	c.send(
		&pgproto3.Parse{Name: "echo", Query: "SELECT $1::int4, $2::text"},
		&pgproto3.Describe{ObjectType: 'S', Name: "echo"},
		&pgproto3.Bind{DestinationPortal: "bin", PreparedStatement: "echo",
			ParameterFormatCodes: []int16{0}, Parameters: [][]byte{[]byte("7"), []byte("seven")}, ResultFormatCodes: []int16{1}},
		&pgproto3.Describe{ObjectType: 'P', Name: "bin"},
		&pgproto3.Execute{Portal: "bin"},
		&pgproto3.Parse{Name: "begin", Query: "BEGIN"},
		&pgproto3.Describe{ObjectType: 'S', Name: "begin"},
		&pgproto3.Bind{PreparedStatement: "begin"},
		&pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Describe{ObjectType: 'S', Name: "missing"},
		&pgproto3.Sync{},
	)
	equal(t, c.until("ReadyForQuery"), []string{
		"ParseComplete",
		"ParameterDescription [23 25]", "RowDescription i/23/0 s/25/0",
		"BindComplete",
		"RowDescription i/23/1 s/25/1",
		"DataRow 0x00000007|seven", "CommandComplete SELECT 1",
		"ParseComplete", "ParameterDescription []", "NoData",
		"BindComplete", "NoData",
		`ErrorResponse ERROR 26000 prepared statement "missing" does not exist`,
		"ReadyForQuery I",
	})
	c.send(&pgproto3.Describe{ObjectType: 'P', Name: "nope"}, &pgproto3.Sync{})
	equal(t, c.until("ReadyForQuery"), []string{`ErrorResponse ERROR 34000 portal "nope" does not exist`, "ReadyForQuery I"})
}

func TestBindChecks(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.connect(t)
	c.send(&pgproto3.Parse{Name: "echo", Query: "SELECT $1::int4, $2::text"}, &pgproto3.Sync{})
	c.until("ReadyForQuery")
	for _, tc := range []struct {
		bind *pgproto3.Bind
		want string
	}{
		{&pgproto3.Bind{PreparedStatement: "echo", Parameters: [][]byte{[]byte("1")}},
			`ErrorResponse ERROR 08P01 bind message supplies 1 parameters, but prepared statement "echo" requires 2`},
		{&pgproto3.Bind{PreparedStatement: "echo", ParameterFormatCodes: []int16{0, 0, 0}, Parameters: [][]byte{[]byte("1"), nil}},
			"ErrorResponse ERROR 08P01 bind message has 3 parameter formats but 2 parameters"},
		{&pgproto3.Bind{PreparedStatement: "echo", Parameters: [][]byte{[]byte("1"), nil}, ResultFormatCodes: []int16{0, 0, 0}},
			"ErrorResponse ERROR 08P01 bind message has 3 result formats but query has 2 columns"},
		{&pgproto3.Bind{PreparedStatement: "echo", Parameters: [][]byte{[]byte("1"), nil}, ResultFormatCodes: []int16{2}},
			"ErrorResponse ERROR 22023 unsupported format code: 2"},
		{&pgproto3.Bind{PreparedStatement: ""}, "ErrorResponse ERROR 26000 unnamed prepared statement does not exist"},
	} {
		c.send(tc.bind, &pgproto3.Sync{})
		equal(t, c.until("ReadyForQuery"), []string{tc.want, "ReadyForQuery I"})
	}
	// NULL and empty parameters stay distinct through the copy.
	c.send(&pgproto3.Bind{PreparedStatement: "echo", Parameters: [][]byte{[]byte("1"), {}}}, &pgproto3.Execute{},
		&pgproto3.Bind{PreparedStatement: "echo", Parameters: [][]byte{[]byte("2"), nil}}, &pgproto3.Execute{}, &pgproto3.Sync{})
	equal(t, c.until("ReadyForQuery"), []string{"BindComplete", "DataRow 1|", "CommandComplete SELECT 1",
		"BindComplete", "DataRow 2|NULL", "CommandComplete SELECT 1", "ReadyForQuery I"})
	// A duplicate named portal.
	c.send(&pgproto3.Parse{Query: "BEGIN"}, &pgproto3.Bind{}, &pgproto3.Execute{},
		&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "echo", Parameters: [][]byte{[]byte("1"), nil}},
		&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "echo", Parameters: [][]byte{[]byte("1"), nil}},
		&pgproto3.Sync{})
	equal(t, c.until("ReadyForQuery"), []string{"ParseComplete", "BindComplete", "CommandComplete BEGIN", "BindComplete",
		`ErrorResponse ERROR 42P03 cursor "p" already exists`, "ReadyForQuery T"})
}

func TestDuplicateAndUnnamedStatements(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.connect(t)
	c.send(&pgproto3.Parse{Name: "a", Query: "SELECT 1"}, &pgproto3.Parse{Name: "a", Query: "SELECT 2"}, &pgproto3.Sync{})
	equal(t, c.until("ReadyForQuery"), []string{"ParseComplete", `ErrorResponse ERROR 42P05 prepared statement "a" already exists`, "ReadyForQuery I"})
	// "a" still runs its first text.
	c.send(&pgproto3.Bind{PreparedStatement: "a"}, &pgproto3.Execute{}, &pgproto3.Sync{})
	equal(t, c.until("ReadyForQuery"), []string{"BindComplete", "DataRow 0|row0", "CommandComplete SELECT 1", "ReadyForQuery I"})
	// Re-parsing the unnamed statement replaces it.
	c.send(&pgproto3.Parse{Query: "SELECT 1"}, &pgproto3.Parse{Query: "SELECT 2"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	equal(t, c.until("ReadyForQuery"), []string{"ParseComplete", "ParseComplete", "BindComplete",
		"DataRow 0|row0", "DataRow 1|row1", "CommandComplete SELECT 2", "ReadyForQuery I"})
	// A simple query drops the unnamed statement.
	c.query("SELECT 0")
	c.send(&pgproto3.Bind{}, &pgproto3.Sync{})
	equal(t, c.until("ReadyForQuery"), []string{"ErrorResponse ERROR 26000 unnamed prepared statement does not exist", "ReadyForQuery I"})
}

func TestDiscardAll(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.connect(t)
	c.send(&pgproto3.Parse{Name: "s", Query: "SELECT 1"}, &pgproto3.Parse{Query: "SELECT 2"},
		&pgproto3.Parse{Name: "d", Query: "DISCARD ALL"}, &pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "d"},
		&pgproto3.Execute{Portal: "p"}, &pgproto3.Sync{})
	equal(t, c.until("ReadyForQuery"), []string{"ParseComplete", "ParseComplete", "ParseComplete", "BindComplete", "CommandComplete DISCARD ALL", "ReadyForQuery I"})
	// Named statements are gone; the unnamed one stays, as in PostgreSQL.
	c.send(&pgproto3.Bind{PreparedStatement: "s"}, &pgproto3.Sync{})
	equal(t, c.until("ReadyForQuery"), []string{`ErrorResponse ERROR 26000 prepared statement "s" does not exist`, "ReadyForQuery I"})
	c.send(&pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	equal(t, c.until("ReadyForQuery"), []string{"BindComplete", "DataRow 0|row0", "DataRow 1|row1", "CommandComplete SELECT 2", "ReadyForQuery I"})
}

func TestClose(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.connect(t)
	c.send(
		&pgproto3.Parse{Name: "s", Query: "SELECT 3"},
		&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s"},
		&pgproto3.Close{ObjectType: 'P', Name: "p"},
		&pgproto3.Close{ObjectType: 'P', Name: "never"},
		&pgproto3.Close{ObjectType: 'S', Name: "s"},
		&pgproto3.Close{ObjectType: 'S', Name: "s"},
		&pgproto3.Execute{Portal: "p"},
		&pgproto3.Sync{},
	)
	equal(t, c.until("ReadyForQuery"), []string{"ParseComplete", "BindComplete",
		"CloseComplete", "CloseComplete", "CloseComplete", "CloseComplete",
		`ErrorResponse ERROR 34000 portal "p" does not exist`, "ReadyForQuery I"})
	c.send(&pgproto3.Bind{PreparedStatement: "s"}, &pgproto3.Sync{})
	equal(t, c.until("ReadyForQuery"), []string{`ErrorResponse ERROR 26000 prepared statement "s" does not exist`, "ReadyForQuery I"})
	// The name is free again.
	c.send(&pgproto3.Parse{Name: "s", Query: "SELECT 1"}, &pgproto3.Sync{})
	equal(t, c.until("ReadyForQuery"), []string{"ParseComplete", "ReadyForQuery I"})
}

func TestFlush(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.connect(t)
	// Without Flush nothing is written before Sync: the replies wait.
	c.send(&pgproto3.Parse{Query: "SELECT 1"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Flush{})
	equal(t, []string{c.recv(), c.recv(), c.recv(), c.recv()}, []string{"ParseComplete", "BindComplete", "DataRow 0|row0", "CommandComplete SELECT 1"})
	c.send(&pgproto3.Sync{})
	equal(t, []string{c.recv()}, []string{"ReadyForQuery I"})
}

func TestLargeResultStreams(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.connect(t)
	// STREAM writes 64 KiB of rows and then waits for release: the client
	// sees them before the statement ends only if they were flushed.
	c.send(&pgproto3.Query{String: "STREAM"})
	equal(t, []string{c.recv(), c.recv()}, []string{"RowDescription s/25/0", "DataRow xxxxxxxx...(1024)"})
	close(ts.eng.release)
	got := c.until("ReadyForQuery")
	if n := len(got); n != 64+2 || got[n-2] != "CommandComplete SELECT 65" {
		t.Fatalf("got %d messages, ending %v", n, got[max(0, n-2):])
	}
}

func TestMalformedMessageClosesOnlyThatConnection(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	other := ts.connect(t)
	for _, raw := range [][]byte{
		{'B', 0, 0, 0, 5, 'x'},              // Bind with no terminator
		{'z', 0, 0, 0, 4},                   // unknown message type
		{'Q', 0, 0, 0, 2},                   // length below 4
		{'p', 0, 0, 0, 8, 'p', 'w', 'd', 0}, // a password outside authentication
	} {
		c := ts.connect(t)
		c.nc.Write(raw)
		got := c.recv()
		if !strings.HasPrefix(got, "ErrorResponse FATAL 08P01 ") {
			t.Fatalf("%q: got %s", raw, got)
		}
		c.expectClosed()
	}
	equal(t, other.query("SELECT 1"), []string{"RowDescription i/23/0 s/25/0", "DataRow 0|row0", "CommandComplete SELECT 1", "ReadyForQuery I"})
	ts.connect(t).query("SELECT 1")
}

func TestOversizedMessage(t *testing.T) {
	ts := startServer(t, newFakeEngine(), func(c *Config) { c.MaxMessageSize = 1024 })
	c := ts.connect(t)
	// A small message passes; a header announcing more than the limit is
	// refused before its body is read.
	c.query("SELECT " + strings.Repeat(" ", 900) + "1")
	c.nc.Write([]byte{'Q', 0, 0x10, 0, 0})
	equal(t, []string{c.recv()}, []string{"ErrorResponse FATAL 08P01 message of 1048572 bytes exceeds the limit of 1024 bytes"})
	c.expectClosed()
	ts.connect(t).query("SELECT 1")

	// A client that sends the whole oversized message before reading (as
	// drivers do) can finish writing it and then read the error: the
	// server drains instead of resetting the connection.
	c = ts.connect(t)
	big, _ := (&pgproto3.Query{String: strings.Repeat("x", 8<<20)}).Encode(nil)
	wrote := make(chan error, 1)
	go func() {
		_, err := c.nc.Write(big)
		wrote <- err
	}()
	if err := <-wrote; err != nil {
		t.Fatalf("writing the oversized message: %v", err)
	}
	equal(t, []string{c.recv()}, []string{"ErrorResponse FATAL 08P01 message of 8388609 bytes exceeds the limit of 1024 bytes"})
	c.expectClosed()
}

func TestTerminate(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.connect(t)
	if ts.eng.open.Load() != 1 {
		t.Fatal("no session open")
	}
	c.send(&pgproto3.Terminate{})
	c.expectClosed()
	waitFor(t, "session closed", func() bool { return ts.eng.open.Load() == 0 })
}

func TestFunctionCallUnsupported(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.connect(t)
	c.send(&pgproto3.FunctionCall{Function: 1})
	equal(t, c.until("ReadyForQuery"), []string{"ErrorResponse ERROR 0A000 the function call protocol message is not supported", "ReadyForQuery I"})
}

func TestPanicEndsOnlyThatConnection(t *testing.T) {
	eng := newFakeEngine()
	eng.panics = true
	ts := startServer(t, eng, nil)
	ts.wantPanics = 1
	c := ts.connect(t)
	c.send(&pgproto3.Query{String: "PANIC"})
	equal(t, []string{c.recv()}, []string{"ErrorResponse FATAL XX000 internal error: fake engine panics on request"})
	c.expectClosed()
	ts.connect(t).query("SELECT 1")
}

func TestServerCloseEndsConnections(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	idle := ts.connect(t)
	busy := ts.connect(t)
	busy.send(&pgproto3.Query{String: "SLEEP"})
	<-ts.eng.sleeping
	if err := ts.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if cause := <-ts.eng.slept; cause != errShutdown {
		t.Fatalf("statement cancelled with %v", cause)
	}
	for _, c := range []*client{idle, busy} {
		equal(t, []string{c.recv()}, []string{"ErrorResponse FATAL 57P01 terminating connection due to administrator command"})
		c.expectClosed()
	}
	if _, err := net.Dial("tcp", ts.addr); err == nil {
		t.Fatal("still accepting after Close")
	}
}

// waitFor polls cond until it holds, failing after ioTimeout.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(ioTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
