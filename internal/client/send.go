package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shaledb/shaledb/internal/hlc"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// Retry policy: exponential backoff with jitter between rounds, inside the
// operation's deadline.
const (
	backoffMin = 10 * time.Millisecond
	backoffMax = time.Second
	// A request makes at least replicaRounds rounds over a tablet's
	// replicas, for at least replicaPatience, before asking the master for
	// fresh locations: an election is over sooner than the master hears
	// of it.
	replicaRounds   = 3
	replicaPatience = 500 * time.Millisecond
)

// errReroute: the tablet asked does not own the key (any more): reload the
// table's locations and route again.
type rerouteError struct{ cause error }

func (e *rerouteError) Error() string { return "client: stale tablet location: " + e.cause.Error() }

// tabletError is a TabletError answer as a Go error.
type tabletError struct{ e *tspb.TabletError }

func (e *tabletError) Error() string { return fmt.Sprintf("%s: %s", e.e.GetCode(), e.e.GetMessage()) }

// restartTime is the time a CodeReadRestart error says to read at again
// (0 for other errors).
func restartTime(err error) hlc.Timestamp {
	var te *tabletError
	if !hasCode(err, CodeReadRestart) || !errors.As(err, &te) {
		return 0
	}
	return hlc.Timestamp(te.e.GetRestartTime())
}

// backoff sleeps for the current delay (with jitter) and doubles it; false
// if ctx ended first.
type backoff struct{ d time.Duration }

func (b *backoff) wait(ctx context.Context) bool {
	if b.d == 0 {
		b.d = backoffMin
	}
	d := b.d/2 + rand.N(b.d/2+1)
	b.d = min(2*b.d, backoffMax)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// sender carries one operation's retry state: whether a write may have
// been applied, and the last failure (reported when the deadline passes).
type sender struct {
	c     *Client
	write bool
	// inOrder: a request over several tablets goes to them one after
	// another in key order rather than at once (locks: see Txn.Lock).
	inOrder bool
	// slack lengthens each attempt beyond Config.AttemptTimeout, for
	// requests large enough to need it (sizeAllowance).
	slack time.Duration

	mu        sync.Mutex
	ambiguous bool
	last      error
}

func (s *sender) note(err error, ambiguous bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = err
	if s.write && ambiguous {
		s.ambiguous = true
	}
}

// call is one RPC to one replica of a tablet; it returns the answer's
// TabletError (nil: success) or a transport error.
type call func(ctx context.Context, r *replica) (*tspb.TabletError, error)

// pick returns the replica to try next: the leader if known and not yet
// tried in this round, else the first untried replica.
func pick(tab *tabletMeta, tried map[string]bool) *replica {
	if l := tab.leader.Load(); l != nil && !tried[l.addr] {
		return l
	}
	for i := range tab.replicas {
		if r := &tab.replicas[i]; !tried[r.addr] {
			return r
		}
	}
	return nil
}

// toTablet sends a request to a tablet's leader. It follows NOT_LEADER
// hints, tries the other replicas when the leader is unknown or
// unreachable, and backs off between rounds, until success, the end of
// ctx, an error retrying cannot fix, or an answer that needs fresh
// locations (*rerouteError, also after fruitless rounds; see
// replicaRounds).
func (s *sender) toTablet(ctx context.Context, tab *tabletMeta, f call) error {
	var b backoff
	tried := map[string]bool{}
	rounds := 0
	start := time.Now()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		r := pick(tab, tried)
		if r == nil {
			rounds++
			if rounds >= replicaRounds && time.Since(start) >= replicaPatience {
				return &rerouteError{cause: s.lastErr()}
			}
			if !b.wait(ctx) {
				return ctx.Err()
			}
			tried = map[string]bool{}
			continue
		}
		tried[r.addr] = true
		te, err := s.attempt(ctx, tab, r, f)
		if err != nil {
			if ctx.Err() != nil {
				s.note(err, sentMaybe(err))
				return ctx.Err()
			}
			// The node is down or hung: forget it as leader, try others.
			s.note(err, sentMaybe(err))
			tab.leader.CompareAndSwap(r, nil)
			continue
		}
		switch te.GetCode() {
		case tspb.TabletError_OK:
			if tab.leader.Load() != r {
				tab.leader.Store(r)
			}
			return nil
		case tspb.TabletError_NOT_LEADER:
			s.note(&tabletError{te}, false)
			tab.leader.CompareAndSwap(r, nil)
			tab.setLeader(te.GetLeaderNode(), te.GetLeaderAddr())
		case tspb.TabletError_TABLET_NOT_FOUND, tspb.TabletError_KEY_OUT_OF_RANGE, tspb.TabletError_TABLET_SPLIT:
			s.note(&tabletError{te}, false)
			return &rerouteError{cause: &tabletError{te}}
		case tspb.TabletError_AMBIGUOUS, tspb.TabletError_TIMEOUT:
			// Idempotent at this layer: try again (the same leader too).
			s.note(&tabletError{te}, true)
			delete(tried, r.addr)
			if !b.wait(ctx) {
				return ctx.Err()
			}
		case tspb.TabletError_INVALID_ARGUMENT:
			return &Error{Code: CodeInvalidArgument, Err: &tabletError{te}}
		case tspb.TabletError_TXN_CONFLICT:
			return &Error{Code: CodeTxnConflict, Err: &tabletError{te}}
		case tspb.TabletError_DEADLOCK:
			return &Error{Code: CodeDeadlock, Err: &tabletError{te}}
		case tspb.TabletError_LOCK_NOT_AVAILABLE:
			return &Error{Code: CodeLockNotAvailable, Err: &tabletError{te}}
		case tspb.TabletError_TXN_ABORTED:
			return &Error{Code: CodeTxnAborted, Err: &tabletError{te}}
		case tspb.TabletError_READ_RESTART:
			return &Error{Code: CodeReadRestart, Err: &tabletError{te}}
		case tspb.TabletError_READ_TOO_OLD:
			return &Error{Code: CodeReadTooOld, Err: &tabletError{te}}
		case tspb.TabletError_DUPLICATE_KEY:
			return duplicateKeyError(te)
		case tspb.TabletError_OUT_OF_RANGE:
			return &Error{Code: CodeOutOfRange, Err: &OutOfRangeError{Column: te.GetColumnId(), cause: &tabletError{te}}}
		default:
			return &Error{Code: CodeInternal, Err: &tabletError{te}}
		}
	}
}

