package transport

import (
	"errors"
	"io"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/shaledb/shaledb/internal/consensus/transport/transportpb"
	"github.com/shaledb/shaledb/internal/hlc"
)

// service is the gRPC face of a Transport.
type service struct {
	transportpb.UnimplementedRaftTransportServer
	t *Transport
}

var errServiceStopped = status.Error(codes.Unavailable, "transport: stopped")

// RaftMessages serves one peer's stream to this node. The gRPC server is
// shared and outlives the Transport, and a blocked Recv cannot be
// interrupted, so the frames are read by a separate goroutine: on Stop this
// handler returns, gRPC then cancels the stream, and the reader's Recv fails.
func (s *service) RaftMessages(stream transportpb.RaftTransport_RaftMessagesServer) error {
	t := s.t
	if !t.track() {
		return errServiceStopped
	}
	defer t.wg.Done()
	done := make(chan error, 1)
	t.wg.Add(1) // safe: this handler is itself counted, so wg is not zero
	go func() {
		defer t.wg.Done()
		done <- t.receive(stream)
	}()
	select {
	case err := <-done:
		return err
	case <-t.ctx.Done():
		return errServiceStopped
	}
}

// receive reads frames until the stream ends and delivers their messages.
func (t *Transport) receive(stream transportpb.RaftTransport_RaftMessagesServer) error {
	var from uint64
	var p *peer // the sender's state, looked up once per stream
	for {
		f, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return stream.SendAndClose(&transportpb.StreamResponse{})
		}
		if err != nil {
			return err
		}
		at := time.Now()
		if f.GetToNode() != t.cfg.NodeID {
			// The address now belongs to another node (say, after a
			// restart with a new identity): the sender must re-resolve.
			return status.Errorf(codes.FailedPrecondition,
				"transport: frame for node %d reached node %d", f.GetToNode(), t.cfg.NodeID)
		}
		if from == 0 {
			from = f.GetFromNode()
		} else if f.GetFromNode() != from {
			return status.Errorf(codes.InvalidArgument,
				"transport: stream from node %d carried a frame from node %d", from, f.GetFromNode())
		}
		if p == nil {
			// Receiving from a node starts our own stream to it, so our acks
			// flow back even if no group of ours has anything to say to it.
			if p = t.peer(from, true); p == nil {
				return errServiceStopped
			}
		}
		if p.isDown() {
			t.stats.framesDroppedIn.Add(1)
			continue
		}
		if !t.observeClock(from, f.GetHlc()) {
			t.stats.framesRejectedSkew.Add(1)
			continue
		}
		msgs, err := decodeFrame(f)
		if err != nil {
			return status.Error(codes.InvalidArgument, err.Error())
		}
		p.received(f, at, t.incarnation, t.now())
		t.stats.framesReceived.Add(1)
		t.stats.messagesReceived.Add(uint64(len(msgs)))
		t.stats.bytesReceived.Add(uint64(proto.Size(f)))
		if len(msgs) > 0 && t.ctx.Err() == nil {
			t.cfg.Handler.HandleMessages(from, msgs)
		}
	}
}

// observeClock folds a frame's hybrid time into the local clock. It reports
// false if the frame must be refused because the sender's clock is too far
// ahead.
func (t *Transport) observeClock(from uint64, ht uint64) bool {
	if t.cfg.Clock == nil || ht == 0 {
		return true
	}
	if err := t.cfg.Clock.Update(hlc.Timestamp(ht)); err != nil {
		t.logSkew(from, err)
		return false
	}
	return true
}

// skewLogInterval bounds clock skew warnings to one per interval per node.
const skewLogInterval = 10 * time.Second

func (t *Transport) logSkew(from uint64, err error) {
	now := time.Now().UnixNano()
	last := t.lastSkewLog.Load()
	if now-last < int64(skewLogInterval) || !t.lastSkewLog.CompareAndSwap(last, now) {
		return
	}
	t.cfg.Logger.Warn("transport: refusing frames from a node whose clock is too far ahead",
		"from", from, "err", err)
}
