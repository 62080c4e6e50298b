package consensus

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Role of a replica in its group.
type Role int

// Roles.
const (
	RoleFollower Role = iota
	RoleCandidate
	RoleLeader
	RoleLearner
)

func (r Role) String() string {
	return [...]string{"follower", "candidate", "leader", "learner"}[r]
}

// Status is a point-in-time view of a replica, safe to read from any goroutine.
type Status struct {
	Group        uint64
	Node         uint64
	Role         Role
	Leader       uint64
	Term         uint64
	Commit       uint64
	AppliedIndex uint64
	FirstIndex   uint64
	LastIndex    uint64
	Voters       []uint64
	Learners     []uint64
	Quiesced     bool
	LeaseValid   bool
}

type waiter struct {
	ch    chan proposalResult
	term  uint64    // term the proposal entered raft in; 0 until then
	start time.Time // when it was proposed, for ProposalLatency
}

type proposalResult struct {
	value any
	err   error
}

type pendingProposal struct {
	id   uint64
	data []byte // envelope: proposal id + command
	cc   *raftpb.ConfChangeV2
}

// Group is one replica of a Raft group on this node.
type Group struct {
	id uint64
	rt *Runtime
	sm StateMachine

	// Owned by the scheduler goroutine.
	rn             *raft.RawNode
	store          *logStore
	termStartIndex uint64 // index of this leader's first entry of its term
	pendingSnap    *incomingSnapshot

	mu struct {
		sync.Mutex
		inbox        []*raftpb.Message
		proposals    []pendingProposal
		ticks        int
		campaign     bool
		transferTo   uint64
		unreachable  []uint64
		snapStatus   []snapStatus
		snapIn       *incomingSnapshot
		waiters      map[uint64]*waiter
		quiesced     bool
		removed      bool
		status       Status
		followersOK  map[uint64]bool // followers that acked an entry of the current leader term
		confVoters   [2][]uint64
		leadTransfer uint64
	}
}

type snapStatus struct {
	to     uint64
	failed bool
}

// ID returns the group id.
func (g *Group) ID() uint64 { return g.id }

// Status returns a snapshot of the replica's state.
func (g *Group) Status() Status {
	g.mu.Lock()
	st := g.mu.status
	st.Quiesced = g.mu.quiesced
	g.mu.Unlock()
	st.LeaseValid = g.HasLease()
	return st
}

// Propose replicates cmd and returns the state machine's result once the
// command is applied on this node. It fails fast with *NotLeaderError on a
// non-leader (commands are stamped by the leader, so they are never
// forwarded).
func (g *Group) Propose(ctx context.Context, cmd []byte) (any, error) {
	id := rand.Uint64() | 1 // never 0: 0 marks "no proposal"
	data := make([]byte, 8, 8+len(cmd))
	binary.BigEndian.PutUint64(data, id)
	data = append(data, cmd...)
	return g.submit(ctx, pendingProposal{id: id, data: data})
}

// ChangeReplicas proposes a membership change and waits until it is applied.
func (g *Group) ChangeReplicas(ctx context.Context, changes ...*raftpb.ConfChangeSingle) error {
	id := rand.Uint64() | 1
	ctxb := binary.BigEndian.AppendUint64(nil, id)
	cc := &raftpb.ConfChangeV2{Changes: changes, Context: ctxb}
	_, err := g.submit(ctx, pendingProposal{id: id, cc: cc})
	return err
}

// AddLearner adds node as a non-voting replica (it catches up by snapshot).
func (g *Group) AddLearner(ctx context.Context, node uint64) error {
	return g.ChangeReplicas(ctx, confChange(raftpb.ConfChangeAddLearnerNode, node))
}

// PromoteLearner turns a caught-up learner into a voter.
func (g *Group) PromoteLearner(ctx context.Context, node uint64) error {
	return g.ChangeReplicas(ctx, confChange(raftpb.ConfChangeAddNode, node))
}

// RemoveReplica removes node from the group.
func (g *Group) RemoveReplica(ctx context.Context, node uint64) error {
	return g.ChangeReplicas(ctx, confChange(raftpb.ConfChangeRemoveNode, node))
}

