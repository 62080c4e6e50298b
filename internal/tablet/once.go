package tablet

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/storage"
)

// Plain writes that must not apply twice (WriteOnce).
//
// A plain write is retried by its client after an attempt whose outcome it
// does not know (a timeout, a lost connection, a leader change), so it
// must be idempotent: a put or a delete is. An add (an autocommit UPDATE
// c = c + x) is not: applied twice it adds twice; nor is the row count of
// an UPDATE or DELETE (the second attempt finds the row deleted). Such a
// write carries a request id that stays the same across the attempts;
// every replica remembers, for onceWindow, the ids of the entries it
// applied and what they found, and an attempt whose id is remembered
// answers that instead of writing again (YugabyteDB's retryable requests).
// The leader checks under the rows' write latches, which an attempt holds
// until its entry is applied or its outcome is settled; a new leader
// serves only once every entry of earlier terms is applied here (the
// lease), so it knows every id an earlier leader wrote.
//
// The ids are kept in memory and, in the apply batch, on disk under the
// group's node-local keys (storage.AppliedRequestKey, by the entry's
// hybrid time, those past the window dropped by a range delete every
// onceBucket), so that a restarted replica knows the ids its engine holds
// the writes of (loadOnce) and the log replays the rest. A snapshot
// carries them with the data (SnapshotLocalSpans), and a split copies the
// parent's to both children in the split's apply batch (copyOnce): a
// retry that reaches a replica filled by snapshot, or the child owning its
// rows, finds its id.

// RequestID names a write that must apply at most once.
type RequestID [16]byte

// onceWindow is how long a replica remembers an applied request id: well
// past the longest a client retries one write (its operation deadline).
const onceWindow = time.Minute

// onceBucket: the applied ids on disk past onceWindow are dropped this
// much at a time (one range delete each).
const onceBucket = 10 * time.Second

func onceBucketOf(ht hlc.Timestamp) uint64 {
	return uint64(ht.Physical() / onceBucket.Microseconds())
}

// cmdWriteOnce: a plain write with its request id and the indexes of the
// ops that found no row.
const cmdWriteOnce byte = 7

// onceResult is what an applied request did.
type onceResult struct {
	ht      hlc.Timestamp
	missing []int
}

// onceTracker remembers the request ids applied on this replica.
type onceTracker struct {
	mu    sync.Mutex
	done  map[RequestID]onceResult
	order []onceApplied // in apply order, for expiry, from head on
	head  int
	// dropped: the ids on disk in buckets below it are deleted (0: none
	// yet).
	dropped uint64
}

type onceApplied struct {
	id RequestID
	ht hlc.Timestamp
}

func (o *onceTracker) get(id RequestID) (onceResult, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r, ok := o.done[id]
	return r, ok
}

// reset forgets every id (a snapshot replaced them on disk).
func (o *onceTracker) reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done, o.order, o.head, o.dropped = nil, nil, 0, 0
}

// record remembers id's result and forgets the ids older than onceWindow
// before it.
func (o *onceTracker) record(id RequestID, r onceResult) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done == nil {
		o.done = map[RequestID]onceResult{}
	}
	cutoff := r.ht.Add(-onceWindow)
	for o.head < len(o.order) && o.order[o.head].ht < cutoff {
		delete(o.done, o.order[o.head].id)
		o.head++
	}
	// Expired entries leave the front of order; it is compacted once they
	// are half of it, not on every expiry (a copy of the whole window).
	if o.head > 0 && o.head >= len(o.order)/2 {
		o.order = append(o.order[:0], o.order[o.head:]...)
		o.head = 0
	}
	if _, ok := o.done[id]; !ok {
		o.order = append(o.order, onceApplied{id: id, ht: r.ht})
	}
	o.done[id] = r
}

// drop returns the hybrid time before which the ids on disk are to be
// deleted once ht is applied: the start of the bucket onceWindow before
// it, once per bucket (false otherwise).
func (o *onceTracker) drop(ht hlc.Timestamp) (hlc.Timestamp, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	keep := onceBucketOf(ht.Add(-onceWindow))
	if keep <= o.dropped {
		return 0, false
	}
	o.dropped = keep
	return hlc.FromMicros(int64(keep)*onceBucket.Microseconds(), 0), true
}

// copyOnce writes the applied ids of group from into the groups to
// (a split's children), reading r (the apply batch, which holds what this
// cycle applied before the split, over the engine).
func copyOnce(r pebble.Reader, w pebble.Writer, from uint64, to ...uint64) error {
	prefix := storage.AppliedRequestPrefix(from)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: storage.PrefixEnd(prefix)})
	if err != nil {
		return err
	}
	var keys, values [][]byte
	for it.First(); it.Valid(); it.Next() {
		keys = append(keys, append([]byte(nil), it.Key()[len(prefix):]...))
		values = append(values, append([]byte(nil), it.Value()...))
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return err
	}
	// Written after the iterator is closed: w may be the batch it reads.
	for _, g := range to {
		childPrefix := storage.AppliedRequestPrefix(g)
		for i, k := range keys {
			if err := w.Set(append(childPrefix[:len(childPrefix):len(childPrefix)], k...), values[i], nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// loadOnce rebuilds the applied ids from disk (on open, before the log
// replays what the engine does not hold; after a snapshot).
func (t *Tablet) loadOnce() error {
	prefix := storage.AppliedRequestPrefix(t.desc.ID)
	it, err := t.eng.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: storage.PrefixEnd(prefix)})
	if err != nil {
		return err
	}
	defer it.Close()
	// The keys are in hybrid-time order, as record wants them.
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		var id RequestID
		if len(k) != len(prefix)+8+len(id) {
			return fmt.Errorf("tablet %d: applied request key %x", t.desc.ID, k)
		}
		copy(id[:], k[len(prefix)+8:])
		r, err := decodeOnceResult(it.Value())
		if err != nil {
			return fmt.Errorf("tablet %d: applied request %x: %w", t.desc.ID, id, err)
		}
		t.once.record(id, r)
	}
	return it.Error()
}

