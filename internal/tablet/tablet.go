package tablet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/batchrepr"

	"github.com/shaledb/shaledb/internal/consensus"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/storage"
)

// ErrKeyOutOfRange: a row key outside the tablet's span.
var ErrKeyOutOfRange = errors.New("tablet: key outside the tablet's span")

// Config opens a tablet peer.
type Config struct {
	Descriptor Descriptor
	Runtime    *consensus.Runtime
	Engine     *storage.Engine
	Clock      *hlc.Clock
	// Bootstrap: the initial voters of a new tablet (see
	// consensus.GroupConfig). Empty to load an existing tablet or to create
	// an empty replica that a leader will fill by snapshot.
	Bootstrap []uint64
	// HistoryRetention is how far in the past reads may go; versions older
	// than that are garbage collected by GC. Default docdb.DefaultRetention.
	HistoryRetention time.Duration
	// OnSplit is called (on its own goroutine) once a split of this tablet
	// is applied and committed here: the node opens the children. Also
	// called when a snapshot brings this replica the split.
	OnSplit func(parent Descriptor, children [2]Descriptor)
	// Resolver reaches transaction status records; nil: this tablet
	// refuses transactional writes.
	Resolver Resolver
}

// Tablet is one tablet peer on this node.
type Tablet struct {
	desc    Descriptor
	eng     *storage.Engine
	clock   *hlc.Clock
	group   *consensus.Group
	latches *latches

	retention time.Duration
	onSplit   func(parent Descriptor, children [2]Descriptor)
	// inflight holds the hybrid times of writes stamped here whose outcome
	// is not known yet (see SafePoint).
	inflightMu   sync.Mutex
	inflight     map[uint64]hlc.Timestamp
	nextInflight uint64
	// split holds the children once the tablet has split; pendingSplit
	// hands a just-applied split to PostApply.
	split, pendingSplit atomic.Pointer[[2]Descriptor]
	// maxApplied is the highest hybrid time applied on this replica (0
	// until the first apply after open); it bounds the GC horizon.
	maxApplied atomic.Uint64
	// sizes backs ApproximateSize.
	sizes sizeTracker
	// gc decides when a GC pass is worth its scan (history.go).
	gc gcTracker

	// Transactions (txn.go).
	resolver Resolver
	txns     txnTracker
	applyQ   applyQueue
	applying sync.Map     // docdb.TxnID -> struct{}: applies a read started (applySoon)
	ranges   rangeLockSet // range read locks (rangelock.go)
	// leaseTerm is the term whose lease leaderReady last saw; leaseReady
	// is when that leader may serve (after the clock offset wait).
	leaseMu    sync.Mutex
	leaseTerm  uint64
	leaseReady time.Time

	// once remembers the plain writes applied here that must not apply
	// twice (once.go).
	once onceTracker
	// updates caches the rows of UpdateRow (updatecache.go).
	updates updateCache
}

// Open creates or reloads a tablet peer. The descriptor is stored locally
// (and travels with snapshots) so that a restarted node can reopen its
// tablets with LoadDescriptors.
func Open(cfg Config) (*Tablet, error) {
	t := &Tablet{desc: cfg.Descriptor, eng: cfg.Engine, clock: cfg.Clock, latches: newLatches(), retention: cfg.HistoryRetention}
	if t.retention <= 0 {
		t.retention = docdb.DefaultRetention
	}
	t.onSplit = cfg.OnSplit
	t.resolver = cfg.Resolver
	t.txns.init()
	if err := t.resumeGC(); err != nil {
		return nil, err
	}
	if d := cfg.Descriptor; d.SplitInto[0] != 0 {
		c := d.children(d.SplitInto[0], d.SplitInto[1], d.SplitKey)
		t.split.Store(&c)
		t.desc.SplitInto, t.desc.SplitKey = [2]uint64{}, nil
	}
	// The descriptor and a new group's initial raft state are written in
	// one synced batch: a crash never leaves a descriptor whose group
	// was never bootstrapped (it would come back as an empty replica).
	b := cfg.Engine.NewBatch()
	defer b.Close()
	if err := b.Set(storage.DescriptorKey(cfg.Descriptor.ID), cfg.Descriptor.marshal(), nil); err != nil {
		return nil, err
	}
	if len(cfg.Bootstrap) > 0 {
		exists, err := consensus.HasGroupState(cfg.Engine, cfg.Descriptor.ID)
		if err != nil {
			return nil, err
		}
		if !exists {
			if err := consensus.BootstrapGroup(b, cfg.Descriptor.ID, cfg.Bootstrap); err != nil {
				return nil, err
			}
		}
	}
	if err := b.Commit(storage.Sync); err != nil {
		return nil, err
	}
	// Load the transactions and range locks on disk before the group
	// exists: once it does, the scheduler may replay committed entries
	// that update them, and a later load could miss what a replayed entry
	// has not committed yet.
	if err := t.loadTxns(); err != nil {
		return nil, err
	}
	if err := t.loadOnce(); err != nil {
		return nil, err
	}
	g, err := cfg.Runtime.CreateGroup(consensus.GroupConfig{ID: cfg.Descriptor.ID, StateMachine: (*stateMachine)(t)})
	if err != nil {
		return nil, err
	}
	t.group = g
	return t, nil
}

