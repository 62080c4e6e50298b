package workload_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/master/masterpb"

	"github.com/shaledb/shaledb/internal/server/servertest"
	"github.com/shaledb/shaledb/internal/workload"
)

// TestKeyValue runs the KeyValue workload on a 3-node cluster and stops the
// node with the most tablet leaders in the middle: the workload goes on,
// every read checks out, and the final verify finds every acknowledged
// write.
func TestKeyValue(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	c.WaitMasters(20 * time.Second)
	var js bytes.Buffer
	out := &syncBuffer{}
	duration := 6 * time.Second
	if testing.Short() {
		duration = 3 * time.Second
	}
	done := make(chan struct{})
	var sum workload.Summary
	var err error
	go func() {
		defer close(done)
		sum, err = workload.Run(context.Background(), workload.Config{
			Nodes: c.Addrs, WriteThreads: 4, ReadThreads: 4, UniqueKeys: 2000, ValueSize: 64,
			Duration: duration, NumTablets: 6, Verify: true, ReportEvery: time.Second, Out: out, JSON: &js,
		})
	}()
	// Stop a node once the workload is under way (two progress lines);
	// its data must survive on the other two.
	consensustest.WaitFor(t, 30*time.Second, "the workload under way", func() bool {
		return strings.Count(out.String(), "| Uptime: ") >= 2
	})
	c.Stop(2)
	<-done
	t.Logf("progress:\n%s", out.String())
	if err != nil {
		t.Fatalf("workload: %v", err)
	}
	var parsed workload.Summary
	if err := json.Unmarshal(js.Bytes(), &parsed); err != nil {
		t.Fatalf("summary line %q: %v", js.String(), err)
	}
	if parsed.Write.Ops == 0 || parsed.Read.Ops == 0 || parsed.Verified == 0 {
		t.Fatalf("nothing done: %+v", parsed)
	}
	if sum.Mismatches != 0 || sum.Lost != 0 {
		t.Fatalf("data check: %+v", sum)
	}
	if !strings.Contains(out.String(), "Read: ") || !strings.Contains(out.String(), "| Uptime: ") {
		t.Fatalf("no progress lines:\n%s", out.String())
	}
	t.Logf("writes %d (%.0f/s, p99 %.1f ms, %d errors), reads %d (%.0f/s), verified %d, longest write gap %d ms",
		sum.Write.Ops, sum.Write.OpsPerS, sum.Write.P99Ms, sum.Write.Errors, sum.Read.Ops, sum.Read.OpsPerS, sum.Verified, sum.MaxUnavailableMs)
}

