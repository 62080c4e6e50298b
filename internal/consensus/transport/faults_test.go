package transport

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shaledb/shaledb/internal/rpc"
)

// TestLinkDown cuts the link between nodes 1 and 2 on node 1's side and
// checks nothing crosses it in either direction, that node 1 reports node 2
// unreachable, and that delivery resumes once the link is up again.
func TestLinkDown(t *testing.T) {
	const interval = 50 * time.Millisecond
	c := newCluster(t, 2, func(cfg *Config) { cfg.LivenessInterval = interval })
	c.connectAll(1, 2)
	a, b := c.node(1), c.node(2)
	a.t.Send(2, []Message{msgApp(1, 1, 2, 1)})
	b.t.Send(1, []Message{msgApp(1, 2, 1, 1)})
	waitFor(t, "delivery before the cut", func() bool { return a.h.count(2) == 1 && b.h.count(1) == 1 })

	a.t.SetLinkDown(2, true)
	// Once node 1 has dropped an incoming frame, everything node 2 sent
	// before the cut has been processed: node 1's view of node 2 is final.
	in0 := a.t.Stats().FramesDroppedIn
	waitFor(t, "an incoming frame dropped", func() bool { return a.t.Stats().FramesDroppedIn > in0 })
	heard, acked := a.t.LastHeard(2), a.t.LeaseAck(2)
	// Likewise, once node 1 has dropped two outgoing liveness frames its last
	// real frame is long delivered.
	out0 := a.t.Stats().FramesDroppedOut
	waitFor(t, "outgoing frames dropped", func() bool { return a.t.Stats().FramesDroppedOut >= out0+2 })
	heardByB := b.t.LastHeard(1)

	a.t.Send(2, []Message{msgApp(1, 1, 2, 2), msgApp(1, 1, 2, 3)})
	b.t.Send(1, []Message{msgApp(1, 2, 1, 2)})
	waitFor(t, "node 2 reported unreachable", func() bool { return a.h.unreachableCount(2) > 0 })
	waitFor(t, "more frames dropped both ways", func() bool {
		st := a.t.Stats()
		return st.FramesDroppedIn >= in0+4 && st.FramesDroppedOut >= out0+5
	})
	if got := a.t.Stats().MessagesDropped; got != 2 {
		t.Errorf("MessagesDropped = %d, want 2", got)
	}
	if got := a.t.LastHeard(2); !got.Equal(heard) {
		t.Errorf("LastHeard(2) advanced while the link was down: %v -> %v", heard, got)
	}
	if got := a.t.LeaseAck(2); !got.Equal(acked) {
		t.Errorf("LeaseAck(2) advanced while the link was down: %v -> %v", acked, got)
	}
	if got := b.t.LastHeard(1); !got.Equal(heardByB) {
		t.Errorf("node 2 heard from node 1 while the link was down: %v -> %v", heardByB, got)
	}
	if n := a.h.count(2); n != 1 {
		t.Errorf("node 1 got %d messages from node 2, want only the one before the cut", n)
	}
	if n := b.h.count(1); n != 1 {
		t.Errorf("node 2 got %d messages from node 1, want only the one before the cut", n)
	}

	// Snapshots are cut too: refused at the sender, and at the receiver.
	noBody := func(func([]byte) error) error { return nil }
	if err := a.t.SendSnapshot(context.Background(), 2, nil, noBody); !errors.Is(err, ErrLinkDown) {
		t.Errorf("snapshot 1->2 over a down link: %v, want ErrLinkDown", err)
	}
	if err := b.t.SendSnapshot(context.Background(), 1, nil, noBody); status.Code(err) != codes.Unavailable {
		t.Errorf("snapshot 2->1 over a down link: %v, want Unavailable", err)
	}

	a.t.SetLinkDown(2, false)
	a.t.Send(2, []Message{msgApp(1, 1, 2, 4)})
	b.t.Send(1, []Message{msgApp(1, 2, 1, 3)})
	waitFor(t, "delivery after the link is up", func() bool { return a.h.count(2) == 2 && b.h.count(1) == 2 })
	if got := b.h.received(1)[1].Msg.GetIndex(); got != 4 {
		t.Errorf("node 2 got index %d after the link came up, want 4", got)
	}
	waitFor(t, "LastHeard and LeaseAck advance again", func() bool {
		return a.t.LastHeard(2).After(heard) && a.t.LeaseAck(2).After(acked)
	})
}

