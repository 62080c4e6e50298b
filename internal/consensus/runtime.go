package consensus

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/shaledb/shaledb/internal/consensus/transport"
	"github.com/shaledb/shaledb/internal/storage"
)

// Transport is what the runtime needs from the node-to-node transport.
type Transport interface {
	Send(to uint64, msgs []transport.Message)
	LastHeard(node uint64) time.Time
	LeaseAck(node uint64) time.Time
	SendSnapshot(ctx context.Context, to uint64, header []byte, body func(send func(chunk []byte) error) error) error
}

// Config configures a Runtime. Zero durations take the documented defaults.
type Config struct {
	NodeID    uint64
	Engine    *storage.Engine
	Transport Transport
	Logger    *slog.Logger

	// TickInterval is the raft tick. Default 100ms.
	TickInterval time.Duration
	// ElectionTicks: a follower that hears nothing from its leader for a
	// randomized [ElectionTicks, 2*ElectionTicks) ticks campaigns. Default 10.
	ElectionTicks int
	// HeartbeatTicks between leader heartbeats of an active group. Default 1.
	HeartbeatTicks int
	// VoteRefusalWindow: a follower refuses votes for other candidates while
	// its leader's node was heard from within this window. Default 1.5s.
	// It must be several transport liveness intervals (250ms by default):
	// a quiesced follower takes this much silence for a dead leader.
	VoteRefusalWindow time.Duration
	// LeaseDuration of a leader lease after a quorum acknowledged our frames;
	// must be less than VoteRefusalWindow (the gap absorbs clock-rate drift
	// and scheduling delay) and well above two liveness intervals (lease
	// acks trail real time by up to two). Default 1.2s.
	LeaseDuration time.Duration
	// LogTruncateThreshold: applied entries kept in the log before the prefix
	// is truncated. Default 1000.
	LogTruncateThreshold uint64
	// MaxFollowerLag: the leader truncates past a follower this far behind
	// (which then catches up by snapshot). Default 20000.
	MaxFollowerLag uint64
	// DisableQuiescence keeps every group ticking (tests that count heartbeats).
	DisableQuiescence bool
}

