package exec

import (
	"context"
	"fmt"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Streaming results. A query whose rows come from a table or index scan,
// through filters, projections, a LIMIT, DISTINCT, set operations and
// joins on the scan's side (the left), hands its rows to the client as the
// scan's pages arrive instead of holding them all: a SELECT of a large
// table runs in the memory of a few pages and its first rows reach the
// client at once. What needs every row first (a sort, an aggregate, a
// join's right side) reads its input whole. The first streamAfter rows are
// read before any is sent, so a statement with a small result runs, and
// is retried after a read restart or conflict, exactly as one that is not
// streamed; past them the statement's rows come from a resultStream, and
// an error ends the statement, as in YugabyteDB once its output buffer
// was sent. Streams run in a transaction block (portals and cursors) and
// in a statement's own transaction, which the stream commits at its end; a
// statement in the batch's implicit transaction is read whole. runner.rows
// reads the same sources to the end where it needs all rows.

// streamAfter is how many rows a statement reads before it streams the
// rest.
const streamAfter = 10000

// rowSource yields a plan's rows one at a time.
type rowSource interface {
	// next returns the next row; nil at the end.
	next() (plan.Row, error)
}

// open returns the rows of n as a source: pulled from the scan beneath
// when n streams, else read whole.
func (r *runner) open(n plan.Node) (rowSource, error) {
	switch x := n.(type) {
	case *plan.Scan:
		if src, ok, err := r.openScan(x); err != nil || ok {
			return src, err
		}
	case *plan.FuncScan:
		if x.Iter != nil {
			args, err := r.evalAll(x.Args, nil)
			if err != nil {
				return nil, err
			}
			next, err := x.Iter(r.ec.Location, args)
			if err != nil {
				return nil, err
			}
			return &funcSource{gen: next, ordinality: x.Ordinality}, nil
		}
	case *plan.Filter:
		in, err := r.open(x.Input)
		if err != nil {
			return nil, err
		}
		return &filterSource{r: r, in: in, cond: x.Cond}, nil
	case *plan.Project:
		in, err := r.open(x.Input)
		if err != nil {
			return nil, err
		}
		return &projectSource{r: r, in: in, exprs: x.Exprs}, nil
	case *plan.Truncate:
		in, err := r.open(x.Input)
		if err != nil {
			return nil, err
		}
		return &truncateSource{in: in, n: x.N}, nil
	case *plan.Join:
		return r.openJoin(x)
	case *plan.LateralJoin:
		left, err := r.open(x.Left)
		if err != nil {
			return nil, err
		}
		ls := &lateralSource{r: r, j: x, left: left}
		r.onClose(ls.closeSub)
		return ls, nil
	case *plan.ProjectSet:
		in, err := r.open(x.Input)
		if err != nil {
			return nil, err
		}
		return &projectSetSource{r: r, ps: x, in: in, gens: make([]func() (plan.Row, error), len(x.Calls))}, nil
	case *plan.DistinctNode:
		in, err := r.open(x.Input)
		if err != nil {
			return nil, err
		}
		d := r.newDistinct(in, x.N, x.Input.Columns())
		r.s.noteSpill(x, d.spill.explain)
		return d, nil
	case *plan.DistinctOn:
		in, err := r.open(x.Input)
		if err != nil {
			return nil, err
		}
		return &distinctOnSource{in: in, keys: x.Keys, cols: x.Columns()}, nil
	case *plan.SetOp:
		return r.openSetOp(x)
	case *plan.RecursiveUnion:
		return r.openRecursive(x)
	case *plan.Sort:
		return r.openSort(x)
	case *plan.Agg:
		return r.openAggregate(x)
	case *plan.Window:
		return r.openWindow(x)
	case *plan.Limit:
		if !sortsFirst(x.Input) {
			count, offset, err := r.limitBounds(x)
			if err != nil {
				return nil, err
			}
			in, err := r.open(x.Input)
			if err != nil {
				return nil, err
			}
			return &limitSource{in: in, skip: offset, left: count}, nil
		}
	}
	rows, err := r.rows(n)
	return &sliceSource{rows: rows}, err
}

// openJoin joins as j's left side gives its rows (a scan's, page by
// page): a batched lookup join per batch of them, a hash join (or nested
// loop) of each with the right side, read whole first.
func (r *runner) openJoin(j *plan.Join) (rowSource, error) {
	if j.Swapped != nil {
		// The lookup join of the sides exchanged; rows put back in j's
		// column order, under j's condition.
		in, err := r.openJoin(j.Swapped)
		if err != nil {
			return nil, err
		}
		return &swapSource{r: r, in: in, nr: len(j.Right.Columns()), cond: j.Cond}, nil
	}
	if j.Lookup != nil {
		left, err := r.open(j.Left)
		if err != nil {
			return nil, err
		}
		return &lookupSource{r: r, j: j, left: left}, nil
	}
	right, err := r.openRightSide(j)
	if err != nil {
		return nil, err
	}
	left, err := r.open(j.Left)
	if err != nil {
		return nil, err
	}
	switch {
	case right.spill != nil:
		return r.newGraceJoin(j, left, right.spill), nil
	case right.file != nil:
		return r.newNestedLoop(j, left, right.file), nil
	}
	hj, err := r.newHashJoin(j, right.rows)
	if err != nil {
		return nil, err
	}
	return &joinSource{hj: hj, left: left}, nil
}

// joinSource joins the left rows, as they come, with a right side held by
// hj, a joined row at a time.
type joinSource struct {
	hj   *hashJoin
	left rowSource
	done bool // the left rows are out: the right's unmatched ones follow
}

func (x *joinSource) next() (plan.Row, error) {
	for {
		row, err := x.hj.nextMatch()
		if err != nil || row != nil {
			return row, err
		}
		if x.done {
			return x.hj.nextUnmatched(), nil
		}
		l, err := x.left.next()
		if err != nil {
			return nil, err
		}
		if l == nil {
			x.done = true
			continue
		}
		if err := x.hj.start(l); err != nil {
			return nil, err
		}
	}
}

// lateralSource joins each left row, as they come, with the rows the
// lateral side gives for it, run then and read as they are joined:
// neither side is held.
type lateralSource struct {
	r    *runner
	j    *plan.LateralJoin
	left rowSource
	l    plan.Row
	sub  *runner   // runs the lateral side for l
	in   rowSource // its rows
}

func (x *lateralSource) next() (plan.Row, error) {
	for {
		if x.in != nil {
			x.sub.ctx = x.r.ctx // a streamed statement reads over several calls
			row, err := x.in.next()
			if err != nil {
				return nil, err
			}
			if row != nil {
				return append(append(make(plan.Row, 0, len(x.l)+len(row)), x.l...), row...), nil
			}
			x.closeSub()
		}
		l, err := x.left.next()
		if err != nil || l == nil {
			return nil, err
		}
		x.l, x.sub = l, x.r.sub(x.r.ec.WithOuter(l))
		if x.in, err = x.sub.open(x.j.Sub); err != nil {
			return nil, err
		}
	}
}

// closeSub releases what the lateral side's run holds.
func (x *lateralSource) closeSub() {
	if x.sub != nil {
		x.sub.closers.run()
		x.sub, x.in = nil, nil
	}
}

type swapSource struct {
	r    *runner
	in   rowSource
	nr   int // columns of j's right side, first in the swapped join's rows
	cond plan.Expr
}

func (x *swapSource) next() (plan.Row, error) {
	for {
		row, err := x.in.next()
		if err != nil || row == nil {
			return nil, err
		}
		out := append(append(make(plan.Row, 0, len(row)), row[x.nr:]...), row[:x.nr]...)
		if ok, err := x.r.holds(x.cond, out); err != nil || ok {
			return out, err
		}
	}
}

// distinctSource passes the first row of each value of its first n
// columns, in input order: it holds their keys, not the rows. Past
// work_mem it takes no new key: a row with a key it does not hold goes to
// a file by the key's hash (hashSpill), and once the input ends each file
// is read back the same way, its rows passed after the others'.
type distinctSource struct {
	in     rowSource
	n      int
	ts     []types.T
	seen   map[string]bool
	held   int64
	budget int64
	level  int
	spill  *hashSpill
	mem    *heldRows // the keys held, counted
}

func (r *runner) newDistinct(in rowSource, n int, cols []plan.Column) *distinctSource {
	ts := make([]types.T, n)
	for i := range ts {
		ts[i] = cols[i].T
	}
	return &distinctSource{in: in, n: n, ts: ts, seen: map[string]bool{}, budget: r.s.workMem(), spill: newHashSpill(r, "distinct"),
		mem: r.newHeld("a DISTINCT")}
}

func (x *distinctSource) next() (plan.Row, error) {
	for {
		row, err := x.in.next()
		if err != nil {
			return nil, err
		}
		if row == nil {
			if err := x.spill.endPass(x.level); err != nil {
				return nil, err
			}
			in, level, ok := x.spill.next()
			if !ok {
				return nil, nil
			}
			x.in, x.level, x.seen, x.held = in, level, map[string]bool{}, 0
			x.mem.release()
			continue
		}
		k := rowKey(row[:x.n], x.ts)
		switch {
		case x.seen[k]:
		case x.held > x.budget && x.level < maxAggLevels:
			if err := x.spill.write(k, x.level, row); err != nil {
				return nil, err
			}
		default:
			x.seen[k] = true
			x.held += int64(len(k)) + 64
			return row, x.mem.addBytes(int64(len(k)) + 64)
		}
	}
}

// openSetOp streams the left side of a set operation: UNION [ALL] then
// streams the right side; INTERSECT and EXCEPT count the right side's rows
// first. Both sides are opened at once, so each reads at the statement's
// time however long the client takes.
func (r *runner) openSetOp(s *plan.SetOp) (rowSource, error) {
	left, err := r.open(s.Left)
	if err != nil {
		return nil, err
	}
	cols := s.Columns()
	if s.Op == "union" {
		right, err := r.open(s.Right)
		if err != nil {
			return nil, err
		}
		var in rowSource = &concatSource{ins: []rowSource{left, right}}
		if !s.All {
			d := r.newDistinct(in, len(cols), cols)
			r.s.noteSpill(s, d.spill.explain)
			in = d
		}
		return in, nil
	}
	right, err := r.open(s.Right)
	if err != nil {
		return nil, err
	}
	x := &setOpSource{r: r, s: s, left: left, ts: make([]types.T, len(cols)), counts: map[string]int{}, seen: map[string]bool{}}
	for i, c := range cols {
		x.ts[i] = c.T
	}
	return x, x.countRight(right)
}

// maxRecursiveBytes bounds what a recursive WITH query holds at once: one
// run's rows (the next run's work table) and, without ALL, every row it
// gave. PostgreSQL spills them to disk and has no bound; a node's memory
// is shared by all its sessions.
const maxRecursiveBytes = 1 << 30

// openRecursive runs a recursive WITH query (plan.RecursiveUnion): the
// non-recursive term's rows, then the recursive term's, run again over the
// rows the previous run gave until a run gives none. The rows stream: a
// LIMIT above ends an endless recursion, as in PostgreSQL.
func (r *runner) openRecursive(ru *plan.RecursiveUnion) (rowSource, error) {
	cur, err := r.open(ru.NonRec)
	if err != nil {
		return nil, err
	}
	if r.s.work == nil {
		r.s.work = map[*plan.WorkTable][]plan.Row{}
	}
	r.onClose(func() { delete(r.s.work, ru.Work) })
	x := &recursiveSource{r: r, ru: ru, cur: cur, mem: r.newHeld("recursive query " + ru.Name)}
	if !ru.All {
		x.seen = map[string]bool{}
		for _, c := range ru.Columns() {
			x.ts = append(x.ts, c.T)
		}
	}
	return x, nil
}

type recursiveSource struct {
	r    *runner
	ru   *plan.RecursiveUnion
	cur  rowSource
	gave []plan.Row      // this run's rows: the next run's work table
	seen map[string]bool // without ALL: every row given
	ts   []types.T
	// held is the size of seen, gaveBytes of gave.
	held, gaveBytes int64
	mem             *heldRows // seen and the work tables, counted
	workBytes       int64     // of the work table being read
}

func (x *recursiveSource) next() (plan.Row, error) {
	for {
		row, err := x.cur.next()
		if err != nil {
			return nil, err
		}
		if row == nil {
			if len(x.gave) == 0 {
				delete(x.r.s.work, x.ru.Work)
				return nil, nil
			}
			// An endless recursion runs until cancelled.
			if err := x.r.ctx.Err(); err != nil {
				return nil, err
			}
			x.r.s.work[x.ru.Work] = x.gave
			x.mem.shrinkBy(x.workBytes) // the work table read goes
			x.gave, x.gaveBytes, x.workBytes = nil, 0, x.gaveBytes
			if x.cur, err = x.r.open(x.ru.Recursive); err != nil {
				return nil, err
			}
			continue
		}
		if x.seen != nil {
			k := rowKey(row, x.ts)
			if x.seen[k] {
				continue
			}
			x.seen[k] = true
			x.held += int64(len(k)) + 48
			if err := x.mem.addBytes(int64(len(k)) + 48); err != nil {
				return nil, err
			}
		}
		size := rowSize(row)
		x.gaveBytes += size
		if err := x.mem.addBytes(size); err != nil {
			return nil, err
		}
		if x.held+x.gaveBytes > maxRecursiveBytes {
			return nil, pgerror.New(pgerror.CodeProgramLimitExceeded,
				"recursive query %q holds more than %d MB of rows", x.ru.Name, maxRecursiveBytes>>20)
		}
		x.gave = append(x.gave, row)
		return row, nil
	}
}

type concatSource struct {
	ins []rowSource
}

func (x *concatSource) next() (plan.Row, error) {
	for len(x.ins) > 0 {
		row, err := x.ins[0].next()
		if err != nil || row != nil {
			return row, err
		}
		x.ins = x.ins[1:]
	}
	return nil, nil
}

// setOpSource is INTERSECT [ALL] or EXCEPT [ALL] of the left rows against
// the counts of the right side's. Past work_mem the counts go to files by
// the hash of their row (key and count), then so does every left row, by
// the same hash, and each pair of files is done in memory (hashSpill).
type setOpSource struct {
	r      *runner
	s      *plan.SetOp
	left   rowSource
	ts     []types.T
	counts map[string]int
	seen   map[string]bool

	rights, lefts *hashSpill // past work_mem
	pairs         []joinPair
	cur           *joinPair
}

// countRight counts the right side's rows by key.
func (x *setOpSource) countRight(right rowSource) error {
	budget, held := x.r.s.workMem(), int64(0)
	mem := x.r.newHeld("a set operation")
	for {
		row, err := right.next()
		if err != nil || row == nil {
			return err
		}
		k := rowKey(row, x.ts)
		if x.rights != nil {
			if err := x.rights.write(k, 0, countRecord(k, 1)); err != nil {
				return err
			}
			continue
		}
		if x.counts[k]++; x.counts[k] == 1 {
			held += int64(len(k)) + 64
			if err := mem.addBytes(int64(len(k)) + 64); err != nil {
				return err
			}
		}
		if held > budget {
			x.rights = newHashSpill(x.r, "set operation")
			x.r.s.noteSpill(x.s, func() string { return spillsExplain(x.rights, x.lefts) })
			for k, n := range x.counts {
				if err := x.rights.write(k, 0, countRecord(k, n)); err != nil {
					return err
				}
			}
			x.counts = nil
			mem.release()
		}
	}
}

// countRecord is a spilled count: the key, then how many rows have it.
func countRecord(k string, n int) plan.Row {
	return plan.Row{{B: []byte(k)}, {I: int64(n)}}
}

// partition sends every left row to the file of its key, then lists the
// pairs of files to do.
func (x *setOpSource) partition() error {
	x.lefts = newHashSpill(x.r, "set operation")
	x.lefts.seed = x.rights.seed
	err := each(x.left, func(row plan.Row) error { return x.lefts.write(rowKey(row, x.ts), 0, row) })
	if err != nil {
		return err
	}
	// A right file no left row reaches gives nothing out.
	x.pairs, err = pairFiles(x.rights, x.lefts, false)
	x.left = &sliceSource{}
	return err
}

// nextPair loads the counts of the next pair of files; false when none
// is left.
func (x *setOpSource) nextPair() (bool, error) {
	if x.cur != nil {
		x.cur.close()
		x.cur = nil
	}
	if x.lefts == nil {
		if err := x.partition(); err != nil {
			return false, err
		}
	}
	if len(x.pairs) == 0 {
		return false, nil
	}
	x.cur = &x.pairs[0]
	x.pairs = x.pairs[1:]
	x.counts, x.seen = map[string]int{}, map[string]bool{}
	if x.cur.right != nil {
		for {
			rec, err := x.cur.right.read()
			if err != nil {
				return false, err
			}
			if rec == nil {
				break
			}
			c, err := decodeRow(rec)
			if err != nil {
				return false, err
			}
			x.counts[string(c[0].B)] += int(c[1].I)
		}
	}
	x.left = &spilledRows{f: x.cur.left}
	return true, nil
}

func (x *setOpSource) next() (plan.Row, error) {
	s := x.s
	if x.rights != nil && x.lefts == nil { // the left rows go to files first
		if ok, err := x.nextPair(); err != nil || !ok {
			return nil, err
		}
	}
	for {
		row, err := x.left.next()
		if err != nil {
			return nil, err
		}
		if row == nil {
			if x.rights == nil {
				return nil, nil
			}
			if ok, err := x.nextPair(); err != nil || !ok {
				return nil, err
			}
			continue
		}
		k := rowKey(row, x.ts)
		in := x.counts[k] > 0
		if s.Op == "intersect" && in || s.Op == "except" && !in {
			if !s.All && x.seen[k] {
				continue
			}
			x.seen[k] = true
			if s.All && s.Op == "intersect" {
				x.counts[k]--
			}
			return row, nil
		}
		if s.All && s.Op == "except" && in {
			x.counts[k]--
		}
	}
}

// pop takes the first row of *rows.
func pop(rows *[]plan.Row) plan.Row {
	row := (*rows)[0]
	(*rows)[0] = nil
	*rows = (*rows)[1:]
	return row
}

// each calls fn with every row of src in turn, until the end or an error.
func each(src rowSource, fn func(plan.Row) error) error {
	for {
		row, err := src.next()
		if err != nil || row == nil {
			return err
		}
		if err := fn(row); err != nil {
			return err
		}
	}
}

// drain reads the rest of src.
func drain(src rowSource) ([]plan.Row, error) {
	var out []plan.Row
	err := each(src, func(row plan.Row) error { out = append(out, row); return nil })
	return out, err
}

// sortsFirst reports whether n is a sort (under the truncation of its
// extra ORDER BY columns), which a LIMIT reads as a top-N instead.
func sortsFirst(n plan.Node) bool {
	if t, ok := n.(*plan.Truncate); ok {
		n = t.Input
	}
	_, ok := n.(*plan.Sort)
	return ok
}

// openScan streams a table or index scan that does not read by point get;
// ok is false for the others, and for those the transaction must read
// whole (Txn.Stream). A locking scan (FOR UPDATE, the rows of an UPDATE or
// DELETE) locks its rows a batch at a time as they pass (lockingSource).
func (r *runner) openScan(s *plan.Scan) (rowSource, bool, error) {
	if s.Access.Kind == plan.PointGet || r.s.reads != nil || r.txn == nil {
		return nil, false, nil
	}
	tbl, err := r.s.openTable(r.ctx, s.Table)
	if err != nil {
		return nil, false, err
	}
	var src rowSource
	var ok bool
	if s.Access.Index != nil {
		src, ok, err = r.openIndexScan(s, tbl)
	} else {
		src, ok, err = r.openTableScan(s, tbl)
	}
	if err != nil || !ok || s.Lock == plan.NoLock || r.writesUnlocked(s) {
		return src, ok, err
	}
	batch := lockBatch
	if n := r.limitHint(s); n > 0 && n < batch {
		batch = n
	}
	return &lockingSource{r: r, s: s, tbl: tbl, in: src, batch: batch}, true, nil
}

// openTableScan streams a scan of the table itself.
func (r *runner) openTableScan(s *plan.Scan, tbl *client.Table) (rowSource, bool, error) {
	examined := 0
	opts, filter, ok, err := r.scanOptions(s, &examined)
	if err != nil {
		return nil, false, err
	}
	if !ok {
		return &sliceSource{}, true, nil // an empty key range
	}
	sc, ok, err := r.txn.Stream(r.ctx, tbl, opts)
	if err != nil || !ok {
		return nil, false, err
	}
	return &scanSource{r: r, s: s, sc: sc, filter: filter}, true, nil
}

// lockingSource locks the rows of a scan a batch at a time, in the scan's
// order, and passes on those it locked (lockRows: under READ COMMITTED
// their newest versions, if they still qualify). An UPDATE of a million
// rows then holds and locks a batch of them at once, not every one, and
// each lock request stays small. A batch starts at the scan's LIMIT, when
// smaller, and doubles: SELECT ... FOR UPDATE SKIP LOCKED LIMIT 1 locks
// about one row, not every row it could.
type lockingSource struct {
	r     *runner
	s     *plan.Scan
	tbl   *client.Table
	in    rowSource // the scan, unlocked
	batch int       // rows to lock next
	out   []plan.Row
}

func (x *lockingSource) next() (plan.Row, error) {
	for len(x.out) == 0 {
		var rows []plan.Row
		for len(rows) < x.batch {
			row, err := x.in.next()
			if err != nil {
				return nil, err
			}
			if row == nil {
				break
			}
			rows = append(rows, row)
		}
		if len(rows) == 0 {
			return nil, nil
		}
		locked, err := x.r.lockRows(x.s, x.tbl, rows)
		if err != nil {
			return nil, err
		}
		x.out = locked
		x.batch = min(2*x.batch, lockBatch)
	}
	return pop(&x.out), nil
}

// openIndexScan streams an index scan: the index rows a page at a time,
// and the table rows of each batch of them read at once (as indexScan
// reads them all).
func (r *runner) openIndexScan(s *plan.Scan, tbl *client.Table) (rowSource, bool, error) {
	itbl, opts, filter, ok, err := r.indexScanOptions(s)
	if err != nil {
		return nil, false, err
	}
	if !ok {
		return &sliceSource{}, true, nil // an empty key range
	}
	sc, ok, err := r.txn.Stream(r.ctx, itbl, opts)
	if err != nil || !ok {
		return nil, false, err
	}
	return &indexSource{r: r, s: s, tbl: tbl, sc: sc, filter: filter}, true, nil
}

type indexSource struct {
	r      *runner
	s      *plan.Scan
	tbl    *client.Table
	sc     *client.Scanner // over the index
	filter plan.Expr       // what the tablets do not evaluate
	out    []plan.Row      // rows of the last batch not yet returned
}

func (x *indexSource) next() (plan.Row, error) {
	t := x.s.Table
	for len(x.out) == 0 {
		x.sc.SetContext(x.r.ctx)
		var raw []client.Row
		for len(raw) < plan.LookupBatch && x.sc.Next() {
			raw = append(raw, x.sc.Row())
		}
		if err := x.sc.Err(); err != nil || len(raw) == 0 {
			return nil, err
		}
		var rows []plan.Row
		var err error
		if x.s.Access.IndexOnly {
			rows, err = tableRows(t, raw) // columns the index lacks read as NULL: the query reads none
		} else {
			rows, err = x.r.baseRows(t, x.s.Access.Index, x.tbl, raw)
		}
		if err != nil {
			return nil, err
		}
		if x.out, err = x.r.filter(rows, x.filter); err != nil {
			return nil, err
		}
	}
	return pop(&x.out), nil
}

// funcSource passes a set-returning function's rows as it makes them
// (generate_series of a billion rows holds one).
type funcSource struct {
	gen        func() (plan.Row, error)
	ordinality bool
	n          int64
}

func (x *funcSource) next() (plan.Row, error) {
	row, err := x.gen()
	if err != nil || row == nil || !x.ordinality {
		return row, err
	}
	x.n++
	return append(row, types.DInt(x.n)), nil
}

// projectSetSource runs the set-returning calls of a ProjectSet on each
// input row as it comes: the calls advance together, a call that has
// ended gives NULLs, and the row is done when all have ended.
type projectSetSource struct {
	r    *runner
	ps   *plan.ProjectSet
	in   rowSource
	row  plan.Row                   // the input row being expanded; nil: read the next
	gens []func() (plan.Row, error) // each call's rows for row; nil once ended
}

func (x *projectSetSource) next() (plan.Row, error) {
	for {
		if x.row != nil {
			out := append(make(plan.Row, 0, len(x.ps.Columns())), x.row...)
			more := false
			for i, c := range x.ps.Calls {
				var vals plan.Row
				if x.gens[i] != nil {
					var err error
					if vals, err = x.gens[i](); err != nil {
						return nil, err
					}
					if vals == nil {
						x.gens[i] = nil
					}
				}
				if vals == nil {
					vals = make(plan.Row, len(c.Columns()))
					for j := range vals {
						vals[j] = types.NullDatum
					}
				} else {
					more = true
				}
				out = append(out, vals...)
			}
			if more {
				return out, nil
			}
			x.row = nil
		}
		row, err := x.in.next()
		if err != nil || row == nil {
			return nil, err
		}
		for i, c := range x.ps.Calls {
			if x.gens[i], err = x.r.callRows(c, row); err != nil {
				return nil, err
			}
		}
		x.row = row
	}
}

// callRows starts the set-returning call c on row: its rows one at a
// time.
func (r *runner) callRows(c *plan.FuncScan, row plan.Row) (func() (plan.Row, error), error) {
	args, err := r.evalAll(c.Args, row)
	if err != nil {
		return nil, err
	}
	if c.Iter != nil {
		return c.Iter(r.ec.Location, args)
	}
	rows, err := c.Fn(r.ec.Location, args)
	if err != nil {
		return nil, err
	}
	return func() (plan.Row, error) {
		if len(rows) == 0 {
			return nil, nil
		}
		return pop(&rows), nil
	}, nil
}

type sliceSource struct {
	rows []plan.Row
}

func (x *sliceSource) next() (plan.Row, error) {
	if len(x.rows) == 0 {
		return nil, nil
	}
	return pop(&x.rows), nil // let it go once sent
}

type scanSource struct {
	r      *runner
	s      *plan.Scan
	sc     *client.Scanner
	filter plan.Expr // what the tablets do not evaluate
}

func (x *scanSource) next() (plan.Row, error) {
	x.sc.SetContext(x.r.ctx)
	for x.sc.Next() {
		row, err := tableRow(x.s.Table, x.sc.Row())
		if err != nil {
			return nil, err
		}
		if ok, err := x.r.holds(x.filter, row); err != nil || ok {
			return row, err
		}
	}
	return nil, x.sc.Err()
}

type filterSource struct {
	r    *runner
	in   rowSource
	cond plan.Expr
}

func (x *filterSource) next() (plan.Row, error) {
	for {
		row, err := x.in.next()
		if err != nil || row == nil {
			return nil, err
		}
		if ok, err := x.r.holds(x.cond, row); err != nil || ok {
			return row, err
		}
	}
}

type projectSource struct {
	r     *runner
	in    rowSource
	exprs []plan.Expr
}

func (x *projectSource) next() (plan.Row, error) {
	row, err := x.in.next()
	if err != nil || row == nil {
		return nil, err
	}
	return x.r.evalAll(x.exprs, row)
}

// distinctOnSource passes the first row of each run of rows with equal
// keys (NULLs equal).
type distinctOnSource struct {
	in   rowSource
	keys []int
	cols []plan.Column
	prev plan.Row
}

func (x *distinctOnSource) next() (plan.Row, error) {
	for {
		row, err := x.in.next()
		if err != nil || row == nil {
			return nil, err
		}
		if x.prev != nil && x.sameKeys(x.prev, row) {
			continue
		}
		x.prev = row
		return row, nil
	}
}

func (x *distinctOnSource) sameKeys(a, b plan.Row) bool {
	for _, k := range x.keys {
		if a[k].Null != b[k].Null || !a[k].Null && types.Compare(a[k], b[k], x.cols[k].T) != 0 {
			return false
		}
	}
	return true
}

type truncateSource struct {
	in rowSource
	n  int
}

func (x *truncateSource) next() (plan.Row, error) {
	row, err := x.in.next()
	if err != nil || row == nil {
		return nil, err
	}
	return row[:x.n], nil
}

type limitSource struct {
	in   rowSource
	skip int64 // OFFSET rows still to skip
	left int64 // rows still to return; -1: no limit
}

func (x *limitSource) next() (plan.Row, error) {
	for x.left != 0 {
		row, err := x.in.next()
		if err != nil || row == nil {
			return nil, err
		}
		if x.skip > 0 {
			x.skip--
			continue
		}
		if x.left > 0 {
			x.left--
		}
		return row, nil
	}
	return nil, nil
}

// holds reports whether cond is TRUE for row (no condition holds).
func (r *runner) holds(cond plan.Expr, row plan.Row) (bool, error) {
	if cond == nil {
		return true, nil
	}
	d, err := cond.Eval(r.ec, row)
	if err != nil {
		return false, err
	}
	return !d.Null && d.Bool(), nil
}

// firstRows reads up to streamAfter rows of n; src is the rest when more
// may follow, nil when these are all.
func (r *runner) firstRows(n plan.Node) (rows []plan.Row, src rowSource, err error) {
	if src, err = r.open(n); err != nil {
		return nil, nil, err
	}
	if s, ok := src.(*sliceSource); ok {
		return s.rows, nil, nil // read whole
	}
	for len(rows) < streamAfter {
		row, err := src.next()
		if err != nil {
			if r.s.declaring && fetchError(err) {
				// A cursor's FETCH meets it after these rows, as
				// PostgreSQL's does (DECLARE failed).
				return rows, &errSource{err}, nil
			}
			return nil, nil, err
		}
		if row == nil {
			return rows, nil, nil
		}
		rows = append(rows, row)
	}
	return rows, src, nil
}

// take appends to rows up to n more rows of the stream (n < 0: all).
func (rs *resultStream) take(ctx context.Context, rows []plan.Row, n int64) ([]plan.Row, error) {
	for ; n != 0; n-- {
		row, err := rs.next(ctx)
		if err != nil || row == nil {
			return rows, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

var errStreamTxnEnded = pgerror.New(pgerror.CodeInvalidCursorState, "the transaction of this portal has ended")

// resultStream is the rest of a streamed statement's rows (see above).
type resultStream struct {
	s   *Session
	r   *runner
	src rowSource
	tx  *client.Txn // the transaction the statement reads in
	// own is tx when it is the statement's own, which the stream commits
	// at its end (nil in a transaction block).
	own  *client.Txn
	rows int // rows of the statement so far, the first ones included
	done bool
}

// next returns the next row, nil at the end (which ends the statement's
// own transaction). ctx is the caller's for this call: the statement's
// pages are read over several.
func (rs *resultStream) next(ctx context.Context) (plan.Row, error) {
	if rs.done {
		return nil, nil
	}
	if rs.own == nil && rs.s.txn != rs.tx {
		rs.done = true
		rs.r.closers.run()
		return nil, errStreamTxnEnded
	}
	rs.r.ctx = ctx
	row, err := rs.src.next()
	if err != nil {
		rs.fail()
		return nil, internalTimeout(ctx, err)
	}
	if row == nil {
		rs.done = true
		rs.r.closers.run()
		if rs.own != nil {
			if err := rs.own.Commit(ctx); err != nil {
				return nil, internalTimeout(ctx, err)
			}
		}
		return nil, nil
	}
	rs.rows++
	return row, nil
}

// tag is the statement's command tag, once at the end.
func (rs *resultStream) tag() string { return fmt.Sprintf("SELECT %d", rs.rows) }

// fail ends a stream whose read failed: a transaction block fails with
// it, as after any statement's error; the statement's own transaction is
// rolled back.
func (rs *resultStream) fail() {
	rs.done = true
	rs.r.closers.run()
	if rs.own != nil {
		rollback(context.Background(), rs.own)
	} else if rs.s.inBlock && rs.s.txn == rs.tx {
		rs.s.failed = true
	}
}

// close drops a stream the client did not read to the end.
func (rs *resultStream) close() {
	if !rs.done {
		rs.done = true
		rs.r.closers.run()
		if rs.own != nil {
			rollback(context.Background(), rs.own)
		}
	}
}
