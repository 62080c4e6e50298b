package plan

import "github.com/shaledb/shaledb/internal/ysql/catalog"

// Batched lookup joins (YugabyteDB's "YB Batched Nested Loop Join"). An
// inner or left join whose right side is a base table, with equi-join keys
// that fix the table's primary key (all of it, or all hash columns then
// leading range columns) or the leading columns of a readable, non-partial
// secondary index, reads the right table by key instead of whole: the left
// rows go in batches of LookupBatch, each batch's distinct non-NULL key
// values are read in one batched read (point gets, or one key-prefix scan
// per value), and the batch is hash-joined with the rows read. Right-side
// key columns may also be fixed by constants of the right table's WHERE
// conjuncts (t2.a = 5 AND t2.b = t1.x).
//
// The rule, without table statistics: the lookup is chosen whenever it
// fixes more leading key columns than the right scan's own access path
// (so never over a point get, and not over an index scan that already
// fixes as many columns). A large left side over a small right table may
// read more than a full scan would; the reads are bounded by the left rows.

// LookupBatch is how many left rows one batched read covers (YugabyteDB's
// default yb_bnl_batch_size): large enough to amortise the round trips,
// small enough to bound the keys and right rows held at once.
const LookupBatch = 1024

// Lookup is how a join reads its right side (a Scan) for a batch of left
// rows.
type Lookup struct {
	// Index is the secondary index read (nil: the primary key).
	Index *catalog.Index
	// Keys are the values of the leading key columns (of the primary key or
	// the index), evaluated over a left row; Cols are those columns (table
	// column indexes).
	Keys []Expr
	Cols []int
	// Point: Keys fix the whole primary key (point reads).
	Point bool
}

// planLookups sets the lookup of every join in n (through filters) that
// qualifies; called once a SELECT's FROM, WHERE and locking are planned.
func planLookups(n Node) {
	switch x := n.(type) {
	case *Filter:
		planLookups(x.Input)
	case *Project:
		if x.fromOrder {
			planLookups(x.Input)
		}
	case *Join:
		planLookups(x.Left)
		planLookups(x.Right)
		if x.Lookup = chooseLookup(x); x.Lookup == nil {
			x.Swapped = swappedLookup(x)
		}
	}
}

// swappedLookup returns j with its sides exchanged when that makes it a
// lookup join and j is not one: an inner join is the same either way
// round, and `FROM big, small WHERE big.id = small.ref` should read big
// by key for small's rows, not hash both whole. The swapped join has no
// condition: the caller applies j's to rows put back in j's order.
func swappedLookup(j *Join) *Join {
	if j.Kind != InnerJoin {
		return nil
	}
	s := &Join{Kind: InnerJoin, Left: j.Right, Right: j.Left, EqLeft: j.EqRight, EqRight: j.EqLeft,
		cols: append(append([]Column(nil), j.Right.Columns()...), j.Left.Columns()...)}
	if s.Lookup = chooseLookup(s); s.Lookup == nil {
		return nil
	}
	return s
}

// chooseLookup returns the best lookup for j, or nil.
func chooseLookup(j *Join) *Lookup {
	s, ok := j.Right.(*Scan)
	if !ok || j.Kind != InnerJoin && j.Kind != LeftJoin || len(j.EqLeft) == 0 {
		return nil
	}
	t := s.Table
	cols := make([]int, len(t.Key))
	for i, k := range t.Key {
		cols[i] = k.Column
	}
	best := keyLookup(j, s, cols, t.HashKeyCount())
	if best != nil {
		best.Point = len(best.Keys) == len(t.Key)
	}
	if s.Lock != NoLock {
		// A locking read locks what it reads: whole-key point reads of an
		// inner join lock the matched rows alone (the target of UPDATE ...
		// FROM, a FOR UPDATE join), where a scan locks every row.
		if j.Kind != InnerJoin || best == nil || !best.Point || 2*len(best.Keys) <= accessScore(s.Access) {
			return nil
		}
		return best
	}
	for i := range t.Indexes {
		ix := &t.Indexes[i]
		if !ix.Readable() || ix.Predicate != "" {
			continue
		}
		l := t.Layout(ix)
		cols := make([]int, l.KeyCols)
		nh := 0
		for i, p := range l.Key[:l.KeyCols] {
			cols[i] = p.Col
			if p.Hash {
				nh++
			}
		}
		if c := keyLookup(j, s, cols, nh); c != nil && (best == nil || len(c.Keys) > len(best.Keys)) {
			c.Index, best = ix, c
		}
	}
	if best == nil || 2*len(best.Keys) <= accessScore(s.Access) {
		return nil
	}
	return best
}

// keyLookup matches the key columns cols (nHash of them hash columns)
// against j's equi-join keys and the constants of the right scan's filter:
// nil unless they fix every hash column (at least one column) and a join
// key is among them.
func keyLookup(j *Join, s *Scan, cols []int, nHash int) *Lookup {
	var filter []Expr
	if s.Filter != nil {
		filter = conjuncts(s.Filter, nil)
	}
	l := &Lookup{}
	joined := false
	for _, c := range cols {
		v := joinKeyFor(j, s, c)
		if v != nil {
			joined = true
		} else if eq := equalityPrefix(filter, []int{c}); len(eq) == 1 {
			v = eq[0]
		} else {
			break
		}
		l.Keys, l.Cols = append(l.Keys, v), append(l.Cols, c)
	}
	if !joined || len(l.Keys) < max(nHash, 1) {
		return nil
	}
	return l
}

// joinKeyFor returns the left value of an equi-join key whose right side
// is table column col (possibly under a cast that keeps its values), when
// equal values compare equal as stored (RemoteType, comparable); nil if
// none.
func joinKeyFor(j *Join, s *Scan, col int) Expr {
	for k, e := range j.EqRight {
		idx, ok := remoteColumn(s, e)
		if ok && idx == col && comparable(s.Table.Columns[col].Type, j.EqLeft[k].Type()) {
			return j.EqLeft[k]
		}
	}
	return nil
}
