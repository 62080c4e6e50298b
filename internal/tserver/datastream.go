package tserver

import (
	"context"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shaledb/shaledb/internal/rpc"
	"github.com/shaledb/shaledb/internal/tablet"
	pb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// Data serves the multiplexed data stream: every request is handled as
// the unary call (Read, Write, Scan, TxnWrite, TxnResolve, TxnStatus) of the
// same payload would be, concurrently, and
// answered under its id when done; a cancel message cancels the context
// of the call it names, as the cancellation of a unary call would. A pool of workers that lives as long as
// the stream runs the calls (no fresh goroutine stack per request).
func (s *service) Data(stream pb.TabletServer_DataServer) error {
	s.serveStream(stream.Context(), stream.Recv, stream.Send)
	return nil
}

// serveStream serves the data stream whose messages recv reads and send
// writes (a gRPC stream's or a framed connection's), until recv fails or
// sctx ends; it returns once every call it started has been answered.
func (s *service) serveStream(sctx context.Context, recv func() (*pb.DataRequest, error), sendMsg func(*pb.DataResponse) error) {
	var sendMu sync.Mutex
	var sendErr error
	send := func(resp *pb.DataResponse) {
		sendMu.Lock()
		defer sendMu.Unlock()
		if sendErr == nil {
			sendErr = sendMsg(resp)
		}
	}
	type job struct {
		ctx    context.Context
		cancel context.CancelFunc
		req    *pb.DataRequest
	}
	var mu sync.Mutex
	free := 0                                   // workers waiting for a job
	inflight := map[uint64]context.CancelFunc{} // calls being served, by id
	jobs := make(chan job)
	var workers sync.WaitGroup
	worker := func(j job) {
		defer workers.Done()
		for {
			resp := s.serveData(j.ctx, j.req, send)
			mu.Lock()
			delete(inflight, j.req.GetId())
			free++
			mu.Unlock()
			j.cancel()
			send(resp)
			var ok bool
			if j, ok = <-jobs; !ok {
				return
			}
		}
	}
	defer func() {
		close(jobs)
		workers.Wait()
	}()
	noWait := tablet.WithoutWaiting(sctx)
	for {
		req, err := recv()
		if err != nil {
			return // the client closed the stream or went away
		}
		if req.GetCancel() {
			mu.Lock()
			if cancel := inflight[req.GetId()]; cancel != nil {
				cancel()
			}
			mu.Unlock()
			continue
		}
		if resp, ok := s.readInline(noWait, req); ok {
			send(resp)
			continue
		}
		j := job{req: req}
		if t := req.GetTimeoutUs(); t > 0 {
			j.ctx, j.cancel = context.WithTimeout(sctx, time.Duration(t)*time.Microsecond)
		} else {
			j.ctx, j.cancel = context.WithCancel(sctx)
		}
		mu.Lock()
		inflight[req.GetId()] = j.cancel
		handoff := free > 0
		if handoff {
			free--
		}
		mu.Unlock()
		if handoff {
			jobs <- j
			continue
		}
		workers.Add(1)
		go worker(j)
	}
}

// serveData runs one call of the data stream. A pipelined TxnWrite's
// provisional answer goes to early (when not nil) as soon as the write is
// proposed; the answer returned is the final one.
func (s *service) serveData(ctx context.Context, req *pb.DataRequest, early func(*pb.DataResponse)) *pb.DataResponse {
	out := &pb.DataResponse{Id: req.GetId()}
	// Before the call, so that an apply of the tablet the call writes
	// rides on the call's own Raft entry.
	for _, r := range req.GetResolves() {
		s.n.piggybackedApply(r)
	}
	switch r := req.GetReq().(type) {
	case *pb.DataRequest_Read:
		resp, _ := s.Read(ctx, r.Read)
		out.Resp = &pb.DataResponse_Read{Read: resp}
	case *pb.DataRequest_Write:
		resp, _ := s.Write(ctx, r.Write)
		out.Resp = &pb.DataResponse_Write{Write: resp}
	case *pb.DataRequest_Scan:
		resp, _ := s.Scan(ctx, r.Scan)
		out.Resp = &pb.DataResponse_Scan{Scan: resp}
	case *pb.DataRequest_TxnWrite:
		var proposed func(*pb.TxnWriteResponse)
		if req.GetPipelined() && early != nil {
			proposed = func(resp *pb.TxnWriteResponse) {
				early(&pb.DataResponse{Id: req.GetId(), Provisional: true, Resp: &pb.DataResponse_TxnWrite{TxnWrite: resp}})
			}
		}
		out.Resp = &pb.DataResponse_TxnWrite{TxnWrite: s.txnWrite(ctx, r.TxnWrite, proposed)}
	case *pb.DataRequest_TxnResolve:
		resp, _ := s.TxnResolve(ctx, r.TxnResolve)
		out.Resp = &pb.DataResponse_TxnResolve{TxnResolve: resp}
	case *pb.DataRequest_TxnStatus:
		resp, _ := s.TxnStatus(ctx, r.TxnStatus)
		out.Resp = &pb.DataResponse_TxnStatus{TxnStatus: resp}
	case *pb.DataRequest_Lease:
		out.Resp = &pb.DataResponse_Lease{Lease: s.lease(r.Lease)}
	default:
		// A request kind this node does not know: answer as the unary
		// call of an unknown kind would, with an error the client sees.
		out.Resp = &pb.DataResponse_Read{Read: &pb.ReadResponse{Error: &pb.TabletError{
			Code: pb.TabletError_INVALID_ARGUMENT, Message: "tserver: unknown data request"}}}
	}
	return out
}

// ServeData serves one data request in process, as the Data stream does:
// the node's own client (the YSQL and YCQL gateways, and its tablets'
// resolver) calls its tablets here rather than over a loopback connection
// (client.Config.Local). Once Stop has begun it refuses (Unavailable, as a
// stopped server would), and Stop waits for the calls in progress, whose
// contexts it cancels, before it closes the engine.
func (n *Node) ServeData(ctx context.Context, req *pb.DataRequest) (*pb.DataResponse, error) {
	return n.ServeDataEarly(ctx, req, nil)
}

// ServeDataEarly is ServeData that hands a pipelined TxnWrite's
// provisional answer to early (when not nil) once the write is proposed,
// before it returns the final answer (client.Config.Local's pipelined
// writes).
func (n *Node) ServeDataEarly(ctx context.Context, req *pb.DataRequest, early func(*pb.DataResponse)) (*pb.DataResponse, error) {
	if !n.local.enter() {
		return nil, status.Error(codes.Unavailable, "tserver: node stopping")
	}
	defer n.local.exit()
	s := &service{n: n}
	if resp, ok := s.readInline(n.local.noWait, req); ok {
		return resp, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(n.local.ctx, cancel)()
	return s.serveData(ctx, req, early), nil
}

// localCalls tracks the in-process calls (ServeData) of a node.
type localCalls struct {
	ctx    context.Context // canceled when the node stops
	noWait context.Context // ctx, WithoutWaiting (readInline)
	cancel context.CancelFunc
	mu     sync.Mutex
	idle   sync.Cond
	n      int
	closed bool
}

func (l *localCalls) init() {
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.noWait = tablet.WithoutWaiting(l.ctx)
	l.idle.L = &l.mu
}

// enter admits a call unless the node is stopping. A call may enter from
// inside another (a tablet resolving intents through the node's client),
// so entering never waits.
func (l *localCalls) enter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.n++
	return true
}

func (l *localCalls) exit() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n--; l.n == 0 {
		l.idle.Broadcast()
	}
}

// stop refuses new calls, cancels those in progress and waits for them.
func (l *localCalls) stop() {
	l.cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for l.n > 0 {
		l.idle.Wait()
	}
}

// serveFramed accepts the framed data connections of lis until it closes.
func (n *Node) serveFramed(lis net.Listener) {
	defer close(n.framedDone)
	for {
		c, err := lis.Accept()
		if err != nil {
			return
		}
		go n.serveFramedConn(rpc.NewFramedConn(c))
	}
}

// serveFramedConn serves the data stream of one framed connection. It
// counts as one in-process call (localCalls): Stop cancels it, which
// closes the connection, and waits until its calls have ended.
func (n *Node) serveFramedConn(fc *rpc.FramedConn) {
	defer func() { _ = fc.Close() }()
	if !n.local.enter() {
		return
	}
	defer n.local.exit()
	ctx, cancel := context.WithCancel(n.local.ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = fc.Close() })
	defer stop()
	recv := func() (*pb.DataRequest, error) {
		req := new(pb.DataRequest)
		if err := fc.Recv(req); err != nil {
			return nil, err
		}
		return req, nil
	}
	send := func(resp *pb.DataResponse) error { return fc.Send(resp) }
	(&service{n: n}).serveStream(ctx, recv, send)
}
