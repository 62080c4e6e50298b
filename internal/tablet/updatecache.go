package tablet

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
)

// updateCache keeps, on a leader, the rows UpdateRow read or wrote in the
// current lease term, so that the next UpdateRow of the same row need not
// read it back. UpdateRow serves the transaction status records: a record
// is read by every status call (COMMIT, and the GETs of the writers and
// readers that meet its transaction's intents), and reading one was 3% of
// the nodes' CPU in TPC-B. Every write of those rows goes through
// UpdateRow on the leaseholder, under the row's latch, so a row cached in
// a term is the row on disk as long as the term lasts; an entry of another
// term (the lease went elsewhere and came back) or older than
// updateCacheAge (a row's TTL may have run out) is not used.
type updateCache struct {
	mu   sync.Mutex
	rows map[string]cachedRow
	// owner: the UpdateRow call that last began on each row (a sequence
	// number): only it may cache the row. A call's write is applied and
	// its latch released before it can cache what it wrote, and a later
	// call may have read and written the row by then.
	owner map[string]uint64
	seq   uint64
}

type cachedRow struct {
	row   docdb.Row
	found bool
	term  uint64
	at    time.Time
}

const (
	// updateCacheAge: an entry older than this is read again.
	updateCacheAge = time.Minute
	// updateCacheMax: past this many entries the cache starts over.
	updateCacheMax = 10_000
	// minCachedTTL: a row written with a shorter TTL is not cached.
	minCachedTTL = time.Hour
)

// begin starts an UpdateRow call on key (under its latch): it returns the
// cached row of key in term, if any, and the call's number for put.
func (c *updateCache) begin(key []byte, term uint64) (row docdb.Row, found, cached bool, call uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rows == nil || len(c.rows) >= updateCacheMax || len(c.owner) >= updateCacheMax {
		c.rows, c.owner = map[string]cachedRow{}, map[string]uint64{}
	}
	c.seq++
	c.owner[string(key)] = c.seq
	e, ok := c.rows[string(key)]
	delete(c.rows, string(key)) // until the call puts what it leaves
	if !ok || e.term != term || time.Since(e.at) > updateCacheAge {
		return docdb.Row{}, false, false, c.seq
	}
	row = e.row
	row.Columns = slices.Clone(row.Columns) // the caller's to change
	return row, e.found, true, c.seq
}

// put caches row (found or not) as key's row in term, unless another call
// began on key since call.
func (c *updateCache) put(key []byte, call, term uint64, row docdb.Row, found bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.owner[string(key)] != call {
		return
	}
	delete(c.owner, string(key))
	c.rows[string(key)] = cachedRow{row: row, found: found, term: term, at: time.Now()}
}

// written is the row ops leave at key when written at ht over prev, if
// UpdateRow can know it without reading: one put of the row, with no TTL
// or a long one, of every column prev has (so it replaces them all).
func written(key []byte, prev docdb.Row, ops []docdb.WriteOp, ht hlc.Timestamp) (docdb.Row, bool) {
	if len(ops) != 1 || ops[0].Kind != docdb.OpPutRow || string(ops[0].RowKey) != string(key) ||
		(ops[0].TTL > 0 && ops[0].TTL < minCachedTTL) {
		return docdb.Row{}, false
	}
	for _, c := range prev.Columns {
		if !slices.ContainsFunc(ops[0].Columns, func(w docdb.ColumnValue) bool { return w.ID == c.ID }) {
			return docdb.Row{}, false
		}
	}
	cols := slices.Clone(ops[0].Columns)
	slices.SortFunc(cols, func(a, b docdb.ColumnValue) int { return cmp.Compare(a.ID, b.ID) })
	for i := range cols {
		if cols[i].Value.IsNull() {
			return docdb.Row{}, false // a NULL column is no column in a read
		}
		if cols[i].Value.Bytes != nil {
			cols[i].Value.Bytes = slices.Clone(cols[i].Value.Bytes)
		}
	}
	return docdb.Row{Key: slices.Clone(key), Columns: cols, WriteTime: ht}, true
}
