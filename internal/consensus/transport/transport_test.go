package transport

import (
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// TestMessagesInOrderPerGroup sends appends of several groups from
// concurrent producers (one per group, as the scheduler would) from node 1 to
// nodes 2 and 3, and checks every group's messages arrive complete and in
// order.
func TestMessagesInOrderPerGroup(t *testing.T) {
	c := newCluster(t, 3, nil)
	const groups, perGroup = 8, 200
	var wg sync.WaitGroup
	for g := uint64(1); g <= groups; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := uint64(1); i <= perGroup; i++ {
				for _, to := range []uint64{2, 3} {
					c.node(1).t.Send(to, []Message{msgApp(g, 1, to, i)})
				}
			}
		}()
	}
	wg.Wait()
	for _, to := range []uint64{2, 3} {
		h := c.node(to).h
		waitFor(t, "all messages delivered", func() bool { return h.count(1) == groups*perGroup })
		next := make(map[uint64]uint64)
		for _, m := range h.received(1) {
			next[m.Group]++
			if got := m.Msg.GetIndex(); got != next[m.Group] {
				t.Fatalf("node %d group %d: got index %d, want %d", to, m.Group, got, next[m.Group])
			}
			if m.Msg.GetType() != raftpb.MsgApp || m.Msg.GetTo() != to || m.Msg.GetFrom() != 1 {
				t.Fatalf("node %d: mangled message %v", to, m.Msg)
			}
		}
	}
	waitFor(t, "sender stats", func() bool { return c.node(1).t.Stats().MessagesSent >= 2*groups*perGroup })
	st := c.node(1).t.Stats()
	if st.MessagesSent != 2*groups*perGroup {
		t.Errorf("MessagesSent = %d, want %d", st.MessagesSent, 2*groups*perGroup)
	}
	if st.MessagesDropped != 0 {
		t.Errorf("MessagesDropped = %d", st.MessagesDropped)
	}
}

// TestHeartbeatsCoalescedIntoOneFrame sends the heartbeats of 4000 groups in
// one Send and checks they travel as one frame of tuples and come back out as
// the same raft messages.
func TestHeartbeatsCoalescedIntoOneFrame(t *testing.T) {
	// No liveness frames during the test, so frame counts are exact.
	c := newCluster(t, 2, func(cfg *Config) { cfg.LivenessInterval = time.Hour })
	c.connectAll(1, 2)
	a, b := c.node(1), c.node(2)
	sent0, recv0 := a.t.Stats(), b.t.Stats()

	const groups = 4000
	in := heartbeats(1, 2, groups)
	in = append(in, Message{Group: groups + 1, Msg: hbResp(1, 2, 9)})
	a.t.Send(2, in)
	waitFor(t, "heartbeats delivered", func() bool { return b.h.count(1) == len(in) })
	// The sender counts a frame after Send returns, which may be after the
	// receiver has it.
	waitFor(t, "sender stats", func() bool { return a.t.Stats().MessagesSent-sent0.MessagesSent >= uint64(len(in)) })

	sent, recv := a.t.Stats(), b.t.Stats()
	if d := sent.FramesSent - sent0.FramesSent; d != 1 {
		t.Errorf("sender sent %d frames, want 1", d)
	}
	if d := recv.FramesReceived - recv0.FramesReceived; d != 1 {
		t.Errorf("receiver got %d frames, want 1", d)
	}
	if d := sent.HeartbeatsCoalesced - sent0.HeartbeatsCoalesced; d != uint64(len(in)) {
		t.Errorf("HeartbeatsCoalesced grew by %d, want %d", d, len(in))
	}
	if d := recv.MessagesReceived - recv0.MessagesReceived; d != uint64(len(in)) {
		t.Errorf("MessagesReceived grew by %d, want %d", d, len(in))
	}
	// A tuple is far smaller than a full message; 4000 heartbeats as full
	// messages plus framing would take well over 40 KB.
	if d := sent.BytesSent - sent0.BytesSent; d > 20*groups {
		t.Errorf("frame of %d bytes for %d heartbeats: not coalesced?", d, groups)
	}
	got := b.h.received(1)
	for i := range in {
		if got[i].Group != in[i].Group || !proto.Equal(got[i].Msg, in[i].Msg) {
			t.Fatalf("message %d: got group %d %v, want group %d %v", i, got[i].Group, got[i].Msg, in[i].Group, in[i].Msg)
		}
	}
}

