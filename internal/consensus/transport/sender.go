package transport

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	"github.com/shaledb/shaledb/internal/rpc"
)

// Reconnect backoff after a failed dial or a broken stream: short at first,
// because the common case is a peer that restarted, and bounded, because a
// peer that is down for long still has to be found again within a second.
const (
	minBackoff = 20 * time.Millisecond
	maxBackoff = time.Second
	// openTimeout bounds connecting, so that a blackholed peer stalls
	// its sender for seconds, not for the kernel's TCP connect timeout.
	openTimeout = 5 * time.Second
)

// sender is the state of one destination's sender goroutine; only that
// goroutine touches it.
type sender struct {
	t *Transport
	p *peer

	// conn carries the frames to p (rpc.RaftPreface), through w; nil
	// while there is none. A goroutine reads it only to notice the peer
	// closing it (closeConn).
	conn net.Conn
	w    *bufio.Writer

	lastSent time.Time // when the last frame went out (or was dropped as link-down)
	retryAt  time.Time // no sending before this while backing off
	backoff  time.Duration
}

// runSender is the goroutine that owns the stream to p. It wakes on Send,
// on the liveness timer, and on the end of a backoff.
func (t *Transport) runSender(p *peer) {
	defer t.wg.Done()
	s := &sender{t: t, p: p}
	defer s.closeConn()
	timer := time.NewTimer(0) // first cycle at once: open the stream, say hello
	defer timer.Stop()
	for {
		select {
		case <-t.ctx.Done():
			return
		case <-p.wake:
			// Let the goroutines ready to run queue theirs first (the
			// other groups of a scheduler cycle, the answers of a stream
			// worker): a frame each cost more writes than the gRPC stream's
			// writer goroutine did by batching (insert and TPC-B
			// benchmarks, session 19).
			runtime.Gosched()
		case <-timer.C:
		}
		d := s.cycle(time.Now())
		if t.ctx.Err() != nil {
			return
		}
		timer.Reset(d)
	}
}

// cycle sends everything queued (or a liveness frame when one is due) and
// returns how long to wait before the next liveness frame or retry.
func (s *sender) cycle(now time.Time) time.Duration {
	t, p := s.t, s.p
	interval := t.cfg.LivenessInterval
	if now.Before(s.retryAt) {
		// Backing off: the queue keeps filling (up to its limit) and goes
		// out in one frame when the retry succeeds.
		if p.takeOverflowed() {
			t.cfg.Handler.HandleUnreachable(p.id)
		}
		return s.retryAt.Sub(now)
	}

	msgs, overflowed, down := p.take()
	if overflowed {
		t.cfg.Handler.HandleUnreachable(p.id)
	}
	due := s.lastSent.IsZero() || now.Sub(s.lastSent) >= interval
	if len(msgs) == 0 && !due {
		return interval - now.Sub(s.lastSent)
	}
	if down {
		t.stats.framesDroppedOut.Add(1)
		if len(msgs) > 0 {
			t.stats.messagesDropped.Add(uint64(len(msgs)))
			t.cfg.Handler.HandleUnreachable(p.id)
		}
		s.lastSent = now
		return interval
	}

	if err := s.send(msgs); err != nil {
		if t.ctx.Err() != nil {
			return 0 // stopping: the failure is ours, not the peer's
		}
		// A connection that was working and broke may have swallowed frames
		// sent just before; a failed dial with only a liveness frame lost
		// nothing.
		broke := s.conn != nil
		s.closeConn()
		t.stats.messagesDropped.Add(uint64(len(msgs)))
		if len(msgs) > 0 || broke {
			t.cfg.Handler.HandleUnreachable(p.id)
		}
		s.backoff = min(max(2*s.backoff, minBackoff), maxBackoff)
		wait := s.backoff/2 + rand.N(s.backoff/2+1) // jitter: peers do not retry in lockstep
		s.retryAt = now.Add(wait)
		return wait
	}
	s.backoff = 0
	s.lastSent = now
	return interval
}

// send writes msgs as one frame (more only if they exceed maxFrameBytes),
// opening the connection first if needed, and all frames in one write.
func (s *sender) send(msgs []Message) error {
	t, p := s.t, s.p
	if s.conn == nil {
		if err := s.open(); err != nil {
			return err
		}
	}
	frames, _, dropped := encodeFrames(msgs)
	if dropped > 0 {
		t.stats.messagesDropped.Add(uint64(dropped))
		t.cfg.Handler.HandleUnreachable(p.id)
	}
	// sent_at is read before the frame leaves, so a lease derived from its
	// ack can only start early, never late.
	sentAt := t.now()
	var ht uint64
	if t.cfg.Clock != nil {
		ht = uint64(t.cfg.Clock.Now())
	}
	for _, f := range frames {
		f.Hlc = ht
		f.FromNode = t.cfg.NodeID
		f.ToNode = p.id
		f.Incarnation = t.incarnation
		f.SentAt = sentAt
		p.stamp(f)
		if _, err := protodelim.MarshalTo(s.w, f); err != nil {
			return fmt.Errorf("transport: send to node %d: %w", p.id, err)
		}
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("transport: send to node %d: %w", p.id, err)
	}
	for _, f := range frames {
		// Counted once sent, so a receiver can see a frame a moment
		// before its sender's Stats do.
		tuples := len(f.Heartbeats) + len(f.HeartbeatResps)
		t.stats.framesSent.Add(1)
		t.stats.messagesSent.Add(uint64(len(f.Messages) + tuples))
		t.stats.heartbeatsCoalesced.Add(uint64(tuples))
		t.stats.bytesSent.Add(uint64(proto.Size(f)))
	}
	return nil
}

// open connects to p.
func (s *sender) open() error {
	t, p := s.t, s.p
	addr, err := t.cfg.Resolver(p.id)
	if err != nil {
		return fmt.Errorf("transport: resolve node %d: %w", p.id, err)
	}
	ctx, cancel := context.WithTimeout(t.ctx, openTimeout)
	defer cancel()
	c, err := rpc.DialPreface(ctx, addr, rpc.RaftPreface)
	if err != nil {
		return fmt.Errorf("transport: connect to node %d at %s: %w", p.id, addr, err)
	}
	// The peer sends nothing back on this connection: a read ends only
	// when it closes it (a frame it refused, its stop) or the connection
	// breaks, and then closes our side too, so that the next write fails
	// at once rather than into the void.
	t.wg.Add(1) // safe: the sender goroutine is itself counted
	go func() {
		defer t.wg.Done()
		_, _ = io.Copy(io.Discard, c)
		_ = c.Close()
	}()
	s.conn, s.w = c, bufio.NewWriterSize(c, writeBufferSize)
	return nil
}

// writeBufferSize: frames up to this size go out in the write of the
// buffer; larger ones are written straight from their encoding.
const writeBufferSize = 64 << 10

func (s *sender) closeConn() {
	if s.conn != nil {
		_ = s.conn.Close()
	}
	s.conn, s.w = nil, nil
}
