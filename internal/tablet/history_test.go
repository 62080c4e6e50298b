package tablet_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/storage"
	"github.com/shaledb/shaledb/internal/tablet"
)

// TestReadsInThePastAndGC: reads at a past hybrid time see the history;
// after the retention window GC removes the overwritten versions on every
// replica, the current data stays, and reads that old are refused.
func TestReadsInThePastAndGC(t *testing.T) {
	const retention = 300 * time.Millisecond
	var mu sync.Mutex
	tablets := make(map[uint64]*tablet.Tablet)
	consensustest.NewCluster(t, 3, consensustest.Options{
		Runtime: fastConfig(),
		OnStart: func(n *consensustest.Node) {
			tb, err := tablet.Open(tablet.Config{Descriptor: desc, Runtime: n.Runtime, Engine: n.Engine, Clock: n.Clock,
				Bootstrap: []uint64{1, 2, 3}, HistoryRetention: retention})
			if err != nil {
				t.Fatalf("node %d: %v", n.ID, err)
			}
			mu.Lock()
			tablets[n.ID] = tb
			mu.Unlock()
		},
	})
	var l *tablet.Tablet
	consensustest.WaitFor(t, 15*time.Second, "a leaseholder", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, tb := range tablets {
			if tb.Group().HasLease() {
				l = tb
				return true
			}
		}
		return false
	})
	ctx := context.Background()
	var times []hlc.Timestamp
	for _, v := range []string{"v0", "v1", "v2"} {
		ts, err := l.Write(ctx, putBatch(0, 10, v))
		if err != nil {
			t.Fatal(err)
		}
		times = append(times, ts)
	}
	for i, ts := range times {
		row, ok, err := l.GetAt(ctx, rowKey(3), nil, ts)
		if err != nil || !ok {
			t.Fatalf("GetAt(%s): %v %v", ts, ok, err)
		}
		if got, want := row.Columns[0].Value.String(), docdb.Text([]string{"v0", "v1", "v2"}[i]+"3").String(); got != want {
			t.Fatalf("at write %d: got %s, want %s", i, got, want)
		}
	}
	if _, ok, err := l.GetAt(ctx, rowKey(3), nil, times[0].Prev()); err != nil || ok {
		t.Fatalf("before the first write: found=%v err=%v", ok, err)
	}
	// A read time beyond the maximum clock offset is refused.
	if _, _, err := l.GetAt(ctx, rowKey(3), nil, l.GCHorizon().Add(time.Hour)); !errors.Is(err, hlc.ErrClockSkew) {
		t.Fatalf("far-future read: %v, want ErrClockSkew", err)
	}

	// The horizon trails the newest applied write by the retention window,
	// so once the window has passed, one more write lets it cover v0..v2.
	consensustest.WaitFor(t, 10*time.Second, "the retention window to pass", func() bool {
		return hlc.FromTime(time.Now()) > times[2].Add(retention)
	})
	if _, err := l.Write(ctx, putBatch(100, 101, "later")); err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= 3; id++ {
		mu.Lock()
		tb := tablets[id]
		mu.Unlock()
		consensustest.WaitFor(t, 10*time.Second, "GC horizon past the last write", func() bool {
			return tb.GCHorizon() > times[2]
		})
		n, err := tb.GC()
		if err != nil {
			t.Fatalf("node %d GC: %v", id, err)
		}
		// 10 rows: v0 and v1 of the row marker and of column 1 are garbage.
		if n != 40 {
			t.Fatalf("node %d GC deleted %d keys, want 40", id, n)
		}
	}
	if _, _, err := l.GetAt(ctx, rowKey(3), nil, times[1]); !errors.Is(err, tablet.ErrReadTooOld) {
		t.Fatalf("read below the horizon: %v, want ErrReadTooOld", err)
	}
	rows, _, err := l.Scan(ctx, tablet.ScanOptions{Span: storage.Span{Start: rowKey(0), End: rowKey(10)}})
	if err != nil || len(rows) != 10 {
		t.Fatalf("scan after GC: %d rows, %v", len(rows), err)
	}
	for _, r := range rows {
		if v := r.Columns[0].Value.String(); v[:len(`text:"v2`)] != `text:"v2` {
			t.Fatalf("row %x after GC: %s", r.Key, v)
		}
	}
}