// attempt runs f once against r within the attempt timeout. With tab
// (r taken for tab's leader), unanswered after Config.LeaseProbeAfter, the
// other replicas are asked whether one of them holds the lease
// (probeLease); one that does ends the attempt at once, as a timeout would
// (a write in it may have been sent), and is the leader the retry goes to:
// leases do not overlap, so r cannot answer as leader any more. Without
// that, a hung leader (a paused process, a partition) held every request
// for the whole attempt timeout though a new leader was serving a second
// or two after it hung.
func (s *sender) attempt(ctx context.Context, tab *tabletMeta, r *replica, f call) (*tspb.TabletError, error) {
	actx, cancel := attemptContext(ctx, s.c.cfg.AttemptTimeout+s.slack)
	defer cancel()
	var p *leaseProbe
	var timer *time.Timer
	if after := s.c.cfg.LeaseProbeAfter; tab != nil && after > 0 && len(tab.replicas) > 1 {
		p = &leaseProbe{}
		timer = time.AfterFunc(after, func() { s.probeLease(actx, tab, r, p, cancel) })
	}
	te, err := f(actx, r)
	if timer != nil {
		timer.Stop()
	}
	holder := p.end()
	if err != nil {
		if holder != nil {
			err = fmt.Errorf("%w (node %d holds the lease now)", err, holder.node)
		}
		return nil, fmt.Errorf("%s (node %d): %w", r.addr, r.node, err)
	}
	return te, nil
}

// leaseProbe is what one attempt's lease probe found.
type leaseProbe struct {
	mu     sync.Mutex
	over   bool     // the attempt returned: its answer stands
	holder *replica // the replica found holding the lease
}

// found records holder; false if the attempt is over (it answered).
func (p *leaseProbe) found(holder *replica) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.over {
		return false
	}
	p.holder = holder
	return true
}

// end closes the probe and returns the holder it found, if any (nil p:
// no probe).
func (p *leaseProbe) end() *replica {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.over = true
	return p.holder
}

// leaseProbeTimeout bounds one lease question: a replica that does not
// answer it soon is as hung as the leader.
const leaseProbeTimeout = 500 * time.Millisecond