func (c *Config) setDefaults() {
	if c.TickInterval == 0 {
		c.TickInterval = 100 * time.Millisecond
	}
	if c.ElectionTicks == 0 {
		c.ElectionTicks = 10
	}
	if c.HeartbeatTicks == 0 {
		c.HeartbeatTicks = 1
	}
	if c.VoteRefusalWindow == 0 {
		c.VoteRefusalWindow = 1500 * time.Millisecond
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = 1200 * time.Millisecond
	}
	if c.LogTruncateThreshold == 0 {
		c.LogTruncateThreshold = 1000
	}
	if c.MaxFollowerLag == 0 {
		c.MaxFollowerLag = 20000
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Runtime hosts every raft group of a node and drives them from one scheduler.
type Runtime struct {
	cfg     Config
	eng     *storage.Engine
	tr      Transport
	log     *slog.Logger
	started time.Time

	stopper chan struct{}
	stopped chan struct{}
	wg      sync.WaitGroup
	signal  chan struct{}

	mu struct {
		sync.RWMutex
		groups map[uint64]*Group
	}
	// cycleMu is held by each scheduler cycle; DestroyGroup takes it so a
	// cycle that already prepared the group cannot write its log or applied
	// state after the group's keys were deleted.
	cycleMu sync.Mutex

	hold commitHold

	pendingMu struct {
		sync.Mutex
		set map[uint64]struct{}
	}
	metrics Metrics
}

// NewRuntime creates a runtime; call Start before use.
func NewRuntime(cfg Config) *Runtime {
	cfg.setDefaults()
	rt := &Runtime{
		cfg:     cfg,
		eng:     cfg.Engine,
		tr:      cfg.Transport,
		log:     cfg.Logger.With("node", cfg.NodeID),
		stopper: make(chan struct{}),
		stopped: make(chan struct{}),
		signal:  make(chan struct{}, 1),
	}
	rt.mu.groups = make(map[uint64]*Group)
	rt.pendingMu.set = make(map[uint64]struct{})
	rt.hold.msgs = make(map[holdKey]*raftpb.Message)
	return rt
}

// Start launches the scheduler and ticker goroutines.
func (rt *Runtime) Start() {
	rt.started = time.Now()
	rt.wg.Add(2)
	go rt.runScheduler()
	go rt.runTicker()
}

// Stop stops the goroutines; pending proposals fail with ErrStopped.
func (rt *Runtime) Stop() {
	select {
	case <-rt.stopper:
		return
	default:
	}
	close(rt.stopper)
	rt.wg.Wait()
	close(rt.stopped)
}

// NodeID returns this node's id.
func (rt *Runtime) NodeID() uint64 { return rt.cfg.NodeID }

// GroupConfig describes a replica to create or load.
type GroupConfig struct {
	ID           uint64
	StateMachine StateMachine
	// Bootstrap lists the initial voters of a brand-new group; every initial
	// replica is created with the same list. Empty means: load existing
	// state, or create an empty replica that will receive a snapshot (a
	// replica being added to an existing group).
	Bootstrap []uint64
}

// CreateGroup creates (or, after a restart, loads) a replica.
func (rt *Runtime) CreateGroup(cfg GroupConfig) (*Group, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if _, ok := rt.mu.groups[cfg.ID]; ok {
		return nil, fmt.Errorf("consensus: group %d already exists on node %d", cfg.ID, rt.cfg.NodeID)
	}
	if len(cfg.Bootstrap) > 0 {
		exists, err := hasLocalState(rt.eng, cfg.ID)
		if err != nil {
			return nil, err
		}
		if !exists {
			b := rt.eng.NewBatch()
			if err := bootstrapGroup(b, cfg.ID, cfg.Bootstrap); err != nil {
				return nil, err
			}
			if err := b.Commit(storage.Sync); err != nil {
				return nil, err
			}
		}
	}
	store, err := loadLogStore(rt.eng, cfg.ID)
	if err != nil {
		return nil, err
	}
	rn, err := raft.NewRawNode(&raft.Config{
		ID:                        rt.cfg.NodeID,
		ElectionTick:              rt.cfg.ElectionTicks,
		HeartbeatTick:             rt.cfg.HeartbeatTicks,
		Storage:                   store,
		Applied:                   store.appliedIndex,
		MaxSizePerMsg:             1 << 20,
		MaxCommittedSizePerReady:  8 << 20,
		MaxUncommittedEntriesSize: 64 << 20,
		MaxInflightMsgs:           256,
		CheckQuorum:               true,
		PreVote:                   true,
		DisableProposalForwarding: true,
		StepDownOnRemoval:         true,
		Logger:                    raftLogger{rt.log.With("group", cfg.ID)},
	})
	if err != nil {
		return nil, fmt.Errorf("consensus: group %d: %w", cfg.ID, err)
	}
	g := &Group{id: cfg.ID, rt: rt, sm: cfg.StateMachine, rn: rn, store: store}
	g.mu.waiters = make(map[uint64]*waiter)
	g.mu.status = Status{Group: cfg.ID, Node: rt.cfg.NodeID}
	g.refreshStatusLocked(rn.BasicStatus())
	rt.mu.groups[cfg.ID] = g
	rt.markPending(cfg.ID)
	return g, nil
}

// hasLocalState reports whether the group has raft state on this node (its
// applied state is written at bootstrap and by every snapshot).
func hasLocalState(eng *storage.Engine, group uint64) (bool, error) {
	_, ok, err := getValue(eng, storage.AppliedStateKey(group))
	return ok, err
}

// Group returns the local replica of a group.
func (rt *Runtime) Group(id uint64) (*Group, bool) {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	g, ok := rt.mu.groups[id]
	return g, ok
}

// Groups returns the ids of every local replica.
func (rt *Runtime) Groups() []uint64 {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	ids := make([]uint64, 0, len(rt.mu.groups))
	for id := range rt.mu.groups {
		ids = append(ids, id)
	}
	return ids
}

// DestroyGroup removes a replica and all its local data (after it was
// removed from the group's configuration).
func (rt *Runtime) DestroyGroup(id uint64) error {
	rt.cycleMu.Lock()
	defer rt.cycleMu.Unlock()
	rt.mu.Lock()
	g, ok := rt.mu.groups[id]
	delete(rt.mu.groups, id)
	rt.mu.Unlock()
	if !ok {
		return ErrGroupNotFound
	}
	g.mu.Lock()
	g.mu.removed = true
	for pid, w := range g.mu.waiters {
		w.ch <- proposalResult{err: ErrGroupNotFound}
		delete(g.mu.waiters, pid)
	}
	g.mu.Unlock()
	b := rt.eng.NewBatch()
	spans := append(g.sm.SnapshotSpans(), storage.LocalGroupSpan(id))
	for _, s := range spans {
		if err := b.DeleteRange(s.Start, s.End, nil); err != nil {
			return err
		}
	}
	return b.Commit(storage.Sync)
}

// markPending adds id to the pending set and wakes the scheduler.
func (rt *Runtime) markPending(id uint64) {
	rt.addPending(id)
	select {
	case rt.signal <- struct{}{}:
	default:
	}
}

// addPending adds ids to the pending set without waking the scheduler (it
// takes them with its next pass).
func (rt *Runtime) addPending(ids ...uint64) {
	rt.pendingMu.Lock()
	for _, id := range ids {
		rt.pendingMu.set[id] = struct{}{}
	}
	rt.pendingMu.Unlock()
}

func (rt *Runtime) takePending() []uint64 {
	rt.pendingMu.Lock()
	defer rt.pendingMu.Unlock()
	if len(rt.pendingMu.set) == 0 {
		return nil
	}
	ids := make([]uint64, 0, len(rt.pendingMu.set))
	for id := range rt.pendingMu.set {
		ids = append(ids, id)
	}
	clear(rt.pendingMu.set)
	return ids
}

// HandleMessages implements transport.Handler: queue each message on its
// group and wake the scheduler.
func (rt *Runtime) HandleMessages(from uint64, msgs []transport.Message) {
	rt.metrics.MessagesReceived.Add(uint64(len(msgs)))
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	for _, m := range msgs {
		g, ok := rt.mu.groups[m.Group]
		if !ok {
			rt.metrics.DroppedUnknownGroup.Add(1)
			if t := m.Msg.GetType(); t == raftpb.MsgVote || t == raftpb.MsgPreVote {
				rt.metrics.DroppedVotes.Add(1)
			}
			continue
		}
		g.mu.Lock()
		g.mu.inbox = append(g.mu.inbox, m.Msg)
		g.mu.Unlock()
		rt.addPending(m.Group)
	}
	select {
	case rt.signal <- struct{}{}:
	default:
	}
}

// HandleUnreachable implements transport.Handler.
func (rt *Runtime) HandleUnreachable(to uint64) {
	rt.mu.RLock()
	groups := make([]*Group, 0, len(rt.mu.groups))
	for _, g := range rt.mu.groups {
		groups = append(groups, g)
	}
	rt.mu.RUnlock()
	for _, g := range groups {
		g.mu.Lock()
		isLeader := g.mu.status.Role == RoleLeader
		if isLeader {
			g.mu.unreachable = append(g.mu.unreachable, to)
		}
		g.mu.Unlock()
		if isLeader {
			rt.markPending(g.id)
		}
	}
}

// runTicker ticks every active group and watches the leaders of quiesced
// ones.
func (rt *Runtime) runTicker() {
	defer rt.wg.Done()
	t := time.NewTicker(rt.cfg.TickInterval)
	defer t.Stop()
	for {
		select {
		case <-rt.stopper:
			return
		case <-t.C:
		}
		now := time.Now()
		// Whether each leader node fell silent, looked up once per tick
		// rather than once per quiesced follower (thousands of them).
		silent := make(map[uint64]bool, 8)
		isSilent := func(node uint64) bool {
			v, ok := silent[node]
			if !ok {
				v = now.Sub(rt.tr.LastHeard(node)) > rt.cfg.VoteRefusalWindow
				silent[node] = v
			}
			return v
		}
		rt.mu.RLock()
		for id, g := range rt.mu.groups {
			g.mu.Lock()
			if g.mu.quiesced {
				// A quiesced follower wakes when its leader's node falls
				// silent, so that it can take part in an election.
				lead := g.mu.status.Leader
				if g.mu.status.Role != RoleLeader && (lead == 0 || isSilent(lead)) {
					g.mu.quiesced = false
				}
			}
			active := !g.mu.quiesced
			if active {
				g.mu.ticks++
			}
			g.mu.Unlock()
			if active {
				rt.addPending(id)
			}
		}
		rt.mu.RUnlock()
		select {
		case rt.signal <- struct{}{}:
		default:
		}
	}
}

// waitFor polls cond until it holds or ctx ends.
func (rt *Runtime) waitFor(ctx context.Context, cond func() bool) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-rt.stopped:
			return ErrStopped
		case <-t.C:
		}
	}
	return nil
}

