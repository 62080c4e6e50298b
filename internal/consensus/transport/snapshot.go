package transport

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shaledb/shaledb/internal/consensus/transport/transportpb"
)

// maxSnapshotChunk bounds one snapshot message; SendSnapshot splits larger
// chunks so a caller can hand over whole SSTs.
const maxSnapshotChunk = 1 << 20

// SnapshotStream is one incoming snapshot as seen by Handler.HandleSnapshot.
type SnapshotStream struct {
	// Header is the opaque header the sender passed to SendSnapshot.
	Header []byte

	ctx    context.Context
	chunks <-chan snapshotItem
	err    error // sticky: once Recv failed or hit EOF it keeps saying so
}

type snapshotItem struct {
	chunk *transportpb.SnapshotChunk
	err   error
}

// Recv returns the next data chunk, or io.EOF after the last one. It fails
// when the sender goes away or the Transport stops.
func (s *SnapshotStream) Recv() ([]byte, error) {
	if s.err != nil {
		return nil, s.err
	}
	select {
	case it := <-s.chunks:
		if it.err != nil {
			s.err = it.err
			return nil, it.err
		}
		return it.chunk.GetData(), nil
	case <-s.ctx.Done():
		s.err = s.ctx.Err()
		return nil, s.err
	}
}

// SendSnapshot streams a snapshot to node `to`: header first, then whatever
// body passes to send (chunks larger than 1 MiB are split). body must call
// send from its own goroutine only. SendSnapshot returns when the receiver's
// HandleSnapshot has returned, with its error, or when sending failed.
func (t *Transport) SendSnapshot(ctx context.Context, to uint64, header []byte,
	body func(send func(chunk []byte) error) error) error {
	p := t.peer(to, false)
	if p == nil {
		return ErrStopped
	}
	if p.isDown() {
		return fmt.Errorf("transport: snapshot to node %d: %w", to, ErrLinkDown)
	}
	addr, err := t.cfg.Resolver(to)
	if err != nil {
		return fmt.Errorf("transport: resolve node %d: %w", to, err)
	}
	cc, err := t.cfg.Pool.Conn(addr)
	if err != nil {
		return err
	}
	// The stream ends with the caller's ctx or with Stop, whichever is first.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(t.ctx, cancel)()

	stream, err := transportpb.NewRaftTransportClient(cc).Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("transport: snapshot to node %d: %w", to, err)
	}
	// A failed Send only says the stream is over; the reason (usually the
	// receiver's error) comes from CloseAndRecv.
	streamOver := false
	sendMsg := func(m *transportpb.SnapshotChunk) error {
		if p.isDown() {
			return ErrLinkDown
		}
		if err := stream.Send(m); err != nil {
			streamOver = true
			return err
		}
		return nil
	}
	err = sendMsg(&transportpb.SnapshotChunk{FromNode: t.cfg.NodeID, ToNode: to, Header: header})
	if err == nil {
		err = body(func(chunk []byte) error {
			for len(chunk) > 0 {
				n := min(len(chunk), maxSnapshotChunk)
				if err := sendMsg(&transportpb.SnapshotChunk{Data: chunk[:n]}); err != nil {
					return err
				}
				chunk = chunk[n:]
			}
			return nil
		})
	}
	if err != nil && !streamOver {
		return fmt.Errorf("transport: snapshot to node %d: %w", to, err)
	}
	if _, rerr := stream.CloseAndRecv(); rerr != nil {
		return fmt.Errorf("transport: snapshot to node %d: %w", to, rerr)
	}
	// Acknowledged, possibly before body was done (the receiver needed no
	// more): that is still success.
	return nil
}

// Snapshot serves one incoming snapshot. The gRPC server is shared and
// outlives the Transport, and a blocked Recv cannot be interrupted, so a
// goroutine pumps the stream: on Stop this handler returns, gRPC then
// cancels the stream, and the pump's Recv fails.
func (s *service) Snapshot(stream transportpb.RaftTransport_SnapshotServer) error {
	t := s.t
	if !t.track() {
		return errServiceStopped
	}
	defer t.wg.Done()

	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	defer context.AfterFunc(t.ctx, cancel)()

	chunks := make(chan snapshotItem)
	quit := make(chan struct{})
	defer close(quit)
	t.wg.Add(1) // safe: this handler is itself counted
	go func() {
		defer t.wg.Done()
		for {
			m, err := stream.Recv()
			select {
			case chunks <- snapshotItem{chunk: m, err: err}:
			case <-quit:
				return
			}
			if err != nil {
				return
			}
		}
	}()

	ss := &SnapshotStream{ctx: ctx, chunks: chunks}
	var first *transportpb.SnapshotChunk
	select {
	case it := <-chunks:
		if it.err != nil {
			return it.err
		}
		first = it.chunk
	case <-ctx.Done():
		return errServiceStopped
	}
	if first.GetToNode() != t.cfg.NodeID {
		return status.Errorf(codes.FailedPrecondition,
			"transport: snapshot for node %d reached node %d", first.GetToNode(), t.cfg.NodeID)
	}
	from := first.GetFromNode()
	p := t.peer(from, false)
	if p == nil {
		return errServiceStopped
	}
	if p.isDown() {
		return status.Errorf(codes.Unavailable, "transport: link to node %d is down", from)
	}
	ss.Header = first.GetHeader()

	if err := t.cfg.Handler.HandleSnapshot(ctx, from, ss); err != nil {
		if _, ok := status.FromError(err); ok {
			return err
		}
		return status.Error(codes.Unknown, err.Error())
	}
	return stream.SendAndClose(&transportpb.SnapshotResponse{})
}
