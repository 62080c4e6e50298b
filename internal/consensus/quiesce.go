package consensus

import (
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
	"google.golang.org/protobuf/proto"
)

// maybeQuiesce puts an idle group to sleep: once the leader has nothing in
// flight and every replica has every entry, it sends each follower a last
// heartbeat marked quiesceContext (carrying the commit index) and stops
// ticking. Followers that receive it stop ticking too. Any proposal or
// message wakes the group again.
func (g *Group) maybeQuiesce(bs raft.BasicStatus) {
	rt := g.rt
	if rt.cfg.DisableQuiescence || bs.RaftState != raft.StateLeader || bs.LeadTransferee != 0 {
		return
	}
	st := g.store
	if st.appliedIndex != st.lastIndex || bs.GetCommit() != st.lastIndex || g.rn.HasReady() {
		return
	}
	g.mu.Lock()
	busy := g.mu.quiesced || len(g.mu.proposals) > 0 || len(g.mu.waiters) > 0 || len(g.mu.inbox) > 0 || g.mu.followersOK == nil
	g.mu.Unlock()
	if busy {
		return
	}
	caughtUp := true
	var followers []uint64
	now := time.Now()
	g.rn.WithProgress(func(id uint64, _ raft.ProgressType, pr tracker.Progress) {
		if id == rt.cfg.NodeID {
			return
		}
		if pr.Match != st.lastIndex || pr.State != tracker.StateReplicate || now.Sub(rt.tr.LastHeard(id)) > rt.cfg.TickInterval*time.Duration(rt.cfg.ElectionTicks) {
			caughtUp = false
		}
		followers = append(followers, id)
	})
	if !caughtUp {
		return
	}
	beats := make(map[uint64]*raftpb.Message, len(followers))
	for _, to := range followers {
		beats[to] = &raftpb.Message{
			Type:    raftpb.MsgHeartbeat.Enum(),
			To:      proto.Uint64(to),
			From:    proto.Uint64(rt.cfg.NodeID),
			Term:    proto.Uint64(bs.GetTerm()),
			Commit:  proto.Uint64(st.lastIndex),
			Context: quiesceContext,
		}
	}
	rt.quiesceSend(g.id, beats)
	g.mu.Lock()
	g.mu.quiesced = true
	g.mu.Unlock()
	st.dropCache()
	rt.metrics.Quiesces.Add(1)
}
