// Package tserver is the tablet server: one node's engine, gRPC server, raft
// transport and Multi-Raft runtime (composed by consensus/host), and the
// tablet peers it hosts. Start reopens every tablet stored under the data
// directory, so a restarted node rejoins its raft groups and catches up.
// Later additions hang off the Node: the master heartbeat, the client-facing
// tablet RPC service.
//
// Usage:
//
//	n, err := tserver.Start(tserver.Config{
//		NodeID:     1,
//		ListenAddr: "127.0.0.1:7100",
//		DataDir:    "/var/lib/shale/node1",
//		Peers:      map[uint64]string{2: "127.0.0.2:7100", 3: "127.0.0.3:7100"},
//	})
//	tb, err := n.CreateTablet(desc, []uint64{1, 2, 3}) // on each replica
//	ts, err := tb.Write(ctx, wb)                       // at the leader
//	n.Stop()
package tserver
