package pgwire

import (
	"log/slog"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// BenchmarkIdleConnectionMemory opens idleConns sessions that then sit
// idle and reports the heap and stack they hold (runtime.MemStats), per
// connection. The client ends of the sockets live in the same process,
// so the same measure is first taken for bare accepted TCP connections
// and reported too; the difference is pgwire's own cost. Run with
// -benchtime 1x; it reports a figure and asserts nothing about it.
func BenchmarkIdleConnectionMemory(b *testing.B) {
	const idleConns = 2000
	for range b.N {
		bare := measure(b, idleConns, func() (string, func()) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			var held []net.Conn
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					held = append(held, c)
				}
			}()
			return ln.Addr().String(), func() {
				ln.Close()
				<-done
				for _, c := range held {
					c.Close()
				}
			}
		}, false)
		pg := measure(b, idleConns, func() (string, func()) {
			ts := startServer(b, newFakeEngine(), func(c *Config) { c.Logger = slog.New(slog.DiscardHandler) })
			return ts.addr, func() {}
		}, true)
		b.ReportMetric(pg, "bytes/conn")
		b.ReportMetric(bare, "bare-tcp-bytes/conn")
		b.ReportMetric(pg-bare, "pgwire-bytes/conn")
	}
}

// measure opens n connections to the server start returns and reports the
// heap+stack growth per connection while they are all open.
func measure(b *testing.B, n int, start func() (string, func()), startup bool) float64 {
	addr, stop := start()
	defer stop()
	before := memInUse()
	conns := make([]net.Conn, n)
	for i := range conns {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		conns[i] = nc
		if !startup {
			continue
		}
		// A throwaway Frontend for the handshake; only the socket stays.
		fe := pgproto3.NewFrontend(nc, nc)
		fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
			Parameters: map[string]string{"user": "idle", "database": "db"}})
		if err := fe.Flush(); err != nil {
			b.Fatal(err)
		}
		nc.SetReadDeadline(time.Now().Add(ioTimeout))
		for {
			m, err := fe.Receive()
			if err != nil {
				b.Fatal(err)
			}
			if _, ok := m.(*pgproto3.ReadyForQuery); ok {
				break
			}
		}
		nc.SetReadDeadline(time.Time{})
	}
	after := memInUse()
	for _, nc := range conns {
		nc.Close()
	}
	return float64(after-before) / float64(n)
}

// memInUse is the live heap plus goroutine stacks after a full GC.
func memInUse() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc + ms.StackInuse)
}
