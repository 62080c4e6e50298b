package tserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/tablet"
	"github.com/shaledb/shaledb/internal/tserver"
)

// TestGCLoop: the node's GC loop removes versions older than the history
// retention window, and the current rows stay.
func TestGCLoop(t *testing.T) {
	const retention = 200 * time.Millisecond
	n, err := tserver.Start(tserver.Config{NodeID: 1, ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(), Raft: testRaft(),
		Engine: storageOpts, HistoryRetention: retention, GCInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	if _, err := n.CreateTablet(desc, []uint64{1}); err != nil {
		t.Fatal(err)
	}
	nodes := []*tserver.Node{n}
	var last hlc.Timestamp
	for round := 0; round < 3; round++ { // three versions of rows 0-9
		retry(t, nodes, "write", func(ctx context.Context, tb *tablet.Tablet) error {
			var err error
			last, err = tb.Write(ctx, put(0, 10))
			return err
		})
	}
	// The horizon trails the newest applied write by the retention window:
	// once it has passed, one more write lets GC take the old versions.
	consensustest.WaitFor(t, 10*time.Second, "the retention window to pass", func() bool {
		return hlc.FromTime(time.Now()) > last.Add(retention)
	})
	retry(t, nodes, "write", func(ctx context.Context, tb *tablet.Tablet) error {
		_, err := tb.Write(ctx, put(10, 11))
		return err
	})
	// 10 rows x 2 old versions x (marker + column 1).
	consensustest.WaitFor(t, 10*time.Second, "GC removes the old versions", func() bool { return n.GCDeleted() >= 40 })
	checkRows(t, nodes, 11)
}
