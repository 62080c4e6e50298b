package tserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/shaledb/shaledb/internal/consensus"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/storage"
	"github.com/shaledb/shaledb/internal/tablet"
	pb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// service is the node's TabletServer RPC service: the data path of the
// client/router and the control path of the master. Failures of the
// operation travel as TabletError in the response; gRPC errors are left to
// transport problems.
type service struct {
	pb.UnimplementedTabletServerServer
	n *Node
}

// tabletErr maps an error of the tablet and consensus layers to the wire.
func (n *Node) tabletErr(err error) *pb.TabletError {
	if err == nil {
		return nil
	}
	e := &pb.TabletError{Message: err.Error()}
	if leader, ok := consensus.IsNotLeader(err); ok {
		e.Code = pb.TabletError_NOT_LEADER
		e.LeaderNode = leader
		if leader != 0 {
			e.LeaderAddr, _ = n.resolve(leader)
		}
		return e
	}
	switch {
	case errors.Is(err, errTabletNotFound), errors.Is(err, consensus.ErrGroupNotFound):
		e.Code = pb.TabletError_TABLET_NOT_FOUND
	case errors.Is(err, tablet.ErrTabletSplit):
		e.Code = pb.TabletError_TABLET_SPLIT
	case errors.Is(err, tablet.ErrSplitBusy):
		e.Code = pb.TabletError_BUSY
	case errors.Is(err, tablet.ErrKeyOutOfRange):
		e.Code = pb.TabletError_KEY_OUT_OF_RANGE
	case errors.Is(err, errStale), errors.Is(err, tablet.ErrStaleFollower):
		e.Code = pb.TabletError_STALE_FOLLOWER
	case errors.Is(err, tablet.ErrReadTooOld):
		e.Code = pb.TabletError_READ_TOO_OLD
	case errors.Is(err, hlc.ErrClockSkew):
		e.Code = pb.TabletError_CLOCK_SKEW
	case errors.Is(err, consensus.ErrAmbiguous):
		e.Code = pb.TabletError_AMBIGUOUS
	case errors.Is(err, consensus.ErrProposalDropped), errors.Is(err, consensus.ErrStopped), errors.Is(err, ErrStopped):
		// Not applied; another replica (or this one later) can take it.
		e.Code = pb.TabletError_NOT_LEADER
	case errors.Is(err, consensus.ErrTransferTargetUnreachable):
		e.Code = pb.TabletError_BUSY
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		e.Code = pb.TabletError_TIMEOUT
	case errors.Is(err, errInvalid), errors.Is(err, docdb.ErrInvalidPushdown), errors.Is(err, tablet.ErrAddOutsideTxn):
		e.Code = pb.TabletError_INVALID_ARGUMENT
	case errors.Is(err, tablet.ErrTxnConflict):
		e.Code = pb.TabletError_TXN_CONFLICT
	case errors.Is(err, tablet.ErrDeadlock):
		e.Code = pb.TabletError_DEADLOCK
	case errors.Is(err, tablet.ErrLockNotAvailable):
		e.Code = pb.TabletError_LOCK_NOT_AVAILABLE
	case errors.Is(err, tablet.ErrTxnAborted):
		e.Code = pb.TabletError_TXN_ABORTED
	case errors.As(err, new(*tablet.ReadRestartError)):
		e.Code = pb.TabletError_READ_RESTART
		e.RestartTime = restartTime(err)
	case errors.Is(err, tablet.ErrNoResolver):
		e.Code = pb.TabletError_BUSY
	case errors.Is(err, docdb.ErrDuplicateKey):
		e.Code = pb.TabletError_DUPLICATE_KEY
		var d *docdb.DuplicateKeyError
		if errors.As(err, &d) {
			e.OpIndex, e.RowKey = uint32(d.Index), d.RowKey
		}
	case errors.Is(err, docdb.ErrOutOfRange):
		e.Code = pb.TabletError_OUT_OF_RANGE
		var o *docdb.OutOfRangeError
		if errors.As(err, &o) {
			e.OpIndex, e.ColumnId = uint32(o.Index), o.Column
		}
	default:
		e.Code = pb.TabletError_INTERNAL
	}
	return e
}

var (
	errTabletNotFound = errors.New("tserver: tablet not found on this node")
	errInvalid        = errors.New("tserver: invalid request")
)

func (n *Node) lookup(id uint64) (*tablet.Tablet, error) {
	if tb, ok := n.Tablet(id); ok {
		return tb, nil
	}
	return nil, fmt.Errorf("%w: tablet %d on node %d", errTabletNotFound, id, n.cfg.NodeID)
}

