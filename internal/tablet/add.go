package tablet

import (
	"context"
	"errors"

	"github.com/cockroachdb/pebble/v2"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
)

// ErrAddOutsideTxn refuses an add (docdb.OpAddColumns) in a plain write:
// only transactional writes resolve them (see txnAdds).
var ErrAddOutsideTxn = errors.New("tablet: an add (c = c + x) needs a transaction")

// txnAdds resolves the adds (docdb.OpAddColumns) of w: it reads each of
// their rows as w.Txn sees it now, the latest committed version
// (committed transactions not yet applied here included, as any read sees
// them) with the transaction's own earlier writes over it, and returns a
// copy of w whose adds are the puts they amount to, with the indexes of
// the adds that found no row (left out) and the writes the others became
// (docdb.Resolved). The caller holds the rows' write
// latches and has resolved every other transaction's intent on them, so
// the value read stays the latest until this write applies: that is what
// lets an UPDATE c = c + x skip its read.
func (t *Tablet) txnAdds(ctx context.Context, w *TxnWrite) (*TxnWrite, docdb.Resolved, error) {
	if !docdb.HasAdds(w.Ops) {
		return w, docdb.Resolved{Ops: w.Ops}, nil
	}
	noLatch := func() (func(), error) { return func() {}, nil } // the caller's write latches cover the rows
	read := func(rowKey []byte, cols []uint32) (row docdb.Row, found bool, err error) {
		span := docdb.RowSpan(rowKey)
		own := t.txns.mayHaveIntents(1, func(int) []byte { return rowKey })
		// No read time and no global limit: the read is at now, with no
		// uncertainty window (readLimit is never called).
		_, err = t.readTxn(ctx, span, TxnRead{Txn: w.Txn}, pointWindow, noLatch, func(rv readView, at hlc.Timestamp, _ *docdb.Uncertainty) error {
			r := rv.r
			if own {
				// The own intents (before this request's write ids: later
				// ones are an earlier attempt of it) as versions at the
				// read time, above every committed one.
				b, isBatch := r.(*pebble.Batch)
				if !isBatch {
					b = t.eng.NewIndexedBatch()
					defer b.Close()
				}
				if _, err := docdb.OverlayOwnIntents(t.eng, b, t.desc.ID, w.Txn, at, span, w.WriteID); err != nil {
					return err
				}
				r = b
			}
			var err error
			row, found, err = docdb.GetRow(r, rowKey, docdb.ReadOptions{ReadTime: at, Columns: cols})
			return err
		}, nil)
		return row, found, err
	}
	res, err := docdb.ResolveAdds(w.Ops, read)
	if err != nil {
		return nil, docdb.Resolved{}, err
	}
	cp := *w
	cp.Ops = res.Ops
	return &cp, res, nil
}
