package client

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shaledb/shaledb/internal/rpc"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// The data path (Read, Write and Scan, and the transaction calls TxnWrite,
// TxnResolve and TxnStatus) travels over one long-lived data stream per
// tserver, multiplexed by request id, rather than one unary call per
// operation: a unary call costs an HTTP/2 stream, request headers, response
// headers and trailers on both sides, which was most of the client's and a
// good part of the node's CPU per operation. The stream is a framed
// connection (rpc.FramedConn), not a gRPC stream, whose messages passed
// through four goroutines each (rpc/framed.go). Each request is the unary
// request itself and carries the call's remaining time; the answer is the
// unary answer.

// dataConns holds the client's data streams by address.
type dataConns struct {
	mu     sync.Mutex
	closed bool
	conns  map[string]*dataConn
}

// dataConn is the data stream to one address: the current stream, opened
// on first use and again after it breaks.
type dataConn struct {
	mu  sync.Mutex
	cur *dataStream
}

// dataStream is one Data stream and its calls in flight.
type dataStream struct {
	ready  chan struct{} // closed once the stream is open (or failed to)
	cancel context.CancelFunc
	stream *rpc.FramedConn
	sendMu sync.Mutex

	mu      sync.Mutex
	err     error // set when the stream broke; then pending is empty
	nextID  uint64
	pending map[uint64]chan *tspb.DataResponse
}

func (c *Client) dataConn(addr string) (*dataConn, error) {
	d := &c.data
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, status.Error(codes.Canceled, "client closed")
	}
	if d.conns == nil {
		d.conns = make(map[string]*dataConn)
	}
	dc := d.conns[addr]
	if dc == nil {
		dc = &dataConn{}
		d.conns[addr] = dc
	}
	return dc, nil
}

// closeData ends every data stream.
func (c *Client) closeData() {
	d := &c.data
	d.mu.Lock()
	d.closed = true
	conns := d.conns
	d.conns = nil
	d.mu.Unlock()
	for _, dc := range conns {
		dc.mu.Lock()
		if dc.cur != nil {
			dc.cur.cancel()
		}
		dc.mu.Unlock()
	}
}