// TestPeerRestart stops node 2 and starts a new one at the same address;
// node 1 must report it unreachable, reconnect, and deliver again, and the
// lease acks must restart cleanly under the new incarnation.
func TestPeerRestart(t *testing.T) {
	c := newCluster(t, 2, func(cfg *Config) { cfg.LivenessInterval = 50 * time.Millisecond })
	c.connectAll(1, 2)
	a := c.node(1)
	a.t.Send(2, []Message{msgApp(1, 1, 2, 1)})
	waitFor(t, "delivery before restart", func() bool { return c.node(2).h.count(1) == 1 })

	addr := c.node(2).addr
	c.stop(2)
	waitFor(t, "node 2 reported unreachable", func() bool { return a.h.unreachableCount(2) > 0 })
	b := c.start(2, addr)

	// Raft retransmits what the transport dropped; so does this loop.
	waitFor(t, "delivery to the restarted node", func() bool {
		if b.h.count(1) > 0 {
			return true
		}
		a.t.Send(2, []Message{msgApp(1, 1, 2, 2)})
		return false
	})
	if m := b.h.received(1)[0]; m.Msg.GetIndex() != 2 {
		t.Errorf("restarted node got %v", m.Msg)
	}
	b.t.Send(1, []Message{msgApp(1, 2, 1, 7)})
	waitFor(t, "delivery from the restarted node", func() bool { return a.h.count(2) == 1 })
	restarted := time.Now()
	waitFor(t, "lease acks from the restarted node", func() bool {
		return a.t.LeaseAck(2).After(restarted) && b.t.LeaseAck(1).After(restarted)
	})
}

// TestQueueOverflow fills the queue to an unreachable node and checks the
// excess is dropped and reported.
func TestQueueOverflow(t *testing.T) {
	c := newCluster(t, 1, func(cfg *Config) { cfg.MaxQueuedMessages = 10 })
	// Node 9 resolves to a loopback address where nothing listens.
	c.mu.Lock()
	c.addrs[9] = "127.0.0.9:1"
	c.mu.Unlock()
	a := c.node(1)
	var msgs []Message
	for i := uint64(1); i <= 100; i++ {
		msgs = append(msgs, msgApp(1, 1, 9, i))
	}
	a.t.Send(9, msgs)
	waitFor(t, "node 9 reported unreachable", func() bool { return a.h.unreachableCount(9) > 0 })
	waitFor(t, "all messages dropped", func() bool { return a.t.Stats().MessagesDropped == 100 })
	if st := a.t.Stats(); st.FramesSent != 0 || st.MessagesSent != 0 {
		t.Errorf("sent to a node that does not exist: %+v", st)
	}
}

// TestBadConnectionsRefused: what arrives on the Raft port and is not a
// peer's frames (bytes that do not decode, a frame from no node, frames
// for another node: an address that now belongs to someone else) ends that
// connection only; the node goes on taking its peers' frames, and a sender
// whose frames were refused learns it from the closed connection and
// reports the peer unreachable.
func TestBadConnectionsRefused(t *testing.T) {
	c := newCluster(t, 3, func(cfg *Config) { cfg.LivenessInterval = 50 * time.Millisecond })
	c.connectAll(1, 2)
	b := c.node(2)

	for _, junk := range [][]byte{
		[]byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"), // a varint length that never ends
		{0x05, 0xde, 0xad, 0xbe, 0xef, 0x00},               // five bytes that are no Frame
	} {
		conn, err := rpc.DialPreface(context.Background(), b.addr, rpc.RaftPreface)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(junk); err != nil {
			t.Fatal(err)
		}
		// The node closes the connection: the read ends.
		if err := conn.SetReadDeadline(time.Now().Add(waitTimeout)); err != nil {
			t.Fatal(err)
		}
		if n, err := conn.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("junk %x: the node kept the connection (read %d, %v)", junk, n, err)
		}
		_ = conn.Close()
	}

	// Node 3 believes node 2 lives at node 1's address: node 1 refuses
	// frames meant for node 2.
	wrong := c.node(1).addr
	c.mu.Lock()
	c.addrs[2] = wrong
	c.mu.Unlock()
	x := c.node(3)
	waitFor(t, "node 3 to report node 2 unreachable", func() bool {
		x.t.Send(2, []Message{msgApp(1, 3, 2, 1)})
		return x.h.unreachableCount(2) > 0
	})
	if n := c.node(1).h.count(3); n != 0 {
		t.Fatalf("node 1 took %d messages meant for node 2", n)
	}

	// The node is still serving: node 1's frames reach node 2.
	before := b.h.count(1)
	c.node(1).t.Send(2, []Message{msgApp(1, 1, 2, 9)})
	waitFor(t, "delivery after the junk", func() bool { return b.h.count(1) == before+1 })
}
