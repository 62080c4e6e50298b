package consensus

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
	"google.golang.org/protobuf/proto"

	"github.com/shaledb/shaledb/internal/consensus/transport"
	"github.com/shaledb/shaledb/internal/storage"
)

// campaignTransfer is the context etcd raft puts on votes of a leader
// transfer; such votes bypass the vote refusal of leader leases.
var campaignTransfer = []byte("CampaignTransfer")

// quiesceContext marks the last heartbeat a leader sends before quiescing.
var quiesceContext = []byte("shale-quiesce")

// groupWork is one group's share of a scheduler cycle.
type groupWork struct {
	g       *Group
	rd      raft.Ready
	results []appliedResult
	// mustSync: the Ready's log writes must be fsynced before its
	// acknowledgements leave (new entries, a term or vote change, a new
	// leader, a snapshot). A Ready that only advances the commit index needs
	// no fsync: a lost commit index is learned again from the leader.
	mustSync bool
	// early: the Ready changes neither term, vote nor leader, so its
	// messages other than acknowledgements (appends and heartbeats of a
	// leader) may leave while its log writes are being synced: a leader then
	// writes to its disk in parallel with its followers (Raft thesis
	// 10.2.1; the leader counts its own entries only after Advance).
	early bool
}

// mustWaitForSync reports whether m acknowledges state of its Ready (a log
// append or a vote) and so may only be sent once that state is durable; etcd
// raft sends every other message ahead of persistence in its async mode.
func mustWaitForSync(m *raftpb.Message) bool {
	switch m.GetType() {
	case raftpb.MsgAppResp, raftpb.MsgVoteResp, raftpb.MsgPreVoteResp, raftpb.MsgSnap:
		return true
	}
	return false
}

type appliedResult struct {
	id    uint64
	value any
	err   error
}

// maxCycles bounds the cycles in flight: started, their log batch not yet
// durable. Pebble syncs the batches of all but the oldest together.
const maxCycles = 4

// cycleRun is a scheduler cycle between its start (log written, early
// messages sent, committed entries applied) and its finish (log durable,
// acknowledgements sent, RawNodes advanced).
type cycleRun struct {
	start time.Time
	work  []*groupWork
	batch *pebble.Batch
	// synced is closed once the log batch is durable (or failed to be,
	// syncErr); nil if the cycle needed no fsync.
	synced   chan struct{}
	syncErr  error
	syncTook time.Duration
}

// runScheduler runs cycles. A cycle whose log writes must be fsynced does
// not hold the scheduler while the fsync runs: the next cycle starts with
// the groups that are not in flight (a group is in at most one cycle, as a
// RawNode's Ready must be advanced before the next), its log batch joins
// Pebble's group commit, and the answers to the first cycle's messages are
// handled as soon as they arrive. Without this, two writes to different
// tablets arriving together were as slow as two in a row: each waited for
// the other's fsync on every node. Cycles finish in the order they started.
func (rt *Runtime) runScheduler() {
	defer rt.wg.Done()
	var inflight []*cycleRun
	busy := map[uint64]bool{} // groups of the cycles in flight
	must := func(err error) {
		if err != nil {
			// A storage failure leaves the replica in an unknown state:
			// stop rather than acknowledge anything more.
			panic(fmt.Sprintf("consensus: node %d: %v", rt.cfg.NodeID, err))
		}
	}
	finishOldest := func() {
		c := inflight[0]
		inflight = inflight[1:]
		for _, w := range c.work {
			delete(busy, w.g.id)
		}
		must(rt.finishCycle(c))
	}
	for {
		var synced chan struct{}
		if len(inflight) > 0 {
			synced = inflight[0].synced
		}
		select {
		case <-rt.stopper:
			for len(inflight) > 0 {
				<-inflight[0].synced
				inflight[0].batch.Close()
				inflight = inflight[1:]
			}
			rt.failAllWaiters()
			return
		case <-rt.signal:
		case <-synced:
		}
		for {
			for len(inflight) > 0 && isClosed(inflight[0].synced) {
				finishOldest()
			}
			ids := rt.takePending()
			ready := ids[:0]
			var later []uint64
			for _, id := range ids {
				switch {
				case busy[id]:
					later = append(later, id)
				case len(inflight) > 0 && !rt.mayOverlap(id):
					rt.metrics.Deferred.Add(1)
					later = append(later, id)
				default:
					ready = append(ready, id)
				}
			}
			if len(later) > 0 {
				// Taken again once their cycle, or the fsync they wait
				// behind, finishes.
				rt.addPending(later...)
			}
			if len(ready) == 0 {
				break
			}
			if len(inflight) == maxCycles {
				rt.addPending(ready...)
				<-inflight[0].synced
				continue
			}
			c, err := rt.startCycle(ready)
			must(err)
			if c == nil {
				continue
			}
			if len(inflight) > 0 {
				rt.metrics.CyclesOverlapped.Add(1)
			}
			if c.synced == nil {
				must(rt.finishCycle(c))
				continue
			}
			inflight = append(inflight, c)
			for _, w := range c.work {
				busy[w.g.id] = true
			}
		}
	}
}