// lookupData is lookup for the data path: system tablets (the sys catalog)
// are written only by their owner on the node, never by clients.
func (n *Node) lookupData(id uint64) (*tablet.Tablet, error) {
	tb, err := n.lookup(id)
	if err == nil && tb.Descriptor().TableID < tablet.FirstUserTableID {
		return nil, fmt.Errorf("%w: tablet %d belongs to a system table", errInvalid, id)
	}
	return tb, err
}

// dataTablet starts a data-path call: the caller's hybrid time folded
// into the node clock, and the (non-system) tablet it names.
func (n *Node) dataTablet(clientTime, id uint64) (*tablet.Tablet, error) {
	if err := n.observe(clientTime); err != nil {
		return nil, err
	}
	return n.lookupData(id)
}

// observe folds a caller's hybrid time into the node clock.
func (n *Node) observe(t uint64) error {
	if t == 0 {
		return nil
	}
	return n.cfg.Clock.Update(hlc.Timestamp(t))
}

func (s *service) Write(ctx context.Context, req *pb.WriteRequest) (*pb.WriteResponse, error) {
	n := s.n
	resp := &pb.WriteResponse{}
	err := func() error {
		tb, err := n.dataTablet(req.GetClientTime(), req.GetTabletId())
		if err != nil {
			return err
		}
		var wb docdb.WriteBatch
		if err := wb.Unmarshal(req.GetBatch()); err != nil {
			return fmt.Errorf("%w: %v", errInvalid, err)
		}
		if rid := req.GetRequestId(); rid != nil {
			if len(rid) != len(tablet.RequestID{}) {
				return fmt.Errorf("%w: request id of %d bytes", errInvalid, len(rid))
			}
			ht, missing, err := tb.WriteOnce(ctx, tablet.RequestID(rid), &wb)
			resp.WriteTime = uint64(ht)
			for _, i := range missing {
				resp.MissingOps = append(resp.MissingOps, uint32(i))
			}
			return err
		}
		ht, err := tb.Write(ctx, &wb)
		resp.WriteTime = uint64(ht)
		return err
	}()
	resp.Error = n.tabletErr(err)
	resp.ServerTime = uint64(n.cfg.Clock.Now())
	return resp, nil
}

// projection turns the wire projection into DocDB's: nil means every column.
func projection(p *pb.Projection) []uint32 {
	if p == nil {
		return nil
	}
	if ids := p.GetColumnIds(); ids != nil {
		return ids
	}
	return []uint32{}
}

func rowToWire(r docdb.Row) *pb.Row {
	out := &pb.Row{Key: r.Key, WriteTime: uint64(r.WriteTime), Columns: make([]*pb.Column, len(r.Columns))}
	for i, c := range r.Columns {
		out.Columns[i] = &pb.Column{Id: c.ID, Value: docdb.AppendValue(nil, c.Value)}
	}
	return out
}

func (s *service) Read(ctx context.Context, req *pb.ReadRequest) (*pb.ReadResponse, error) {
	return s.answerRead(s.read(ctx, req)), nil
}

// answerRead puts a read's failure and the node's time into its answer.
func (s *service) answerRead(resp *pb.ReadResponse, err error) *pb.ReadResponse {
	resp.Error = s.n.tabletErr(err)
	resp.ServerTime = uint64(s.n.cfg.Clock.Now())
	return resp
}

// readInline serves a data stream's Read on the goroutine that received
// it, if it can be served without waiting (tablet.WithoutWaiting: no
// latch held on the row, no other transaction's intents, the lease
// ready), which is nearly every point read: a worker goroutine's handoff
// and the call's own timer context cost ~9% of a point SELECT's node CPU.
// It reports false when the read would have waited; nothing was done then
// that the worker's read does not do again.
func (s *service) readInline(noWait context.Context, req *pb.DataRequest) (*pb.DataResponse, bool) {
	r, ok := req.GetReq().(*pb.DataRequest_Read)
	if !ok || len(req.GetResolves()) > 0 || r.Read.GetConsistency() == pb.ReadConsistency_FOLLOWER_BOUNDED_STALENESS {
		return nil, false
	}
	resp, err := s.read(noWait, r.Read)
	if errors.Is(err, tablet.ErrWouldWait) {
		return nil, false
	}
	return &pb.DataResponse{Id: req.GetId(), Resp: &pb.DataResponse_Read{Read: s.answerRead(resp, err)}}, true
}

