package exec

import (
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// A hash join's right side past work_mem (a Grace hash join). The right
// rows are held as they come; once their estimated size passes work_mem,
// every right row, held or still to come, goes to one of aggPartitions
// files by the hash of its join key, and so does every left row, by the
// same hash of its key: a left row can only match right rows of its own
// file. Each pair of files is then joined in memory, right file first.
// Left rows with a NULL key match nothing and are passed (LEFT, FULL) or
// dropped at once; right ones are in a file and come out unmatched. A
// join without equality keys (a nested loop) holds its right side whole.

// openRightSide reads j's right side: whole (rows) when it fits work_mem
// or the join has no equality keys, else into files (spill).
func (r *runner) openRightSide(j *plan.Join) (rows []plan.Row, spill *hashSpill, err error) {
	in, err := r.open(j.Right)
	if err != nil {
		return nil, nil, err
	}
	budget, held := r.s.workMem(), int64(0)
	var ts []types.T
	for _, e := range j.EqRight {
		ts = append(ts, e.Type())
	}
	for {
		row, err := in.next()
		if err != nil || row == nil {
			return rows, spill, err
		}
		if spill == nil {
			rows = append(rows, row)
			if held += rowSize(row); held <= budget || len(j.EqRight) == 0 {
				continue
			}
			spill = newHashSpill(r, "hash join")
			for _, row := range rows {
				if err := r.spillJoinRow(spill, j.EqRight, ts, row); err != nil {
					return nil, nil, err
				}
			}
			rows = nil
			continue
		}
		if err := r.spillJoinRow(spill, j.EqRight, ts, row); err != nil {
			return nil, nil, err
		}
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
	hj     *hashJoin
	out    []plan.Row
}

func (r *runner) newGraceJoin(j *plan.Join, left rowSource, right *hashSpill) *graceJoin {
	g := &graceJoin{r: r, j: j, left: left, right: right, lefts: newHashSpill(r, "hash join")}
	g.lefts.seed = right.seed // left file p gets the keys of right file p
	r.s.noteSpill(j, func() string { return spillsExplain(g.right, g.lefts) })
	for _, e := range j.EqLeft {
		g.lts = append(g.lts, e.Type())
	}
	return g
}

// partition sends every left row to its file, passing those that match
// nothing (a NULL key) to out.
func (g *graceJoin) partition() error {
	nr := len(g.j.Right.Columns())
	err := each(g.left, func(l plan.Row) error {
		vals, err := g.r.evalAll(g.j.EqLeft, l)
		if err != nil {
			return err
		}
		if hasNull(vals) {
			if g.j.Kind == plan.LeftJoin || g.j.Kind == plan.FullJoin {
				g.out = append(g.out, append(append(make(plan.Row, 0, len(l)+nr), l...), nulls(nr)...))
			}
			return nil
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
	for len(g.out) == 0 {
		if g.cur != nil && g.cur.left != nil {
			rec, err := g.cur.left.read()
			if err != nil {
				return nil, err
			}
			if rec != nil {
				l, err := decodeRow(rec)
				if err != nil {
					return nil, err
				}
				if g.out, err = g.hj.probe(l, g.out); err != nil {
					return nil, err
				}
				continue
			}
		}
		if g.cur != nil {
			g.out = g.hj.unmatched(g.out)
			g.cur.close()
			g.cur, g.hj = nil, nil
			continue
		}
		if len(g.pairs) == 0 {
			return nil, nil
		}
		g.cur = &g.pairs[0]
		g.pairs = g.pairs[1:]
		var rows []plan.Row
		if g.cur.right != nil {
			src := &spilledRows{f: g.cur.right}
			var err error
			if rows, err = drain(src); err != nil {
				return nil, err
			}
		}
		var err error
		if g.hj, err = g.r.newHashJoin(g.j, rows); err != nil {
			return nil, err
		}
	}
	return pop(&g.out), nil
}