// TestHeartbeatWithContextGoesFull checks a heartbeat carrying a context
// (ReadIndex) is sent as a full message and arrives intact.
func TestHeartbeatWithContextGoesFull(t *testing.T) {
	c := newCluster(t, 2, func(cfg *Config) { cfg.LivenessInterval = time.Hour })
	c.connectAll(1, 2)
	a, b := c.node(1), c.node(2)
	m := hb(1, 2, 3, 4)
	m.Context = []byte("read-index-request-17")
	resp := hbResp(2, 1, 3)
	resp.Context = []byte("read-index-request-17")
	before := a.t.Stats().HeartbeatsCoalesced
	a.t.Send(2, []Message{{Group: 5, Msg: m}, {Group: 5, Msg: hb(1, 2, 3, 4)}, {Group: 5, Msg: resp}})
	waitFor(t, "delivery", func() bool { return b.h.count(1) == 3 })
	waitFor(t, "sender stats", func() bool { return a.t.Stats().MessagesSent >= 3 })
	got := b.h.received(1)
	if !proto.Equal(got[0].Msg, m) || string(got[0].Msg.GetContext()) != "read-index-request-17" {
		t.Fatalf("got %v, want %v", got[0].Msg, m)
	}
	if !proto.Equal(got[2].Msg, resp) {
		t.Fatalf("got %v, want %v", got[2].Msg, resp)
	}
	if d := a.t.Stats().HeartbeatsCoalesced - before; d != 1 {
		t.Fatalf("HeartbeatsCoalesced grew by %d, want 1 (only the heartbeat without context)", d)
	}
}

// TestLivenessWhileIdle checks LastHeard and LeaseAck keep advancing in an
// idle 3-node cluster, at no more than about one frame per directed pair per
// interval.
func TestLivenessWhileIdle(t *testing.T) {
	const interval = 50 * time.Millisecond
	c := newCluster(t, 3, func(cfg *Config) { cfg.LivenessInterval = interval })
	ids := []uint64{1, 2, 3}
	c.connectAll(ids...)

	type pair struct{ a, b uint64 }
	heard0 := make(map[pair]time.Time)
	acked0 := make(map[pair]time.Time)
	framesSent := func() (n uint64) {
		for _, id := range ids {
			n += c.node(id).t.Stats().FramesSent
		}
		return n
	}
	frames0, start := framesSent(), time.Now()
	for _, a := range ids {
		for _, b := range ids {
			if a != b {
				heard0[pair{a, b}] = c.node(a).t.LastHeard(b)
				acked0[pair{a, b}] = c.node(a).t.LeaseAck(b)
			}
		}
	}
	// Wait until every pair has advanced twice over (at least a few
	// intervals), with no traffic but liveness frames.
	waitFor(t, "LastHeard and LeaseAck to advance", func() bool {
		for p, h0 := range heard0 {
			n := c.node(p.a).t
			if !n.LastHeard(p.b).After(h0.Add(2*interval)) || !n.LeaseAck(p.b).After(acked0[p].Add(2*interval)) {
				return false
			}
		}
		return true
	})
	elapsed := time.Since(start)
	frames := framesSent() - frames0

	// At most one liveness frame per directed pair per interval; allow 2x and
	// one frame per pair of rounding.
	pairs := uint64(len(heard0))
	limit := 2*pairs*uint64(elapsed/interval) + pairs
	if frames > limit {
		t.Errorf("%d frames in %v across %d directed pairs: want <= %d", frames, elapsed, pairs, limit)
	}
	if frames == 0 {
		t.Errorf("no frames sent, yet LastHeard advanced")
	}
	for p := range heard0 {
		n := c.node(p.a).t
		// Frames keep arriving: compare with a time taken after reading.
		ack, heard := n.LeaseAck(p.b), n.LastHeard(p.b)
		if now := time.Now(); ack.After(now) || heard.After(now) {
			t.Errorf("node %d about %d: LeaseAck %v / LastHeard %v in the future", p.a, p.b, ack, heard)
		}
	}
	for _, id := range ids {
		if st := c.node(id).t.Stats(); st.MessagesSent != 0 || st.MessagesReceived != 0 {
			t.Errorf("node %d: idle cluster moved messages: %+v", id, st)
		}
	}
}