func encodeOnceResult(r onceResult) []byte {
	return appendMissing(binary.BigEndian.AppendUint64(nil, uint64(r.ht)), r.missing)
}

// appendMissing appends a count and that many indexes (uvarints).
func appendMissing(b []byte, missing []int) []byte {
	b = binary.AppendUvarint(b, uint64(len(missing)))
	for _, i := range missing {
		b = binary.AppendUvarint(b, uint64(i))
	}
	return b
}

func decodeOnceResult(b []byte) (onceResult, error) {
	if len(b) < 8 {
		return onceResult{}, fmt.Errorf("result of %d bytes", len(b))
	}
	r := onceResult{ht: hlc.Timestamp(binary.BigEndian.Uint64(b))}
	missing, rest, err := decodeMissing(b[8:])
	if err != nil {
		return onceResult{}, err
	}
	if len(rest) != 0 {
		return onceResult{}, fmt.Errorf("%d bytes after the result", len(rest))
	}
	r.missing = missing
	return r, nil
}

// decodeMissing decodes a count and that many indexes (uvarints).
func decodeMissing(b []byte) ([]int, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, nil, fmt.Errorf("bad count of missing ops")
	}
	b = b[k:]
	var missing []int
	for ; n > 0; n-- {
		i, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, nil, fmt.Errorf("bad missing op")
		}
		missing = append(missing, int(i))
		b = b[k:]
	}
	return missing, b, nil
}

// WriteOnce is Write for SQL's UPDATE and DELETE of rows outside a
// transaction: its batch may hold adds (docdb.OpAddColumns), and it
// applies at most once however often it is retried with the same id. Its
// adds, column writes and row deletes of rows that do not exist write
// nothing (docdb.ResolveExisting); it returns their indexes (into
// wb.Ops). The rows are read, latest committed version, under their
// write latches after every transaction's intent on them is resolved, as
// a READ COMMITTED statement's locked rows are.
func (t *Tablet) WriteOnce(ctx context.Context, id RequestID, wb *docdb.WriteBatch) (hlc.Timestamp, []int, error) {
	return t.writePlain(ctx, wb, &id)
}

// resolveOnce resolves the ops of a WriteOnce (docdb.ResolveExisting),
// reading each row's latest version. The caller holds the rows' write
// latches and found no intent on them.
func (t *Tablet) resolveOnce(ctx context.Context, ops []docdb.WriteOp) (docdb.Resolved, error) {
	// Every applied version is at or below the clock (applies move it up).
	if err := t.leaderReady(ctx); err != nil {
		return docdb.Resolved{}, err
	}
	now := t.clock.Now()
	return docdb.ResolveExisting(ops, func(rowKey []byte, cols []uint32) (docdb.Row, bool, error) {
		return docdb.GetRow(t.eng, rowKey, docdb.ReadOptions{ReadTime: now, Columns: cols})
	})
}

// encodeWriteOnce encodes a cmdWriteOnce entry: the hybrid time, the id,
// the missing adds, then the batch (adds resolved).
func encodeWriteOnce(ht hlc.Timestamp, id RequestID, missing []int, wb *docdb.WriteBatch) []byte {
	b := make([]byte, 0, 32+64*len(wb.Ops))
	b = append(b, cmdWriteOnce)
	b = binary.BigEndian.AppendUint64(b, uint64(ht))
	b = append(b, id[:]...)
	b = appendMissing(b, missing)
	return append(b, wb.Marshal()...)
}

func decodeWriteOnce(data []byte) (ht hlc.Timestamp, id RequestID, missing []int, wb docdb.WriteBatch, err error) {
	if len(data) < 1+8+16 {
		return 0, id, nil, wb, fmt.Errorf("write-once entry of %d bytes", len(data))
	}
	ht = hlc.Timestamp(binary.BigEndian.Uint64(data[1:]))
	copy(id[:], data[9:25])
	missing, rest, err := decodeMissing(data[25:])
	if err != nil {
		return 0, id, nil, wb, fmt.Errorf("write-once entry: %w", err)
	}
	err = wb.Unmarshal(rest)
	return ht, id, missing, wb, err
}

// applyWriteOnce applies a cmdWriteOnce entry and remembers its id, in
// memory and in the apply batch.
func (sm *stateMachine) applyWriteOnce(b *pebble.Batch, index uint64, data []byte) any {
	t := (*Tablet)(sm)
	ht, id, missing, wb, err := decodeWriteOnce(data)
	if err != nil {
		return fmt.Errorf("tablet %d: index %d: %w", sm.desc.ID, index, err)
	}
	if err := sm.applyPlain(b, ht, &wb); err != nil {
		return err
	}
	r := onceResult{ht: ht, missing: missing}
	if err := b.Set(storage.AppliedRequestKey(t.desc.ID, uint64(ht), id[:]), encodeOnceResult(r), nil); err != nil {
		return err
	}
	if before, ok := t.once.drop(ht); ok {
		if err := b.DeleteRange(storage.AppliedRequestPrefix(t.desc.ID), storage.AppliedRequestsBefore(t.desc.ID, uint64(before)), nil); err != nil {
			return err
		}
	}
	t.once.record(id, r)
	return ht
}