// mayOverlap reports whether group id's queued input may start a cycle
// while an earlier cycle's fsync runs. Answers, heartbeats and ticks may: a
// leader commits on its followers' acknowledgements, and a follower applies
// what a heartbeat says is committed, without waiting for an unrelated
// fsync. New log entries may not (proposals, and appends to a follower):
// they wait for the fsync and go in one cycle together, with one log write,
// one fsync and one append per follower. Starting a cycle for each entry as
// it came made small cycles under load: 0.66 cycles, 0.61 of them synced,
// per single-row INSERT at 64 clients, against 0.46 and 0.39 when they
// wait, and 12-16% less node CPU (docs/benchmarks.md, session 27). A group
// whose input is misjudged here only runs in a different cycle: what a
// cycle may do does not depend on it.
func (rt *Runtime) mayOverlap(id uint64) bool {
	g, ok := rt.Group(id)
	if !ok {
		return true
	}
	return g.carriesNoEntries()
}

// carriesNoEntries reports whether the group's queued input brings no new
// log entries: no proposals, no snapshot, no message with entries (a
// commit-only append has none). Snapshots come through snapIn, never the
// inbox.
func (g *Group) carriesNoEntries() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.mu.proposals) > 0 || g.mu.snapIn != nil {
		return false
	}
	for _, m := range g.mu.inbox {
		if len(m.GetEntries()) > 0 {
			return false
		}
	}
	return true
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (rt *Runtime) failAllWaiters() {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	for _, g := range rt.mu.groups {
		g.mu.Lock()
		for id, w := range g.mu.waiters {
			w.ch <- proposalResult{err: ErrStopped}
			delete(g.mu.waiters, id)
		}
		g.mu.Unlock()
	}
}

