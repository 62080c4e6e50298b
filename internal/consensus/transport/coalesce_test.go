package transport

import (
	"bytes"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/shaledb/shaledb/internal/consensus/transport/transportpb"
)

func hb(from, to, term, commit uint64) *raftpb.Message {
	return &raftpb.Message{Type: raftpb.MsgHeartbeat.Enum(), From: proto.Uint64(from),
		To: proto.Uint64(to), Term: proto.Uint64(term), Commit: proto.Uint64(commit)}
}

func hbResp(from, to, term uint64) *raftpb.Message {
	return &raftpb.Message{Type: raftpb.MsgHeartbeatResp.Enum(), From: proto.Uint64(from),
		To: proto.Uint64(to), Term: proto.Uint64(term)}
}

func app(from, to, term, index uint64, data []byte) *raftpb.Message {
	return &raftpb.Message{Type: raftpb.MsgApp.Enum(), From: proto.Uint64(from),
		To: proto.Uint64(to), Term: proto.Uint64(term), Index: proto.Uint64(index),
		Entries: []*raftpb.Entry{{Term: proto.Uint64(term), Index: proto.Uint64(index + 1), Data: data}}}
}

func TestCoalescible(t *testing.T) {
	withCtx := hb(1, 2, 3, 4)
	withCtx.Context = []byte("read-index")
	respCtx := hbResp(2, 1, 3)
	respCtx.Context = []byte("x")
	rejected := hbResp(2, 1, 3)
	rejected.Reject = proto.Bool(true)
	for _, tc := range []struct {
		name string
		m    *raftpb.Message
		want bool
	}{
		{"heartbeat", hb(1, 2, 3, 4), true},
		{"heartbeat zero commit", hb(1, 2, 3, 0), true},
		{"heartbeat resp", hbResp(2, 1, 3), true},
		{"heartbeat with context", withCtx, false},
		{"resp with context", respCtx, false},
		{"resp with extra field", rejected, false},
		{"append", app(1, 2, 3, 4, nil), false},
	} {
		if got := coalescible(tc.m); got != tc.want {
			t.Errorf("%s: coalescible = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestEncodeDecodeKeepsOrder(t *testing.T) {
	withCtx := hb(1, 2, 5, 9)
	withCtx.Context = []byte("ctx")
	in := []Message{
		{Group: 1, Msg: hbResp(1, 2, 4)},
		{Group: 7, Msg: app(1, 2, 5, 10, []byte("a"))},
		{Group: 7, Msg: hb(1, 2, 5, 11)},
		{Group: 3, Msg: hb(1, 2, 6, 0)},
		{Group: 7, Msg: app(1, 2, 5, 11, []byte("b"))},
		{Group: 3, Msg: withCtx},
		{Group: 7, Msg: hbResp(1, 2, 5)},
		{Group: 3, Msg: hb(1, 2, 6, 1)},
	}
	frames, coalesced, dropped := encodeFrames(in)
	if len(frames) != 1 || coalesced != 5 || dropped != 0 {
		t.Fatalf("frames=%d coalesced=%d dropped=%d, want 1, 5, 0", len(frames), coalesced, dropped)
	}
	if n := len(frames[0].GetMessages()); n != 3 {
		t.Fatalf("%d full messages, want 3", n)
	}
	// Round-trip through the wire encoding, as the receiver sees it.
	b, err := proto.Marshal(frames[0])
	if err != nil {
		t.Fatal(err)
	}
	var f transportpb.Frame
	if err := proto.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	out, err := decodeFrame(&f)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("decoded %d messages, want %d", len(out), len(in))
	}
	for i := range in {
		if out[i].Group != in[i].Group || !proto.Equal(out[i].Msg, in[i].Msg) {
			t.Errorf("message %d: got group %d %v, want group %d %v", i, out[i].Group, out[i].Msg, in[i].Group, in[i].Msg)
		}
	}
}

func TestEncodeEmptyIsOneEmptyFrame(t *testing.T) {
	frames, _, _ := encodeFrames(nil)
	if len(frames) != 1 || proto.Size(frames[0]) != 0 {
		t.Fatalf("got %d frames %v", len(frames), frames)
	}
	out, err := decodeFrame(frames[0])
	if err != nil || len(out) != 0 {
		t.Fatalf("decode empty frame: %v %v", out, err)
	}
}

func TestEncodeSplitsHugeBacklog(t *testing.T) {
	big := bytes.Repeat([]byte{'x'}, 5<<20)
	var in []Message
	for i := range 8 {
		in = append(in, Message{Group: 1, Msg: app(1, 2, 1, uint64(i), big)})
		in = append(in, Message{Group: 2, Msg: hb(1, 2, 1, uint64(i))})
	}
	frames, coalesced, _ := encodeFrames(in)
	if len(frames) < 3 || coalesced != 8 {
		t.Fatalf("frames=%d coalesced=%d, want >= 3 frames and 8 coalesced", len(frames), coalesced)
	}
	var out []Message
	for _, f := range frames {
		if s := proto.Size(f); s > maxFrameBytes+(6<<20) {
			t.Fatalf("frame of %d bytes", s)
		}
		msgs, err := decodeFrame(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, msgs...)
	}
	for i := range in {
		if !proto.Equal(out[i].Msg, in[i].Msg) {
			t.Fatalf("message %d differs after split", i)
		}
	}
}

func TestDecodeRejectsMalformed(t *testing.T) {
	for name, f := range map[string]*transportpb.Frame{
		"position past end": {Heartbeats: []*transportpb.Heartbeat{{Pos: 1}}},
		"duplicate position": {
			Heartbeats:     []*transportpb.Heartbeat{{Pos: 0}},
			HeartbeatResps: []*transportpb.HeartbeatResp{{Pos: 0}},
		},
		"garbage message": {Messages: []*transportpb.RaftMessage{{Msg: []byte{0xff, 0xff}}}},
	} {
		if _, err := decodeFrame(f); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}
