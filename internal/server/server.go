// Package server assembles one ShaleDB node as `shale start` runs it: the
// tablet server, the master role on the first nodes of a cluster, the
// heartbeat to the master leader, and the node's identity in its data dir.
//
// A node started without --join on an empty data dir bootstraps a new
// cluster and is its first master. A node started with --join asks the
// master leader for a node id; while the cluster has fewer masters than its
// replication factor the joiner becomes a master too. A restarted node
// reads its identity back and rejoins as itself.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/consensus"
	"github.com/shaledb/shaledb/internal/master"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/metrics"
	"github.com/shaledb/shaledb/internal/rpc"
	"github.com/shaledb/shaledb/internal/storage"
	"github.com/shaledb/shaledb/internal/tserver"
)

// Default ports, as in YugabyteDB.
const (
	DefaultRPCPort  = 7100
	DefaultHTTPPort = 7000
)

// Config configures a node.
type Config struct {
	DataDir string
	// RPCAddr is the ip:port the node's RPC server listens on (port 0: any).
	RPCAddr string
	// HTTPAddr is advertised to the master for the web UI.
	HTTPAddr string
	// Join lists masters (ip or ip:port) of an existing cluster; empty
	// bootstraps a new cluster on a fresh data dir.
	Join []string
	// ReplicationFactor of a new cluster.
	ReplicationFactor int
	Placement         *masterpb.Placement
	// Raft timing; zero fields take the runtime defaults.
	Raft   consensus.Config
	Engine storage.Options
	// Master timing (zero: defaults).
	FollowerUnavailableTimeout time.Duration
	TServerDeadAfter           time.Duration
	HeartbeatInterval          time.Duration
	// TxnExpiry: see tserver.Config (zero: the default).
	TxnExpiry time.Duration
	// HistoryRetention: see tserver.Config (zero: the default, 15 min).
	HistoryRetention time.Duration
	// YSQLAddr is the ip[:port] YSQL (PostgreSQL protocol) listens on;
	// empty: no YSQL on this node.
	YSQLAddr string
	// MaxSQLMemory is the bytes YSQL statements may hold in memory at
	// once on this node, all together (zero: no limit); one that would
	// hold more fails with 53200.
	MaxSQLMemory int64
	Logger       *slog.Logger
}

// Server is a running node.
type Server struct {
	cfg  Config
	log  *slog.Logger
	node *tserver.Node
	ref  *master.Ref
	pool *rpc.Pool
	hb   *heartbeater
	reg  *metrics.Registry
	ysql atomic.Pointer[ysqlState]

	mu struct {
		sync.Mutex
		id     *identity
		master *master.Master
	}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// fatal receives an error that should stop the node (wrong cluster).
	fatal chan error
}

// ErrWrongCluster: the data dir belongs to another cluster than the one
// joined.
var ErrWrongCluster = errors.New("server: data dir belongs to another cluster")

func withPort(addr string, port int) string {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	return net.JoinHostPort(addr, fmt.Sprint(port))
}

