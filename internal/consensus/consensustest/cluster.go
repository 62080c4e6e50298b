// Package consensustest runs in-process nodes (engine, gRPC server, raft
// transport, Multi-Raft runtime) on 127.0.0.x for tests of the consensus and
// tablet layers. Each node keeps its address and data directory across
// StopNode/StartNode, so restarts replay from disk as a real node would.
// Engines are opened as a tablet server opens them (docdb.EngineOptions):
// the tablet tests keep DocDB data in them.
package consensustest

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"google.golang.org/grpc"

	"github.com/shaledb/shaledb/internal/consensus"
	"github.com/shaledb/shaledb/internal/consensus/host"
	"github.com/shaledb/shaledb/internal/consensus/transport"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
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
	// WrapFS, if set, wraps every node's file system (storage.Options).
	WrapFS func(node uint64, fs vfs.FS) vfs.FS
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
	host      *host.Host
	running   atomic.Bool
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

func (c *Cluster) start(n *Node, l net.Listener) {
	var err error
	if l == nil {
		l, err = net.Listen("tcp", n.Addr)
		if err != nil {
			c.t.Fatalf("node %d: listen %s: %v", n.ID, n.Addr, err)
		}
	}
	h, err := host.Start(host.Config{
		NodeID:   n.ID,
		Listener: l,
		Dir:      n.Dir,
		Engine:   docdb.EngineOptions(c.engineOptions(n.ID)),
		Runtime:  c.opts.Runtime,
		Resolver: c.resolve,
		Clock:    n.Clock,
	})
	if err != nil {
		c.t.Fatalf("node %d: %v", n.ID, err)
	}
	n.host = h
	n.Engine, n.Server, n.Transport, n.Runtime = h.Engine, h.Server, h.Transport, h.Runtime
	n.running.Store(true)
	if c.opts.OnStart != nil {
		c.opts.OnStart(n)
	}
}

func (c *Cluster) engineOptions(node uint64) storage.Options {
	o := storage.Options{CacheSize: 16 << 20, MemTableSize: 8 << 20}
	if w := c.opts.WrapFS; w != nil {
		o.WrapFS = func(fs vfs.FS) vfs.FS { return w(node, fs) }
	}
	return o
}

// StopNode stops a node abruptly as far as its peers can tell: server,
// transport and runtime go away; what was synced to disk stays.
func (c *Cluster) StopNode(id uint64) {
	n := c.Node(id)
	if n == nil || !n.running.Load() {
		return
	}
	n.running.Store(false)
	if err := n.host.Stop(); err != nil {
		c.t.Errorf("%v", err)
	}
}

// StartNode restarts a stopped node on its old address and data directory.
func (c *Cluster) StartNode(id uint64) {
	n := c.Node(id)
	if n == nil || n.running.Load() {
		return
	}
	c.start(n, nil)
}

// Running reports whether node id is up.
func (c *Cluster) Running(id uint64) bool {
	n := c.Node(id)
	return n != nil && n.running.Load()
}

// Partition cuts (or heals) the link between two nodes in both directions.
func (c *Cluster) Partition(a, b uint64, down bool) {
	if na := c.Node(a); na != nil && na.running.Load() {
		na.Transport.SetLinkDown(b, down)
	}
	if nb := c.Node(b); nb != nil && nb.running.Load() {
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
// runtime's timing (see host.LivenessIntervalFor).
func LivenessIntervalFor(cfg consensus.Config) time.Duration {
	return host.LivenessIntervalFor(cfg)
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

// WaitUntil is WaitFor for a check that says what is still wrong ("" once
// the condition holds), so that a timeout reports the last problem seen.
func WaitUntil(t testing.TB, timeout time.Duration, what string, check func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		problem := check()
		if problem == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %s", timeout, what, problem)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Retry runs op, each time with a fresh context of a few seconds, until it
// returns nil, failing the test with op's last error after timeout. op
// typically finds the current leader and returns an error if there is none.
func Retry(t testing.TB, timeout time.Duration, what string, op func(ctx context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := op(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