// leaseProbeInterval is the pause between rounds of lease questions: a new
// leader is found this soon after it serves (the questions are cheap; a
// backoff that doubled found it up to a second late).
const leaseProbeInterval = 100 * time.Millisecond

// probeLease asks tab's replicas other than slow, round after round, until
// one holds the lease or the attempt at slow ends (actx, its context).
// Found, it becomes the tablet's leader and giveUp ends the attempt.
func (s *sender) probeLease(actx context.Context, tab *tabletMeta, slow *replica, p *leaseProbe, giveUp context.CancelFunc) {
	pause := time.NewTimer(leaseProbeInterval)
	defer pause.Stop()
	for {
		for i := range tab.replicas {
			o := &tab.replicas[i]
			if o.addr == slow.addr {
				continue
			}
			cctx, cancel := context.WithTimeout(actx, leaseProbeTimeout)
			resp, err := s.c.leaseAt(cctx, o.addr, &tspb.LeaseRequest{TabletId: tab.id, ClientTime: s.c.now()})
			cancel()
			if err != nil || resp.GetError() != nil {
				continue
			}
			s.c.observe(resp.GetServerTime())
			if p.found(o) {
				tab.leader.Store(o)
				s.c.leaseMoves.Add(1)
				giveUp()
			}
			return
		}
		pause.Reset(leaseProbeInterval)
		select {
		case <-pause.C:
		case <-actx.Done():
			return
		}
	}
}

// slowRequestRate is the rate, in bytes a second, at which a request's
// bytes are expected to get through at worst: a Raft entry is written and
// fsynced on every replica, on a machine that may be busy with much else.
const slowRequestRate = 4 << 20

// sizeAllowance is the time a request of n bytes gets on top of the usual
// budgets. The budgets are made for requests of a few rows: a
// transactional write of megabytes of large rows can take more than the 3
// s of an attempt on a busy machine, and was then sent again while the
// first was still being written; a batch of many such requests (a 90 MB
// INSERT ... SELECT) did not fit the operation's 10 s.
func sizeAllowance(n int) time.Duration {
	return time.Duration(n) * time.Second / slowRequestRate
}

// sentMaybe reports whether a transport error leaves open whether the
// request reached the server (and so whether a write applied).
func sentMaybe(err error) bool {
	st, ok := status.FromError(errors.Unwrap(err))
	if !ok {
		return true
	}
	return st.Code() != codes.Unavailable
}

func (s *sender) lastErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		return errors.New("no replica answered")
	}
	return s.last
}

// finish turns an operation's outcome into the error returned to the
// caller: *Error as is, and a passed deadline (or cancellation) as
// CodeAmbiguous when a write may have been applied, else CodeTimeout.
func (s *sender) finish(ctx context.Context, op string, t *Table, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		// A copy: one *Error may reach every caller of a shared lookup.
		cp := *e
		if cp.Op == "" {
			cp.Op = op
		}
		if cp.Table == "" {
			cp.Table = t.name
		}
		return &cp
	}
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		s.mu.Lock()
		defer s.mu.Unlock()
		code := CodeTimeout
		if s.ambiguous {
			code = CodeAmbiguous
		}
		cause := ctx.Err()
		if cause == nil {
			cause = err
		}
		if s.last != nil {
			cause = fmt.Errorf("%w (last error: %v)", cause, s.last)
		}
		return &Error{Code: code, Op: op, Table: t.name, Err: cause}
	}
	return &Error{Code: CodeInternal, Op: op, Table: t.name, Err: err}
}

// routeKey sends a request for one key to the tablet holding it, reloading
// the table's locations when they prove stale.
func (t *Table) routeKey(ctx context.Context, s *sender, key []byte, f func(tab *tabletMeta) call) error {
	var stale *tableMeta
	var b backoff
	for {
		m, err := t.c.cache.get(ctx, t.id, stale)
		if err != nil {
			if IsTableNotFound(err) || ctx.Err() != nil {
				return err
			}
			s.note(err, false)
			if !b.wait(ctx) {
				return ctx.Err()
			}
			continue
		}
		tab := m.locate(key)
		if tab == nil {
			stale = m
			if !b.wait(ctx) {
				return ctx.Err()
			}
			continue
		}
		err = s.toTablet(ctx, tab, f(tab))
		var re *rerouteError
		if !errors.As(err, &re) {
			return err
		}
		stale = m
		if !b.wait(ctx) {
			return ctx.Err()
		}
	}
}