// stream returns the open stream to addr, opening one if there is none
// or the last one broke.
func (dc *dataConn) stream(addr string) *dataStream {
	dc.mu.Lock()
	defer dc.mu.Unlock()
	if ds := dc.cur; ds != nil {
		ds.mu.Lock()
		broken := ds.err != nil
		ds.mu.Unlock()
		if !broken {
			return ds
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	ds := &dataStream{ready: make(chan struct{}), cancel: cancel, pending: make(map[uint64]chan *tspb.DataResponse)}
	dc.cur = ds
	go ds.run(ctx, addr)
	return ds
}

// run opens the stream and delivers its answers until it breaks.
func (ds *dataStream) run(ctx context.Context, addr string) {
	defer ds.cancel()
	stream, err := rpc.DialFramed(ctx, addr)
	if err != nil {
		ds.fail(err)
		close(ds.ready)
		return
	}
	defer context.AfterFunc(ctx, func() { _ = stream.Close() })()
	ds.stream = stream
	close(ds.ready)
	for {
		resp := new(tspb.DataResponse)
		if err := stream.Recv(resp); err != nil {
			ds.fail(err)
			_ = stream.Close()
			return
		}
		ds.mu.Lock()
		ch := ds.pending[resp.GetId()]
		if !resp.GetProvisional() {
			delete(ds.pending, resp.GetId()) // a provisional answer's final one follows
		}
		ds.mu.Unlock()
		if ch != nil {
			ch <- resp // buffered for every answer the call gets: never blocks
		}
	}
}

// fail marks the stream broken and fails its calls in flight with err, as
// the same failure would have failed their unary calls.
func (ds *dataStream) fail(err error) {
	if _, ok := status.FromError(err); !ok {
		// The connection broke (EOF, reset, closed): as a gRPC call on a
		// broken connection, Unavailable, which callers retry.
		err = status.Errorf(codes.Unavailable, "client: data connection closed: %v", err)
	}
	ds.mu.Lock()
	if ds.err == nil {
		ds.err = err
	}
	pending := ds.pending
	ds.pending = nil
	ds.mu.Unlock()
	for _, ch := range pending {
		ch <- nil
	}
	ds.cancel()
}

// pipelinedCallTime is the least time a pipelined TxnWrite's call has at
// the node. Until its provisional answer the attempt's deadline still
// bounds it (the client cancels the call when the attempt ends); after it
// the outcome of the proposed entry is all that is left, and a write that
// spent most of its attempt waiting for a lock would otherwise fail its
// transaction while the entry replicates, where before it was retried.
const pipelinedCallTime = 30 * time.Second

// finalAnswer awaits the final answer of a pipelined TxnWrite whose first
// answer was provisional (DataRequest.pipelined). When ctx ends first the
// answer is given up on: an error, as a broken stream's.
type finalAnswer func(ctx context.Context) (*tspb.DataResponse, error)

// callEarly sends req on the stream and waits for its answer or the end of
// ctx. For a pipelined request (req.Pipelined) whose first answer is
// provisional it also returns the wait for the final one. The
// call is then no longer cancelled with ctx: the write goes on to its
// end, which its transaction awaits.
func (ds *dataStream) callEarly(ctx context.Context, req *tspb.DataRequest) (*tspb.DataResponse, finalAnswer, error) {
	select {
	case <-ds.ready:
	case <-ctx.Done():
		return nil, nil, status.FromContextError(ctx.Err()).Err()
	}
	// As a unary call, send nothing once ctx has ended (both cases of the
	// select above may have been ready).
	var timeout time.Duration
	if dl, ok := ctx.Deadline(); ok {
		if timeout = time.Until(dl); timeout <= 0 {
			return nil, nil, status.Error(codes.DeadlineExceeded, context.DeadlineExceeded.Error())
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, status.FromContextError(err).Err()
	}
	slots := 1
	if req.GetPipelined() {
		slots = 2 // the provisional answer and the final one
	}
	ch := make(chan *tspb.DataResponse, slots)
	ds.mu.Lock()
	if ds.err != nil {
		err := ds.err
		ds.mu.Unlock()
		return nil, nil, err
	}
	ds.nextID++
	id := ds.nextID
	ds.pending[id] = ch
	ds.mu.Unlock()
	req.Id = id
	if timeout > 0 {
		if req.GetPipelined() {
			timeout = max(timeout, pipelinedCallTime)
		}
		req.TimeoutUs = uint64(max(timeout.Microseconds(), 1))
	}
	ds.sendMu.Lock()
	err := ds.stream.Send(req)
	ds.sendMu.Unlock()
	if status.Code(err) == codes.ResourceExhausted {
		ds.forget(id) // too large to send: nothing went out
		return nil, nil, err
	}
	if err != nil {
		// The connection broke; the reader sees it and fails the calls.
		select {
		case resp := <-ch:
			if resp != nil && !resp.GetProvisional() {
				return resp, nil, nil
			}
		case <-ctx.Done():
			ds.forget(id)
			return nil, nil, status.FromContextError(ctx.Err()).Err()
		}
		return nil, nil, ds.broken()
	}
	select {
	case resp := <-ch:
		if resp == nil {
			return nil, nil, ds.broken()
		}
		if resp.GetProvisional() {
			return resp, ds.final(id, ch), nil
		}
		return resp, nil, nil
	case <-ctx.Done():
		ds.forget(id)
		// Tell the node, as a unary call's cancellation would: a write
		// not yet proposed is then dropped rather than applied late.
		ds.sendMu.Lock()
		_ = ds.stream.Send(&tspb.DataRequest{Id: id, Cancel: true})
		ds.sendMu.Unlock()
		return nil, nil, status.FromContextError(ctx.Err()).Err()
	}
}

// broken is the error of a stream that broke (Unavailable if its reader
// has not recorded one yet).
func (ds *dataStream) broken() error {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.err == nil {
		return status.Error(codes.Unavailable, "client: data connection closed")
	}
	return ds.err
}

// final waits for call id's final answer on ch.
func (ds *dataStream) final(id uint64, ch chan *tspb.DataResponse) finalAnswer {
	return func(ctx context.Context) (*tspb.DataResponse, error) {
		select {
		case resp := <-ch:
			if resp == nil {
				return nil, ds.broken()
			}
			return resp, nil
		case <-ctx.Done():
			ds.forget(id)
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
}

func (ds *dataStream) forget(id uint64) {
	ds.mu.Lock()
	if ds.pending != nil {
		delete(ds.pending, id)
	}
	ds.mu.Unlock()
}

// dataCall runs one data request at addr: in process when addr is this
// node, else over the framed data connection to addr.
func (c *Client) dataCall(ctx context.Context, addr string, req *tspb.DataRequest) (*tspb.DataResponse, error) {
	resp, _, err := c.dataCallEarly(ctx, addr, req)
	return resp, err
}

// dataCallEarly is dataCall that, for a pipelined TxnWrite answered
// provisionally, also returns the wait for its final answer (callEarly).
func (c *Client) dataCallEarly(ctx context.Context, addr string, req *tspb.DataRequest) (*tspb.DataResponse, finalAnswer, error) {
	if c.cfg.Local != nil && addr == c.cfg.LocalAddr {
		return c.localCall(ctx, addr, req)
	}
	dc, err := c.dataConn(addr)
	if err != nil {
		return nil, nil, err
	}
	ds := dc.stream(addr)
	if rs := c.takeResolves(addr); len(rs) > 0 {
		req.Resolves = append(req.Resolves, rs...) // piggybacked applies (resolveq.go)
	}
	return ds.callEarly(ctx, req)
}

// localCall runs one data request in process (Config.Local), with the
// applies piggybacked for its node, as the stream would. A pipelined
// TxnWrite, when the server can answer early (EarlyServer), runs on a
// goroutine of its own under a context that ctx's cancellation ends only
// until the provisional answer, with at least pipelinedCallTime, as the
// stream's call goes on at the node.
func (c *Client) localCall(ctx context.Context, addr string, req *tspb.DataRequest) (*tspb.DataResponse, finalAnswer, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, status.FromContextError(err).Err()
	}
	if rs := c.takeResolves(addr); len(rs) > 0 {
		req.Resolves = append(req.Resolves, rs...)
	}
	es, ok := c.cfg.Local.(EarlyServer)
	if !req.GetPipelined() || !ok {
		resp, err := c.cfg.Local.ServeData(ctx, req)
		return resp, nil, err
	}
	type answer struct {
		resp *tspb.DataResponse
		err  error
	}
	ch := make(chan answer, 2) // the provisional answer and the final one
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if dl, ok := ctx.Deadline(); ok {
		sctx, cancel = context.WithDeadline(context.WithoutCancel(ctx), later(dl, time.Now().Add(pipelinedCallTime)))
	}
	go func() {
		defer cancel()
		resp, err := es.ServeDataEarly(sctx, req, func(r *tspb.DataResponse) { ch <- answer{resp: r} })
		ch <- answer{resp, err}
	}()
	select {
	case a := <-ch:
		if a.err != nil || !a.resp.GetProvisional() {
			return a.resp, nil, a.err
		}
		return a.resp, func(ctx context.Context) (*tspb.DataResponse, error) {
			select {
			case a := <-ch:
				return a.resp, a.err
			case <-ctx.Done():
				return nil, status.FromContextError(ctx.Err()).Err()
			}
		}, nil
	case <-ctx.Done():
		cancel()
		return nil, nil, status.FromContextError(ctx.Err()).Err()
	}
}

// answer runs req at addr and takes the answer of kind R out of the
// response (get returns nil for another kind).
func answer[R any](ctx context.Context, c *Client, addr string, req *tspb.DataRequest, get func(*tspb.DataResponse) *R) (*R, error) {
	resp, err := c.dataCall(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	r := get(resp)
	if r == nil {
		return nil, status.Errorf(codes.Internal, "client: data stream answered a %T with a %T", req.GetReq(), resp.GetResp())
	}
	return r, nil
}

// readAt is the Read of one replica.
func (c *Client) readAt(ctx context.Context, addr string, req *tspb.ReadRequest) (*tspb.ReadResponse, error) {
	return answer(ctx, c, addr, &tspb.DataRequest{Req: &tspb.DataRequest_Read{Read: req}}, (*tspb.DataResponse).GetRead)
}

// writeAt is the Write of one replica.
func (c *Client) writeAt(ctx context.Context, addr string, req *tspb.WriteRequest) (*tspb.WriteResponse, error) {
	return answer(ctx, c, addr, &tspb.DataRequest{Req: &tspb.DataRequest_Write{Write: req}}, (*tspb.DataResponse).GetWrite)
}

// scanAt is the Scan of one replica.
func (c *Client) scanAt(ctx context.Context, addr string, req *tspb.ScanRequest) (*tspb.ScanResponse, error) {
	return answer(ctx, c, addr, &tspb.DataRequest{Req: &tspb.DataRequest_Scan{Scan: req}}, (*tspb.DataResponse).GetScan)
}

// txnWriteAt is the TxnWrite of one replica.
func (c *Client) txnWriteAt(ctx context.Context, addr string, req *tspb.TxnWriteRequest) (*tspb.TxnWriteResponse, error) {
	return answer(ctx, c, addr, &tspb.DataRequest{Req: &tspb.DataRequest_TxnWrite{TxnWrite: req}}, (*tspb.DataResponse).GetTxnWrite)
}

// txnWritePipelined is the TxnWrite of one replica, pipelined: once the
// write is proposed the replica answers provisionally, and final awaits
// whether it was applied (nil when the first answer is the final one: the
// write failed before it was proposed, or proposed nothing).
func (c *Client) txnWritePipelined(ctx context.Context, addr string, req *tspb.TxnWriteRequest) (*tspb.TxnWriteResponse, finalAnswer, error) {
	dreq := &tspb.DataRequest{Req: &tspb.DataRequest_TxnWrite{TxnWrite: req}, Pipelined: true}
	resp, final, err := c.dataCallEarly(ctx, addr, dreq)
	if err != nil {
		return nil, nil, err
	}
	r := resp.GetTxnWrite()
	if r == nil {
		return nil, nil, status.Errorf(codes.Internal, "client: data stream answered a TxnWrite with a %T", resp.GetResp())
	}
	return r, final, nil
}

// txnResolveAt is the TxnResolve of one replica.
func (c *Client) txnResolveAt(ctx context.Context, addr string, req *tspb.TxnResolveRequest) (*tspb.TxnResolveResponse, error) {
	return answer(ctx, c, addr, &tspb.DataRequest{Req: &tspb.DataRequest_TxnResolve{TxnResolve: req}}, (*tspb.DataResponse).GetTxnResolve)
}

// leaseAt asks one replica whether it holds its tablet's lease.
func (c *Client) leaseAt(ctx context.Context, addr string, req *tspb.LeaseRequest) (*tspb.LeaseResponse, error) {
	return answer(ctx, c, addr, &tspb.DataRequest{Req: &tspb.DataRequest_Lease{Lease: req}}, (*tspb.DataResponse).GetLease)
}

// txnStatusAt is the TxnStatus of one replica.
func (c *Client) txnStatusAt(ctx context.Context, addr string, req *tspb.TxnStatusRequest) (*tspb.TxnStatusResponse, error) {
	return answer(ctx, c, addr, &tspb.DataRequest{Req: &tspb.DataRequest_TxnStatus{TxnStatus: req}}, (*tspb.DataResponse).GetTxnStatus)
}

// later is the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
