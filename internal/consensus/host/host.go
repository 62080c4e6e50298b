// Package host composes the consensus stack of one node: the node's Pebble
// engine, its gRPC server, the raft transport and the Multi-Raft runtime,
// started and stopped in the right order. The tablet server and the
// in-process test cluster (consensustest) both build their nodes with it.
//
// Usage:
//
//	lis, _ := net.Listen("tcp", "127.0.0.1:7100")
//	h, err := host.Start(host.Config{NodeID: 1, Listener: lis, Dir: dir, Resolver: resolve})
//	...
//	g, err := h.Runtime.CreateGroup(...)
//	...
//	h.Stop()
package host

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"

	"github.com/shaledb/shaledb/internal/consensus"
	"github.com/shaledb/shaledb/internal/consensus/transport"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/rpc"
	"github.com/shaledb/shaledb/internal/storage"
)

// Config configures a Host.
type Config struct {
	NodeID uint64
	// Listener is the bound listener the node's gRPC server serves on; the
	// Host owns it from Start on.
	Listener net.Listener
	// RaftListener, if set, hands over the connections that carry other
	// nodes' Raft messages (rpc.Mux.Raft of the node's port, whose
	// gRPC side is Listener); the Host owns it from Start on. Without it
	// the Host splits Listener itself.
	RaftListener net.Listener
	// Dir is the engine's data directory.
	Dir string
	// Engine options of the node's Pebble engine.
	Engine storage.Options
	// Runtime is the template of the runtime config; NodeID, Engine and
	// Transport are filled in.
	Runtime consensus.Config
	// Resolver maps a node id to the "host:port" of its gRPC server.
	Resolver func(node uint64) (string, error)
	// Clock, if set, is the node's hybrid clock; the transport stamps and
	// observes frames with it.
	Clock *hlc.Clock
	// Register, if set, registers more services on the gRPC server before
	// it starts serving.
	Register func(*grpc.Server)
	// ServerOptions are passed to rpc.NewServer (interceptors that observe
	// RPCs for metrics, for example).
	ServerOptions []grpc.ServerOption
}

// Host is one running node's consensus stack.
type Host struct {
	NodeID    uint64
	Engine    *storage.Engine
	Server    *grpc.Server
	Transport *transport.Transport
	Runtime   *consensus.Runtime

	addr   string
	served chan struct{}
	mux    *rpc.Mux // the Host's own split of Listener, if it made one
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

// Start opens the engine in cfg.Dir and starts the gRPC server, the
// transport and the runtime. On error everything started is stopped again
// and the listener is closed.
func Start(cfg Config) (*Host, error) {
	if cfg.Listener == nil {
		return nil, errors.New("host: no listener")
	}
	eng, err := storage.Open(cfg.Dir, cfg.Engine)
	if err != nil {
		_ = cfg.Listener.Close()
		return nil, fmt.Errorf("host: node %d: %w", cfg.NodeID, err)
	}
	h := &Host{NodeID: cfg.NodeID, Engine: eng, addr: cfg.Listener.Addr().String(), served: make(chan struct{})}
	grpcLis, raftLis := cfg.Listener, cfg.RaftListener
	if raftLis == nil {
		h.mux = rpc.NewMux(cfg.Listener)
		grpcLis, raftLis = h.mux.GRPC(), h.mux.Raft()
	}
	ref := &handlerRef{}
	rcfg := cfg.Runtime
	h.Transport = transport.New(transport.Config{
		NodeID:           cfg.NodeID,
		Resolver:         cfg.Resolver,
		Handler:          ref,
		Clock:            cfg.Clock,
		LivenessInterval: LivenessIntervalFor(rcfg),
	})
	rcfg.NodeID, rcfg.Engine, rcfg.Transport = cfg.NodeID, eng, h.Transport
	h.Runtime = consensus.NewRuntime(rcfg)
	ref.rt = h.Runtime
	h.Server = rpc.NewServer(cfg.ServerOptions...)
	h.Transport.Register(h.Server)
	if cfg.Register != nil {
		cfg.Register(h.Server)
	}
	go func() {
		defer close(h.served)
		_ = h.Server.Serve(grpcLis)
	}()
	h.Transport.Serve(raftLis)
	h.Runtime.Start()
	return h, nil
}

// Addr returns the address the gRPC server listens on.
func (h *Host) Addr() string { return h.addr }

// Stop stops the server, the transport and the runtime, then closes the
// engine. Peers see the node vanish; what was synced to disk stays. Stop
// waits for every goroutine it started.
func (h *Host) Stop() error {
	h.Server.Stop()
	<-h.served
	if h.mux != nil {
		h.mux.Close()
	}
	h.Transport.Stop()
	h.Runtime.Stop()
	if err := h.Engine.Close(); err != nil {
		return fmt.Errorf("host: node %d: close engine: %w", h.NodeID, err)
	}
	return nil
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
