package pgwire

import (
	"context"
	"crypto/subtle"
)

// begin starts an engine call: its context is cancelled by a
// CancelRequest for this connection, by Server.Close, and (with
// watchStart) by the client going away. end must follow.
//
// The call's context derives from c.callParent, which is never cancelled:
// a context under a cancellable parent registers with it when made and
// leaves it when cancelled (3% of node CPU under point SELECTs, once a
// call). Server.Close cancels the running calls through cancelRunning
// instead; a call that begins after Close set closing cancels itself here.
func (c *conn) begin() context.Context {
	ctx, cancel := context.WithCancelCause(c.callParent)
	c.mu.Lock()
	c.cancel = cancel
	c.mu.Unlock()
	if c.srv.closing.Load() {
		cancel(errShutdown)
	}
	return ctx
}

// end finishes the call begin started.
func (c *conn) end() {
	if c.watching {
		c.watchStop()
	}
	c.mu.Lock()
	cancel := c.cancel
	c.cancel = nil
	c.mu.Unlock()
	cancel(nil)
}

// cancelRunning cancels the running call, if any. Between calls there is
// nothing to cancel: like PostgreSQL, a cancel that arrives while the
// connection waits for the client is dropped.
func (c *conn) cancelRunning(cause error) {
	c.mu.Lock()
	if c.cancel != nil {
		c.cancel(cause)
	}
	c.mu.Unlock()
}

// cancelRequest handles a CancelRequest: the connection with that PID and
// secret key has its running statement cancelled (57014).
func (s *Server) cancelRequest(pid uint32, key []byte) {
	s.mu.Lock()
	c := s.conns[pid]
	s.mu.Unlock()
	if c == nil || subtle.ConstantTimeCompare(c.secret[:], key) != 1 {
		s.log.Debug("cancel request for no connection", "pid", pid)
		return
	}
	c.cancelRunning(errCanceled)
}

// terminate ends the connection from another goroutine, as PostgreSQL's
// pg_terminate_backend: its running statement is cancelled, and the
// connection's loop, woken from its read, sends FATAL 57P01 and closes.
func (c *conn) terminate() {
	c.terminated.Store(true)
	c.cancelRunning(errShutdown)
	c.wake()
}
