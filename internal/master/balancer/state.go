package balancer

import (
	"fmt"
	"time"
)

// Placement is where a tserver runs, as given by its --placement flag
// (cloud.region.zone). Two tservers are in the same zone when all three parts
// are equal; empty parts are compared like any other value.
type Placement struct {
	Cloud, Region, Zone string
}

// String returns cloud.region.zone.
func (p Placement) String() string { return p.Cloud + "." + p.Region + "." + p.Zone }

// TServer is the balancer's view of one tablet server.
type TServer struct {
	ID        uint64
	Placement Placement
	// Live is true while the tserver heartbeats the master.
	Live bool
	// DeadFor is how long a tserver that is not Live has been silent. Once it
	// reaches Options.FollowerUnavailableTimeout the tserver's replicas stop
	// counting and are re-created elsewhere; before that they still count
	// and the balancer waits.
	DeadFor time.Duration
	// Blacklisted tservers are drained: leaders first, then replicas. They
	// never receive new replicas.
	Blacklisted bool
}

// Role is the Raft role of a replica in the tablet's configuration.
type Role uint8

const (
	// Voter is a full member of the Raft configuration.
	Voter Role = iota
	// Learner receives the log (after a snapshot) but does not vote.
	Learner
)

// String returns "voter" or "learner".
func (r Role) String() string {
	if r == Learner {
		return "learner"
	}
	return "voter"
}

// Replica is one member of a tablet's Raft configuration.
type Replica struct {
	TServer uint64
	Role    Role
}

// Tablet is the balancer's view of one tablet (one Raft group).
type Tablet struct {
	ID      uint64
	TableID uint64
	// RF is the replication factor: the number of voters wanted.
	RF       int
	Replicas []Replica
	// Leader is the tserver of the current leader, 0 when unknown.
	Leader    uint64
	SizeBytes int64
}

// State is the cluster as the master sees it at one instant.
type State struct {
	TServers []TServer
	Tablets  []Tablet
	// InFlight lists moves issued earlier and not finished yet. A tablet with
	// an in-flight move is left alone, and in-flight AddLearner moves count
	// against the concurrency limits. An AddLearner is finished when the
	// learner has caught up (snapshot applied), not when the configuration
	// change commits.
	InFlight []Move
}

// MoveKind is the kind of a Move.
type MoveKind uint8

const (
	// AddLearner adds TServer as a learner of Tablet; the leader then sends
	// it a snapshot.
	AddLearner MoveKind = iota + 1
	// PromoteLearner turns the caught-up learner on TServer into a voter.
	PromoteLearner
	// RemoveReplica removes the replica on TServer from Tablet's
	// configuration (the tserver then deletes its copy).
	RemoveReplica
	// TransferLeader moves leadership of Tablet from From to TServer.
	TransferLeader
)

var moveKindNames = [...]string{
	AddLearner:     "add-learner",
	PromoteLearner: "promote",
	RemoveReplica:  "remove",
	TransferLeader: "transfer-leader",
}

// String returns the kind's short name.
func (k MoveKind) String() string {
	if int(k) < len(moveKindNames) && moveKindNames[k] != "" {
		return moveKindNames[k]
	}
	return fmt.Sprintf("MoveKind(%d)", uint8(k))
}

// Move is one step the master should take.
type Move struct {
	Kind   MoveKind
	Tablet uint64
	// TServer is the tserver the move acts on: the new learner, the learner
	// to promote, the replica to remove, or the new leader.
	TServer uint64
	// From is the current leader, for TransferLeader only.
	From uint64
	// Reason says which goal produced the move, for logs and the UI.
	Reason string
}

// String formats the move for logs and tests.
func (m Move) String() string {
	if m.Kind == TransferLeader {
		return fmt.Sprintf("%s tablet=%d from=%d to=%d (%s)", m.Kind, m.Tablet, m.From, m.TServer, m.Reason)
	}
	return fmt.Sprintf("%s tablet=%d ts=%d (%s)", m.Kind, m.Tablet, m.TServer, m.Reason)
}

// Move reasons.
const (
	ReasonUnderReplicated = "under-replicated"
	ReasonOverReplicated  = "over-replicated"
	ReasonCaughtUp        = "caught-up"
	ReasonBadLearner      = "learner on unusable tserver"
	ReasonBlacklist       = "blacklist"
	ReasonPlacement       = "placement"
	ReasonBalance         = "balance"
	ReasonBeforeRemove    = "before remove"
	ReasonLeaderBalance   = "leader balance"
	// ReasonTableLeaderBalance: a table's leaders spread over the tservers.
	ReasonTableLeaderBalance = "table leader balance"
)
