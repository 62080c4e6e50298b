package consensus

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/shaledb/shaledb/internal/storage"
)

// initialIndex is the log position every bootstrapped group starts from, with
// its initial configuration as "applied". A replica created empty (index 0)
// is therefore always behind the leader's first log index and gets a
// snapshot, never a log replay from the beginning (CockroachDB's trick).
// InitialTerm is the term a bootstrapped group starts in: the first leader
// ever of a group leads term InitialTerm+1.
const InitialTerm = 5

const (
	initialIndex = 5
	initialTerm  = InitialTerm
)

// entryCacheSize bounds the recent entries kept in memory per group so that
// appends to followers rarely read Pebble.
const entryCacheSize = 512

// logStore implements raft.Storage over the node's Pebble engine for one
// group. It is only used from the scheduler goroutine (and from CreateGroup
// before the group is visible), so it needs no lock.
type logStore struct {
	group uint64
	eng   *storage.Engine

	hardState *raftpb.HardState
	confState *raftpb.ConfState
	// truncIndex/truncTerm: the last entry removed from the log (or the
	// snapshot/bootstrap point). The log holds (truncIndex, lastIndex].
	truncIndex, truncTerm uint64
	lastIndex, lastTerm   uint64
	appliedIndex          uint64
	appliedTerm           uint64
	// lastLeader is the newest leader this replica learned of, persisted.
	lastLeader uint64

	// cache holds a contiguous run of the newest entries.
	cache []*raftpb.Entry
}

func loadLogStore(eng *storage.Engine, group uint64) (*logStore, error) {
	s := &logStore{group: group, eng: eng, hardState: &raftpb.HardState{}, confState: &raftpb.ConfState{}}
	if v, ok, err := getValue(eng, storage.HardStateKey(group)); err != nil {
		return nil, err
	} else if ok {
		if err := proto.Unmarshal(v, s.hardState); err != nil {
			return nil, fmt.Errorf("consensus: group %d hard state: %w", group, err)
		}
	}
	if v, ok, err := getValue(eng, storage.TruncatedStateKey(group)); err != nil {
		return nil, err
	} else if ok {
		if len(v) != 16 {
			return nil, fmt.Errorf("consensus: group %d truncated state: bad length %d", group, len(v))
		}
		s.truncIndex, s.truncTerm = binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:])
	}
	if v, ok, err := getValue(eng, storage.AppliedStateKey(group)); err != nil {
		return nil, err
	} else if ok {
		idx, term, cs, err := decodeAppliedState(v)
		if err != nil {
			return nil, fmt.Errorf("consensus: group %d applied state: %w", group, err)
		}
		s.appliedIndex, s.appliedTerm, s.confState = idx, term, cs
	}
	if v, ok, err := getValue(eng, storage.LastLeaderKey(group)); err != nil {
		return nil, err
	} else if ok && len(v) == 8 {
		s.lastLeader = binary.BigEndian.Uint64(v)
	}
	s.lastIndex, s.lastTerm = s.truncIndex, s.truncTerm
	// The last log entry, if any, is the largest key under the log prefix.
	prefix := storage.RaftLogPrefix(group)
	it, err := eng.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: storage.PrefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	if it.Last() {
		e := &raftpb.Entry{}
		if err := proto.Unmarshal(it.Value(), e); err != nil {
			return nil, fmt.Errorf("consensus: group %d last entry: %w", group, err)
		}
		s.lastIndex, s.lastTerm = e.GetIndex(), e.GetTerm()
	}
	return s, it.Error()
}

func getValue(r pebble.Reader, key []byte) ([]byte, bool, error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := append([]byte(nil), v...)
	return out, true, closer.Close()
}

func encodeAppliedState(index, term uint64, cs *raftpb.ConfState) []byte {
	csb, err := proto.Marshal(cs)
	if err != nil {
		panic(err) // marshalling a well-formed message cannot fail
	}
	b := make([]byte, 16, 16+len(csb))
	binary.BigEndian.PutUint64(b, index)
	binary.BigEndian.PutUint64(b[8:], term)
	return append(b, csb...)
}

func decodeAppliedState(v []byte) (index, term uint64, cs *raftpb.ConfState, err error) {
	if len(v) < 16 {
		return 0, 0, nil, fmt.Errorf("bad length %d", len(v))
	}
	cs = &raftpb.ConfState{}
	if err := proto.Unmarshal(v[16:], cs); err != nil {
		return 0, 0, nil, err
	}
	return binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:]), cs, nil
}

