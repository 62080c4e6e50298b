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
