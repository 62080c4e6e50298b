// Package consensustest runs in-process nodes (engine, gRPC server, raft
// transport, Multi-Raft runtime) on 127.0.0.x for tests of the consensus and
// tablet layers. Each node keeps its address and data directory across
// StopNode/StartNode, so restarts replay from disk as a real node would.
package consensustest

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/shaledb/shaledb/internal/consensus"
	"github.com/shaledb/shaledb/internal/consensus/transport"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/rpc"
	"github.com/shaledb/shaledb/internal/storage"
)

// Options tune the test cluster.
type Options struct {
	// Runtime is the template for every node's runtime config (NodeID,
	// Engine and Transport are filled in).
	Runtime consensus.Config
	// OnStart runs after a node's runtime started (and after every
	// restart): create or reload the node's groups here.
	OnStart func(n *Node)
}

// Node is one in-process node.
type Node struct {
	ID     uint64
	Addr   string
	Dir    string
	Engine *storage.Engine
	// Clock is the node's hybrid clock, shared by its transport and what
	// runs on the node; a restart keeps it (a real restart's wall clock
	// does not go back either).
	Clock     *hlc.Clock
	Server    *grpc.Server
	Transport *transport.Transport
	Runtime   *consensus.Runtime
	running   bool
}

// Cluster is a set of in-process nodes.
type Cluster struct {
	t     testing.TB
	opts  Options
	mu    sync.Mutex
	nodes map[uint64]*Node
}

// NewCluster starts n nodes with ids 1..n on 127.0.0.1..127.0.0.n.
func NewCluster(t testing.TB, n int, opts Options) *Cluster {
	c := &Cluster{t: t, opts: opts, nodes: make(map[uint64]*Node)}
	for i := 1; i <= n; i++ {
		c.AddNode()
	}
	t.Cleanup(c.Stop)
	return c
}

// AddNode starts one more node with the next id.
func (c *Cluster) AddNode() *Node {
	c.mu.Lock()
	id := uint64(len(c.nodes) + 1)
	// Reserve a port now so the address is stable across restarts.
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.%d:0", id))
	if err != nil {
		c.mu.Unlock()
		c.t.Fatalf("listen: %v", err)
	}
	n := &Node{ID: id, Addr: l.Addr().String(), Dir: c.t.TempDir(), Clock: hlc.NewClock(nil, 0)}
	c.nodes[id] = n
	c.mu.Unlock()
	c.start(n, l)
	return n
}

// Node returns node id.
func (c *Cluster) Node(id uint64) *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id]
}

// Nodes returns every node (running or not) in id order.
func (c *Cluster) Nodes() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Node, 0, len(c.nodes))
	for i := uint64(1); i <= uint64(len(c.nodes)); i++ {
		out = append(out, c.nodes[i])
	}
	return out
}

func (c *Cluster) resolve(node uint64) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.nodes[node]
	if !ok {
		return "", fmt.Errorf("unknown node %d", node)
	}
	return n.Addr, nil
}

// handlerRef lets the transport be built before the runtime it delivers to.
type handlerRef struct{ rt *consensus.Runtime }

func (h *handlerRef) HandleMessages(from uint64, msgs []transport.Message) {
	h.rt.HandleMessages(from, msgs)
}
func (h *handlerRef) HandleUnreachable(to uint64) { h.rt.HandleUnreachable(to) }
func (h *handlerRef) HandleSnapshot(ctx context.Context, from uint64, s *transport.SnapshotStream) error {
	return h.rt.HandleSnapshot(ctx, from, s)
}

func (c *Cluster) start(n *Node, l net.Listener) {
	var err error
	if l == nil {
		l, err = net.Listen("tcp", n.Addr)
		if err != nil {
			c.t.Fatalf("node %d: listen %s: %v", n.ID, n.Addr, err)
		}
	}
	n.Engine, err = storage.Open(n.Dir, storage.Options{CacheSize: 16 << 20, MemTableSize: 8 << 20})
	if err != nil {
		c.t.Fatalf("node %d: %v", n.ID, err)
	}
	ref := &handlerRef{}
	cfg := c.opts.Runtime
	n.Transport = transport.New(transport.Config{NodeID: n.ID, Resolver: c.resolve, Handler: ref, Clock: n.Clock, LivenessInterval: LivenessIntervalFor(cfg)})
	cfg.NodeID, cfg.Engine, cfg.Transport = n.ID, n.Engine, n.Transport
	n.Runtime = consensus.NewRuntime(cfg)
	ref.rt = n.Runtime
	n.Server = rpc.NewServer()
	n.Transport.Register(n.Server)
	go func() { _ = n.Server.Serve(l) }()
	n.Runtime.Start()
	n.running = true
	if c.opts.OnStart != nil {
		c.opts.OnStart(n)
	}
}

// StopNode stops a node abruptly as far as its peers can tell: server,
// transport and runtime go away; what was synced to disk stays.
func (c *Cluster) StopNode(id uint64) {
	n := c.Node(id)
	if n == nil || !n.running {
		return
	}
	n.running = false
	n.Server.Stop()
	n.Transport.Stop()
	n.Runtime.Stop()
	if err := n.Engine.Close(); err != nil {
		c.t.Errorf("node %d: close engine: %v", id, err)
	}
}

// StartNode restarts a stopped node on its old address and data directory.
func (c *Cluster) StartNode(id uint64) {
	n := c.Node(id)
	if n == nil || n.running {
		return
	}
	c.start(n, nil)
}

// Running reports whether node id is up.
func (c *Cluster) Running(id uint64) bool {
	n := c.Node(id)
	return n != nil && n.running
}

// Partition cuts (or heals) the link between two nodes in both directions.
func (c *Cluster) Partition(a, b uint64, down bool) {
	if na := c.Node(a); na != nil && na.running {
		na.Transport.SetLinkDown(b, down)
	}
	if nb := c.Node(b); nb != nil && nb.running {
		nb.Transport.SetLinkDown(a, down)
	}
}

// Stop stops every running node.
func (c *Cluster) Stop() {
	for _, n := range c.Nodes() {
		c.StopNode(n.ID)
	}
}

// LivenessIntervalFor picks a transport liveness interval that fits the
// runtime's timing: lease acks trail by up to two intervals and a quiesced
// follower treats VoteRefusalWindow of silence as a dead leader, so the
// interval must be a small fraction of both.
func LivenessIntervalFor(cfg consensus.Config) time.Duration {
	if cfg.VoteRefusalWindow == 0 {
		return 0 // the transport's default suits the runtime's defaults
	}
	return cfg.VoteRefusalWindow / 6
}

// WaitFor polls cond every few milliseconds until it holds, failing the test
// after timeout. Tests wait for conditions, never for fixed times.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
