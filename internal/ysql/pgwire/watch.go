package pgwire

import (
	"encoding/binary"
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
//
// A Read never hands out bytes past the end of the current message, so the
// Backend holds at most one message and the bytes of the next ones stay
// here, where nextIsSync can see them. Startup-phase messages have no type
// byte (a 4-byte header); typed is set once the startup message is in.
type connReader struct {
	conn    net.Conn
	pending []byte
	off     int
	err     error

	typed   bool
	hdr     [5]byte // the current message's header, as handed out so far
	hdrN    int     // bytes of hdr handed out; 0 at a message boundary
	msgLeft int     // body bytes of the current message still to hand out
}

func (r *connReader) Read(p []byte) (int, error) {
	if r.off == len(r.pending) {
		r.pending, r.off = r.pending[:0], 0
		if r.err != nil {
			return 0, r.err
		}
		if cap(r.pending) < 8192 {
			r.pending = make([]byte, 0, 8192)
		}
		n, err := r.conn.Read(r.pending[:cap(r.pending)])
		r.pending = r.pending[:n]
		if err != nil {
			r.err = err
			if n == 0 {
				return 0, err
			}
		}
	}
	return r.handOut(p), nil
}

// handOut copies buffered bytes to p up to the end of the current message.
func (r *connReader) handOut(p []byte) int {
	hdrLen := 4
	if r.typed {
		hdrLen = 5
	}
	n := 0
	for n < len(p) && r.off < len(r.pending) {
		if r.msgLeft == 0 {
			k := min(hdrLen-r.hdrN, len(p)-n, len(r.pending)-r.off)
			copy(r.hdr[r.hdrN:], r.pending[r.off:r.off+k])
			copy(p[n:], r.pending[r.off:r.off+k])
			r.hdrN += k
			r.off += k
			n += k
			if r.hdrN < hdrLen {
				continue
			}
			r.hdrN = 0
			// The length counts itself; a bad one is the Backend's to
			// report, and ends the message here.
			if r.msgLeft = int(binary.BigEndian.Uint32(r.hdr[hdrLen-4:])) - 4; r.msgLeft <= 0 {
				r.msgLeft = 0
				return n
			}
			continue
		}
		k := min(r.msgLeft, len(p)-n, len(r.pending)-r.off)
		copy(p[n:], r.pending[r.off:r.off+k])
		r.msgLeft -= k
		r.off += k
		n += k
		if r.msgLeft == 0 {
			return n
		}
	}
	return n
}

// nextIsSync reports whether the client has already sent a Sync as its
// next message (drivers send Parse/Bind/Execute/Sync in one write): the
// message being handled is then the last of its batch.
func (r *connReader) nextIsSync() bool {
	if !r.typed || r.msgLeft != 0 || r.hdrN != 0 {
		return false
	}
	b := r.pending[r.off:]
	return len(b) >= 5 && b[0] == 'S' && binary.BigEndian.Uint32(b[1:5]) == 4
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
