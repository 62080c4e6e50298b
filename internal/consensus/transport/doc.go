// Package transport moves Raft messages between ShaleDB nodes.
//
// A node hosts thousands of tablets, each its own Raft group, and most of
// them share the same few peers. Sending each group's messages separately
// would cost one RPC per group per tick; instead the transport keeps, for
// every destination node, one queue, one sender goroutine and one long-lived
// connection (CockroachDB's RaftTransport design):
//
//   - Send only appends to the destination's queue and never blocks on the
//     network. The sender goroutine drains everything queued into one Frame,
//     so the messages many groups produce in one scheduler cycle travel
//     together, and writes it to the connection itself.
//   - The connection is a TCP connection to the peer's RPC port opened with
//     rpc.RaftPreface, carrying varint-length-prefixed Frames one way; the
//     peer's reading goroutine delivers them (Serve). On a gRPC stream
//     every frame passed through gRPC's writer goroutine and the peer's
//     HTTP/2 reader goroutine too, with HTTP/2 framing.
//   - MsgHeartbeat and MsgHeartbeatResp without a context are coalesced: they
//     travel as small (group, from, to, term[, commit]) tuples instead of full
//     raftpb messages, and the receiver re-expands them in their original
//     order. An idle node's heartbeats to one peer are one frame.
//   - Every frame carries sent_at (the sender's monotonic clock) and ack (the
//     latest sent_at received from the destination). A peer with nothing to
//     send gets an empty frame every LivenessInterval, so LastHeard and
//     LeaseAck keep advancing however many groups have quiesced. LeaseAck(n)
//     is the local send time of the latest frame n has confirmed receiving:
//     the basis for leader leases.
//   - Snapshots use a separate client-streaming RPC so a large snapshot never
//     delays heartbeats on the message stream.
//
// When a frame cannot be delivered (dial failure, broken connection, queue
// overflow) its messages are dropped and Handler.HandleUnreachable is called;
// raft retransmits. A broken connection is reopened with backoff.
//
// Usage:
//
//	mux := rpc.NewMux(lis)
//	srv := rpc.NewServer()
//	t := transport.New(transport.Config{NodeID: 1, Resolver: r, Handler: h, Pool: pool})
//	t.Register(srv) // snapshots
//	go srv.Serve(mux.GRPC())
//	t.Serve(mux.Raft())
//	t.Send(2, []transport.Message{{Group: 7, Msg: m}})
//	...
//	t.Stop()
package transport