// read is Read with the failure as an error.
func (s *service) read(ctx context.Context, req *pb.ReadRequest) (*pb.ReadResponse, error) {
	n := s.n
	resp := &pb.ReadResponse{}
	err := func() error {
		tb, err := n.dataTablet(req.GetClientTime(), req.GetTabletId())
		if err != nil {
			return err
		}
		if !docdb.IsRowKey(req.GetRowKey()) {
			return fmt.Errorf("%w: malformed row key %x", errInvalid, req.GetRowKey())
		}
		var row docdb.Row
		var found bool
		if req.GetConsistency() == pb.ReadConsistency_FOLLOWER_BOUNDED_STALENESS && !tb.Group().HasLease() {
			sp, err := n.safePoint(ctx, tb, followerStaleness(req.GetMaxStalenessMs()))
			if err != nil {
				return err
			}
			var rt hlc.Timestamp
			row, found, rt, err = tb.FollowerGet(ctx, req.GetRowKey(), projection(req.GetProjection()), sp, hlc.Timestamp(req.GetReadTime()))
			if err != nil {
				return err
			}
			resp.ReadTime = uint64(rt)
		} else {
			o, err := txnReadOf(req.GetTxn(), req.GetReadTime())
			if err != nil {
				return err
			}
			var rt hlc.Timestamp
			row, found, rt, err = tb.GetTxn(ctx, req.GetRowKey(), projection(req.GetProjection()), o)
			if err != nil {
				return err
			}
			resp.ReadTime = uint64(rt)
		}
		resp.Found = found
		if found {
			resp.Row = rowToWire(row)
		}
		return nil
	}()
	return resp, err
}

// lease answers whether this replica holds the tablet's leader lease.
func (s *service) lease(req *pb.LeaseRequest) *pb.LeaseResponse {
	n := s.n
	err := func() error {
		tb, err := n.dataTablet(req.GetClientTime(), req.GetTabletId())
		if err != nil {
			return err
		}
		if g := tb.Group(); !g.HasLease() {
			return &consensus.NotLeaderError{Group: g.ID(), Leader: g.Status().Leader}
		}
		return nil
	}()
	return &pb.LeaseResponse{Error: n.tabletErr(err), ServerTime: uint64(n.cfg.Clock.Now())}
}

func (s *service) Scan(ctx context.Context, req *pb.ScanRequest) (*pb.ScanResponse, error) {
	n := s.n
	resp := &pb.ScanResponse{}
	err := func() error {
		tb, err := n.dataTablet(req.GetClientTime(), req.GetTabletId())
		if err != nil {
			return err
		}
		span := storage.Span{Start: req.GetSpan().GetStart(), End: req.GetSpan().GetEnd()}
		opts := tablet.ScanOptions{
			Span: span, Columns: projection(req.GetProjection()), Limit: int(req.GetLimit()),
			Reverse: req.GetReverse(), ReadTime: hlc.Timestamp(req.GetReadTime()),
		}
		if err := pushdownOf(req, &opts); err != nil {
			return err
		}
		aggregate := opts.IsAggregate()
		var rows []docdb.Row
		var aggs []docdb.Value
		var resume []byte
		if req.GetTxn().GetLockRange() {
			if aggregate || req.GetFilter() != nil {
				return fmt.Errorf("%w: a locking scan returns whole rows (filter and aggregate in the client)", errInvalid)
			}
			return n.scanLocked(ctx, tb, req, opts, resp)
		}
		var rt hlc.Timestamp
		if req.GetConsistency() == pb.ReadConsistency_FOLLOWER_BOUNDED_STALENESS && !tb.Group().HasLease() {
			sp, err := n.safePoint(ctx, tb, followerStaleness(req.GetMaxStalenessMs()))
			if err != nil {
				return err
			}
			if aggregate {
				aggs, resume, rt, err = tb.FollowerAggregate(ctx, opts, sp)
			} else {
				rows, resume, rt, err = tb.FollowerScan(ctx, opts, sp)
			}
			if err != nil {
				return err
			}
		} else {
			o, err := txnReadOf(req.GetTxn(), req.GetReadTime())
			if err != nil {
				return err
			}
			if aggregate {
				aggs, resume, rt, err = tb.AggregateTxn(ctx, opts, o)
			} else {
				rows, resume, rt, err = tb.ScanTxn(ctx, opts, o)
			}
			if err != nil {
				return err
			}
		}
		resp.ReadTime = uint64(rt)
		resp.Rows = make([]*pb.Row, len(rows))
		for i, r := range rows {
			resp.Rows[i] = rowToWire(r)
		}
		for _, v := range aggs {
			resp.Aggregates = append(resp.Aggregates, docdb.AppendValue(nil, v))
		}
		if resume != nil {
			rs := docdb.ResumeSpan(span, resume, req.GetReverse())
			resp.ResumeSpan = &pb.Span{Start: rs.Start, End: rs.End}
		}
		return nil
	}()
	resp.Error = n.tabletErr(err)
	resp.ServerTime = uint64(n.cfg.Clock.Now())
	return resp, nil
}