func encodeTruncatedState(index, term uint64) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, index)
	binary.BigEndian.PutUint64(b[8:], term)
	return b
}

// bootstrap writes the initial state of a brand-new group whose voters are
// given: every initial replica writes the same state, so they agree.
func bootstrapGroup(b *pebble.Batch, group uint64, voters []uint64) error {
	cs := &raftpb.ConfState{Voters: voters}
	hs := &raftpb.HardState{Term: proto.Uint64(initialTerm), Commit: proto.Uint64(initialIndex)}
	hsb, err := proto.Marshal(hs)
	if err != nil {
		return err
	}
	if err := b.Set(storage.HardStateKey(group), hsb, nil); err != nil {
		return err
	}
	if err := b.Set(storage.TruncatedStateKey(group), encodeTruncatedState(initialIndex, initialTerm), nil); err != nil {
		return err
	}
	return b.Set(storage.AppliedStateKey(group), encodeAppliedState(initialIndex, initialTerm, cs), nil)
}

// InitialState implements raft.Storage.
func (s *logStore) InitialState() (*raftpb.HardState, *raftpb.ConfState, error) {
	return proto.Clone(s.hardState).(*raftpb.HardState), proto.Clone(s.confState).(*raftpb.ConfState), nil
}

// FirstIndex implements raft.Storage.
func (s *logStore) FirstIndex() (uint64, error) { return s.truncIndex + 1, nil }

// LastIndex implements raft.Storage.
func (s *logStore) LastIndex() (uint64, error) { return s.lastIndex, nil }

// Term implements raft.Storage.
func (s *logStore) Term(i uint64) (uint64, error) {
	switch {
	case i == s.truncIndex:
		return s.truncTerm, nil
	case i < s.truncIndex:
		return 0, raft.ErrCompacted
	case i > s.lastIndex:
		return 0, raft.ErrUnavailable
	}
	if e := s.cached(i); e != nil {
		return e.GetTerm(), nil
	}
	e, err := s.readEntry(i)
	if err != nil {
		return 0, err
	}
	return e.GetTerm(), nil
}

// Entries implements raft.Storage: entries [lo, hi) up to maxSize bytes (at
// least one entry).
func (s *logStore) Entries(lo, hi, maxSize uint64) ([]*raftpb.Entry, error) {
	if lo <= s.truncIndex {
		return nil, raft.ErrCompacted
	}
	if hi > s.lastIndex+1 {
		return nil, raft.ErrUnavailable
	}
	var out []*raftpb.Entry
	var size uint64
	add := func(e *raftpb.Entry) bool {
		size += uint64(proto.Size(e))
		if len(out) > 0 && size > maxSize {
			return false
		}
		out = append(out, e)
		return true
	}
	i := lo
	// Serve from the cache when the whole range is cached.
	if len(s.cache) > 0 && s.cache[0].GetIndex() <= lo {
		for ; i < hi; i++ {
			if !add(s.cache[i-s.cache[0].GetIndex()]) {
				return out, nil
			}
		}
		return out, nil
	}
	it, err := s.eng.NewIter(&pebble.IterOptions{
		LowerBound: storage.RaftLogKey(s.group, lo),
		UpperBound: storage.RaftLogKey(s.group, hi),
	})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		e := &raftpb.Entry{}
		if err := proto.Unmarshal(it.Value(), e); err != nil {
			return nil, fmt.Errorf("consensus: group %d entry: %w", s.group, err)
		}
		if e.GetIndex() != i {
			return nil, fmt.Errorf("consensus: group %d log gap: want index %d, found %d", s.group, i, e.GetIndex())
		}
		i++
		if !add(e) {
			break
		}
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	if len(out) == 0 || (i < hi && size <= maxSize) {
		return nil, fmt.Errorf("consensus: group %d log missing entries in [%d, %d)", s.group, i, hi)
	}
	return out, nil
}

// Snapshot implements raft.Storage. The data of a snapshot is streamed
// separately from a Pebble snapshot when the MsgSnap is sent; raft only needs
// the metadata here, which names the applied state.
func (s *logStore) Snapshot() (*raftpb.Snapshot, error) {
	return &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{
		Index:     proto.Uint64(s.appliedIndex),
		Term:      proto.Uint64(s.appliedTerm),
		ConfState: proto.Clone(s.confState).(*raftpb.ConfState),
	}}, nil
}

