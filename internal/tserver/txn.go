package tserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/tablet"
	pb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
	"github.com/shaledb/shaledb/internal/txn"
)

// Transactions on the tserver: the participant RPCs (intents, resolve),
// the status record RPC of the status tablets this node leads, and the
// resolver through which its tablets ask other nodes' status records.

// txnState is the node's transaction machinery.
type txnState struct {
	client atomic.Pointer[client.Client]
	expiry time.Duration
	// waits: who waits for whom, reported by participants to the status
	// tablet of the waiter (in memory: lost with the leader, and
	// re-reported while the wait lasts).
	waitsMu sync.Mutex
	waits   map[docdb.TxnID]waitEdge
	// finished caches final statuses (they never change).
	finishedMu sync.Mutex
	finished   map[docdb.TxnID]tablet.TxnStatus
	// askedPending: the pending transactions whose status a participant
	// asked for here (a writer or reader that met their intents), by when:
	// their COMMIT or ABORT answers waited_on.
	askedMu      sync.Mutex
	askedPending map[docdb.TxnID]time.Time
}

// maxAskedPending bounds txnState.askedPending: past it, entries older
// than a minute go (their transactions expired or finished elsewhere).
const maxAskedPending = 10_000

// noteAsked records that a participant asked for pending txn id's status.
func (s *txnState) noteAsked(id docdb.TxnID) {
	s.askedMu.Lock()
	defer s.askedMu.Unlock()
	now := time.Now()
	if len(s.askedPending) >= maxAskedPending {
		for k, at := range s.askedPending {
			if now.Sub(at) > time.Minute {
				delete(s.askedPending, k)
			}
		}
	}
	if len(s.askedPending) < maxAskedPending {
		s.askedPending[id] = now
	}
}

// takeAsked reports whether a participant asked for id's status while it
// was pending, and forgets it.
func (s *txnState) takeAsked(id docdb.TxnID) bool {
	s.askedMu.Lock()
	defer s.askedMu.Unlock()
	_, ok := s.askedPending[id]
	delete(s.askedPending, id)
	return ok
}

type waitEdge struct {
	blockers []docdb.TxnID
	at       time.Time
}

// waitEdgeTTL: a wait not re-reported for this long is over.
const waitEdgeTTL = 2 * time.Second

// SetClient gives the node the client through which its tablets reach
// transaction status records on other nodes. Until then transactional
// writes fail.
func (n *Node) SetClient(c *client.Client) { n.txn.client.Store(c) }

func txnID(b []byte) (docdb.TxnID, error) {
	var id docdb.TxnID
	if len(b) != len(id) {
		return id, fmt.Errorf("%w: transaction id of %d bytes", errInvalid, len(b))
	}
	copy(id[:], b)
	return id, nil
}

// resolver adapts the node's client to tablet.Resolver.
type resolver struct{ n *Node }

func (r resolver) cl() (*client.Client, error) {
	c := r.n.txn.client.Load()
	if c == nil {
		return nil, tablet.ErrNoResolver
	}
	return c, nil
}

func statusOf(res client.TxnStatusResult) tablet.TxnStatus {
	st := tablet.TxnStatus{CommitHT: res.CommitTime, WaitingFor: res.WaitingFor}
	switch res.State {
	case pb.TxnState_PENDING:
		st.State = tablet.TxnPending
	case pb.TxnState_COMMITTED:
		st.State = tablet.TxnCommitted
	default:
		st.State = tablet.TxnAborted
	}
	return st
}

