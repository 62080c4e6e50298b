package exec

import (
	"container/heap"
	"slices"

	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// maxTopN bounds the LIMIT (plus OFFSET) that a sort under it keeps in a
// heap rather than sorting every row: past it the heap buys little.
const maxTopN = 1 << 16

// keyedRow is a row with its sort key values and its place in the input
// (ties keep the input order, as a stable sort would).
type keyedRow struct {
	row  plan.Row
	vals []types.Datum
	seq  int
}

// sortKeys evaluates the sort keys of row into vals.
func (r *runner) sortKeys(row plan.Row, keys []plan.SortKey, vals []types.Datum) error {
	for j, k := range keys {
		d, err := k.E.Eval(r.ec, row)
		if err != nil {
			return err
		}
		vals[j] = d
	}
	return nil
}

// compareKeyed orders by the sort keys (NULLs per NullsFirst), then by
// input order.
func compareKeyed(keys []plan.SortKey, a, b *keyedRow) int {
	for j, k := range keys {
		x, y := a.vals[j], b.vals[j]
		var c int
		switch {
		case x.Null && y.Null:
			c = 0
		case x.Null:
			c = 1
			if k.NullsFirst {
				c = -1
			}
		case y.Null:
			c = -1
			if k.NullsFirst {
				c = 1
			}
		default:
			c = types.Compare(x, y, k.E.Type())
			if k.Desc {
				c = -c
			}
		}
		if c != 0 {
			return c
		}
	}
	return a.seq - b.seq
}

// sort orders rows by the sort keys; rows with equal keys keep their order.
func (r *runner) sort(in []plan.Row, keys []plan.SortKey) ([]plan.Row, error) {
	ks := make([]keyedRow, len(in))
	for i, row := range in {
		ks[i] = keyedRow{row: row, vals: make([]types.Datum, len(keys)), seq: i}
		if err := r.sortKeys(row, keys, ks[i].vals); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(ks, func(a, b keyedRow) int { return compareKeyed(keys, &a, &b) })
	out := make([]plan.Row, len(ks))
	for i := range ks {
		out[i] = ks[i].row
	}
	return out, nil
}

// topRows returns at least the first n rows of node in its order, and
// under a sort only those: a LIMIT over an ORDER BY the scan does not
// give keeps its n smallest rows in a heap as they come instead of
// sorting them all (PostgreSQL's top-N heapsort): n log n work and n rows
// held rather than every row sorted. The same rows come out as from the
// whole sort, ties in input order.
func (r *runner) topRows(node plan.Node, n int) ([]plan.Row, error) {
	input, trunc := node, -1
	if t, ok := node.(*plan.Truncate); ok {
		input, trunc = t.Input, t.N // ORDER BY columns appended for the sort
	}
	srt, ok := input.(*plan.Sort)
	if !ok {
		return r.rows(node)
	}
	in, err := r.open(srt.Input) // a scan's rows go through as they come
	if err != nil {
		return nil, err
	}
	out, err := r.sortTop(in, srt.Keys, n)
	if err != nil {
		return nil, err
	}
	if trunc >= 0 {
		for i := range out {
			out[i] = out[i][:trunc]
		}
	}
	return out, nil
}

// sortTop returns the first n rows of in in sort order. The rows are kept
// as they come until there are n; from then on they are a heap, whose
// largest row a smaller one replaces. When fewer came, they are simply
// sorted.
func (r *runner) sortTop(in rowSource, keys []plan.SortKey, n int) ([]plan.Row, error) {
	if n == 0 {
		return nil, nil
	}
	rows, whole := in.(*sliceSource)
	if whole && n >= len(rows.rows) {
		return r.sort(rows.rows, keys)
	}
	h := &topHeap{keys: keys}
	scratch := keyedRow{vals: make([]types.Datum, len(keys))}
	for seq := 0; ; seq++ {
		var row plan.Row
		if whole { // rows at hand: no call per row
			if seq == len(rows.rows) {
				break
			}
			row = rows.rows[seq]
		} else {
			var err error
			if row, err = in.next(); err != nil {
				return nil, err
			}
			if row == nil {
				break
			}
		}
		scratch.row, scratch.seq = row, seq
		if err := r.sortKeys(row, keys, scratch.vals); err != nil {
			return nil, err
		}
		switch {
		case len(h.rows) < n:
			h.rows = append(h.rows, keyedRow{row: row, vals: slices.Clone(scratch.vals), seq: seq})
			if len(h.rows) == n {
				heap.Init(h)
			}
		case compareKeyed(keys, &scratch, &h.rows[0]) < 0:
			// Replaces the largest kept row, reusing its key slice.
			top := &h.rows[0]
			top.row, top.seq = row, seq
			copy(top.vals, scratch.vals)
			heap.Fix(h, 0)
		}
	}
	slices.SortFunc(h.rows, func(a, b keyedRow) int { return compareKeyed(keys, &a, &b) })
	out := make([]plan.Row, len(h.rows))
	for i := range h.rows {
		out[i] = h.rows[i].row
	}
	return out, nil
}

// topHeap is a max-heap of kept rows in sort order (the root is the row a
// smaller one replaces).
type topHeap struct {
	keys []plan.SortKey
	rows []keyedRow
}

func (h *topHeap) Len() int           { return len(h.rows) }
func (h *topHeap) Less(i, j int) bool { return compareKeyed(h.keys, &h.rows[i], &h.rows[j]) > 0 }
func (h *topHeap) Swap(i, j int)      { h.rows[i], h.rows[j] = h.rows[j], h.rows[i] }
func (h *topHeap) Push(x any)         { h.rows = append(h.rows, x.(keyedRow)) }
func (h *topHeap) Pop() any {
	last := h.rows[len(h.rows)-1]
	h.rows = h.rows[:len(h.rows)-1]
	return last
}
