// Package master is the cluster's control plane: the catalog (cluster
// config, tservers, tables, tablets) kept in the sys catalog tablet on the
// master nodes, tserver membership and heartbeats, DDL with tablet
// placement, and the balancer loop that keeps tablets at their replication
// factor and spread evenly.
//
// Every master node hosts a replica of the sys catalog; the master whose
// replica holds the Raft lease is the leader. It loads the catalog into
// memory when it becomes leader and serves every Master RPC from there;
// the others answer NOT_LEADER with the leader's address. Catalog mutations
// are written to the sys catalog first and applied in memory only once the
// write is acknowledged, so a new leader never lacks what an old one
// acknowledged.
package master

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/shaledb/shaledb/internal/consensus"
	pb "github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/rpc"
	"github.com/shaledb/shaledb/internal/tablet"
	"github.com/shaledb/shaledb/internal/tserver"
)

// Config configures the master role of a node.
type Config struct {
	// Node is the tserver node the master runs on; it hosts the sys
	// catalog replica.
	Node *tserver.Node
	// RPCAddr and HTTPAddr are this node's advertised addresses.
	RPCAddr  string
	HTTPAddr string
	// Bootstrap starts a new cluster: the sys catalog is created with this
	// node as its only voter and the cluster config written. Ignored when
	// the node already has a sys catalog replica.
	Bootstrap bool
	// ReplicationFactor of a bootstrapped cluster (default 3; 1 allowed).
	ReplicationFactor int
	// FollowerUnavailableTimeout: a tserver silent this long has its
	// replicas re-created elsewhere. Default 5 minutes.
	FollowerUnavailableTimeout time.Duration
	// TServerDeadAfter: a tserver silent this long is shown (and treated
	// for placement) as dead. Default 5 seconds.
	TServerDeadAfter time.Duration
	// TabletsPerTServer is the default number of hash tablets per live
	// tserver of a new table. Default 2.
	TabletsPerTServer int
	Logger            *slog.Logger
}

// Master is the master role of one node.
type Master struct {
	cfg  Config
	node *tserver.Node
	sys  *tablet.Tablet
	pool *rpc.Pool
	log  *slog.Logger

	// mu guards the leader state; ddl serializes catalog mutations (held
	// across the sys catalog write, never while holding mu).
	ddl sync.Mutex
	mu  struct {
		sync.Mutex
		cat  *catalog // nil unless leader with the catalog loaded
		term uint64   // the term the catalog was loaded in
		// moves are the balancer's moves in flight, by tablet.
		moves map[uint64]*inflightMove
		// replicaMoves are the operators' moves (MoveReplica) in
		// progress, by tablet; the balancer leaves those tablets alone.
		replicaMoves map[uint64]*replicaMove
		// movedRecently are the operators' moves done in the last
		// minute, by tablet (see MoveReplica).
		movedRecently map[uint64]*replicaMove
	}

	// balanceDirty: a report changed since the balancer last planned;
	// lastBalance is when it did (run goroutine only).
	balanceDirty atomic.Bool
	lastBalance  time.Time

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// ErrNotLeader is returned by catalog operations on a master that is not
// the leader (or has not loaded the catalog yet).
var ErrNotLeader = errors.New("master: not the leader")

func (c *Config) fill() {
	if c.ReplicationFactor <= 0 {
		c.ReplicationFactor = 3
	}
	if c.FollowerUnavailableTimeout <= 0 {
		c.FollowerUnavailableTimeout = 5 * time.Minute
	}
	if c.TServerDeadAfter <= 0 {
		c.TServerDeadAfter = 5 * time.Second
	}
	if c.TabletsPerTServer <= 0 {
		c.TabletsPerTServer = 2
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Register registers the Master service on a node's gRPC server. Every
// node registers it (a node may become a master later); until Start, and
// on non-leaders, calls answer NOT_LEADER.
func Register(s *grpc.Server, ref *Ref) {
	pb.RegisterMasterServer(s, &service{ref: ref})
}

// Ref is where the Master service finds the node's master role, set once it
// starts.
type Ref struct {
	mu sync.Mutex
	m  *Master
	// Leader, if set, names the master leader's address for nodes without
	// the master role (they learn it from heartbeats).
	leaderHint func() string
}

// Set attaches the running master.
func (r *Ref) Set(m *Master) {
	r.mu.Lock()
	r.m = m
	r.mu.Unlock()
}

// SetLeaderHint sets how a node without the master role names the leader.
func (r *Ref) SetLeaderHint(f func() string) {
	r.mu.Lock()
	r.leaderHint = f
	r.mu.Unlock()
}

func (r *Ref) get() (*Master, func() string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m, r.leaderHint
}

// Start starts the master role on cfg.Node: it opens (or, bootstrapping,
// creates) the sys catalog replica. A node that joins as a new master
// starts with an empty replica that the leader fills by snapshot.
func Start(cfg Config) (*Master, error) {
	cfg.fill()
	n := cfg.Node
	m := &Master{cfg: cfg, node: n, pool: rpc.NewPool(), log: cfg.Logger.With("master", n.ID())}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.mu.replicaMoves = make(map[uint64]*replicaMove)
	m.mu.movedRecently = make(map[uint64]*replicaMove)
	if tb, ok := n.Tablet(SysCatalogTabletID); ok {
		m.sys = tb
	} else {
		var voters []uint64
		if cfg.Bootstrap {
			voters = []uint64{n.ID()}
		}
		tb, err := n.CreateTablet(SysCatalogDescriptor(), voters)
		if err != nil {
			return nil, fmt.Errorf("master: create sys catalog: %w", err)
		}
		m.sys = tb
		if cfg.Bootstrap {
			if err := m.bootstrap(); err != nil {
				return nil, err
			}
		}
	}
	m.wg.Add(1)
	go m.run()
	return m, nil
}

// bootstrap writes the cluster config of a new cluster once this node leads
// its sys catalog.
func (m *Master) bootstrap() error {
	ctx, cancel := context.WithTimeout(m.ctx, 30*time.Second)
	defer cancel()
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	cfg := &pb.ClusterConfig{
		ClusterId:         fmt.Sprintf("%x-%x-%x-%x-%x", id[0:4], id[4:6], id[6:8], id[8:10], id[10:]),
		ReplicationFactor: int32(m.cfg.ReplicationFactor),
		NextNodeId:        m.node.ID() + 1,
		NextTableId:       firstTableID,
		NextTabletId:      firstTabletID,
		Masters:           []uint64{m.node.ID()},
		CreatedUnixMs:     time.Now().UnixMilli(),
	}
	if cfg.NextNodeId <= firstNodeID {
		cfg.NextNodeId = firstNodeID + 1
	}
	rec := &pb.TServerRecord{NodeId: m.node.ID(), RpcAddr: m.cfg.RPCAddr, HttpAddr: m.cfg.HTTPAddr}
	var b batch
	b.put(kindConfig, 0, cfg)
	b.put(kindTServer, rec.GetNodeId(), rec)
	for {
		_, err := m.sys.Write(ctx, &b.wb)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("master: bootstrap: %w", err)
		}
		time.Sleep(20 * time.Millisecond) // waiting for this node's own election
	}
}

// ClusterID returns the cluster id once this master leads with a loaded
// catalog ("" otherwise).
func (m *Master) ClusterID() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.cat == nil {
		return ""
	}
	return m.mu.cat.config.GetClusterId()
}

// IsLeader reports whether this master leads with its catalog loaded.
func (m *Master) IsLeader() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.cat != nil
}