func (r resolver) call(ctx context.Context, op pb.TxnStatusRequest_Op, id docdb.TxnID, t hlc.Timestamp, waits []docdb.TxnID) (tablet.TxnStatus, error) {
	if op == pb.TxnStatusRequest_GET {
		r.n.txn.finishedMu.Lock()
		st, ok := r.n.txn.finished[id]
		r.n.txn.finishedMu.Unlock()
		if ok {
			return st, nil
		}
	}
	c, err := r.cl()
	if err != nil {
		return tablet.TxnStatus{}, err
	}
	res, err := c.TxnStatus(ctx, op, id, t, waits)
	if err != nil {
		return tablet.TxnStatus{}, err
	}
	st := statusOf(res)
	if st.State != tablet.TxnPending {
		r.n.txn.finishedMu.Lock()
		if len(r.n.txn.finished) > 100_000 {
			clear(r.n.txn.finished)
		}
		r.n.txn.finished[id] = st
		r.n.txn.finishedMu.Unlock()
	}
	return st, nil
}

func (r resolver) Status(ctx context.Context, id docdb.TxnID, readTime hlc.Timestamp) (tablet.TxnStatus, error) {
	return r.call(ctx, pb.TxnStatusRequest_GET, id, readTime, nil)
}

func (r resolver) Abort(ctx context.Context, id docdb.TxnID) (tablet.TxnStatus, error) {
	return r.call(ctx, pb.TxnStatusRequest_ABORT, id, 0, nil)
}

func (r resolver) ReportWait(ctx context.Context, waiter docdb.TxnID, blockers []docdb.TxnID) (tablet.TxnStatus, error) {
	return r.call(ctx, pb.TxnStatusRequest_REPORT_WAIT, waiter, 0, blockers)
}

func (s *service) TxnWrite(ctx context.Context, req *pb.TxnWriteRequest) (*pb.TxnWriteResponse, error) {
	return s.txnWrite(ctx, req, nil), nil
}

// txnWrite serves a TxnWrite. When proposed is not nil (a pipelined
// write), it is called with the provisional answer once the intents'
// entry is proposed; the answer returned is the final one.
func (s *service) txnWrite(ctx context.Context, req *pb.TxnWriteRequest, proposed func(*pb.TxnWriteResponse)) *pb.TxnWriteResponse {
	n := s.n
	resp := &pb.TxnWriteResponse{}
	err := func() error {
		tb, err := n.dataTablet(req.GetClientTime(), req.GetTabletId())
		if err != nil {
			return err
		}
		id, err := txnID(req.GetTxnId())
		if err != nil {
			return err
		}
		var wb docdb.WriteBatch
		if err := wb.Unmarshal(req.GetBatch()); err != nil {
			return fmt.Errorf("%w: %v", errInvalid, err)
		}
		for _, r := range req.GetLockRows() {
			if !docdb.IsRowKey(r) {
				return fmt.Errorf("%w: malformed row key %x", errInvalid, r)
			}
		}
		if req.GetLockMode() > pb.LockMode_LOCK_NO_KEY_UPDATE || req.GetWaitPolicy() > pb.WaitPolicy_FAIL_ON_CONFLICT {
			return fmt.Errorf("%w: unknown lock mode or wait policy", errInvalid)
		}
		w := &tablet.TxnWrite{
			Txn: id, ReadTime: hlc.Timestamp(req.GetReadTime()), CheckNewer: req.GetCheckNewer(),
			WriteID: req.GetWriteId(), Ops: wb.Ops, Locks: req.GetLockRows(),
			Lock: tablet.LockMode(req.GetLockMode()), Wait: tablet.WaitPolicy(req.GetWaitPolicy()),
		}
		if proposed != nil {
			w.Proposed = func(res tablet.TxnWriteResult) {
				early := &pb.TxnWriteResponse{}
				fillTxnWrite(early, res)
				early.ServerTime = uint64(n.cfg.Clock.Now())
				proposed(early)
			}
		}
		res, err := tb.WriteTxn(ctx, w)
		fillTxnWrite(resp, res)
		return err
	}()
	resp.Error = n.tabletErr(err)
	resp.ServerTime = uint64(n.cfg.Clock.Now())
	return resp
}