// LoadDescriptors lists the tablets stored on this node (after a restart).
func LoadDescriptors(eng *storage.Engine) ([]Descriptor, error) {
	span := storage.LocalSpan()
	it, err := eng.NewIter(&pebble.IterOptions{LowerBound: span.Start, UpperBound: span.End})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []Descriptor
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		if len(k) < 10 {
			continue
		}
		group := binary.BigEndian.Uint64(k[1:9])
		if string(k) != string(storage.DescriptorKey(group)) {
			continue
		}
		d, err := unmarshalDescriptor(it.Value())
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, it.Error()
}

// Descriptor returns the tablet's descriptor (with SplitInto set once it
// has split).
func (t *Tablet) Descriptor() Descriptor {
	d := t.desc
	if c := t.split.Load(); c != nil {
		d.SplitInto = [2]uint64{c[0].ID, c[1].ID}
		d.SplitKey = c[1].Span.Start
	}
	return d
}

// Group returns the tablet's raft group (membership changes, status).
func (t *Tablet) Group() *consensus.Group { return t.group }

func (t *Tablet) checkSpan(key []byte) error {
	if !t.desc.Span.Contains(key) {
		return fmt.Errorf("%w: %x not in %s", ErrKeyOutOfRange, key, t.desc.Span)
	}
	return nil
}

func (t *Tablet) notLeader() error {
	return &consensus.NotLeaderError{Group: t.desc.ID, Leader: t.group.Status().Leader}
}

// Write replicates a write batch and returns its hybrid time once it is
// applied on this (leader) replica, which implies a majority made it durable.
func (t *Tablet) Write(ctx context.Context, wb *docdb.WriteBatch) (hlc.Timestamp, error) {
	if docdb.HasAdds(wb.Ops) {
		return 0, ErrAddOutsideTxn
	}
	ht, _, err := t.writePlain(ctx, wb, nil)
	return ht, err
}

// writePlain is Write, and WriteOnce when id is not nil: adds allowed,
// answered from the applied request ids if id is among them.
func (t *Tablet) writePlain(ctx context.Context, wb *docdb.WriteBatch, id *RequestID) (hlc.Timestamp, []int, error) {
	keys := make([]string, 0, len(wb.Ops))
	for _, op := range wb.Ops {
		if err := t.checkSpan(op.RowKey); err != nil {
			return 0, nil, err
		}
		keys = append(keys, string(op.RowKey))
	}
	sort.Strings(keys)
	for {
		release, err := t.latches.acquireWrite(ctx, keys)
		if err != nil {
			return 0, nil, err
		}
		if id != nil {
			// An earlier attempt holds these latches until its entry is
			// applied or will never be: checked under them, it is done.
			if r, ok := t.once.get(*id); ok {
				release()
				return r.ht, r.missing, nil
			}
		}
		// A write outside any transaction still respects transactions'
		// locks and provisional writes: it waits for them as a
		// transaction would (it holds nothing while it waits, so it
		// cannot be part of a deadlock).
		conflicts, err := t.plainWriteConflicts(wb.Ops)
		if err != nil {
			release()
			return 0, nil, err
		}
		if len(conflicts) == 0 {
			ops, err := t.insertsChecked(ctx, wb.Ops, docdb.TxnID{}, 0)
			if err != nil {
				release()
				return 0, nil, err
			}
			if id == nil {
				ht, err := t.writeLatched(ctx, &docdb.WriteBatch{Ops: ops}, release)
				return ht, nil, err
			}
			res, err := t.resolveOnce(ctx, ops)
			if err != nil {
				release()
				return 0, nil, err
			}
			if len(res.Ops) == 0 {
				release() // no op found its row: nothing to write or remember
				return 0, res.Missing, nil
			}
			ht, err := t.proposeLatched(ctx, func(ht hlc.Timestamp) []byte {
				return encodeWriteOnce(ht, *id, res.Missing, &docdb.WriteBatch{Ops: res.Ops})
			}, release)
			return ht, res.Missing, err
		}
		release()
		pending, err := t.resolveConflicts(ctx, conflicts, nil)
		if err == nil && len(pending) > 0 {
			err = t.waitAny(ctx, pending, waitPoll)
		}
		if err != nil {
			return 0, nil, err
		}
	}
}

