package docdb

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/storage"
)

// INSERT semantics (OpInsertRow): the tablet leader checks, under the
// latches of the batch's rows and after waiting out other transactions'
// intents on them, that no row an insert writes exists, with
// CheckInserts; then it replicates the batch with the inserts turned into
// puts (InsertsAsPuts). YugabyteDB checks duplicate primary keys in
// DocDB's write path the same way, instead of a read per row.

// ErrDuplicateKey is what a *DuplicateKeyError is (errors.Is).
var ErrDuplicateKey = errors.New("docdb: duplicate key")

// DuplicateKeyError: op Index of a batch (an OpInsertRow) inserts a row
// that exists. Nothing of the batch is written.
type DuplicateKeyError struct {
	Index  int
	RowKey []byte
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("docdb: duplicate key: op %d inserts row %x, which exists", e.Index, e.RowKey)
}

// Is makes errors.Is(err, ErrDuplicateKey) hold.
func (e *DuplicateKeyError) Is(target error) bool { return target == ErrDuplicateKey }

// HasInserts reports whether any op is an OpInsertRow.
func HasInserts(ops []WriteOp) bool { return hasKind(ops, OpInsertRow) }

func hasKind(ops []WriteOp, k OpKind) bool {
	return slices.ContainsFunc(ops, func(op WriteOp) bool { return op.Kind == k })
}

// InsertsAsPuts returns ops with every OpInsertRow turned into OpPutRow (a
// copy; ops itself when it has no insert). What a checked insert writes is
// exactly what a put writes, so the replicated command carries a put.
func InsertsAsPuts(ops []WriteOp) []WriteOp {
	if !HasInserts(ops) {
		return ops
	}
	out := slices.Clone(ops)
	for i := range out {
		if out[i].Kind == OpInsertRow {
			out[i].Kind = OpPutRow
		}
	}
	return out
}

// InsertCheck configures CheckInserts.
type InsertCheck struct {
	// ReadTime: the committed versions at or below it count; the tablet
	// passes its clock's now, so the latest committed version decides.
	// Expiry (TTL) is judged at it too.
	ReadTime hlc.Timestamp
	// Txn is the writing transaction, zero for a write outside any. Its
	// own provisional writes (strong write intents) count over the
	// committed data, as its reads see them: per key the highest write id
	// wins, an own row tombstone hides the committed row and own column
	// writes older than it. Intents a savepoint rollback removed are gone,
	// so they do not count.
	Txn TxnID
	// OwnBefore: only own intents with write ids below it count. The
	// batch's own write ids start at OwnBefore, and intents at or above it
	// can only be an earlier attempt of this very batch (a retried
	// request), which must not make the batch collide with itself.
	OwnBefore uint32
}

// CheckInserts checks the OpInsertRow ops of a batch about to be written:
// it returns a *DuplicateKeyError naming the first insert, in batch order,
// whose row exists at that point: in the data (and the transaction's own
// intents, see InsertCheck) or through an earlier op of the batch (a put,
// an update that sets a column, or an earlier insert of the same row; an
// earlier delete makes the row absent again). A row exists if its
// liveness marker or any column is visible (GetRow's rule).
//
// The caller holds the rows' write latches and has resolved every other
// transaction's intent on them (Conflicts), so that the data is the whole
// truth until its write applies. Only the rows of inserts are read: one
// seek for a row with no version, a few for one with versions.
func CheckInserts(r pebble.Reader, ops []WriteOp, c InsertCheck) error {
	rows := map[string]*rowPresence{}
	var lo, hi []byte
	for i := range ops {
		op := &ops[i]
		if err := op.validate(); err != nil {
			return fmt.Errorf("op %d: %w", i, err)
		}
		if op.Kind != OpInsertRow || rows[string(op.RowKey)] != nil {
			continue
		}
		rows[string(op.RowKey)] = &rowPresence{}
		if lo == nil || bytes.Compare(op.RowKey, lo) < 0 {
			lo = op.RowKey
		}
		if hi == nil || bytes.Compare(op.RowKey, hi) > 0 {
			hi = op.RowKey
		}
	}
	if len(rows) == 0 {
		return nil
	}
	span := storage.Span{Start: lo, End: rowEnd(hi)}
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: span.Start, UpperBound: span.End, UseL6Filters: lookupsMostlyMiss})
	if err != nil {
		return err
	}
	defer it.Close()
	var own *pebble.Iterator
	if !c.Txn.IsZero() {
		is := IntentSpanOf(span)
		if own, err = r.NewIter(&pebble.IterOptions{LowerBound: is.Start, UpperBound: is.End, UseL6Filters: lookupsMostlyMiss}); err != nil {
			return err
		}
		defer own.Close()
	}
	rr := newRowReader(it, c.ReadTime, nil)
	rr.prefix = true // it reads one row at a time
	for i := range ops {
		op := &ops[i]
		p := rows[string(op.RowKey)]
		if p == nil {
			continue // no insert of this row in the batch
		}
		if !p.loaded {
			if err := p.load(rr, own, op.RowKey, c); err != nil {
				return err
			}
		}
		if op.Kind == OpInsertRow && p.exists() {
			return &DuplicateKeyError{Index: i, RowKey: slices.Clone(op.RowKey)}
		}
		p.apply(op)
	}
	return nil
}