// fillTxnWrite sets what a TxnWrite answers about the write's result.
func fillTxnWrite(resp *pb.TxnWriteResponse, res tablet.TxnWriteResult) {
	resp.WriteTime = uint64(res.HT)
	resp.SkippedRows = res.Skipped
	for _, i := range res.Missing {
		resp.MissingOps = append(resp.MissingOps, uint32(i))
	}
	if len(res.Sums) > 0 {
		var sums docdb.WriteBatch
		for _, i := range slices.Sorted(maps.Keys(res.Sums)) {
			sums.Ops = append(sums.Ops, res.Sums[i])
			resp.SumOps = append(resp.SumOps, uint32(i))
		}
		resp.Sums = sums.Marshal()
	}
}

func (s *service) TxnResolve(ctx context.Context, req *pb.TxnResolveRequest) (*pb.TxnResolveResponse, error) {
	n := s.n
	resp := &pb.TxnResolveResponse{}
	err := func() error {
		tb, err := n.dataTablet(req.GetClientTime(), req.GetTabletId())
		if err != nil {
			return err
		}
		id, err := txnID(req.GetTxnId())
		if err != nil {
			return err
		}
		switch req.GetKind() {
		case pb.TxnResolveRequest_APPLY:
			if req.GetCommitTime() == 0 {
				return fmt.Errorf("%w: apply without a commit time", errInvalid)
			}
			// Nobody waits for the apply: it may ride on the tablet's
			// next entry (tablet.ApplyTxnLater).
			return tb.ApplyTxnLater(ctx, id, hlc.Timestamp(req.GetCommitTime()))
		case pb.TxnResolveRequest_REMOVE:
			return tb.RemoveTxn(ctx, id, false, 0)
		case pb.TxnResolveRequest_REMOVE_FROM_WRITE_ID:
			return tb.RemoveTxn(ctx, id, true, req.GetFromWriteId())
		}
		return fmt.Errorf("%w: unknown resolve kind", errInvalid)
	}()
	resp.Error = n.tabletErr(err)
	resp.ServerTime = uint64(n.cfg.Clock.Now())
	return resp, nil
}

// piggybackedApply handles an APPLY notification that rode on a data
// stream call (DataRequest.resolves): it queues the apply on the tablet
// (tablet.QueueApply), or applies a transaction that must be applied at
// once in the background, so that the call it rode on does not wait. It
// answers nobody: a failure is a lost TxnResolve, resolved from the status
// record by the tablet's readers, writers or cleanup loop.
func (n *Node) piggybackedApply(req *pb.TxnResolveRequest) {
	if req.GetKind() != pb.TxnResolveRequest_APPLY || req.GetCommitTime() == 0 {
		return
	}
	tb, err := n.dataTablet(req.GetClientTime(), req.GetTabletId())
	if err != nil {
		return
	}
	id, err := txnID(req.GetTxnId())
	if err != nil {
		return
	}
	commit := hlc.Timestamp(req.GetCommitTime())
	// A leader still in its clock-offset wait fails at once (the context
	// is done); the apply then waits in the background, as one that must
	// not be deferred does.
	queued, err := tb.QueueApply(doneCtx, id, commit)
	if queued || (err != nil && !errors.Is(err, context.Canceled)) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tb.ApplyTxnLater(ctx, id, commit)
	}()
}

// doneCtx is a context that has ended.
var doneCtx = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

