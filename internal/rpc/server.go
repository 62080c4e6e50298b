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
	}
	return grpc.NewServer(append(base, opts...)...)
}
