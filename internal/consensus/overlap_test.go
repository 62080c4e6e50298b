package consensus

import (
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// TestCarriesNoEntries: what may start a cycle during another cycle's
// fsync (answers, heartbeats, commit-only appends, ticks) and what waits
// for it (proposals, appends with entries, incoming snapshots).
func TestCarriesNoEntries(t *testing.T) {
	msg := func(typ raftpb.MessageType, entries int) *raftpb.Message {
		m := &raftpb.Message{Type: typ.Enum()}
		for range entries {
			m.Entries = append(m.Entries, &raftpb.Entry{})
		}
		return m
	}
	cases := []struct {
		name  string
		setup func(g *Group)
		want  bool
	}{
		{"nothing queued", func(g *Group) {}, true},
		{"ticks", func(g *Group) { g.mu.ticks = 3 }, true},
		{"answers and heartbeats", func(g *Group) {
			g.mu.inbox = []*raftpb.Message{msg(raftpb.MsgAppResp, 0), msg(raftpb.MsgHeartbeat, 0), msg(raftpb.MsgHeartbeatResp, 0)}
		}, true},
		{"a commit-only append", func(g *Group) { g.mu.inbox = []*raftpb.Message{msg(raftpb.MsgApp, 0)} }, true},
		{"an append with entries", func(g *Group) {
			g.mu.inbox = []*raftpb.Message{msg(raftpb.MsgAppResp, 0), msg(raftpb.MsgApp, 2)}
		}, false},
		{"a proposal", func(g *Group) { g.mu.proposals = []pendingProposal{{}} }, false},
		{"an incoming snapshot", func(g *Group) { g.mu.snapIn = &incomingSnapshot{} }, false},
	}
	for _, c := range cases {
		g := &Group{}
		c.setup(g)
		if got := g.carriesNoEntries(); got != c.want {
			t.Errorf("%s: carriesNoEntries = %v, want %v", c.name, got, c.want)
		}
	}
}
