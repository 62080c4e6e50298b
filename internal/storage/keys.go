package storage

import (
	"encoding/binary"
	"fmt"
)

// Prefix bytes of the key spaces.
const (
	LocalPrefix  byte = 0x01
	IntentPrefix byte = 0x02
	// TxnIndexPrefix holds the reverse index of the intents: per tablet
	// (Raft group) and transaction, the intent keys it wrote (see
	// docdb.TxnIndexSpan). Replicated like the intents it indexes.
	TxnIndexPrefix byte = 0x03
	// RangeLockPrefix holds the range read locks of serializable scans:
	// per tablet and transaction, the row-key spans it read-locked (see
	// docdb.RangeLockSpan). Replicated like intents.
	RangeLockPrefix byte = 0x04
	DataPrefix      byte = 0x10
)

// Kinds of node-local keys under a group.
const (
	localHardState      byte = 'h' // raftpb.HardState
	localTruncatedState byte = 't' // index and term of the last entry removed from the log
	localRaftLog        byte = 'l' // followed by the entry index, 8 bytes BE
	localAppliedState   byte = 'p' // applied index (and whatever the state machine keeps with it)
	localDescriptor     byte = 'm' // tablet metadata owned by the tablet layer
	localLastLeader     byte = 'e' // the last leader this replica followed (for vote refusal)
	localAppliedRequest byte = 'o' // followed by a hybrid time (8 bytes BE) and a request id
	localGCState        byte = 'g' // the horizon of the replica's last GC pass
)

const localGroupPrefixLen = 1 + 8

// LocalGroupPrefix returns the prefix of every local key of a group.
func LocalGroupPrefix(group uint64) []byte {
	k := make([]byte, localGroupPrefixLen, localGroupPrefixLen+1+8)
	k[0] = LocalPrefix
	binary.BigEndian.PutUint64(k[1:], group)
	return k
}

// LocalGroupSpan returns the span holding all local keys of a group.
func LocalGroupSpan(group uint64) Span {
	start := LocalGroupPrefix(group)
	return Span{Start: start, End: PrefixEnd(start)}
}

func localKey(group uint64, kind byte) []byte {
	return append(LocalGroupPrefix(group), kind)
}

// HardStateKey holds a group's raft HardState.
func HardStateKey(group uint64) []byte { return localKey(group, localHardState) }

// TruncatedStateKey holds the index and term of a group's last truncated log entry.
func TruncatedStateKey(group uint64) []byte { return localKey(group, localTruncatedState) }

// AppliedStateKey holds a group's applied index; written in the same batch as
// the applied data so that both survive a crash together.
func AppliedStateKey(group uint64) []byte { return localKey(group, localAppliedState) }

// DescriptorKey holds a group's tablet metadata.
func DescriptorKey(group uint64) []byte { return localKey(group, localDescriptor) }

// LastLeaderKey holds the id of the last leader a replica learned of. It is
// persisted before the replica acknowledges that leader's entries, so vote
// refusal (and with it the leader's lease) survives a restart.
func LastLeaderKey(group uint64) []byte { return localKey(group, localLastLeader) }

// GCStateKey holds the horizon of a replica's last GC pass (the tablet's
// GC): a replica that reopens with one does not rescan at once what that
// pass left.
func GCStateKey(group uint64) []byte { return localKey(group, localGCState) }

// AppliedRequestPrefix is the prefix of the requests a group's state
// machine applied and must not apply again (the tablet's WriteOnce), by
// the hybrid time they applied at: new ones go at the end of the span (in
// order, as the log's), old ones in one range delete.
func AppliedRequestPrefix(group uint64) []byte { return localKey(group, localAppliedRequest) }

// AppliedRequestsBefore bounds the applied requests of a group before the
// hybrid time at.
func AppliedRequestsBefore(group, at uint64) []byte {
	return binary.BigEndian.AppendUint64(AppliedRequestPrefix(group), at)
}

// AppliedRequestKey holds what the request id applied at hybrid time at
// did.
func AppliedRequestKey(group, at uint64, id []byte) []byte {
	return append(AppliedRequestsBefore(group, at), id...)
}

// RaftLogPrefix is the prefix of a group's raft log entries.
func RaftLogPrefix(group uint64) []byte { return localKey(group, localRaftLog) }

// RaftLogKey holds the raft log entry at index.
func RaftLogKey(group uint64, index uint64) []byte {
	return binary.BigEndian.AppendUint64(RaftLogPrefix(group), index)
}

// RaftLogIndex decodes the index from a key made by RaftLogKey.
func RaftLogIndex(key []byte) (uint64, error) {
	if len(key) != localGroupPrefixLen+1+8 || key[0] != LocalPrefix || key[localGroupPrefixLen] != localRaftLog {
		return 0, fmt.Errorf("storage: not a raft log key: %x", key)
	}
	return binary.BigEndian.Uint64(key[localGroupPrefixLen+1:]), nil
}

// LocalSpan covers every node-local key of every group.
func LocalSpan() Span { return Span{Start: []byte{LocalPrefix}, End: []byte{LocalPrefix + 1}} }

// IntentSpan covers the whole intents key space.
func IntentSpan() Span { return Span{Start: []byte{IntentPrefix}, End: []byte{IntentPrefix + 1}} }

// TxnIndexSpan covers the whole transaction reverse-index key space.
func TxnIndexSpan() Span { return Span{Start: []byte{TxnIndexPrefix}, End: []byte{TxnIndexPrefix + 1}} }

// RangeLockSpan covers the whole range-lock key space.
func RangeLockSpan() Span {
	return Span{Start: []byte{RangeLockPrefix}, End: []byte{RangeLockPrefix + 1}}
}

// DataSpan covers the whole regular data key space.
func DataSpan() Span { return Span{Start: []byte{DataPrefix}, End: []byte{DataPrefix + 1}} }

// Span is a half-open key range [Start, End). A nil End means unbounded.
type Span struct {
	Start, End []byte
}

// Contains reports whether key lies in the span.
func (s Span) Contains(key []byte) bool {
	return string(key) >= string(s.Start) && (s.End == nil || string(key) < string(s.End))
}

// String formats the span with hex keys.
func (s Span) String() string { return fmt.Sprintf("[%x, %x)", s.Start, s.End) }

// PrefixEnd returns the smallest key greater than every key with the given
// prefix, or nil if there is none (the prefix is all 0xff).
func PrefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}
