package tablet

import (
	"testing"

	"github.com/shaledb/shaledb/internal/docdb"
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
