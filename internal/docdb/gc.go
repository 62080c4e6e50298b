package docdb

import (
	"bytes"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/storage"
)

// DefaultRetention is how much history is kept for reads in the past; the
// GC horizon is normally now - DefaultRetention.
const DefaultRetention = 15 * time.Minute

// gcBatchKeys bounds the deletes per engine batch so that GC of a large span
// neither builds a huge batch nor holds memory for it.
const gcBatchKeys = 1000

// GC deletes, within span (row keys), versions no read at or after horizon
// can see: versions shadowed by a newer version that is itself <= horizon,
// tombstones <= horizon with nothing older visible, and values expired at or
// before horizon. Returns the number of keys deleted.
//
// Per key (the row level, or one column), the newest version <= horizon is
// what every read at or after horizon falls back to; everything older is
// garbage, and so is that version itself when it is a tombstone or expired,
// since reads then see nothing either way. A row tombstone D <= horizon hides
// every column version <= D from all such reads, so those go too; that is
// what makes deleting D itself safe.
//
// GC reads one snapshot (the iterator's) and must not race with writes at
// times <= horizon, which the retention window rules out.
func GC(db *pebble.DB, span storage.Span, horizon hlc.Timestamp) (int, error) {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: span.Start, UpperBound: span.End})
	if err != nil {
		return 0, err
	}
	g := gcState{db: db, horizon: horizon, batch: db.NewBatch()}
	defer func() { _ = g.batch.Close() }()
	err = g.run(it, span)
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = g.flush()
	}
	return g.deleted, err
}

type gcState struct {
	db      *pebble.DB
	horizon hlc.Timestamp
	batch   *pebble.Batch
	pending int
	deleted int

	// Per row.
	rowKey   []byte
	rowSeen  bool    // the newest row-level version <= horizon was seen
	hasDel   bool    // a row tombstone <= horizon was seen
	del      version // the newest one
	col      uint32
	colValid bool // col holds the current column
	colSeen  bool // its newest version <= horizon was seen
}

func (g *gcState) run(it *pebble.Iterator, span storage.Span) error {
	valid := it.First()
	for valid {
		key := it.Key()
		n, err := rowKeyLen(key)
		if err != nil {
			return fmt.Errorf("docdb: gc: %w", err)
		}
		if !bytes.Equal(key[:n], g.rowKey) {
			if bytes.Compare(key[:n], span.Start) < 0 {
				// The span starts inside this row; it is not part of the span.
				valid = it.SeekGE(rowEnd(key[:n]))
				continue
			}
			g.rowKey = append(g.rowKey[:0], key[:n]...)
			g.rowSeen, g.hasDel, g.colValid = false, false, false
		}
		col, isCol, v, err := splitKey(key, n)
		if err != nil {
			return err
		}
		drop, err := g.judge(it, col, isCol, v)
		if err != nil {
			return err
		}
		if drop {
			if err := g.delete(key); err != nil {
				return err
			}
		}
		valid = it.Next()
	}
	return it.Error()
}

// judge decides whether the version the iterator is on is garbage. Keys
// arrive newest first within each key, row level before columns.
func (g *gcState) judge(it *pebble.Iterator, col uint32, isCol bool, v version) (bool, error) {
	if !isCol {
		if v.ht > g.horizon {
			return false, nil
		}
		sv, err := gcValue(it)
		if err != nil {
			return false, err
		}
		if sv.tombstone && !g.hasDel {
			g.hasDel, g.del = true, v
		}
		if g.rowSeen {
			return true, nil // shadowed
		}
		g.rowSeen = true
		return !sv.liveAt(g.horizon), nil
	}
	if !g.colValid || col != g.col {
		g.col, g.colValid, g.colSeen = col, true, false
	}
	if v.ht > g.horizon {
		return false, nil
	}
	if g.hasDel && !g.del.less(v) {
		return true, nil // hidden by a row tombstone <= horizon
	}
	if g.colSeen {
		return true, nil // shadowed
	}
	g.colSeen = true
	sv, err := gcValue(it)
	if err != nil {
		return false, err
	}
	return !sv.liveAt(g.horizon), nil
}

func gcValue(it *pebble.Iterator) (storedValue, error) {
	raw, err := it.ValueAndErr()
	if err != nil {
		return storedValue{}, err
	}
	return decodeStoredValue(raw)
}

func (g *gcState) delete(key []byte) error {
	if err := g.batch.Delete(key, nil); err != nil {
		return err
	}
	g.pending++
	g.deleted++
	if g.pending >= gcBatchKeys {
		return g.flush()
	}
	return nil
}

// flush commits the pending deletes without sync: losing them in a crash
// only leaves garbage for the next GC.
func (g *gcState) flush() error {
	if g.pending == 0 {
		return nil
	}
	if err := g.batch.Commit(pebble.NoSync); err != nil {
		return err
	}
	g.batch.Reset()
	g.pending = 0
	return nil
}
