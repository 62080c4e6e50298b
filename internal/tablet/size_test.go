package tablet_test

import (
	"context"
	"testing"

	"github.com/shaledb/shaledb/internal/tablet"
)

// TestApproximateSizeCountsMemtable: rows the tablet wrote count in its
// size before the engine flushes them (the memtable's share), and still
// count once they are in sstables.
func TestApproximateSizeCountsMemtable(t *testing.T) {
	tb, node := oneTablet(t, tablet.Config{})
	eng := node.Engine
	if n := tb.ApproximateSize(); n != 0 {
		t.Fatalf("empty tablet: size %d", n)
	}
	const rows = 500
	if _, err := tb.Write(context.Background(), putBatch(0, rows, "a value of some length ")); err != nil {
		t.Fatal(err)
	}
	before := tb.ApproximateSize()
	if before < rows*20 {
		t.Fatalf("after %d rows, unflushed: size %d", rows, before)
	}
	flushes := eng.Flushes()
	if err := eng.Flush(); err != nil {
		t.Fatal(err)
	}
	if eng.Flushes() == flushes {
		t.Fatal("Flushes did not move on a flush")
	}
	after := tb.ApproximateSize()
	if after == 0 || after > 2*before {
		t.Fatalf("after a flush: size %d (before it: %d)", after, before)
	}
	t.Logf("%d rows: %d bytes in the memtable, %d in sstables", rows, before, after)
}
