package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/txncheck"
	"github.com/shaledb/shaledb/internal/workload"
)

var bankProgress = regexp.MustCompile(`Transfers: [\d.]+ ops/sec \([\d.]+ ms/op\), (\d+) total ops \| Checks: [\d.]+ ops/sec \([\d.]+ ms/op\), (\d+) total ops`)

// bankCounts returns the transfer and check totals of the last progress
// line.
func bankCounts(lines []string) (transfers, checks int) {
	for i := len(lines) - 1; i >= 0; i-- {
		if m := bankProgress.FindStringSubmatch(lines[i]); m != nil {
			transfers, _ = strconv.Atoi(m[1])
			checks, _ = strconv.Atoi(m[2])
			return transfers, checks
		}
	}
	return 0, 0
}

// waitBank waits until the Bank workload has done more transfers and
// checks than it had done when called.
func (w *workloadProc) waitBank(ctx context.Context, what string, moreTransfers, moreChecks int) {
	w.t.Helper()
	t0, c0 := bankCounts(w.output())
	w.waitFor(ctx, what, func(lines []string) bool {
		t, c := bankCounts(lines)
		return t >= t0+moreTransfers && c >= c0+moreChecks
	})
	t, c := bankCounts(w.output())
	w.t.Logf("%s: %s (%d transfers, %d checks)", w.name, what, t, c)
}

// bankSummary stops a Bank workload with SIGINT and returns its JSON
// summary, failing unless it exits 0.
func (w *workloadProc) stopBank() workload.Summary {
	w.t.Helper()
	if err := w.cmd.Process.Signal(syscall.SIGINT); err != nil {
		w.t.Fatal(err)
	}
	err := w.wait()
	out := w.output()
	if err != nil {
		w.t.Fatalf("%s: %v\n%s", w.name, err, strings.Join(out, "\n"))
	}
	var s workload.Summary
	if len(out) == 0 || json.Unmarshal([]byte(out[len(out)-1]), &s) != nil || s.Bank == nil {
		w.t.Fatalf("%s: no summary:\n%s", w.name, strings.Join(out, "\n"))
	}
	return s
}

// intentsOn reads shale_txn_intents from a node's /metrics.
func intentsOn(ctx context.Context, httpAddr string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+httpAddr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "shale_txn_intents "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return int(f), err
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no shale_txn_intents series")
}

