package tserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/shaledb/shaledb/internal/consensus"
	"github.com/shaledb/shaledb/internal/consensus/host"
	"github.com/shaledb/shaledb/internal/consensus/transport"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/rpc"
	"github.com/shaledb/shaledb/internal/storage"
	"github.com/shaledb/shaledb/internal/tablet"
	pb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
	"github.com/shaledb/shaledb/internal/txn"
)

var (
	// ErrTabletExists is returned by CreateTablet for a tablet this node
	// already hosts.
	ErrTabletExists = errors.New("tserver: tablet already exists")
	// ErrUnknownPeer is returned by the resolver for a node id with no
	// known address.
	ErrUnknownPeer = errors.New("tserver: unknown peer")
	// ErrStopped is returned by Node methods after Stop.
	ErrStopped = errors.New("tserver: node stopped")
)

// Config configures a tablet server node.
type Config struct {
	// NodeID is this node's id; non-zero and unique in the cluster.
	NodeID uint64
	// ListenAddr is the ip:port of the node's gRPC server; port 0 picks a
	// free port (see Node.Addr).
	ListenAddr string
	// Listener, if set, is used instead of listening on ListenAddr (a node
	// that must know its address before it has an id binds first).
	Listener net.Listener
	// DataDir holds the node's Pebble engine; created if missing.
	DataDir string
	// Peers maps other nodes' ids to their gRPC addresses. More can be
	// added later with Node.AddPeer.
	Peers map[uint64]string
	// Resolver, if set, is asked for the address of a node neither Peers
	// nor AddPeer named.
	Resolver func(node uint64) (string, error)
	// Raft is the template of the consensus runtime's config (timing);
	// zero fields take the runtime's defaults.
	Raft consensus.Config
	// Engine options; zero fields take the engine's defaults.
	Engine storage.Options
	// Clock is the node's hybrid logical clock. Default: a wall clock with
	// the default maximum offset.
	Clock *hlc.Clock
	// Register, if set, registers more services (the master's) on the
	// node's gRPC server before it starts serving.
	Register func(*grpc.Server)
	// HistoryRetention of every tablet (see tablet.Config); GCInterval is
	// how often the node garbage-collects its tablets' old versions.
	// Defaults: docdb.DefaultRetention and one minute.
	HistoryRetention time.Duration
	GCInterval       time.Duration
	// TxnExpiry: a pending transaction record without a heartbeat for
	// this long is aborted by whoever looks at it (default
	// txn.DefaultExpiry).
	TxnExpiry time.Duration
	// ServerOptions are passed on to the node's gRPC server (RPC metrics
	// interceptors, for example).
	ServerOptions []grpc.ServerOption
}

// Node is a running tablet server.
type Node struct {
	cfg  Config
	host *host.Host
	// pool reaches other tservers (safe points for follower reads).
	pool *rpc.Pool
	// safePoints caches, by tablet id, the last safe point learned for
	// follower reads.
	safePoints sync.Map
	// The GC loop and what it removed.
	gcStop, gcDone chan struct{}
	gcDeleted      atomic.Uint64
	txn            txnState
	local          localCalls
	// mux splits the RPC port between gRPC and the framed data
	// connections, which serveFramed accepts until Stop.
	mux        *rpc.Mux
	framedDone chan struct{}

	mu struct {
		sync.Mutex
		stopped bool
		peers   map[uint64]string
		tablets map[uint64]*tablet.Tablet
	}
}

