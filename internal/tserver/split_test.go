package tserver_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/tablet"
	"github.com/shaledb/shaledb/internal/tserver"
)

// leaderOf returns the leaseholder of tablet id among nodes, or nil.
func leaderOf(nodes []*tserver.Node, id uint64) *tablet.Tablet { return leader(nodes, id) }

// TestSplitUnderWrites splits a range tablet at its middle row while
// writers keep writing: writes that hit the split parent go to the child
// owning their key. Afterwards every acknowledged row is present exactly
// once across the children, on every replica, and still after a restart of
// all nodes. A hash tablet splits at its hash midpoint.
func TestSplitUnderWrites(t *testing.T) {
	addrs := []string{"127.0.0.1:0", "127.0.0.2:0", "127.0.0.3:0"}
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	nodes := startAll(t, dirs, addrs)
	stopAll := func() {
		for _, n := range nodes {
			_ = n.Stop()
		}
	}
	defer func() { stopAll() }()
	for _, n := range nodes {
		if _, err := n.CreateTablet(desc, []uint64{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
	}
	retry(t, nodes, "load", func(ctx context.Context, tb *tablet.Tablet) error {
		_, err := tb.Write(ctx, put(0, 300))
		return err
	})

	// routes maps a key to the tablet that owns it now.
	var mu sync.Mutex
	owners := []tablet.Descriptor{desc}
	route := func(key []byte) uint64 {
		mu.Lock()
		defer mu.Unlock()
		for _, d := range owners {
			if d.Span.Contains(key) {
				return d.ID
			}
		}
		return 0
	}
	var acked sync.Map
	var splitErrors atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1000 + w; ; i += 4 {
				select {
				case <-stop:
					return
				default:
				}
				consensustest.Retry(t, 20*time.Second, "write during split", func(ctx context.Context) error {
					id := route(rowKey(i))
					l := leaderOf(nodes, id)
					if l == nil {
						return errors.New("no leaseholder")
					}
					_, err := l.Write(ctx, put(i, i+1))
					if errors.Is(err, tablet.ErrTabletSplit) {
						splitErrors.Add(1)
					}
					return err
				})
				acked.Store(i, true)
			}
		}()
	}
	var res tablet.SplitResult
	retry(t, nodes, "split", func(ctx context.Context, tb *tablet.Tablet) error {
		var err error
		res, err = tb.Split(ctx, 11, 12, nil)
		return err
	})
	if string(res.Left.Span.End) != string(res.Right.Span.Start) || string(res.Left.Span.Start) != string(desc.Span.Start) ||
		string(res.Right.Span.End) != string(desc.Span.End) {
		t.Fatalf("children %v and %v do not tile %v", res.Left.Span, res.Right.Span, desc.Span)
	}
	mu.Lock()
	owners = []tablet.Descriptor{res.Left, res.Right}
	mu.Unlock()
	for _, id := range []uint64{11, 12} {
		consensustest.WaitFor(t, 20*time.Second, fmt.Sprintf("child %d has a leaseholder", id), func() bool { return leaderOf(nodes, id) != nil })
	}
	// Let writers run on the children for a while, then stop them.
	consensustest.WaitFor(t, 20*time.Second, "writes on both children", func() bool {
		n := 0
		acked.Range(func(k, _ any) bool { n++; return n < 200 })
		return n >= 200
	})
	close(stop)
	wg.Wait()
	t.Logf("writers saw %d TABLET_SPLIT answers and moved on", splitErrors.Load())

	// The parent refuses everything now.
	for _, n := range nodes {
		if tb, ok := n.Tablet(desc.ID); ok && tb.Group().HasLease() {
			if _, err := tb.Write(context.Background(), put(0, 1)); !errors.Is(err, tablet.ErrTabletSplit) {
				t.Fatalf("write at the split parent: %v", err)
			}
		}
	}
	check := func() {
		t.Helper()
		want := map[string]bool{}
		for i := 0; i < 300; i++ {
			want[string(rowKey(i))] = true
		}
		acked.Range(func(k, _ any) bool { want[string(rowKey(k.(int)))] = true; return true })
		for _, n := range nodes {
			consensustest.WaitFor(t, 20*time.Second, fmt.Sprintf("node %d holds every row once", n.ID()), func() bool {
				seen := map[string]int{}
				for _, c := range []tablet.Descriptor{res.Left, res.Right} {
					rows, _, err := docdb.Scan(n.Engine(), docdb.ScanOptions{ReadOptions: docdb.ReadOptions{ReadTime: n.Clock().Now()}, Span: c.Span})
					if err != nil {
						return false
					}
					for _, r := range rows {
						seen[string(r.Key)]++
					}
				}
				for k := range want {
					if seen[k] != 1 {
						return false
					}
				}
				return true
			})
		}
		for _, c := range []tablet.Descriptor{res.Left, res.Right} {
			retry(t, nodes, "scan child", func(ctx context.Context, _ *tablet.Tablet) error {
				l := leaderOf(nodes, c.ID)
				if l == nil {
					return errors.New("no leaseholder")
				}
				rows, _, err := l.Scan(ctx, tablet.ScanOptions{})
				if err != nil {
					return err
				}
				for _, r := range rows {
					if !c.Span.Contains(r.Key) {
						t.Fatalf("child %d returned row %x outside its span", c.ID, r.Key)
					}
				}
				return nil
			})
		}
	}
	check()

	// Restart everything: the parent comes back split, the children whole.
	stopAll()
	nodes = startAll(t, dirs, addrs)
	for _, n := range nodes {
		p, ok := n.Tablet(desc.ID)
		if !ok || p.Descriptor().SplitInto != [2]uint64{11, 12} {
			t.Fatalf("node %d: parent after restart: %v %v", n.ID(), ok, p.Descriptor())
		}
	}
	for _, id := range []uint64{11, 12} {
		consensustest.WaitFor(t, 20*time.Second, fmt.Sprintf("child %d has a leaseholder after restart", id), func() bool { return leaderOf(nodes, id) != nil })
	}
	check()

	// A hash tablet splits at its hash midpoint.
	hdesc := tablet.Descriptor{ID: 20, TableID: tableID + 1, Span: docdb.TableSpan(tableID + 1), HashStart: 0, HashEnd: 0x10000}
	for _, n := range nodes {
		if _, err := n.CreateTablet(hdesc, []uint64{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
	}
	retry(t, nodes, "split hash tablet", func(ctx context.Context, _ *tablet.Tablet) error {
		l := leaderOf(nodes, hdesc.ID)
		if l == nil {
			return errors.New("no leaseholder")
		}
		var err error
		res, err = l.Split(ctx, 21, 22, nil)
		return err
	})
	if res.Left.HashStart != 0 || res.Left.HashEnd != 0x8000 || res.Right.HashStart != 0x8000 || res.Right.HashEnd != 0x10000 {
		t.Fatalf("hash children: %+v %+v", res.Left, res.Right)
	}
	if got, want := string(res.Right.Span.Start), string(docdb.HashSpan(tableID+1, 0x8000, 0x10000).Start); got != want {
		t.Fatalf("hash split key %x, want %x", got, want)
	}
}
