package exec

import (
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// A join's right side past work_mem. With equality keys it is a Grace
// hash join: the right rows are held as they come; once their estimated
// size passes work_mem, every right row, held or still to come, goes to
// one of aggPartitions files by the hash of its join key, and so does
// every left row, by the same hash of its key: a left row can only match
// right rows of its own file. Each pair of files is then joined in memory,
// right file first. Left rows with a NULL key match nothing and come out
// NULL-extended (LEFT, FULL) from whichever file they went to, or are
// dropped at once; right ones are in a file and come out unmatched.
// Without equality keys it is a block nested loop: the right rows go to
// one file, and the left rows are read a block of work_mem at a time, the
// file read once per block (nestedLoop).

// rightSide is a join's right side as openRightSide read it: in memory
// (rows), in files by hash (spill) or in one file (file).
type rightSide struct {
	rows  []plan.Row
	spill *hashSpill
	file  *spillFile
}

// openRightSide reads j's right side: whole when it fits work_mem, else
// into files. The rows it holds count to the statement's memory.
func (r *runner) openRightSide(j *plan.Join) (rightSide, error) {
	in, err := r.open(j.Right)
	if err != nil {
		return rightSide{}, err
	}
	return r.readRightSide(j, in)
}

// readRightSide reads the rows of in, j's right side (openRightSide).
func (r *runner) readRightSide(j *plan.Join, in rowSource) (side rightSide, err error) {
	budget, held := r.s.workMem(), int64(0)
	h := heldRows{acct: r.acct, what: "a join's right side"}
	var ts []types.T
	for _, e := range j.EqRight {
		ts = append(ts, e.Type())
	}
	spillRow := func(row plan.Row) error {
		if side.file != nil {
			return side.file.write(appendDatums(nil, row))
		}
		return r.spillJoinRow(side.spill, j.EqRight, ts, row)
	}
	for {
		row, err := in.next()
		if err != nil || row == nil {
			if err == nil && side.file != nil {
				err = side.file.finish()
			}
			if err == nil {
				err = h.flush()
			}
			return side, err
		}
		if side.spill != nil || side.file != nil {
			if err := spillRow(row); err != nil {
				return side, err
			}
			continue
		}
		side.rows = append(side.rows, row)
		if err := h.add(row); err != nil {
			return side, err
		}
		if held += rowSize(row); held <= budget {
			continue
		}
		if len(j.EqRight) > 0 {
			side.spill = newHashSpill(r, "hash join")
		} else if side.file, err = newSpillFile(r.s.e.tempDir(), "nested loop"); err != nil {
			return side, err
		} else {
			r.onClose(side.file.close)
		}
		for _, row := range side.rows {
			if err := spillRow(row); err != nil {
				return side, err
			}
		}
		side.rows = nil
		h.release()
	}
}

// spillJoinRow writes row to the file of its key (exprs over the row).
func (r *runner) spillJoinRow(spill *hashSpill, exprs []plan.Expr, ts []types.T, row plan.Row) error {
	vals, err := r.evalAll(exprs, row)
	if err != nil {
		return err
	}
	return spill.write(rowKey(vals, ts), 0, row)
}

// graceJoin joins the left rows with a right side on file: it first sends
// every left row to its file, then joins the files pair by pair.
type graceJoin struct {
	r     *runner
	j     *plan.Join
	left  rowSource
	right *hashSpill // the right side's files by hash
	lefts *hashSpill // the left side's, the same hash
	lts   []types.T

	parted bool
	pairs  []joinPair
	cur    *joinPair
	join   *joinSource // of cur
	held   heldRows    // cur's right rows
}

func (r *runner) newGraceJoin(j *plan.Join, left rowSource, right *hashSpill) *graceJoin {
	g := &graceJoin{r: r, j: j, left: left, right: right, lefts: newHashSpill(r, "hash join"),
		held: heldRows{acct: r.acct, what: "a hash join's batch"}}
	g.lefts.seed = right.seed // left file p gets the keys of right file p
	r.s.noteSpill(j, func() string { return spillsExplain(g.right, g.lefts) })
	for _, e := range j.EqLeft {
		g.lts = append(g.lts, e.Type())
	}
	return g
}

// partition sends every left row to its file; one with a NULL key, which
// matches nothing, goes to any file (it comes out NULL-extended) for a
// LEFT or FULL join, else nowhere.
func (g *graceJoin) partition() error {
	keepNull := g.j.Kind == plan.LeftJoin || g.j.Kind == plan.FullJoin
	err := each(g.left, func(l plan.Row) error {
		vals, err := g.r.evalAll(g.j.EqLeft, l)
		if err != nil || hasNull(vals) && !keepNull {
			return err
		}
		return g.lefts.write(rowKey(vals, g.lts), 0, l)
	})
	if err != nil {
		return err
	}
	// Right files no left row reaches matter only for their unmatched rows.
	g.pairs, err = pairFiles(g.right, g.lefts, g.j.Kind == plan.RightJoin || g.j.Kind == plan.FullJoin)
	return err
}

func (g *graceJoin) next() (plan.Row, error) {
	if !g.parted {
		g.parted = true
		if err := g.partition(); err != nil {
			return nil, err
		}
	}
	for {
		if g.join != nil {
			row, err := g.join.next()
			if err != nil || row != nil {
				return row, err
			}
			g.cur.close()
			g.held.release()
			g.cur, g.join = nil, nil
		}
		if len(g.pairs) == 0 {
			return nil, nil
		}
		if err := g.nextPair(); err != nil {
			return nil, err
		}
	}
}

// nextPair reads the right file of the next pair into memory and joins
// the left file's rows with it.
func (g *graceJoin) nextPair() error {
	g.cur = &g.pairs[0]
	g.pairs = g.pairs[1:]
	var rows []plan.Row
	if g.cur.right != nil {
		err := each(&spilledRows{f: g.cur.right}, func(row plan.Row) error {
			rows = append(rows, row)
			return g.held.add(row)
		})
		if err == nil {
			err = g.held.flush()
		}
		if err != nil {
			return err
		}
	}
	hj, err := g.r.newHashJoin(g.j, rows)
	if err != nil {
		return err
	}
	var left rowSource = &sliceSource{}
	if g.cur.left != nil {
		left = &spilledRows{f: g.cur.left}
	}
	g.join = &joinSource{hj: hj, left: left}
	return nil
}

// nestedLoop joins the left rows with a right side on file, past
// work_mem (a block nested loop): the left rows are read a block of about
// work_mem at a time and the file once per block, each right row tried
// against every row of the block. The rows come out block by block, each
// block's in the file's order.
type nestedLoop struct {
	r      *runner
	j      *plan.Join
	left   rowSource
	right  *spillFile
	nl, nr int
	budget int64

	block       []plan.Row
	held        heldRows // the block's
	leftMatched []bool   // of the block's rows
	// rightMatched marks the right rows, by their place in the file,
	// some left row matched (RIGHT, FULL).
	rightMatched []bool
	cur          plan.Row // the right row being tried
	buf          plan.Row // a joined row being tested
	ri           int      // its place in the file, from 1
	bi           int      // the next block row to try it against
	tail         int      // the next block row to give NULL-extended (LEFT, FULL)
	inBlock      bool     // reading the file for the block
	leftDone     bool
	rightTail    bool // reading the file for the unmatched right rows
	done         bool
	blocks       int // read (tests)
}

func (r *runner) newNestedLoop(j *plan.Join, left rowSource, right *spillFile) *nestedLoop {
	x := &nestedLoop{r: r, j: j, left: left, right: right, nl: len(j.Left.Columns()), nr: len(j.Right.Columns()),
		budget: r.s.workMem(), held: heldRows{acct: r.acct, what: "a nested loop's block"}}
	if j.Kind == plan.RightJoin || j.Kind == plan.FullJoin {
		x.rightMatched = make([]bool, right.total)
	}
	return x
}

func (x *nestedLoop) next() (plan.Row, error) {
	for !x.done {
		switch {
		case x.cur != nil:
			if row, err := x.tryCurrent(); err != nil || row != nil {
				return row, err
			}
			x.cur = nil
		case x.inBlock || x.rightTail:
			if err := x.nextRight(); err != nil {
				return nil, err
			}
			x.done = x.cur == nil && x.rightTail
		case x.tail < len(x.block):
			i := x.tail
			x.tail++
			if !x.leftMatched[i] && (x.j.Kind == plan.LeftJoin || x.j.Kind == plan.FullJoin) {
				return append(append(make(plan.Row, 0, x.nl+x.nr), x.block[i]...), nulls(x.nr)...), nil
			}
		default:
			if err := x.readBlock(); err != nil {
				return nil, err
			}
		}
	}
	return nil, nil
}

// tryCurrent returns the next joined row of the current right row with
// the block's rows (or, after the last block, it NULL-extended when no
// left row matched it); nil when there is none.
func (x *nestedLoop) tryCurrent() (plan.Row, error) {
	if x.rightTail {
		cur := x.cur
		if x.cur = nil; x.rightMatched[x.ri-1] {
			return nil, nil
		}
		return append(nulls(x.nl), cur...), nil
	}
	for x.bi < len(x.block) {
		i := x.bi
		x.bi++
		row, ok, err := x.r.joined(x.j.Cond, &x.buf, x.block[i], x.cur)
		if err != nil {
			return nil, err
		}
		if ok {
			x.leftMatched[i] = true
			if x.rightMatched != nil {
				x.rightMatched[x.ri-1] = true
			}
			return row, nil
		}
	}
	return nil, nil
}

// nextRight reads the file's next right row into cur; at the end of the
// file the block's pass is over (cur stays nil).
func (x *nestedLoop) nextRight() error {
	rec, err := x.right.read()
	if err != nil {
		return err
	}
	if rec == nil {
		x.inBlock = false
		return nil
	}
	if x.cur, err = decodeRow(rec); err != nil {
		return err
	}
	x.ri++
	x.bi = 0
	return nil
}

// readBlock reads the next block of left rows and starts the file over
// for it; after the last block, it starts the file over for the unmatched
// right rows (RIGHT, FULL) or ends the join.
func (x *nestedLoop) readBlock() error {
	x.held.release()
	x.block, x.leftMatched, x.tail = x.block[:0], x.leftMatched[:0], 0
	for held := int64(0); !x.leftDone && (len(x.block) == 0 || held <= x.budget); {
		l, err := x.left.next()
		if err != nil {
			return err
		}
		if l == nil {
			x.leftDone = true
			break
		}
		x.block, x.leftMatched = append(x.block, l), append(x.leftMatched, false)
		held += rowSize(l)
		if err := x.held.add(l); err != nil {
			return err
		}
	}
	if err := x.held.flush(); err != nil {
		return err
	}
	x.ri = 0
	if err := x.right.rewind(); err != nil {
		return err
	}
	if len(x.block) > 0 {
		x.blocks++
	}
	// Past the last block: the unmatched right rows, or the end.
	x.inBlock = len(x.block) > 0
	x.rightTail = !x.inBlock && x.rightMatched != nil
	x.done = !x.inBlock && !x.rightTail
	return nil
}
