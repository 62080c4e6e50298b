package transport

import (
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/consensus/transport/transportpb"
)

// TestAckAcceptance checks which acks may move LeaseAck: only ours (same
// incarnation), only forward, and never into our future.
func TestAckAcceptance(t *testing.T) {
	const ours = 42
	p := newPeer(2)
	at := time.Now()
	for _, tc := range []struct {
		name     string
		ackInc   uint64
		ack, now int64
		want     int64
	}{
		{"first ack", ours, 100, 1000, 100},
		{"newer ack", ours, 200, 1000, 200},
		{"older ack does not go back", ours, 150, 1000, 200},
		{"ack of a previous incarnation", 41, 900, 1000, 200},
		{"ack from the future", ours, 5000, 1000, 200},
		{"no ack", 0, 0, 1000, 200},
	} {
		p.received(&transportpb.Frame{Incarnation: 7, SentAt: 3, Ack: tc.ack, AckIncarnation: tc.ackInc}, at, ours, tc.now)
		if got := p.leaseAck(); got != tc.want {
			t.Errorf("%s: leaseAck = %d, want %d", tc.name, got, tc.want)
		}
	}
	// What we echo back is the peer's latest frame, whatever its clock did.
	var f transportpb.Frame
	p.stamp(&f)
	if f.GetAck() != 3 || f.GetAckIncarnation() != 7 {
		t.Errorf("stamp: ack %d/%d, want 3/7", f.GetAck(), f.GetAckIncarnation())
	}
	if !p.lastHeard().Equal(at) {
		t.Errorf("lastHeard = %v, want %v", p.lastHeard(), at)
	}
}
