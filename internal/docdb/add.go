package docdb

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Adds (OpAddColumns) let an UPDATE of the form c = c + x run at the tablet
// in one write: YugabyteDB pushes such expressions down too. Read there,
// under the row's write latch after the conflicts are resolved, the value
// is the latest one, so the statement needs no read beforehand, and a
// read-committed update of a hot row cannot find it changed between its
// read and its write (which costs a locked read and a second write).

// ErrOutOfRange is what an *OutOfRangeError is (errors.Is).
var ErrOutOfRange = errors.New("docdb: value out of range")

// OutOfRangeError is an add whose result does not fit its column's type.
type OutOfRangeError struct {
	Index  int // of the op in its batch
	Column uint32
	Type   ValueType
}

func (e *OutOfRangeError) Error() string {
	return fmt.Sprintf("docdb: op %d: column %d: %s out of range", e.Index, e.Column, e.Type)
}

// Is makes errors.Is(err, ErrOutOfRange) hold.
func (e *OutOfRangeError) Is(target error) bool { return target == ErrOutOfRange }

// HasAdds reports whether any op is an OpAddColumns.
func HasAdds(ops []WriteOp) bool { return hasKind(ops, OpAddColumns) }

// AddRead reads the columns cols of a row as the writer sees it now: the
// latest committed version with the writer's own intents over it.
type AddRead func(rowKey []byte, cols []uint32) (Row, bool, error)

// Resolved is what ResolveAdds made of a batch.
type Resolved struct {
	// Ops: the batch with every add turned into the write it amounts to,
	// the adds whose row does not exist left out.
	Ops []WriteOp
	// Missing: the indexes (into the batch) of the adds left out.
	Missing []int
	// Sums: for each add that found its row, by its index in the batch,
	// the write it became (the new values: OpPutColumns, or OpDeleteColumns
	// for columns that stay NULL); nil without adds.
	Sums map[int]WriteOp
}

// ResolveAdds returns ops with every OpAddColumns turned into the
// OpPutColumns it amounts to, and the indexes (into ops) of the adds whose
// row does not exist, which are left out (an UPDATE finds no row). Each
// row is read once (read); the ops of the batch before an add count over
// it. A column that is NULL stays NULL (NULL + x is NULL): the add then
// writes a tombstone for it, which holds the row's lock as a write does;
// columns of other types than integers are refused. A sum outside its
// column's type fails the batch with an *OutOfRangeError.
func ResolveAdds(ops []WriteOp, read AddRead) (Resolved, error) {
	return resolve(ops, read, false)
}

// ResolveExisting is ResolveAdds for writes to rows that exist (SQL UPDATE
// and DELETE of one row outside a transaction): the column writes
// (OpPutColumns, OpDeleteColumns) and row deletes whose row does not
// exist, at that point of the batch, are left out and reported in Missing
// as the adds are.
func ResolveExisting(ops []WriteOp, read AddRead) (Resolved, error) {
	return resolve(ops, read, true)
}

// onExisting reports whether op writes nothing to a row that does not
// exist under ResolveExisting.
func onExisting(op *WriteOp) bool {
	switch op.Kind {
	case OpPutColumns, OpDeleteColumns, OpDeleteRow:
		return true
	}
	return false
}

