package pgwire

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// flushThreshold is how many bytes of rows may wait in the send buffer
// before they are written: large results stream instead of piling up.
const flushThreshold = 32 << 10

// conn is one client connection, served by one goroutine (serve). Other
// goroutines touch only the fields under mu, and rd while a disconnect
// watch runs (watch.go), when serve does not read.
type conn struct {
	srv *Server
	nc  net.Conn
	rd  connReader
	be  *pgproto3.Backend
	// rowDesc and rowDescNames are reused by every RowDescription sent.
	rowDesc      pgproto3.RowDescription
	rowDescNames []byte
	pid          uint32
	secret       [4]byte
	// ctx is cancelled by Server.Close and when the connection ends.
	// Statement contexts derive from callParent, its values without its
	// cancellation (begin says why).
	ctx        context.Context
	ctxCancel  context.CancelFunc
	callParent context.Context

	// terminated: another session ended this one (pg_terminate_backend).
	terminated atomic.Bool

	sess     Session
	admitted bool              // counted against MaxConnections
	params   map[string]string // ParameterStatus values the client has
	// paramsVersion: the session's SettingsVersion when params was last
	// brought up to date.
	paramsVersion uint64

	stmts   map[string]Statement
	portals map[string]*portal

	ignoreTillSync bool // an extended-protocol error: skip to Sync
	batchFailed    bool // an error since the last Sync
	dirty          bool // messages wait in be's buffer
	unflushed      int  // bytes of DataRows since the last flush
	broken         bool // the connection must close
	linger         bool // drain the input before closing (closeConn)
	writeErr       error
	recvErr        error // a Receive failure met while reading COPY data

	sink    rowSink
	dataRow pgproto3.DataRow

	// Disconnect watch (watch.go).
	watchTimer *time.Timer
	watchDone  chan struct{}
	watching   bool

	mu     sync.Mutex
	cancel context.CancelCauseFunc // the running call's; nil between calls
}

// portal is a bound portal with what Describe needs.
type portal struct {
	p       Portal
	cols    []Column
	formats []int16
}

func newConn(s *Server, nc net.Conn, pid uint32) *conn {
	c := &conn{srv: s, nc: nc, pid: pid}
	rand.Read(c.secret[:])
	c.rd.conn = nc
	c.be = pgproto3.NewBackend(&c.rd, nc)
	c.be.SetMaxBodyLen(s.cfg.MaxMessageSize)
	c.ctx, c.ctxCancel = context.WithCancel(s.ctx)
	c.callParent = context.WithoutCancel(c.ctx)
	c.sink.c = c
	return c
}

// serve runs the connection to its end.
func (c *conn) serve() {
	defer c.srv.done(c)
	c.srv.m.connOpened()
	defer c.srv.m.connClosed()
	defer c.ctxCancel()
	defer c.closeConn()
	defer c.closeSession()
	defer c.recoverPanic()

	if !c.startup() {
		return
	}
	c.loop()
}

// recoverPanic turns a panic (an engine bug, most likely) into a FATAL
// for this connection alone, rather than a crash of every connection.
func (c *conn) recoverPanic() {
	r := recover()
	if r == nil {
		return
	}
	c.srv.panics.Add(1)
	c.srv.log.Error("panic serving connection", "pid", c.pid, "panic", r, "stack", string(debug.Stack()))
	if c.watching {
		c.watchStop()
	}
	if !c.broken {
		c.sendFatal(pgerror.New(pgerror.CodeInternalError, "internal error: %v", r))
	}
}

// loop reads and handles messages until the connection ends.
func (c *conn) loop() {
	for {
		if c.srv.closing.Load() || c.terminated.Load() {
			c.sendFatal(errShutdown)
			return
		}
		msg, err := c.be.Receive()
		if err != nil {
			c.receiveFailed(err)
			return
		}
		if c.terminated.Load() {
			// Terminated while the read was under way (a watch's
			// read-ahead clears the deadline wake set): nothing more
			// runs.
			c.sendFatal(errShutdown)
			return
		}
		if c.ignoreTillSync {
			switch msg.(type) {
			case *pgproto3.Sync, *pgproto3.Terminate:
			default:
				continue
			}
		}
		switch m := msg.(type) {
		case *pgproto3.Query:
			c.simpleQuery(m.String)
		case *pgproto3.Parse:
			c.parse(m)
		case *pgproto3.Bind:
			c.bind(m)
		case *pgproto3.Describe:
			c.describe(m)
		case *pgproto3.Execute:
			c.execute(m)
		case *pgproto3.Close:
			c.closeMsg(m)
		case *pgproto3.Sync:
			c.endBatch(c.batchFailed)
		case *pgproto3.Flush:
			c.flushOut()
		case *pgproto3.Terminate:
			return
		case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
			// The rest of a COPY that already failed: the protocol says
			// to drop it.
		case *pgproto3.FunctionCall:
			c.sendError(pgerror.Unsupported("the function call protocol message"))
			c.send(&pgproto3.ReadyForQuery{TxStatus: c.sess.TxnStatus()})
			c.flushOut()
		default:
			c.sendFatal(pgerror.New(pgerror.CodeProtocolViolation, "unexpected %s message", msgName(msg)))
		}
		if c.broken {
			if c.recvErr != nil {
				c.receiveFailed(c.recvErr)
			}
			return
		}
	}
}

