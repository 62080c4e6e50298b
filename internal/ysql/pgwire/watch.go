package pgwire

import (
	"errors"
	"net"
	"os"
	"time"
)

// While an engine call runs nothing reads the socket, so a client that
// went away would go unnoticed until the statement ends (never, for one
// that waits). A call that lasts watchDelay starts a goroutine that reads
// ahead: EOF or a socket error cancels the call, and bytes the client
// pipelined meanwhile are kept for the Backend. Short calls cost a timer
// reset and stop, no goroutine.
const (
	watchDelay   = 50 * time.Millisecond
	maxReadAhead = 64 << 10
)

// aLongTimeAgo is a read deadline that makes a blocked Read return now.
var aLongTimeAgo = time.Unix(1, 0)

// connReader is what the Backend reads: first the bytes the watch read
// ahead, then the socket. err keeps the socket's error so that a failed
// Receive can tell a lost connection from a malformed message.
type connReader struct {
	conn    net.Conn
	pending []byte
	off     int
	err     error
}

func (r *connReader) Read(p []byte) (int, error) {
	if r.off < len(r.pending) {
		n := copy(p, r.pending[r.off:])
		r.off += n
		if r.off == len(r.pending) {
			r.pending, r.off = nil, 0
		}
		return n, nil
	}
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.conn.Read(p)
	if err != nil {
		r.err = err
	}
	return n, err
}

// watchStart arms the watch for the running call.
func (c *conn) watchStart() {
	c.watching = true
	if c.watchTimer == nil {
		c.watchDone = make(chan struct{}, 1)
		c.watchTimer = time.AfterFunc(c.srv.cfg.watchDelay, c.watchRead)
		return
	}
	c.watchTimer.Reset(c.srv.cfg.watchDelay)
}

// watchStop disarms the watch, waiting for the read-ahead if it started.
func (c *conn) watchStop() {
	c.watching = false
	if c.watchTimer.Stop() {
		return
	}
	c.nc.SetReadDeadline(aLongTimeAgo)
	<-c.watchDone
	// Server.Close may have set a deadline meanwhile; the loop checks
	// closing before its next read, so clearing it here is safe.
	c.nc.SetReadDeadline(time.Time{})
}

// watchRead is the read-ahead goroutine.
func (c *conn) watchRead() {
	defer func() { c.watchDone <- struct{}{} }()
	// The lock orders this goroutine after begin, which took it after the
	// serving goroutine last touched rd.
	c.mu.Lock()
	running := c.cancel != nil
	c.mu.Unlock()
	if !running {
		return
	}
	r := &c.rd
	if r.err != nil {
		return
	}
	for len(r.pending) < maxReadAhead {
		if cap(r.pending)-len(r.pending) < 512 {
			grown := make([]byte, len(r.pending), max(4096, 2*cap(r.pending)))
			copy(grown, r.pending)
			r.pending = grown
		}
		n, err := c.nc.Read(r.pending[len(r.pending):cap(r.pending)])
		r.pending = r.pending[:len(r.pending)+n]
		c.srv.readAhead.Add(int64(n))
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				r.err = err
				c.cancelRunning(errClientGone)
			}
			return
		}
	}
}
