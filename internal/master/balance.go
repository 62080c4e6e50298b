package master

import (
	"context"
	"sort"
	"time"

	"github.com/shaledb/shaledb/internal/master/balancer"
	pb "github.com/shaledb/shaledb/internal/master/masterpb"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// Time limits of moves the balancer issued: a move not seen done by then
// is dropped from the in-flight set and may be planned again.
const (
	addLearnerTimeout = 5 * time.Minute // a snapshot of a big tablet takes a while
	changeTimeout     = 30 * time.Second
	transferTimeout   = 10 * time.Second
)

type inflightMove struct {
	move   balancer.Move
	issued time.Time
}

// balance runs one round of the balancer: it retires finished moves,
// plans with the cluster state, and issues the new moves.
func (m *Master) balance(ctx context.Context) {
	now := time.Now()
	var st balancer.State
	leaders := map[uint64]string{} // tablet -> leader address
	targets := map[uint64]string{} // tserver -> address
	err := m.withCatalog(func(c *catalog) error {
		m.retireMoves(c, now)
		st = m.balancerState(c, now)
		for id, ts := range c.tservers {
			targets[id] = ts.rec.GetRpcAddr()
		}
		for id, loc := range c.tablets {
			if ts, ok := c.tservers[loc.GetLeaderNode()]; ok {
				leaders[id] = ts.rec.GetRpcAddr()
			}
		}
		return nil
	})
	if err != nil {
		return
	}
	moves := balancer.Plan(st, balancer.Options{FollowerUnavailableTimeout: m.cfg.FollowerUnavailableTimeout})
	for _, mv := range moves {
		leader, ok := leaders[mv.Tablet]
		if !ok {
			continue
		}
		m.mu.Lock()
		// An operator's move (MoveReplica) may have claimed the tablet
		// since the state was taken.
		_, claimed := m.mu.replicaMoves[mv.Tablet]
		_, busy := m.mu.moves[mv.Tablet]
		if !claimed && !busy {
			m.mu.moves[mv.Tablet] = &inflightMove{move: mv, issued: now}
		}
		m.mu.Unlock()
		if claimed || busy {
			continue
		}
		m.log.Info("balancer: move", "kind", mv.Kind, "tablet", mv.Tablet, "tserver", mv.TServer, "from", mv.From, "reason", mv.Reason)
		m.wg.Add(1)
		go func(mv balancer.Move) {
			defer m.wg.Done()
			if err := m.execute(mv, leader, targets[mv.TServer]); err != nil {
				m.log.Warn("balancer: move failed", "kind", mv.Kind, "tablet", mv.Tablet, "tserver", mv.TServer, "err", err)
				m.mu.Lock()
				delete(m.mu.moves, mv.Tablet)
				m.mu.Unlock()
			}
		}(mv)
	}
}

// execute carries out one move through the tablet's leader.
func (m *Master) execute(mv balancer.Move, leaderAddr, targetAddr string) error {
	ctx, cancel := context.WithTimeout(m.ctx, changeTimeout)
	defer cancel()
	change := func(op tspb.ChangeReplicasRequest_Op) error {
		return m.tserverCall(ctx, leaderAddr, func(ctx context.Context, c tspb.TabletServerClient) (*tspb.TabletError, error) {
			resp, err := c.ChangeReplicas(ctx, &tspb.ChangeReplicasRequest{TabletId: mv.Tablet, Op: op, NodeId: mv.TServer, NodeAddr: targetAddr})
			return resp.GetError(), err
		})
	}
	switch mv.Kind {
	case balancer.AddLearner:
		var desc *tspb.TabletDescriptor
		_ = m.withCatalog(func(c *catalog) error {
			if loc, ok := c.tablets[mv.Tablet]; ok {
				desc = loc.GetTablet()
			}
			return nil
		})
		if desc == nil {
			return errorf(ErrNotFound, "tablet %d", mv.Tablet)
		}
		// The empty replica exists before the leader sends it anything.
		if err := m.tserverCall(ctx, targetAddr, func(ctx context.Context, c tspb.TabletServerClient) (*tspb.TabletError, error) {
			resp, err := c.CreateTablet(ctx, &tspb.CreateTabletRequest{Tablet: desc})
			return resp.GetError(), err
		}); err != nil {
			return err
		}
		return change(tspb.ChangeReplicasRequest_ADD_LEARNER)
	case balancer.PromoteLearner:
		return change(tspb.ChangeReplicasRequest_PROMOTE_LEARNER)
	case balancer.RemoveReplica:
		if err := change(tspb.ChangeReplicasRequest_REMOVE_REPLICA); err != nil {
			return err
		}
		// Best effort: a dead tserver's copy goes when it comes back and
		// reports a tablet it no longer belongs to.
		_ = m.tserverCall(ctx, targetAddr, func(ctx context.Context, c tspb.TabletServerClient) (*tspb.TabletError, error) {
			resp, err := c.DeleteTablet(ctx, &tspb.DeleteTabletRequest{TabletId: mv.Tablet})
			return resp.GetError(), err
		})
		return nil
	case balancer.TransferLeader:
		return m.tserverCall(ctx, leaderAddr, func(ctx context.Context, c tspb.TabletServerClient) (*tspb.TabletError, error) {
			resp, err := c.TransferLeader(ctx, &tspb.TransferLeaderRequest{TabletId: mv.Tablet, ToNode: mv.TServer})
			return resp.GetError(), err
		})
	}
	return nil
}

// retireMoves drops in-flight moves that are done or timed out. The caller
// holds m.mu (through withCatalog).
func (m *Master) retireMoves(c *catalog, now time.Time) {
	for id, im := range m.mu.moves {
		if moveOver(c, im, now) {
			delete(m.mu.moves, id)
		}
	}
}

// moveOver reports whether an issued move is done, as the tablet reports
// show it, or past its time limit (or its tablet gone).
func moveOver(c *catalog, im *inflightMove, now time.Time) bool {
	mv := im.move
	loc, ok := c.tablets[mv.Tablet]
	if !ok {
		return true
	}
	role, present := replicaRole(loc, mv.TServer)
	done, limit := false, moveTimeout(mv.Kind)
	switch mv.Kind {
	case balancer.AddLearner:
		// Done once the learner has caught up with the leader.
		done = present && role == pb.Replica_LEARNER && c.caughtUp(loc, mv.TServer)
	case balancer.PromoteLearner:
		done = present && role == pb.Replica_VOTER
	case balancer.RemoveReplica:
		done = !present
	case balancer.TransferLeader:
		done = loc.GetLeaderNode() == mv.TServer
	}
	return done || now.Sub(im.issued) > limit
}

// moveTimeout is how long a move of that kind may take before it is
// dropped (and planned, or issued, again).
func moveTimeout(k balancer.MoveKind) time.Duration {
	switch k {
	case balancer.AddLearner:
		return addLearnerTimeout
	case balancer.TransferLeader:
		return transferTimeout
	}
	return changeTimeout
}

// caughtUp reports whether node's replica of a tablet has applied entries
// and is within a few of its leader's, as their reports say.
func (c *catalog) caughtUp(loc *pb.TabletLocation, node uint64) bool {
	id := loc.GetTablet().GetTabletId()
	lr := c.report(loc.GetLeaderNode(), id)
	r := c.report(node, id)
	return lr != nil && r != nil && r.applied > 0 && r.applied+10 >= lr.applied
}

func replicaRole(loc *pb.TabletLocation, node uint64) (pb.Replica_Role, bool) {
	for _, r := range loc.GetReplicas() {
		if r.GetNodeId() == node {
			return r.GetRole(), true
		}
	}
	return 0, false
}

// report is what tserver node last said about tablet id.
func (c *catalog) report(node, id uint64) *reportedReplica {
	if ts, ok := c.tservers[node]; ok {
		return ts.reported[id]
	}
	return nil
}

// balancerState translates the catalog for the planner.
func (m *Master) balancerState(c *catalog, now time.Time) balancer.State {
	nowMs := now.UnixMilli()
	var st balancer.State
	black := map[uint64]bool{}
	for _, id := range c.config.GetBlacklist() {
		black[id] = true
	}
	for id, ts := range c.tservers {
		silent := time.Duration(nowMs-ts.lastHeartbeat) * time.Millisecond
		live := ts.heard && silent <= m.cfg.TServerDeadAfter
		bt := balancer.TServer{ID: id, Live: live, Blacklisted: black[id]}
		if !live {
			bt.DeadFor = silent
		}
		if p := ts.rec.GetPlacement(); p != nil {
			bt.Placement = balancer.Placement{Cloud: p.GetCloud(), Region: p.GetRegion(), Zone: p.GetZone()}
		}
		st.TServers = append(st.TServers, bt)
	}
	sort.Slice(st.TServers, func(i, j int) bool { return st.TServers[i].ID < st.TServers[j].ID })
	for id, loc := range c.tablets {
		if len(loc.GetSplitInto()) > 0 {
			continue // a split parent: only waiting to be deleted
		}
		t := balancer.Tablet{ID: id, TableID: uint64(loc.GetTablet().GetTableId()), SizeBytes: int64(loc.GetSizeBytes())}
		if tbl, ok := c.tables[loc.GetTablet().GetTableId()]; ok {
			t.RF = int(tbl.GetReplicationFactor())
		}
		for _, r := range loc.GetReplicas() {
			role := balancer.Voter
			if r.GetRole() == pb.Replica_LEARNER {
				role = balancer.Learner
			}
			t.Replicas = append(t.Replicas, balancer.Replica{TServer: r.GetNodeId(), Role: role})
		}
		// Trust the leader hint only while that tserver says so.
		if r := c.report(loc.GetLeaderNode(), id); r != nil && r.role == int32(tspb.TabletStatus_LEADER) {
			t.Leader = loc.GetLeaderNode()
		}
		st.Tablets = append(st.Tablets, t)
	}
	sort.Slice(st.Tablets, func(i, j int) bool { return st.Tablets[i].ID < st.Tablets[j].ID })
	for _, im := range m.mu.moves {
		st.InFlight = append(st.InFlight, im.move)
	}
	// An operator's move in progress counts as in flight for its whole
	// course: the planner leaves the tablet alone (it would otherwise take
	// the new replica for an excess one), and counts the loads as they will
	// be once it is done.
	for _, rm := range m.mu.replicaMoves {
		st.InFlight = append(st.InFlight, rm.inFlight()...)
	}
	return st
}