// writeLatched stamps and replicates wb under the latches the caller took
// (see proposeLatched).
func (t *Tablet) writeLatched(ctx context.Context, wb *docdb.WriteBatch, release func()) (hlc.Timestamp, error) {
	return t.proposeLatched(ctx, func(ht hlc.Timestamp) []byte { return encodeWrite(ht, wb) }, release)
}

// Get reads one row at the current time from the leaseholder.
func (t *Tablet) Get(ctx context.Context, rowKey []byte, columns []uint32) (docdb.Row, bool, error) {
	return t.GetAt(ctx, rowKey, columns, 0)
}

// GetAt reads one row at readTime (0: the current time) from the
// leaseholder. A read time ahead of the clock moves the clock up first, so
// no later write can land at or below it; one older than the retention
// window fails with ErrReadTooOld.
func (t *Tablet) GetAt(ctx context.Context, rowKey []byte, columns []uint32, readTime hlc.Timestamp) (docdb.Row, bool, error) {
	row, found, _, err := t.GetTxn(ctx, rowKey, columns, TxnRead{ReadTime: readTime})
	return row, found, err
}

// ScanOptions configure Scan.
type ScanOptions struct {
	Span    storage.Span // of row keys; clipped to the tablet's span
	Columns []uint32
	Limit   int
	Reverse bool
	// ReadTime: 0 reads at the current time; see GetAt.
	ReadTime hlc.Timestamp
	// Pushdown (see docdb.ScanOptions and pushdown.go): Filter, the key
	// columns it and Aggregates refer to, and the bound on rows examined.
	Filter     *docdb.Pred
	KeyColumns []uint32
	MaxRows    int
	// Aggregates are for AggregateTxn and FollowerAggregate; Scan refuses
	// them. GroupBy, if set, computes them per group of these columns (see
	// docdb.Aggregator), at most MaxGroups groups a page (0: no bound).
	Aggregates []docdb.AggSpec
	GroupBy    []uint32
	MaxGroups  int
}

// Scan reads rows in a span at the current time from the leaseholder.
func (t *Tablet) Scan(ctx context.Context, opts ScanOptions) ([]docdb.Row, []byte, error) {
	rows, resume, _, err := t.ScanTxn(ctx, opts, TxnRead{ReadTime: opts.ReadTime})
	return rows, resume, err
}

func clip(s, bound storage.Span) storage.Span {
	if s.Start == nil || string(s.Start) < string(bound.Start) {
		s.Start = bound.Start
	}
	if s.End == nil || (bound.End != nil && string(s.End) > string(bound.End)) {
		s.End = bound.End
	}
	return s
}

// CompareAndSet sets column col of the row to newValue if its current value
// equals expected (nil expected: the column is absent). It returns whether
// it swapped and the value it found. The row is latched from the read to the
// apply, so the check and the write are atomic.
func (t *Tablet) CompareAndSet(ctx context.Context, rowKey []byte, col uint32, expected *docdb.Value, newValue docdb.Value) (bool, *docdb.Value, error) {
	if err := t.checkSpan(rowKey); err != nil {
		return false, nil, err
	}
	release, err := t.latches.acquireWrite(ctx, []string{string(rowKey)})
	if err != nil {
		return false, nil, err
	}
	if !t.group.HasLease() {
		release()
		return false, nil, t.notLeader()
	}
	if err := t.servable(); err != nil {
		release()
		return false, nil, err
	}
	row, found, err := docdb.GetRow(t.eng, rowKey, docdb.ReadOptions{ReadTime: t.clock.Now(), Columns: []uint32{col}})
	if err != nil {
		release()
		return false, nil, err
	}
	var current *docdb.Value
	if found {
		for _, c := range row.Columns {
			if c.ID == col {
				v := c.Value
				current = &v
			}
		}
	}
	match := (expected == nil && current == nil) ||
		(expected != nil && current != nil && expected.Type == current.Type && expected.Compare(*current) == 0)
	if !match {
		release()
		return false, current, nil
	}
	_, err = t.writeLatched(ctx, &docdb.WriteBatch{Ops: []docdb.WriteOp{{
		Kind: docdb.OpPutRow, RowKey: rowKey, Columns: []docdb.ColumnValue{{ID: col, Value: newValue}},
	}}}, release)
	if err != nil {
		return false, current, err
	}
	return true, current, nil
}

