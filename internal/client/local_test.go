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

// countingLocal counts the calls a client serves in process.
type countingLocal struct {
	client.LocalServer
	calls atomic.Int64
}

func (l *countingLocal) ServeData(ctx context.Context, req *tspb.DataRequest) (*tspb.DataResponse, error) {
	l.calls.Add(1)
	return l.LocalServer.ServeData(ctx, req)
}

// TestLocalCalls: a client given its node's tserver (Config.Local, as the
// YSQL and YCQL gateways are) serves the calls to the tablets that node
// leads in process and the others over the network, with the same results:
// plain writes, reads, scans and a transaction across the tablets.
func TestLocalCalls(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	local := &countingLocal{LocalServer: c.Servers[0].Node()}
	cl := openWith(t, c, client.Config{Local: local, LocalAddr: c.Addrs[0]})
	tb := create(t, cl, hashTable("local", 6))
	const n = 120
	putKV(t, tb, 0, n)
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	checkKV(t, tb, all)
	if got, err := tb.ScanAll(ctxT(t), client.ScanOptions{PageSize: 17}); err != nil || len(got) != n {
		t.Fatalf("scan: %d rows, %v", len(got), err)
	}
	tx, err := cl.Begin(ctxT(t), client.TxnOptions{Isolation: client.Snapshot})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		if err := tx.Put(ctxT(t), tb, client.Row{"k": docdb.Text(key(i)), "v": docdb.Int64(1000 + int64(i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		r, found, err := tb.Get(ctxT(t), client.Row{"k": docdb.Text(key(i))})
		if err != nil || !found || r["v"].Int != 1000+int64(i) {
			t.Fatalf("row %d after the transaction: %v %v %v", i, r, found, err)
		}
	}
	// Node 1 leads some of the 6 tablets (leaders are balanced): the calls
	// to those ran in process.
	if local.calls.Load() == 0 {
		t.Fatal("no call was served in process")
	}
	t.Logf("%d calls in process", local.calls.Load())
}
