package cli

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWorkloadSurvivesPause: a 3-node RF 3 cluster of real processes under
// `shale workload`; node 3 is paused with SIGSTOP, so its connections stay
// open and its kernel still acknowledges what is sent to it, but nothing
// answers. While it is paused the other two take over the leadership of
// every tablet, and writes go on (each writer, stuck for its attempt on
// a tablet the paused node led, finds the new leader). After SIGCONT node 3
// is LIVE again; every read checked out and the final verify finds every
// acknowledged write.
func TestWorkloadSurvivesPause(t *testing.T) {
	bin := buildShale(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := &shaleRunner{t: t, ctx: ctx, bin: bin}
	base, masters := r.createCluster("pause", 3)

	wl := startWorkload(t, ctx, "the workload", bin, nil, "workload", "--nodes", masters, "--num-threads-write", "4", "--num-threads-read", "2",
		"--num-unique-keys", "5000", "--value-size", "64", "--num-tablets", "6", "--duration", "40s",
		"--report-every", "1s", "--verify", "--json-summary")
	wl.waitFor(ctx, "progress", func(lines []string) bool { return progressLines(lines) >= 3 })

	st, err := loadClusterState(base)
	if err != nil {
		t.Fatal(err)
	}
	victim, err := st.node(3)
	if err != nil {
		t.Fatal(err)
	}
	victimID, _, err := nodeIdentity(nodeDir(base, 3))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(victim.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(victim.PID, syscall.SIGCONT)
		}
	}
	defer resume()
	t.Logf("SIGSTOP node 3 (node id %d, pid %d)", victimID, victim.PID)

	// Every tablet of the workload's table gets a leader on nodes 1 and 2.
	// The masters may be electing a leader of their own (node 3 may have
	// been theirs): a failed admin call is tried again.
	for {
		out, _, err := r.run("admin", "--master-addrs", masters, "list-tablets", "workload.kv", "--json")
		var doc struct{ Tablets []tabletRow }
		if err == nil && json.Unmarshal([]byte(out), &doc) == nil && len(doc.Tablets) == 6 {
			moved := 0
			for _, tb := range doc.Tablets {
				if tb.LeaderNode != 0 && tb.LeaderNode != victimID {
					moved++
				}
			}
			if moved == len(doc.Tablets) {
				t.Logf("every tablet led by nodes 1 and 2 %v after the pause", time.Since(paused).Round(100*time.Millisecond))
				break
			}
		}
		if time.Since(paused) > 20*time.Second {
			t.Fatalf("tablets still led by the paused node 20 s after the pause: %s", out)
		}
		time.Sleep(250 * time.Millisecond) // polling the cluster's state
	}
	// Writes go on while node 3 is still paused (it stays paused until
	// they do): a writer waits out its attempt on the paused leader, then
	// finds the new one.
	writes := func(lines []string) (total uint64) {
		for _, l := range lines {
			if i := strings.Index(l, "| Write: "); i >= 0 {
				f := strings.Fields(l[i:])
				// "| Write: x ops/sec (y ms/op), n total ops | ..."
				for j := range f {
					if f[j] == "total" && j > 0 {
						total, _ = strconv.ParseUint(f[j-1], 10, 64)
					}
				}
			}
		}
		return total
	}
	before := writes(wl.output())
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	wl.waitFor(wctx, "writes while node 3 is paused", func(lines []string) bool { return writes(lines) > before })
	wcancel()
	t.Logf("writes go on while node 3 is paused, %v after the pause (%d more)", time.Since(paused).Round(100*time.Millisecond), writes(wl.output())-before)
	resume()
	t.Logf("SIGCONT node 3 after %v", time.Since(paused).Round(100*time.Millisecond))

	sum := wl.checkedSummary()
	t.Logf("longest gap between successful writes: %d ms; write errors %d, read errors %d",
		sum.MaxUnavailableMs, sum.Write.Errors, sum.Read.Errors)
	for {
		if l := live(r.tservers(masters)); l[victimID] && len(l) == 3 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("node 3 not LIVE again after SIGCONT")
		}
		time.Sleep(250 * time.Millisecond) // polling the cluster's state
	}
	r.must("cluster", "destroy", "--base-dir", base)
}