// Commands replicated through Raft: a kind byte, then the payload.
const cmdWrite byte = 1

func encodeWrite(ht hlc.Timestamp, wb *docdb.WriteBatch) []byte {
	b := make([]byte, 9, 9+64*len(wb.Ops))
	b[0] = cmdWrite
	binary.BigEndian.PutUint64(b[1:], uint64(ht))
	return append(b, wb.Marshal()...)
}

// stateMachine is the tablet seen by consensus.
type stateMachine Tablet

func (sm *stateMachine) Apply(b *pebble.Batch, e consensus.Entry) any {
	before := b.Len()
	res := sm.apply(b, e)
	if b.Len() > before {
		(*Tablet)(sm).noteWritten(b.Repr()[before:])
	}
	return res
}

func (sm *stateMachine) apply(b *pebble.Batch, e consensus.Entry) any {
	if len(e.Data) > 0 && e.Data[0] == cmdSplit {
		return sm.applySplit(b, e)
	}
	if len(e.Data) > 0 && e.Data[0] >= cmdIntents && e.Data[0] <= cmdRemoveTxn {
		return sm.applyTxnCmd(b, e)
	}
	if len(e.Data) > 0 && e.Data[0] == cmdApplyTxns {
		return sm.applyTxns(b, entryData{index: e.Index, data: e.Data, inner: func(cmd []byte) any {
			inner := e
			inner.Data = cmd
			return sm.apply(b, inner)
		}})
	}
	if len(e.Data) > 0 && e.Data[0] == cmdWriteOnce {
		return sm.applyWriteOnce(b, e.Index, e.Data)
	}
	if len(e.Data) < 9 || e.Data[0] != cmdWrite {
		return fmt.Errorf("tablet %d: unknown command at index %d", sm.desc.ID, e.Index)
	}
	ht := hlc.Timestamp(binary.BigEndian.Uint64(e.Data[1:]))
	var wb docdb.WriteBatch
	if err := wb.Unmarshal(e.Data[9:]); err != nil {
		return fmt.Errorf("tablet %d: index %d: %w", sm.desc.ID, e.Index, err)
	}
	if err := sm.applyPlain(b, ht, &wb); err != nil {
		return err
	}
	return ht
}

// applyPlain applies a plain write (cmdWrite, cmdWriteOnce) at ht.
func (sm *stateMachine) applyPlain(b *pebble.Batch, ht hlc.Timestamp, wb *docdb.WriteBatch) error {
	if err := (*Tablet)(sm).servable(); err != nil {
		return err // a write that reached the log after the split
	}
	sm.clock.ForceUpdate(ht)
	if err := docdb.ApplyWriteBatch(b, ht, wb); err != nil {
		return err
	}
	(*Tablet)(sm).noteApplied(ht)
	return nil
}

func (sm *stateMachine) SnapshotSpans() []storage.Span {
	if sm.split.Load() != nil {
		return nil // the children own the data now
	}
	return []storage.Span{sm.desc.Span, docdb.IntentSpanOf(sm.desc.Span), docdb.TxnIndexSpan(sm.desc.ID), docdb.RangeLockSpan(sm.desc.ID)}
}

// SnapshotLocalSpans: the applied request ids travel with a snapshot, so
// that a replica filled by one knows the writes its data holds
// (consensus.LocalSnapshotter).
func (sm *stateMachine) SnapshotLocalSpans() []storage.Span {
	if sm.split.Load() != nil {
		return nil
	}
	prefix := storage.AppliedRequestPrefix(sm.desc.ID)
	return []storage.Span{{Start: prefix, End: storage.PrefixEnd(prefix)}}
}