// TestConfigErrors: bad settings are refused before anything runs.
func TestConfigErrors(t *testing.T) {
	for _, cfg := range []workload.Config{
		{Workload: "Nope", Nodes: []string{"x"}, WriteThreads: 1, UniqueKeys: 1},
		{WriteThreads: 1, UniqueKeys: 1},
		{Nodes: []string{"x"}, UniqueKeys: 1},
		{Nodes: []string{"x"}, WriteThreads: 1},
		{Nodes: []string{"x"}, WriteThreads: 1, UniqueKeys: 1, ValueSize: 2 << 20},
		{Workload: "Bank", Nodes: []string{"x"}},
		{Workload: "Bank", Nodes: []string{"x"}, WriteThreads: 1, Accounts: 1},
		{Workload: "Bank", Nodes: []string{"x"}, WriteThreads: 1, Isolation: "chaos"},
		{Workload: "Bank", Nodes: []string{"x"}, WriteThreads: -1, Verify: true},
		{Workload: "SqlInserts", Nodes: []string{"x"}, WriteThreads: 1, UniqueKeys: 1, FollowerReads: true},
	} {
		if _, err := workload.Run(context.Background(), cfg); err == nil {
			t.Errorf("%+v: accepted", cfg)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestKeyValueUnderSplits splits every tablet of the workload's table
// while the workload runs: the client follows TABLET_SPLIT to the children,
// no operation fails beyond retries, every read checks out, and afterwards
// a full scan returns every written key exactly once.
func TestKeyValueUnderSplits(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	c.WaitMasters(20 * time.Second)
	out := &syncBuffer{}
	done := make(chan struct{})
	var sum workload.Summary
	var err error
	const keys = 3000
	go func() {
		defer close(done)
		sum, err = workload.Run(context.Background(), workload.Config{
			Nodes: c.Addrs, WriteThreads: 4, ReadThreads: 4, UniqueKeys: keys, ValueSize: 32,
			Duration: 5 * time.Second, NumTablets: 2, Verify: true, ReportEvery: 500 * time.Millisecond, Out: out,
		})
	}()
	consensustest.WaitFor(t, 30*time.Second, "the workload under way", func() bool {
		return strings.Count(out.String(), "| Uptime: ") >= 2
	})
	ms := c.Masters()
	tbl, gerr := servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.GetTableResponse, error) {
		return mc.GetTable(ctx, &masterpb.GetTableRequest{Namespace: "workload", Name: "kv"})
	})
	if gerr != nil {
		t.Fatal(gerr)
	}
	for _, loc := range tbl.GetTablets() {
		if _, err := servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.SplitTabletResponse, error) {
			return mc.SplitTablet(ctx, &masterpb.SplitTabletRequest{TabletId: loc.GetTablet().GetTabletId()})
		}); err != nil {
			t.Fatalf("split %d: %v", loc.GetTablet().GetTabletId(), err)
		}
	}
	<-done
	if err != nil {
		t.Fatalf("workload: %v\n%s", err, out.String())
	}
	if sum.Write.Errors != 0 || sum.Read.Errors != 0 || sum.Mismatches != 0 || sum.Lost != 0 {
		t.Fatalf("summary after splits: %+v", sum)
	}
	// Every written key exactly once, across the four children.
	cl, err := client.Open(context.Background(), client.Config{Masters: c.Addrs})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	table, err := cl.OpenTable(context.Background(), "workload", "kv")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := table.ScanAll(context.Background(), client.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range rows {
		seen[string(r["k"].Bytes)]++
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("key %s seen %d times", k, n)
		}
	}
	// Every acknowledged key (verified above) is there; a write cut off
	// by the end of the run may have landed too.
	if n := uint64(len(seen)); n < sum.Verified || n > keys {
		t.Fatalf("scan found %d keys; the workload acknowledged writes of %d of %d keys", n, sum.Verified, keys)
	}
	after, _ := servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.GetTableResponse, error) {
		return mc.GetTable(ctx, &masterpb.GetTableRequest{Namespace: "workload", Name: "kv"})
	})
	t.Logf("%d tablets after the splits; %d writes, %d reads, %d keys scanned once each", len(after.GetTablets()), sum.Write.Ops, sum.Read.Ops, len(seen))
}

// TestSqlInserts runs SqlInserts through the YSQL ports of a 3-node
// cluster: writes and reads on all three, every read checks out, the final
// verify finds every acknowledged write, and a second run over the same
// table (whose first writes meet existing keys) does too.
func TestSqlInserts(t *testing.T) {
	c := servertest.NewClusterWith(t, 3, servertest.Options{YSQL: true})
	c.WaitMasters(20 * time.Second)
	var nodes []string
	for i := range c.Servers {
		consensustest.WaitFor(t, 30*time.Second, "YSQL", func() bool { return c.Servers[i].YSQLAddr() != "" })
		nodes = append(nodes, c.Servers[i].YSQLAddr())
	}
	for run := 0; run < 2; run++ {
		out := &syncBuffer{}
		sum, err := workload.Run(context.Background(), workload.Config{
			Workload: "SqlInserts", Nodes: nodes, WriteThreads: 4, ReadThreads: 4, UniqueKeys: 1000, ValueSize: 64,
			Table: "sqlkv", Duration: 3 * time.Second, NumTablets: 3, Verify: true, ReportEvery: time.Second, Out: out,
		})
		t.Logf("run %d:\n%s", run, out.String())
		if err != nil {
			t.Fatalf("workload: %v", err)
		}
		if sum.Write.Ops == 0 || sum.Read.Ops == 0 || sum.Verified == 0 || sum.Mismatches != 0 || sum.Lost != 0 || sum.Write.Errors != 0 {
			t.Fatalf("run %d: %+v", run, sum)
		}
		t.Logf("run %d: writes %d (%.0f/s), reads %d (%.0f/s), verified %d", run, sum.Write.Ops, sum.Write.OpsPerS, sum.Read.Ops, sum.Read.OpsPerS, sum.Verified)
	}
}
