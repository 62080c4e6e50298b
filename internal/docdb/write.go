package docdb

import (
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/shaledb/shaledb/internal/hlc"
)

// OpKind is the kind of a WriteOp.
type OpKind uint8

const (
	// OpPutRow writes the liveness marker and the given columns (INSERT).
	OpPutRow OpKind = iota + 1
	// OpPutColumns writes the given columns only (UPDATE): the row then
	// exists only as long as one of its columns or an older marker does.
	OpPutColumns
	// OpDeleteRow writes a row tombstone, hiding the marker and every column
	// version written at or before it.
	OpDeleteRow
	// OpDeleteColumns writes a tombstone for each given column id.
	OpDeleteColumns
	// OpInsertRow is OpPutRow on a row that must not exist (SQL INSERT):
	// the tablet leader checks it under the row's latch (CheckInserts) and
	// fails the whole batch with a *DuplicateKeyError if the row exists;
	// otherwise it writes exactly what OpPutRow writes. Only the leader's
	// check differs, so the tablet replicates it as OpPutRow (InsertsAsPuts)
	// and everything that writes versions or intents treats it as one.
	OpInsertRow
	// OpAddColumns adds a delta (an Int64 value per column) to integer
	// columns of a row that exists (SQL UPDATE ... SET c = c + x): the
	// tablet leader reads the row under its latch and turns the op into
	// the OpPutColumns it amounts to (ResolveAdds), so it is never
	// replicated, written or applied as such.
	OpAddColumns

	maxOpKind = OpAddColumns
)

var opKindNames = [...]string{"invalid", "put_row", "put_cols", "delete_row", "delete_cols", "insert_row", "add_cols"}

func (k OpKind) String() string {
	if k <= maxOpKind {
		return opKindNames[k]
	}
	return fmt.Sprintf("op(%d)", uint8(k))
}

// ColumnValue is one column of a row.
type ColumnValue struct {
	ID    uint32
	Value Value
}

// size is about the bytes a column value takes encoded, in a batch or a
// returned row (an upper bound for the fixed-size types).
func (c ColumnValue) size() int { return 24 + len(c.Value.Bytes) }

// Size is about the bytes the op takes in an encoded batch: what bounds a
// request or a Raft entry.
func (op *WriteOp) Size() int {
	n := 24 + len(op.RowKey)
	for _, c := range op.Columns {
		n += c.size()
	}
	return n
}

// WriteOp is one write to one row.
type WriteOp struct {
	Kind    OpKind
	RowKey  []byte        // DocKey.Encode()
	Columns []ColumnValue // for puts; for OpDeleteColumns only IDs matter
	TTL     time.Duration // 0 = no expiry; applies to every value this op writes
}

// WriteBatch is the unit of replication: every op of a batch is applied at
// the same hybrid time. See batch_codec.go for its wire format.
type WriteBatch struct {
	Ops []WriteOp
}

// validate checks an op before anything of it is written, so that a bad op
// fails the batch instead of leaving half a row behind.
func (op *WriteOp) validate() error {
	if op.Kind == 0 || op.Kind > maxOpKind {
		return fmt.Errorf("docdb: invalid op kind %d", op.Kind)
	}
	if !IsRowKey(op.RowKey) {
		return fmt.Errorf("docdb: %s: malformed row key %x", op.Kind, op.RowKey)
	}
	if op.TTL < 0 {
		return fmt.Errorf("docdb: %s: negative TTL %v", op.Kind, op.TTL)
	}
	for _, c := range op.Columns {
		if c.ID == LivenessColumn {
			return fmt.Errorf("docdb: %s: column id %d is reserved for the liveness marker", op.Kind, LivenessColumn)
		}
		if c.Value.Type >= numValueTypes {
			return fmt.Errorf("docdb: %s: column %d has invalid type %d", op.Kind, c.ID, c.Value.Type)
		}
		if op.Kind == OpAddColumns && c.Value.Type != TypeInt64 {
			return fmt.Errorf("docdb: %s: column %d: the delta must be an int64, not %s", op.Kind, c.ID, c.Value.Type)
		}
	}
	if op.Kind == OpAddColumns && len(op.Columns) == 0 {
		return fmt.Errorf("docdb: %s: no column", op.Kind)
	}
	return nil
}

