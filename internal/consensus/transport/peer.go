package transport

import (
	"sync"
	"time"

	"github.com/shaledb/shaledb/internal/consensus/transport/transportpb"
)

// peer is this node's state about one other node: the outgoing queue, the
// liveness bookkeeping of both directions, and the fault-injection switch.
type peer struct {
	id uint64
	// wake has room for one token: a Send sets it, the sender consumes it.
	// Any number of Sends between two sender cycles cost one wakeup.
	wake chan struct{}
	// senderStarted is guarded by Transport.mu.
	senderStarted bool

	mu struct {
		sync.Mutex
		queue      []Message
		overflowed bool // messages were dropped since the sender last looked
		down       bool

		heard time.Time // local arrival time of the latest frame from the peer
		// recvIncarnation and recvSentAt identify the latest frame received
		// from the peer; they go back to it as ack_incarnation and ack.
		recvIncarnation uint64
		recvSentAt      int64
		// ackedSentAt is the largest of our sent_at values the peer has
		// acknowledged, on our clock.
		ackedSentAt int64
	}
}

func newPeer(id uint64) *peer {
	return &peer{id: id, wake: make(chan struct{}, 1)}
}

func (p *peer) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// enqueue appends msgs, dropping what does not fit under limit, wakes the
// sender, and returns how many messages it dropped.
func (p *peer) enqueue(msgs []Message, limit int) (dropped int) {
	p.mu.Lock()
	if room := max(limit-len(p.mu.queue), 0); len(msgs) > room {
		dropped = len(msgs) - room
		msgs = msgs[:room]
		p.mu.overflowed = true
	}
	p.mu.queue = append(p.mu.queue, msgs...)
	p.mu.Unlock()
	p.signal()
	return dropped
}

// take removes and returns everything queued, with the overflow flag (which
// it clears) and the link state.
func (p *peer) take() (msgs []Message, overflowed, down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	msgs, p.mu.queue = p.mu.queue, nil
	overflowed, p.mu.overflowed = p.mu.overflowed, false
	return msgs, overflowed, p.mu.down
}

func (p *peer) setDown(down bool) {
	p.mu.Lock()
	p.mu.down = down
	p.mu.Unlock()
	// Coming back up: let the sender send a frame now rather than at the
	// next liveness tick.
	p.signal()
}

func (p *peer) isDown() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.down
}

// stamp fills in the liveness fields of an outgoing frame.
func (p *peer) stamp(f *transportpb.Frame) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f.Ack = p.mu.recvSentAt
	f.AckIncarnation = p.mu.recvIncarnation
}

// received records the liveness fields of a frame that arrived at local time
// at. ack values are only accepted if they belong to this incarnation
// (ours) and do not lie in our future (now), so a confused or restarted peer
// can never extend a lease.
func (p *peer) received(f *transportpb.Frame, at time.Time, ours uint64, now int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.heard = at
	p.mu.recvIncarnation = f.GetIncarnation()
	p.mu.recvSentAt = f.GetSentAt()
	if ack := f.GetAck(); f.GetAckIncarnation() == ours && ack <= now && ack > p.mu.ackedSentAt {
		p.mu.ackedSentAt = ack
	}
}

func (p *peer) lastHeard() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.heard
}

func (p *peer) leaseAck() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.ackedSentAt
}

// takeOverflowed returns and clears the overflow flag.
func (p *peer) takeOverflowed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	o := p.mu.overflowed
	p.mu.overflowed = false
	return o
}