func confChange(t raftpb.ConfChangeType, node uint64) *raftpb.ConfChangeSingle {
	return &raftpb.ConfChangeSingle{Type: t.Enum(), NodeId: proto.Uint64(node)}
}

func (g *Group) submit(ctx context.Context, p pendingProposal) (any, error) {
	pd, err := g.enqueue(p)
	if err != nil {
		return nil, err
	}
	return pd.Wait(ctx)
}

// enqueue hands a proposal to the scheduler. Its waiter is always resolved
// eventually: applied, dropped, ambiguous on a leadership change, or
// ErrStopped / ErrGroupNotFound when the runtime stops or the group goes.
func (g *Group) enqueue(p pendingProposal) (*Pending, error) {
	w := &waiter{ch: make(chan proposalResult, 1), start: time.Now()}
	g.mu.Lock()
	if g.mu.removed {
		g.mu.Unlock()
		return nil, ErrGroupNotFound
	}
	if g.mu.status.Role != RoleLeader {
		leader := g.mu.status.Leader
		g.mu.Unlock()
		return nil, &NotLeaderError{Group: g.id, Leader: leader}
	}
	g.mu.waiters[p.id] = w
	g.mu.proposals = append(g.mu.proposals, p)
	g.mu.quiesced = false
	g.mu.Unlock()
	g.rt.metrics.Proposals.Add(1)
	g.rt.markPending(g.id)
	return &Pending{ch: w.ch, stopped: g.rt.stopped}, nil
}

// ProposeAsync is Propose without the wait: the caller waits on the
// returned Pending. Unlike Propose, giving up waiting does not forget the
// proposal, so a caller holding resources (latches) for it can keep them
// until its outcome is known.
func (g *Group) ProposeAsync(cmd []byte) (*Pending, error) {
	id := rand.Uint64() | 1
	data := make([]byte, 8, 8+len(cmd))
	binary.BigEndian.PutUint64(data, id)
	data = append(data, cmd...)
	return g.enqueue(pendingProposal{id: id, data: data})
}

// Pending is a proposal whose outcome is not known yet. Its methods are
// for one goroutine at a time.
type Pending struct {
	ch      <-chan proposalResult
	stopped <-chan struct{}
	done    bool
	r       proposalResult
}

// Wait returns the proposal's result, or ctx.Err() if ctx ends first (the
// command may then still be applied; Wait or Await can be called again).
func (p *Pending) Wait(ctx context.Context) (any, error) {
	if p.done {
		return p.r.value, p.r.err
	}
	select {
	case p.r = <-p.ch:
		p.done = true
		return p.r.value, p.r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-p.stopped:
		return nil, ErrStopped
	}
}

// Resolved reports whether the outcome is known (Wait returned it).
func (p *Pending) Resolved() bool { return p.done }

// Await blocks until the outcome is known, or the runtime stops.
func (p *Pending) Await() (any, error) {
	return p.Wait(context.Background())
}

// TransferLeadership asks the leader to hand leadership to node, and waits
// until this replica observes a leader other than itself or ctx expires.
// A target whose node has not acknowledged this one within the lease
// duration is refused (ErrTransferTargetUnreachable): the leader stops
// serving while a transfer is under way, and raft gives up on a dead
// target only after an election timeout (the balancer moved leaders to a
// node that had just stopped, and each move stalled writes for a second).
func (g *Group) TransferLeadership(ctx context.Context, node uint64) error {
	if node != g.rt.cfg.NodeID && !g.heardFrom(node) {
		return fmt.Errorf("%w: node %d (group %d)", ErrTransferTargetUnreachable, node, g.id)
	}
	g.mu.Lock()
	if g.mu.status.Role != RoleLeader {
		leader := g.mu.status.Leader
		g.mu.Unlock()
		return &NotLeaderError{Group: g.id, Leader: leader}
	}
	g.mu.transferTo = node
	g.mu.quiesced = false
	g.mu.Unlock()
	g.rt.markPending(g.id)
	// A target that stops meanwhile (a whole cluster stopped node by
	// node: the last one's peers were heard from a moment ago) is given
	// up once it goes silent, not at the caller's deadline.
	lost := false
	err := g.rt.waitFor(ctx, func() bool {
		st := g.Status()
		if st.Leader == node && st.Role != RoleLeader {
			return true
		}
		lost = node != g.rt.cfg.NodeID && !g.heardFrom(node)
		return lost
	})
	if err == nil && lost {
		return fmt.Errorf("%w: node %d went silent during the transfer (group %d)", ErrTransferTargetUnreachable, node, g.id)
	}
	return err
}