// startCycle runs the first half of a scheduler pass over the given groups:
// their log writes are committed to the engine and, if they must be
// durable, synced in the background (c.synced); messages that need not wait
// for the fsync are sent and committed entries applied. It returns nil if
// no group had work.
func (rt *Runtime) startCycle(ids []uint64) (*cycleRun, error) {
	rt.cycleMu.Lock()
	defer rt.cycleMu.Unlock()
	c := &cycleRun{start: time.Now(), batch: rt.eng.NewBatch()}
	committed := false // from then on finishCycle closes the batch
	defer func() {
		if !committed {
			c.batch.Close()
		}
	}()
	work := make([]*groupWork, 0, len(ids))
	for _, id := range ids {
		g, ok := rt.Group(id)
		if !ok {
			continue
		}
		w, err := g.prepare(c.batch)
		if err != nil {
			return nil, err
		}
		if w != nil {
			work = append(work, w)
		}
	}
	if len(work) == 0 {
		return nil, nil
	}
	c.work = work
	// 1. Group commit: every group's entries and hard state in one batch,
	// with a single fsync if any group needs one. The batch is written (and
	// visible) at once; the fsync runs in the background.
	mustSync := false
	for _, w := range work {
		mustSync = mustSync || w.mustSync
	}
	if !c.batch.Empty() {
		if mustSync {
			syncStart := time.Now()
			if err := rt.eng.ApplyNoSyncWait(c.batch, storage.Sync); err != nil {
				return nil, fmt.Errorf("raft log commit: %w", err)
			}
			c.synced = make(chan struct{})
			go func() {
				c.syncErr = c.batch.SyncWait()
				c.syncTook = time.Since(syncStart)
				close(c.synced)
			}()
		} else if err := c.batch.Commit(storage.NoSync); err != nil {
			return nil, fmt.Errorf("raft log commit: %w", err)
		}
	}
	committed = true
	// 2. Send what need not wait for the fsync: one transport call per
	// destination.
	rt.sendCycle(work, false)
	// 3. Apply every group's committed entries in one batch, and answer the
	// waiting proposers. Committed entries are durable on a quorum, so this
	// need not wait for our fsync; the apply batch follows the log batch in
	// the WAL, so a crash never keeps the one without the other.
	// Indexed: a transaction's apply entry reads the intents an earlier
	// entry of the same cycle wrote.
	apply := rt.eng.NewIndexedBatch()
	defer apply.Close()
	applyStart := time.Now()
	applied := false
	for _, w := range work {
		if len(w.rd.CommittedEntries) == 0 {
			continue
		}
		applied = true
		if err := w.g.applyCommitted(apply, w); err != nil {
			return c, err
		}
	}
	if applied {
		if err := apply.Commit(storage.NoSync); err != nil {
			return c, fmt.Errorf("apply commit: %w", err)
		}
		rt.metrics.ApplyLatency.Observe(time.Since(applyStart))
		for _, w := range work {
			// PostApply before the results: a proposer woken by its
			// result must find the state machine's after-commit work
			// done (a tablet forgets the transactions the batch resolved
			// from its in-memory intent mirror there; delivered first, a
			// caller saw the mirror hold intents the engine no longer had).
			if pa, ok := w.g.sm.(PostApplier); ok && len(w.rd.CommittedEntries) > 0 {
				pa.PostApply()
			}
			w.g.deliverResults(w)
		}
	}
	return c, nil
}

// sendCycle sends the messages of a cycle's Readys: those that need not
// wait for the fsync (late false), or the rest (late true); one transport
// call per destination.
func (rt *Runtime) sendCycle(work []*groupWork, late bool) {
	out := make(map[uint64][]transport.Message)
	for _, w := range work {
		for _, m := range w.rd.Messages {
			if early := w.early && !mustWaitForSync(m); early == late {
				continue
			}
			if m.GetType() == raftpb.MsgSnap {
				rt.sendSnapshot(w.g, m)
				continue
			}
			rt.route(w.g, m, out)
		}
	}
	for to, msgs := range out {
		rt.metrics.MessagesSent.Add(uint64(len(msgs)))
		rt.tr.Send(to, msgs)
	}
}

// finishCycle runs the second half of a cycle whose log writes are durable:
// it sends the acknowledgements and advances the RawNodes. A group
// destroyed meanwhile is skipped: its keys are gone and must stay so.
func (rt *Runtime) finishCycle(c *cycleRun) error {
	defer c.batch.Close()
	if c.synced != nil {
		if c.syncErr != nil {
			return fmt.Errorf("raft log sync: %w", c.syncErr)
		}
		rt.metrics.observeSync(c.syncTook)
	}
	rt.cycleMu.Lock()
	defer rt.cycleMu.Unlock()
	work := c.work[:0]
	for _, w := range c.work {
		w.g.mu.Lock()
		removed := w.g.mu.removed
		w.g.mu.Unlock()
		if !removed {
			work = append(work, w)
		}
	}
	// 4. The log is durable: send the acknowledgements.
	for _, w := range work {
		w.g.store.commitAppend(w.rd.HardState, w.rd.Entries)
	}
	rt.sendCycle(work, true)
	// 5. Advance and tidy up.
	for _, w := range work {
		if err := w.g.finish(w); err != nil {
			return err
		}
	}
	rt.metrics.Cycles.Add(1)
	rt.metrics.observeCycle(time.Since(c.start))
	return nil
}

