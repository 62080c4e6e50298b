// Package servertest starts in-process clusters of real ShaleDB nodes
// (server.Server) for tests: node i+1 listens on 127.0.0.(i+1), the first
// bootstraps the cluster and the others join it, with fast raft and
// heartbeat timing and small engines.
//
// Usage:
//
//	c := servertest.NewCluster(t, 3)
//	ms := c.Masters() // calls the master leader
//	_, err := servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.CreateTableResponse, error) {
//		return mc.CreateTable(ctx, servertest.KVTable("kv", 8))
//	})
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
	"github.com/shaledb/shaledb/internal/rpc"
	"github.com/shaledb/shaledb/internal/server"
	"github.com/shaledb/shaledb/internal/storage"
)

// FastRaft is the raft timing of test nodes: elections in a fraction of a
// second.
func FastRaft() consensus.Config {
	return consensus.Config{
		TickInterval:      20 * time.Millisecond,
		ElectionTicks:     10,
		VoteRefusalWindow: 300 * time.Millisecond,
		LeaseDuration:     240 * time.Millisecond,
	}
}

// Cluster is a set of in-process nodes. Servers[i] is nil while node i+1
// is stopped.
type Cluster struct {
	t       testing.TB
	Dirs    []string
	Servers []*server.Server
	// Addrs are the nodes' RPC addresses (the bound ones once started).
	Addrs []string
	opts  Options
}

// Options are optional parts of a test cluster.
type Options struct {
	// YSQL serves the PostgreSQL protocol on every node (port 0).
	YSQL bool
	// Engine, if set, replaces the nodes' small test engines (an 8 MiB
	// block cache, 4 MiB memtables), e.g. for benchmarks over more data.
	Engine *storage.Options
	// Production gives the nodes a deployment's timing (raft ticks,
	// leases, node death, transaction expiry, heartbeats) and engines, for
	// tests that keep the one test process busy for minutes (TestPgbench):
	// there the fast test timing loses leases and expires transactions
	// whose heartbeats are merely late.
	Production bool
	// HistoryRetention bounds the MVCC history the tablets keep (zero:
	// the default): a read older than it fails.
	HistoryRetention time.Duration
	// MaxSQLMemory is every node's query memory budget (zero: none).
	MaxSQLMemory int64
}

// NewCluster starts n nodes (RF 3) and stops them when the test ends.
func NewCluster(t testing.TB, n int) *Cluster { return NewClusterWith(t, n, Options{}) }

// NewClusterWith starts n nodes with the given options.
func NewClusterWith(t testing.TB, n int, opts Options) *Cluster {
	c := &Cluster{t: t, Dirs: make([]string, n), Servers: make([]*server.Server, n), Addrs: make([]string, n), opts: opts}
	for i := range c.Dirs {
		c.Dirs[i] = t.TempDir()
		c.Addrs[i] = fmt.Sprintf("127.0.0.%d:0", i+1)
	}
	c.Start(0, nil)
	for i := 1; i < n; i++ {
		c.Start(i, []string{c.Addrs[0]})
	}
	misuses := storage.SingleDeleteMisuses()
	t.Cleanup(func() {
		for _, s := range c.Servers {
			if s != nil {
				s.Stop()
			}
		}
		// Flushes and compactions of the cluster's engines found a single
		// deletion of an intent written twice (docdb.deleteOnce's rule).
		if n := storage.SingleDeleteMisuses() - misuses; n != 0 {
			t.Errorf("%d single deletions met a key written more than once", n)
		}
	})
	return c
}

