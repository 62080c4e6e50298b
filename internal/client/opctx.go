package client

import (
	"context"
	"sync"
	"time"
)

// opCtx is an operation's context: its parent's, with the operation's
// deadline, and no timer until something waits on it (Done). An attempt
// takes its own timer context straight from the parent, with the earlier
// of the two deadlines (attemptContext), and the retry loop asks Err
// between attempts; so an operation whose first attempt answers, nearly
// all of them, builds one timer context instead of two (contexts were a
// third of the objects a point SELECT allocated). Anything else that
// waits on the operation (a backoff, a master call) calls Done, which
// makes the timer context then.
type opCtx struct {
	parent   context.Context
	deadline time.Time

	mu       sync.Mutex
	timed    context.Context // WithDeadline(parent, deadline), once Done was asked
	cancel   context.CancelFunc
	released bool
}

func newOpCtx(parent context.Context, deadline time.Time) *opCtx {
	return &opCtx{parent: parent, deadline: deadline}
}

func (c *opCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *opCtx) Value(key any) any { return c.parent.Value(key) }

func (c *opCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timed == nil {
		c.timed, c.cancel = context.WithDeadline(c.parent, c.deadline)
		if c.released {
			c.cancel()
		}
	}
	return c.timed.Done()
}

func (c *opCtx) Err() error {
	c.mu.Lock()
	timed, released := c.timed, c.released
	c.mu.Unlock()
	switch {
	case timed != nil:
		return timed.Err()
	case released:
		return context.Canceled
	}
	if err := c.parent.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// release ends the operation (its CancelFunc).
func (c *opCtx) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.released = true
	if c.cancel != nil {
		c.cancel()
	}
}

// attemptContext bounds one attempt of an operation: timeout from now,
// or the operation's deadline if that comes first.
func attemptContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	d := time.Now().Add(timeout)
	if oc, ok := ctx.(*opCtx); ok {
		if oc.deadline.Before(d) {
			d = oc.deadline
		}
		if err := oc.Err(); err != nil {
			// Released or cancelled: an attempt context that is too.
			actx, cancel := context.WithCancel(oc.parent)
			cancel()
			return actx, cancel
		}
		return context.WithDeadline(oc.parent, d)
	}
	return context.WithDeadline(ctx, d)
}
