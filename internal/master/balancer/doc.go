// Package balancer is the master's cluster balancer as a pure planner:
// cluster state in, moves out. It does no I/O, starts no goroutines and
// reads no clock (how long a tserver has been dead is part of the input),
// so the same state always yields the same moves, sorted by tablet id.
//
// # Goals, in priority order (as YugabyteDB's cluster balancer)
//
//  1. Every tablet at its replication factor. The replicas of a tserver dead
//     for FollowerUnavailableTimeout or longer stop counting and are
//     re-created on live tservers; a tserver dead for less is waited for.
//     Caught-up learners are promoted, learners on dead or blacklisted
//     tservers removed, and over-replicated tablets shed a voter: one on a
//     gone, then dead, then blacklisted tserver, then the one whose removal
//     keeps the most zones, then the most loaded.
//  2. Blacklisted tservers drain: leaders move off first, then replicas.
//  3. Placement: a tablet's voters spread over as many zones as there are,
//     up to RF.
//  4. Replica counts per tserver within one of each other, across all
//     tables; then per table where that costs nothing globally. An empty
//     tserver fills this way.
//  5. Leader counts per live tserver within one of each other, by leader
//     transfers, along a chain of tablets when needed; then each table's
//     leaders within one of each other, by moves that keep the totals
//     within one (in pairs across tables when needed).
//
// A replica moves as learner + snapshot + promote + remove. A replica is
// removed only when that is safe: a live voter only if RF healthy voters
// stay and the leader is known and elsewhere (the leader's replica is first
// relieved of leadership), a dead one only if a healthy majority stays, and
// never the last one. A tablet without a live majority of voters gets no
// moves at all: no configuration change could commit, and recovering it is
// an operator's job.
//
// # What the master does with the moves
//
// The master runs Plan every few seconds on a snapshot of its catalog
// (tservers with liveness and placement, tablets with their Raft
// configuration and leader as reported in heartbeats) plus the moves it has
// issued and not seen finish. For each move it asks the tablet's leader for
// a ConfChangeV2 (AddLearner, PromoteLearner, RemoveReplica) or a leader
// transfer, and keeps the move in State.InFlight until it is done: an
// AddLearner until the learner has applied its snapshot and caught up, the
// others until the tablet report shows the change, or until a timeout,
// after which the move is dropped and the next plan decides again. Moves of
// one plan are independent (at most one per tablet) and may be issued
// concurrently; a plan may be partly carried out.
//
// # Usage
//
//	moves := balancer.Plan(balancer.State{
//		TServers: tservers, // from heartbeats: Live, DeadFor, Placement, Blacklisted
//		Tablets:  tablets,  // from the catalog and tablet reports
//		InFlight: inFlight,
//	}, balancer.Options{FollowerUnavailableTimeout: 5 * time.Minute})
//	for _, m := range moves {
//		issue(m) // and remember it in inFlight until it finishes
//	}
package balancer
