package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options configure the engine. Zero values take the documented defaults,
// except Comparer, which is required.
type Options struct {
	// Comparer orders the keys and splits them into the prefixes the bloom
	// filters hold (docdb.Comparer: docdb.EngineOptions sets it). Required:
	// Pebble records its name, and an engine does not open with another.
	Comparer *pebble.Comparer
	// CacheSize is the block cache size in bytes, for blocks: the memtables
	// Pebble charges to the cache come on top. Default 128 MiB.
	CacheSize int64
	// MemTableSize is the size of one memtable in bytes. Default 64 MiB.
	MemTableSize uint64
	// InMemory keeps everything in memory (tests that need no durability).
	InMemory bool
	// WrapFS, if set, wraps the file system the engine uses: tests that
	// hold or fail the disk's fsyncs.
	WrapFS func(vfs.FS) vfs.FS
	// DisableWAL turns off the write-ahead log. Never set in production:
	// acknowledged writes would not survive a crash.
	DisableWAL bool
	// DisableAutomaticCompactions leaves compactions to explicit Compact
	// calls, for benchmarks that need the LSM to keep the shape they built.
	DisableAutomaticCompactions bool
}

// Engine is the node's single Pebble instance, shared by every tablet: one
// WAL gives group commit across tablets and one memory budget.
type Engine struct {
	*pebble.DB
	// FS is the file system the engine lives on (in memory in some tests);
	// files to ingest must be written through it.
	FS    vfs.FS
	dir   string
	cache *pebble.Cache
	opts  *pebble.Options

	// closeMu orders Metrics (which may run from a metrics scrape at any
	// time) against Close.
	closeMu sync.RWMutex
	closed  bool

	// flushes counts completed memtable flushes and ingestions (see
	// Flushes).
	flushes *atomic.Uint64
	// rampFlushing: a flushRamp is running.
	rampFlushing atomic.Bool
}

// Open opens (creating if needed) the engine in dir.
func Open(dir string, opts Options) (*Engine, error) {
	if opts.Comparer == nil {
		return nil, errors.New("storage: open " + dir + ": no comparer (open DocDB engines with docdb.EngineOptions)")
	}
	if opts.CacheSize == 0 {
		opts.CacheSize = 128 << 20
	}
	if opts.MemTableSize == 0 {
		opts.MemTableSize = 64 << 20
	}
	// Pebble charges the memtables to the block cache (Cache.Reserve): the
	// mutable one and one recycled one, each up to MemTableSize. Without
	// room for them the reservation takes the whole cache (64 MiB
	// memtables and a 128 MiB cache left no block cached at all).
	cache := pebble.NewCache(opts.CacheSize + 2*int64(opts.MemTableSize))
	po := &pebble.Options{
		Comparer:                    opts.Comparer,
		Cache:                       cache,
		MemTableSize:                opts.MemTableSize,
		FormatMajorVersion:          pebble.FormatNewest,
		DisableWAL:                  opts.DisableWAL,
		DisableAutomaticCompactions: opts.DisableAutomaticCompactions,
		Logger:                      quietLogger{},
	}
	// Bloom filters of the key prefixes (Comparer.Split) on every level: a
	// point lookup (SeekPrefixGE) skips the sstables that cannot hold its
	// row instead of reading a data block of each.
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		po.Levels[i].FilterType = pebble.TableFilter
	}
	flushes := new(atomic.Uint64)
	var opened atomic.Pointer[Engine]
	po.EventListener = &pebble.EventListener{
		FlushEnd: func(info pebble.FlushInfo) {
			if info.Err == nil {
				flushes.Add(1)
			}
		},
		TableIngested: func(pebble.TableIngestInfo) { flushes.Add(1) },
		// A single deletion that met more than one Set of its key would let
		// an older value reappear: the intents deleted that way must never
		// be written twice (docdb.deleteOnce).
		PossibleAPIMisuse: func(info pebble.PossibleAPIMisuseInfo) {
			if info.Kind == pebble.NondeterministicSingleDelete {
				singleDeleteMisuses.Add(1)
				slog.Error("storage: single deletion of a key written more than once", "dir", dir, "key", fmt.Sprintf("%x", info.UserKey))
			}
		},
		// A new WAL: a memtable was rotated.
		WALCreated: func(pebble.WALCreateInfo) {
			if e := opened.Load(); e != nil && e.rampFlushing.CompareAndSwap(false, true) {
				go e.flushRamp()
			}
		},
	}
	po.FS = vfs.Default
	if opts.InMemory {
		po.FS = vfs.NewMem()
	}
	if opts.WrapFS != nil {
		po.FS = opts.WrapFS(po.FS)
	}
	po.EnsureDefaults()
	db, err := pebble.Open(dir, po)
	if err != nil {
		cache.Unref()
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	e := &Engine{DB: db, FS: po.FS, dir: dir, cache: cache, opts: po, flushes: flushes}
	opened.Store(e)
	return e, nil
}

