package pgwire

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// FuzzServerMessages sends arbitrary bytes after a valid startup. The
// server must not panic, must end the connection once the client stops
// sending (no input may hang it), and must keep serving new connections.
// The seed corpus (testdata/fuzz/FuzzServerMessages) holds valid message
// sequences of every kind.
func FuzzServerMessages(f *testing.F) {
	eng := newFakeEngine()
	eng.discard = true
	ts := startServer(f, eng, func(c *Config) {
		c.MaxMessageSize = 1 << 20
		c.watchDelay = time.Millisecond // exercise the read-ahead too
		c.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		panics := ts.srv.panics.Load()
		c := ts.connect(t)
		// Write while reading below (the server may answer a lot), then
		// half-close: the server sees EOF after data, as from a client
		// that sent its last bytes and left.
		go func() {
			c.nc.Write(data)
			c.nc.(*net.TCPConn).CloseWrite()
		}()
		c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
		if _, err := io.Copy(io.Discard, c.nc); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("server still had the connection open %v after the input", ioTimeout)
			}
		}
		if n := ts.srv.panics.Load() - panics; n != 0 {
			t.Fatalf("%d panics", n)
		}
		check := ts.connect(t)
		equal(t, check.query("SELECT 1"), []string{"RowDescription i/23/0 s/25/0", "DataRow 0|row0", "CommandComplete SELECT 1", "ReadyForQuery I"})
		check.send(&pgproto3.Terminate{})
	})
}
