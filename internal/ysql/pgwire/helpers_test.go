package pgwire

import (
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5/pgproto3"
)

// ioTimeout bounds every read a test waits on; a server that hangs fails
// the test instead of stalling it.
const ioTimeout = 10 * time.Second

type testServer struct {
	srv    *Server
	eng    *fakeEngine
	addr   string
	served chan error
	// wantPanics is how many recovered panics the test expects.
	wantPanics int64
}

// startServer serves eng on a loopback port until the test ends, then
// checks that Close ended every connection and session.
func startServer(t testing.TB, eng *fakeEngine, mod func(*Config)) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Engine: eng, Logger: slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{srv: srv, eng: eng, addr: ln.Addr().String(), served: make(chan error, 1)}
	go func() { ts.served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-ts.served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
		if n := srv.panics.Load(); n != ts.wantPanics {
			t.Errorf("%d recovered panics, want %d", n, ts.wantPanics)
		}
		if n := eng.open.Load(); n != 0 {
			t.Errorf("%d sessions still open after Close", n)
		}
		if n := srv.numConns(); n != 0 {
			t.Errorf("%d connections still registered after Close", n)
		}
	})
	return ts
}

func (ts *testServer) port() string {
	_, p, _ := net.SplitHostPort(ts.addr)
	return p
}

func (ts *testServer) url() string {
	return "postgres://tester@" + ts.addr + "/db?sslmode=disable"
}

type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// client is a raw protocol client.
type client struct {
	t  testing.TB
	nc net.Conn
	fe *pgproto3.Frontend
	// pid and key are from BackendKeyData.
	pid uint32
	key []byte
}

func (ts *testServer) dial(t testing.TB) *client {
	t.Helper()
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &client{t: t, nc: nc, fe: pgproto3.NewFrontend(nc, nc)}
}

// connect dials and starts a session.
func (ts *testServer) connect(t testing.TB) *client {
	t.Helper()
	c := ts.dial(t)
	c.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters: map[string]string{"user": "tester", "database": "db"}})
	c.until("ReadyForQuery")
	return c
}

func (c *client) send(msgs ...pgproto3.FrontendMessage) {
	c.t.Helper()
	for _, m := range msgs {
		c.fe.Send(m)
	}
	if err := c.fe.Flush(); err != nil {
		c.t.Fatal(err)
	}
}

// recv returns the next message, summarised (see summary).
func (c *client) recv() string {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	m, err := c.fe.Receive()
	if err != nil {
		c.t.Fatalf("receive: %v", err)
	}
	if k, ok := m.(*pgproto3.BackendKeyData); ok {
		c.pid, c.key = k.ProcessID, append([]byte(nil), k.SecretKey...)
	}
	return summary(m)
}

// until receives messages up to and including the first whose summary
// starts with prefix.
func (c *client) until(prefix string) []string {
	c.t.Helper()
	var out []string
	for {
		s := c.recv()
		out = append(out, s)
		if strings.HasPrefix(s, prefix) {
			return out
		}
	}
}

// query sends a simple query and returns the replies up to ReadyForQuery.
func (c *client) query(q string) []string {
	c.t.Helper()
	c.send(&pgproto3.Query{String: q})
	return c.until("ReadyForQuery")
}

// expectClosed asserts that the server closes the connection.
func (c *client) expectClosed() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	buf := make([]byte, 1)
	for {
		_, err := c.nc.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.t.Fatal("server did not close the connection")
		}
		return
	}
}

// cancel sends a CancelRequest for c's session and waits until the server
// has handled it (it closes the cancel connection after).
func (ts *testServer) cancel(c *client) {
	c.t.Helper()
	cc := ts.dial(c.t)
	cc.send(&pgproto3.CancelRequest{ProcessID: c.pid, SecretKey: c.key})
	cc.expectClosed()
}

// summary renders a backend message as one comparable line.
func summary(m pgproto3.BackendMessage) string {
	switch m := m.(type) {
	case *pgproto3.ParameterStatus:
		return "ParameterStatus " + m.Name + "=" + m.Value
	case *pgproto3.ReadyForQuery:
		return "ReadyForQuery " + string(m.TxStatus)
	case *pgproto3.RowDescription:
		var f []string
		for _, d := range m.Fields {
			f = append(f, fmt.Sprintf("%s/%d/%d", d.Name, d.DataTypeOID, d.Format))
		}
		return "RowDescription " + strings.Join(f, " ")
	case *pgproto3.DataRow:
		var v []string
		for _, b := range m.Values {
			v = append(v, value(b))
		}
		return "DataRow " + strings.Join(v, "|")
	case *pgproto3.CommandComplete:
		return "CommandComplete " + string(m.CommandTag)
	case *pgproto3.ErrorResponse:
		return fmt.Sprintf("ErrorResponse %s %s %s", m.Severity, m.Code, m.Message)
	case *pgproto3.NoticeResponse:
		return fmt.Sprintf("NoticeResponse %s %s", m.Severity, m.Message)
	case *pgproto3.ParameterDescription:
		return fmt.Sprint("ParameterDescription ", m.ParameterOIDs)
	case *pgproto3.CopyInResponse:
		return fmt.Sprint("CopyInResponse ", m.OverallFormat, " ", m.ColumnFormatCodes)
	case *pgproto3.NegotiateProtocolVersion:
		return fmt.Sprint("NegotiateProtocolVersion ", m.NewestMinorProtocol, " ", m.UnrecognizedOptions)
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", m), "*pgproto3.")
}

func value(b []byte) string {
	if b == nil {
		return "NULL"
	}
	for _, r := range string(b) {
		if !unicode.IsPrint(r) {
			return "0x" + hex.EncodeToString(b)
		}
	}
	if len(b) > 16 {
		return fmt.Sprintf("%s...(%d)", b[:8], len(b))
	}
	return string(b)
}

// withoutParams drops ParameterStatus lines (startup noise) from replies.
func withoutParams(lines []string) []string {
	var out []string
	for _, l := range lines {
		if !strings.HasPrefix(l, "ParameterStatus ") {
			out = append(out, l)
		}
	}
	return out
}

func equal(t testing.TB, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}
