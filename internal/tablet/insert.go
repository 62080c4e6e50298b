package tablet

import (
	"context"

	"github.com/shaledb/shaledb/internal/docdb"
)

// insertsChecked checks the inserts (docdb.OpInsertRow) of a batch about
// to be written and returns the ops to replicate, with the inserts turned
// into puts; ops itself when it has none. The caller holds the rows' write
// latches and has found no conflicting intent of another transaction on
// them, so the latest committed data and txn's own intents decide (see
// docdb.CheckInserts). A row that exists fails the batch with a
// *docdb.DuplicateKeyError (errors.Is docdb.ErrDuplicateKey).
func (t *Tablet) insertsChecked(ctx context.Context, ops []docdb.WriteOp, txn docdb.TxnID, firstWriteID uint32) ([]docdb.WriteOp, error) {
	if !docdb.HasInserts(ops) {
		return ops, nil
	}
	// Only the leaseholder's data is the latest (and WriteTxn checked it
	// already: then this is cheap).
	if err := t.leaderReady(ctx); err != nil {
		return nil, err
	}
	if !t.txns.mayHaveIntents(len(ops), func(i int) []byte { return ops[i].RowKey }) {
		txn = docdb.TxnID{} // no intents on these rows, own ones included
	}
	// Every applied version is at or below the clock (applies move it up),
	// so reading at now sees the latest committed version of each row.
	err := docdb.CheckInserts(t.eng, ops, docdb.InsertCheck{ReadTime: t.clock.Now(), Txn: txn, OwnBefore: firstWriteID})
	if err != nil {
		return nil, err
	}
	return docdb.InsertsAsPuts(ops), nil
}

// txnInserts is insertsChecked for a transactional write: w itself when it
// has no insert, else a copy whose ops are checked and turned into puts.
func (t *Tablet) txnInserts(ctx context.Context, w *TxnWrite) (*TxnWrite, error) {
	if !docdb.HasInserts(w.Ops) {
		return w, nil
	}
	ops, err := t.insertsChecked(ctx, w.Ops, w.Txn, w.WriteID)
	if err != nil {
		return nil, err
	}
	cp := *w
	cp.Ops = ops
	return &cp, nil
}