func (s *service) TxnStatus(ctx context.Context, req *pb.TxnStatusRequest) (*pb.TxnStatusResponse, error) {
	n := s.n
	resp := &pb.TxnStatusResponse{}
	err := func() error {
		tb, err := n.dataTablet(req.GetClientTime(), req.GetTabletId())
		if err != nil {
			return err
		}
		id, err := txnID(req.GetTxnId())
		if err != nil {
			return err
		}
		if !docdb.IsRowKey(req.GetRowKey()) {
			return fmt.Errorf("%w: malformed row key %x", errInvalid, req.GetRowKey())
		}
		var op txn.Op
		switch req.GetOp() {
		case pb.TxnStatusRequest_GET:
			op = txn.OpGet
		case pb.TxnStatusRequest_CREATE:
			op = txn.OpCreate
		case pb.TxnStatusRequest_HEARTBEAT:
			op = txn.OpHeartbeat
		case pb.TxnStatusRequest_COMMIT:
			op = txn.OpCommit
		case pb.TxnStatusRequest_ABORT:
			op = txn.OpAbort
		case pb.TxnStatusRequest_REPORT_WAIT:
			var blockers []docdb.TxnID
			for _, b := range req.GetWaitingFor() {
				bid, err := txnID(b)
				if err != nil {
					return err
				}
				blockers = append(blockers, bid)
			}
			n.txn.waitsMu.Lock()
			n.txn.waits[id] = waitEdge{blockers: blockers, at: time.Now()}
			n.txn.waitsMu.Unlock()
			op = txn.OpGet
		default:
			return fmt.Errorf("%w: unknown status op", errInvalid)
		}
		clock := n.cfg.Clock
		var answer txn.Record
		err = tb.UpdateRow(ctx, req.GetRowKey(), func(row docdb.Row, found bool) ([]docdb.WriteOp, error) {
			cur, ok := txn.RecordOf(row, found)
			if t := hlc.Timestamp(req.GetTime()); t > 0 && (op == txn.OpGet || op == txn.OpCommit) {
				// GET: a pending transaction must commit above the
				// reader's time; COMMIT: above every time the
				// transaction used. Under the row latch, so no commit
				// can slip in between.
				if err := clock.Update(t); err != nil {
					return nil, err
				}
			}
			now := clock.Now()
			next, write, ans := txn.Transition(op, id, cur, ok, now, clock.Now(), n.txn.expiry)
			answer = ans
			if !write {
				return nil, nil
			}
			return txn.WriteOps(req.GetRowKey(), next), nil
		})
		if err != nil {
			return err
		}
		resp.State = pb.TxnState(answer.State)
		resp.CommitTime = uint64(answer.CommitHT)
		switch {
		case req.GetOp() == pb.TxnStatusRequest_GET && answer.State == tablet.TxnPending:
			n.txn.noteAsked(id)
		case op == txn.OpCommit || op == txn.OpAbort:
			resp.WaitedOn = n.txn.takeAsked(id)
		}
		if answer.State == tablet.TxnPending {
			n.txn.waitsMu.Lock()
			if w, ok := n.txn.waits[id]; ok && time.Since(w.at) < waitEdgeTTL {
				for _, b := range w.blockers {
					resp.WaitingFor = append(resp.WaitingFor, append([]byte(nil), b[:]...))
				}
			}
			n.txn.waitsMu.Unlock()
		} else {
			n.txn.waitsMu.Lock()
			delete(n.txn.waits, id)
			n.txn.waitsMu.Unlock()
		}
		return nil
	}()
	resp.Error = n.tabletErr(err)
	resp.ServerTime = uint64(n.cfg.Clock.Now())
	return resp, nil
}

// txnCleanupLoop resolves transactions whose intents sit on this node's
// leader tablets for longer than staleTxnAge: their coordinator died or
// could not reach the participant after commit or abort.
const staleTxnAge = 5 * time.Second

func (n *Node) txnCleanupLoop() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-n.gcStop:
			return
		case <-t.C:
		}
		if n.txn.client.Load() == nil {
			continue
		}
		for _, tb := range n.Tablets() {
			if !tb.Group().HasLease() {
				continue
			}
			for _, id := range tb.StaleTxns(staleTxnAge) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := tb.ResolveTxn(ctx, id)
				cancel()
				if err != nil {
					slog.Debug("tserver: resolving a stale transaction", "node", n.cfg.NodeID, "tablet", tb.Descriptor().ID, "txn", id, "err", err)
				}
			}
		}
	}
}
