// Package consensus is the Multi-Raft runtime: every tablet peer on a node is
// an etcd raft RawNode, and one node-level scheduler drives them all.
//
// A scheduler cycle takes every group with work (incoming messages, proposals,
// ticks), collects their Readys, writes all new log entries and hard states in
// ONE synced Pebble batch (group commit across tablets), then sends the
// messages (one transport frame per destination node), then applies the
// committed entries of every group in one unsynced batch that also records
// each group's applied index, and finally, once the fsync is done, sends the
// acknowledgements and advances the RawNodes. While a cycle's fsync runs the
// next cycle may start with the groups not in flight (scheduler.go). A write
// is acknowledged only after it is applied, which implies it was fsync'd on a
// majority.
//
// Idle groups quiesce: the leader, once every follower has every entry, sends
// one last heartbeat marked "quiesce" and the group stops ticking, so an idle
// node with thousands of groups sends only the transport's liveness frames.
// Any message or proposal wakes a group. Followers of a quiesced group watch
// the liveness of the leader's node and wake (and campaign) when it falls
// silent.
//
// Leader leases: a follower refuses votes for another candidate while it has
// heard from its leader's node within VoteRefusalWindow (leader transfer
// excepted), so a leader whose frames a quorum acknowledged at time t holds
// the lease until t+LeaseDuration (LeaseDuration < VoteRefusalWindow). Reads
// at the leaseholder are served locally.
//
// Usage:
//
//	rt := consensus.NewRuntime(consensus.Config{NodeID: 1, Engine: eng, Transport: tr})
//	tr's Handler is rt; rt.Start()
//	g, _ := rt.CreateGroup(ctx, consensus.GroupConfig{ID: 7, StateMachine: sm, Bootstrap: []uint64{1, 2, 3}})
//	res, err := g.Propose(ctx, cmd) // returns the state machine's result once applied
package consensus
