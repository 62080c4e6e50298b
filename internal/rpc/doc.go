// Package rpc holds the gRPC plumbing shared by every ShaleDB service: one
// server per node with the node's keepalive and message-size policy, and a
// Pool of client connections keyed by address so that all services talking
// to the same peer share one HTTP/2 connection.
//
// Usage:
//
//	srv := rpc.NewServer()
//	transport.New(cfg).Register(srv) // and every other service
//	go srv.Serve(lis)
//
//	pool := rpc.NewPool()
//	defer pool.Close()
//	cc, err := pool.Conn("127.0.0.2:7100")
package rpc
