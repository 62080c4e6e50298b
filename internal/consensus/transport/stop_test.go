package transport

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

// transportGoroutines returns the stacks of goroutines running transport
// code.
func transportGoroutines() []string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, fn := range []string{"transport.(*Transport)", "transport.(*service)", "transport.(*sender)", "transport.(*SnapshotStream)"} {
			if strings.Contains(g, fn) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// TestStopLeavesNoGoroutines runs a busy 3-node cluster, stops it in the
// middle of an incoming snapshot, and checks that Stop ends every transport
// goroutine even though the shared gRPC servers and pools are still up, and
// that nothing at all is left once those are closed too.
func TestStopLeavesNoGoroutines(t *testing.T) {
	baseline := runtime.NumGoroutine()
	c := newCluster(t, 3, func(cfg *Config) { cfg.LivenessInterval = 20 * time.Millisecond })
	ids := []uint64{1, 2, 3}
	c.connectAll(ids...)
	for _, a := range ids {
		for _, b := range ids {
			if a != b {
				c.node(a).t.Send(b, append(heartbeats(a, b, 100), msgApp(1, a, b, 1)))
			}
		}
	}
	for _, b := range ids {
		waitFor(t, "delivery", func() bool {
			n := 0
			for _, a := range ids {
				n += c.node(b).h.count(a)
			}
			return n == 2*101
		})
	}

	// Node 2 starts a snapshot to node 1 and stalls after the first chunk;
	// node 1's handler is blocked in Recv when node 1 stops.
	first := make(chan struct{})
	release := make(chan struct{})
	n1 := c.node(1)
	n1.h.mu.Lock()
	n1.h.snapshot = func(ctx context.Context, from uint64, s *SnapshotStream) error {
		close(first)
		for {
			if _, err := s.Recv(); err != nil {
				return err
			}
		}
	}
	n1.h.mu.Unlock()
	snapDone := make(chan error, 1)
	go func() {
		snapDone <- c.node(2).t.SendSnapshot(context.Background(), 1, []byte("h"), func(send func([]byte) error) error {
			if err := send([]byte("chunk")); err != nil {
				return err
			}
			<-release
			return send([]byte("late chunk"))
		})
	}()
	<-first

	n1.t.Stop() // must not wait for the stalled sender
	n1.t.Stop() // idempotent
	close(release)
	if err := <-snapDone; err == nil {
		t.Error("snapshot to a stopped node succeeded")
	}
	n1.t.Send(2, heartbeats(1, 2, 3)) // no-op after Stop
	if err := n1.t.SendSnapshot(context.Background(), 2, nil, nil); !errors.Is(err, ErrStopped) {
		t.Errorf("SendSnapshot after Stop = %v, want ErrStopped", err)
	}
	for _, id := range []uint64{2, 3} {
		c.node(id).t.Stop()
	}
	waitForOrDump(t, "transport goroutines to exit", func() bool { return len(transportGoroutines()) == 0 })

	c.stopAll() // servers and pools too
	waitForOrDump(t, "all goroutines to exit", func() bool { return runtime.NumGoroutine() <= baseline })
}

// waitForOrDump is waitFor that prints every goroutine on timeout.
func waitForOrDump(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			buf := make([]byte, 4<<20)
			t.Fatalf("timed out waiting for %s; goroutines:\n%s", what, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(2 * time.Millisecond) // poll interval
	}
}