// receiveFailed ends the connection after Receive failed: quietly when
// the socket failed or closed, with FATAL 08P01 when the client sent
// something that is not a valid message.
func (c *conn) receiveFailed(err error) {
	switch {
	case c.srv.closing.Load() || c.terminated.Load():
		c.sendFatal(errShutdown)
	case c.rd.err != nil:
		c.srv.log.Debug("connection closed", "pid", c.pid, "err", c.rd.err)
		c.broken = true
	default:
		var pe *pgerror.Error
		if big, ok := err.(*pgproto3.ExceededMaxBodyLenErr); ok {
			pe = pgerror.New(pgerror.CodeProtocolViolation, "message of %d bytes exceeds the limit of %d bytes",
				big.ActualBodyLen, big.MaxExpectedBodyLen)
		} else {
			pe = pgerror.New(pgerror.CodeProtocolViolation, "invalid frontend message: %v", err)
		}
		c.srv.log.Warn("protocol violation", "pid", c.pid, "remote", c.nc.RemoteAddr().String(), "err", pe.Message)
		c.sendFatal(pe)
		c.linger = true
	}
}

// send buffers a message.
func (c *conn) send(msg pgproto3.BackendMessage) {
	c.be.Send(msg)
	c.dirty = true
}

// flushOut writes the buffered messages. A failed write breaks the
// connection; later calls return the same error.
func (c *conn) flushOut() error {
	if c.writeErr != nil {
		return c.writeErr
	}
	if !c.dirty {
		return nil
	}
	c.dirty, c.unflushed = false, 0
	if err := c.be.Flush(); err != nil {
		c.writeErr, c.broken = err, true
		return err
	}
	return nil
}

// rowSink is the RowWriter handed to Execute: DataRows go to the send
// buffer, which is written out whenever it holds flushThreshold bytes.
type rowSink struct{ c *conn }

func (s *rowSink) WriteRow(values [][]byte) error {
	c := s.c
	c.dataRow.Values = values
	n := 7 + 4*len(values) // type, length, count, a length per value
	for _, v := range values {
		n += len(v)
	}
	err := c.sendStreamed(&c.dataRow, n)
	c.dataRow.Values = nil
	return err
}

// sendStreamed sends one message of a result that streams (a DataRow, a
// CopyData) of size bytes, flushing once flushThreshold bytes are
// unflushed, so a long result reaches the client as it is made. A
// failed write ends the result.
func (c *conn) sendStreamed(m pgproto3.BackendMessage, size int) error {
	if c.writeErr != nil {
		return c.writeErr
	}
	c.send(m) // encoded at once: m's buffers may be reused
	c.unflushed += size
	if c.unflushed >= flushThreshold {
		return c.flushOut()
	}
	return nil
}

// closeSession releases portals, statements and the session.
func (c *conn) closeSession() {
	if c.watchTimer != nil {
		c.watchTimer.Stop()
	}
	if c.sess == nil {
		return
	}
	c.closePortals()
	for name, s := range c.stmts {
		s.Close()
		delete(c.stmts, name)
	}
	c.sess.Close()
}

// lingerTimeout bounds how long closeConn drains a client's input.
const lingerTimeout = time.Second

// closeConn closes the socket. After a protocol violation the client may
// still be sending (the body of an oversized message, say), and closing
// with unread input resets the connection, which can destroy the FATAL
// error before the client reads it; so the server half-closes and drains
// the input for a moment first.
func (c *conn) closeConn() {
	if cw, ok := c.nc.(interface{ CloseWrite() error }); ok && c.linger && !c.srv.closing.Load() {
		cw.CloseWrite()
		c.nc.SetReadDeadline(time.Now().Add(lingerTimeout))
		io.Copy(io.Discard, c.nc)
	}
	c.nc.Close()
}

// wake makes the connection notice Server.Close: its blocked read returns
// now, and its writes get ShutdownTimeout to finish.
func (c *conn) wake() {
	c.nc.SetWriteDeadline(time.Now().Add(c.srv.cfg.ShutdownTimeout))
	c.nc.SetReadDeadline(time.Now())
}

// msgName names a frontend message for an error ("Query", "Bind").
func msgName(msg pgproto3.FrontendMessage) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", msg), "*pgproto3.")
}