func (s *logStore) cached(i uint64) *raftpb.Entry {
	if len(s.cache) == 0 {
		return nil
	}
	first := s.cache[0].GetIndex()
	if i < first || i >= first+uint64(len(s.cache)) {
		return nil
	}
	return s.cache[i-first]
}

func (s *logStore) readEntry(i uint64) (*raftpb.Entry, error) {
	v, ok, err := getValue(s.eng, storage.RaftLogKey(s.group, i))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("consensus: group %d missing log entry %d", s.group, i)
	}
	e := &raftpb.Entry{}
	if err := proto.Unmarshal(v, e); err != nil {
		return nil, err
	}
	return e, nil
}

// stageAppend adds entries (which may overwrite a suffix of the log) and the
// hard state to the batch. The in-memory view is updated by commitAppend
// once the batch is durable.
func (s *logStore) stageAppend(b *pebble.Batch, hs *raftpb.HardState, ents []*raftpb.Entry) error {
	if hs != nil {
		hsb, err := proto.Marshal(hs)
		if err != nil {
			return err
		}
		if err := b.Set(storage.HardStateKey(s.group), hsb, nil); err != nil {
			return err
		}
	}
	for _, e := range ents {
		eb, err := proto.Marshal(e)
		if err != nil {
			return err
		}
		if err := b.Set(storage.RaftLogKey(s.group, e.GetIndex()), eb, nil); err != nil {
			return err
		}
	}
	if n := len(ents); n > 0 {
		// Entries past the new last index belong to a superseded leader.
		if last := ents[n-1].GetIndex(); last < s.lastIndex {
			if err := b.DeleteRange(storage.RaftLogKey(s.group, last+1), storage.RaftLogKey(s.group, s.lastIndex+1), nil); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *logStore) commitAppend(hs *raftpb.HardState, ents []*raftpb.Entry) {
	if hs != nil {
		s.hardState = hs
	}
	if len(ents) == 0 {
		return
	}
	first := ents[0].GetIndex()
	last := ents[len(ents)-1]
	s.lastIndex, s.lastTerm = last.GetIndex(), last.GetTerm()
	// Keep the cache contiguous: drop cached entries at or after first.
	if len(s.cache) > 0 {
		c0 := s.cache[0].GetIndex()
		switch {
		case first <= c0:
			s.cache = s.cache[:0]
		case first <= c0+uint64(len(s.cache)):
			s.cache = s.cache[:first-c0]
		default:
			s.cache = s.cache[:0]
		}
	}
	s.cache = append(s.cache, ents...)
	if over := len(s.cache) - entryCacheSize; over > 0 {
		s.cache = append(s.cache[:0:0], s.cache[over:]...)
	}
}

// stageTruncate removes log entries up to and including index.
func (s *logStore) stageTruncate(b *pebble.Batch, index uint64) (term uint64, err error) {
	term, err = s.Term(index)
	if err != nil {
		return 0, err
	}
	if err := b.DeleteRange(storage.RaftLogKey(s.group, s.truncIndex+1), storage.RaftLogKey(s.group, index+1), nil); err != nil {
		return 0, err
	}
	return term, b.Set(storage.TruncatedStateKey(s.group), encodeTruncatedState(index, term), nil)
}

func (s *logStore) commitTruncate(index, term uint64) {
	s.truncIndex, s.truncTerm = index, term
	for len(s.cache) > 0 && s.cache[0].GetIndex() <= index {
		s.cache = s.cache[1:]
	}
}

// dropCache releases the cached entries (an idle group needs none).
func (s *logStore) dropCache() { s.cache = nil }

// applySnapshot resets the in-memory view after a snapshot was ingested.
func (s *logStore) applySnapshot(meta *raftpb.SnapshotMetadata) {
	s.truncIndex, s.truncTerm = meta.GetIndex(), meta.GetTerm()
	s.lastIndex, s.lastTerm = s.truncIndex, s.truncTerm
	s.appliedIndex, s.appliedTerm = s.truncIndex, s.truncTerm
	s.confState = proto.Clone(meta.GetConfState()).(*raftpb.ConfState)
	s.cache = nil
}
