package tablet_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/consensus"
	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/tablet"
)

const tableID = 42

var desc = tablet.Descriptor{ID: 100, TableID: tableID, Span: docdb.TableSpan(tableID)}

// harness runs nodes whose tablets survive restarts.
type harness struct {
	*consensustest.Cluster
	descs   []tablet.Descriptor // every tablet; descs[0] is the one tests talk to
	mu      sync.Mutex
	tablets map[uint64]*tablet.Tablet // node -> its replica of descs[0]
	// opened: every replica opened, split children included, by node and
	// tablet id.
	opened map[[2]uint64]*tablet.Tablet
}

func fastConfig() consensus.Config {
	return consensus.Config{
		TickInterval:         20 * time.Millisecond,
		ElectionTicks:        10,
		VoteRefusalWindow:    300 * time.Millisecond,
		LeaseDuration:        240 * time.Millisecond,
		LogTruncateThreshold: 200,
	}
}

// harnessOptions configure newHarnessWith.
type harnessOptions struct {
	runtime consensus.Config
	// descs are the tablets every voter opens; default: desc alone.
	descs []tablet.Descriptor
	// resolver, if set, lets the tablets (split children included, which
	// every node opens) take transactional writes.
	resolver tablet.Resolver
	// retention is the tablets' HistoryRetention (0: the default).
	retention time.Duration
}

func newHarness(t testing.TB, nodes int, voters []uint64) *harness {
	return newHarnessWith(t, nodes, voters, harnessOptions{runtime: fastConfig()})
}

// newHarnessWith starts nodes; each of voters opens (or after a restart
// reopens) a replica of every tablet, bootstrapped with voters; the other
// nodes are spares that get replicas with addLearnerBySnapshot.
func newHarnessWith(t testing.TB, nodes int, voters []uint64, opts harnessOptions) *harness {
	h := &harness{tablets: make(map[uint64]*tablet.Tablet), opened: make(map[[2]uint64]*tablet.Tablet), descs: opts.descs}
	if len(h.descs) == 0 {
		h.descs = []tablet.Descriptor{desc}
	}
	h.Cluster = consensustest.NewCluster(t, nodes, consensustest.Options{
		Runtime: opts.runtime,
		OnStart: func(n *consensustest.Node) {
			descs, err := tablet.LoadDescriptors(n.Engine)
			if err != nil {
				t.Fatalf("node %d: %v", n.ID, err)
			}
			var boot []uint64
			if len(descs) == 0 {
				for _, v := range voters {
					if v == n.ID {
						boot = voters
					}
				}
				if boot == nil {
					return // a spare node; gets a replica with addLearnerBySnapshot
				}
			}
			var onSplit func(tablet.Descriptor, [2]tablet.Descriptor)
			onSplit = func(_ tablet.Descriptor, children [2]tablet.Descriptor) {
				for _, c := range children {
					tb, err := tablet.Open(tablet.Config{Descriptor: c, Runtime: n.Runtime, Engine: n.Engine, Clock: n.Clock, Resolver: opts.resolver, OnSplit: onSplit})
					if err != nil {
						t.Errorf("node %d: open split child %d: %v", n.ID, c.ID, err)
						continue
					}
					h.mu.Lock()
					h.opened[[2]uint64{n.ID, c.ID}] = tb
					h.mu.Unlock()
				}
			}
			for i, d := range h.descs {
				tb, err := tablet.Open(tablet.Config{Descriptor: d, Runtime: n.Runtime, Engine: n.Engine, Clock: n.Clock, Bootstrap: boot,
					Resolver: opts.resolver, OnSplit: onSplit, HistoryRetention: opts.retention})
				if err != nil {
					t.Fatalf("node %d: open tablet %d: %v", n.ID, d.ID, err)
				}
				h.mu.Lock()
				if i == 0 {
					h.tablets[n.ID] = tb
				}
				h.opened[[2]uint64{n.ID, d.ID}] = tb
				h.mu.Unlock()
			}
		},
	})
	return h
}

func (h *harness) tablet(id uint64) *tablet.Tablet {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.tablets[id]
}

func (h *harness) leader() *tablet.Tablet {
	for _, n := range h.Nodes() {
		if !h.Running(n.ID) {
			continue
		}
		if tb := h.tablet(n.ID); tb != nil && tb.Group().HasLease() {
			return tb
		}
	}
	return nil
}

func (h *harness) waitLeader(t testing.TB) *tablet.Tablet {
	t.Helper()
	var l *tablet.Tablet
	consensustest.WaitFor(t, 15*time.Second, "a leaseholder", func() bool {
		l = h.leader()
		return l != nil
	})
	return l
}

