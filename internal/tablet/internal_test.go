package tablet

import (
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
)

// TestUpdateCacheOwner: a call that began before another on the same row
// cannot cache what it left (its latch was released before it could, and
// the other call may have written the row since); the later call can, and
// the next call is given it.
func TestUpdateCacheOwner(t *testing.T) {
	var c updateCache
	key := []byte("row")
	old := docdb.Row{Columns: []docdb.ColumnValue{{ID: 1, Value: docdb.Int64(1)}}}
	newer := docdb.Row{Columns: []docdb.ColumnValue{{ID: 1, Value: docdb.Int64(2)}}}
	_, _, _, a := c.begin(key, 5)
	_, _, _, b := c.begin(key, 5)
	c.put(key, b, 5, newer, true)
	c.put(key, a, 5, old, true)
	row, found, cached, _ := c.begin(key, 5)
	if !cached || !found || row.Columns[0].Value.Int != 2 {
		t.Fatalf("after the later call cached its row: %v %v %v, want the later row", row, found, cached)
	}
	if _, _, cached, _ := c.begin(key, 5); cached {
		t.Fatal("a row given to a call was given again before that call put it back")
	}
}

// TestTrackerGone: a transaction resolved earlier in an apply cycle has
// nothing here for a repeated apply in the same cycle (it stays live until
// the cycle commits), unless it wrote intents again after its resolution.
func TestTrackerGone(t *testing.T) {
	var tr txnTracker
	tr.init()
	var a docdb.TxnID
	copy(a[:], "tracker-gone-a")
	if !tr.gone(a) {
		t.Fatal("a transaction never seen is not gone")
	}
	tr.mu.Lock()
	tr.addLocked(a, time.Now(), 1)
	tr.mu.Unlock()
	if tr.gone(a) {
		t.Fatal("a live transaction is gone")
	}
	tr.remove(a)
	if !tr.gone(a) {
		t.Fatal("a transaction resolved in this cycle is not gone")
	}
	tr.mu.Lock()
	tr.addLocked(a, time.Now(), 1) // a late write after the removal
	tr.mu.Unlock()
	if tr.gone(a) {
		t.Fatal("a transaction that wrote after its resolution is gone")
	}
	tr.remove(a)
	tr.wake()
	if !tr.gone(a) {
		t.Fatal("a transaction resolved in a committed cycle is not gone")
	}
}

// TestGCTrackerResumed: a replica that passed before it was reopened
// (resumed) does not pass at once, only once the horizon passes its open
// time (what it applied since open counts only below the horizon). A
// replica with no pass on record passes at once, as before.
func TestGCTrackerResumed(t *testing.T) {
	open := hlc.FromMicros(100e6, 0)
	const size = 1000
	fresh := &gcTracker{}
	if due, _ := fresh.due(open, open.Add(-time.Minute), size); !due {
		t.Fatal("a replica with no pass on record: first pass not due at once")
	}
	resumed := &gcTracker{resumed: true, openedAt: open}
	resumed.wrote(500, open.Add(time.Second), time.Minute)
	if due, _ := resumed.due(open.Add(2*time.Second), open.Add(-time.Minute), size); due {
		t.Fatal("a resumed replica: first pass due before its horizon passed the open time")
	}
	due, upTo := resumed.due(open.Add(time.Minute+2*time.Second), open.Add(2*time.Second), size)
	if !due || upTo != 500 {
		t.Fatalf("a resumed replica whose horizon passed the open time: due %v up to %d, want true up to 500", due, upTo)
	}
	resumed.passed(upTo)
	if due, _ := resumed.due(open.Add(2*time.Minute), open.Add(time.Minute), size); due {
		t.Fatal("due again with nothing applied since the pass")
	}
}
