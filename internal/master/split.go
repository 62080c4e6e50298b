package master

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/shaledb/shaledb/internal/master/masterpb"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// SplitTablet splits a tablet in two at its middle (the hash midpoint for
// hash tablets): the master allocates the children's ids, the parent's
// leader applies the split through Raft, and the catalog records the
// children with the parent's replicas. Clients that still route to the
// parent get TABLET_SPLIT and reload the table.
func (m *Master) SplitTablet(ctx context.Context, tabletID uint64) (*tspb.TabletDescriptor, *tspb.TabletDescriptor, error) {
	m.ddl.Lock()
	defer m.ddl.Unlock()
	var parent *pb.TabletLocation
	var cfg *pb.ClusterConfig
	var addrs []string
	err := m.withCatalog(func(c *catalog) error {
		loc, ok := c.tablets[tabletID]
		if !ok || len(loc.GetSplitInto()) > 0 {
			return errorf(ErrNotFound, "tablet %d", tabletID)
		}
		parent = loc
		cfg = cloneConfig(c.config)
		// The leader first, then the other replicas.
		if ts, ok := c.tservers[loc.GetLeaderNode()]; ok {
			addrs = append(addrs, ts.rec.GetRpcAddr())
		}
		for _, r := range loc.GetReplicas() {
			if ts, ok := c.tservers[r.GetNodeId()]; ok && r.GetNodeId() != loc.GetLeaderNode() {
				addrs = append(addrs, ts.rec.GetRpcAddr())
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	left, right := cfg.GetNextTabletId(), cfg.GetNextTabletId()+1
	cfg.NextTabletId += 2
	var b batch
	b.put(kindConfig, 0, cfg)
	if err := m.commit(ctx, &b, func(c *catalog) { c.config = cfg }); err != nil {
		return nil, nil, err
	}
	// Ask the replicas, leader first, until the leader answers; a retry
	// with the same ids is answered with the same children.
	var resp *tspb.SplitTabletResponse
	deadline := time.Now().Add(20 * time.Second)
	for resp == nil && time.Now().Before(deadline) && ctx.Err() == nil {
		for _, addr := range addrs {
			var r *tspb.SplitTabletResponse
			err = m.tserverCall(ctx, addr, func(ctx context.Context, c tspb.TabletServerClient) (*tspb.TabletError, error) {
				var err error
				r, err = c.SplitTablet(ctx, &tspb.SplitTabletRequest{TabletId: tabletID, LeftId: left, RightId: right})
				return r.GetError(), err
			})
			if err == nil {
				resp = r
				break
			}
		}
		if resp == nil {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if resp == nil {
		return nil, nil, errorf(ErrUnavailable, "split of tablet %d: %v", tabletID, err)
	}
	if err := m.recordSplit(ctx, parent, resp.GetLeft(), resp.GetRight()); err != nil {
		return nil, nil, err
	}
	m.log.Info("master: tablet split", "parent", tabletID, "left", left, "right", right)
	return resp.GetLeft(), resp.GetRight(), nil
}

// recordSplit writes a split into the catalog: the parent marked, the
// children with the parent's voters. The caller holds m.ddl.
func (m *Master) recordSplit(ctx context.Context, parent *pb.TabletLocation, left, right *tspb.TabletDescriptor) error {
	p := proto.Clone(parent).(*pb.TabletLocation)
	p.SplitInto = []uint64{left.GetTabletId(), right.GetTabletId()}
	var children []*pb.TabletLocation
	for _, d := range []*tspb.TabletDescriptor{left, right} {
		d = proto.Clone(d).(*tspb.TabletDescriptor)
		d.SplitInto = nil
		loc := &pb.TabletLocation{Tablet: d}
		for _, r := range parent.GetReplicas() {
			if r.GetRole() == pb.Replica_VOTER {
				loc.Replicas = append(loc.Replicas, &pb.Replica{NodeId: r.GetNodeId(), Addr: r.GetAddr()})
			}
		}
		children = append(children, loc)
	}
	var b batch
	b.put(kindTablet, p.GetTablet().GetTabletId(), p)
	for _, c := range children {
		b.put(kindTablet, c.GetTablet().GetTabletId(), c)
	}
	return m.commit(ctx, &b, func(c *catalog) {
		c.tablets[p.GetTablet().GetTabletId()] = p
		for _, ch := range children {
			c.tablets[ch.GetTablet().GetTabletId()] = ch
		}
	})
}

// splitCleanup handles a split parent reported by a tserver: once the
// tserver reports both children, its copy of the parent is deleted; once
// no replica holds the parent any more, its record goes. It also adopts a
// split the catalog missed (the master failed over mid-split): the report
// names the children. Called without locks.
func (m *Master) splitCleanup(ctx context.Context, node uint64, addr string, reported map[uint64]*tspb.TabletStatus) {
	type action struct {
		parent      *pb.TabletLocation
		adopt       [2]*tspb.TabletDescriptor
		deleteLocal bool
	}
	var acts []action
	_ = m.withCatalog(func(c *catalog) error {
		for id, st := range reported {
			loc, ok := c.tablets[id]
			into := st.GetTablet().GetSplitInto()
			if !ok || len(into) != 2 {
				continue
			}
			l, lok := reported[into[0]]
			r, rok := reported[into[1]]
			if !lok || !rok {
				continue // the children are not open here yet
			}
			a := action{parent: loc, deleteLocal: true}
			if len(loc.GetSplitInto()) == 0 {
				a.adopt = [2]*tspb.TabletDescriptor{l.GetTablet(), r.GetTablet()}
			}
			acts = append(acts, a)
		}
		return nil
	})
	for _, a := range acts {
		pid := a.parent.GetTablet().GetTabletId()
		if a.adopt[0] != nil {
			m.ddl.Lock()
			err := m.recordSplit(ctx, a.parent, a.adopt[0], a.adopt[1])
			m.ddl.Unlock()
			if err != nil {
				continue
			}
			m.log.Info("master: adopted a split from a tablet report", "parent", pid)
		}
		if !a.deleteLocal {
			continue
		}
		err := m.tserverCall(ctx, addr, func(ctx context.Context, c tspb.TabletServerClient) (*tspb.TabletError, error) {
			resp, err := c.DeleteTablet(ctx, &tspb.DeleteTabletRequest{TabletId: pid})
			return resp.GetError(), err
		})
		if err != nil {
			continue
		}
		m.dropSplitReplica(ctx, pid, node)
	}
}

// dropSplitReplica forgets node's copy of a split parent, and the parent's
// record once no copy remains.
func (m *Master) dropSplitReplica(ctx context.Context, parentID, node uint64) {
	m.ddl.Lock()
	defer m.ddl.Unlock()
	var upd *pb.TabletLocation
	_ = m.withCatalog(func(c *catalog) error {
		loc, ok := c.tablets[parentID]
		if !ok || len(loc.GetSplitInto()) == 0 {
			return nil
		}
		upd = proto.Clone(loc).(*pb.TabletLocation)
		upd.Replicas = nil
		for _, r := range loc.GetReplicas() {
			if r.GetNodeId() != node {
				upd.Replicas = append(upd.Replicas, r)
			}
		}
		return nil
	})
	if upd == nil {
		return
	}
	var b batch
	if len(upd.GetReplicas()) == 0 {
		b.del(kindTablet, parentID)
	} else {
		b.put(kindTablet, parentID, upd)
	}
	_ = m.commit(ctx, &b, func(c *catalog) {
		if len(upd.GetReplicas()) == 0 {
			delete(c.tablets, parentID)
		} else {
			c.tablets[parentID] = upd
		}
	})
}
