package server

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/rpc"
	"github.com/shaledb/shaledb/internal/tserver"
)

// heartbeater sends the node's heartbeat to the master leader about every
// interval, following NOT_LEADER hints, and learns the addresses of the
// masters and of every tserver from the answers.
type heartbeater struct {
	node      *tserver.Node
	pool      *rpc.Pool
	clusterID string
	rpcAddr   string
	httpAddr  string
	placement *masterpb.Placement
	interval  time.Duration
	onMasters func(map[uint64]string)
	// onBecomeMaster is called when the master asks this node to take the
	// master role (it replaces a dead master).
	onBecomeMaster func()
	// onDropMaster is called when the master says this node was replaced
	// as a master.
	onDropMaster func()
	// onWrongCluster is called when the master says this node belongs to
	// another cluster.
	onWrongCluster func(msg string)

	mu      sync.Mutex
	masters []string // addresses, the presumed leader first
	leader  string
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
	req := &masterpb.HeartbeatRequest{
		ClusterId: h.clusterID, NodeId: h.node.ID(), RpcAddr: h.rpcAddr, HttpAddr: h.httpAddr,
		Placement: h.placement, DataBytes: dataBytes(h.node),
	}
	for _, st := range h.node.TabletStatuses() {
		req.Tablets = append(req.Tablets, &masterpb.TabletReport{Status: st})
	}
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
			for id, a := range resp.GetTservers() {
				if id != h.node.ID() {
					h.node.AddPeer(id, a)
				}
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
			return
		case masterpb.MasterError_NOT_LEADER:
			if l := e.GetLeaderAddr(); l != "" && !tried[l] {
				queue = append([]string{l}, queue...)
			}
		case masterpb.MasterError_WRONG_CLUSTER:
			if h.onWrongCluster != nil {
				h.onWrongCluster(e.GetMessage())
			}
			return
		}
	}
}

func dataBytes(n *tserver.Node) uint64 {
	var total uint64
	for _, tb := range n.Tablets() {
		total += tb.ApproximateSize()
	}
	return total
}