// retry runs op against the current leaseholder until it succeeds.
func (h *harness) retry(t testing.TB, what string, op func(ctx context.Context, tb *tablet.Tablet) error) {
	t.Helper()
	consensustest.Retry(t, 20*time.Second, what, func(ctx context.Context) error {
		l := h.leader()
		if l == nil {
			return errors.New("no leaseholder")
		}
		return op(ctx, l)
	})
}

func rowKey(i int) []byte {
	return docdb.DocKey{TableID: tableID, RangeParts: []docdb.KeyPart{{Value: docdb.Int64(int64(i))}}}.Encode()
}

func putBatch(from, to int, val string) *docdb.WriteBatch {
	wb := &docdb.WriteBatch{}
	for i := from; i < to; i++ {
		wb.Ops = append(wb.Ops, docdb.WriteOp{Kind: docdb.OpPutRow, RowKey: rowKey(i), Columns: []docdb.ColumnValue{{ID: 1, Value: docdb.Text(fmt.Sprintf("%s%d", val, i))}}})
	}
	return wb
}

// localRows counts the rows a replica holds, read directly from its engine.
func localRows(t testing.TB, n *consensustest.Node) int {
	rows, _, err := docdb.Scan(n.Engine, docdb.ScanOptions{ReadOptions: docdb.ReadOptions{ReadTime: hlc.MaxTimestamp - 1}, Span: desc.Span})
	if err != nil {
		t.Fatalf("scan node %d: %v", n.ID, err)
	}
	return len(rows)
}

func TestWritesReplicateSurviveFailoverAndRestart(t *testing.T) {
	h := newHarness(t, 3, []uint64{1, 2, 3})
	h.waitLeader(t)
	for i := 0; i < 50; i++ {
		h.retry(t, "write", func(ctx context.Context, tb *tablet.Tablet) error {
			_, err := tb.Write(ctx, putBatch(i*10, i*10+10, "v"))
			return err
		})
	}
	for _, n := range h.Nodes() {
		consensustest.WaitFor(t, 10*time.Second, fmt.Sprintf("node %d has 500 rows", n.ID), func() bool { return localRows(t, n) == 500 })
	}
	old := h.waitLeader(t)
	oldNode := old.Group().Status().Node
	h.StopNode(oldNode)
	nl := h.waitLeader(t)
	if nl.Group().Status().Node == oldNode {
		t.Fatal("stopped node still leads")
	}
	// Every acknowledged write is readable at the new leader.
	for i := 0; i < 500; i += 37 {
		row, found, err := nl.Get(context.Background(), rowKey(i), nil)
		if err != nil || !found || string(row.Columns[0].Value.Bytes) != fmt.Sprintf("v%d", i) {
			t.Fatalf("row %d after failover: %v %v %v", i, row, found, err)
		}
	}
	rows, _, err := nl.Scan(context.Background(), tablet.ScanOptions{})
	if err != nil || len(rows) != 500 {
		t.Fatalf("scan after failover: %d rows, %v", len(rows), err)
	}
	h.retry(t, "write after failover", func(ctx context.Context, tb *tablet.Tablet) error {
		_, err := tb.Write(ctx, putBatch(500, 600, "w"))
		return err
	})
	h.StartNode(oldNode)
	consensustest.WaitFor(t, 15*time.Second, "restarted node catches up", func() bool { return localRows(t, h.Node(oldNode)) == 600 })
}

// loadRows writes rows [0, total) through the leaseholder, per rows a batch.
func (h *harness) loadRows(t testing.TB, total, per int, val string) {
	t.Helper()
	for i := 0; i < total; i += per {
		h.retry(t, "load", func(ctx context.Context, tb *tablet.Tablet) error {
			_, err := tb.Write(ctx, putBatch(i, min(i+per, total), val))
			return err
		})
	}
}

// addLearnerBySnapshot opens an empty replica of desc on node, has the
// leaseholder l add it as a learner, and waits until the replica ingested a
// snapshot holding rows rows. It returns the replica, the snapshot bytes
// sent, and the time from the membership change to the ingested snapshot.
func (h *harness) addLearnerBySnapshot(t testing.TB, l *tablet.Tablet, node uint64, rows int) (*tablet.Tablet, uint64, time.Duration) {
	t.Helper()
	n := h.Node(node)
	tb, err := tablet.Open(tablet.Config{Descriptor: desc, Runtime: n.Runtime, Engine: n.Engine, Clock: n.Clock})
	if err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	h.tablets[node] = tb
	h.mu.Unlock()
	sent := func() (bytes uint64) {
		for _, n := range h.Nodes() {
			if h.Running(n.ID) {
				bytes += n.Runtime.Metrics().SnapshotBytesSent
			}
		}
		return bytes
	}
	before := sent()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	if err := l.Group().AddLearner(ctx, node); err != nil {
		t.Fatal(err)
	}
	// Polls the cheap counter, not the rows, so as not to slow the transfer.
	consensustest.WaitFor(t, 120*time.Second, "learner caught up by snapshot", func() bool {
		return n.Runtime.Metrics().SnapshotsApplied > 0
	})
	elapsed := time.Since(start)
	consensustest.WaitFor(t, 60*time.Second, fmt.Sprintf("learner holds %d rows", rows), func() bool { return localRows(t, n) == rows })
	return tb, sent() - before, elapsed
}

