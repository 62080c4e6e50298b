package transport

import (
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/hlc"
)

// TestFramesCarryHybridTime: a receiver's clock moves up to a sender's time
// within the maximum offset, and frames from a node whose clock runs further
// ahead are refused, not delivered.
func TestFramesCarryHybridTime(t *testing.T) {
	const base = int64(1_700_000_000_000_000)
	phys := map[uint64]*hlc.ManualClock{
		1: hlc.NewManualClock(base + int64(200*time.Millisecond/time.Microsecond)), // ahead, within 500ms
		2: hlc.NewManualClock(base),
		3: hlc.NewManualClock(base + int64(2*time.Second/time.Microsecond)), // too far ahead
	}
	clocks := make(map[uint64]*hlc.Clock)
	for id, p := range phys {
		clocks[id] = hlc.NewClock(p.Now, 500*time.Millisecond)
	}
	c := newCluster(t, 3, func(cfg *Config) {
		cfg.Clock = clocks[cfg.NodeID]
		cfg.LivenessInterval = time.Hour // only the frames the test sends
	})

	c.node(1).t.Send(2, []Message{msgApp(1, 1, 2, 1)})
	waitFor(t, "node 2 receives from node 1", func() bool { return c.node(2).h.count(1) == 1 })
	if got, min := clocks[2].Peek().Physical(), phys[1].Now(); got < min {
		t.Fatalf("node 2 clock %d did not move up to node 1's time %d", got, min)
	}

	before := clocks[2].Peek()
	c.node(3).t.Send(2, []Message{msgApp(1, 3, 2, 1)})
	waitFor(t, "node 2 refuses node 3's frame", func() bool { return c.node(2).t.Stats().FramesRejectedSkew >= 1 })
	if n := c.node(2).h.count(3); n != 0 {
		t.Fatalf("node 2 delivered %d messages from a node with a runaway clock", n)
	}
	// Node 2's own sends tick the logical part; the physical part must stay.
	if after := clocks[2].Peek(); after.Physical() != before.Physical() {
		t.Fatalf("node 2 clock moved from %s to %s on a refused frame", before, after)
	}
}