// HandOff transfers leadership, if this replica leads, to the other voter
// whose node acknowledged this one most recently, and waits as
// TransferLeadership does. A node that shuts down hands off its
// leaderships first: its groups then pause for a transfer rather than for
// a lease to expire and an election. It reports false, doing nothing, when
// this replica does not lead or no other voter was heard from within the
// lease duration.
func (g *Group) HandOff(ctx context.Context) (bool, error) {
	st := g.Status()
	if st.Role != RoleLeader {
		return false, nil
	}
	var to uint64
	var best time.Time
	for _, v := range st.Voters {
		if v == g.rt.cfg.NodeID {
			continue
		}
		if ack := g.rt.tr.LeaseAck(v); ack.After(best) {
			to, best = v, ack
		}
	}
	if to == 0 || !g.heardFrom(to) {
		return false, nil
	}
	return true, g.TransferLeadership(ctx, to)
}

// heardFrom reports whether node acknowledged a frame of this node sent
// within the lease duration: it is up and reachable.
func (g *Group) heardFrom(node uint64) bool {
	return time.Since(g.rt.tr.LeaseAck(node)) <= g.rt.cfg.LeaseDuration
}

// Campaign makes this replica start an election (tests and operators).
func (g *Group) Campaign() {
	g.mu.Lock()
	g.mu.campaign = true
	g.mu.quiesced = false
	g.mu.Unlock()
	g.rt.markPending(g.id)
}

// HasLease reports whether this replica is the leader and holds the leader
// lease, so linearizable reads may be served from local state.
//
// The lease needs: leadership in the current term with an entry of that term
// applied (so every earlier write is visible), no leader transfer under way,
// and in each majority of the configuration, enough replicas (this one
// included) that acknowledged an entry of this term and whose node has
// acknowledged one of our frames sent within LeaseDuration. Those replicas
// refuse votes for VoteRefusalWindow (> LeaseDuration) after hearing from us.
func (g *Group) HasLease() bool {
	_, ok := g.LeaseTerm()
	return ok
}

// LeaseTerm is HasLease that also returns the term of the lease (callers
// that must notice a change of leader use it).
func (g *Group) LeaseTerm() (uint64, bool) {
	now := time.Now()
	g.mu.Lock()
	st := g.mu.status
	ok := st.Role == RoleLeader && g.mu.leadTransfer == 0 && g.mu.followersOK != nil
	if !ok {
		g.mu.Unlock()
		return 0, false
	}
	voters := g.mu.confVoters
	followersOK := g.mu.followersOK
	g.mu.Unlock()
	// Asked before every read and write: the acks of up to 7 voters sort
	// on the stack.
	var buf [7]time.Time
	for _, cfg := range voters {
		if len(cfg) == 0 {
			continue
		}
		acks := buf[:0]
		if len(cfg) > len(buf) {
			acks = make([]time.Time, 0, len(cfg))
		}
		for _, v := range cfg {
			switch {
			case v == g.rt.cfg.NodeID:
				acks = append(acks, now)
			case followersOK[v]:
				acks = append(acks, g.rt.tr.LeaseAck(v))
			default:
				acks = append(acks, time.Time{})
			}
		}
		slices.SortFunc(acks, func(a, b time.Time) int { return b.Compare(a) }) // newest first
		if now.Sub(acks[len(cfg)/2]) >= g.rt.cfg.LeaseDuration {
			return 0, false
		}
	}
	return st.Term, true
}