// rowPresence is what decides whether a row exists: its visible liveness
// marker, and, when there is none, its visible columns.
type rowPresence struct {
	loaded bool
	marker bool
	cols   map[uint32]bool // visible columns; complete when !marker
}

func (p *rowPresence) exists() bool { return p.marker || len(p.cols) > 0 }

func (p *rowPresence) setCol(col uint32, live bool) {
	if live {
		if p.cols == nil {
			p.cols = map[uint32]bool{}
		}
		p.cols[col] = true
	} else {
		delete(p.cols, col)
	}
}

// apply is op's effect on the row. A put of the row sets the marker, which
// only a row delete takes away again, so once it is set the columns no
// longer matter.
func (p *rowPresence) apply(op *WriteOp) {
	switch op.Kind {
	case OpPutRow, OpInsertRow:
		p.marker = true
	case OpPutColumns:
		for _, c := range op.Columns {
			p.setCol(c.ID, true)
		}
	case OpDeleteRow:
		p.marker = false
		clear(p.cols)
	case OpDeleteColumns:
		for _, c := range op.Columns {
			p.setCol(c.ID, false)
		}
	}
}

// ownIntent is the newest own provisional write of one key.
type ownIntent struct {
	wid       uint32
	tombstone bool
}

// load reads the row's committed presence at c.ReadTime and lays the
// transaction's own intents over it (see InsertCheck.Txn).
func (p *rowPresence) load(rr *rowReader, own *pebble.Iterator, rowKey []byte, c InsertCheck) error {
	p.loaded = true
	var rowOwn *ownIntent
	var colOwn map[uint32]ownIntent
	if own != nil {
		var err error
		if rowOwn, colOwn, err = readOwnIntents(own, rowKey, c.Txn, c.OwnBefore); err != nil {
			return err
		}
	}
	if rowOwn != nil && rowOwn.tombstone {
		// The own row delete hides everything committed and every own
		// column write before it.
		for col, in := range colOwn {
			if in.wid > rowOwn.wid {
				p.setCol(col, !in.tombstone)
			}
		}
		return nil
	}
	if rowOwn != nil {
		p.marker = true // an own put of the row: its liveness marker
		return nil
	}
	rl, err := rr.readRowLevel(rowKey)
	if err != nil {
		return err
	}
	if rl.markerLive {
		p.marker = true
		return nil
	}
	err = rr.readAllColumns(rowKey, rl, func(col uint32, _ version, _ storedValue) error {
		p.setCol(col, true)
		return nil
	})
	if err != nil {
		return err
	}
	for col, in := range colOwn {
		p.setCol(col, !in.tombstone)
	}
	return nil
}

// readOwnIntents returns txn's newest strong write intent (write id below
// before) on the row level of rowKey and on each of its columns. it
// iterates the intent key space.
func readOwnIntents(it *pebble.Iterator, rowKey []byte, txn TxnID, before uint32) (*ownIntent, map[uint32]ownIntent, error) {
	span := IntentSpanOf(RowSpan(rowKey))
	var row *ownIntent
	var cols map[uint32]ownIntent
	// span.Start is the prefix of every intent on the row (Comparer).
	for valid := it.SeekPrefixGE(span.Start); valid && bytes.Compare(it.Key(), span.End) < 0; valid = it.Next() {
		k, err := decodeIntentKey(it.Key())
		if err != nil {
			return nil, nil, err
		}
		if k.typ != StrongWrite || k.wid >= before {
			continue
		}
		raw, err := it.ValueAndErr()
		if err != nil {
			return nil, nil, err
		}
		if len(raw) < txnIDLen || !bytes.Equal(raw[:txnIDLen], txn[:]) {
			continue
		}
		iv, err := decodeIntentValue(k.typ, raw)
		if err != nil {
			return nil, nil, err
		}
		in := ownIntent{wid: k.wid, tombstone: iv.tombstone}
		if k.col == LivenessColumn {
			if row == nil || in.wid > row.wid {
				row = &in
			}
			continue
		}
		if cur, ok := cols[k.col]; !ok || in.wid > cur.wid {
			if cols == nil {
				cols = map[uint32]ownIntent{}
			}
			cols[k.col] = in
		}
	}
	return row, cols, it.Error()
}
