package rpc

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Observer is told about every RPC a server handles. The metrics package
// implements it; rpc itself keeps no counters.
type Observer interface {
	// RPCStarted is called when a call arrives; stream says whether it is
	// a streaming RPC.
	RPCStarted(method string, stream bool)
	// RPCHandled is called when the handler returns, with the status code
	// of its error and how long it ran.
	RPCHandled(method string, stream bool, code codes.Code, d time.Duration)
}

// ObserverOptions returns the server options (interceptors) that report
// every unary and streaming call to o:
//
//	srv := rpc.NewServer(rpc.ObserverOptions(o)...)
func ObserverOptions(o Observer) []grpc.ServerOption {
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		o.RPCStarted(info.FullMethod, false)
		start := time.Now()
		resp, err := h(ctx, req)
		o.RPCHandled(info.FullMethod, false, status.Code(err), time.Since(start))
		return resp, err
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		o.RPCStarted(info.FullMethod, true)
		start := time.Now()
		err := h(srv, ss)
		o.RPCHandled(info.FullMethod, true, status.Code(err), time.Since(start))
		return err
	}
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream)}
}