// prepare feeds the group's queued input into raft and collects its Ready,
// staging log writes into batch. It returns nil if the group has no Ready.
func (g *Group) prepare(batch *pebble.Batch) (*groupWork, error) {
	g.mu.Lock()
	inbox := g.mu.inbox
	g.mu.inbox = nil
	props := g.mu.proposals
	g.mu.proposals = nil
	ticks := g.mu.ticks
	g.mu.ticks = 0
	campaign := g.mu.campaign
	g.mu.campaign = false
	transferTo := g.mu.transferTo
	g.mu.transferTo = 0
	unreachable := g.mu.unreachable
	g.mu.unreachable = nil
	snaps := g.mu.snapStatus
	g.mu.snapStatus = nil
	quiesced := g.mu.quiesced
	removed := g.mu.removed
	g.mu.Unlock()
	if removed {
		return nil, nil
	}
	rt := g.rt
	wake := false
	for _, m := range inbox {
		if g.refuseVote(m) {
			rt.metrics.VotesRefused.Add(1)
			continue
		}
		if m.GetType() == raftpb.MsgSnap {
			// Snapshots arrive through HandleSnapshot, never here.
			continue
		}
		quiesceMsg := (m.GetType() == raftpb.MsgHeartbeat || m.GetType() == raftpb.MsgHeartbeatResp) &&
			bytes.Equal(m.GetContext(), quiesceContext)
		if quiesceMsg && m.GetType() == raftpb.MsgHeartbeatResp {
			// raft reads a heartbeat response context as a ReadIndex ack.
			m.Context = nil
		}
		if err := g.rn.Step(m); err != nil && !errors.Is(err, raft.ErrStepPeerNotFound) && !errors.Is(err, raft.ErrStepLocalMsg) {
			rt.log.Debug("step", "group", g.id, "err", err)
		}
		// Messages are in order: the latest decides whether the group sleeps.
		t := m.GetType()
		switch {
		case quiesceMsg:
			if t == raftpb.MsgHeartbeat && m.GetFrom() == g.rn.BasicStatus().Lead {
				quiesced = true
			}
		case quiesced && (t == raftpb.MsgAppResp || t == raftpb.MsgHeartbeatResp) && !g.rn.HasReady():
			// A late acknowledgement that gives a quiesced leader nothing
			// to do (the answer to its last commit update) keeps it asleep.
		default:
			quiesced = false
		}
	}
	g.mu.Lock()
	if in := g.mu.snapIn; in != nil {
		g.mu.snapIn = nil
		g.pendingSnap = in
	}
	g.mu.Unlock()
	if g.pendingSnap != nil {
		// Step the snapshot message; raft decides whether it is still useful.
		wake = true
		if err := g.rn.Step(g.pendingSnap.msg); err != nil {
			rt.log.Debug("step snapshot", "group", g.id, "err", err)
		}
	}
	for _, to := range unreachable {
		g.rn.ReportUnreachable(to)
	}
	for _, s := range snaps {
		status := raft.SnapshotFinish
		if s.failed {
			status = raft.SnapshotFailure
		}
		g.rn.ReportSnapshot(s.to, status)
		wake = true
	}
	if campaign {
		wake = true
		_ = g.rn.Campaign()
	}
	if transferTo != 0 {
		wake = true
		g.rn.TransferLeader(transferTo)
	}
	if len(props) > 0 {
		wake = true
		g.proposeAll(props)
	}
	if wake {
		quiesced = false
	}
	if !quiesced && ticks > 0 {
		// One tick however many piled up: ticks pile up while the node is
		// too busy to run cycles (a long apply, a starved process), and
		// its peers' messages piled up unread meanwhile. Stepped all at
		// once after the messages, they made followers campaign and
		// leaders step down for want of a quorum they had not yet heard,
		// although nobody was down: leaderships lost under load. A tick
		// counts a chance to hear from peers, not wall time (leases and
		// vote refusal use the clock).
		g.rn.Tick()
	}
	g.mu.Lock()
	g.mu.quiesced = quiesced
	g.mu.Unlock()
	if quiesced {
		g.store.dropCache() // an idle group keeps no entries in memory
	}
	if !g.rn.HasReady() {
		if g.pendingSnap != nil {
			g.pendingSnap.finish(nil) // raft found it stale; nothing to ingest
			g.pendingSnap = nil
		}
		return nil, nil
	}
	rd := g.rn.Ready()
	if !raft.IsEmptySnap(rd.Snapshot) {
		if err := g.ingestSnapshot(rd.Snapshot); err != nil {
			return nil, err
		}
	}
	if g.pendingSnap != nil {
		g.pendingSnap.finish(nil)
		g.pendingSnap = nil
	}
	var hs *raftpb.HardState
	if !raft.IsEmptyHardState(rd.HardState) {
		hs = rd.HardState
	}
	if err := g.store.stageAppend(batch, hs, rd.Entries); err != nil {
		return nil, err
	}
	w := &groupWork{g: g, mustSync: rd.MustSync || !raft.IsEmptySnap(rd.Snapshot)}
	w.early = hs == nil || (hs.GetTerm() == g.store.hardState.GetTerm() && hs.GetVote() == g.store.hardState.GetVote())
	if rd.SoftState != nil && rd.Lead != 0 && rd.Lead != g.store.lastLeader {
		// Durable before any message to that leader leaves this node.
		if err := batch.Set(storage.LastLeaderKey(g.id), binary.BigEndian.AppendUint64(nil, rd.Lead), nil); err != nil {
			return nil, err
		}
		g.store.lastLeader = rd.Lead
		w.mustSync, w.early = true, false
	}
	if rd.SoftState != nil && rd.RaftState == raft.StateLeader {
		// becomeLeader appends an empty entry; it is the last of this Ready.
		if n := len(rd.Entries); n > 0 {
			g.termStartIndex = rd.Entries[n-1].GetIndex()
		}
	}
	rd.HardState = hs
	w.rd = rd
	return w, nil
}