// Start starts the node and returns once it is serving: bootstrapped, joined
// or restarted.
func Start(cfg Config) (*Server, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("server: --data-dir is required")
	}
	if cfg.RPCAddr == "" {
		cfg.RPCAddr = fmt.Sprintf("127.0.0.1:%d", DefaultRPCPort)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = time.Second
	}
	if cfg.ReplicationFactor <= 0 {
		cfg.ReplicationFactor = 3
	}
	for i, j := range cfg.Join {
		cfg.Join[i] = withPort(j, DefaultRPCPort)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, err
	}
	id, err := loadIdentity(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", cfg.RPCAddr)
	if err != nil {
		return nil, fmt.Errorf("server: listen %s: %w", cfg.RPCAddr, err)
	}
	rpcAddr := lis.Addr().String()
	s := &Server{cfg: cfg, log: cfg.Logger, ref: &master.Ref{}, pool: rpc.NewPool(), reg: metrics.NewRegistry(),
		fatal: make(chan error, 1)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	ok := false
	defer func() {
		if !ok {
			s.Stop()
			_ = lis.Close()
		}
	}()

	bootstrap := false
	becomeMaster := false
	switch {
	case id == nil && len(cfg.Join) == 0:
		bootstrap = true
		id = &identity{NodeID: 1}
	case id == nil:
		resp, err := s.join(cfg.Join, &masterpb.JoinRequest{RpcAddr: rpcAddr, HttpAddr: cfg.HTTPAddr, Placement: cfg.Placement}, joinTimeout)
		if err != nil {
			return nil, err
		}
		id = &identity{ClusterID: resp.GetClusterId(), NodeID: resp.GetNodeId(), Masters: resp.GetMasters()}
		becomeMaster = resp.GetBecomeMaster()
	case len(cfg.Join) > 0:
		// A restart: check the cluster is still ours and refresh our
		// address. Unreachable masters are fine (the cluster may be
		// restarting); a different cluster is not.
		// Briefly: the masters may be nodes restarting like this one, and
		// none serves before its own check ends (a stopped cluster
		// started node by node took 30 s per node). The heartbeats refresh
		// the masters and refuse another cluster's later anyway.
		resp, err := s.join(cfg.Join, &masterpb.JoinRequest{ClusterId: id.ClusterID, NodeId: id.NodeID, RpcAddr: rpcAddr,
			HttpAddr: cfg.HTTPAddr, Placement: cfg.Placement}, rejoinTimeout)
		if errors.Is(err, ErrWrongCluster) {
			return nil, err
		}
		if err == nil {
			id.Masters = resp.GetMasters()
			becomeMaster = resp.GetBecomeMaster()
		}
	}

	peers := map[uint64]string{}
	for mid, a := range id.Masters {
		if mid != id.NodeID {
			peers[mid] = a
		}
	}
	s.node, err = tserver.Start(tserver.Config{
		NodeID: id.NodeID, Listener: lis, DataDir: filepath.Join(cfg.DataDir, "db"), Peers: peers,
		Raft: cfg.Raft, Engine: cfg.Engine, ServerOptions: s.reg.ServerOptions(), TxnExpiry: cfg.TxnExpiry,
		HistoryRetention: cfg.HistoryRetention,
		Register:         func(g *grpc.Server) { master.Register(g, s.ref) },
	})
	if err != nil {
		return nil, err
	}
	if err := s.reg.AddNode(metrics.ForNode(s.node)); err != nil {
		return nil, err
	}
	_, hostsCatalog := s.node.Tablet(master.SysCatalogTabletID)
	if bootstrap || becomeMaster || hostsCatalog {
		m, err := master.Start(s.masterConfig(bootstrap))
		if err != nil {
			return nil, err
		}
		s.mu.master = m
		s.ref.Set(m)
		if bootstrap {
			ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
			err := m.WaitLeader(ctx)
			cancel()
			if err != nil {
				return nil, err
			}
			id.ClusterID = m.ClusterID()
			id.Masters = map[uint64]string{id.NodeID: rpcAddr}
		}
	}
	if err := id.save(cfg.DataDir); err != nil {
		return nil, err
	}
	s.mu.id = id
	s.hb = &heartbeater{
		node: s.node, nodeID: s.node.ID(), pool: s.pool, clusterID: id.ClusterID, rpcAddr: rpcAddr, httpAddr: cfg.HTTPAddr, ysqlAddr: s.ysqlAdvertised,
		placement: cfg.Placement, interval: cfg.HeartbeatInterval,
		onMasters:        s.learnMasters,
		onBecomeMaster:   s.becomeMaster,
		onCatalogVersion: s.noteCatalogVersion,
		ysqlVersion:      s.ysqlCatalogVersion,
		ysqlConnections:  s.ysqlConnections,
		onDropMaster:     s.dropMaster,
		onWrongCluster:   func(msg string) { s.fail(fmt.Errorf("%w: %s", ErrWrongCluster, msg)) },
	}
	s.hb.setMasters(id.Masters)
	s.ref.SetLeaderHint(s.hb.leaderAddr)
	// Read before the heartbeater starts: it may drop the master role.
	isMaster := s.mu.master != nil
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.hb.run(s.ctx)
	}()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.openTxnClient(rpcAddr)
	}()
	ok = true
	s.log.Info("node started", "node", id.NodeID, "cluster", id.ClusterID, "rpc", rpcAddr, "master", isMaster)
	return s, nil
}

// openTxnClient gives the node the client through which its tablets
// resolve transaction intents (status records live in other tablets).
func (s *Server) openTxnClient(rpcAddr string) {
	var b time.Duration = 50 * time.Millisecond
	for s.ctx.Err() == nil {
		addrs := s.hb.candidates()
		ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
		c, err := client.Open(ctx, client.Config{Masters: addrs, Pool: s.pool, Clock: s.node.Clock(), Local: s.node, LocalAddr: rpcAddr})
		cancel()
		if err == nil {
			s.node.SetClient(c)
			s.registerClientMetrics(c)
			s.startYSQL(c)
			go func() {
				<-s.ctx.Done()
				c.Close()
			}()
			return
		}
		select {
		case <-s.ctx.Done():
		case <-time.After(b):
		}
		b = min(2*b, 2*time.Second)
	}
}

// registerClientMetrics exports the counters of the node's client (the
// YSQL and YCQL gateways' and the tablets' resolver).
func (s *Server) registerClientMetrics(c *client.Client) {
	moves := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "shale_client_lease_moves_total",
		Help: "Requests given up at an unanswering leader because another replica held the lease (client.Config.LeaseProbeAfter).",
	}, func() float64 { return float64(c.Stats().LeaseMoves) })
	if err := s.reg.Prometheus().Register(moves); err != nil {
		s.log.Warn("client metrics", "err", err)
	}
}