// TestGCPassesWhenGarbageIsWorthIt: a GC pass reads the whole tablet, so it
// runs only once what was applied since the last pass's horizon is a fair
// share of the tablet (the first pass of a new replica runs at once): a few
// updates of a large tablet wait, an update of every row does not.
func TestGCPassesWhenGarbageIsWorthIt(t *testing.T) {
	const retention = 200 * time.Millisecond
	tb, _ := oneTablet(t, tablet.Config{HistoryRetention: retention})
	ctx := context.Background()
	write := func(lo, hi int, v string) {
		t.Helper()
		if _, err := tb.Write(ctx, putBatch(lo, hi, v)); err != nil {
			t.Fatal(err)
		}
	}
	// gc lets the retention window pass over everything so far (one more
	// write moves the horizon) and runs GC.
	extra := 1000
	gc := func() int {
		t.Helper()
		last := hlc.FromTime(time.Now())
		consensustest.WaitFor(t, 10*time.Second, "the retention window to pass", func() bool {
			return hlc.FromTime(time.Now()) > last.Add(retention)
		})
		write(extra, extra+1, "x")
		extra++
		consensustest.WaitFor(t, 10*time.Second, "the GC horizon past the writes", func() bool { return tb.GCHorizon() > last })
		n, err := tb.GC()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	write(0, 200, "v0")
	gc()
	gc() // the first pass may not have known what was applied below its horizon
	passes := tb.GCPasses()
	if passes == 0 {
		t.Fatal("no GC pass after open")
	}
	for _, v := range []string{"a", "b", "c"} {
		write(0, 1, v)
	}
	if n := gc(); n != 0 || tb.GCPasses() != passes {
		t.Fatalf("after 3 updates of 1 row of 200: GC deleted %d keys in %d more passes, want the pass skipped", n, tb.GCPasses()-passes)
	}
	write(0, 200, "v1")
	n := gc()
	if tb.GCPasses() != passes+1 {
		t.Fatalf("%d more passes after an update of every row, want 1", tb.GCPasses()-passes)
	}
	// Marker and column of: row 0's v0, a, b, c and the 199 other rows' v0.
	if want := 2 * (4 + 199); n != want {
		t.Fatalf("GC deleted %d keys, want %d", n, want)
	}
	rows, _, err := tb.Scan(ctx, tablet.ScanOptions{Span: storage.Span{Start: rowKey(0), End: rowKey(200)}})
	if err != nil || len(rows) != 200 {
		t.Fatalf("scan after GC: %d rows, %v", len(rows), err)
	}
}

// TestGCResumesAfterRestart: a replica's first GC pass runs at once, and
// its horizon is kept; reopened after a restart, the replica does not read
// the whole tablet again until the horizon passes its open time (with an
// hour's retention, not in this test).
func TestGCResumesAfterRestart(t *testing.T) {
	h := newHarnessWith(t, 1, []uint64{1}, harnessOptions{runtime: fastConfig(), retention: time.Hour})
	// passes writes every row at the leaseholder, runs GC there and returns
	// how many passes that replica made since it opened.
	passes := func(v string) uint64 {
		t.Helper()
		l := h.waitLeader(t)
		if _, err := l.Write(context.Background(), putBatch(0, 50, v)); err != nil {
			t.Fatal(err)
		}
		if _, err := l.GC(); err != nil {
			t.Fatal(err)
		}
		return l.GCPasses()
	}
	if p := passes("v"); p != 1 {
		t.Fatalf("%d GC passes on a replica with none on record, want 1 at once", p)
	}
	h.restartAll()
	if p := passes("w"); p != 0 {
		t.Fatalf("%d GC passes right after a restart, want 0 until the horizon passes the open time", p)
	}
}