// refuseVote implements the follower side of leader leases: no vote for
// another candidate while the leader this replica follows is being heard
// from. The leader is the one raft knows, or after a restart the persisted
// last leader; and for VoteRefusalWindow after start every vote is refused
// by a replica that has followed a leader, because liveness has not been
// observed yet.
func (g *Group) refuseVote(m *raftpb.Message) bool {
	t := m.GetType()
	if t != raftpb.MsgVote && t != raftpb.MsgPreVote {
		return false
	}
	if bytes.Equal(m.GetContext(), campaignTransfer) {
		return false
	}
	rt := g.rt
	if g.store.lastLeader != 0 && time.Since(rt.started) < rt.cfg.VoteRefusalWindow {
		// A replica that never followed a leader never acknowledged one
		// (the leader is persisted before the first message to it
		// leaves), so no lease counts on it: a new tablet's replicas on
		// a node that just started may vote at once.
		return true
	}
	lead := g.rn.BasicStatus().Lead
	if lead == 0 {
		lead = g.store.lastLeader
	}
	if lead == 0 || lead == m.GetFrom() || lead == rt.cfg.NodeID {
		return false
	}
	if !g.isVoter(lead) {
		return false
	}
	return time.Since(rt.tr.LastHeard(lead)) < rt.cfg.VoteRefusalWindow
}

func (g *Group) isVoter(node uint64) bool {
	cs := g.store.confState
	for _, v := range cs.GetVoters() {
		if v == node {
			return true
		}
	}
	for _, v := range cs.GetVotersOutgoing() {
		if v == node {
			return true
		}
	}
	return false
}

