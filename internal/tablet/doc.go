// Package tablet is a tablet peer: one Raft group (internal/consensus) whose
// state machine is DocDB (internal/docdb) over the tablet's key span.
//
// The leader stamps every write batch with a hybrid time from the node's
// clock and replicates it; every replica applies it at that time, and moves
// its own clock past it. Reads at the leader are served locally while it
// holds the leader lease. Latches serialize operations on the same rows: a
// write holds write latches on its rows from before it takes its hybrid time
// until it is applied, and a read takes read latches on its rows (or span)
// before it takes its read time, so a read never misses a write that was
// stamped before it and never waits for unrelated rows.
//
// Usage:
//
//	t, _ := tablet.Open(tablet.Config{Descriptor: d, Runtime: rt, Engine: eng, Clock: clk, Bootstrap: []uint64{1, 2, 3}})
//	ts, err := t.Write(ctx, &docdb.WriteBatch{Ops: ...})
//	row, found, err := t.Get(ctx, rowKey, nil)
package tablet
