package master

import (
	"context"
	"strings"
	"time"

	"github.com/shaledb/shaledb/internal/master/balancer"
	pb "github.com/shaledb/shaledb/internal/master/masterpb"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// An operator's move of one replica (shale admin move-replica) is carried
// out with the balancer's steps: the new replica joins as a learner, is
// promoted once it has caught up, leadership leaves the old replica if it
// has it, and the old replica is removed. The move holds its tablet for its
// whole course (see balancerState), so the balancer neither plans against
// it nor takes the new replica for an excess one; once done, the tablet is
// the balancer's again.

// ReasonMoveReplica is the balancer.Move reason of an operator's move.
const ReasonMoveReplica = "move-replica"

// replicaMoveTimeout bounds a whole move: each of its steps within the time
// the balancer gives that step.
const replicaMoveTimeout = addLearnerTimeout + 2*changeTimeout + transferTimeout

// movedRecently keeps a finished move this long, so that a caller whose
// call returned before the move was done learns from the next one that it
// is.
const movedRecentlyFor = time.Minute

// Steps of a move, as MoveReplicaResponse.step reports them; the others
// are balancer.MoveKind names.
const (
	stepWaiting = "waiting" // for a balancer move of the tablet, or a known leader
	stepDone    = "done"
)

// replicaMove is one operator's move in progress.
type replicaMove struct {
	tablet, from, to uint64
	started          time.Time
	// done is closed when the move ends, err set before.
	done chan struct{}

	// Guarded by Master.mu.
	step        string
	leaderMoved bool
	err         error
	ended       time.Time
}

// inFlight is the move as the planner should see it: the new replica being
// added, the old one being removed.
func (rm *replicaMove) inFlight() []balancer.Move {
	return []balancer.Move{
		{Kind: balancer.AddLearner, Tablet: rm.tablet, TServer: rm.to, Reason: ReasonMoveReplica},
		{Kind: balancer.RemoveReplica, Tablet: rm.tablet, TServer: rm.from, Reason: ReasonMoveReplica},
	}
}

// MoveReplica moves tablet's replica on tserver from to tserver to, and
// waits until the move is done or ctx is about to expire: a move still
// under way then carries on, and a call with the same arguments waits for
// it again. The answer says how far the move got.
func (m *Master) MoveReplica(ctx context.Context, tabletID, from, to uint64) (*pb.MoveReplicaResponse, error) {
	var rm *replicaMove
	started := false
	err := m.withCatalog(func(c *catalog) error {
		now := time.Now()
		for id, old := range m.mu.movedRecently {
			if now.Sub(old.ended) > movedRecentlyFor {
				delete(m.mu.movedRecently, id)
			}
		}
		if old, ok := m.mu.movedRecently[tabletID]; ok && old.from == from && old.to == to {
			rm = old // done between the caller's calls
			return nil
		}
		if cur, ok := m.mu.replicaMoves[tabletID]; ok {
			if cur.from == from && cur.to == to {
				rm = cur // the same move again: wait for it
				return nil
			}
			return errorf(ErrAlreadyExists, "tablet %d: a replica is already moving from node %d to node %d", tabletID, cur.from, cur.to)
		}
		if err := m.checkMove(c, tabletID, from, to, now); err != nil {
			return err
		}
		if m.ctx.Err() != nil {
			return ErrNotLeader // stopping
		}
		rm = &replicaMove{tablet: tabletID, from: from, to: to, started: now, done: make(chan struct{}), step: stepWaiting}
		m.mu.replicaMoves[tabletID] = rm
		delete(m.mu.movedRecently, tabletID)
		m.wg.Add(1)
		started = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	if started {
		m.log.Info("master: moving a replica", "tablet", tabletID, "from", from, "to", to)
		go m.runReplicaMove(rm)
	}

	// Answer before the caller's deadline, so that it learns how far the
	// move got.
	var expire <-chan time.Time
	if d, ok := ctx.Deadline(); ok {
		left := time.Until(d)
		t := time.NewTimer(left - min(left/10, time.Second))
		defer t.Stop()
		expire = t.C
	}
	select {
	case <-rm.done:
	case <-expire:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-m.ctx.Done():
		return nil, ErrNotLeader
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	resp := &pb.MoveReplicaResponse{Step: rm.step, LeaderMoved: rm.leaderMoved, ElapsedMs: time.Since(rm.started).Milliseconds()}
	select {
	case <-rm.done:
		if rm.err != nil {
			return nil, rm.err
		}
		resp.Done, resp.Step, resp.ElapsedMs = true, stepDone, rm.ended.Sub(rm.started).Milliseconds()
	default:
	}
	if c := m.mu.cat; c != nil {
		if loc, ok := c.tablets[tabletID]; ok {
			resp.Tablet = c.withAddrs(loc)
		}
	}
	return resp, nil
}

// checkMove validates a new move. The caller holds m.mu.
func (m *Master) checkMove(c *catalog, tabletID, from, to uint64, now time.Time) error {
	if tabletID == SysCatalogTabletID {
		return errorf(ErrInvalidArgument, "tablet %d is the sys catalog: its replicas are the masters'", tabletID)
	}
	loc, ok := c.tablets[tabletID]
	if !ok || len(loc.GetSplitInto()) > 0 {
		return errorf(ErrNotFound, "tablet %d (see list-tablets)", tabletID)
	}
	if from == to {
		return errorf(ErrInvalidArgument, "node %d is both the source and the destination", from)
	}
	for _, id := range []uint64{from, to} {
		if _, ok := c.tservers[id]; !ok {
			return errorf(ErrNotFound, "node %d (see list-tservers)", id)
		}
	}
	switch role, ok := replicaRole(loc, from); {
	case !ok:
		return errorf(ErrInvalidArgument, "node %d holds no replica of tablet %d", from, tabletID)
	case role != pb.Replica_VOTER:
		return errorf(ErrInvalidArgument, "node %d's replica of tablet %d is a learner still being added, not a voter", from, tabletID)
	}
	if role, ok := replicaRole(loc, to); ok {
		return errorf(ErrAlreadyExists, "node %d already holds a replica of tablet %d (a %s)", to, tabletID, strings.ToLower(role.String()))
	}
	if !m.live(c.tservers[to], now.UnixMilli()) {
		return errorf(ErrInvalidArgument, "node %d is not live: no heartbeat for more than %v", to, m.cfg.TServerDeadAfter)
	}
	for _, id := range c.config.GetBlacklist() {
		if id == to {
			return errorf(ErrInvalidArgument, "node %d is blacklisted: it takes no replicas", to)
		}
	}
	return nil
}

// live reports whether a tserver's heartbeats reach this leader.
func (m *Master) live(ts *tserverState, nowMs int64) bool {
	return ts.heard && nowMs-ts.lastHeartbeat <= m.cfg.TServerDeadAfter.Milliseconds()
}

// runReplicaMove carries out a move, then releases its tablet.
func (m *Master) runReplicaMove(rm *replicaMove) {
	defer m.wg.Done()
	err := m.driveReplicaMove(rm)
	m.mu.Lock()
	rm.err, rm.ended = err, time.Now()
	if m.mu.replicaMoves[rm.tablet] == rm {
		delete(m.mu.replicaMoves, rm.tablet)
	}
	if err == nil {
		m.mu.movedRecently[rm.tablet] = rm
	}
	m.mu.Unlock()
	close(rm.done)
	m.balanceDirty.Store(true) // the tablet is the balancer's again
	if err != nil {
		m.log.Warn("master: moving a replica failed", "tablet", rm.tablet, "from", rm.from, "to", rm.to, "err", err)
		return
	}
	m.log.Info("master: replica moved", "tablet", rm.tablet, "from", rm.from, "to", rm.to, "took", time.Since(rm.started))
}

// moveStep is the next step of a move as the catalog shows the tablet.
type moveStep struct {
	done       bool
	mv         balancer.Move // zero: wait
	leaderAddr string
	targetAddr string
}

// driveReplicaMove steps a move along until the tablet reports show it
// done. Each round looks at the tablet as its reports show it and issues
// the step that is due; a step already issued is not issued again before
// its time limit, unless it failed.
func (m *Master) driveReplicaMove(rm *replicaMove) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := rm.started.Add(replicaMoveTimeout)
	var issued balancer.Move
	var issuedAt, retryAt time.Time
	for {
		now := time.Now()
		var st moveStep
		err := m.withCatalog(func(c *catalog) error {
			var err error
			st, err = m.nextMoveStep(c, rm, now)
			return err
		})
		if err != nil {
			return err
		}
		if st.done {
			return nil
		}
		if now.After(deadline) {
			m.mu.Lock()
			step := rm.step
			m.mu.Unlock()
			return errorf(ErrUnavailable, "tablet %d: the move from node %d to node %d is not done after %v (at %s)",
				rm.tablet, rm.from, rm.to, replicaMoveTimeout, step)
		}
		due := st.mv.Kind != 0 && !now.Before(retryAt) &&
			(st.mv != issued || now.Sub(issuedAt) > moveTimeout(st.mv.Kind))
		if due {
			issued, issuedAt = st.mv, now
			m.log.Info("master: move-replica step", "kind", st.mv.Kind, "tablet", rm.tablet, "tserver", st.mv.TServer)
			if err := m.execute(st.mv, st.leaderAddr, st.targetAddr); err != nil {
				// A leader that moved, a tserver busy: look again shortly.
				m.log.Warn("master: move-replica step failed", "kind", st.mv.Kind, "tablet", rm.tablet, "err", err)
				issued, retryAt = balancer.Move{}, time.Now().Add(500*time.Millisecond)
			} else if st.mv.Kind == balancer.TransferLeader {
				m.mu.Lock()
				rm.leaderMoved = true
				m.mu.Unlock()
			}
		}
		select {
		case <-m.ctx.Done():
			return ErrNotLeader
		case <-tick.C:
		}
	}
}

// nextMoveStep looks at the tablet and says what the move should do next.
// The caller holds m.mu.
func (m *Master) nextMoveStep(c *catalog, rm *replicaMove, now time.Time) (moveStep, error) {
	var st moveStep
	id := rm.tablet
	loc, ok := c.tablets[id]
	if !ok {
		return st, errorf(ErrNotFound, "tablet %d is gone (its table dropped?)", id)
	}
	if len(loc.GetSplitInto()) > 0 {
		return st, errorf(ErrNotFound, "tablet %d was split while its replica moved; move a replica of a child (see list-tablets)", id)
	}
	rm.step = stepWaiting
	// A balancer move issued before this one claimed the tablet: let it
	// finish first.
	if im, ok := m.mu.moves[id]; ok {
		if !moveOver(c, im, now) {
			return st, nil
		}
		delete(m.mu.moves, id)
	}
	toRole, toIn := replicaRole(loc, rm.to)
	_, fromIn := replicaRole(loc, rm.from)
	if toIn && toRole == pb.Replica_VOTER && !fromIn {
		st.done, rm.step = true, stepDone
		return st, nil
	}
	// Configuration changes go through the leader, trusted while its
	// tserver is live and says so.
	nowMs := now.UnixMilli()
	leader := loc.GetLeaderNode()
	lts, ok := c.tservers[leader]
	if r := c.report(leader, id); !ok || r == nil || r.role != int32(tspb.TabletStatus_LEADER) || !m.live(lts, nowMs) {
		return st, nil
	}
	st.leaderAddr = lts.rec.GetRpcAddr()
	addr := func(node uint64) string {
		if ts, ok := c.tservers[node]; ok {
			return ts.rec.GetRpcAddr()
		}
		return ""
	}
	switch {
	case !toIn:
		st.mv = balancer.Move{Kind: balancer.AddLearner, Tablet: id, TServer: rm.to}
		st.targetAddr = addr(rm.to)
	case toRole == pb.Replica_LEARNER:
		rm.step = balancer.AddLearner.String() // the learner is catching up
		if c.caughtUp(loc, rm.to) {
			st.mv = balancer.Move{Kind: balancer.PromoteLearner, Tablet: id, TServer: rm.to}
			st.targetAddr = addr(rm.to)
		}
	case leader == rm.from:
		// Relieve the old replica of leadership before removing it; the
		// new voter has just caught up.
		st.mv = balancer.Move{Kind: balancer.TransferLeader, Tablet: id, TServer: rm.to, From: rm.from}
	default:
		st.mv = balancer.Move{Kind: balancer.RemoveReplica, Tablet: id, TServer: rm.from}
		st.targetAddr = addr(rm.from)
	}
	if st.mv.Kind != 0 {
		st.mv.Reason = ReasonMoveReplica
		rm.step = st.mv.Kind.String()
	}
	return st, nil
}