// applyCommitted applies the committed entries of w into b and records the
// applied state in the same batch.
func (g *Group) applyCommitted(b *pebble.Batch, w *groupWork) error {
	st := g.store
	for _, e := range w.rd.CommittedEntries {
		idx := e.GetIndex()
		if idx <= st.appliedIndex {
			continue // already applied (replayed after a snapshot)
		}
		switch e.GetType() {
		case raftpb.EntryNormal:
			data := e.GetData()
			if len(data) >= 8 {
				id := binary.BigEndian.Uint64(data)
				g.mu.Lock()
				_, local := g.mu.waiters[id]
				g.mu.Unlock()
				cs := st.confState
				res := g.sm.Apply(b, Entry{Index: idx, Term: e.GetTerm(), Local: local, Data: data[8:],
					Voters: cs.GetVoters(), Learners: cs.GetLearners(), Joint: len(cs.GetVotersOutgoing()) > 0})
				if local {
					r := appliedResult{id: id, value: res}
					if err, ok := res.(error); ok {
						r.value, r.err = nil, err
					}
					w.results = append(w.results, r)
				}
			}
		case raftpb.EntryConfChangeV2, raftpb.EntryConfChange:
			var cc raftpb.ConfChangeI
			if e.GetType() == raftpb.EntryConfChangeV2 {
				v2 := &raftpb.ConfChangeV2{}
				if err := proto.Unmarshal(e.GetData(), v2); err != nil {
					return fmt.Errorf("group %d: conf change at %d: %w", g.id, idx, err)
				}
				cc = v2
				if ctx := v2.GetContext(); len(ctx) == 8 {
					w.results = append(w.results, appliedResult{id: binary.BigEndian.Uint64(ctx)})
				}
			} else {
				v1 := &raftpb.ConfChange{}
				if err := proto.Unmarshal(e.GetData(), v1); err != nil {
					return fmt.Errorf("group %d: conf change at %d: %w", g.id, idx, err)
				}
				cc = v1
			}
			st.confState = g.rn.ApplyConfChange(cc)
			g.rt.metrics.ConfChanges.Add(1)
		}
		st.appliedIndex, st.appliedTerm = idx, e.GetTerm()
		g.rt.metrics.EntriesApplied.Add(1)
	}
	return b.Set(storage.AppliedStateKey(g.id), encodeAppliedState(st.appliedIndex, st.appliedTerm, st.confState), nil)
}

// finish delivers results, advances raft, refreshes the shared status, and
// decides about log truncation and quiescence.
func (g *Group) finish(w *groupWork) error {
	g.rn.Advance(w.rd)
	bs := g.rn.BasicStatus()
	g.mu.Lock()
	if bs.RaftState != raft.StateLeader {
		// Proposals still in flight may or may not commit under a new leader.
		for id, wt := range g.mu.waiters {
			if wt.term != 0 {
				delete(g.mu.waiters, id)
				wt.ch <- proposalResult{err: ErrAmbiguous}
			}
		}
	}
	g.refreshStatusLocked(bs)
	g.mu.Unlock()
	if bs.RaftState == raft.StateLeader {
		g.refreshLeaderState()
	}
	if err := g.maybeTruncate(bs); err != nil {
		return err
	}
	g.maybeQuiesce(bs)
	if g.rn.HasReady() {
		g.rt.markPending(g.id)
	}
	return nil
}

// deliverResults answers the proposers of w's applied entries.
func (g *Group) deliverResults(w *groupWork) {
	if len(w.results) == 0 {
		return
	}
	now := time.Now()
	g.mu.Lock()
	for _, r := range w.results {
		if wt, ok := g.mu.waiters[r.id]; ok {
			delete(g.mu.waiters, r.id)
			g.rt.metrics.ProposalLatency.Observe(now.Sub(wt.start))
			wt.ch <- proposalResult{value: r.value, err: r.err}
		}
	}
	g.mu.Unlock()
	w.results = nil
}

func (g *Group) refreshStatusLocked(bs raft.BasicStatus) {
	st := &g.mu.status
	switch bs.RaftState {
	case raft.StateLeader:
		st.Role = RoleLeader
	case raft.StateCandidate, raft.StatePreCandidate:
		st.Role = RoleCandidate
	default:
		st.Role = RoleFollower
		for _, l := range g.store.confState.GetLearners() {
			if l == g.rt.cfg.NodeID {
				st.Role = RoleLearner
			}
		}
	}
	if st.Role != RoleLeader || st.Term != bs.GetTerm() {
		g.mu.followersOK = nil
	}
	st.Leader, st.Term, st.Commit = bs.Lead, bs.GetTerm(), bs.GetCommit()
	st.AppliedIndex = g.store.appliedIndex
	st.FirstIndex, st.LastIndex = g.store.truncIndex+1, g.store.lastIndex
	cs := g.store.confState
	st.Voters = append(st.Voters[:0:0], cs.GetVoters()...)
	st.Learners = append(st.Learners[:0:0], cs.GetLearners()...)
	g.mu.confVoters = [2][]uint64{st.Voters, append([]uint64(nil), cs.GetVotersOutgoing()...)}
	g.mu.leadTransfer = bs.LeadTransferee
}