// becomeMaster starts the master role on a running node: its sys catalog
// replica starts empty and the master leader fills it.
func (s *Server) becomeMaster() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.master != nil || s.ctx.Err() != nil {
		return
	}
	m, err := master.Start(s.masterConfig(false))
	if err != nil {
		s.log.Warn("taking the master role", "err", err)
		return
	}
	s.mu.master = m
	s.ref.Set(m)
	s.log.Info("took the master role", "node", s.node.ID())
}

// dropMaster gives up the master role of a node that was replaced as a
// master while it was away, and deletes its stale sys catalog replica.
func (s *Server) dropMaster() {
	s.mu.Lock()
	m := s.mu.master
	s.mu.master = nil
	s.mu.Unlock()
	if m == nil {
		return
	}
	s.ref.Set(nil)
	m.Stop()
	if err := s.node.DeleteTablet(master.SysCatalogTabletID); err != nil {
		s.log.Warn("deleting the stale sys catalog replica", "err", err)
	}
	s.log.Info("gave up the master role: replaced while away", "node", s.node.ID())
}

// masterConfig is the configuration of this node's master role.
func (s *Server) masterConfig(bootstrap bool) master.Config {
	return master.Config{
		Node: s.node, RPCAddr: s.node.Addr(), HTTPAddr: s.cfg.HTTPAddr, Bootstrap: bootstrap,
		ReplicationFactor: s.cfg.ReplicationFactor, FollowerUnavailableTimeout: s.cfg.FollowerUnavailableTimeout,
		TServerDeadAfter: s.cfg.TServerDeadAfter, Logger: s.cfg.Logger,
	}
}

// How long a new node tries to join, and a restarted one to check in.
const (
	joinTimeout   = 30 * time.Second
	rejoinTimeout = 3 * time.Second
)

// join calls Join on the given masters, following NOT_LEADER hints, until
// one answers or the timeout passes.
func (s *Server) join(addrs []string, req *masterpb.JoinRequest, timeout time.Duration) (*masterpb.JoinResponse, error) {
	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	defer cancel()
	var resp *masterpb.JoinResponse
	err := client.NewMasters(s.pool, addrs).Call(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
		var err error
		resp, err = mc.Join(ctx, req)
		return resp.GetError(), err
	})
	var me *client.MasterError
	switch {
	case err == nil:
		return resp, nil
	case errors.As(err, &me) && me.Code == masterpb.MasterError_WRONG_CLUSTER:
		return nil, fmt.Errorf("%w: %s", ErrWrongCluster, me.Message)
	default:
		return nil, fmt.Errorf("server: could not join through %v: %w", addrs, err)
	}
}

// learnMasters records the masters a heartbeat answer named.
func (s *Server) learnMasters(m map[uint64]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.mu.id
	if id == nil || mapsEqual(id.Masters, m) {
		return
	}
	id.Masters = m
	if err := id.save(s.cfg.DataDir); err != nil {
		s.log.Warn("saving identity", "err", err)
	}
}

func mapsEqual(a, b map[uint64]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func (s *Server) fail(err error) {
	select {
	case s.fatal <- err:
	default:
	}
}

// Fatal delivers an error after which the node should stop (for example the
// master says it belongs to another cluster).
func (s *Server) Fatal() <-chan error { return s.fatal }

// Node returns the tablet server.
func (s *Server) Node() *tserver.Node { return s.node }

// Master returns the master role, nil on a node without it.
func (s *Server) Master() *master.Master {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.master
}

// NodeID and ClusterID of this node.
func (s *Server) NodeID() uint64 { return s.node.ID() }

// ClusterID is the id of the cluster this node belongs to.
func (s *Server) ClusterID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.id.ClusterID
}

// RPCAddr is the address the node serves RPC on.
func (s *Server) RPCAddr() string { return s.node.Addr() }

// Masters returns the master addresses this node knows.
func (s *Server) Masters() map[uint64]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[uint64]string{}
	for k, v := range s.mu.id.Masters {
		out[k] = v
	}
	return out
}

// Drain prepares a clean shutdown: it hands off the node's leaderships to
// other replicas (within ctx), so that the groups it leads need not wait
// for its leases to expire when it stops.
func (s *Server) Drain(ctx context.Context) {
	if s.node == nil {
		return
	}
	start := time.Now()
	moved, failed := s.node.DrainLeaders(ctx)
	s.log.Info("leaderships handed off", "moved", moved, "not_in_time", failed, "took", time.Since(start).Round(time.Millisecond))
}

// Stop stops the node cleanly.
func (s *Server) Stop() {
	s.cancel()
	s.wg.Wait()
	s.mu.Lock()
	m := s.mu.master
	s.mu.Unlock()
	if m != nil {
		m.Stop()
	}
	if s.node != nil {
		if err := s.node.Stop(); err != nil {
			s.log.Warn("stopping node", "err", err)
		}
	}
	s.pool.Close()
}