// Start opens the engine under cfg.DataDir, starts the gRPC server, raft
// transport and consensus runtime, and reopens every tablet stored on the
// node.
func Start(cfg Config) (*Node, error) {
	if cfg.NodeID == 0 {
		return nil, errors.New("tserver: NodeID must be non-zero")
	}
	if cfg.DataDir == "" {
		return nil, errors.New("tserver: no DataDir")
	}
	if cfg.Clock == nil {
		cfg.Clock = hlc.NewClock(nil, 0)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("tserver: %w", err)
	}
	n := &Node{cfg: cfg, pool: rpc.NewPool()}
	n.local.init()
	n.mu.peers = make(map[uint64]string, len(cfg.Peers))
	for id, addr := range cfg.Peers {
		n.mu.peers[id] = addr
	}
	n.mu.tablets = make(map[uint64]*tablet.Tablet)
	n.txn.expiry = cfg.TxnExpiry
	if n.txn.expiry <= 0 {
		n.txn.expiry = txn.DefaultExpiry
	}
	n.txn.waits = map[docdb.TxnID]waitEdge{}
	n.txn.finished = map[docdb.TxnID]tablet.TxnStatus{}
	n.txn.askedPending = map[docdb.TxnID]time.Time{}

	lis := cfg.Listener
	var err error
	if lis == nil {
		lis, err = net.Listen("tcp", cfg.ListenAddr)
	}
	if err != nil {
		return nil, fmt.Errorf("tserver: node %d: listen: %w", cfg.NodeID, err)
	}
	n.mux = rpc.NewMux(lis)
	n.framedDone = make(chan struct{})
	go n.serveFramed(n.mux.Data())
	h, err := host.Start(host.Config{
		NodeID:        cfg.NodeID,
		Listener:      n.mux.GRPC(),
		RaftListener:  n.mux.Raft(),
		Dir:           cfg.DataDir,
		Engine:        docdb.EngineOptions(cfg.Engine),
		Runtime:       cfg.Raft,
		Resolver:      n.resolve,
		Clock:         cfg.Clock,
		ServerOptions: cfg.ServerOptions,
		Register: func(s *grpc.Server) {
			pb.RegisterTabletServerServer(s, &service{n: n})
			if cfg.Register != nil {
				cfg.Register(s)
			}
		},
	})
	if err != nil {
		n.mux.Close()
		<-n.framedDone
		return nil, fmt.Errorf("tserver: %w", err)
	}
	n.host = h
	descs, err := tablet.LoadDescriptors(h.Engine)
	if err == nil {
		for _, d := range descs {
			if _, err = n.openTablet(d, nil); err != nil {
				break
			}
		}
	}
	if err != nil {
		n.mux.Close()
		<-n.framedDone
		_ = h.Stop()
		return nil, fmt.Errorf("tserver: node %d: reopen tablets: %w", cfg.NodeID, err)
	}
	if n.cfg.GCInterval <= 0 {
		n.cfg.GCInterval = time.Minute
	}
	n.gcStop = make(chan struct{})
	n.gcDone = make(chan struct{})
	go n.gcLoop()
	go n.txnCleanupLoop()
	return n, nil
}

// gcLoop collects old versions of every tablet replica periodically, one
// tablet at a time so the node's foreground work keeps most of the disk.
func (n *Node) gcLoop() {
	defer close(n.gcDone)
	t := time.NewTicker(n.cfg.GCInterval)
	defer t.Stop()
	for {
		select {
		case <-n.gcStop:
			return
		case <-t.C:
		}
		for _, tb := range n.Tablets() {
			select {
			case <-n.gcStop:
				return
			default:
			}
			deleted, err := tb.GC()
			if err != nil {
				slog.Warn("tserver: gc", "node", n.cfg.NodeID, "tablet", tb.Descriptor().ID, "err", err)
			}
			n.gcDeleted.Add(uint64(deleted))
		}
	}
}

// GCDeleted counts the versions this node's GC has removed.
func (n *Node) GCDeleted() uint64 { return n.gcDeleted.Load() }

// ID returns the node's id.
func (n *Node) ID() uint64 { return n.cfg.NodeID }

// Addr returns the address the node's gRPC server listens on.
func (n *Node) Addr() string { return n.host.Addr() }

// Clock returns the node's hybrid logical clock.
func (n *Node) Clock() *hlc.Clock { return n.cfg.Clock }

// Engine returns the node's storage engine.
func (n *Node) Engine() *storage.Engine { return n.host.Engine }

// Runtime returns the node's consensus runtime.
func (n *Node) Runtime() *consensus.Runtime { return n.host.Runtime }

// Transport returns the node's raft transport.
func (n *Node) Transport() *transport.Transport { return n.host.Transport }

// AddPeer sets (or changes) the address of node id.
func (n *Node) AddPeer(id uint64, addr string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.mu.peers[id] = addr
}

// PeerAddr returns the RPC address of node id, as far as this node knows.
func (n *Node) PeerAddr(id uint64) (string, error) { return n.resolve(id) }

func (n *Node) resolve(id uint64) (string, error) {
	n.mu.Lock()
	addr, ok := n.mu.peers[id]
	n.mu.Unlock()
	if ok {
		return addr, nil
	}
	if n.cfg.Resolver != nil {
		return n.cfg.Resolver(id)
	}
	return "", fmt.Errorf("%w: node %d", ErrUnknownPeer, id)
}

