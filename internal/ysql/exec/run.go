// Package exec runs YSQL plans against the cluster through the client and
// implements the pgwire session: transaction blocks, statement preparation
// and re-planning when the catalog moves, DDL, SET/SHOW, and the mapping of
// errors to SQLSTATEs.
package exec

import (
	"context"
	"slices"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// runner evaluates plan nodes for one statement execution.
type runner struct {
	s   *Session
	ctx context.Context
	ec  *plan.EvalContext
	txn *client.Txn // nil: reads outside a transaction
	// unlocked is the point-get source of a read committed UPDATE or
	// DELETE that reads its row without a lock; since is the time it read
	// at, and the statement's write of the row fails if the row changed
	// after it (see readCommittedWrite).
	unlocked *plan.Scan
	since    hlc.Timestamp
	// closers release what the statement's sources hold (a sort's run
	// files) when it ends.
	closers *closers
	// skipFKs: the statement's writes need no foreign-key work (TRUNCATE
	// in a block, of every table on both sides).
	skipFKs bool
	// acct counts the memory the statement holds (mem.go); nil: none.
	acct *memAccount
}

// sub is a runner of a subquery or the inner side of a lateral join for
// one outer row (ec): its closers release what its sources hold when it is
// done, not at the statement's end once per outer row. It counts to the
// statement's account.
func (r *runner) sub(ec *plan.EvalContext) *runner {
	return &runner{s: r.s, ctx: r.ctx, txn: r.txn, ec: ec, closers: &closers{}, acct: r.acct}
}

// subquery runs sq for one outer row (ec) and returns its rows: as many as
// its kind needs (EXISTS one, a scalar subquery two: more is an error),
// counted as held by the statement. Those of a correlated subquery are
// given back once it ran, as its result is used for that row only.
func (r *runner) subquery(ec *plan.EvalContext, sq *plan.Subquery) ([]plan.Row, error) {
	want := -1
	switch sq.Kind {
	case plan.ExistsSubquery:
		want = 1
	case plan.ScalarSubquery:
		want = 2
	}
	sub := r.sub(ec)
	defer sub.closers.run()
	src, err := sub.open(sq.Plan)
	if err != nil {
		return nil, err
	}
	h := heldRows{acct: r.acct, what: "a subquery"}
	var out []plan.Row
	for len(out) != want {
		row, err := src.next()
		if err != nil {
			return nil, err
		}
		if row == nil {
			break
		}
		out = append(out, row)
		if err := h.add(row); err != nil {
			return nil, err
		}
	}
	if err := h.flush(); err != nil {
		return nil, err
	}
	if sq.Correlated {
		h.release()
	}
	return out, nil
}

// closers are functions run once when a statement ends.
type closers struct {
	fs []func()
	// acct, when set, is closed after fs: the statement's memory account.
	acct *memAccount
}

// onClose runs f when the statement ends (at once if the runner has no
// statement to end with: its sources are read to the end, which releases
// them, or fail).
func (r *runner) onClose(f func()) {
	if r.closers != nil {
		r.closers.fs = append(r.closers.fs, f)
	}
}

func (c *closers) run() {
	if c == nil {
		return
	}
	for _, f := range c.fs {
		f()
	}
	c.fs = nil
	if c.acct != nil {
		c.acct.close()
		c.acct = nil
	}
}

// rows runs n to completion and returns its rows, counted as held by the
// statement (mem.go).
func (r *runner) rows(n plan.Node) ([]plan.Row, error) {
	switch x := n.(type) {
	case *plan.Values:
		out := make([]plan.Row, 0, len(x.Rows))
		for _, exprs := range x.Rows {
			row, err := r.evalAll(exprs, nil)
			if err != nil {
				return nil, err
			}
			out = append(out, row)
		}
		return out, nil
	case *plan.Rows:
		return x.Data, nil
	case *plan.FuncScan:
		if x.Iter != nil {
			return r.collect(x)
		}
		args, err := r.evalAll(x.Args, nil)
		if err != nil {
			return nil, err
		}
		rows, err := x.Fn(r.ec.Location, args)
		if err != nil || !x.Ordinality {
			return rows, err
		}
		for i := range rows {
			rows[i] = append(rows[i], types.DInt(int64(i+1)))
		}
		return rows, nil
	case *plan.Scan:
		rows, err := r.scan(x)
		if err == nil {
			err = r.hold(rows, "a scan of ", x.Table.Name)
		}
		return rows, err
	case *plan.WorkTable:
		return r.s.work[x], nil
	case *plan.DMLResult:
		// A copy: a reader may let go of the rows it passed on.
		return append([]plan.Row(nil), x.Rows...), nil // counted by the recursive query
	case *plan.VirtualScan:
		all, err := x.Table.Rows()
		if err == nil {
			err = r.hold(all, "catalog relation ", x.Table.Name)
		}
		if err != nil {
			return nil, err
		}
		return r.filter(all, x.Filter)
	case *plan.Filter, *plan.Project, *plan.Truncate, *plan.DistinctNode, *plan.SetOp,
		*plan.Sort, *plan.Window, *plan.Agg, *plan.Join, *plan.RecursiveUnion, *plan.DistinctOn,
		*plan.LateralJoin, *plan.ProjectSet:
		return r.collect(x) // the same code whether the rows stream or not
	case *plan.Limit:
		return r.limit(x)
	}
	return nil, pgerror.New(pgerror.CodeInternalError, "exec: unknown plan node %T", n)
}

// collect reads every row of n, as open gives them, counting them as held.
func (r *runner) collect(n plan.Node) ([]plan.Row, error) {
	src, err := r.open(n)
	if err != nil {
		return nil, err
	}
	h := heldRows{acct: r.acct, what: "a query result"}
	var out []plan.Row
	err = each(src, func(row plan.Row) error {
		out = append(out, row)
		return h.add(row)
	})
	if err == nil {
		err = h.flush()
	}
	return out, err
}

func (r *runner) evalAll(exprs []plan.Expr, row plan.Row) (plan.Row, error) {
	out := make(plan.Row, len(exprs))
	for i, e := range exprs {
		d, err := e.Eval(r.ec, row)
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

func (r *runner) filter(in []plan.Row, cond plan.Expr) ([]plan.Row, error) {
	if cond == nil {
		return in, nil
	}
	out := in[:0]
	for _, row := range in {
		ok, err := r.holds(cond, row)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, row)
		}
	}
	return out, nil
}

func (r *runner) limit(l *plan.Limit) ([]plan.Row, error) {
	count, offset, err := r.limitBounds(l)
	if err != nil {
		return nil, err
	}
	var in []plan.Row
	if count >= 0 && count+offset <= maxTopN {
		in, err = r.topRows(l.Input, int(count+offset))
	} else {
		in, err = r.rows(l.Input)
	}
	if err != nil {
		return nil, err
	}
	if offset >= int64(len(in)) {
		return nil, nil
	}
	in = in[offset:]
	if count >= 0 && count < int64(len(in)) {
		in = in[:count]
	}
	return in, nil
}

// limitBounds evaluates a LIMIT's count (-1: none) and offset.
func (r *runner) limitBounds(l *plan.Limit) (count, offset int64, err error) {
	count = -1
	if l.Count != nil {
		d, err := l.Count.Eval(r.ec, nil)
		if err != nil {
			return 0, 0, err
		}
		if !d.Null {
			if d.I < 0 {
				return 0, 0, pgerror.New(pgerror.CodeInvalidRowCountInLimit, "LIMIT must not be negative")
			}
			count = d.I
		}
	}
	if l.Offset != nil {
		d, err := l.Offset.Eval(r.ec, nil)
		if err != nil {
			return 0, 0, err
		}
		if !d.Null {
			if d.I < 0 {
				return 0, 0, pgerror.New(pgerror.CodeInvalidRowCountInResultOffset, "OFFSET must not be negative")
			}
			offset = d.I
		}
	}
	return count, offset, nil
}

// rowKey encodes datums so that equal SQL values give equal bytes (group
// by, distinct, hash join).
func rowKey(vals []types.Datum, ts []types.T) string {
	var b []byte
	for i, d := range vals {
		if d.Null {
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		b = types.AppendKey(b, d, ts[i])
	}
	return string(b)
}

// joinRows joins the rows of j's sides: a hash join on the equi-join keys
// when there are any, else a nested loop.
func (r *runner) joinRows(j *plan.Join, left, right []plan.Row) ([]plan.Row, error) {
	hj, err := r.newHashJoin(j, right)
	if err != nil {
		return nil, err
	}
	var out []plan.Row
	for _, l := range left {
		if out, err = hj.probe(l, out); err != nil {
			return nil, err
		}
	}
	return hj.unmatched(out), nil
}

// hashJoin joins rows of j's left side, one at a time, with its right
// side's rows, hashed on the equi-join keys when there are any. A left
// row's joined rows come out one at a time (nextMatch): a left row that
// matches every row of a large right side holds one joined row, not all.
type hashJoin struct {
	r      *runner
	j      *plan.Join
	nl, nr int
	right  []plan.Row
	// index maps the right rows' key values to their places; nil: no
	// equi-join keys, every right row is a candidate (a nested loop).
	index        map[string][]int
	lts          []types.T
	matchedRight []bool

	// The left row being probed: its candidates (with an index), the next
	// to try, whether one matched; probing until its rows are out.
	l            plan.Row
	cands        []int
	pos          int
	matched      bool
	probing      bool
	unmatchedPos int      // the next right row nextUnmatched looks at
	buf          plan.Row // a joined row being tested
}

func (r *runner) newHashJoin(j *plan.Join, right []plan.Row) (*hashJoin, error) {
	hj := &hashJoin{r: r, j: j, nl: len(j.Left.Columns()), nr: len(j.Right.Columns()), right: right,
		matchedRight: make([]bool, len(right))}
	if len(j.EqRight) > 0 {
		ts := make([]types.T, len(j.EqRight))
		for i, e := range j.EqRight {
			ts[i] = e.Type()
		}
		hj.index = map[string][]int{}
		for i, row := range right {
			vals, err := r.evalAll(j.EqRight, row)
			if err != nil {
				return nil, err
			}
			if hasNull(vals) {
				continue
			}
			k := rowKey(vals, ts)
			hj.index[k] = append(hj.index[k], i)
		}
	}
	hj.lts = make([]types.T, len(j.EqLeft))
	for i, e := range j.EqLeft {
		hj.lts[i] = e.Type()
	}
	return hj, nil
}

// start begins the probe of left row l.
func (hj *hashJoin) start(l plan.Row) error {
	hj.l, hj.cands, hj.pos, hj.matched, hj.probing = l, nil, 0, false, true
	if hj.index != nil {
		vals, err := hj.r.evalAll(hj.j.EqLeft, l)
		if err != nil {
			return err
		}
		if !hasNull(vals) {
			hj.cands = hj.index[rowKey(vals, hj.lts)]
		}
	}
	return nil
}

// candidate returns the next right row to try for the probed left row.
func (hj *hashJoin) candidate() (int, bool) {
	n := len(hj.right)
	if hj.index != nil {
		n = len(hj.cands)
	}
	if hj.pos == n {
		return 0, false
	}
	hj.pos++
	if hj.index != nil {
		return hj.cands[hj.pos-1], true
	}
	return hj.pos - 1, true
}

// nextMatch returns the next joined row of the probed left row: its
// matches, then the row NULL-extended when a LEFT or FULL join found none;
// nil once they are out.
func (hj *hashJoin) nextMatch() (plan.Row, error) {
	j := hj.j
	for hj.probing {
		ri, ok := hj.candidate()
		if !ok {
			hj.probing = false
			if !hj.matched && (j.Kind == plan.LeftJoin || j.Kind == plan.FullJoin) {
				return append(append(make(plan.Row, 0, hj.nl+hj.nr), hj.l...), nulls(hj.nr)...), nil
			}
			break
		}
		row, ok, err := hj.r.joined(j.Cond, &hj.buf, hj.l, hj.right[ri])
		if err != nil {
			return nil, err
		}
		if ok {
			hj.matched, hj.matchedRight[ri] = true, true
			return row, nil
		}
	}
	return nil, nil
}

// probe appends to out the joined rows of left row l (nextMatch).
func (hj *hashJoin) probe(l plan.Row, out []plan.Row) ([]plan.Row, error) {
	if err := hj.start(l); err != nil {
		return nil, err
	}
	for {
		row, err := hj.nextMatch()
		if err != nil || row == nil {
			return out, err
		}
		out = append(out, row)
	}
}

// nextUnmatched returns the next right row no left row matched, NULL-
// extended, for a RIGHT or FULL join, once every left row was probed; nil
// at the end.
func (hj *hashJoin) nextUnmatched() plan.Row {
	if hj.j.Kind != plan.RightJoin && hj.j.Kind != plan.FullJoin {
		return nil
	}
	for hj.unmatchedPos < len(hj.right) {
		i := hj.unmatchedPos
		hj.unmatchedPos++
		if !hj.matchedRight[i] {
			return append(nulls(hj.nl), hj.right[i]...)
		}
	}
	return nil
}

// joined returns left and right joined when cond holds for them: the
// pair is tested in buf, and only a match is copied out.
func (r *runner) joined(cond plan.Expr, buf *plan.Row, left, right plan.Row) (plan.Row, bool, error) {
	*buf = append(append((*buf)[:0], left...), right...)
	ok, err := r.holds(cond, *buf)
	if err != nil || !ok {
		return nil, false, err
	}
	return slices.Clone(*buf), true, nil
}

// unmatched appends to out the rows of nextUnmatched.
func (hj *hashJoin) unmatched(out []plan.Row) []plan.Row {
	for row := hj.nextUnmatched(); row != nil; row = hj.nextUnmatched() {
		out = append(out, row)
	}
	return out
}

func hasNull(vals []types.Datum) bool {
	for _, v := range vals {
		if v.Null {
			return true
		}
	}
	return false
}

func nulls(n int) plan.Row {
	out := make(plan.Row, n)
	for i := range out {
		out[i] = types.NullDatum
	}
	return out
}

// --- table access -------------------------------------------------------

// storageRow converts a table row to the client's storage row.
func storageRow(t *catalog.Table, row plan.Row, keyOnly bool) (client.Row, error) {
	out := make(client.Row, len(t.Columns))
	for i := range t.Columns {
		c := &t.Columns[i]
		if keyOnly && !t.IsKey(i) {
			continue
		}
		if row[i].Null {
			out[catalog.StorageColumn(c)] = docdb.Null()
			continue
		}
		conv := types.ToStorage
		if t.IsKey(i) {
			conv = types.ToKeyStorage
		}
		v, err := conv(row[i], c.Type)
		if err != nil {
			return nil, err
		}
		out[catalog.StorageColumn(c)] = v
	}
	return out, nil
}

// tableRow converts a storage row to a table row.
func tableRow(t *catalog.Table, sr client.Row) (plan.Row, error) {
	row := make(plan.Row, len(t.Columns))
	for i := range t.Columns {
		c := &t.Columns[i]
		v, ok := sr[catalog.StorageColumn(c)]
		if !ok || v.IsNull() {
			row[i] = types.NullDatum
			continue
		}
		d, err := types.FromStorage(v, c.Type)
		if err != nil {
			return nil, err
		}
		row[i] = d
	}
	return row, nil
}

// tableRows converts storage rows to table rows.
func tableRows(t *catalog.Table, raw []client.Row) ([]plan.Row, error) {
	out := make([]plan.Row, 0, len(raw))
	for _, sr := range raw {
		row, err := tableRow(t, sr)
		if err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, nil
}

// keyRow builds the storage key row from the leading key values.
func (r *runner) keyValues(t *catalog.Table, exprs []plan.Expr) (client.Row, bool, error) {
	kr := client.Row{}
	for i, e := range exprs {
		d, err := e.Eval(r.ec, nil)
		if err != nil {
			return nil, false, err
		}
		if d.Null {
			return nil, false, nil // key = NULL matches nothing
		}
		c := &t.Columns[t.Key[i].Column]
		v, err := types.ToKeyStorage(d, c.Type)
		if err != nil {
			return nil, false, err
		}
		kr[catalog.StorageColumn(c)] = v
	}
	return kr, true, nil
}

func (r *runner) scan(s *plan.Scan) ([]plan.Row, error) {
	tbl, err := r.s.openTable(r.ctx, s.Table)
	if err != nil {
		return nil, err
	}
	if s.Access.Index != nil {
		return r.indexScan(s, tbl)
	}
	var raw []client.Row
	var filter plan.Expr // what of s.Filter is left to check here
	examined := -1       // rows read when a client-side filter dropped some (Keep)
	switch s.Access.Kind {
	case plan.PointGet:
		filter = s.Access.Rest
		key, ok, err := r.keyValues(s.Table, s.Access.Eq)
		if err != nil || !ok {
			return nil, err
		}
		var row client.Row
		var found bool
		// An UPDATE or DELETE of one row under snapshot isolation (every
		// autocommit statement) reads it without a lock: its write fails
		// on any version newer than the snapshot, waiting for a pending
		// writer first, as the lock would, so the lock's Raft round buys
		// nothing.
		switch {
		case r.txn != nil && s == r.unlocked:
			row, found, r.since, err = r.txn.ReadForWrite(r.ctx, tbl, key)
		case r.txn != nil && s.Lock != plan.NoLock && !r.writesUnlocked(s):
			row, found, err = r.txn.GetForUpdate(r.ctx, tbl, key, lockMode(s.Lock), waitPolicy(s.Wait))
		case r.txn != nil:
			// Only the columns the query reads: a transaction that wrote
			// them answers from its own writes, without a read.
			row, found, err = r.txn.Get(r.ctx, tbl, key, projection(s)...)
		default:
			row, found, err = tbl.Get(r.ctx, key, projection(s)...)
		}
		if err != nil {
			return nil, err
		}
		if found {
			raw = []client.Row{row}
		}
	default:
		var opts client.ScanOptions
		var ok bool
		if opts, filter, ok, err = r.scanOptions(s, &examined); err != nil || !ok {
			return nil, err
		}
		raw, err = r.scanRows(tbl, opts)
		if err != nil {
			return nil, err
		}
	}
	if examined < 0 {
		examined = len(raw)
	}
	r.s.noteRead(s, 0, examined)
	out, err := tableRows(s.Table, raw)
	if err != nil {
		return nil, err
	}
	out, err = r.filter(out, filter)
	if err != nil {
		return nil, err
	}
	if s.Lock != plan.NoLock && s.Access.Kind != plan.PointGet && r.txn != nil && len(out) > 0 && !r.writesUnlocked(s) {
		return r.lockRows(s, tbl, out)
	}
	return out, nil
}

// writesUnlocked reports whether s, the rows of an UPDATE or DELETE, is
// read without row locks: under snapshot isolation (every autocommit
// statement) the writes that follow fail on any version newer than the
// snapshot, waiting for a pending writer first as the lock would, so the
// lock's Raft round and its check of every row buy nothing.
func (r *runner) writesUnlocked(s *plan.Scan) bool {
	return s.ForWrite && r.txn != nil && r.txn.Isolation() == client.Snapshot
}

// scanOptions are the client scan options of a table scan that is not a
// point get, and the rest of its filter to evaluate over the rows read;
// ok is false when its key range is empty. A Keep filter counts the rows
// it examines in examined.
func (r *runner) scanOptions(s *plan.Scan, examined *int) (opts client.ScanOptions, filter plan.Expr, ok bool, err error) {
	filter = r.pushOptions(s, &opts)
	if filter != nil && opts.Limit == 0 && s.Lock == plan.NoLock && s.Wait != plan.SkipLocked && r.s.pushdownEnabled() {
		// A LIMIT over a filter the tablets cannot evaluate: filter
		// each page as it comes, and stop once the limit is met,
		// rather than read the whole table first.
		if n := r.limitHint(s); n > 0 {
			opts.Limit, opts.Keep = n, r.keeper(s.Table, filter, examined)
			filter = nil
		}
	}
	if s.Access.Kind == plan.KeyRange {
		if ok, err := r.rangeBounds(s, &opts); err != nil || !ok {
			return opts, nil, false, err
		}
	}
	return opts, filter, true, nil
}

// keeper is filter as a client-side scan filter (client.ScanOptions.Keep)
// over the storage rows of table t; it counts the rows it sees in
// examined (from 0; one goroutine, as a scan with a Limit calls it).
func (r *runner) keeper(t *catalog.Table, filter plan.Expr, examined *int) func(client.Row) (bool, error) {
	*examined = 0
	return func(raw client.Row) (bool, error) {
		*examined++
		rows, err := tableRows(t, []client.Row{raw})
		if err != nil {
			return false, err
		}
		rows, err = r.filter(rows, filter)
		return len(rows) == 1, err
	}
}

// pushOptions sets what a table or index scan asks of the tablets besides
// its key bounds: its direction and, with the pushdown on, the filter they
// evaluate, the columns (an index scan reads whole index rows) and its
// limit when they evaluate the whole filter (a locking scan keeps its
// filter here).
// It returns the rest of the scan's filter, to evaluate over the rows read.
func (r *runner) pushOptions(s *plan.Scan, opts *client.ScanOptions) plan.Expr {
	opts.Reverse = s.Reverse
	if !r.s.pushdownEnabled() {
		return s.Filter
	}
	var filter plan.Expr
	opts.Filter, filter = r.remoteFilter(s)
	if s.Access.Index == nil {
		opts.Columns = projection(s)
	}
	// SKIP LOCKED could skip rows a limit counted.
	if s.Wait != plan.SkipLocked && (s.Filter == nil || filter == nil && s.Lock == plan.NoLock) {
		opts.Limit = r.limitHint(s)
	}
	return filter
}

// rangeBounds sets the scan bounds of a key-range access: the equal prefix
// plus the bounds on the next key column.
func (r *runner) rangeBounds(s *plan.Scan, opts *client.ScanOptions) (bool, error) {
	t := s.Table
	prefix, ok, err := r.keyValues(t, s.Access.Eq)
	if err != nil || !ok {
		return false, err
	}
	next := t.Key[len(s.Access.Eq)]
	return r.setKeyBounds(opts, prefix, &t.Columns[next.Column], next.Desc, s.Access.Lo, s.Access.Hi)
}

// setKeyBounds sets opts to the keys that start with prefix (fixed leading
// key columns) and, when col is set, have the next key column col (stored
// descending with desc) within lo and hi (either may be nil). Exclusive
// bounds are widened to inclusive: the kept filter drops the edge rows. ok
// is false when a bound is NULL, so that no row can match.
func (r *runner) setKeyBounds(opts *client.ScanOptions, prefix client.Row, col *catalog.Column, desc bool, lo, hi plan.Expr) (bool, error) {
	opts.Start, opts.End, opts.EndInclusive = prefix, prefix, true
	if col != nil {
		bound := func(e plan.Expr) (client.Row, bool, error) {
			d, err := e.Eval(r.ec, nil)
			if err != nil || d.Null {
				return nil, false, err
			}
			v, err := types.ToKeyStorage(d, col.Type)
			if err != nil {
				return nil, false, err
			}
			row := client.Row{}
			for k, v := range prefix {
				row[k] = v
			}
			row[catalog.StorageColumn(col)] = v
			return row, true, nil
		}
		if desc {
			lo, hi = hi, lo
		}
		if lo != nil {
			row, ok, err := bound(lo)
			if err != nil || !ok {
				return false, err
			}
			opts.Start = row
		}
		if hi != nil {
			row, ok, err := bound(hi)
			if err != nil || !ok {
				return false, err
			}
			opts.End = row
		}
	}
	if len(opts.Start) == 0 {
		opts.Start = nil
	}
	if len(opts.End) == 0 {
		opts.End, opts.EndInclusive = nil, false
	}
	return true, nil
}

// scanRows reads the rows opts selects, in the statement's transaction when
// there is one.
func (r *runner) scanRows(tbl *client.Table, opts client.ScanOptions) ([]client.Row, error) {
	if r.txn != nil {
		return r.txn.Scan(r.ctx, tbl, opts)
	}
	return tbl.ScanAll(r.ctx, opts)
}

// lockBatch is the most rows one lock request of a locking scan takes.
const lockBatch = 1024

// lockRows locks scanned rows (SELECT ... FOR UPDATE over a range, the
// rows of an UPDATE or DELETE) and, with SKIP LOCKED, leaves out those it
// could not lock. Under READ COMMITTED the rows were read before the locks
// were taken, perhaps while another transaction held them and changed
// them: they are read again once locked, latest versions, and s's filter
// decides again (PostgreSQL's re-check of an updated row), or an UPDATE
// would write values computed from a stale row and lose the other's.
func (r *runner) lockRows(s *plan.Scan, tbl *client.Table, rows []plan.Row) ([]plan.Row, error) {
	if len(rows) > lockBatch {
		// One lock request per batch, in order: a request for every row
		// of a large table outlasted the RPC deadline.
		var out []plan.Row
		for len(rows) > 0 {
			n := min(len(rows), lockBatch)
			locked, err := r.lockRows(s, tbl, rows[:n])
			if err != nil {
				return nil, err
			}
			out, rows = append(out, locked...), rows[n:]
		}
		return out, nil
	}
	keys := make([]client.Row, len(rows))
	for i, row := range rows {
		k, err := storageRow(s.Table, row, true)
		if err != nil {
			return nil, err
		}
		keys[i] = k
	}
	skipped, err := r.txn.Lock(r.ctx, tbl, keys, lockMode(s.Lock), waitPolicy(s.Wait))
	if err != nil {
		return nil, err
	}
	if len(skipped) > 0 {
		if rows, keys, err = withoutSkipped(tbl, rows, keys, skipped); err != nil {
			return nil, err
		}
	}
	if r.txn.Isolation() != client.ReadCommitted || len(keys) == 0 {
		return rows, nil
	}
	latest, err := r.getRows(s.Table, tbl, keys, true)
	if err != nil {
		return nil, err
	}
	return r.filter(latest, s.Filter)
}

// withoutSkipped drops the rows (and their keys) that SKIP LOCKED left
// unlocked.
func withoutSkipped(tbl *client.Table, rows []plan.Row, keys, skipped []client.Row) ([]plan.Row, []client.Row, error) {
	skip := map[string]bool{}
	for _, k := range skipped {
		rk, err := tbl.RowKey(k)
		if err != nil {
			return nil, nil, err
		}
		skip[string(rk)] = true
	}
	var outRows []plan.Row
	var outKeys []client.Row
	for i, row := range rows {
		rk, err := tbl.RowKey(keys[i])
		if err != nil {
			return nil, nil, err
		}
		if !skip[string(rk)] {
			outRows, outKeys = append(outRows, row), append(outKeys, keys[i])
		}
	}
	return outRows, outKeys, nil
}

func lockMode(l plan.LockStrength) client.LockMode {
	switch l {
	case plan.LockKeyShare:
		return client.ForKeyShare
	case plan.LockShare:
		return client.ForShare
	case plan.LockNoKeyUpdate:
		return client.ForNoKeyUpdate
	}
	return client.ForUpdate
}

func waitPolicy(w plan.WaitPolicy) client.WaitPolicy {
	switch w {
	case plan.NoWait:
		return client.NoWait
	case plan.SkipLocked:
		return client.SkipLocked
	}
	return client.WaitOnConflict
}

// openWindow computes the window calls (the ranking functions) as the
// rows pass: for each call the rows, with the values of the calls before,
// are sorted by its partition and order keys (an external sort past
// work_mem) and numbered in that order, so a window query holds no more
// than a sort. The rows come out in the order of the last call's sort, as
// PostgreSQL's do.
func (r *runner) openWindow(w *plan.Window) (rowSource, error) {
	in, err := r.open(w.Input)
	if err != nil {
		return nil, err
	}
	return r.windowRows(&truncateSource{in: in, n: len(w.Input.Columns())}, w.Calls)
}

// windowRows appends the values of calls to the rows of src.
func (r *runner) windowRows(src rowSource, calls []plan.WindowCall) (rowSource, error) {
	for _, call := range calls {
		var keys []plan.SortKey
		for _, p := range call.Partition {
			keys = append(keys, plan.SortKey{E: p})
		}
		keys = append(keys, call.Order...)
		ex := &externalSort{r: r, keys: keys, budget: r.s.workMem(), mem: r.newHeld("a window's sort")}
		r.onClose(ex.close)
		sorted, err := ex.sort(src)
		if err != nil {
			return nil, err
		}
		var order []plan.Expr
		for _, k := range call.Order {
			order = append(order, k.E)
		}
		switch {
		case call.Name == "row_number" || call.Name == "rank" || call.Name == "dense_rank":
			src = &rankSource{r: r, in: sorted, call: call, order: order}
		case call.Agg != nil && call.Frame == nil:
			// A peer group at a time: the partition's keys, then the order's.
			peers := append(append([]plan.Expr(nil), call.Partition...), order...)
			src = &aggWindowSource{partitionReader: partitionReader{r: r, in: sorted, keys: peers}, call: call}
		case call.Name == "lag" || call.Name == "lead":
			src = &offsetSource{partitionReader: partitionReader{r: r, in: sorted, keys: call.Partition}, call: call}
		default: // frames, value functions, ntile, percent_rank, cume_dist
			src = &frameSource{partitionReader: partitionReader{r: r, in: sorted, keys: call.Partition}, call: call, order: order}
		}
	}
	return src, nil
}

// rankSource appends a ranking function's value to rows sorted by its
// partition and order keys.
type rankSource struct {
	r                 *runner
	in                rowSource
	call              plan.WindowCall
	order             []plan.Expr
	started           bool
	prevPart, prevOrd []types.Datum
	num, rank, dense  int64
}

func (x *rankSource) next() (plan.Row, error) {
	row, err := x.in.next()
	if err != nil || row == nil {
		return nil, err
	}
	part, err := x.r.evalAll(x.call.Partition, row)
	if err != nil {
		return nil, err
	}
	ord, err := x.r.evalAll(x.order, row)
	if err != nil {
		return nil, err
	}
	if !x.started || !sameValues(part, x.prevPart, x.call.Partition) {
		x.started = true
		x.num, x.rank, x.dense, x.prevOrd = 0, 0, 0, nil
	}
	x.num++
	if x.prevOrd == nil || !sameValues(ord, x.prevOrd, x.order) {
		x.rank, x.dense = x.num, x.dense+1
	}
	x.prevPart, x.prevOrd = part, ord
	v := x.num
	switch x.call.Name {
	case "rank":
		v = x.rank
	case "dense_rank":
		v = x.dense
	}
	return append(row[:len(row):len(row)], types.DInt(v)), nil
}

// aggWindowSource appends an aggregate's value over the default window
// frame to rows sorted by the window's partition and order keys: each row
// gets the aggregate of its partition's rows up to its last peer (rows
// with its order keys), so a peer group is read whole before its rows go
// out (a partition, without order keys). Its partitionReader's keys are
// the partition's then the order's: a "partition" there is a peer group.
type aggWindowSource struct {
	partitionReader
	call    plan.WindowCall
	agg     plan.Aggregator
	partKey []types.Datum // the window partition of the last peer group
	started bool
	val     types.Datum // the current peer group's value
}

func (x *aggWindowSource) next() (plan.Row, error) {
	if x.pos == len(x.part) {
		if err := x.readPartition(); err != nil || len(x.part) == 0 {
			return nil, err
		}
		key, err := x.r.evalAll(x.call.Partition, x.part[0])
		if err != nil {
			return nil, err
		}
		if !x.started || !sameValues(key, x.partKey, x.call.Partition) {
			x.started, x.partKey, x.agg = true, key, x.call.Agg.New()
		}
		for _, row := range x.part {
			args, err := aggArgs(x.r.ec, x.call.Agg, row)
			if err != nil {
				return nil, err
			}
			if err := x.agg.Add(args); err != nil {
				return nil, err
			}
		}
		if x.val, err = x.agg.Result(); err != nil {
			return nil, err
		}
	}
	row := x.part[x.pos]
	x.pos++
	return append(row[:len(row):len(row)], x.val), nil
}

// partitionReader reads rows sorted by their partition keys a partition
// at a time.
type partitionReader struct {
	r    *runner
	in   rowSource
	keys []plan.Expr // the partition keys

	part     []plan.Row // the current partition
	pos      int        // the next of its rows to go out
	next1    plan.Row   // the first row of the next partition
	nextPart []types.Datum
	ended    bool
	mem      *heldRows // the partition's rows, counted
}

// readPartition reads the next partition's rows.
func (x *partitionReader) readPartition() error {
	if x.mem == nil {
		x.mem = x.r.newHeld("a window partition")
	}
	x.mem.release()
	x.part, x.pos = x.part[:0], 0
	var key []types.Datum
	if x.next1 != nil {
		x.part, key = append(x.part, x.next1), x.nextPart
		x.next1 = nil
	}
	for !x.ended {
		row, err := x.in.next()
		if err != nil {
			return err
		}
		if row == nil {
			x.ended = true
			break
		}
		part, err := x.r.evalAll(x.keys, row)
		if err != nil {
			return err
		}
		if len(x.part) > 0 && !sameValues(part, key, x.keys) {
			x.next1, x.nextPart = row, part
			break
		}
		x.part, key = append(x.part, row), part
		if err := x.mem.add(row); err != nil {
			return err
		}
	}
	return nil
}

// offsetSource appends lag's or lead's value to rows sorted by the
// window's partition and order keys: a partition is read whole, then each
// row gets the value of the row offset before (lag) or after (lead) it in
// the partition, or the default.
type offsetSource struct {
	partitionReader
	call plan.WindowCall
}

func (x *offsetSource) next() (plan.Row, error) {
	if x.pos == len(x.part) {
		if err := x.readPartition(); err != nil || len(x.part) == 0 {
			return nil, err
		}
	}
	i, row := x.pos, x.part[x.pos]
	x.pos++
	off, err := x.call.Args[1].Eval(x.r.ec, row)
	if err != nil {
		return nil, err
	}
	v := types.NullDatum
	if !off.Null {
		j := int64(i) - off.I
		if x.call.Name == "lead" {
			j = int64(i) + off.I
		}
		if j >= 0 && j < int64(len(x.part)) {
			v, err = x.call.Args[0].Eval(x.r.ec, x.part[j])
		} else {
			v, err = x.call.Args[2].Eval(x.r.ec, row)
		}
		if err != nil {
			return nil, err
		}
	}
	return append(row[:len(row):len(row)], v), nil
}

// sameValues compares two rows of key values (NULLs equal each other).
func sameValues(a, b []types.Datum, exprs []plan.Expr) bool {
	for i := range a {
		switch {
		case a[i].Null || b[i].Null:
			if a[i].Null != b[i].Null {
				return false
			}
		case types.Compare(a[i], b[i], exprs[i].Type()) != 0:
			return false
		}
	}
	return true
}
