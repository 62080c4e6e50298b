package tablet

import (
	"errors"
	"fmt"

	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
)

// ErrReadTooOld: a read time older than the history retention window, whose
// versions GC may already have removed (PostgreSQL's "snapshot too old").
var ErrReadTooOld = errors.New("tablet: read time is older than the history retention window")

// readTime resolves a requested read time (0: now). The caller holds the
// read latches and the lease. Moving the clock up to a future read time
// before reading means every write not yet stamped gets a later time, and
// every write already stamped at or below it holds a latch until applied.
func (t *Tablet) readTime(req hlc.Timestamp) (hlc.Timestamp, error) {
	now := t.clock.Now()
	if req == 0 {
		return now, nil
	}
	if req > now {
		// Update refuses a time beyond the maximum clock offset: no client
		// can drag the node's clock arbitrarily far ahead.
		if err := t.clock.Update(req); err != nil {
			return 0, err
		}
		return req, nil
	}
	if cutoff := now.Add(-t.retention); req <= cutoff {
		return 0, fmt.Errorf("%w: %s <= %s", ErrReadTooOld, req, cutoff)
	}
	return req, nil
}

// GCHorizon is the hybrid time at or below which GC may collapse history:
// the retention window before the older of now and the newest hybrid time
// applied here. Bounding it by what was applied keeps a replica that
// replays old log entries (after a restart or while catching up) from
// collecting history those entries still write into; entries of one leader
// term are stamped within a proposal timeout of each other and a new term's
// entries are stamped above all earlier ones. Zero means nothing may be
// collected yet.
func (t *Tablet) GCHorizon() hlc.Timestamp {
	top := hlc.Timestamp(t.maxApplied.Load())
	if now := t.clock.Now(); now < top {
		top = now
	}
	if top == 0 || top.Physical() <= t.retention.Microseconds() {
		return 0
	}
	return top.Add(-t.retention)
}

// GC removes, on this replica only, the versions of the tablet's rows that
// no read inside the retention window can see. Replicas collect
// independently: what they keep differs only below the horizon, where reads
// are refused. It returns the number of keys deleted.
func (t *Tablet) GC() (int, error) {
	h := t.GCHorizon()
	if h == 0 {
		return 0, nil
	}
	return docdb.GC(t.eng.DB, t.desc.Span, h)
}
