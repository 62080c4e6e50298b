package client

import (
	"context"
	"time"

	"github.com/shaledb/shaledb/internal/txn"
)

// Abandon drops a transaction as a dead coordinator would: no more
// heartbeats, no commit, no rollback.
func (tx *Txn) Abandon() {
	tx.stopHeartbeat()
	tx.done = true
}

// TabletOf returns the id of the tablet holding the row of key.
func (t *Table) TabletOf(ctx context.Context, key Row) (uint64, error) {
	rk, err := t.RowKey(key)
	if err != nil {
		return 0, err
	}
	m, err := t.c.cache.get(ctx, t.id, nil)
	if err != nil {
		return 0, err
	}
	return m.locate(rk).id, nil
}

// LazyRecordWindow: a transaction whose first write comes this soon after
// Begin writes no status record before its commit.
const LazyRecordWindow = txn.LazyRecordWindow

// Age makes the coordinator take the transaction for d older than it is
// (its id keeps its start time).
func (tx *Txn) Age(d time.Duration) { tx.begin = tx.begin.Add(-d) }
