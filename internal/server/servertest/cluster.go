// Package servertest starts in-process clusters of whole nodes
// (server.Start) on 127.0.0.1, 127.0.0.2, … for tests and benchmarks: the
// first node bootstraps, the others join it, and Cleanup stops them all.
package servertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/consensus"
	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/master"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/server"
	"github.com/shaledb/shaledb/internal/storage"
)

// FastRaft is raft timing for tests: elections in a few hundred
// milliseconds.
func FastRaft() consensus.Config {
	return consensus.Config{
		TickInterval:      20 * time.Millisecond,
		ElectionTicks:     10,
		VoteRefusalWindow: 300 * time.Millisecond,
		LeaseDuration:     240 * time.Millisecond,
	}
}

// Cluster is a set of in-process nodes. A stopped node's slot in Servers is
// nil; its Dirs and Addrs stay so that it can be started again as itself.
type Cluster struct {
	T       testing.TB
	Dirs    []string
	Servers []*server.Server
	Addrs   []string
}

// Config is the configuration of node i (0-based), joining join.
func (c *Cluster) Config(i int, join []string) server.Config {
	return server.Config{
		DataDir: c.Dirs[i], RPCAddr: c.Addrs[i], Join: join, ReplicationFactor: 3,
		Raft: FastRaft(), Engine: storage.Options{CacheSize: 8 << 20, MemTableSize: 4 << 20},
		HeartbeatInterval: 100 * time.Millisecond, TServerDeadAfter: time.Second,
		FollowerUnavailableTimeout: 2 * time.Second,
		Placement:                  &masterpb.Placement{Cloud: "c", Region: "r", Zone: fmt.Sprintf("z%d", i%3)},
	}
}

// Start starts node i (again), joining join (nil bootstraps).
func (c *Cluster) Start(i int, join []string) {
	c.T.Helper()
	s, err := server.Start(c.Config(i, join))
	if err != nil {
		c.T.Fatalf("node %d: %v", i+1, err)
	}
	c.Servers[i] = s
	c.Addrs[i] = s.RPCAddr()
}

// Stop stops node i.
func (c *Cluster) Stop(i int) {
	if s := c.Servers[i]; s != nil {
		s.Stop()
		c.Servers[i] = nil
	}
}

// AddNode joins one more node and returns its index.
func (c *Cluster) AddNode() int {
	i := len(c.Servers)
	c.Dirs = append(c.Dirs, c.T.TempDir())
	c.Addrs = append(c.Addrs, fmt.Sprintf("127.0.0.%d:0", i+1))
	c.Servers = append(c.Servers, nil)
	c.Start(i, []string{c.Addrs[0]})
	return i
}

// New starts an n-node cluster; the test's Cleanup stops it.
func New(t testing.TB, n int) *Cluster {
	c := &Cluster{T: t, Dirs: make([]string, n), Servers: make([]*server.Server, n), Addrs: make([]string, n)}
	for i := range c.Dirs {
		c.Dirs[i] = t.TempDir()
		c.Addrs[i] = fmt.Sprintf("127.0.0.%d:0", i+1)
	}
	c.Start(0, nil)
	for i := 1; i < n; i++ {
		c.Start(i, []string{c.Addrs[0]})
	}
	t.Cleanup(func() {
		for i := range c.Servers {
			c.Stop(i)
		}
	})
	return c
}

// Index returns the index of the node with that id, or -1.
func (c *Cluster) Index(nodeID uint64) int {
	for i, s := range c.Servers {
		if s != nil && s.NodeID() == nodeID {
			return i
		}
	}
	return -1
}

// Call runs one master RPC at the leader, with a 30 s deadline.
func Call[R interface{ GetError() *masterpb.MasterError }](t testing.TB, ms *client.Masters, f func(ctx context.Context, mc masterpb.MasterClient) (R, error)) (R, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out R
	err := ms.Call(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
		r, err := f(ctx, mc)
		out = r
		return r.GetError(), err
	})
	return out, err
}

// WaitMasters waits until every node of a cluster of up to three runs the
// master role and the sys catalog has that many voters, so that losing one
// node leaves a master quorum.
func (c *Cluster) WaitMasters(timeout time.Duration) {
	c.T.Helper()
	want := min(len(c.Servers), 3)
	consensustest.WaitFor(c.T, timeout, fmt.Sprintf("%d master voters", want), func() bool {
		for _, s := range c.Servers[:want] {
			if s == nil || s.Master() == nil {
				return false
			}
		}
		tb, ok := c.Servers[0].Node().Tablet(master.SysCatalogTabletID)
		return ok && len(tb.Group().Status().Voters) == want
	})
}
