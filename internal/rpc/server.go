package rpc

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// MaxMessageSize bounds one gRPC message in either direction. Raft frames and
// snapshot chunks stay far below it; the limit only exists so that a corrupt
// length prefix cannot make a node allocate without bound.
const MaxMessageSize = 64 << 20

// Keepalive timings. Clients ping an idle connection every keepaliveTime so a
// dead peer (power loss, partition) is noticed in seconds rather than after the
// kernel's TCP timeout; the server must permit pings at least that often or it
// would answer them with GOAWAY "too_many_pings".
const (
	keepaliveTime    = 10 * time.Second
	keepaliveTimeout = 5 * time.Second
	keepaliveMinTime = 5 * time.Second
)

// Flow-control windows of every connection and stream, in both directions.
// Fixed windows turn off gRPC's bandwidth estimator, which pinged the peer
// (and was answered) on nearly every frame of the small, sparse messages of
// raft and the data stream: two more socket writes per message, a fifth of
// a lightly loaded node's CPU. A node's peers are in its data centre or
// region; these windows cover its bandwidth-delay product.
const (
	streamWindow = 4 << 20
	connWindow   = 16 << 20
)

// NewServer returns a gRPC server with ShaleDB's keepalive and message-size
// policy. opts are appended and so override the defaults.
// streamWorkers is the size of the server's stream worker pool; streams
// beyond it get their own goroutine as usual.
const streamWorkers = 64

func NewServer(opts ...grpc.ServerOption) *grpc.Server {
	base := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(MaxMessageSize),
		grpc.MaxSendMsgSize(MaxMessageSize),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			Time:    keepaliveTime,
			Timeout: keepaliveTimeout,
		}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
			MinTime:             keepaliveMinTime,
			PermitWithoutStream: true,
		}),
		// A pool of long-lived workers serves the streams: a goroutine per
		// RPC would grow a fresh stack for every request (runtime.copystack
		// was an eighth of a busy node's CPU).
		grpc.NumStreamWorkers(streamWorkers),
		grpc.InitialWindowSize(streamWindow),
		grpc.InitialConnWindowSize(connWindow),
		// Stop waits for the handlers it cancels to return: a node closes
		// its engine right after, and a data stream worker still in a
		// scan panicked on the closed engine.
		grpc.WaitForHandlers(true),
	}
	return grpc.NewServer(append(base, opts...)...)
}
