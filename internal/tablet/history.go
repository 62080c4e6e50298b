package tablet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/storage"
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

// gcGarbageShare: a GC pass, which reads the whole tablet, runs once the
// data this replica applied between the last pass's horizon and the new
// one (the versions that may have become garbage since) is at least this
// share of the tablet's size. Passing every minute regardless, each
// replica of a 1,000,000-row pgbench_accounts read every row once a
// minute: a third of a node's CPU in bursts under TPC-B, which updates a
// few thousand of those rows a minute. A small, hot tablet (pgbench's
// branches) still passes every time.
const gcGarbageShare = 0.1

// gcTracker remembers what the replica applied when, for GC.
type gcTracker struct {
	// passes counts the GC passes run (tests).
	passes atomic.Uint64

	mu sync.Mutex
	// written counts the data bytes applied on this replica since open.
	written uint64
	// marks: (clock time, written) pairs, oldest first, taken after each
	// apply (the applies of one span of retention/gcMarksPerRetention move
	// one mark) and at each GC call: every byte counted in a mark's
	// written was applied at or below its time.
	marks []gcMark
	// done is the written mark the last pass reached; ran: a pass ran
	// since open. The first one runs at once unless resumed: data applied
	// before open is not counted.
	done uint64
	ran  bool
	// resumed: the replica had passed before it was (re)opened at
	// openedAt, so what was applied before open holds at most the garbage
	// of the time since that pass. Its first pass waits until the horizon
	// passes openedAt, one retention window later, when one pass collects
	// all of it (and what was applied since open counts toward the share
	// from then on). A restarted node so does not read every row it holds
	// in its first minute.
	resumed  bool
	openedAt hlc.Timestamp
	// wroteMark is when the span of the applies' current mark began.
	wroteMark hlc.Timestamp
}

type gcMark struct {
	at      hlc.Timestamp
	written uint64
}

// gcMarksPerRetention bounds how many marks the applies of one retention
// window take.
const gcMarksPerRetention = 8

// wrote counts n data bytes applied, every byte so far stamped at or below
// now.
func (g *gcTracker) wrote(n uint64, now hlc.Timestamp, retention time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.written += n
	k := len(g.marks)
	if k > 0 && g.marks[k-1].at >= g.wroteMark && now <= g.wroteMark.Add(retention/gcMarksPerRetention) {
		g.marks[k-1] = gcMark{at: now, written: g.written} // the same span of time: move its mark
		return
	}
	g.marks = append(g.marks, gcMark{at: now, written: g.written})
	g.wroteMark = now
}

// due takes a mark and reports whether a pass at horizon h is worth it,
// and the written mark it would reach: the newest mark at or below h.
func (g *gcTracker) due(now, h hlc.Timestamp, size uint64) (bool, uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.marks = append(g.marks, gcMark{at: now, written: g.written})
	upTo, newest := g.done, -1
	for i, m := range g.marks {
		if m.at <= h {
			upTo, newest = m.written, i
		}
	}
	if newest > 0 {
		g.marks = g.marks[newest:] // older marks at or below h say no more
	}
	if !g.ran && (!g.resumed || h >= g.openedAt) {
		return true, upTo
	}
	return upTo > g.done && float64(upTo-g.done) >= gcGarbageShare*float64(size), upTo
}

// passed records a pass that reached the written mark upTo.
func (g *gcTracker) passed(upTo uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.done, g.ran = max(g.done, upTo), true
	g.passes.Add(1)
}

// GCPasses is how many GC passes ran on this replica since open.
func (t *Tablet) GCPasses() uint64 { return t.gc.passes.Load() }

// GC removes, on this replica only, the versions of the tablet's rows that
// no read inside the retention window can see, when enough may have
// become garbage since the last pass (gcGarbageShare). Replicas collect
// independently: what they keep differs only below the horizon, where reads
// are refused. It returns the number of keys deleted.
func (t *Tablet) GC() (int, error) {
	h := t.GCHorizon()
	if h == 0 {
		return 0, nil
	}
	due, upTo := t.gc.due(t.clock.Now(), h, t.ApproximateSize())
	if !due {
		return 0, nil
	}
	n, err := docdb.GC(t.eng.DB, t.desc.Span, h)
	if err != nil {
		return n, err
	}
	t.gc.passed(upTo)
	// Not synced: a pass lost in a crash only makes the next open pass at
	// once, as before any pass.
	return n, t.eng.Set(storage.GCStateKey(t.desc.ID), binary.BigEndian.AppendUint64(nil, uint64(h)), pebble.NoSync)
}

// resumeGC tells the GC tracker whether this replica passed before: read
// at open.
func (t *Tablet) resumeGC() error {
	_, closer, err := t.eng.Get(storage.GCStateKey(t.desc.ID))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	_ = closer.Close()
	t.gc.resumed, t.gc.openedAt = true, t.clock.Now()
	return nil
}