func TestAddPeerBySnapshotThenRemoveOldPeer(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 100k rows; run without -short")
	}
	h := newHarness(t, 4, []uint64{1, 2, 3})
	h.waitLeader(t)
	const total = 100_000
	h.loadRows(t, total, 2000, "r")
	l := h.waitLeader(t)
	// Node 4 gets an empty replica, then joins as a learner.
	n4 := h.Node(4)
	_, bytes, elapsed := h.addLearnerBySnapshot(t, l, 4, total)
	t.Logf("snapshot of %d rows: %d bytes in %v (%.1f MB/s)", total, bytes, elapsed, float64(bytes)/1e6/elapsed.Seconds())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := l.Group().PromoteLearner(ctx, 4); err != nil {
		t.Fatal(err)
	}
	leaderNode := l.Group().Status().Node
	victim := uint64(1)
	if victim == leaderNode {
		victim = 2
	}
	if err := l.Group().RemoveReplica(ctx, victim); err != nil {
		t.Fatal(err)
	}
	h.StopNode(victim)
	h.retry(t, "write after membership change", func(ctx context.Context, tb *tablet.Tablet) error {
		_, err := tb.Write(ctx, putBatch(total, total+10, "n"))
		return err
	})
	consensustest.WaitFor(t, 20*time.Second, "node 4 applies as a voter", func() bool { return localRows(t, n4) == total+10 })
	if v := l.Group().Status().Voters; len(v) != 3 {
		t.Fatalf("voters: %v", v)
	}
}

func TestCompareAndSetAndKeyRange(t *testing.T) {
	h := newHarness(t, 3, []uint64{1, 2, 3})
	l := h.waitLeader(t)
	ctx := context.Background()
	key := rowKey(7)
	ok, cur, err := l.CompareAndSet(ctx, key, 1, nil, docdb.Int64(1))
	if err != nil || !ok || cur != nil {
		t.Fatalf("CAS from absent: %v %v %v", ok, cur, err)
	}
	one := docdb.Int64(1)
	two := docdb.Int64(2)
	if ok, cur, err = l.CompareAndSet(ctx, key, 1, &two, docdb.Int64(3)); err != nil || ok || cur == nil || cur.Int != 1 {
		t.Fatalf("CAS with wrong expectation: %v %v %v", ok, cur, err)
	}
	if ok, _, err = l.CompareAndSet(ctx, key, 1, &one, two); err != nil || !ok {
		t.Fatalf("CAS 1->2: %v %v", ok, err)
	}
	row, found, err := l.Get(ctx, key, nil)
	if err != nil || !found || row.Columns[0].Value.Int != 2 {
		t.Fatalf("after CAS: %v %v %v", row, found, err)
	}
	// Keys of another table are refused.
	other := docdb.DocKey{TableID: tableID + 1}.Encode()
	if _, err := l.Write(ctx, &docdb.WriteBatch{Ops: []docdb.WriteOp{{Kind: docdb.OpPutRow, RowKey: other}}}); !errors.Is(err, tablet.ErrKeyOutOfRange) {
		t.Fatalf("out-of-range write: %v", err)
	}
	// A follower refuses reads with a leader hint. On a loaded machine the
	// leader can lose its quorum for a moment, and a follower then knows no
	// leader (hint 0) until the next election: wait until the followers agree
	// on the current leaseholder. A follower that serves the read never does.
	consensustest.WaitUntil(t, 20*time.Second, "followers refusing reads with the leader's hint", func() string {
		return followersRefuse(ctx, h, key)
	})
}

// followersRefuse reads key on every replica but the leaseholder and says
// what is wrong unless each refuses with the leaseholder as its hint.
func followersRefuse(ctx context.Context, h *harness, key []byte) string {
	l := h.leader()
	if l == nil {
		return "no leaseholder"
	}
	for _, n := range h.Nodes() {
		tb := h.tablet(n.ID)
		if tb == l {
			continue
		}
		_, _, err := tb.Get(ctx, key, nil)
		if hint, ok := consensus.IsNotLeader(err); !ok || hint != l.Group().Status().Node {
			return fmt.Sprintf("node %d: err=%v hint=%d", n.ID, err, hint)
		}
	}
	return ""
}
