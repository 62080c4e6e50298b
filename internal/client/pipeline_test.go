package client_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/server/servertest"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// localNode is what a node offers its own client in process.
type localNode interface {
	client.LocalServer
	client.EarlyServer
}

// droppingLocal serves its node's calls in process and, while drop is
// set, turns the final answer of each pipelined write that was answered
// provisionally into a failure, as if its entry had been dropped after the
// proposal (a leader that lost its lease).
type droppingLocal struct {
	localNode
	drop           atomic.Bool
	early, dropped atomic.Int64
}

func (l *droppingLocal) ServeDataEarly(ctx context.Context, req *tspb.DataRequest, early func(*tspb.DataResponse)) (*tspb.DataResponse, error) {
	provisional := false
	resp, err := l.localNode.ServeDataEarly(ctx, req, func(r *tspb.DataResponse) {
		provisional = true
		l.early.Add(1)
		early(r)
	})
	if err == nil && provisional && l.drop.Load() {
		l.dropped.Add(1)
		resp.GetTxnWrite().Error = &tspb.TabletError{Code: tspb.TabletError_AMBIGUOUS, Message: "test: the entry was dropped"}
	}
	return resp, err
}

// TestPipelinedTxn: a pipelined transaction's writes, answered once
// proposed, are read back (from its own writes and from the tablets),
// rolled back to a savepoint and committed as a plain transaction's; a
// write that fails after its provisional answer fails the commit with
// CodeTxnAborted and none of the transaction's writes stay.
func TestPipelinedTxn(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	local := &droppingLocal{localNode: c.Servers[0].Node()}
	cl := openWith(t, c, client.Config{Local: local, LocalAddr: c.Addrs[0]})
	tb := create(t, cl, hashTable("pipelined", 6))
	ctx := ctxT(t)
	const n = 24
	put := func(tx *client.Txn, i int, v int64) {
		t.Helper()
		if err := tx.Put(ctx, tb, client.Row{"k": docdb.Text(key(i)), "v": docdb.Int64(v)}); err != nil {
			t.Fatal(err)
		}
	}
	scan := func(tx *client.Txn) map[string]int64 {
		t.Helper()
		got, err := tx.Scan(ctx, tb, client.ScanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int64{}
		for _, r := range got {
			m[string(r["k"].Bytes)] = r["v"].Int
		}
		return m
	}
	opts := client.TxnOptions{Isolation: client.Snapshot, Pipelined: true}

	tx, err := cl.Begin(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		put(tx, i, 1000+int64(i))
	}
	if r, found, err := tx.Get(ctx, tb, client.Row{"k": docdb.Text(key(3))}); err != nil || !found || r["v"].Int != 1003 {
		t.Fatalf("own row 3: %v %v %v", r, found, err)
	}
	if err := tx.Savepoint("a"); err != nil {
		t.Fatal(err)
	}
	for i := n; i < n+12; i++ {
		put(tx, i, 1000+int64(i))
	}
	if got := scan(tx); len(got) != n+12 {
		t.Fatalf("the transaction's scan saw %d rows, want %d", len(got), n+12)
	}
	if err := tx.RollbackToSavepoint(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if got := scan(tx); len(got) != n {
		t.Fatalf("after the savepoint rollback the scan saw %d rows, want %d", len(got), n)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	checkCommitted := func() {
		t.Helper()
		got, err := tb.ScanAll(ctx, client.ScanOptions{})
		if err != nil || len(got) != n {
			t.Fatalf("committed rows: %d, %v; want %d", len(got), err, n)
		}
		for _, r := range got {
			var i int
			for i = 0; i < n && key(i) != string(r["k"].Bytes); i++ {
			}
			if i == n || r["v"].Int != 1000+int64(i) {
				t.Fatalf("committed row %v", r)
			}
		}
	}
	checkCommitted()
	// Node 1 leads some of the 6 tablets: writes there were pipelined in
	// process (those to the other nodes over their data streams).
	if local.early.Load() == 0 {
		t.Fatal("no write was answered provisionally in process")
	}

	local.drop.Store(true)
	tx, err = cl.Begin(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	// A later request to the tablet of a failed write fails too; the
	// commit fails in any case.
	for i := range n {
		if err := tx.Put(ctx, tb, client.Row{"k": docdb.Text(key(i)), "v": docdb.Int64(-1)}); err != nil {
			if code, _ := client.CodeOf(err); code != client.CodeTxnAborted {
				t.Fatalf("a write after a pipelined write failed: %v, want %s", err, client.CodeTxnAborted)
			}
			break
		}
	}
	err = tx.Commit(ctx)
	local.drop.Store(false)
	if code, _ := client.CodeOf(err); code != client.CodeTxnAborted {
		t.Fatalf("commit after a pipelined write failed: %v, want %s", err, client.CodeTxnAborted)
	}
	if local.dropped.Load() == 0 {
		t.Fatal("no pipelined write's final answer was turned into a failure")
	}
	checkCommitted()
}