// scanLocked serves the scan of a SERIALIZABLE transaction: it reads the
// latest data and read-locks the span it covered (tablet.ScanLocked); the
// resume span starts where the locked span ends.
func (n *Node) scanLocked(ctx context.Context, tb *tablet.Tablet, req *pb.ScanRequest, opts tablet.ScanOptions, resp *pb.ScanResponse) error {
	o := req.GetTxn()
	id, err := txnID(o.GetTxnId())
	if err != nil {
		return err
	}
	if req.GetConsistency() != pb.ReadConsistency_LEADER || o.GetWaitPolicy() > pb.WaitPolicy_FAIL_ON_CONFLICT {
		return fmt.Errorf("%w: a locking scan reads the leader's latest data", errInvalid)
	}
	rows, covered, more, rt, err := tb.ScanLocked(ctx, opts, tablet.ScanLock{Txn: id, WriteID: o.GetWriteId(), Wait: tablet.WaitPolicy(o.GetWaitPolicy())})
	if err != nil {
		return err
	}
	resp.ReadTime = uint64(rt)
	resp.Rows = make([]*pb.Row, len(rows))
	for i, r := range rows {
		resp.Rows[i] = rowToWire(r)
	}
	if more {
		rs := opts.Span
		if req.GetReverse() {
			rs.End = covered.Start
		} else {
			rs.Start = covered.End
		}
		resp.ResumeSpan = &pb.Span{Start: rs.Start, End: rs.End}
	}
	return nil
}

// DescriptorFromWire converts a wire tablet descriptor.
func DescriptorFromWire(d *pb.TabletDescriptor) tablet.Descriptor {
	return tablet.Descriptor{
		ID: d.GetTabletId(), TableID: d.GetTableId(),
		Span:      storage.Span{Start: d.GetSpan().GetStart(), End: d.GetSpan().GetEnd()},
		HashStart: d.GetHashStart(), HashEnd: d.GetHashEnd(),
	}
}

// DescriptorToWire converts a tablet descriptor for the wire.
func DescriptorToWire(d tablet.Descriptor) *pb.TabletDescriptor {
	w := &pb.TabletDescriptor{TabletId: d.ID, TableId: d.TableID, Span: &pb.Span{Start: d.Span.Start, End: d.Span.End},
		HashStart: d.HashStart, HashEnd: d.HashEnd}
	if d.SplitInto[0] != 0 {
		w.SplitInto = d.SplitInto[:]
	}
	return w
}

func (s *service) CreateTablet(ctx context.Context, req *pb.CreateTabletRequest) (*pb.CreateTabletResponse, error) {
	n := s.n
	for id, addr := range req.GetPeerAddrs() {
		if id != n.cfg.NodeID {
			n.AddPeer(id, addr)
		}
	}
	desc := DescriptorFromWire(req.GetTablet())
	var err error
	if desc.ID == 0 {
		err = fmt.Errorf("%w: tablet id 0", errInvalid)
	} else if _, err = n.CreateTablet(desc, req.GetVoters()); errors.Is(err, ErrTabletExists) {
		// The master retries creations; a replica that exists is success.
		err = nil
	}
	return &pb.CreateTabletResponse{Error: n.tabletErr(err)}, nil
}

func (s *service) DeleteTablet(ctx context.Context, req *pb.DeleteTabletRequest) (*pb.DeleteTabletResponse, error) {
	n := s.n
	err := n.DeleteTablet(req.GetTabletId())
	if errors.Is(err, errTabletNotFound) {
		err = nil // already gone: deletions are retried too
	}
	return &pb.DeleteTabletResponse{Error: n.tabletErr(err)}, nil
}