// leaderAddr names the master leader as far as this master knows.
func (m *Master) leaderAddr() string {
	st := m.sys.Group().Status()
	if st.Leader == 0 {
		return ""
	}
	if st.Leader == m.node.ID() {
		return m.cfg.RPCAddr
	}
	addr, _ := m.node.PeerAddr(st.Leader)
	return addr
}

// run watches the sys catalog's lease: it loads the catalog on gaining it
// and drops it on losing it, and runs the leader's periodic work.
func (m *Master) run() {
	defer m.wg.Done()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastWork time.Time
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-tick.C:
		}
		st := m.sys.Group().Status()
		leading := st.Role == consensus.RoleLeader && m.sys.Group().HasLease()
		m.mu.Lock()
		loaded := m.mu.cat != nil && m.mu.term == st.Term
		if !leading && m.mu.cat != nil {
			m.log.Info("master: lost leadership", "term", m.mu.term)
			m.mu.cat = nil
		}
		m.mu.Unlock()
		if leading && !loaded {
			if err := m.load(st.Term); err != nil {
				m.log.Warn("master: loading the catalog", "err", err)
				continue
			}
		}
		switch {
		case leading && time.Since(lastWork) >= time.Second:
			lastWork = time.Now()
			m.leaderWork()
		case leading && m.mastersMissing(st):
			// Until the new masters vote, losing this node loses the
			// catalog: add and promote them on every tick, not each second.
			ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
			m.growMasters(ctx)
			cancel()
		}
	}
}

func (m *Master) load(term uint64) error {
	m.ddl.Lock()
	defer m.ddl.Unlock()
	ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
	defer cancel()
	cat, err := loadCatalog(ctx, m.sys, time.Now().UnixMilli())
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.mu.cat, m.mu.term = cat, term
	m.mu.moves = make(map[uint64]*inflightMove)
	m.mu.Unlock()
	m.log.Info("master: leading", "term", term, "tservers", len(cat.tservers), "tables", len(cat.tables), "tablets", len(cat.tablets))
	// Tell this node's transport every tserver's address.
	for id, ts := range cat.tservers {
		if id != m.node.ID() {
			m.node.AddPeer(id, ts.rec.GetRpcAddr())
		}
	}
	return nil
}

// Stop stops the master role (not the node).
func (m *Master) Stop() {
	m.cancel()
	m.wg.Wait()
	m.pool.Close()
}

// withCatalog runs f on the loaded catalog under mu, or returns
// ErrNotLeader.
func (m *Master) withCatalog(f func(c *catalog) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.cat == nil {
		return ErrNotLeader
	}
	return f(m.mu.cat)
}

// commit writes b to the sys catalog, then applies the in-memory change.
// The caller holds m.ddl.
func (m *Master) commit(ctx context.Context, b *batch, apply func(c *catalog)) error {
	if !b.empty() {
		if _, err := m.sys.Write(ctx, &b.wb); err != nil {
			if _, ok := consensus.IsNotLeader(err); ok {
				return ErrNotLeader
			}
			return err
		}
	}
	return m.withCatalog(func(c *catalog) error {
		apply(c)
		return nil
	})
}

// WaitLeader waits until this master leads with its catalog loaded.
func (m *Master) WaitLeader(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for !m.IsLeader() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("master: not leading: %w", ctx.Err())
		case <-t.C:
		}
	}
	return nil
}
