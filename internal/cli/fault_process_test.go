package cli

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestWorkloadSurvivesSIGKILL: a 4-node RF 3 cluster of real processes
// under `shale workload` (a 12-tablet KeyValue table); one node is killed
// with SIGKILL. The workload goes on (failures only while tablets re-elect;
// the longest write gap is the unavailability window, logged); after the
// follower-unavailable timeout the dead node's replicas are re-created on
// the others; every read checks out and the final verify finds every
// acknowledged write.
func TestWorkloadSurvivesSIGKILL(t *testing.T) {
	bin := buildShale(t)
	duration, deadAfter := 25*time.Second, 4*time.Second
	if testing.Short() {
		duration = 15 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := &shaleRunner{t: t, ctx: ctx, bin: bin}
	base, masters := r.createCluster("fault", 4, "--follower-unavailable-timeout", deadAfter.String())

	// The workload runs as its own process, as a person would run it.
	wl := startWorkload(t, ctx, "the workload", bin, nil, "workload", "--nodes", masters, "--num-threads-write", "4", "--num-threads-read", "4",
		"--num-unique-keys", "5000", "--value-size", "64", "--num-tablets", "12", "--duration", duration.String(),
		"--report-every", "1s", "--verify", "--json-summary", "--cpu-profile", filepath.Join(base, "workload.prof"))
	// Three progress lines: the workload is under way.
	wl.waitFor(ctx, "progress", func(lines []string) bool { return progressLines(lines) >= 3 })

	st, err := loadClusterState(base)
	if err != nil {
		t.Fatal(err)
	}
	victim, err := st.node(4)
	if err != nil {
		t.Fatal(err)
	}
	victimID, _, err := nodeIdentity(nodeDir(base, 4))
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGKILL node 4 (node id %d, pid %d)", victimID, victim.PID)

	// Re-replication: the dead node's replicas go to the other three.
	for {
		ts := r.tservers(masters)
		var liveReplicas, deadReplicas uint32
		for _, x := range ts {
			if x.NodeID == victimID {
				deadReplicas = x.Tablets
			} else if x.State == "LIVE" {
				liveReplicas += x.Tablets
			}
		}
		if deadReplicas == 0 && liveReplicas == 36 {
			t.Logf("re-replicated %v after the kill (timeout %v)", time.Since(killed).Round(100*time.Millisecond), deadAfter)
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("replicas not re-created: %+v", ts)
		}
		time.Sleep(250 * time.Millisecond) // polling the cluster's state
	}

	sum := wl.checkedSummary()
	t.Logf("unavailability window (longest gap between successful writes): %d ms; write errors %d, read errors %d",
		sum.MaxUnavailableMs, sum.Write.Errors, sum.Read.Errors)
	checkProfile(t, filepath.Join(base, "workload.prof"))

	// The operator commands on the workload's table: list its tablets,
	// move a leader, split a tablet.
	listTablets := func() []tabletRow {
		var doc struct{ Tablets []tabletRow }
		if err := json.Unmarshal([]byte(r.must("admin", "--master-addrs", masters, "list-tablets", "workload.kv", "--json")), &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Tablets
	}
	tablets := listTablets()
	if len(tablets) != 12 {
		t.Fatalf("list-tablets: %d tablets, want 12", len(tablets))
	}
	first := strconv.FormatUint(tablets[0].TabletID, 10)
	r.must("admin", "--master-addrs", masters, "leader-stepdown", first)
	r.must("admin", "--master-addrs", masters, "split-tablet", first)
	if n := len(listTablets()); n != 13 {
		t.Fatalf("after split-tablet: %d tablets, want 13", n)
	}
	r.must("cluster", "destroy", "--base-dir", base)
}

// checkProfile fails t unless path holds a CPU profile (pprof's gzipped
// protocol buffer) with samples in it.
func checkProfile(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("cpu profile: %v", err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("cpu profile %s: %v", path, err)
	}
	n, err := io.Copy(io.Discard, z)
	if err != nil || n < 1024 {
		t.Fatalf("cpu profile %s: %d bytes (%v), want a profile with samples", path, n, err)
	}
}