// refreshLeaderState records which followers have acknowledged an entry of
// this term, which makes them count towards the lease, once the first entry
// of the term is applied (so reads see every earlier write).
func (g *Group) refreshLeaderState() {
	if g.store.appliedIndex < g.termStartIndex || g.termStartIndex == 0 {
		return
	}
	ok := make(map[uint64]bool)
	g.rn.WithProgress(func(id uint64, typ raft.ProgressType, pr tracker.Progress) {
		if pr.Match >= g.termStartIndex {
			ok[id] = true
		}
	})
	g.mu.Lock()
	g.mu.followersOK = ok
	g.mu.Unlock()
}

// maybeTruncate drops applied log entries once enough have accumulated,
// keeping what active followers still need unless they lag too far (they
// then catch up by snapshot).
func (g *Group) maybeTruncate(bs raft.BasicStatus) error {
	st := g.store
	rt := g.rt
	target := st.appliedIndex
	if target <= st.truncIndex+rt.cfg.LogTruncateThreshold {
		return nil
	}
	if bs.RaftState == raft.StateLeader {
		g.rn.WithProgress(func(id uint64, _ raft.ProgressType, pr tracker.Progress) {
			if id == rt.cfg.NodeID || !pr.RecentActive {
				return
			}
			if pr.Match < target && st.appliedIndex-pr.Match < rt.cfg.MaxFollowerLag {
				target = pr.Match
			}
		})
	}
	if target <= st.truncIndex+rt.cfg.LogTruncateThreshold/2 {
		return nil
	}
	b := rt.eng.NewBatch()
	defer b.Close()
	term, err := st.stageTruncate(b, target)
	if err != nil {
		return err
	}
	if err := b.Commit(storage.NoSync); err != nil {
		return err
	}
	st.commitTruncate(target, term)
	rt.metrics.LogTruncations.Add(1)
	return nil
}

// proposeAll hands a cycle's proposals to raft in their order. Consecutive
// commands go in one MsgProp: raft answers every MsgProp with an append to
// each follower, so one message per command cost a MsgApp and its MsgAppResp
// per follower per command; batched, the cycle's commands share them.
func (g *Group) proposeAll(props []pendingProposal) {
	for len(props) > 0 {
		n := 1
		var err error
		if cc := props[0].cc; cc != nil {
			err = g.rn.ProposeConfChange(cc)
		} else {
			for n < len(props) && props[n].cc == nil {
				n++
			}
			ents := make([]*raftpb.Entry, n)
			for i, p := range props[:n] {
				ents[i] = &raftpb.Entry{Data: p.data}
			}
			err = g.rn.Step(&raftpb.Message{Type: raftpb.MsgProp.Enum(), From: proto.Uint64(g.rt.cfg.NodeID), Entries: ents})
		}
		g.settleProposed(props[:n], err)
		props = props[n:]
	}
}

// settleProposed fails the waiters of proposals raft refused and records the
// term the others were proposed in.
func (g *Group) settleProposed(props []pendingProposal, err error) {
	st := g.rn.BasicStatus()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range props {
		w := g.mu.waiters[p.id]
		switch {
		case w == nil:
		case err == nil:
			w.term = st.GetTerm()
		case st.RaftState == raft.StateLeader:
			delete(g.mu.waiters, p.id)
			w.ch <- proposalResult{err: ErrProposalDropped}
		default:
			delete(g.mu.waiters, p.id)
			w.ch <- proposalResult{err: &NotLeaderError{Group: g.id, Leader: st.Lead}}
		}
	}
}
