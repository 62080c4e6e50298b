package tablet

import "github.com/shaledb/shaledb/internal/docdb"

// SetTestHooks installs test hooks (see testHooks) until the returned
// function is called.
func SetTestHooks(txnApplied func(t *Tablet, txn docdb.TxnID), scanLockedRead func(t *Tablet)) (restore func()) {
	hooks.Store(&testHooks{txnApplied: txnApplied, scanLockedRead: scanLockedRead})
	return func() { hooks.Store(nil) }
}