// raftLogger adapts slog to raft's Logger; raft's chatter goes to debug.
type raftLogger struct{ l *slog.Logger }

func (r raftLogger) Debug(v ...interface{})                 {}
func (r raftLogger) Debugf(format string, v ...interface{}) {}
func (r raftLogger) Info(v ...interface{})                  {}
func (r raftLogger) Infof(format string, v ...interface{})  {}
func (r raftLogger) Warning(v ...interface{})               { r.l.Warn(fmt.Sprint(v...)) }
func (r raftLogger) Warningf(format string, v ...interface{}) {
	r.l.Warn(fmt.Sprintf(format, v...))
}
func (r raftLogger) Error(v ...interface{})                 { r.l.Error(fmt.Sprint(v...)) }
func (r raftLogger) Errorf(format string, v ...interface{}) { r.l.Error(fmt.Sprintf(format, v...)) }
func (r raftLogger) Fatal(v ...interface{})                 { panic(fmt.Sprint(v...)) }
func (r raftLogger) Fatalf(format string, v ...interface{}) { panic(fmt.Sprintf(format, v...)) }
func (r raftLogger) Panic(v ...interface{})                 { panic(fmt.Sprint(v...)) }
func (r raftLogger) Panicf(format string, v ...interface{}) { panic(fmt.Sprintf(format, v...)) }

var _ raft.Logger = raftLogger{}
var _ = raftpb.MsgApp
