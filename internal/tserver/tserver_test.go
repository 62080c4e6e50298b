package tserver_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/tablet"
	"github.com/shaledb/shaledb/internal/tserver"
)

const tableID = tablet.FirstUserTableID + 7 // a user table: the data path refuses system tables

var desc = tablet.Descriptor{ID: 1, TableID: tableID, Span: docdb.TableSpan(tableID)}

// startAll starts one node per entry of addrs (node i+1 on addrs[i], data in
// dirs[i]), tells every node the others' addresses, and returns the nodes;
// addrs is updated with the bound addresses.
func startAll(t *testing.T, dirs, addrs []string) []*tserver.Node {
	t.Helper()
	nodes := make([]*tserver.Node, len(addrs))
	for i := range addrs {
		n, err := tserver.Start(tserver.Config{NodeID: uint64(i + 1), ListenAddr: addrs[i], DataDir: dirs[i], Raft: testRaft(),
			Engine: storageOpts})
		if err != nil {
			t.Fatal(err)
		}
		nodes[i], addrs[i] = n, n.Addr()
	}
	for _, a := range nodes {
		for _, b := range nodes {
			if a != b {
				a.AddPeer(b.ID(), b.Addr())
			}
		}
	}
	return nodes
}

func leader(nodes []*tserver.Node, id uint64) *tablet.Tablet {
	for _, n := range nodes {
		if tb, ok := n.Tablet(id); ok && tb.Group().HasLease() {
			return tb
		}
	}
	return nil
}

// retry runs op at the current leaseholder until it succeeds.
func retry(t *testing.T, nodes []*tserver.Node, what string, op func(ctx context.Context, tb *tablet.Tablet) error) {
	t.Helper()
	consensustest.Retry(t, 20*time.Second, what, func(ctx context.Context) error {
		l := leader(nodes, desc.ID)
		if l == nil {
			return errors.New("no leaseholder")
		}
		return op(ctx, l)
	})
}

func rowKey(i int) []byte {
	return docdb.DocKey{TableID: tableID, RangeParts: []docdb.KeyPart{{Value: docdb.Int64(int64(i))}}}.Encode()
}

func put(from, to int) *docdb.WriteBatch {
	wb := &docdb.WriteBatch{}
	for i := from; i < to; i++ {
		wb.Ops = append(wb.Ops, docdb.WriteOp{Kind: docdb.OpPutRow, RowKey: rowKey(i),
			Columns: []docdb.ColumnValue{{ID: 1, Value: docdb.Text(fmt.Sprintf("v%d", i))}}})
	}
	return wb
}

func checkRows(t *testing.T, nodes []*tserver.Node, n int) {
	t.Helper()
	retry(t, nodes, "scan", func(ctx context.Context, tb *tablet.Tablet) error {
		rows, _, err := tb.Scan(ctx, tablet.ScanOptions{})
		if err != nil {
			return err
		}
		if len(rows) != n {
			return fmt.Errorf("%d rows, want %d", len(rows), n)
		}
		for i := 0; i < n; i++ {
			row, found, err := tb.Get(ctx, rowKey(i), nil)
			if err != nil {
				return err
			}
			if !found || string(row.Columns[0].Value.Bytes) != fmt.Sprintf("v%d", i) {
				t.Fatalf("row %d: found=%v %v", i, found, row)
			}
		}
		return nil
	})
}