// Restored reloads what the snapshot replaced (the applied request ids)
// and picks up a split that arrived by snapshot: the children are opened
// empty here and filled by their own leaders.
func (sm *stateMachine) Restored() error {
	t := (*Tablet)(sm)
	t.once.reset()
	if err := t.loadOnce(); err != nil {
		return err
	}
	v, closer, err := t.eng.Get(storage.DescriptorKey(t.desc.ID))
	if err != nil {
		return nil // no descriptor in the snapshot: nothing changed
	}
	d, err := unmarshalDescriptor(v)
	closer.Close()
	if err != nil {
		return err
	}
	if err := t.loadTxns(); err != nil {
		return err
	}
	if d.SplitInto[0] == 0 || t.split.Load() != nil {
		return nil
	}
	c := d.children(d.SplitInto[0], d.SplitInto[1], d.SplitKey)
	t.split.Store(&c)
	if t.onSplit != nil {
		go t.onSplit(t.desc, c)
	}
	return nil
}

// sizeRefresh is how long ApproximateSize reuses its last sstable
// estimate while the engine has not flushed: the estimate walks the LSM's
// metadata, and heartbeats ask for every tablet every second.
const sizeRefresh = 30 * time.Second

// sizeTracker keeps the parts of ApproximateSize: the last estimate of the
// tablet's sstable bytes, and the bytes its applied entries wrote to the
// engine since the engine's last flush (its share of the shared memtable,
// which the sstable estimate cannot see).
type sizeTracker struct {
	mu sync.Mutex
	// sst was estimated at sstAt (unix ns) when the engine had made
	// sstFlushes flushes.
	sst        uint64
	sstAt      int64
	sstFlushes uint64
	// unflushed bytes were written since the engine's flush number
	// unflushedAt.
	unflushed   uint64
	unflushedAt uint64
}

// noteWritten counts the bytes of the tablet's data (its span: not
// intents, transaction records or raft state, which the sstable estimate
// leaves out too) among the batch records an apply wrote.
func (t *Tablet) noteWritten(records []byte) {
	start, end := t.dataSpan()
	n := 0
	r := batchrepr.Reader(records)
	for {
		kind, k, v, ok, err := r.Next()
		if !ok || err != nil {
			break
		}
		if bytes.Compare(k, start) < 0 || bytes.Compare(k, end) >= 0 {
			continue
		}
		switch kind {
		case pebble.InternalKeyKindSet, pebble.InternalKeyKindDelete, pebble.InternalKeyKindSingleDelete,
			pebble.InternalKeyKindDeleteSized, pebble.InternalKeyKindMerge:
			n += len(k) + len(v)
		}
	}
	if n == 0 {
		return
	}
	// Everything applied so far is stamped at or below maxApplied.
	t.gc.wrote(uint64(n), hlc.Timestamp(t.maxApplied.Load()), t.retention)
	f := t.eng.Flushes()
	z := &t.sizes
	z.mu.Lock()
	if z.unflushedAt != f {
		z.unflushed, z.unflushedAt = 0, f // flushed: the sstables have them
	}
	z.unflushed += uint64(n)
	z.mu.Unlock()
}

// ApproximateSize estimates the bytes of the tablet's data: its sstables
// (re-estimated after each engine flush or ingestion, and at least every
// sizeRefresh) plus what it wrote to the memtable since the last flush, so
// that freshly written data counts before the engine flushes it. Writes
// that land while a flush runs are missed until the next flush.
func (t *Tablet) ApproximateSize() uint64 {
	if t.split.Load() != nil {
		return 0
	}
	f := t.eng.Flushes()
	now := time.Now().UnixNano()
	z := &t.sizes
	z.mu.Lock()
	fresh := z.sstAt != 0 && now-z.sstAt < int64(sizeRefresh) && z.sstFlushes == f
	z.mu.Unlock()
	if !fresh {
		sst := t.estimateSize()
		z.mu.Lock()
		z.sst, z.sstAt, z.sstFlushes = sst, now, f
		z.mu.Unlock()
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	n := z.sst
	if z.unflushedAt == f {
		n += z.unflushed
	}
	return n
}

// dataSpan is the tablet's span of data keys, with an unbounded end made
// the end of the data key space.
func (t *Tablet) dataSpan() (start, end []byte) {
	end = t.desc.Span.End
	if end == nil {
		end = storage.PrefixEnd(t.desc.Span.Start[:1])
	}
	return t.desc.Span.Start, end
}

func (t *Tablet) estimateSize() uint64 {
	start, end := t.dataSpan()
	n, err := t.eng.EstimateDiskUsage(start, end)
	if err != nil {
		return 0
	}
	return n
}
