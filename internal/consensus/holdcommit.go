package consensus

import (
	"sync"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"

	"github.com/shaledb/shaledb/internal/consensus/transport"
)

// Commit-only appends. When a leader's commit index advances, etcd raft
// sends each follower an append without entries that only carries the new
// index, and the follower answers it: per replicated command a second
// round of messages, a follower cycle (and WAL write) for the apply alone,
// and a leader cycle for the answers. At low concurrency that round was a
// third of a node's frames. A leader therefore holds a commit-only append
// back for up to commitHoldDelay: the next append to that follower carries
// a newer commit index and replaces it; otherwise it is sent when the delay
// passes, before any other message of its group to that follower (order
// per group and follower is kept), or never when the group quiesces (the
// quiesce heartbeat carries the index). Raft tolerates a lost or late
// message; the cost is that a follower applies a command up to
// commitHoldDelay later when no further command follows. Only followers in
// the replicate state are held back: an empty append to a probing follower
// is a probe that raft waits for.
const commitHoldDelay = 10 * time.Millisecond

type holdKey struct{ group, to uint64 }

// commitHold is shared by the scheduler and the hold timer. The timer
// sends what is held itself, so that a long cycle (a big apply) does not
// hold followers back: they apply a bulk step at nearly the leader's time.
// Sends happen under mu, so that a message the timer sends is queued
// before any later message of its group (the transport keeps queue order).
type commitHold struct {
	mu    sync.Mutex
	msgs  map[holdKey]*raftpb.Message
	armed bool
}

// commitOnly reports whether m is an append without entries to a follower
// in the replicate state.
func (g *Group) commitOnly(m *raftpb.Message) bool {
	if m.GetType() != raftpb.MsgApp || len(m.GetEntries()) != 0 {
		return false
	}
	replicate := false
	to := m.GetTo()
	g.rn.WithProgress(func(id uint64, _ raft.ProgressType, pr tracker.Progress) {
		if id == to {
			replicate = pr.State == tracker.StateReplicate
		}
	})
	return replicate
}

// route queues m, sent by group g in this cycle, on out, holding back a
// commit-only append. A message held for the same follower goes first, or
// is dropped when m is an append (m carries a commit index as new).
func (rt *Runtime) route(g *Group, m *raftpb.Message, out map[uint64][]transport.Message) {
	to := m.GetTo()
	k := holdKey{g.id, to}
	hold := g.commitOnly(m)
	h := &rt.hold
	h.mu.Lock()
	defer h.mu.Unlock()
	if held, ok := h.msgs[k]; ok {
		delete(h.msgs, k)
		if m.GetType() != raftpb.MsgApp {
			out[to] = append(out[to], transport.Message{Group: g.id, Msg: held})
		} else {
			rt.metrics.CommitsReplaced.Add(1)
		}
	}
	if !hold {
		out[to] = append(out[to], transport.Message{Group: g.id, Msg: m})
		return
	}
	h.msgs[k] = m
	rt.metrics.CommitsHeld.Add(1)
	if !h.armed {
		h.armed = true
		time.AfterFunc(commitHoldDelay, rt.flushHeld)
	}
}

// flushHeld sends every held message.
func (rt *Runtime) flushHeld() {
	h := &rt.hold
	h.mu.Lock()
	defer h.mu.Unlock()
	h.armed = false
	out := make(map[uint64][]transport.Message)
	for k, m := range h.msgs {
		out[k.to] = append(out[k.to], transport.Message{Group: k.group, Msg: m})
	}
	clear(h.msgs)
	for to, msgs := range out {
		rt.metrics.MessagesSent.Add(uint64(len(msgs)))
		rt.tr.Send(to, msgs)
	}
}

// quiesceSend sends a quiescing group's last heartbeats, dropping what is
// held for its followers (the heartbeats carry the commit index), under
// the hold's lock so that no held message follows them.
func (rt *Runtime) quiesceSend(group uint64, beats map[uint64]*raftpb.Message) {
	h := &rt.hold
	h.mu.Lock()
	defer h.mu.Unlock()
	for to, m := range beats {
		delete(h.msgs, holdKey{group, to})
		rt.tr.Send(to, []transport.Message{{Group: group, Msg: m}})
	}
}
