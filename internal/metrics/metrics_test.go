package metrics_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/shaledb/shaledb/internal/consensus"
	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/metrics"
	"github.com/shaledb/shaledb/internal/rpc"
	"github.com/shaledb/shaledb/internal/storage"
	"github.com/shaledb/shaledb/internal/tablet"
	"github.com/shaledb/shaledb/internal/tserver"
	pb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// value returns the value of the series name{labels} (counter, gauge, or a
// histogram's sample count), and whether it exists.
func value(t *testing.T, reg *metrics.Registry, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Prometheus().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
					continue next
				}
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				return m.GetCounter().GetValue(), true
			case dto.MetricType_GAUGE:
				return m.GetGauge().GetValue(), true
			case dto.MetricType_HISTOGRAM:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}

// TestNodeMetricsMove starts a real one-node tablet server with the
// registry wired in, writes to a tablet, calls an RPC, and checks that the
// scraped series moved.
func TestNodeMetricsMove(t *testing.T) {
	reg := metrics.NewRegistry()
	n, err := tserver.Start(tserver.Config{
		NodeID: 1, ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(),
		Raft: consensus.Config{
			TickInterval: 20 * time.Millisecond, ElectionTicks: 5,
			VoteRefusalWindow: 200 * time.Millisecond, LeaseDuration: 80 * time.Millisecond,
		},
		Engine:        storage.Options{CacheSize: 4 << 20, MemTableSize: 2 << 20},
		ServerOptions: reg.ServerOptions(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.Stop() }()
	if err := reg.AddNode(metrics.ForNode(n)); err != nil {
		t.Fatal(err)
	}

	const table = 9
	tb, err := n.CreateTablet(tablet.Descriptor{ID: 1, TableID: table, Span: docdb.TableSpan(table)}, []uint64{1})
	if err != nil {
		t.Fatal(err)
	}
	consensustest.WaitFor(t, 10*time.Second, "a leaseholder", tb.Group().HasLease)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 20 {
		wb := &docdb.WriteBatch{Ops: []docdb.WriteOp{{Kind: docdb.OpPutRow,
			RowKey:  docdb.DocKey{TableID: table, RangeParts: []docdb.KeyPart{{Value: docdb.Int64(int64(i))}}}.Encode(),
			Columns: []docdb.ColumnValue{{ID: 1, Value: docdb.Text(fmt.Sprint("v", i))}}}}}
		if _, err := tb.Write(ctx, wb); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Engine().Flush(); err != nil {
		t.Fatal(err)
	}
	pool := rpc.NewPool()
	defer pool.Close()
	cc, err := pool.Conn(n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := pb.NewTabletServerClient(cc).ListTablets(ctx, &pb.ListTabletsRequest{}); err != nil {
			t.Fatal(err)
		}
	}

	atLeast := func(name string, labels map[string]string, min float64) {
		t.Helper()
		v, ok := value(t, reg, name, labels)
		if !ok {
			t.Fatalf("%s%v: no such series", name, labels)
		}
		if v < min {
			t.Fatalf("%s%v = %v, want at least %v", name, labels, v, min)
		}
	}
	atLeast("shale_raft_proposals_total", nil, 20)
	atLeast("shale_raft_entries_applied_total", nil, 20)
	atLeast("shale_raft_proposal_duration_seconds", nil, 20)
	atLeast("shale_raft_apply_duration_seconds", nil, 1)
	atLeast("shale_raft_cycle_duration_seconds", nil, 1)
	atLeast("shale_raft_fsync_duration_seconds", nil, 1)
	atLeast("shale_raft_fsyncs_total", nil, 1)
	atLeast("shale_pebble_wal_fsyncs_total", nil, 1)
	atLeast("shale_pebble_flushes_total", nil, 1)
	atLeast("shale_pebble_disk_usage_bytes", nil, 1)
	atLeast("shale_pebble_level_files", map[string]string{"level": "0"}, 0)
	atLeast("shale_transport_frames_sent_total", nil, 0)
	atLeast("shale_tablets_hosted", nil, 1)
	atLeast("shale_tablet_leaders", nil, 1)
	rpcLabels := map[string]string{"service": "shaledb.tserver.TabletServer", "method": "ListTablets"}
	atLeast("shale_rpc_server_handling_seconds", rpcLabels, 3)
	atLeast("shale_rpc_server_handled_total", map[string]string{"method": "ListTablets", "code": "OK"}, 3)
	atLeast("go_goroutines", nil, 1)

	// The intents gauge follows a transaction's intents on the tablet.
	intents := func() float64 {
		t.Helper()
		v, ok := value(t, reg, "shale_txn_intents", nil)
		if !ok {
			t.Fatal("shale_txn_intents: no such series")
		}
		return v
	}
	if v := intents(); v != 0 {
		t.Fatalf("shale_txn_intents = %v before any transaction", v)
	}
	txn := docdb.TxnID{1, 2, 3}
	intent := docdb.WriteOp{Kind: docdb.OpPutRow,
		RowKey:  docdb.DocKey{TableID: table, RangeParts: []docdb.KeyPart{{Value: docdb.Int64(1000)}}}.Encode(),
		Columns: []docdb.ColumnValue{{ID: 1, Value: docdb.Text("provisional")}}}
	if _, err := tb.WriteTxn(ctx, &tablet.TxnWrite{Txn: txn, Ops: []docdb.WriteOp{intent}}); err != nil {
		t.Fatal(err)
	}
	if v := intents(); v < 1 {
		t.Fatalf("shale_txn_intents = %v with a pending transaction's intent", v)
	}
	if err := tb.RemoveTxn(ctx, txn, false, 0); err != nil {
		t.Fatal(err)
	}
	if v := intents(); v != 0 {
		t.Fatalf("shale_txn_intents = %v after the transaction's removal", v)
	}

	// The handler serves the text format.
	rec := httptest.NewRecorder()
	reg.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{"# TYPE shale_raft_fsync_duration_seconds histogram", "shale_rpc_server_handling_seconds_bucket{", "shale_pebble_read_amplification "} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("/metrics lacks %q:\n%.2000s", want, body)
		}
	}

	// After the node stops, a scrape still works (Pebble's series vanish).
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Prometheus().Gather(); err != nil {
		t.Fatal(err)
	}
	if _, ok := value(t, reg, "shale_pebble_disk_usage_bytes", nil); ok {
		t.Fatal("Pebble metrics of a closed engine")
	}
	if _, ok := value(t, reg, "shale_txn_intents", nil); ok {
		t.Fatal("an intent count of a closed engine")
	}
}
