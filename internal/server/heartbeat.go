package server

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/rpc"
	"github.com/shaledb/shaledb/internal/tserver"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// heartbeater sends the node's heartbeat to the master leader about every
// interval, following NOT_LEADER hints, and learns the addresses of the
// masters and of every tserver from the answers.
type heartbeater struct {
	node      *tserver.Node
	nodeID    uint64
	pool      *rpc.Pool
	clusterID string
	rpcAddr   string
	httpAddr  string
	// ysqlAddr reports where the node serves YSQL ("" until it does).
	ysqlAddr  func() string
	placement *masterpb.Placement
	interval  time.Duration
	onMasters func(map[uint64]string)
	// onBecomeMaster is called when the master asks this node to take the
	// master role (it replaces a dead master).
	onBecomeMaster func()
	// onCatalogVersion gets the master's catalog version from every
	// answered heartbeat (SQL layers drop metadata older than it).
	onCatalogVersion func(uint64)
	// ysqlVersion, if set, reports whether the node serves YSQL, the
	// catalog version its YSQL layer knows and, per database, older ones
	// still in use.
	ysqlVersion func() (bool, uint64, map[string]uint64)
	// ysqlConnections, if set, counts the node's open YSQL connections.
	ysqlConnections func() uint32
	// onDropMaster is called when the master says this node was replaced
	// as a master.
	onDropMaster func()
	// onWrongCluster is called when the master says this node belongs to
	// another cluster.
	onWrongCluster func(msg string)

	mu      sync.Mutex
	masters []string // addresses, the presumed leader first
	leader  string

	// sent is the tablet report the master leader last acknowledged, by
	// tablet; later reports carry only what differs from it. needFull is
	// set until a full report is acknowledged (and when a leader asks).
	// Touched by the run goroutine only.
	sent     map[uint64]*tspb.TabletStatus
	pending  map[uint64]*tspb.TabletStatus // what the request being sent reports
	needFull bool
}

func (h *heartbeater) setMasters(m map[uint64]string) {
	var addrs []string
	for _, a := range m {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(addrs) > 0 {
		h.masters = addrs
	}
}

// leaderAddr is the master leader's address as last seen ("" if unknown).
func (h *heartbeater) leaderAddr() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.leader
}

func (h *heartbeater) candidates() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.masters)+1)
	if h.leader != "" {
		out = append(out, h.leader)
	}
	for _, a := range h.masters {
		if a != h.leader {
			out = append(out, a)
		}
	}
	return out
}

func (h *heartbeater) run(ctx context.Context) {
	h.needFull = true
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		h.beat(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// beat sends one heartbeat, trying the presumed leader first, then every
// master, following at most a few NOT_LEADER hints.
func (h *heartbeater) beat(ctx context.Context) {
	statuses, size := h.node.TabletStatuses(), dataBytes(h.node)
	req := h.request(statuses, size)
	if h.send(ctx, req) && h.needFull && !req.GetFullReport() {
		// The leader has no report of this node yet: send it all now.
		h.send(ctx, h.request(statuses, size))
	}
}

// request builds a heartbeat: a full report, or what changed since the
// last acknowledged one.
func (h *heartbeater) request(statuses []*tspb.TabletStatus, dataBytes uint64) *masterpb.HeartbeatRequest {
	req := &masterpb.HeartbeatRequest{
		ClusterId: h.clusterID, NodeId: h.nodeID, RpcAddr: h.rpcAddr, HttpAddr: h.httpAddr,
		Placement: h.placement, DataBytes: dataBytes, FullReport: h.needFull,
	}
	if h.ysqlAddr != nil {
		req.YsqlAddr = h.ysqlAddr()
	}
	if h.ysqlVersion != nil {
		req.Ysql, req.YsqlCatalogVersion, req.YsqlDbCatalogVersions = h.ysqlVersion()
	}
	if h.ysqlConnections != nil {
		req.YsqlConnections = h.ysqlConnections()
	}
	now := make(map[uint64]*tspb.TabletStatus, len(statuses))
	for _, st := range statuses {
		id := st.GetTablet().GetTabletId()
		now[id] = st
		if h.needFull || !sameStatus(h.sent[id], st) {
			req.Tablets = append(req.Tablets, &masterpb.TabletReport{Status: st})
		}
	}
	if !h.needFull {
		for id := range h.sent {
			if now[id] == nil {
				req.RemovedTablets = append(req.RemovedTablets, id)
			}
		}
	}
	h.pending = now
	return req
}

// send delivers one heartbeat, trying the presumed leader first, then
// every master, following NOT_LEADER hints. It reports whether a leader
// acknowledged it.
func (h *heartbeater) send(ctx context.Context, req *masterpb.HeartbeatRequest) bool {
	tried := map[string]bool{}
	queue := h.candidates()
	for len(queue) > 0 && ctx.Err() == nil {
		addr := queue[0]
		queue = queue[1:]
		if tried[addr] {
			continue
		}
		tried[addr] = true
		cc, err := h.pool.Conn(addr)
		if err != nil {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := masterpb.NewMasterClient(cc).Heartbeat(cctx, req)
		cancel()
		if err != nil {
			continue
		}
		switch e := resp.GetError(); e.GetCode() {
		case masterpb.MasterError_OK:
			h.mu.Lock()
			h.leader = addr
			h.mu.Unlock()
			if resp.GetNeedFullReport() {
				h.needFull = true
			} else {
				h.sent, h.needFull = h.pending, false
			}
			for id, a := range resp.GetTservers() {
				if id != h.node.ID() {
					h.node.AddPeer(id, a)
				}
			}
			if h.onCatalogVersion != nil {
				h.onCatalogVersion(resp.GetCatalogVersion())
			}
			if resp.GetBecomeMaster() && h.onBecomeMaster != nil {
				h.onBecomeMaster()
			}
			if resp.GetDropMaster() && h.onDropMaster != nil {
				h.onDropMaster()
			}
			if len(resp.GetMasters()) > 0 {
				h.setMasters(resp.GetMasters())
				if h.onMasters != nil {
					h.onMasters(resp.GetMasters())
				}
			}
			return true
		case masterpb.MasterError_NOT_LEADER:
			if l := e.GetLeaderAddr(); l != "" && !tried[l] {
				queue = append([]string{l}, queue...)
			}
		case masterpb.MasterError_WRONG_CLUSTER:
			if h.onWrongCluster != nil {
				h.onWrongCluster(e.GetMessage())
			}
			return false
		}
	}
	return false
}

func dataBytes(n *tserver.Node) uint64 {
	var total uint64
	for _, tb := range n.Tablets() {
		total += tb.ApproximateSize()
	}
	return total
}

// sameStatus compares what a tablet report says (without reflection: it
// runs for every tablet of the node every second). A tablet's key span
// only changes by splitting, which sets split_into.
func sameStatus(a, b *tspb.TabletStatus) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.GetRole() == b.GetRole() && a.GetTerm() == b.GetTerm() && a.GetAppliedIndex() == b.GetAppliedIndex() &&
		a.GetSizeBytes() == b.GetSizeBytes() && a.GetLeaderNode() == b.GetLeaderNode() && a.GetHasLease() == b.GetHasLease() &&
		slices.Equal(a.GetVoters(), b.GetVoters()) && slices.Equal(a.GetLearners(), b.GetLearners()) &&
		slices.Equal(a.GetTablet().GetSplitInto(), b.GetTablet().GetSplitInto())
}
