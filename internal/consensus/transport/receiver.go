package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/shaledb/shaledb/internal/consensus/transport/transportpb"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/rpc"
)

// service is the gRPC face of a Transport: snapshots (snapshot.go). Raft
// messages travel on connections of their own (Serve).
type service struct {
	transportpb.UnimplementedRaftTransportServer
	t *Transport
}

var errServiceStopped = status.Error(codes.Unavailable, "transport: stopped")

// Serve accepts the connections that carry other nodes' Raft messages to
// this one (rpc.Mux.Raft: the node's RPC port, opened with
// rpc.RaftPreface) until Stop, which closes lis. Each connection is read
// by one goroutine that decodes its frames and hands their messages to the
// Handler: a gRPC stream passed every frame through HTTP/2's reader
// goroutine first, and the sender's through gRPC's writer goroutine.
func (t *Transport) Serve(lis net.Listener) {
	if !t.track() {
		_ = lis.Close()
		return
	}
	stop := context.AfterFunc(t.ctx, func() { _ = lis.Close() })
	go func() {
		defer t.wg.Done()
		defer stop()
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			if !t.track() {
				_ = c.Close()
				return
			}
			go t.serveConn(c)
		}
	}()
}

// serveConn reads one peer's connection until it breaks or Stop.
func (t *Transport) serveConn(c net.Conn) {
	defer t.wg.Done()
	defer func() { _ = c.Close() }()
	defer context.AfterFunc(t.ctx, func() { _ = c.Close() })()
	r := rpc.NewFrameReader(c)
	err := t.receive(func() (*transportpb.Frame, error) {
		f := new(transportpb.Frame)
		if err := r.Recv(f); err != nil {
			return nil, err
		}
		return f, nil
	})
	if err != nil && !errors.Is(err, io.EOF) && t.ctx.Err() == nil {
		t.cfg.Logger.Debug("transport: connection ended", "remote", c.RemoteAddr().String(), "err", err)
	}
}

// receive reads frames with recv until it fails and delivers their
// messages.
func (t *Transport) receive(recv func() (*transportpb.Frame, error)) error {
	var from uint64
	var p *peer // the sender's state, looked up once per connection
	for {
		f, err := recv()
		if err != nil {
			return err
		}
		at := time.Now()
		if f.GetToNode() != t.cfg.NodeID {
			// The address now belongs to another node (say, after a
			// restart with a new identity): the sender must re-resolve,
			// which it does when it reconnects.
			return fmt.Errorf("transport: frame for node %d reached node %d", f.GetToNode(), t.cfg.NodeID)
		}
		if from == 0 {
			from = f.GetFromNode()
		} else if f.GetFromNode() != from {
			return fmt.Errorf("transport: connection from node %d carried a frame from node %d", from, f.GetFromNode())
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
			return err
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
