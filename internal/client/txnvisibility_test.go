package client_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
)

// TestTxnCommitVisibleToScans: a transaction of a thousand rows over six
// tablets commits while other clients run snapshot scans back to back, as
// the participants apply its intents in the background. Every scan sees
// all of its rows or none (atomic visibility), and every scan that began
// after the commit was acknowledged sees all of them.
func TestTxnCommitVisibleToScans(t *testing.T) {
	if testing.Short() {
		t.Skip("thousands of transactional writes")
	}
	c, w, tb := txnSetup(t, "visible", 6)
	const rounds, rows, batch, readers = 4, 3000, 500, 3
	for round := 0; round < rounds; round++ {
		tx := begin(t, w, client.Snapshot)
		for from := 0; from < rows; from += batch {
			// As YSQL inserts: lock the rows FOR UPDATE, then write them.
			ops := make([]client.Op, 0, batch)
			keys := make([]client.Row, 0, batch)
			for i := from; i < from+batch; i++ {
				k := docdb.Text(fmt.Sprintf("r%d-%05d", round, i))
				keys = append(keys, client.Row{"k": k})
				ops = append(ops, client.Op{Kind: client.OpPut, Row: client.Row{"k": k, "v": docdb.Int64(int64(round)), "s": docdb.Text("payload")}})
			}
			if _, err := tx.Lock(ctxT(t), tb, keys, client.ForUpdate, client.WaitOnConflict); err != nil {
				t.Fatal(err)
			}
			if err := tx.Apply(ctxT(t), tb, ops); err != nil {
				t.Fatal(err)
			}
		}
		// Readers scan (each on its own client: no clock shared with the
		// writer) until a few scans begun after the acknowledgement are
		// done.
		var acked atomic.Bool
		var wg sync.WaitGroup
		errs := make(chan error, readers)
		for range readers {
			r := open(t, c)
			rtb, err := r.OpenTable(ctxT(t), "test", "visible")
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for after := 0; after < 3; {
					began := acked.Load()
					got := 0
					err := r.RunTxn(ctxT(t), client.TxnOptions{Isolation: client.Snapshot}, func(ctx context.Context, rx *client.Txn) error {
						all, err := rx.Scan(ctx, rtb, client.ScanOptions{ReadOptions: client.ReadOptions{Columns: []string{"v"}}})
						got = 0
						for _, row := range all {
							if row["v"].Int == int64(round) {
								got++
							}
						}
						return err
					})
					switch {
					case err != nil:
						errs <- err
						return
					case got != 0 && got != rows:
						errs <- fmt.Errorf("round %d: a scan saw %d of the transaction's %d rows (begun after the commit: %v)", round, got, rows, began)
						return
					case began && got != rows:
						errs <- fmt.Errorf("round %d: a scan begun after the commit was acknowledged saw none of its %d rows", round, rows)
						return
					}
					if began {
						after++
					}
				}
			}()
		}
		if err := tx.Commit(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		acked.Store(true)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if t.Failed() {
			return
		}
	}
}
