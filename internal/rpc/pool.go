package rpc

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
)

// ErrPoolClosed is returned by Pool.Conn after Close.
var ErrPoolClosed = errors.New("rpc: pool closed")

// Pool caches one *grpc.ClientConn per address. A ClientConn multiplexes any
// number of streams and reconnects by itself, so one per peer is all a node
// needs; sharing it keeps the number of TCP connections at one per node pair.
// A Pool is safe for concurrent use.
type Pool struct {
	opts []grpc.DialOption

	mu struct {
		sync.Mutex
		closed bool
		conns  map[string]*grpc.ClientConn
	}
}

// NewPool returns an empty pool whose connections use insecure credentials,
// client keepalive and the node's message-size limit. Connections are created
// lazily: Conn never touches the network, the first RPC does.
func NewPool() *Pool {
	p := &Pool{
		opts: []grpc.DialOption{
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(
				grpc.MaxCallRecvMsgSize(MaxMessageSize),
				grpc.MaxCallSendMsgSize(MaxMessageSize),
			),
			grpc.WithInitialWindowSize(streamWindow),
			grpc.WithInitialConnWindowSize(connWindow),
			grpc.WithKeepaliveParams(keepalive.ClientParameters{
				Time:                keepaliveTime,
				Timeout:             keepaliveTimeout,
				PermitWithoutStream: true,
			}),
			// gRPC's default reconnect backoff grows to two minutes; a
			// restarted peer must be found again within a few seconds.
			grpc.WithConnectParams(grpc.ConnectParams{
				Backoff: backoff.Config{
					BaseDelay:  50 * time.Millisecond,
					Multiplier: 1.6,
					Jitter:     0.2,
					MaxDelay:   2 * time.Second,
				},
				MinConnectTimeout: 5 * time.Second,
			}),
		},
	}
	p.mu.conns = make(map[string]*grpc.ClientConn)
	return p
}

// Conn returns the shared connection to addr ("host:port"), creating it on
// first use. Callers must not Close the returned connection; Pool.Close does.
func (p *Pool) Conn(addr string) (*grpc.ClientConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return nil, ErrPoolClosed
	}
	if cc, ok := p.mu.conns[addr]; ok {
		return cc, nil
	}
	// passthrough: addresses are literal host:port, never names to resolve
	// through gRPC's DNS resolver (which would add a goroutine and a lookup).
	cc, err := grpc.NewClient("passthrough:///"+addr, p.opts...)
	if err != nil {
		return nil, fmt.Errorf("rpc: dial %s: %w", addr, err)
	}
	p.mu.conns[addr] = cc
	return cc, nil
}

// Close closes every connection. Later Conn calls fail with ErrPoolClosed.
func (p *Pool) Close() {
	p.mu.Lock()
	conns := p.mu.conns
	p.mu.conns = nil
	p.mu.closed = true
	p.mu.Unlock()
	for _, cc := range conns {
		_ = cc.Close()
	}
}
