package consensus

import (
	"github.com/cockroachdb/pebble/v2"

	"github.com/shaledb/shaledb/internal/storage"
)

// Entry is a committed command handed to the state machine.
type Entry struct {
	Index, Term uint64
	// Local is true when this node proposed the command (its result is
	// returned to a waiting caller).
	Local bool
	Data  []byte
	// Voters and Learners are the group's configuration as of this entry
	// (the same on every replica); Joint is true during a joint
	// configuration change.
	Voters, Learners []uint64
	Joint            bool
}

// StateMachine is the replicated state of a group (a tablet's DocDB span).
// All methods are called from the scheduler goroutine, one group at a time.
type StateMachine interface {
	// Apply applies one committed command by writing into b. It must be
	// deterministic: every replica applies the same commands in the same
	// order. The result is handed to the local proposer, if any. b is
	// committed (with the applied index) before the result is delivered.
	Apply(b *pebble.Batch, e Entry) (result any)
	// SnapshotSpans returns the key spans holding the replicated data. A
	// snapshot copies them from a Pebble snapshot and the receiver replaces
	// its own spans with the copy (ingested as SSTs).
	SnapshotSpans() []storage.Span
	// Restored is called after a snapshot has been ingested, so the state
	// machine can reload whatever it caches in memory.
	Restored() error
}

// LocalSnapshotter is implemented by state machines that keep node-local
// state under the group's local span (storage.LocalGroupSpan) which a
// replica filled by snapshot needs too (the tablet's applied request ids).
// A snapshot carries those spans' keys, and the receiver replaces its own
// with them, in the same atomic ingest as the data. The spans must not
// hold the raft log or the keys the runtime keeps (hard, applied and
// truncated state, descriptor, last leader).
type LocalSnapshotter interface {
	SnapshotLocalSpans() []storage.Span
}

// PostApplier is implemented by state machines that act on what they
// applied once it is committed to the engine (for example a split opening
// its children). PostApply is called from the scheduler goroutine after
// the batch holding the group's applied entries has been committed and
// before the proposers of those entries get their results; it must not
// block.
type PostApplier interface {
	PostApply()
}

// HasGroupState reports whether the engine holds raft state of group id.
func HasGroupState(eng *storage.Engine, id uint64) (bool, error) { return hasLocalState(eng, id) }

// BootstrapGroup writes the initial raft state of a new group with the
// given voters into b, as CreateGroup does for Bootstrap. A state machine
// that creates groups as part of applying an entry (a tablet split) writes
// them in the same batch as that entry, so both survive a crash together.
func BootstrapGroup(b *pebble.Batch, id uint64, voters []uint64) error {
	return bootstrapGroup(b, id, voters)
}
