package transport

import (
	"fmt"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/shaledb/shaledb/internal/consensus/transport/transportpb"
)

// maxFrameBytes bounds the encoded size of one frame. A cycle's queue is
// normally one frame; only a backlog of large appends is split, so that no
// frame approaches the gRPC message limit.
const maxFrameBytes = 16 << 20

// Approximate encoded sizes used to split frames; exactness is not needed.
const (
	messageOverhead   = 16
	heartbeatEstimate = 40
)

// coalescible reports whether m can travel as a heartbeat tuple without
// losing anything: it must be a MsgHeartbeat or MsgHeartbeatResp whose only
// set fields are the ones the tuple carries. Heartbeats with a context (raft
// uses it for ReadIndex) always go as full messages.
func coalescible(m *raftpb.Message) bool {
	switch m.GetType() {
	case raftpb.MsgHeartbeat:
	case raftpb.MsgHeartbeatResp:
		if m.GetCommit() != 0 {
			return false
		}
	default:
		return false
	}
	return len(m.GetContext()) == 0 &&
		m.GetLogTerm() == 0 && m.GetIndex() == 0 && len(m.GetEntries()) == 0 &&
		m.GetVote() == 0 && m.Snapshot == nil && !m.GetReject() &&
		m.GetRejectHint() == 0 && len(m.GetResponses()) == 0 &&
		len(m.ProtoReflect().GetUnknown()) == 0
}

// frameEncoder appends messages to frames in send order, coalescing
// heartbeats and starting a new frame when one grows past maxFrameBytes.
type frameEncoder struct {
	frames    []*transportpb.Frame
	size      int // estimated bytes of the last frame
	items     int // items (messages and tuples) in the last frame
	coalesced int
	dropped   int // messages that failed to marshal
}

func (e *frameEncoder) cur(need int) *transportpb.Frame {
	if len(e.frames) == 0 || (e.items > 0 && e.size+need > maxFrameBytes) {
		e.frames = append(e.frames, &transportpb.Frame{})
		e.size, e.items = 0, 0
	}
	e.size += need
	e.items++
	return e.frames[len(e.frames)-1]
}

// add appends msgs. pos of a tuple is its index among all items of its
// frame, which lets the receiver restore the exact send order.
func (e *frameEncoder) add(msgs []Message) {
	for _, m := range msgs {
		if m.Msg == nil {
			e.dropped++
			continue
		}
		if coalescible(m.Msg) {
			f := e.cur(heartbeatEstimate)
			pos := uint32(e.items - 1)
			if m.Msg.GetType() == raftpb.MsgHeartbeat {
				f.Heartbeats = append(f.Heartbeats, &transportpb.Heartbeat{
					Group: m.Group, From: m.Msg.GetFrom(), To: m.Msg.GetTo(),
					Term: m.Msg.GetTerm(), Commit: m.Msg.GetCommit(), Pos: pos,
				})
			} else {
				f.HeartbeatResps = append(f.HeartbeatResps, &transportpb.HeartbeatResp{
					Group: m.Group, From: m.Msg.GetFrom(), To: m.Msg.GetTo(),
					Term: m.Msg.GetTerm(), Pos: pos,
				})
			}
			e.coalesced++
			continue
		}
		b, err := proto.Marshal(m.Msg)
		if err != nil {
			e.dropped++
			continue
		}
		f := e.cur(len(b) + messageOverhead)
		f.Messages = append(f.Messages, &transportpb.RaftMessage{Group: m.Group, Msg: b})
	}
}

// encodeFrames turns msgs into one or more frames (at least one, possibly
// empty), returning how many heartbeats were coalesced and how many messages
// had to be dropped.
func encodeFrames(msgs []Message) (frames []*transportpb.Frame, coalesced, dropped int) {
	var e frameEncoder
	e.add(msgs)
	if len(e.frames) == 0 {
		e.frames = append(e.frames, &transportpb.Frame{})
	}
	return e.frames, e.coalesced, e.dropped
}

// decodeFrame re-expands f's messages in the order they were sent.
func decodeFrame(f *transportpb.Frame) ([]Message, error) {
	full, hbs, resps := f.GetMessages(), f.GetHeartbeats(), f.GetHeartbeatResps()
	n := len(full) + len(hbs) + len(resps)
	if n == 0 {
		return nil, nil
	}
	out := make([]Message, 0, n)
	var fi, hi, ri int
	for i := 0; i < n; i++ {
		switch {
		case hi < len(hbs) && int(hbs[hi].GetPos()) == i:
			h := hbs[hi]
			hi++
			out = append(out, Message{Group: h.GetGroup(), Msg: &raftpb.Message{
				Type:   raftpb.MsgHeartbeat.Enum(),
				From:   proto.Uint64(h.GetFrom()),
				To:     proto.Uint64(h.GetTo()),
				Term:   proto.Uint64(h.GetTerm()),
				Commit: proto.Uint64(h.GetCommit()),
			}})
		case ri < len(resps) && int(resps[ri].GetPos()) == i:
			r := resps[ri]
			ri++
			out = append(out, Message{Group: r.GetGroup(), Msg: &raftpb.Message{
				Type: raftpb.MsgHeartbeatResp.Enum(),
				From: proto.Uint64(r.GetFrom()),
				To:   proto.Uint64(r.GetTo()),
				Term: proto.Uint64(r.GetTerm()),
			}})
		case fi < len(full):
			rm := full[fi]
			fi++
			m := &raftpb.Message{}
			if err := proto.Unmarshal(rm.GetMsg(), m); err != nil {
				return nil, fmt.Errorf("transport: decode raft message of group %d: %w", rm.GetGroup(), err)
			}
			out = append(out, Message{Group: rm.GetGroup(), Msg: m})
		default:
			return nil, fmt.Errorf("transport: malformed frame: no item at position %d", i)
		}
	}
	return out, nil
}
