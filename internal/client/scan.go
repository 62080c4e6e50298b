package client

import (
	"bytes"
	"context"
	"errors"
	"slices"

	"github.com/shaledb/shaledb/internal/hlc"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// ScanOptions configure a Scan. Rows come in key order (for a hash table,
// hash order: a full scan visits every tablet from hash 0x0000 up).
type ScanOptions struct {
	// Start and End bound the scan by key prefixes: every hash key column
	// or none, then leading range key columns. Rows at or above Start and
	// below End are returned; with EndInclusive, rows with End's prefix
	// too. Empty: the table's start or end.
	Start, End   Row
	EndInclusive bool
	// StartKey and EndKey, if set, are raw row-key bounds [StartKey,
	// EndKey) used instead of Start and End.
	StartKey, EndKey []byte
	// Limit caps the number of rows (0: no limit).
	Limit int
	// Reverse scans from the end down.
	Reverse bool
	// PageSize is the number of rows asked of a tablet per request
	// (default 1000).
	PageSize int
	ReadOptions

	// Filter, if set, keeps only the rows for which it is TRUE; the
	// tablets evaluate it next to the data, and Limit counts the rows it
	// keeps.
	Filter *Filter
	// Keep, if set, is a filter the client evaluates on every row the
	// tablets return (after Filter): a row scan returns only the rows it
	// accepts, and Limit counts those, so that a scan with a filter the
	// tablets cannot evaluate (the SQL layer's) still ends once it has
	// Limit rows. A parallel scan (no Limit) calls it from several
	// goroutines. Its error ends the scan as it is.
	Keep func(Row) (bool, error)
	// Aggregates are what Table.Aggregate and Txn.Aggregate compute; a
	// row scan refuses them.
	Aggregates []Aggregate
	// GroupBy names the columns Table.AggregateGroups and
	// Txn.AggregateGroups group the rows by; a row scan refuses them.
	GroupBy []string
	// MaxGroups bounds the groups a tablet holds per request of a grouped
	// aggregate (0: the server's default, 10,000): past it the request
	// ends with its partial rows, and the read goes on.
	MaxGroups int
	// MaxMergedGroups bounds the groups this side holds while it merges
	// the tablets' (0: no bound): past it the read fails with
	// ErrTooManyGroups, and the caller can group the rows itself (the SQL
	// layer's aggregate spills to disk).
	MaxMergedGroups int
	// MaxScanRows bounds the rows a tablet examines per request when a
	// filter or aggregates are pushed down (0: the server's default,
	// 10,000): a request that finds few qualifying rows still ends, with
	// fewer rows than PageSize, and the scan goes on.
	MaxScanRows int
	// Parallelism is how many tablets ScanAll, Txn.Scan and the aggregates
	// read at once (0: max(8, 4*GOMAXPROCS); 1: one after another). A scan
	// with a Limit, and the Scanner's own iteration, read one tablet after
	// another.
	Parallelism int
}

// Scanner iterates over the rows of a Scan:
//
//	sc := t.Scan(ctx, opts)
//	for sc.Next() {
//		row := sc.Row()
//	}
//	err := sc.Err()
//
// Every page after the first reads at the first page's hybrid time, so the
// scan sees one snapshot of the table (except in a SERIALIZABLE
// transaction, where every page reads the latest data and read-locks the
// span it covered). Each request to a tablet has the client's operation
// deadline; with a Filter a request may return no rows (see MaxScanRows),
// and Next goes on to the next one.
type Scanner struct {
	t    *Table
	ctx  context.Context
	opts ScanOptions
	proj *tspb.Projection
	pd   *pushdown // filter and aggregates, nil if none

	lo, hi    []byte // what remains: [lo, hi), hi nil unbounded
	readTime  uint64
	txn       *tspb.TxnReadOptions // inside a transaction
	onLock    func(*tabletMeta)    // told of each tablet before a page locks a span of it
	remaining int                  // rows still allowed; -1: no limit
	keepPage  int                  // rows asked by the last page of a scan with Keep and a limit
	done      bool

	buf []Row
	row Row
	err error

	// readAhead: the next page is read in the background while the
	// caller works through the last one (Txn.Stream). ahead brings it;
	// such reads use ctx, which then has no cancel, and waitCtx ends the
	// caller's wait.
	readAhead bool
	ahead     chan aheadPage
	waitCtx   context.Context
	// parts: the rest of a stream's range cut at the tablets, read after
	// buf, in scan order (Txn.Stream).
	parts []*Scanner
}

type aheadPage struct {
	rows []Row
	err  error
}

// Scan starts a scan; see Scanner.
func (t *Table) Scan(ctx context.Context, opts ScanOptions) *Scanner {
	sc := t.newScanner(ctx, opts)
	if (len(opts.Aggregates) > 0 || len(opts.GroupBy) > 0) && sc.err == nil {
		sc.err = (&sender{c: t.c}).finish(ctx, "scan", t, invalidf("aggregates in a row scan (use Aggregate)"))
		sc.done = true
	}
	return sc
}

func (t *Table) newScanner(ctx context.Context, opts ScanOptions) *Scanner {
	sc := &Scanner{t: t, ctx: ctx, opts: opts, remaining: -1}
	if opts.Limit > 0 {
		sc.remaining = opts.Limit
	}
	if sc.opts.PageSize <= 0 {
		sc.opts.PageSize = 1000
	}
	sc.err = sc.bounds()
	if sc.err == nil {
		sc.proj, sc.err = t.projection(opts.Columns)
	}
	if sc.err == nil {
		sc.pd, sc.err = t.compilePushdown(&sc.opts)
	}
	if sc.err != nil {
		sc.err = (&sender{c: t.c}).finish(ctx, "scan", t, sc.err)
		sc.done = true
	}
	return sc
}

func (sc *Scanner) bounds() error {
	t, o := sc.t, &sc.opts
	if o.StartKey != nil || o.EndKey != nil {
		sc.lo, sc.hi = o.StartKey, o.EndKey
	} else {
		var err error
		if sc.lo, err = t.keyPrefix(o.Start); err != nil {
			return err
		}
		end, err := t.keyPrefix(o.End)
		if err != nil {
			return err
		}
		switch {
		case len(o.End) == 0:
			sc.hi = prefixEnd(end) // the table's end
		case o.EndInclusive:
			sc.hi = prefixEnd(end)
		default:
			sc.hi = end
		}
	}
	if len(sc.hi) == 0 {
		sc.hi = nil
	}
	if sc.hi != nil && bytes.Compare(sc.lo, sc.hi) >= 0 {
		sc.done = true
	}
	return nil
}

// Next advances to the next row; false at the end or on an error.
func (sc *Scanner) Next() bool {
	if len(sc.buf) == 0 && sc.parts != nil {
		return sc.nextPart()
	}
	for len(sc.buf) == 0 {
		if sc.err != nil {
			return false
		}
		if sc.ahead != nil {
			select {
			case p := <-sc.ahead:
				sc.ahead = nil
				sc.buf, sc.err = p.rows, p.err
			case <-sc.waitCtx.Done():
				// The read goes on unwatched; the scan is over.
				sc.err = (&sender{c: sc.t.c}).finish(sc.waitCtx, "scan", sc.t, sc.waitCtx.Err())
			}
			continue
		}
		if sc.done {
			return false
		}
		sc.buf, sc.err = sc.page()
	}
	if sc.readAhead && sc.ahead == nil && !sc.done && sc.err == nil {
		sc.ahead = make(chan aheadPage, 1)
		go func(ch chan<- aheadPage) {
			rows, err := sc.page()
			ch <- aheadPage{rows, err}
		}(sc.ahead)
	}
	sc.row, sc.buf = sc.buf[0], sc.buf[1:]
	return true
}

// nextPart is Next over the parts of a stream.
func (sc *Scanner) nextPart() bool {
	for sc.err == nil && len(sc.parts) > 0 {
		p := sc.parts[0]
		p.waitCtx = sc.waitCtx
		if p.Next() {
			sc.row = p.row
			return true
		}
		sc.err = p.err
		sc.parts[0] = nil
		sc.parts = sc.parts[1:]
	}
	return false
}

// split cuts what remains of a stream's range at the tablets and reads the
// first page of every part at once (a few at a time), as ScanAll does: a
// stream over many tablets that finds few rows in each takes one round,
// not one per tablet, and holds a page per tablet at most. A scan with a
// limit stays whole: it would read past the limit.
func (sc *Scanner) split() error {
	if sc.done || sc.err != nil || sc.remaining >= 0 || sc.parallelism() == 1 {
		return sc.err
	}
	parts, err := sc.pieces()
	if err != nil || len(parts) < 2 {
		return err
	}
	if err := sc.runPieces(parts, func(_ int, p *Scanner) error { return p.prefetch() }); err != nil {
		return err
	}
	if sc.opts.Reverse {
		slices.Reverse(parts)
	}
	for _, p := range parts {
		p.readAhead = true // its context: the caller's (Txn.Stream)
	}
	sc.parts, sc.done = parts, true
	return nil
}

// prefetch reads the first non-empty page (or finds the end) unless a
// page is at hand.
func (sc *Scanner) prefetch() error {
	if len(sc.buf) == 0 && !sc.done && sc.err == nil {
		sc.buf, sc.err = sc.page()
	}
	return sc.err
}

// SetContext makes the scan's later requests use ctx: a scan whose pages
// are pulled by several calls, each with a context of its own.
func (sc *Scanner) SetContext(ctx context.Context) {
	if sc.readAhead {
		sc.waitCtx = ctx
	} else {
		sc.ctx = ctx
	}
}

// Row is the current row.
func (sc *Scanner) Row() Row { return sc.row }

// Err is the error that ended the scan, if any.
func (sc *Scanner) Err() error { return sc.err }

// ScanAll runs a scan and returns every row, in key order. Without a
// Limit it reads the tablets in parallel (see ScanOptions.Parallelism) at
// one read time.
func (t *Table) ScanAll(ctx context.Context, opts ScanOptions) ([]Row, error) {
	return t.Scan(ctx, opts).all()
}

// page fetches the next non-empty page of rows, or finds the end.
func (sc *Scanner) page() ([]Row, error) {
	for !sc.done {
		rows, err := sc.fetchRows()
		if err != nil || len(rows) > 0 {
			return rows, err
		}
	}
	return nil, nil
}

// fetchRows makes the next request of a row scan and returns its rows
// (maybe none: a filter may have dropped them all).
func (sc *Scanner) fetchRows() ([]Row, error) {
	resp, err := sc.fetch()
	if err != nil || resp == nil {
		return nil, err
	}
	rows := make([]Row, 0, len(resp.GetRows()))
	for _, r := range resp.GetRows() {
		row, err := sc.t.decodeRow(r)
		if err != nil {
			return nil, (&sender{c: sc.t.c}).finish(sc.ctx, "scan", sc.t, err)
		}
		rows = append(rows, row)
	}
	rows, err = keepRows(rows, sc.opts.Keep)
	if err != nil {
		return nil, err
	}
	if sc.remaining >= 0 {
		rows = rows[:min(len(rows), sc.remaining)] // Keep's pages may bring more
		sc.remaining -= len(rows)
		if sc.remaining <= 0 {
			sc.done = true
		}
	}
	return rows, nil
}

// fetch sends the next request of the scan to the tablet holding what
// remains and moves past what the answer covered; nil when nothing
// remains. The first answer fixes the scan's read time. Each request has
// the client's operation deadline.
func (sc *Scanner) fetch() (*tspb.ScanResponse, error) {
	t := sc.t
	s := &sender{c: t.c}
	ctx, cancel := t.c.opContext(sc.ctx)
	defer cancel()
	var stale *tableMeta
	var b backoff
	for !sc.done {
		m, err := t.c.cache.get(ctx, t.id, stale)
		if err != nil {
			if IsTableNotFound(err) || ctx.Err() != nil {
				return nil, s.finish(ctx, "scan", t, err)
			}
			s.note(err, false)
			if !b.wait(ctx) {
				return nil, s.finish(ctx, "scan", t, ctx.Err())
			}
			continue
		}
		tab := sc.nextTablet(m)
		if tab == nil {
			sc.done = true
			break
		}
		var limit int
		if !sc.pd.aggregate() {
			limit = sc.opts.PageSize
			switch {
			case sc.remaining >= 0 && sc.opts.Keep != nil:
				// The client drops rows: ask for what remains, then
				// twice as many each page, so that a selective filter
				// costs a few requests, not one per row.
				sc.keepPage = max(2*sc.keepPage, sc.remaining)
				limit = min(limit, sc.keepPage)
			case sc.remaining >= 0:
				limit = min(limit, sc.remaining)
			}
		}
		readTime := sc.readTime
		if sc.locking() {
			// Every page reads the latest data under its lock.
			readTime = 0
			if sc.onLock != nil {
				sc.onLock(tab)
			}
		}
		var resp *tspb.ScanResponse
		scan := func(consistency tspb.ReadConsistency) call {
			return func(ctx context.Context, rep *replica) (*tspb.TabletError, error) {
				req := &tspb.ScanRequest{TabletId: tab.id, Span: &tspb.Span{Start: sc.lo, End: sc.hi},
					Projection: sc.proj, Limit: uint32(limit), Reverse: sc.opts.Reverse, ReadTime: readTime,
					Consistency: consistency, MaxStalenessMs: sc.opts.staleness(), ClientTime: t.c.now(), Txn: sc.txnOptions()}
				if pd := sc.pd; pd != nil {
					req.Filter, req.Aggregates, req.KeyColumnIds = pd.wire, pd.aggs, pd.keyIDs
					req.GroupByColumnIds = pd.groupBy
					req.MaxScanRows = uint32(max(sc.opts.MaxScanRows, 0))
					req.MaxGroups = uint32(max(sc.opts.MaxGroups, 0))
				}
				r, err := t.c.scanAt(ctx, rep.addr, req)
				if err != nil {
					return nil, err
				}
				t.c.observe(r.GetServerTime())
				resp = r
				return r.GetError(), nil
			}
		}
		if !sc.opts.FollowerReads || !t.c.tryFollower(ctx, s, tab, scan(tspb.ReadConsistency_FOLLOWER_BOUNDED_STALENESS)) {
			err = s.toTablet(ctx, tab, scan(tspb.ReadConsistency_LEADER))
		}
		var re *rerouteError
		if errors.As(err, &re) {
			stale = m
			if !b.wait(ctx) {
				return nil, s.finish(ctx, "scan", t, ctx.Err())
			}
			continue
		}
		if err != nil {
			return nil, s.finish(ctx, "scan", t, err)
		}
		if sc.readTime == 0 || sc.locking() {
			sc.readTime = max(sc.readTime, resp.GetReadTime())
		}
		sc.advance(tab, resp.GetResumeSpan())
		return resp, nil
	}
	return nil, nil
}

// locking reports whether every page read-locks the span it covers.
func (sc *Scanner) locking() bool { return sc.txn.GetLockRange() }

// txnOptions are the transaction options of the next page: once the
// first page fixed the read time, the server may no longer move it.
func (sc *Scanner) txnOptions() *tspb.TxnReadOptions {
	if sc.txn == nil {
		return nil
	}
	o := &tspb.TxnReadOptions{TxnId: sc.txn.GetTxnId(), GlobalLimit: sc.txn.GetGlobalLimit(), AllowRestart: sc.txn.GetAllowRestart(),
		LockRange: sc.txn.GetLockRange(), WriteId: sc.txn.GetWriteId(), WaitPolicy: sc.txn.GetWaitPolicy()}
	if sc.readTime != 0 && o.AllowRestart && !o.LockRange {
		o.AllowRestart = false
		if o.GlobalLimit == 0 {
			o.GlobalLimit = uint64(hlc.Timestamp(sc.readTime).Add(sc.t.c.clock.MaxOffset()))
		}
	}
	return o
}

// nextTablet is the tablet holding the next rows of the scan, or nil when
// no tablet overlaps what remains.
func (sc *Scanner) nextTablet(m *tableMeta) *tabletMeta {
	if !sc.opts.Reverse {
		i := m.firstEndingAfter(sc.lo)
		if i == len(m.tablets) {
			return nil
		}
		tab := m.tablets[i]
		if sc.hi != nil && bytes.Compare(tab.start, sc.hi) >= 0 {
			return nil
		}
		return tab
	}
	i := m.lastStartingBefore(sc.hi)
	if i < 0 {
		return nil
	}
	tab := m.tablets[i]
	if tab.end != nil && bytes.Compare(tab.end, sc.lo) <= 0 {
		return nil
	}
	return tab
}

// advance narrows what remains after a page from tab: to the resume span
// if the page was cut short, else past the tablet.
func (sc *Scanner) advance(tab *tabletMeta, resume *tspb.Span) {
	switch {
	case resume != nil && !sc.opts.Reverse:
		sc.lo = resume.GetStart()
	case resume != nil:
		sc.hi = resume.GetEnd()
	case !sc.opts.Reverse:
		if tab.end == nil {
			sc.done = true
		} else if bytes.Compare(tab.end, sc.lo) > 0 {
			sc.lo = tab.end
		}
	default:
		if bytes.Compare(tab.start, sc.lo) <= 0 {
			sc.done = true
		} else {
			sc.hi = tab.start
		}
	}
	if sc.hi != nil && bytes.Compare(sc.lo, sc.hi) >= 0 {
		sc.done = true
	}
}
