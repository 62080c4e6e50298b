package transport

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/shaledb/shaledb/internal/consensus/transport/transportpb"
)

// Reconnect backoff after a failed dial or a broken stream: short at first,
// because the common case is a peer that restarted, and bounded, because a
// peer that is down for long still has to be found again within a second.
const (
	minBackoff = 20 * time.Millisecond
	maxBackoff = time.Second
	// openTimeout bounds opening a stream, so that a blackholed peer stalls
	// its sender for seconds, not for the kernel's TCP connect timeout.
	openTimeout = 5 * time.Second
)

var errOpenTimeout = errors.New("transport: timed out opening stream")

// sender is the state of one destination's sender goroutine; only that
// goroutine touches it.
type sender struct {
	t *Transport
	p *peer

	stream transportpb.RaftTransport_RaftMessagesClient
	cancel context.CancelFunc // ends stream

	lastSent time.Time // when the last frame went out (or was dropped as link-down)
	retryAt  time.Time // no sending before this while backing off
	backoff  time.Duration
}

// runSender is the goroutine that owns the stream to p. It wakes on Send,
// on the liveness timer, and on the end of a backoff.
func (t *Transport) runSender(p *peer) {
	defer t.wg.Done()
	s := &sender{t: t, p: p}
	defer s.closeStream()
	timer := time.NewTimer(0) // first cycle at once: open the stream, say hello
	defer timer.Stop()
	for {
		select {
		case <-t.ctx.Done():
			return
		case <-p.wake:
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
		// A stream that was working and broke may have swallowed frames sent
		// just before; a failed dial with only a liveness frame lost nothing.
		broke := s.stream != nil
		s.closeStream()
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
// opening the stream first if needed.
func (s *sender) send(msgs []Message) error {
	t, p := s.t, s.p
	if s.stream == nil {
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
		if err := s.stream.Send(f); err != nil {
			return fmt.Errorf("transport: send to node %d: %w", p.id, err)
		}
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

// open starts a new stream to p.
func (s *sender) open() error {
	t, p := s.t, s.p
	addr, err := t.cfg.Resolver(p.id)
	if err != nil {
		return fmt.Errorf("transport: resolve node %d: %w", p.id, err)
	}
	cc, err := t.cfg.Pool.Conn(addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(t.ctx)
	timer := time.AfterFunc(openTimeout, cancel)
	stream, err := transportpb.NewRaftTransportClient(cc).RaftMessages(ctx)
	if !timer.Stop() && err == nil {
		err = errOpenTimeout
	}
	if err != nil {
		cancel()
		return fmt.Errorf("transport: open stream to node %d at %s: %w", p.id, addr, err)
	}
	s.stream, s.cancel = stream, cancel
	return nil
}

func (s *sender) closeStream() {
	if s.cancel != nil {
		s.cancel()
	}
	s.stream, s.cancel = nil, nil
}