func (s *service) ChangeReplicas(ctx context.Context, req *pb.ChangeReplicasRequest) (*pb.ChangeReplicasResponse, error) {
	n := s.n
	err := func() error {
		tb, err := n.lookup(req.GetTabletId())
		if err != nil {
			return err
		}
		node := req.GetNodeId()
		if node == 0 {
			return fmt.Errorf("%w: node id 0", errInvalid)
		}
		if addr := req.GetNodeAddr(); addr != "" && node != n.cfg.NodeID {
			n.AddPeer(node, addr)
		}
		g := tb.Group()
		if g.Status().Role != consensus.RoleLeader {
			return &consensus.NotLeaderError{Group: g.ID(), Leader: g.Status().Leader}
		}
		switch req.GetOp() {
		case pb.ChangeReplicasRequest_ADD_LEARNER:
			return g.AddLearner(ctx, node)
		case pb.ChangeReplicasRequest_PROMOTE_LEARNER:
			return g.PromoteLearner(ctx, node)
		case pb.ChangeReplicasRequest_REMOVE_REPLICA:
			return g.RemoveReplica(ctx, node)
		}
		return fmt.Errorf("%w: op %v", errInvalid, req.GetOp())
	}()
	return &pb.ChangeReplicasResponse{Error: n.tabletErr(err)}, nil
}

func (s *service) TransferLeader(ctx context.Context, req *pb.TransferLeaderRequest) (*pb.TransferLeaderResponse, error) {
	n := s.n
	err := func() error {
		tb, err := n.lookup(req.GetTabletId())
		if err != nil {
			return err
		}
		g := tb.Group()
		st := g.Status()
		if st.Role != consensus.RoleLeader {
			return &consensus.NotLeaderError{Group: g.ID(), Leader: st.Leader}
		}
		to := req.GetToNode()
		if to == 0 {
			for _, v := range st.Voters {
				if v != n.cfg.NodeID {
					to = v
					break
				}
			}
			if to == 0 {
				return fmt.Errorf("%w: tablet %d has no other voter", errInvalid, g.ID())
			}
		}
		return g.TransferLeadership(ctx, to)
	}()
	return &pb.TransferLeaderResponse{Error: n.tabletErr(err)}, nil
}

func (s *service) SplitTablet(ctx context.Context, req *pb.SplitTabletRequest) (*pb.SplitTabletResponse, error) {
	n := s.n
	resp := &pb.SplitTabletResponse{}
	err := func() error {
		tb, err := n.lookup(req.GetTabletId())
		if err != nil {
			return err
		}
		res, err := tb.Split(ctx, req.GetLeftId(), req.GetRightId(), req.GetSplitKey())
		if err != nil {
			return err
		}
		resp.Left, resp.Right = DescriptorToWire(res.Left), DescriptorToWire(res.Right)
		return nil
	}()
	resp.Error = n.tabletErr(err)
	return resp, nil
}

func (s *service) ListTablets(ctx context.Context, req *pb.ListTabletsRequest) (*pb.ListTabletsResponse, error) {
	return &pb.ListTabletsResponse{Tablets: s.n.TabletStatuses()}, nil
}

// TabletStatuses reports every replica on this node (the heartbeat's tablet
// report and ListTablets).
func (n *Node) TabletStatuses() []*pb.TabletStatus {
	tablets := n.Tablets()
	out := make([]*pb.TabletStatus, 0, len(tablets))
	for _, tb := range tablets {
		st := tb.Group().Status()
		ts := &pb.TabletStatus{
			Tablet:       DescriptorToWire(tb.Descriptor()),
			Term:         st.Term,
			AppliedIndex: st.AppliedIndex,
			LeaderNode:   st.Leader,
			Voters:       st.Voters,
			Learners:     st.Learners,
			HasLease:     st.LeaseValid,
			SizeBytes:    tb.ApproximateSize(),
		}
		switch st.Role {
		case consensus.RoleLeader:
			ts.Role = pb.TabletStatus_LEADER
		case consensus.RoleLearner:
			ts.Role = pb.TabletStatus_LEARNER
		case consensus.RoleCandidate:
			ts.Role = pb.TabletStatus_CANDIDATE
		}
		out = append(out, ts)
	}
	return out
}

// txnReadOf converts a read's transaction options.
func txnReadOf(o *pb.TxnReadOptions, readTime uint64) (tablet.TxnRead, error) {
	r := tablet.TxnRead{ReadTime: hlc.Timestamp(readTime)}
	if o == nil {
		return r, nil
	}
	if len(o.GetTxnId()) > 0 {
		id, err := txnID(o.GetTxnId())
		if err != nil {
			return r, err
		}
		r.Txn = id
	}
	r.GlobalLimit = hlc.Timestamp(o.GetGlobalLimit())
	r.AllowRestart = o.GetAllowRestart()
	return r, nil
}

func restartTime(err error) uint64 {
	var rr *tablet.ReadRestartError
	if errors.As(err, &rr) {
		return uint64(rr.RestartTime)
	}
	return 0
}