// Config is node i's configuration, joining through join.
func (c *Cluster) Config(i int, join []string) server.Config {
	ysql := ""
	if c.opts.YSQL {
		ysql = fmt.Sprintf("127.0.0.%d:0", i+1)
	}
	cfg := server.Config{
		YSQLAddr: ysql,
		DataDir:  c.Dirs[i], RPCAddr: c.Addrs[i], Join: join, ReplicationFactor: 3,
		// One zone per node: zone spreading then allows any placement.
		Placement: &masterpb.Placement{Cloud: "c", Region: "r", Zone: fmt.Sprintf("z%d", i)},
	}
	if c.opts.Engine != nil {
		cfg.Engine = *c.opts.Engine
	}
	cfg.HistoryRetention = c.opts.HistoryRetention
	cfg.MaxSQLMemory = c.opts.MaxSQLMemory
	if c.opts.Production {
		return cfg // zero values: a deployment's defaults
	}
	if c.opts.Engine == nil {
		cfg.Engine = storage.Options{CacheSize: 8 << 20, MemTableSize: 4 << 20}
	}
	cfg.Raft = FastRaft()
	cfg.HeartbeatInterval, cfg.TServerDeadAfter = 100*time.Millisecond, time.Second
	cfg.FollowerUnavailableTimeout, cfg.TxnExpiry = 2*time.Second, 2*time.Second
	return cfg
}

// Start (re)starts node i, joining through join (nil: bootstrap).
func (c *Cluster) Start(i int, join []string) {
	c.t.Helper()
	s, err := server.Start(c.Config(i, join))
	if err != nil {
		c.t.Fatalf("node %d: %v", i+1, err)
	}
	c.Servers[i] = s
	c.Addrs[i] = s.RPCAddr()
}

// Stop stops node i (if running).
func (c *Cluster) Stop(i int) {
	if s := c.Servers[i]; s != nil {
		s.Stop()
		c.Servers[i] = nil
	}
}

// Index returns the index of the running node with that id, or -1.
func (c *Cluster) Index(nodeID uint64) int {
	for i, s := range c.Servers {
		if s != nil && s.NodeID() == nodeID {
			return i
		}
	}
	return -1
}

// WaitMasters waits until every node of a cluster of up to three runs the
// master role and the sys catalog has that many voters, so that losing one
// node leaves a master quorum.
func (c *Cluster) WaitMasters(timeout time.Duration) {
	c.t.Helper()
	want := min(len(c.Servers), 3)
	consensustest.WaitFor(c.t, timeout, fmt.Sprintf("%d master voters", want), func() bool {
		for _, s := range c.Servers[:want] {
			if s == nil || s.Master() == nil {
				return false
			}
		}
		tb, ok := c.Servers[0].Node().Tablet(master.SysCatalogTabletID)
		return ok && len(tb.Group().Status().Voters) == want
	})
}

// AddNode joins one more node and returns its index.
func (c *Cluster) AddNode() int {
	i := len(c.Servers)
	c.Dirs = append(c.Dirs, c.t.TempDir())
	c.Addrs = append(c.Addrs, fmt.Sprintf("127.0.0.%d:0", i+1))
	c.Servers = append(c.Servers, nil)
	c.Start(i, []string{c.Addrs[0]})
	return i
}

// Masters returns a caller of the master leader over a pool closed when
// the test ends.
func (c *Cluster) Masters() *client.Masters {
	pool := rpc.NewPool()
	c.t.Cleanup(pool.Close)
	return client.NewMasters(pool, c.Addrs)
}

// Call runs one master RPC at the leader, within 30 seconds.
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

// CreateKVTable creates KVTable(name, tablets) and returns its id; it fails
// the test on an error.
func (c *Cluster) CreateKVTable(t testing.TB, name string, tablets uint32) uint32 {
	t.Helper()
	resp, err := Call(t, c.Masters(), func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.CreateTableResponse, error) {
		return mc.CreateTable(ctx, KVTable(name, tablets))
	})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetTable().GetTableId()
}

// KVTable is a request for a hash-partitioned key-value table (k text, v
// bytes) of the given number of tablets in namespace "test".
func KVTable(name string, tablets uint32) *masterpb.CreateTableRequest {
	return &masterpb.CreateTableRequest{
		Namespace: "test", Name: name,
		Schema: &masterpb.Schema{Columns: []*masterpb.ColumnSchema{
			{Id: 1, Name: "k", Type: "text", IsHashKey: true},
			{Id: 2, Name: "v", Type: "bytes", Nullable: true},
		}},
		Partitioning: &masterpb.Partitioning{Kind: masterpb.Partitioning_HASH, NumTablets: tablets},
	}
}