func resolve(ops []WriteOp, read AddRead, existing bool) (Resolved, error) {
	if !HasAdds(ops) && !existing {
		return Resolved{Ops: ops}, nil
	}
	res := Resolved{Ops: make([]WriteOp, 0, len(ops)), Sums: map[int]WriteOp{}}
	// The columns each row's adds need (none, not nil, for a row whose
	// presence alone matters).
	need := map[string][]uint32{}
	for i := range ops {
		op := &ops[i]
		if err := op.validate(); err != nil {
			return Resolved{}, fmt.Errorf("op %d: %w", i, err)
		}
		if existing && onExisting(op) && need[string(op.RowKey)] == nil {
			need[string(op.RowKey)] = []uint32{}
		}
		if op.Kind != OpAddColumns {
			continue
		}
		cols := need[string(op.RowKey)]
		for _, c := range op.Columns {
			if !slices.Contains(cols, c.ID) {
				cols = append(cols, c.ID)
			}
		}
		need[string(op.RowKey)] = cols
	}
	rows := map[string]*addRow{}
	for i := range ops {
		op := ops[i]
		r := rows[string(op.RowKey)]
		if cols := need[string(op.RowKey)]; r == nil && cols != nil {
			// Read as the row was before the batch.
			slices.Sort(cols)
			row, found, err := read(op.RowKey, cols)
			if err != nil {
				return Resolved{}, err
			}
			r = &addRow{presence: rowPresence{loaded: true, marker: found}, vals: map[uint32]Value{}}
			for _, c := range row.Columns {
				r.vals[c.ID] = c.Value
			}
			rows[string(op.RowKey)] = r
		}
		if op.Kind != OpAddColumns {
			if existing && onExisting(&op) && !r.presence.exists() {
				res.Missing = append(res.Missing, i)
				continue
			}
			if r != nil {
				r.apply(&op)
			}
			res.Ops = append(res.Ops, op)
			continue
		}
		if !r.presence.exists() {
			res.Missing = append(res.Missing, i)
			continue
		}
		put := WriteOp{Kind: OpPutColumns, RowKey: op.RowKey, TTL: op.TTL}
		var nulls []ColumnValue
		for _, c := range op.Columns {
			cur, ok := r.vals[c.ID]
			if !ok || cur.Type == TypeNull {
				nulls = append(nulls, ColumnValue{ID: c.ID})
				continue
			}
			sum, err := addInt(cur, c.Value.Int)
			if err != nil {
				if errors.Is(err, ErrOutOfRange) {
					return Resolved{}, &OutOfRangeError{Index: i, Column: c.ID, Type: cur.Type}
				}
				return Resolved{}, fmt.Errorf("op %d: column %d: %w", i, c.ID, err)
			}
			put.Columns = append(put.Columns, ColumnValue{ID: c.ID, Value: sum})
		}
		if len(put.Columns) == 0 {
			// Every column is NULL: write their tombstones, which change
			// nothing but hold the lock an UPDATE takes.
			put = WriteOp{Kind: OpDeleteColumns, RowKey: op.RowKey, Columns: nulls}
		}
		r.apply(&put)
		res.Ops = append(res.Ops, put)
		res.Sums[i] = put
	}
	return res, nil
}

// addRow is a row of ResolveAdds as the batch has left it so far: whether
// it exists (rowPresence, its read counting as the row's marker) and the
// values of the columns its adds read.
type addRow struct {
	presence rowPresence
	vals     map[uint32]Value
}

func (r *addRow) apply(op *WriteOp) {
	r.presence.apply(op)
	switch op.Kind {
	case OpDeleteRow:
		clear(r.vals)
	case OpDeleteColumns:
		for _, c := range op.Columns {
			delete(r.vals, c.ID)
		}
	default:
		for _, c := range op.Columns {
			r.vals[c.ID] = c.Value
		}
	}
}

// addInt adds delta to the integer v, within v's type.
func addInt(v Value, delta int64) (Value, error) {
	var lo, hi int64
	switch v.Type {
	case TypeInt16:
		lo, hi = math.MinInt16, math.MaxInt16
	case TypeInt32:
		lo, hi = math.MinInt32, math.MaxInt32
	case TypeInt64:
		lo, hi = math.MinInt64, math.MaxInt64
	default:
		return Value{}, fmt.Errorf("an add needs an integer column, not %s", v.Type)
	}
	if delta > 0 && v.Int > hi-delta || delta < 0 && v.Int < lo-delta {
		return Value{}, ErrOutOfRange
	}
	v.Int += delta
	return v, nil
}
