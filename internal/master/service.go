package master

import (
	"context"
	"errors"
	"slices"
	"sort"
	"time"

	"github.com/shaledb/shaledb/internal/consensus"
	pb "github.com/shaledb/shaledb/internal/master/masterpb"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// service is the Master RPC service of a node. Failures travel as
// MasterError in the response.
type service struct {
	pb.UnimplementedMasterServer
	ref *Ref
}

// call resolves the node's master and maps f's error to the wire.
func (s *service) call(f func(m *Master) error) *pb.MasterError {
	m, hint := s.ref.get()
	if m == nil {
		e := &pb.MasterError{Code: pb.MasterError_NOT_LEADER, Message: "this node is not a master"}
		if hint != nil {
			e.LeaderAddr = hint()
		}
		return e
	}
	return m.wireErr(f(m))
}

func (m *Master) wireErr(err error) *pb.MasterError {
	if err == nil {
		return nil
	}
	e := &pb.MasterError{Message: err.Error()}
	_, notLeader := consensus.IsNotLeader(err)
	switch {
	case errors.Is(err, ErrNotLeader) || notLeader:
		e.Code = pb.MasterError_NOT_LEADER
		e.LeaderAddr = m.leaderAddr()
	case errors.Is(err, ErrNotFound):
		e.Code = pb.MasterError_NOT_FOUND
	case errors.Is(err, ErrConflict):
		e.Code = pb.MasterError_CONFLICT
	case errors.Is(err, ErrAlreadyExists):
		e.Code = pb.MasterError_ALREADY_EXISTS
	case errors.Is(err, ErrInvalidArgument):
		e.Code = pb.MasterError_INVALID_ARGUMENT
	case errors.Is(err, ErrWrongCluster):
		e.Code = pb.MasterError_WRONG_CLUSTER
	case errors.Is(err, ErrNotEnoughTServers):
		e.Code = pb.MasterError_NOT_ENOUGH_TSERVERS
	case errors.Is(err, ErrUnavailable), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.Is(err, consensus.ErrAmbiguous):
		e.Code = pb.MasterError_UNAVAILABLE
	default:
		e.Code = pb.MasterError_INTERNAL
	}
	return e
}

func (s *service) Join(ctx context.Context, req *pb.JoinRequest) (*pb.JoinResponse, error) {
	var resp *pb.JoinResponse
	e := s.call(func(m *Master) (err error) {
		resp, err = m.Join(ctx, req)
		return err
	})
	if resp == nil {
		resp = &pb.JoinResponse{}
	}
	resp.Error = e
	return resp, nil
}

func (s *service) Heartbeat(ctx context.Context, req *pb.HeartbeatRequest) (*pb.HeartbeatResponse, error) {
	var resp *pb.HeartbeatResponse
	e := s.call(func(m *Master) (err error) {
		resp, err = m.Heartbeat(ctx, req)
		return err
	})
	if resp == nil {
		resp = &pb.HeartbeatResponse{}
	}
	resp.Error = e
	return resp, nil
}

func (s *service) CreateTable(ctx context.Context, req *pb.CreateTableRequest) (*pb.CreateTableResponse, error) {
	resp := &pb.CreateTableResponse{}
	resp.Error = s.call(func(m *Master) (err error) {
		resp.Table, err = m.CreateTable(ctx, req)
		return err
	})
	return resp, nil
}

func (s *service) DropTable(ctx context.Context, req *pb.DropTableRequest) (*pb.DropTableResponse, error) {
	return &pb.DropTableResponse{Error: s.call(func(m *Master) error { return m.DropTable(ctx, req) })}, nil
}

func (s *service) GetTable(ctx context.Context, req *pb.GetTableRequest) (*pb.GetTableResponse, error) {
	resp := &pb.GetTableResponse{}
	resp.Error = s.call(func(m *Master) error {
		return m.withCatalog(func(c *catalog) error {
			id := req.GetTableId()
			if id == 0 {
				var ok bool
				if id, ok = c.byName[tableKey(req.GetNamespace(), req.GetName())]; !ok {
					return errorf(ErrNotFound, "table %s.%s", req.GetNamespace(), req.GetName())
				}
			}
			t, ok := c.tables[id]
			if !ok {
				return errorf(ErrNotFound, "table id %d", id)
			}
			resp.Table = t
			resp.CatalogVersion = c.config.GetCatalogVersion()
			for _, loc := range c.tabletsOf(id) {
				if len(loc.GetSplitInto()) == 0 {
					resp.Tablets = append(resp.Tablets, c.withAddrs(loc))
				}
			}
			return nil
		})
	})
	return resp, nil
}

// withAddrs returns a copy of a location with current replica addresses.
func (c *catalog) withAddrs(loc *pb.TabletLocation) *pb.TabletLocation {
	out := &pb.TabletLocation{Tablet: loc.GetTablet(), LeaderNode: loc.GetLeaderNode(), SizeBytes: loc.GetSizeBytes()}
	for _, r := range loc.GetReplicas() {
		addr := r.GetAddr()
		if ts, ok := c.tservers[r.GetNodeId()]; ok {
			addr = ts.rec.GetRpcAddr()
		}
		out.Replicas = append(out.Replicas, &pb.Replica{NodeId: r.GetNodeId(), Addr: addr, Role: r.GetRole()})
	}
	return out
}

func (s *service) ListTables(ctx context.Context, req *pb.ListTablesRequest) (*pb.ListTablesResponse, error) {
	resp := &pb.ListTablesResponse{}
	resp.Error = s.call(func(m *Master) error {
		return m.withCatalog(func(c *catalog) error {
			for _, t := range c.tables {
				resp.Tables = append(resp.Tables, t)
			}
			resp.CatalogVersion = c.config.GetCatalogVersion()
			sort.Slice(resp.Tables, func(i, j int) bool {
				a, b := resp.Tables[i], resp.Tables[j]
				return a.GetNamespace() < b.GetNamespace() || (a.GetNamespace() == b.GetNamespace() && a.GetName() < b.GetName())
			})
			return nil
		})
	})
	return resp, nil
}

func (s *service) ListMasters(ctx context.Context, req *pb.ListMastersRequest) (*pb.ListMastersResponse, error) {
	resp := &pb.ListMastersResponse{}
	resp.Error = s.call(func(m *Master) error {
		return m.withCatalog(func(c *catalog) error {
			st := m.sys.Group().Status()
			for _, id := range c.config.GetMasters() {
				mi := &pb.MasterInfo{NodeId: id, IsLeader: id == st.Node, IsLearner: !slices.Contains(st.Voters, id)}
				if ts, ok := c.tservers[id]; ok {
					mi.RpcAddr, mi.HttpAddr = ts.rec.GetRpcAddr(), ts.rec.GetHttpAddr()
				}
				resp.Masters = append(resp.Masters, mi)
			}
			return nil
		})
	})
	return resp, nil
}

func (s *service) ListTServers(ctx context.Context, req *pb.ListTServersRequest) (*pb.ListTServersResponse, error) {
	resp := &pb.ListTServersResponse{}
	resp.Error = s.call(func(m *Master) error {
		nowMs := time.Now().UnixMilli()
		return m.withCatalog(func(c *catalog) error {
			black := map[uint64]bool{}
			for _, id := range c.config.GetBlacklist() {
				black[id] = true
			}
			counts := map[uint64][2]uint32{}
			for _, t := range c.tablets {
				if len(t.GetSplitInto()) > 0 {
					continue
				}
				for _, r := range t.GetReplicas() {
					n := counts[r.GetNodeId()]
					n[0]++
					if t.GetLeaderNode() == r.GetNodeId() {
						n[1]++
					}
					counts[r.GetNodeId()] = n
				}
			}
			for id, ts := range c.tservers {
				info := &pb.TServerInfo{NodeId: id, RpcAddr: ts.rec.GetRpcAddr(), HttpAddr: ts.rec.GetHttpAddr(), YsqlAddr: ts.rec.GetYsqlAddr(),
					Placement: ts.rec.GetPlacement(), Blacklisted: black[id], LastHeartbeatUnixMs: ts.lastHeartbeat,
					Tablets: counts[id][0], Leaders: counts[id][1], DataBytes: ts.dataBytes,
					Heard: ts.heard, Ysql: ts.ysql, YsqlCatalogVersion: ts.ysqlVersion, YsqlDbCatalogVersions: ts.ysqlDBVersions,
					YsqlConnections: ts.ysqlConns}
				if nowMs-ts.lastHeartbeat > m.cfg.TServerDeadAfter.Milliseconds() {
					info.State = pb.TServerInfo_DEAD
				}
				resp.Tservers = append(resp.Tservers, info)
			}
			sort.Slice(resp.Tservers, func(i, j int) bool { return resp.Tservers[i].GetNodeId() < resp.Tservers[j].GetNodeId() })
			return nil
		})
	})
	return resp, nil
}

func (s *service) LeaderStepdown(ctx context.Context, req *pb.LeaderStepdownRequest) (*pb.LeaderStepdownResponse, error) {
	return &pb.LeaderStepdownResponse{Error: s.call(func(m *Master) error { return m.LeaderStepdown(ctx, req.GetTabletId(), req.GetToNode()) })}, nil
}

func (s *service) SplitTablet(ctx context.Context, req *pb.SplitTabletRequest) (*pb.SplitTabletResponse, error) {
	resp := &pb.SplitTabletResponse{}
	resp.Error = s.call(func(m *Master) (err error) {
		resp.Left, resp.Right, err = m.SplitTablet(ctx, req.GetTabletId())
		return err
	})
	return resp, nil
}

func (s *service) Blacklist(ctx context.Context, req *pb.BlacklistRequest) (*pb.BlacklistResponse, error) {
	return &pb.BlacklistResponse{Error: s.call(func(m *Master) error { return m.Blacklist(ctx, req.GetNodeId(), req.GetRemove()) })}, nil
}

func (s *service) MoveReplica(ctx context.Context, req *pb.MoveReplicaRequest) (*pb.MoveReplicaResponse, error) {
	var resp *pb.MoveReplicaResponse
	e := s.call(func(m *Master) (err error) {
		resp, err = m.MoveReplica(ctx, req.GetTabletId(), req.GetFromNode(), req.GetToNode())
		return err
	})
	if resp == nil {
		resp = &pb.MoveReplicaResponse{}
	}
	resp.Error = e
	return resp, nil
}

// LeaderStepdown moves a tablet's leadership away from its current leader
// (to toNode, or to another voter).
func (m *Master) LeaderStepdown(ctx context.Context, tabletID, toNode uint64) error {
	var leaderAddr string
	err := m.withCatalog(func(c *catalog) error {
		if tabletID == SysCatalogTabletID {
			leaderAddr = m.cfg.RPCAddr
			return nil
		}
		loc, ok := c.tablets[tabletID]
		if !ok {
			return errorf(ErrNotFound, "tablet %d", tabletID)
		}
		ts, ok := c.tservers[loc.GetLeaderNode()]
		if !ok {
			return errorf(ErrNotFound, "tablet %d has no known leader", tabletID)
		}
		leaderAddr = ts.rec.GetRpcAddr()
		return nil
	})
	if err != nil {
		return err
	}
	return m.tserverCall(ctx, leaderAddr, func(ctx context.Context, c tspb.TabletServerClient) (*tspb.TabletError, error) {
		resp, err := c.TransferLeader(ctx, &tspb.TransferLeaderRequest{TabletId: tabletID, ToNode: toNode})
		return resp.GetError(), err
	})
}

// Blacklist adds (or removes) a tserver to the set the balancer drains.
func (m *Master) Blacklist(ctx context.Context, node uint64, remove bool) error {
	m.ddl.Lock()
	defer m.ddl.Unlock()
	var cfg *pb.ClusterConfig
	err := m.withCatalog(func(c *catalog) error {
		if _, ok := c.tservers[node]; !ok {
			return errorf(ErrNotFound, "node %d", node)
		}
		cfg = cloneConfig(c.config)
		var out []uint64
		for _, id := range cfg.GetBlacklist() {
			if id != node {
				out = append(out, id)
			}
		}
		if !remove {
			out = append(out, node)
		}
		cfg.Blacklist = out
		return nil
	})
	if err != nil {
		return err
	}
	var b batch
	b.put(kindConfig, 0, cfg)
	return m.commit(ctx, &b, func(c *catalog) { c.config = cfg })
}