// CreateTablet creates a replica of a tablet on this node. A new tablet's
// replicas are all created with the same bootstrapPeers (its initial
// voters); a replica being added to an existing group passes none and is
// filled by a snapshot from the leader.
func (n *Node) CreateTablet(desc tablet.Descriptor, bootstrapPeers []uint64) (*tablet.Tablet, error) {
	return n.openTablet(desc, bootstrapPeers)
}

func (n *Node) openTablet(desc tablet.Descriptor, bootstrap []uint64) (*tablet.Tablet, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mu.stopped {
		return nil, ErrStopped
	}
	if _, ok := n.mu.tablets[desc.ID]; ok {
		return nil, fmt.Errorf("%w: %d on node %d", ErrTabletExists, desc.ID, n.cfg.NodeID)
	}
	tb, err := tablet.Open(tablet.Config{
		Descriptor: desc,
		Runtime:    n.host.Runtime,
		Engine:     n.host.Engine,
		Clock:      n.cfg.Clock,
		Bootstrap:  bootstrap,
		OnSplit:    n.openChildren,
		Resolver:   resolver{n},

		HistoryRetention: n.cfg.HistoryRetention,
	})
	if err != nil {
		return nil, fmt.Errorf("tserver: node %d: tablet %d: %w", n.cfg.NodeID, desc.ID, err)
	}
	n.mu.tablets[desc.ID] = tb
	if len(bootstrap) > 1 && bootstrap[0] == n.cfg.NodeID {
		// The first initial voter of a new tablet campaigns at once (the
		// master rotates the voters so that new tablets' leaders spread):
		// left to the election timeout, a new table took 1-2 s before its
		// first write could succeed.
		tb.Group().Campaign()
	}
	return tb, nil
}

// DeleteTablet removes the replica of tablet id from this node with all its
// data (after the master removed it from the tablet's configuration, or
// dropped the table).
func (n *Node) DeleteTablet(id uint64) error {
	n.mu.Lock()
	if n.mu.stopped {
		n.mu.Unlock()
		return ErrStopped
	}
	_, ok := n.mu.tablets[id]
	delete(n.mu.tablets, id)
	n.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: tablet %d on node %d", errTabletNotFound, id, n.cfg.NodeID)
	}
	return n.host.Runtime.DestroyGroup(id)
}

// openChildren opens the children of a split parent. Their raft state was
// written with the split (or, when the split came by snapshot, they start
// empty and are filled by their leaders).
func (n *Node) openChildren(parent tablet.Descriptor, children [2]tablet.Descriptor) {
	for _, c := range children {
		if _, err := n.openTablet(c, nil); err != nil && !errors.Is(err, ErrTabletExists) && !errors.Is(err, ErrStopped) {
			slog.Warn("tserver: opening a split child", "node", n.cfg.NodeID, "parent", parent.ID, "child", c.ID, "err", err)
		}
	}
}

// Tablet returns the replica of tablet id hosted here.
func (n *Node) Tablet(id uint64) (*tablet.Tablet, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	tb, ok := n.mu.tablets[id]
	return tb, ok
}

// Tablets returns every tablet replica hosted here, by tablet id.
func (n *Node) Tablets() []*tablet.Tablet {
	n.mu.Lock()
	out := make([]*tablet.Tablet, 0, len(n.mu.tablets))
	for _, tb := range n.mu.tablets {
		out = append(out, tb)
	}
	n.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Descriptor().ID < out[j].Descriptor().ID })
	return out
}

// DrainLeaders hands off every leadership of this node (its tablets', and
// on a master the catalog's) to other voters, all at once, until ctx ends
// (consensus.Group.HandOff). It returns how many groups moved and how many
// did not in time. A clean shutdown calls it before Stop.
func (n *Node) DrainLeaders(ctx context.Context) (moved, failed int) {
	rt := n.host.Runtime
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, id := range rt.Groups() {
		g, ok := rt.Group(id)
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			did, err := g.HandOff(ctx)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				failed++
			case did:
				moved++
			}
		}()
	}
	wg.Wait()
	return moved, failed
}

// Stop stops the node: the gRPC server, the transport and the runtime (its
// pending proposals fail with consensus.ErrStopped), then closes the engine.
// It returns once every goroutine the node started has exited. Stop is
// idempotent.
func (n *Node) Stop() error {
	n.mu.Lock()
	if n.mu.stopped {
		n.mu.Unlock()
		return nil
	}
	n.mu.stopped = true
	n.mu.Unlock()
	close(n.gcStop)
	<-n.gcDone
	n.mux.Close()
	<-n.framedDone
	n.local.stop() // also ends the framed connections
	err := n.host.Stop()
	n.pool.Close()
	return err
}
