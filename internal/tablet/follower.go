package tablet

import (
	"context"
	"fmt"
	"time"

	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/storage"
)

// Follower reads. A follower serves a read at a hybrid time T once it
// knows that every write of the tablet stamped at or below T has been
// applied locally. The leaseholder hands out such points (SafePoint): a
// time below every write still in flight, and its applied index at that
// moment, which covers every write stamped at or below the time. A
// follower that has applied that index reads at that time without asking
// anyone again until the point is older than the staleness the reader
// accepts.

// SafePoint says: every write of the tablet stamped at or below Time is
// applied at or below log index Index.
type SafePoint struct {
	Time  hlc.Timestamp
	Index uint64
}

// stamp takes a write's hybrid time and registers it as in flight; done
// unregisters it once its outcome is known. Taking the time and
// registering it happen under one lock, so SafePoint never misses a write
// that has its time but is not registered yet.
func (t *Tablet) stamp() (hlc.Timestamp, func()) {
	t.inflightMu.Lock()
	ht := t.clock.Now()
	id := t.nextInflight
	t.nextInflight++
	if t.inflight == nil {
		t.inflight = make(map[uint64]hlc.Timestamp)
	}
	t.inflight[id] = ht
	t.inflightMu.Unlock()
	return ht, func() {
		t.inflightMu.Lock()
		delete(t.inflight, id)
		t.inflightMu.Unlock()
	}
}

// SafePoint returns a safe point for follower reads. Only the leaseholder
// can tell.
func (t *Tablet) SafePoint() (SafePoint, error) {
	if !t.group.HasLease() {
		return SafePoint{}, t.notLeader()
	}
	if err := t.servable(); err != nil {
		return SafePoint{}, err
	}
	t.inflightMu.Lock()
	safe := t.clock.Now()
	for _, ht := range t.inflight {
		if ht <= safe {
			safe = ht.Prev()
		}
	}
	t.inflightMu.Unlock()
	// Every write at or below safe has been applied here (in-flight ones
	// are all above it), so the applied index read now covers them.
	return SafePoint{Time: safe, Index: t.group.Status().AppliedIndex}, nil
}

// waitApplied waits until this replica has applied index.
func (t *Tablet) waitApplied(ctx context.Context, index uint64) error {
	if t.group.Status().AppliedIndex >= index {
		return nil
	}
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for t.group.Status().AppliedIndex < index {
		select {
		case <-ctx.Done():
			return fmt.Errorf("tablet %d: waiting to apply index %d: %w", t.desc.ID, index, ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}

// followerReadTime checks a follower read: the replica has applied the
// point's index, and the read time (0: the point's time) is at or below it.
func (t *Tablet) followerReadTime(ctx context.Context, sp SafePoint, readTime hlc.Timestamp) (hlc.Timestamp, error) {
	if err := t.servable(); err != nil {
		return 0, err
	}
	if readTime == 0 {
		readTime = sp.Time
	}
	if readTime > sp.Time {
		return 0, fmt.Errorf("%w: read time %s is past the safe time %s", ErrStaleFollower, readTime, sp.Time)
	}
	if err := t.waitApplied(ctx, sp.Index); err != nil {
		return 0, err
	}
	return t.readTime(readTime)
}

// ErrStaleFollower: a follower cannot serve that read time yet.
var ErrStaleFollower = fmt.Errorf("tablet: follower is not caught up to the read time")

// FollowerGet reads a row at this replica (any role) at the safe point's
// time, or at readTime if it is not later. It returns the time read at.
func (t *Tablet) FollowerGet(ctx context.Context, rowKey []byte, columns []uint32, sp SafePoint, readTime hlc.Timestamp) (docdb.Row, bool, hlc.Timestamp, error) {
	if err := t.checkSpan(rowKey); err != nil {
		return docdb.Row{}, false, 0, err
	}
	rt, err := t.followerReadTime(ctx, sp, readTime)
	if err != nil {
		return docdb.Row{}, false, 0, err
	}
	if err := t.noIntentsFor(docdb.RowSpan(rowKey)); err != nil {
		return docdb.Row{}, false, 0, err
	}
	row, found, err := docdb.GetRow(t.eng, rowKey, docdb.ReadOptions{ReadTime: rt, Columns: columns})
	return row, found, rt, err
}

// FollowerScan is Scan at this replica at a safe point (see FollowerGet).
func (t *Tablet) FollowerScan(ctx context.Context, opts ScanOptions, sp SafePoint) ([]docdb.Row, []byte, hlc.Timestamp, error) {
	rt, err := t.followerReadTime(ctx, sp, opts.ReadTime)
	if err != nil {
		return nil, nil, 0, err
	}
	span := clip(opts.Span, t.desc.Span)
	if err := t.noIntentsFor(span); err != nil {
		return nil, nil, 0, err
	}
	if err := opts.checkScan(); err != nil {
		return nil, nil, 0, err
	}
	rows, resume, err := docdb.Scan(t.eng, opts.docdb(span, rt, nil, nil))
	return rows, resume, rt, err
}

// noIntentsFor refuses a follower read of a span with provisional writes:
// resolving them takes the leader (a committed transaction may not be
// applied yet), so the reader goes there.
func (t *Tablet) noIntentsFor(span storage.Span) error {
	if !t.txns.any() {
		return nil
	}
	rows, err := docdb.ReadIntents(t.eng, span, docdb.TxnID{})
	if err != nil {
		return err
	}
	if len(rows) > 0 {
		return fmt.Errorf("%w: the rows have provisional writes of transactions", ErrStaleFollower)
	}
	return nil
}