// waitGoroutines waits until no more goroutines run than at baseline.
func waitGoroutines(t *testing.T, baseline int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after Stop, %d before Start:\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNodesReplicateStopAndRestart(t *testing.T) {
	baseline := runtime.NumGoroutine()
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	addrs := []string{"127.0.0.1:0", "127.0.0.2:0", "127.0.0.3:0"}
	nodes := startAll(t, dirs, addrs)
	stopAll := func() {
		for _, n := range nodes {
			if err := n.Stop(); err != nil {
				t.Error(err)
			}
		}
	}
	defer stopAll()

	for _, n := range nodes {
		if _, err := n.CreateTablet(desc, []uint64{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := nodes[0].CreateTablet(desc, []uint64{1, 2, 3}); !errors.Is(err, tserver.ErrTabletExists) {
		t.Fatalf("second CreateTablet: %v, want ErrTabletExists", err)
	}
	for i := 0; i < 10; i++ {
		retry(t, nodes, "write", func(ctx context.Context, tb *tablet.Tablet) error {
			_, err := tb.Write(ctx, put(i*20, i*20+20))
			return err
		})
	}
	checkRows(t, nodes, 200)

	stopAll()
	waitGoroutines(t, baseline)

	// Same data directories and addresses: every node reopens its tablet.
	nodes = startAll(t, dirs, addrs)
	for _, n := range nodes {
		tbs := n.Tablets()
		if len(tbs) != 1 || tbs[0].Descriptor().ID != desc.ID {
			t.Fatalf("node %d after restart: %d tablets", n.ID(), len(tbs))
		}
		if tb, ok := n.Tablet(desc.ID); !ok || tb != tbs[0] {
			t.Fatalf("node %d: Tablet(%d) = %v, %v", n.ID(), desc.ID, tb, ok)
		}
	}
	checkRows(t, nodes, 200)
	retry(t, nodes, "write after restart", func(ctx context.Context, tb *tablet.Tablet) error {
		_, err := tb.Write(ctx, put(200, 250))
		return err
	})
	checkRows(t, nodes, 250)
	// Every replica applies everything.
	for _, n := range nodes {
		consensustest.WaitFor(t, 10*time.Second, fmt.Sprintf("node %d applies 250 rows", n.ID()), func() bool {
			rows, _, err := docdb.Scan(n.Engine(), docdb.ScanOptions{ReadOptions: docdb.ReadOptions{ReadTime: n.Clock().Now()}, Span: desc.Span})
			return err == nil && len(rows) == 250
		})
	}
}

func TestStartErrors(t *testing.T) {
	if _, err := tserver.Start(tserver.Config{ListenAddr: "127.0.0.1:0", DataDir: t.TempDir()}); err == nil {
		t.Fatal("Start with NodeID 0 succeeded")
	}
	n, err := tserver.Start(tserver.Config{NodeID: 1, ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(), Engine: storageOpts})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	// The address is taken.
	if _, err := tserver.Start(tserver.Config{NodeID: 2, ListenAddr: n.Addr(), DataDir: t.TempDir()}); err == nil {
		t.Fatal("Start on a taken address succeeded")
	}
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := n.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := n.CreateTablet(desc, []uint64{1}); !errors.Is(err, tserver.ErrStopped) {
		t.Fatalf("CreateTablet after Stop: %v", err)
	}
}

// TestFirstVoterLeadsNewTablet: the first initial voter of a new tablet
// campaigns as soon as its replica exists, so the tablet has a leader,
// that one, without waiting for an election timeout; the other replicas
// do not campaign. Each of three tablets names another node first.
func TestFirstVoterLeadsNewTablet(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	addrs := []string{"127.0.0.1:0", "127.0.0.2:0", "127.0.0.3:0"}
	nodes := startAll(t, dirs, addrs)
	defer func() {
		for _, n := range nodes {
			_ = n.Stop()
		}
	}()
	// Every vote is refused for VoteRefusalWindow after a node starts
	// (liveness not yet observed): wait for a first tablet's election.
	all := []uint64{nodes[0].ID(), nodes[1].ID(), nodes[2].ID()}
	for _, n := range nodes {
		if _, err := n.CreateTablet(desc, all); err != nil {
			t.Fatal(err)
		}
	}
	retry(t, nodes, "a first leader", func(ctx context.Context, tb *tablet.Tablet) error { return nil })
	for first := range nodes {
		d := tablet.Descriptor{ID: uint64(10 + first), TableID: tableID + uint32(first), Span: docdb.TableSpan(tableID + uint32(first))}
		voters := []uint64{nodes[first].ID()}
		for i, n := range nodes {
			if i != first {
				voters = append(voters, n.ID())
			}
		}
		// The others' replicas first: the campaign finds its voters there.
		for i, n := range nodes {
			if i != first {
				if _, err := n.CreateTablet(d, voters); err != nil {
					t.Fatal(err)
				}
			}
		}
		tb, err := nodes[first].CreateTablet(d, voters)
		if err != nil {
			t.Fatal(err)
		}
		consensustest.WaitFor(t, 10*time.Second, "a leader", func() bool { return tb.Group().Status().Leader != 0 })
		if l := tb.Group().Status().Leader; l != nodes[first].ID() {
			t.Fatalf("tablet %d: leader %d, want the first voter %d", d.ID, l, nodes[first].ID())
		}
	}
}
