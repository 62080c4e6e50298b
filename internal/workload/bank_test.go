package workload_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/server/servertest"
	"github.com/shaledb/shaledb/internal/txncheck"
	"github.com/shaledb/shaledb/internal/workload"
)

// TestBank runs two Bank workloads at once on one bank (they race to
// create it: one does, both use it), at mixed isolation levels, and stops
// a node in the middle. Every snapshot totals the bank's total, the final
// verify (a third, load-less run) finds it too, and the recorded histories
// pass the txncheck checks.
func TestBank(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	c.WaitMasters(20 * time.Second)
	duration := 6 * time.Second
	if testing.Short() {
		duration = 4 * time.Second
	}
	type result struct {
		sum workload.Summary
		err error
	}
	var hist [3]syncBuffer
	outs := []*syncBuffer{{}, {}}
	results := make(chan result, 2)
	for i := range 2 {
		go func() {
			var js bytes.Buffer
			sum, err := workload.Run(context.Background(), workload.Config{
				Workload: "Bank", Nodes: c.Addrs, WriteThreads: 4, ReadThreads: 2, Accounts: 12, NumTablets: 4,
				Isolation: "mixed", Duration: duration, Verify: true, ReportEvery: 500 * time.Millisecond,
				Out: outs[i], JSON: &js, History: &hist[i],
			})
			if err == nil {
				var parsed workload.Summary
				if jerr := json.Unmarshal(js.Bytes(), &parsed); jerr != nil || parsed.Bank == nil {
					t.Errorf("summary line %q: %v", js.String(), jerr)
				}
			}
			results <- result{sum, err}
		}()
	}
	consensustest.WaitFor(t, 30*time.Second, "both workloads under way", func() bool {
		return strings.Count(outs[0].String(), "| Uptime: ") >= 2 && strings.Count(outs[1].String(), "| Uptime: ") >= 2
	})
	c.Stop(2)
	var transfers, checks uint64
	for range 2 {
		r := <-results
		if r.err != nil {
			t.Fatalf("workload: %v\n%s\n%s", r.err, outs[0].String(), outs[1].String())
		}
		b := r.sum.Bank
		if r.sum.Mismatches != 0 || b.FinalTotal != b.InitialTotal || b.InitialTotal != 12*1000 || b.Accounts != 12 {
			t.Fatalf("summary %+v, bank %+v", r.sum, b)
		}
		transfers += r.sum.Write.Ops
		checks += r.sum.Read.Ops
		t.Logf("transfers %d (%.0f/s, p99 %.1f ms, %d errors), checks %d, retries %d, unknown %d",
			r.sum.Write.Ops, r.sum.Write.OpsPerS, r.sum.Write.P99Ms, r.sum.Write.Errors, r.sum.Read.Ops, b.Retries, b.Unknown)
	}
	if transfers == 0 || checks == 0 {
		t.Fatalf("nothing done: %d transfers, %d checks", transfers, checks)
	}
	for _, line := range []string{"Transfers: ", "| Checks: ", "| Retries: ", "| Mismatches: 0 |"} {
		if !strings.Contains(outs[0].String(), line) {
			t.Fatalf("progress lines lack %q:\n%s", line, outs[0].String())
		}
	}
	// The final state, from a run with no load.
	sum, err := workload.Run(context.Background(), workload.Config{
		Workload: "Bank", Nodes: c.Addrs[:2], Verify: true, History: &hist[2],
	})
	if err != nil || sum.Bank.FinalTotal != 12*1000 || sum.Verified != 12 {
		t.Fatalf("verify-only run: %+v %v", sum, err)
	}
	h, err := txncheck.Load(hist[0].reader(), hist[1].reader(), hist[2].reader())
	if err != nil {
		t.Fatal(err)
	}
	res := txncheck.Check(h, txncheck.Options{})
	t.Logf("history: %s", res)
	if !res.OK() || res.Linearizable != porcupine.Ok || res.Committed == 0 || res.Reads == 0 {
		t.Fatalf("history check failed: %s", res)
	}
}

func (b *syncBuffer) reader() io.Reader { return strings.NewReader(b.String()) }
