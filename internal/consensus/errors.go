package consensus

import (
	"errors"
	"fmt"
)

// Errors callers act on.
var (
	// ErrStopped: the runtime is shutting down.
	ErrStopped = errors.New("consensus: stopped")
	// ErrGroupNotFound: no replica of that group on this node.
	ErrGroupNotFound = errors.New("consensus: group not found")
	// ErrAmbiguous: the proposal may or may not have been applied (leadership
	// changed while it was in flight). Callers must not assume either way.
	ErrAmbiguous = errors.New("consensus: result ambiguous, leadership changed while the proposal was in flight")
	// ErrProposalDropped: raft refused the proposal (e.g. a leader transfer is
	// under way); it was not applied and can be retried.
	ErrProposalDropped = errors.New("consensus: proposal dropped")
	// ErrTransferTargetUnreachable: a leader transfer's target has not been
	// heard from within the lease duration (down, or cut off); the transfer
	// is refused rather than leave the group without a serving leader until
	// raft gives it up.
	ErrTransferTargetUnreachable = errors.New("consensus: leader transfer target not heard from recently")
)

// NotLeaderError is returned when an operation needs the leader (or the
// leaseholder) and this replica is not it. Leader is a hint (0 if unknown).
type NotLeaderError struct {
	Group  uint64
	Leader uint64
}

func (e *NotLeaderError) Error() string {
	return fmt.Sprintf("consensus: group %d: not the leader (leader hint %d)", e.Group, e.Leader)
}

// IsNotLeader reports whether err is a NotLeaderError and returns the hint.
func IsNotLeader(err error) (leader uint64, ok bool) {
	var nl *NotLeaderError
	if errors.As(err, &nl) {
		return nl.Leader, true
	}
	return 0, false
}
