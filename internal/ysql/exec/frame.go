package exec

import (
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// frameSource appends the value of a window call that sees its frame
// (an aggregate with an explicit frame, first_value, last_value,
// nth_value) or its whole partition (ntile, percent_rank, cume_dist) to
// rows sorted by the window's partition and order keys. A partition is
// read whole; each row's frame is a range of its positions. An aggregate
// whose frame starts at the partition's first row adds the rows as the
// frame's end moves forward; other frames are aggregated afresh for each
// row (PostgreSQL restarts its aggregates too when the frame's head moves
// and the aggregate cannot take rows out).
type frameSource struct {
	partitionReader
	call  plan.WindowCall
	order []plan.Expr

	// Of the current partition: each row's first and last peer (rows with
	// its order keys), the frame offsets, the running aggregate and how
	// many rows it holds.
	peerStart, peerEnd []int
	startOff, endOff   int64
	agg                plan.Aggregator
	added              int
}

func (x *frameSource) next() (plan.Row, error) {
	if x.pos == len(x.part) {
		if err := x.readPartition(); err != nil || len(x.part) == 0 {
			return nil, err
		}
		if err := x.startPartition(); err != nil {
			return nil, err
		}
	}
	i, row := x.pos, x.part[x.pos]
	x.pos++
	v, err := x.value(i, row)
	if err != nil {
		return nil, err
	}
	return append(row[:len(row):len(row)], v), nil
}

// startPartition works out the new partition's peer groups and frame
// offsets.
func (x *frameSource) startPartition() error {
	n := len(x.part)
	x.peerStart, x.peerEnd = x.peerStart[:0], x.peerEnd[:0]
	var prev []types.Datum
	for i, row := range x.part {
		ord, err := x.r.evalAll(x.order, row)
		if err != nil {
			return err
		}
		if i > 0 && sameValues(ord, prev, x.order) {
			x.peerStart = append(x.peerStart, x.peerStart[i-1])
		} else {
			x.peerStart = append(x.peerStart, i)
		}
		prev = ord
	}
	x.peerEnd = append(x.peerEnd, make([]int, n)...)
	for i := n - 1; i >= 0; i-- {
		if i < n-1 && x.peerStart[i+1] == x.peerStart[i] {
			x.peerEnd[i] = x.peerEnd[i+1]
		} else {
			x.peerEnd[i] = i
		}
	}
	x.agg, x.added = nil, 0
	if f := x.call.Frame; f != nil {
		var err error
		if x.startOff, err = x.offset(f.Start, "starting"); err != nil {
			return err
		}
		if x.endOff, err = x.offset(f.End, "ending"); err != nil {
			return err
		}
	}
	return nil
}

// offset evaluates a frame bound's n (it reads no row: once a partition).
func (x *frameSource) offset(b plan.FrameBound, which string) (int64, error) {
	if b.Offset == nil {
		return 0, nil
	}
	d, err := b.Offset.Eval(x.r.ec, x.part[0])
	switch {
	case err != nil:
		return 0, err
	case d.Null:
		return 0, pgerror.New(pgerror.CodeNullValueNotAllowed, "frame %s offset must not be null", which)
	case d.I < 0:
		return 0, pgerror.New(pgerror.CodeInvalidPrecedingOrFollowing, "frame %s offset must not be negative", which)
	}
	return d.I, nil
}

// bounds is row i's frame, positions lo to hi (empty if hi < lo).
func (x *frameSource) bounds(i int) (lo, hi int) {
	f := x.call.Frame
	if f == nil { // RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
		return 0, x.peerEnd[i]
	}
	at := func(b plan.FrameBound, off int64, start bool) int {
		switch b.Kind {
		case plan.UnboundedPreceding:
			return 0
		case plan.OffsetPreceding:
			return int(max(int64(i)-off, -1))
		case plan.CurrentRow:
			switch {
			case f.Rows:
				return i
			case start:
				return x.peerStart[i]
			}
			return x.peerEnd[i]
		case plan.OffsetFollowing:
			return int(min(int64(i)+off, int64(len(x.part))))
		}
		return len(x.part) - 1
	}
	lo, hi = at(f.Start, x.startOff, true), at(f.End, x.endOff, false)
	return max(lo, 0), min(hi, len(x.part)-1)
}

// value is the call's value for row i of the partition.
func (x *frameSource) value(i int, row plan.Row) (types.Datum, error) {
	n := len(x.part)
	switch x.call.Name {
	case "ntile":
		d, err := x.call.Args[0].Eval(x.r.ec, row)
		if err != nil || d.Null {
			return types.NullDatum, err
		}
		if d.I <= 0 {
			return types.NullDatum, pgerror.New(pgerror.CodeInvalidArgumentForNtile, "argument of ntile must be greater than zero")
		}
		return types.DInt(ntile(int64(i), int64(n), d.I)), nil
	case "percent_rank":
		if n <= 1 {
			return types.DFloat(0), nil
		}
		return types.DFloat(float64(x.peerStart[i]) / float64(n-1)), nil
	case "cume_dist":
		return types.DFloat(float64(x.peerEnd[i]+1) / float64(n)), nil
	}
	lo, hi := x.bounds(i)
	switch x.call.Name {
	case "first_value", "last_value", "nth_value":
		at := lo
		if x.call.Name == "last_value" {
			at = hi
		}
		if x.call.Name == "nth_value" {
			d, err := x.call.Args[1].Eval(x.r.ec, row)
			if err != nil || d.Null {
				return types.NullDatum, err
			}
			if d.I <= 0 {
				return types.NullDatum, pgerror.New(pgerror.CodeInvalidArgumentForNthValue, "argument of nth_value must be greater than zero")
			}
			at = int(min(int64(lo)+d.I-1, int64(n)))
		}
		if hi < lo || at > hi {
			return types.NullDatum, nil
		}
		return x.call.Args[0].Eval(x.r.ec, x.part[at])
	}
	// An aggregate.
	if x.call.Frame.Start.Kind != plan.UnboundedPreceding || x.agg == nil {
		if x.call.Frame.Start.Kind != plan.UnboundedPreceding {
			x.added = lo
		}
		x.agg = x.call.Agg.New()
	}
	for ; x.added <= hi; x.added++ {
		args, err := aggArgs(x.r.ec, x.call.Agg, x.part[x.added])
		if err != nil {
			return types.NullDatum, err
		}
		if err := x.agg.Add(args); err != nil {
			return types.NullDatum, err
		}
	}
	return x.agg.Result()
}

// ntile is the bucket (1 to buckets) of row i of n: PostgreSQL's, the
// first n mod buckets buckets one row larger than the others.
func ntile(i, n, buckets int64) int64 {
	if buckets > n {
		return i + 1
	}
	size, extra := n/buckets, n%buckets
	if big := extra * (size + 1); i < big {
		return i/(size+1) + 1
	}
	return (i-extra*(size+1))/size + extra + 1
}