// rampMemtables is how many memtables a ramping engine holds before
// flushRamp flushes them.
const rampMemtables = 4

// flushRamp flushes the memtables of an engine still ramping up. Pebble
// starts a new engine's memtables at 256 KiB, doubles each next one up to
// MemTableSize, and flushes none until the queued ones add up to half of
// it: a fresh node held 8 memtables, and every point read seeked all 8
// skiplists (memtables have no bloom filters; sstables do), which was a
// third of a node's CPU under a point-read load. Once the ramp is over (a
// memtable of full size), rotations leave the queue short by themselves.
func (e *Engine) flushRamp() {
	defer e.rampFlushing.Store(false)
	e.WhileOpen(func() {
		m := e.DB.Metrics()
		if m.MemTable.Count >= rampMemtables && m.MemTable.Size < e.opts.MemTableSize {
			rampFlushes.Add(1)
			// Wait for it: its own rotation must not start another.
			if done, err := e.DB.AsyncFlush(); err == nil {
				<-done
			}
		}
	})
}

// singleDeleteMisuses counts the single deletions Pebble found meeting a
// key written more than once, in any engine of the process.
var singleDeleteMisuses atomic.Uint64

// SingleDeleteMisuses returns how many single deletions flushes and
// compactions found meeting a key written more than once: always 0 unless
// a caller broke deleteOnce's rule (tests check it).
func SingleDeleteMisuses() uint64 { return singleDeleteMisuses.Load() }

// rampFlushes counts the flushes flushRamp asked for (tests).
var rampFlushes atomic.Int64

// SSTWriterOptions are the options of an sstable to ingest into the engine
// (snapshots): its comparer, key schema and filters, in the engine's table
// format.
func (e *Engine) SSTWriterOptions() sstable.WriterOptions {
	return e.opts.MakeWriterOptions(0, e.DB.TableFormat())
}

// Dir returns the directory the engine lives in.
func (e *Engine) Dir() string { return e.dir }

// Metrics returns Pebble's metrics, or nil once the engine is closed.
func (e *Engine) Metrics() *pebble.Metrics {
	e.closeMu.RLock()
	defer e.closeMu.RUnlock()
	if e.closed {
		return nil
	}
	return e.DB.Metrics()
}

// WhileOpen runs fn with the engine held open (Close waits for it) and
// reports true, or reports false without running fn once it is closed.
func (e *Engine) WhileOpen(fn func()) bool {
	e.closeMu.RLock()
	defer e.closeMu.RUnlock()
	if e.closed {
		return false
	}
	fn()
	return true
}

// Flushes counts the memtable flushes and file ingestions completed since
// the engine opened: when it moves, data that was only in the memtable may
// now be in sstables (which EstimateDiskUsage counts).
func (e *Engine) Flushes() uint64 { return e.flushes.Load() }

// Close closes the engine and releases its cache.
func (e *Engine) Close() error {
	e.closeMu.Lock()
	e.closed = true
	e.closeMu.Unlock()
	err := e.DB.Close()
	e.cache.Unref()
	return err
}

// quietLogger drops Pebble's informational chatter but keeps errors visible.
type quietLogger struct{}

func (quietLogger) Infof(string, ...interface{}) {}
func (quietLogger) Errorf(format string, args ...interface{}) {
	pebble.DefaultLogger.Errorf(format, args...)
}
func (quietLogger) Fatalf(format string, args ...interface{}) {
	pebble.DefaultLogger.Fatalf(format, args...)
}

// Sync is the write option for writes that must be durable before they are
// acknowledged (raft log and hard state).
var Sync = pebble.Sync

// NoSync is the write option for writes whose durability comes from
// elsewhere (applied state, which the raft log can replay).
var NoSync = pebble.NoSync
