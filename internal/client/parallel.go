package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/shaledb/shaledb/internal/docdb"
)

// Parallel scans. A scan that wants everything (ScanAll and Txn.Scan
// without a limit, the aggregates) first sends one request, whose answer
// fixes the read time, as the Scanner's first page does; then it cuts what
// remains at the tablet boundaries of the meta cache into pieces, and reads
// the pieces at once, each with a Scanner of its own at that read time
// (which pages, and follows splits and moves inside its piece as any scan
// does). Rows come back per piece and are concatenated in key order;
// partial aggregates are merged.

// parallelism is how many pieces the scan reads at once.
func (sc *Scanner) parallelism() int {
	if p := sc.opts.Parallelism; p > 0 {
		return p
	}
	return max(8, 4*runtime.GOMAXPROCS(0))
}

// pieces cuts what remains of the scan, [lo, hi), at the starts of the
// cached tablets into scanners of their own, in key order. The pieces tile
// the range whatever the cache says, so a stale view costs only balance.
func (sc *Scanner) pieces() ([]*Scanner, error) {
	t := sc.t
	ctx, cancel := t.c.opContext(sc.ctx)
	defer cancel()
	m, err := t.c.cache.get(ctx, t.id, nil)
	if err != nil {
		return nil, (&sender{c: t.c}).finish(ctx, "scan", t, err)
	}
	var out []*Scanner
	lo := sc.lo
	for _, tab := range m.tablets {
		if bytes.Compare(tab.start, lo) <= 0 {
			continue
		}
		if sc.hi != nil && bytes.Compare(tab.start, sc.hi) >= 0 {
			break
		}
		out = append(out, sc.piece(lo, tab.start))
		lo = tab.start
	}
	return append(out, sc.piece(lo, sc.hi)), nil
}

func (sc *Scanner) piece(lo, hi []byte) *Scanner {
	return &Scanner{t: sc.t, ctx: sc.ctx, opts: sc.opts, proj: sc.proj, pd: sc.pd,
		lo: lo, hi: hi, readTime: sc.readTime, txn: sc.txn, remaining: -1}
}

// runPieces runs fn on every piece, sc.parallelism() at a time; the first
// error cancels the others and is returned.
func (sc *Scanner) runPieces(pieces []*Scanner, fn func(i int, p *Scanner) error) error {
	ctx, cancel := context.WithCancel(sc.ctx)
	defer cancel()
	for _, p := range pieces {
		p.ctx = ctx
	}
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for w := 0; w < min(sc.parallelism(), len(pieces)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= len(pieces) {
					return
				}
				if err := fn(i, pieces[i]); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	if first == nil && sc.ctx.Err() != nil {
		// Cancelled from outside before every piece ran.
		first = (&sender{c: sc.t.c}).finish(sc.ctx, "scan", sc.t, sc.ctx.Err())
	}
	return first
}

// all returns the remaining rows of the scan, in scan order: in parallel
// (see above) unless a limit or Parallelism 1 makes it sequential.
func (sc *Scanner) all() ([]Row, error) {
	out := sc.buf
	sc.buf = nil
	if sc.err != nil {
		return nil, sc.err
	}
	if sc.remaining >= 0 || sc.parallelism() == 1 {
		for sc.Next() {
			out = append(out, sc.Row())
		}
		return out, sc.Err()
	}
	if !sc.done && sc.readTime == 0 {
		rows, err := sc.fetchRows()
		if err != nil {
			sc.err = err
			return nil, err
		}
		out = append(out, rows...)
	}
	if sc.done {
		return out, nil
	}
	pieces, err := sc.pieces()
	if err == nil {
		results := make([][]Row, len(pieces))
		err = sc.runPieces(pieces, func(i int, p *Scanner) error {
			for p.Next() {
				results[i] = append(results[i], p.Row())
			}
			return p.Err()
		})
		for i := range results {
			if sc.opts.Reverse {
				i = len(results) - 1 - i
			}
			out = append(out, results[i]...)
		}
	}
	sc.done = true
	if err != nil {
		sc.err = err
		return nil, err
	}
	return out, nil
}

// aggregateAll computes the scan's aggregates: partial results of every
// request, merged (per group with GroupBy).
func (sc *Scanner) aggregateAll() (*docdb.AggMerger, error) {
	if sc.err != nil {
		return nil, sc.err
	}
	acc := sc.pd.merger()
	if !sc.done && (sc.readTime == 0 || sc.parallelism() == 1) {
		if err := sc.aggregatePages(acc, sc.parallelism() == 1); err != nil {
			return nil, err
		}
	}
	if sc.done {
		return acc, nil
	}
	pieces, err := sc.pieces()
	if err != nil {
		sc.err = err
		return nil, err
	}
	var mu sync.Mutex
	err = sc.runPieces(pieces, func(_ int, p *Scanner) error {
		part := sc.pd.merger()
		if err := p.aggregatePages(part, true); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if err := acc.Merge(part); err != nil {
			return sc.badAnswer(err)
		}
		return sc.checkGroups(acc)
	})
	sc.done = true
	if err != nil {
		sc.err = err
		return nil, err
	}
	return acc, nil
}

// aggregatePages merges into acc the partial results of the next request
// of the scan, or with all of every request until the scan is done.
func (sc *Scanner) aggregatePages(acc *docdb.AggMerger, all bool) error {
	for !sc.done {
		resp, err := sc.fetch()
		if err != nil {
			return err
		}
		if resp == nil {
			break
		}
		if len(resp.GetRows()) > 0 {
			// A server that does not know group columns alone read rows.
			return sc.badAnswer(errors.New("rows in the answer to an aggregate read"))
		}
		part := make([]docdb.Value, 0, len(resp.GetAggregates()))
		for _, raw := range resp.GetAggregates() {
			v, err := docdb.DecodeValue(raw)
			if err != nil {
				return sc.badAnswer(err)
			}
			part = append(part, v)
		}
		if err := acc.Add(part); err != nil {
			return sc.badAnswer(err)
		}
		if err := sc.checkGroups(acc); err != nil {
			return err
		}
		if !all {
			break
		}
	}
	return nil
}

// ErrTooManyGroups: a grouped aggregate read has more groups than
// ScanOptions.MaxMergedGroups.
var ErrTooManyGroups = errors.New("client: more groups than the aggregate read may hold")

func (sc *Scanner) checkGroups(acc *docdb.AggMerger) error {
	if max := sc.opts.MaxMergedGroups; max > 0 && len(acc.Rows()) > max {
		return ErrTooManyGroups
	}
	return nil
}

func (sc *Scanner) badAnswer(err error) error {
	return (&sender{c: sc.t.c}).finish(sc.ctx, "aggregate", sc.t, fmt.Errorf("%w: %v", errBadRow, err))
}
