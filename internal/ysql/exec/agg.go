package exec

import (
	"fmt"
	"hash/maphash"

	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Hash aggregation with a memory budget (PostgreSQL 13's spilling hash
// aggregate). The groups are kept in a map until their estimated size
// passes work_mem; from then on a row of a group already in memory is
// still added to it, and a row of any other group is written to one of
// aggPartitions files by the hash of its group. Each group is thus whole
// in memory or whole in one file, whatever its aggregates (DISTINCT,
// string_agg). Once the input ends the groups in memory are given out,
// then each file is aggregated the same way, with a new hash at each
// level, splitting again what still does not fit.

// aggPartitions is how many files a pass spills to.
const aggPartitions = 16

// maxAggLevels bounds the times a group's rows are spilled again (a
// group too large for the budget is kept in memory at the last level).
const maxAggLevels = 6

// openAggregate groups a's input and yields a row per group (the group
// values, then the aggregate results): at the tablets when they can
// compute it, else here.
func (r *runner) openAggregate(a *plan.Agg) (rowSource, error) {
	if rows, ok, err := r.pushedAggregate(a); err != nil || ok {
		return &sliceSource{rows: rows}, err
	}
	in, err := r.open(a.Input) // a scan's rows are added as they come
	if err != nil {
		return nil, err
	}
	h := &hashAgg{r: r, a: a, budget: r.s.workMem(), spill: newHashSpill(r, "aggregate"), mem: r.newHeld("a hash aggregate")}
	r.s.noteSpill(a, h.spill.explain)
	for _, g := range a.Groups {
		h.gts = append(h.gts, g.Type())
	}
	if err := h.pass(in, 0); err != nil {
		h.spill.close()
		return nil, err
	}
	if len(a.Groups) == 0 && len(h.order) == 0 {
		h.newGroup(nil) // an aggregate without GROUP BY yields one row
	}
	return h, nil
}

type aggGroup struct {
	vals []types.Datum
	aggs []plan.Aggregator
	seen []map[string]bool // DISTINCT
}

// hashAgg is one aggregation: the groups of the current pass and the
// files left to aggregate.
type hashAgg struct {
	r      *runner
	a      *plan.Agg
	gts    []types.T
	budget int64
	spill  *hashSpill

	groups map[string]*aggGroup
	order  []*aggGroup // in the order they appeared
	held   int64
	out    int // groups of order given out
	level  int
	mem    *heldRows // held, counted: to the statement at each row
	noted  int64     // held when last counted
}

func (h *hashAgg) newGroup(vals []types.Datum) *aggGroup {
	g := &aggGroup{vals: vals, aggs: make([]plan.Aggregator, len(h.a.Aggs)), seen: make([]map[string]bool, len(h.a.Aggs))}
	for i, c := range h.a.Aggs {
		g.aggs[i] = c.New()
		if c.Distinct {
			g.seen[i] = map[string]bool{}
		}
	}
	h.order = append(h.order, g)
	h.held += rowSize(vals) + 160*int64(len(h.a.Aggs)) + 160
	return g
}

// pass aggregates the rows of in at level: into the groups in memory, or
// into files once they are full.
func (h *hashAgg) pass(in rowSource, level int) error {
	h.groups, h.order, h.held, h.out, h.level = map[string]*aggGroup{}, nil, 0, 0, level
	h.mem.release()
	h.noted = 0
	err := each(in, func(row plan.Row) error {
		if err := h.mem.addBytes(h.held - h.noted); err != nil {
			return err
		}
		h.noted = h.held
		vals, err := h.r.evalAll(h.a.Groups, row)
		if err != nil {
			return err
		}
		k := rowKey(vals, h.gts)
		g := h.groups[k]
		if g == nil {
			if h.held > h.budget && len(h.order) > 0 && level < maxAggLevels {
				return h.spill.write(k, level, row)
			}
			g = h.newGroup(vals)
			h.groups[k] = g
			h.held += int64(len(k))
		}
		return h.add(g, row)
	})
	if err != nil {
		return err
	}
	h.groups = nil // only order is read from now on
	return h.spill.endPass(level)
}

// add adds row to g's aggregates.
func (h *hashAgg) add(g *aggGroup, row plan.Row) error {
	r := h.r
	for i, c := range h.a.Aggs {
		if c.Filter != nil {
			d, err := c.Filter.Eval(r.ec, row)
			if err != nil {
				return err
			}
			if d.Null || !d.Bool() {
				continue
			}
		}
		args, err := aggArgs(r.ec, &c, row)
		if err != nil {
			return err
		}
		if c.Distinct && c.Arg != nil {
			k := rowKey(args[:1], []types.T{c.Arg.Type()})
			if g.seen[i][k] {
				continue
			}
			g.seen[i][k] = true
			h.held += int64(len(k)) + 48
		}
		for _, o := range c.Order {
			d, err := o.E.Eval(r.ec, row)
			if err != nil {
				return err
			}
			args = append(args, d)
		}
		if len(c.Order) > 0 { // the aggregate keeps the row until the group ends
			h.held += rowSize(args)
		}
		if err := g.aggs[i].Add(args); err != nil {
			return err
		}
	}
	return nil
}

// next gives out the groups in memory, then aggregates the next file.
func (h *hashAgg) next() (plan.Row, error) {
	for h.out == len(h.order) {
		in, level, ok := h.spill.next()
		if !ok {
			h.mem.release()
			return nil, nil
		}
		if err := h.pass(in, level); err != nil {
			return nil, err
		}
	}
	g := h.order[h.out]
	h.order[h.out] = nil // the group's memory goes with it
	h.out++
	// Never nil, which ends a row source: a group of no columns and no
	// aggregates (SELECT 2 FROM t HAVING true) is a row of nothing.
	row := append(make(plan.Row, 0, len(g.vals)+len(g.aggs)), g.vals...)
	for _, ag := range g.aggs {
		d, err := ag.Result()
		if err != nil {
			return nil, err
		}
		row = append(row, d)
	}
	return row, nil
}

// spilledRows reads back the rows of a spill file.
type spilledRows struct{ f *spillFile }

func (s *spilledRows) next() (plan.Row, error) {
	rec, err := s.f.read()
	if rec == nil || err != nil {
		return nil, err
	}
	return decodeRow(rec)
}

// hashSpill holds the rows an operator could not keep in memory, in
// files by the hash of their key (a group, a DISTINCT row), so that rows
// of one key go to one file; a file read back may be split again at the
// next level, by another hash.
type hashSpill struct {
	dir, what string
	seed      maphash.Seed
	parts     []*spillFile // of the pass being read, by hash
	pending   []spillPart  // files to read back
	reading   *spillFile
	written   int   // files written (EXPLAIN ANALYZE, tests)
	disk      int64 // bytes written
	rec       []byte
}

// explain is the operator's line of EXPLAIN ANALYZE: the batches it did
// (the pass in memory, then each file), what went to disk.
func (s *hashSpill) explain() string { return spillsExplain(s) }

// spillsExplain is explain for an operator with several spills (a join's
// sides), which share the hash and so the batches.
func spillsExplain(spills ...*hashSpill) string {
	batches, disk := 0, int64(0)
	for _, s := range spills {
		if s != nil {
			batches, disk = max(batches, s.written), disk+s.disk
		}
	}
	if batches == 0 {
		return "Batches: 1"
	}
	return fmt.Sprintf("Batches: %d  Disk Usage: %dkB", 1+batches, kB(disk))
}

type spillPart struct {
	f     *spillFile
	level int
}

// newHashSpill returns r's statement's spill of what (its files are
// closed when the statement ends).
func newHashSpill(r *runner, what string) *hashSpill {
	s := &hashSpill{dir: r.s.e.tempDir(), what: what, seed: maphash.MakeSeed()}
	r.onClose(s.close)
	return s
}

// write spills row, whose key is key, in a pass at level.
func (s *hashSpill) write(key string, level int, row plan.Row) error {
	if s.parts == nil {
		s.parts = make([]*spillFile, aggPartitions)
	}
	var mh maphash.Hash
	mh.SetSeed(s.seed)
	mh.WriteByte(byte(level)) // a new split at each level
	mh.WriteString(key)
	p := mh.Sum64() % aggPartitions
	if s.parts[p] == nil {
		f, err := newSpillFile(s.dir, s.what)
		if err != nil {
			return err
		}
		s.parts[p] = f
		s.written++
	}
	s.rec = appendDatums(s.rec[:0], row)
	f := s.parts[p]
	before := f.bytes
	err := f.write(s.rec)
	s.disk += f.bytes - before
	return err
}

// endPass ends a pass at level: its files are read back at the next.
func (s *hashSpill) endPass(level int) error {
	parts := s.parts
	s.parts = nil
	for i, f := range parts {
		if f == nil {
			continue
		}
		if err := f.finish(); err != nil {
			for _, f := range parts[i:] {
				if f != nil {
					f.close()
				}
			}
			return err
		}
		s.pending = append(s.pending, spillPart{f: f, level: level + 1})
	}
	return nil
}

// joinPair is the files of one hash of two spills split alike (a join's or
// a set operation's sides): the right side's rows and the left side's
// rows that can only meet them. Either may be nil.
type joinPair struct{ right, left *spillFile }

func (p *joinPair) close() {
	for _, f := range []*spillFile{p.right, p.left} {
		if f != nil {
			f.close()
		}
	}
}

// pairFiles ends the writing of rights and lefts, spills of one seed at
// level 0, and pairs their files by hash. A right file without a left one
// is closed and left out unless keepRight.
func pairFiles(rights, lefts *hashSpill, keepRight bool) ([]joinPair, error) {
	var pairs []joinPair
	for p := range aggPartitions {
		pair := joinPair{}
		if rights.parts != nil {
			pair.right = rights.parts[p]
		}
		if lefts.parts != nil {
			pair.left = lefts.parts[p]
		}
		if pair.left == nil && !keepRight {
			pair.close()
			continue
		}
		if pair.right == nil && pair.left == nil {
			continue
		}
		for _, f := range []*spillFile{pair.right, pair.left} {
			if f != nil {
				if err := f.finish(); err != nil {
					return nil, err
				}
			}
		}
		pairs = append(pairs, pair)
	}
	return pairs, nil
}

// next returns the rows of the next file and its level (closing the file
// read before); ok is false when none is left.
func (s *hashSpill) next() (rowSource, int, bool) {
	if s.reading != nil {
		s.reading.close()
		s.reading = nil
	}
	if len(s.pending) == 0 {
		return nil, 0, false
	}
	p := s.pending[0]
	s.pending = s.pending[1:]
	s.reading = p.f
	return &spilledRows{f: p.f}, p.level, true
}

func (s *hashSpill) close() {
	for _, p := range s.pending {
		p.f.close()
	}
	for _, f := range s.parts {
		if f != nil {
			f.close()
		}
	}
	if s.reading != nil {
		s.reading.close()
	}
	s.pending, s.parts, s.reading = nil, nil, nil
}

// aggArgs evaluates an aggregate call's arguments over row.
func aggArgs(ec *plan.EvalContext, c *plan.AggCall, row plan.Row) ([]types.Datum, error) {
	var args []types.Datum
	for _, e := range []plan.Expr{c.Arg, c.Arg2} {
		if e == nil {
			break
		}
		d, err := e.Eval(ec, row)
		if err != nil {
			return nil, err
		}
		args = append(args, d)
	}
	return args, nil
}