// TestBankNemesis: the Bank workload as processes on a 3-node RF 3
// cluster of processes, at every isolation level, while a nemesis
//
//   - SIGKILLs the node leading (most of) the transaction status tablets,
//     then restarts it;
//   - SIGKILLs a workload process (a coordinator) right after a commit
//     succeeded and before it learnt so (a test hook), with many
//     transfers in flight, then starts another.
//
// Every snapshot any process read totals the bank's total, the final
// total is the initial one, no intent is left once the killed
// coordinator's transactions expired, and the merged histories pass
// txncheck: the killed coordinator's last commit is found committed, every
// unknown transfer is resolved all or nothing, the dependency graph is
// acyclic and every account linearizable.
func TestBankNemesis(t *testing.T) {
	bin := buildShale(t)
	ctx, cancel := context.WithTimeout(context.Background(), 110*time.Second)
	defer cancel()
	start := time.Now()
	r := &shaleRunner{t: t, ctx: ctx, bin: bin}
	base, masters := r.createCluster("bank", 3)
	histDir := t.TempDir()
	st, err := loadClusterState(base)
	if err != nil {
		t.Fatal(err)
	}
	nodes := strings.Join(st.addrs(0), ",")
	const accounts = 20
	hist := func(name string) string { return filepath.Join(histDir, name+".jsonl") }
	bank := func(name string, env []string, writers, readers int) *workloadProc {
		return startWorkload(t, ctx, name, bin, env, "workload", "--workload", "Bank", "--nodes", nodes,
			"--num-accounts", strconv.Itoa(accounts), "--num-tablets", "6", "--isolation", "mixed",
			"--num-threads-write", strconv.Itoa(writers), "--num-threads-read", strconv.Itoa(readers),
			"--duration", "5m", "--report-every", "250ms", "--verify", "--json-summary", "--history", hist(name))
	}

	a := bank("workload A", nil, 6, 2)
	a.waitBank(ctx, "under way", 20, 5)

	// a. The node leading the status tablets, once the master knows them
	// all (leaders are learned from the tservers' reports).
	var doc struct{ Tablets []tabletRow }
	consensustest.WaitFor(t, 30*time.Second, "the master to know every status tablet's leader", func() bool {
		doc.Tablets = nil
		if err := json.Unmarshal([]byte(r.must("admin", "--master-addrs", masters, "list-tablets", "system.transactions", "--json")), &doc); err != nil {
			t.Fatal(err)
		}
		return !slices.ContainsFunc(doc.Tablets, func(tb tabletRow) bool { return tb.LeaderNode == 0 })
	})
	leads := map[uint64]int{}
	for _, tb := range doc.Tablets {
		leads[tb.LeaderNode]++
	}
	victim, victimLeads := 0, -1
	for _, n := range st.Nodes {
		id, _, err := nodeIdentity(nodeDir(base, n.Index))
		if err != nil {
			t.Fatal(err)
		}
		if leads[id] > victimLeads {
			victim, victimLeads = n.Index, leads[id]
		}
	}
	vn, err := st.node(victim)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(vn.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGKILL node %d (pid %d), leader of %d of the %d status tablets", victim, vn.PID, victimLeads, len(doc.Tablets))
	a.waitBank(ctx, fmt.Sprintf("transfers and checks with node %d down", victim), 20, 3)
	r.must("cluster", "start-node", strconv.Itoa(victim), "--base-dir", base)
	a.waitBank(ctx, fmt.Sprintf("transfers and checks after node %d is back", victim), 10, 2)

	// b. A coordinator killed in the middle of commit, with 8 transfer
	// threads in flight.
	b := bank("workload B", []string{killAfterCommitsEnv + "=30"}, 8, 1)
	werr := b.wait()
	var ee *exec.ExitError
	if !errors.As(werr, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("workload B: %v, want killed by SIGKILL by its hook:\n%s", werr, strings.Join(b.output(), "\n"))
	}
	var killedTxn string
	for _, l := range b.output() {
		if v, ok := strings.CutPrefix(l, "test hook: SIGKILL after the commit of txn "); ok {
			killedTxn = v
		}
	}
	if killedTxn == "" {
		t.Fatalf("workload B did not say which commit it died after:\n%s", strings.Join(b.output(), "\n"))
	}
	t.Logf("workload B killed itself after committing %s", killedTxn)
	// The dead coordinator's locks expire: A goes on, and so does a new
	// process.
	c := bank("workload C", nil, 4, 1)
	a.waitBank(ctx, "transfers after the coordinator's death", 20, 2)
	c.waitBank(ctx, "under way", 10, 2)

	sa := a.stopBank()
	sc := c.stopBank()
	for _, s := range []struct {
		name string
		s    workload.Summary
	}{{"A", sa}, {"C", sc}} {
		bs := s.s.Bank
		t.Logf("workload %s: %d transfers (%.0f/s, p99 %.0f ms, %d errors, %d retries, %d unknown), %d checks, longest gap %d ms",
			s.name, s.s.Write.Ops, s.s.Write.OpsPerS, s.s.Write.P99Ms, s.s.Write.Errors, bs.Retries, bs.Unknown, s.s.Read.Ops, s.s.MaxUnavailableMs)
		if s.s.Mismatches != 0 || bs.InitialTotal != accounts*1000 || bs.FinalTotal != bs.InitialTotal || s.s.Verified != accounts {
			t.Fatalf("workload %s: %+v %+v", s.name, s.s, bs)
		}
	}

	// d. No intent left anywhere once the dead coordinator's transactions
	// expired and were resolved.
	intentsSince := time.Now()
	for {
		total, all := 0, true
		for _, n := range st.Nodes {
			v, err := intentsOn(ctx, st.httpAddr(n))
			if err != nil {
				all = false
				break
			}
			total += v
		}
		if all && total == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("intents left: %d", total)
		}
		time.Sleep(200 * time.Millisecond) // polling the nodes' metrics
	}
	t.Logf("no intents on any node %v after the load stopped", time.Since(intentsSince).Round(10*time.Millisecond))

	// The final state, read by a process with no load.
	out := r.must("workload", "--workload", "Bank", "--nodes", nodes, "--num-threads-write", "0", "--num-threads-read", "0",
		"--verify", "--json-summary", "--history", hist("final"))
	var sf workload.Summary
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &sf); err != nil || sf.Bank == nil || sf.Bank.FinalTotal != accounts*1000 || sf.Mismatches != 0 {
		t.Fatalf("final verify: %q (%v)", out, err)
	}

	// The histories.
	var files []*os.File
	var readers []*os.File
	for _, name := range []string{"workload A", "workload B", "workload C", "final"} {
		f, err := os.Open(hist(name))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		readers = append(readers, f)
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	h, err := txncheck.Load(readers[0], readers[1], readers[2], readers[3])
	if err != nil {
		t.Fatal(err)
	}
	checkStart := time.Now()
	res := txncheck.Check(h, txncheck.Options{})
	t.Logf("history (checked in %v): %s", time.Since(checkStart).Round(time.Millisecond), res)
	if !res.OK() || res.Linearizable != porcupine.Ok {
		t.Fatalf("history check failed: %s", res)
	}
	if !slices.Contains(res.UnknownCommittedTxns, killedTxn) {
		t.Fatalf("the commit workload B died after (%s) was not found committed: %v", killedTxn, res.UnknownCommittedTxns)
	}
	r.must("cluster", "destroy", "--base-dir", base)
	t.Logf("took %v after the build", time.Since(start).Round(100*time.Millisecond))
}
