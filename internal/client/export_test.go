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

// tabletFor returns the cached tablet holding the row of key.
func (t *Table) tabletFor(ctx context.Context, key Row) (*tabletMeta, error) {
	rk, err := t.RowKey(key)
	if err != nil {
		return nil, err
	}
	m, err := t.c.cache.get(ctx, t.id, nil)
	if err != nil {
		return nil, err
	}
	return m.locate(rk), nil
}

// TabletOf returns the id of the tablet holding the row of key.
func (t *Table) TabletOf(ctx context.Context, key Row) (uint64, error) {
	tm, err := t.tabletFor(ctx, key)
	if err != nil {
		return 0, err
	}
	return tm.id, nil
}

// LazyRecordWindow: a transaction whose first write comes this soon after
// Begin writes no status record before its commit.
const LazyRecordWindow = txn.LazyRecordWindow

// Age makes the coordinator take the transaction for d older than it is
// (its id keeps its start time).
func (tx *Txn) Age(d time.Duration) { tx.begin = tx.begin.Add(-d) }

// OwnRead is the answer Get takes from the transaction's own writes; ok is
// false when Get would ask the tablet.
func (tx *Txn) OwnRead(t *Table, key Row, columns ...string) (Row, bool, bool) {
	rk, err := t.RowKey(key)
	if err != nil {
		return nil, false, false
	}
	return tx.ownRead(t, rk, columns)
}

// ServerGet is Get always asking the tablet.
func (tx *Txn) ServerGet(ctx context.Context, t *Table, key Row, columns ...string) (Row, bool, error) {
	rowKey, resp, err := tx.read(ctx, t, key, columns)
	if err != nil {
		return nil, false, err
	}
	return tx.finishGet(ctx, t, rowKey, resp, columns)
}

// LeaderOf returns the node the client believes leads the tablet holding
// the row of key (0: unknown).
func (t *Table) LeaderOf(ctx context.Context, key Row) (uint64, error) {
	tm, err := t.tabletFor(ctx, key)
	if err != nil {
		return 0, err
	}
	if r := tm.leader.Load(); r != nil {
		return r.node, nil
	}
	return 0, nil
}

// OwnWrites is how many writes tx keeps for reading back.
func OwnWrites(tx *Txn) int { return len(tx.writes) }

// LeaderAddrOf returns the address of the replica the client believes
// leads the tablet holding the row of key ("": unknown).
func (t *Table) LeaderAddrOf(ctx context.Context, key Row) (string, error) {
	tm, err := t.tabletFor(ctx, key)
	if err != nil {
		return "", err
	}
	if r := tm.leader.Load(); r != nil {
		return r.addr, nil
	}
	return "", nil
}