// validateResolved is validate for the paths that write ops as versions or
// intents: an OpAddColumns must have been resolved by the leader first.
func (op *WriteOp) validateResolved() error {
	if op.Kind == OpAddColumns {
		return fmt.Errorf("docdb: %s reached the engine unresolved (ResolveAdds)", op.Kind)
	}
	return op.validate()
}

// batchSetter is the part of a pebble.Batch that ApplyWriteBatch needs;
// writing into a batch is atomic and needs no write options.
type batchSetter interface {
	Set(key, value []byte, o *pebble.WriteOptions) error
}

// batchMaker is implemented by *pebble.DB (and storage.Engine).
type batchMaker interface {
	NewBatch(opts ...pebble.BatchOption) *pebble.Batch
}

// ApplyWriteBatch writes every op of b at hybrid time ht into w. Op i gets
// write id i so later ops of one batch win over earlier ones at the same ht.
//
// The batch is validated first and nothing is written if any op is
// malformed. w is normally a *pebble.Batch (committed by the caller together
// with the applied index); when w is a *pebble.DB the ops are collected in a
// private batch and applied atomically without sync, because the durability
// of replicated writes comes from the Raft log.
func ApplyWriteBatch(w pebble.Writer, ht hlc.Timestamp, b *WriteBatch) error {
	for i := range b.Ops {
		if err := b.Ops[i].validateResolved(); err != nil {
			return fmt.Errorf("op %d: %w", i, err)
		}
	}
	var target batchSetter = w
	var own *pebble.Batch
	if _, isBatch := w.(*pebble.Batch); !isBatch {
		if bm, ok := w.(batchMaker); ok {
			own = bm.NewBatch()
			defer own.Close()
			target = own
		}
	}
	var key, val []byte
	for i := range b.Ops {
		op := &b.Ops[i]
		v := version{ht: ht, wid: uint32(i)}
		hasExpiry := op.TTL > 0
		var expiry hlc.Timestamp
		if hasExpiry {
			expiry = expiryOf(ht, op.TTL)
		}
		switch op.Kind {
		case OpPutRow, OpInsertRow, OpDeleteRow:
			key = rowVersionKey(key[:0], op.RowKey, v)
			val = appendStoredValue(val[:0], op.Kind == OpDeleteRow, hasExpiry && op.Kind != OpDeleteRow, expiry, Null())
			if err := target.Set(key, val, pebble.NoSync); err != nil {
				return err
			}
		}
		if op.Kind == OpDeleteRow {
			continue
		}
		tomb := op.Kind == OpDeleteColumns
		for _, c := range op.Columns {
			key = columnVersionKey(key[:0], op.RowKey, c.ID, v)
			val = appendStoredValue(val[:0], tomb, hasExpiry && !tomb, expiry, c.Value)
			if err := target.Set(key, val, pebble.NoSync); err != nil {
				return err
			}
		}
	}
	if own != nil {
		return w.Apply(own, pebble.NoSync)
	}
	return nil
}

// expiryOf returns the hybrid time at which a value written at ht with a
// positive ttl expires: sub-microsecond TTLs expire at once, and TTLs past
// the end of the clock's range saturate instead of wrapping into the past.
func expiryOf(ht hlc.Timestamp, ttl time.Duration) hlc.Timestamp {
	us := ttl.Microseconds()
	if us > hlc.MaxTimestamp.Physical()-ht.Physical() {
		return hlc.MaxTimestamp
	}
	return ht.Add(ttl)
}
