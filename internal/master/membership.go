package master

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/shaledb/shaledb/internal/consensus"
	pb "github.com/shaledb/shaledb/internal/master/masterpb"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// Join admits a node: a new one gets a node id, a known one its old
// identity back. While the cluster has fewer masters than its replication
// factor, a joining node is asked to take the master role (as yugabyted
// does with the first nodes of an RF 3 cluster).
func (m *Master) Join(ctx context.Context, req *pb.JoinRequest) (*pb.JoinResponse, error) {
	m.ddl.Lock()
	defer m.ddl.Unlock()
	var resp *pb.JoinResponse
	var b batch
	var rec *pb.TServerRecord
	var cfg *pb.ClusterConfig
	err := m.withCatalog(func(c *catalog) error {
		if req.GetClusterId() != "" && req.GetClusterId() != c.config.GetClusterId() {
			return fmt.Errorf("%w: node belongs to cluster %s, this is %s", ErrWrongCluster, req.GetClusterId(), c.config.GetClusterId())
		}
		if req.GetRpcAddr() == "" {
			return fmt.Errorf("%w: no rpc address", ErrInvalidArgument)
		}
		id := req.GetNodeId()
		if id != 0 && req.GetClusterId() == "" {
			return fmt.Errorf("%w: a node id without a cluster id", ErrInvalidArgument)
		}
		cfg = proto.Clone(c.config).(*pb.ClusterConfig)
		if id == 0 {
			// A restarted node that lost its identity file but kept its
			// address is still a new node: ids are never reused.
			id = cfg.GetNextNodeId()
			cfg.NextNodeId++
		} else if _, ok := c.tservers[id]; !ok && id >= cfg.GetNextNodeId() {
			return fmt.Errorf("%w: node id %d was never handed out", ErrInvalidArgument, id)
		}
		becomeMaster := false
		isMaster := false
		for _, mid := range cfg.GetMasters() {
			isMaster = isMaster || mid == id
		}
		if !isMaster && len(cfg.GetMasters()) < int(cfg.GetReplicationFactor()) {
			cfg.Masters = append(cfg.Masters, id)
			becomeMaster, isMaster = true, true
		}
		rec = &pb.TServerRecord{NodeId: id, RpcAddr: req.GetRpcAddr(), HttpAddr: req.GetHttpAddr(), Placement: req.GetPlacement()}
		if old, ok := c.tservers[id]; !ok || !proto.Equal(old.rec, rec) {
			b.put(kindTServer, id, rec)
		}
		if !proto.Equal(cfg, c.config) {
			b.put(kindConfig, 0, cfg)
		}
		resp = &pb.JoinResponse{ClusterId: cfg.GetClusterId(), NodeId: id, BecomeMaster: becomeMaster || isMaster,
			ReplicationFactor: cfg.GetReplicationFactor(), Masters: mastersOf(c, cfg)}
		resp.Masters[id] = req.GetRpcAddr()
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = m.commit(ctx, &b, func(c *catalog) {
		c.config = cfg
		if ts, ok := c.tservers[rec.GetNodeId()]; ok {
			ts.rec = rec
		} else {
			c.tservers[rec.GetNodeId()] = &tserverState{rec: rec, lastHeartbeat: time.Now().UnixMilli(), reported: map[uint64]*reportedReplica{}}
		}
	})
	if err != nil {
		return nil, err
	}
	if rec.GetNodeId() != m.node.ID() {
		m.node.AddPeer(rec.GetNodeId(), rec.GetRpcAddr())
	}
	m.log.Info("master: node joined", "node", rec.GetNodeId(), "addr", rec.GetRpcAddr(), "master", resp.GetBecomeMaster())
	return resp, nil
}

// mastersOf maps master node ids to their addresses.
func mastersOf(c *catalog, cfg *pb.ClusterConfig) map[uint64]string {
	out := map[uint64]string{}
	for _, id := range cfg.GetMasters() {
		if ts, ok := c.tservers[id]; ok {
			out[id] = ts.rec.GetRpcAddr()
		}
	}
	return out
}

// Heartbeat records a tserver's liveness and tablet report and answers with
// the addresses of the masters and of every tserver.
func (m *Master) Heartbeat(ctx context.Context, req *pb.HeartbeatRequest) (*pb.HeartbeatResponse, error) {
	nowMs := time.Now().UnixMilli()
	resp := &pb.HeartbeatResponse{}
	var changed []*pb.TabletLocation
	var orphans []uint64
	var splits map[uint64]*tspb.TabletStatus
	var newRec *pb.TServerRecord
	err := m.withCatalog(func(c *catalog) error {
		if req.GetClusterId() != c.config.GetClusterId() {
			return fmt.Errorf("%w: node %d belongs to cluster %q, this is %s", ErrWrongCluster, req.GetNodeId(), req.GetClusterId(), c.config.GetClusterId())
		}
		ts, ok := c.tservers[req.GetNodeId()]
		if !ok {
			return fmt.Errorf("%w: node %d is not registered; join first", ErrNotFound, req.GetNodeId())
		}
		ts.lastHeartbeat, ts.heard = nowMs, true
		ts.dataBytes = req.GetDataBytes()
		ts.ysql, ts.ysqlVersion, ts.ysqlDBVersions = req.GetYsql(), req.GetYsqlCatalogVersion(), req.GetYsqlDbCatalogVersions()
		ts.ysqlConns = req.GetYsqlConnections()
		resp.CatalogVersion = c.config.GetCatalogVersion()
		// Reports are incremental: the first one a leader gets from a node
		// must be full (it asks), later ones carry what changed.
		if !req.GetFullReport() && !ts.fullReport {
			resp.NeedFullReport = true
		} else {
			if req.GetFullReport() {
				ts.reported = make(map[uint64]*reportedReplica, len(req.GetTablets()))
				ts.fullReport = true
			}
			for _, id := range req.GetRemovedTablets() {
				delete(ts.reported, id)
			}
			splitSeen := false
			for _, r := range req.GetTablets() {
				st := r.GetStatus()
				id := st.GetTablet().GetTabletId()
				rr := &reportedReplica{role: int32(st.GetRole()), term: st.GetTerm(), applied: st.GetAppliedIndex(), size: st.GetSizeBytes(),
					hasLease: st.GetHasLease(), voters: st.GetVoters(), learners: st.GetLearners(), leaderHin: st.GetLeaderNode(), status: st}
				ts.reported[id] = rr
				if id == SysCatalogTabletID {
					continue
				}
				splitSeen = splitSeen || len(st.GetTablet().GetSplitInto()) > 0
				loc, ok := c.tablets[id]
				if !ok {
					if _, tableKnown := c.tables[st.GetTablet().GetTableId()]; !tableKnown && id < c.config.GetNextTabletId() {
						orphans = append(orphans, id) // of a dropped table
					}
					continue
				}
				if len(loc.GetSplitInto()) > 0 {
					splitSeen = true // a split parent not yet deleted here
					continue
				}
				if st.GetRole() == tspb.TabletStatus_LEADER {
					if upd := c.applyLeaderReport(loc, req.GetNodeId(), rr); upd != nil {
						changed = append(changed, upd)
					}
				}
				if st.GetRole() == tspb.TabletStatus_LEADER || loc.GetLeaderNode() == req.GetNodeId() {
					loc.SizeBytes = st.GetSizeBytes()
				}
			}
			if splitSeen || len(req.GetRemovedTablets()) > 0 {
				// Split parents are cleaned up once the node holds both
				// children: look at everything the node holds.
				splits = make(map[uint64]*tspb.TabletStatus, len(ts.reported))
				for id, r := range ts.reported {
					if r.status != nil {
						splits[id] = r.status
					}
				}
				hasParent := false
				for id := range splits {
					if loc, ok := c.tablets[id]; ok && len(loc.GetSplitInto()) > 0 {
						hasParent = true
					} else if len(splits[id].GetTablet().GetSplitInto()) > 0 {
						hasParent = true
					}
				}
				if !hasParent {
					splits = nil
				}
			}
			if len(req.GetTablets()) > 0 || len(req.GetRemovedTablets()) > 0 {
				m.balanceDirty.Store(true)
			}
		}
		if rec := ts.rec; rec.GetRpcAddr() != req.GetRpcAddr() || rec.GetHttpAddr() != req.GetHttpAddr() ||
			rec.GetYsqlAddr() != req.GetYsqlAddr() || !proto.Equal(rec.GetPlacement(), req.GetPlacement()) {
			// The registration changed (a restart on another address or
			// with another placement, or the bootstrap node's first beat).
			newRec = &pb.TServerRecord{NodeId: rec.GetNodeId(), RpcAddr: req.GetRpcAddr(), HttpAddr: req.GetHttpAddr(),
				Placement: req.GetPlacement(), YsqlAddr: req.GetYsqlAddr()}
		}
		resp.Masters = mastersOf(c, c.config)
		isMaster := false
		for _, id := range c.config.GetMasters() {
			isMaster = isMaster || id == req.GetNodeId()
		}
		// What the node hosts is known once it sent a full report.
		_, hasCatalog := ts.reported[SysCatalogTabletID]
		resp.BecomeMaster = ts.fullReport && isMaster && !hasCatalog
		if ts.fullReport && hasCatalog && !isMaster {
			// Replaced while it was away: its replica is no longer in the
			// sys catalog's configuration (removed by growMasters).
			st := m.sys.Group().Status()
			member := false
			for _, v := range append(append([]uint64(nil), st.Voters...), st.Learners...) {
				member = member || v == req.GetNodeId()
			}
			resp.DropMaster = !member
		}
		resp.Tservers = map[uint64]string{}
		for id, ts := range c.tservers {
			resp.Tservers[id] = ts.rec.GetRpcAddr()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if req.GetNodeId() != m.node.ID() {
		m.node.AddPeer(req.GetNodeId(), req.GetRpcAddr())
	}
	if newRec != nil {
		m.ddl.Lock()
		var b batch
		b.put(kindTServer, newRec.GetNodeId(), newRec)
		err := m.commit(ctx, &b, func(c *catalog) {
			if ts, ok := c.tservers[newRec.GetNodeId()]; ok {
				ts.rec = newRec
			}
		})
		m.ddl.Unlock()
		if err != nil {
			m.log.Warn("master: recording a tserver's registration", "node", newRec.GetNodeId(), "err", err)
		}
	}
	if len(changed) > 0 {
		m.persistLocations(ctx, changed)
	}
	for _, id := range orphans {
		go m.deleteOrphan(req.GetRpcAddr(), id)
	}
	if splits != nil {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
			defer cancel()
			m.splitCleanup(ctx, req.GetNodeId(), req.GetRpcAddr(), splits)
		}()
	}
	return resp, nil
}

// missingReplicas returns the tablets whose leader counts node as a voter
// while node has not reported them for the follower-unavailable timeout: a
// replica whose creation failed, or a node that lost its data. Raft cannot
// refill such a replica in place (the leader believes it holds what it
// acknowledged), so the master removes it from the configuration and the
// balancer adds a fresh one through learner and snapshot.
func (m *Master) missingReplicas(c *catalog, ts *tserverState, node uint64, nowMs int64) (tablets []uint64, leaders []string) {
	if ts.missing == nil {
		ts.missing = map[uint64]int64{}
	}
	// Children of a split parent this node still holds appear when it
	// applies the split.
	pending := map[uint64]bool{}
	for id := range ts.reported {
		if loc, ok := c.tablets[id]; ok {
			for _, child := range loc.GetSplitInto() {
				pending[child] = true
			}
		}
	}
	seen := map[uint64]bool{}
	for id, loc := range c.tablets {
		if len(loc.GetSplitInto()) > 0 || ts.reported[id] != nil || pending[id] {
			continue
		}
		lr := c.report(loc.GetLeaderNode(), id)
		if lr == nil || lr.role != int32(tspb.TabletStatus_LEADER) {
			continue
		}
		voter := false
		for _, v := range lr.voters {
			voter = voter || v == node
		}
		if !voter {
			continue
		}
		seen[id] = true
		since, ok := ts.missing[id]
		if !ok {
			ts.missing[id] = nowMs
			continue
		}
		if time.Duration(nowMs-since)*time.Millisecond >= m.cfg.FollowerUnavailableTimeout {
			if lt, ok := c.tservers[loc.GetLeaderNode()]; ok {
				tablets = append(tablets, id)
				leaders = append(leaders, lt.rec.GetRpcAddr())
				ts.missing[id] = nowMs // not again before another timeout
			}
		}
	}
	for id := range ts.missing {
		if !seen[id] {
			delete(ts.missing, id)
		}
	}
	return tablets, leaders
}

// removeMissingReplica removes node's lost replica of a tablet through the
// tablet's leader.
func (m *Master) removeMissingReplica(leaderAddr string, tablet, node uint64) {
	ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
	defer cancel()
	err := m.tserverCall(ctx, leaderAddr, func(ctx context.Context, c tspb.TabletServerClient) (*tspb.TabletError, error) {
		resp, err := c.ChangeReplicas(ctx, &tspb.ChangeReplicasRequest{TabletId: tablet, Op: tspb.ChangeReplicasRequest_REMOVE_REPLICA, NodeId: node})
		return resp.GetError(), err
	})
	if err != nil {
		m.log.Warn("master: removing a lost replica", "tablet", tablet, "node", node, "err", err)
		return
	}
	m.log.Info("master: removed a lost replica (the balancer adds a new one)", "tablet", tablet, "node", node)
}

// applyLeaderReport folds a leader's view of its tablet into the catalog:
// the leader hint (memory only) and the replica set (returned for
// persisting when it changed).
func (c *catalog) applyLeaderReport(loc *pb.TabletLocation, node uint64, rr *reportedReplica) *pb.TabletLocation {
	loc.LeaderNode = node
	want := make([]*pb.Replica, 0, len(rr.voters)+len(rr.learners))
	for _, v := range rr.voters {
		want = append(want, &pb.Replica{NodeId: v, Role: pb.Replica_VOTER})
	}
	for _, l := range rr.learners {
		want = append(want, &pb.Replica{NodeId: l, Role: pb.Replica_LEARNER})
	}
	sort.Slice(want, func(i, j int) bool { return want[i].GetNodeId() < want[j].GetNodeId() })
	for _, r := range want {
		if ts, ok := c.tservers[r.GetNodeId()]; ok {
			r.Addr = ts.rec.GetRpcAddr()
		}
	}
	have := append([]*pb.Replica(nil), loc.GetReplicas()...)
	sort.Slice(have, func(i, j int) bool { return have[i].GetNodeId() < have[j].GetNodeId() })
	same := len(have) == len(want)
	for i := 0; same && i < len(want); i++ {
		same = have[i].GetNodeId() == want[i].GetNodeId() && have[i].GetRole() == want[i].GetRole()
	}
	if same {
		return nil
	}
	upd := proto.Clone(loc).(*pb.TabletLocation)
	upd.Replicas = want
	return upd
}

// persistLocations writes changed tablet replica sets, then applies them.
func (m *Master) persistLocations(ctx context.Context, locs []*pb.TabletLocation) {
	m.ddl.Lock()
	defer m.ddl.Unlock()
	var b batch
	for _, l := range locs {
		b.put(kindTablet, l.GetTablet().GetTabletId(), l)
	}
	err := m.commit(ctx, &b, func(c *catalog) {
		for _, l := range locs {
			if cur, ok := c.tablets[l.GetTablet().GetTabletId()]; ok {
				l.LeaderNode = cur.GetLeaderNode()
				c.tablets[l.GetTablet().GetTabletId()] = l
			}
		}
	})
	if err != nil {
		m.log.Warn("master: persisting tablet locations", "err", err)
	}
}

// deleteOrphan removes a replica of a tablet the catalog no longer has.
func (m *Master) deleteOrphan(addr string, id uint64) {
	ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
	defer cancel()
	err := m.tserverCall(ctx, addr, func(ctx context.Context, c tspb.TabletServerClient) (*tspb.TabletError, error) {
		resp, err := c.DeleteTablet(ctx, &tspb.DeleteTabletRequest{TabletId: id})
		return resp.GetError(), err
	})
	if err != nil {
		m.log.Warn("master: deleting an orphaned replica", "tablet", id, "addr", addr, "err", err)
	}
}

// leaderWork is the leader's periodic work: grow the sys catalog to the
// masters the cluster config names, then balance.
func (m *Master) leaderWork() {
	ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
	defer cancel()
	m.replaceDeadMaster(ctx)
	m.growMasters(ctx)
	m.removeLostReplicas()
	// Plan when reports changed, and every few seconds anyway (tservers
	// going silent change nothing that is reported).
	if m.balanceDirty.Swap(false) || time.Since(m.lastBalance) >= balanceEvery {
		m.lastBalance = time.Now()
		m.balance(ctx)
	}
}

// balanceEvery is how often the balancer plans when no report changed.
const balanceEvery = 5 * time.Second

// removeLostReplicas removes, through their leaders, the replicas that
// tservers have not reported for the follower-unavailable timeout (see
// missingReplicas).
func (m *Master) removeLostReplicas() {
	nowMs := time.Now().UnixMilli()
	type lost struct {
		tablet, node uint64
		leader       string
	}
	var todo []lost
	_ = m.withCatalog(func(c *catalog) error {
		for id, ts := range c.tservers {
			if !ts.fullReport || nowMs-ts.lastHeartbeat > m.cfg.TServerDeadAfter.Milliseconds() {
				continue // nothing known yet, or dead: the balancer's business
			}
			tablets, leaders := m.missingReplicas(c, ts, id, nowMs)
			for i := range tablets {
				todo = append(todo, lost{tablets[i], id, leaders[i]})
			}
		}
		return nil
	})
	for _, l := range todo {
		go m.removeMissingReplica(l.leader, l.tablet, l.node)
	}
}

// replaceDeadMaster swaps a master that has been silent longer than the
// follower-unavailable timeout for a live tserver without the master role:
// the cluster config names the new one (its heartbeat answer asks it to
// take the role), growMasters adds and promotes it, and then removes the
// dead one from the sys catalog. One replacement at a time.
func (m *Master) replaceDeadMaster(ctx context.Context) {
	nowMs := time.Now().UnixMilli()
	var cfg *pb.ClusterConfig
	var dead, repl uint64
	_ = m.withCatalog(func(c *catalog) error {
		isMaster := map[uint64]bool{}
		for _, id := range c.config.GetMasters() {
			isMaster[id] = true
		}
		for _, id := range c.config.GetMasters() {
			ts, ok := c.tservers[id]
			if id == m.node.ID() || !ok || time.Duration(nowMs-ts.lastHeartbeat)*time.Millisecond < m.cfg.FollowerUnavailableTimeout {
				continue
			}
			for _, cand := range m.liveTServers(c, nowMs) {
				if cid := cand.rec.GetNodeId(); !isMaster[cid] && (repl == 0 || cid < repl) {
					repl = cid
				}
			}
			if repl != 0 {
				dead = id
				break
			}
		}
		if dead == 0 {
			return nil
		}
		cfg = cloneConfig(c.config)
		for i, id := range cfg.Masters {
			if id == dead {
				cfg.Masters[i] = repl
			}
		}
		return nil
	})
	if cfg == nil {
		return
	}
	m.ddl.Lock()
	var b batch
	b.put(kindConfig, 0, cfg)
	err := m.commit(ctx, &b, func(c *catalog) { c.config = cfg })
	m.ddl.Unlock()
	if err != nil {
		m.log.Warn("master: replacing a dead master", "dead", dead, "new", repl, "err", err)
		return
	}
	m.log.Info("master: replacing a dead master", "dead", dead, "new", repl)
}

// mastersMissing reports whether a master the cluster config names is not
// a voter of the sys catalog yet.
func (m *Master) mastersMissing(st consensus.Status) bool {
	var want []uint64
	_ = m.withCatalog(func(c *catalog) error {
		want = c.config.GetMasters()
		return nil
	})
	return notAllVoters(want, st.Voters)
}

// notAllVoters reports whether some of want are not among voters.
func notAllVoters(want, voters []uint64) bool {
	return slices.ContainsFunc(want, func(id uint64) bool { return !slices.Contains(voters, id) })
}

// growMasters adds the masters named in the cluster config to the sys
// catalog's Raft group: as learner first, promoted once it has caught up.
func (m *Master) growMasters(ctx context.Context) {
	var want []uint64
	applied := map[uint64]uint64{}
	_ = m.withCatalog(func(c *catalog) error {
		want = append(want, c.config.GetMasters()...)
		for id, ts := range c.tservers {
			if r, ok := ts.reported[SysCatalogTabletID]; ok {
				applied[id] = r.applied
			}
		}
		return nil
	})
	g := m.sys.Group()
	st := g.Status()
	for _, id := range want {
		switch {
		case slices.Contains(st.Voters, id):
		case slices.Contains(st.Learners, id):
			// Promote once the learner's replica has caught up to within a
			// few entries of the leader.
			if a, ok := applied[id]; ok && a > 0 && a+10 >= st.AppliedIndex {
				if err := g.PromoteLearner(ctx, id); err != nil {
					m.log.Warn("master: promoting a master", "node", id, "err", err)
				} else {
					m.log.Info("master: master promoted to voter", "node", id)
				}
			}
		default:
			if err := g.AddLearner(ctx, id); err != nil {
				m.log.Warn("master: adding a master", "node", id, "err", err)
			} else {
				m.log.Info("master: master added as learner", "node", id)
			}
		}
		if _, ok := consensus.IsNotLeader(ctx.Err()); ok {
			return
		}
	}
	// Once every wanted master votes, drop replicas the config no longer
	// names (a replaced dead master).
	st = g.Status()
	if notAllVoters(want, st.Voters) {
		return
	}
	for _, id := range append(append([]uint64(nil), st.Voters...), st.Learners...) {
		if !slices.Contains(want, id) && id != m.node.ID() {
			if err := g.RemoveReplica(ctx, id); err != nil {
				m.log.Warn("master: removing a replaced master", "node", id, "err", err)
			} else {
				m.log.Info("master: replaced master removed", "node", id)
			}
			return
		}
	}
}
