package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// built is the shale binary the process tests share, built once.
var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// buildShale builds the shale binary (once per test run) with the go
// command on PATH.
func buildShale(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			built.err = fmt.Errorf("the process tests build the binary and need go on PATH: %w", err)
			return
		}
		if built.dir, built.err = os.MkdirTemp("", "shale-bin-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "shale")
		start := time.Now()
		if out, err := exec.Command(goBin, "build", "-o", built.bin, "../../cmd/shale").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %w\n%s", err, out)
			return
		}
		t.Logf("built %s in %v", built.bin, time.Since(start).Round(time.Millisecond))
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// freePort returns a port free on 127.0.0.1 just now; the nodes listen on
// it at 127.0.0.K, so a machine already running a cluster on the standard
// ports does not disturb the test.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// shaleRunner runs the binary under one overall deadline.
type shaleRunner struct {
	t   *testing.T
	ctx context.Context
	bin string
}

// run runs the binary and returns stdout, stderr and the exit error.
func (r *shaleRunner) run(args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(r.ctx, r.bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	r.t.Logf("shale %s: %v (%v)", strings.Join(args, " "), exitText(err), time.Since(start).Round(time.Millisecond))
	return out.String(), errOut.String(), err
}

func exitText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// must runs the binary and fails the test unless it exits 0.
func (r *shaleRunner) must(args ...string) string {
	r.t.Helper()
	out, errOut, err := r.run(args...)
	if err != nil {
		r.t.Fatalf("shale %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

func (r *shaleRunner) tservers(masters string) []tserverRow {
	r.t.Helper()
	var doc struct{ Tservers []tserverRow }
	if err := json.Unmarshal([]byte(r.must("admin", "--master-addrs", masters, "list-tservers", "--json")), &doc); err != nil {
		r.t.Fatal(err)
	}
	return doc.Tservers
}

func live(ts []tserverRow) map[uint64]bool {
	out := map[uint64]bool{}
	for _, x := range ts {
		if x.State == "LIVE" {
			out[x.NodeID] = true
		}
	}
	return out
}

// TestClusterProcess drives the built binary through `shale cluster` and
// `shale admin` as a person would: a 3-node RF 3 cluster, its masters and
// tservers, and, without -short, add-node, remove-node, stop-node and
// start-node, and a node refused for its data dir of another cluster.
// Last, destroy leaves no process behind.
func TestClusterProcess(t *testing.T) {
	bin := buildShale(t)
	// The cluster part is bounded; the build above is not (a cold cache on
	// a busy machine is slow, and that is not what this test measures).
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r := &shaleRunner{t: t, ctx: ctx, bin: bin}
	testStart := time.Now()
	rpcPort, httpPort := freePort(t), freePort(t)
	for httpPort == rpcPort {
		httpPort = freePort(t)
	}
	base := filepath.Join(t.TempDir(), "tmp")
	masters := "127.0.0.1:" + strconv.Itoa(rpcPort)
	seen := map[int]bool{} // every node pid the test saw
	notePIDs := func() {
		if st, err := loadClusterState(base); err == nil {
			for _, n := range st.Nodes {
				if n.PID > 0 {
					seen[n.PID] = true
				}
			}
		}
	}
	t.Cleanup(func() {
		// After a failure: stop whatever is left, without the deadline.
		notePIDs()
		for pid := range seen {
			if processAlive(pid, "") {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})

	out := r.must("cluster", "create", "--nodes", "3", "--rf", "3", "--base-dir", base,
		"--rpc-port", strconv.Itoa(rpcPort), "--http-port", strconv.Itoa(httpPort), "--wait", "45s",
		"--ysql-port", "0") // YSQL has its own process test; 5433 may be taken
	notePIDs()
	t.Logf("create:\n%s", out)
	for _, want := range []string{"is ready", "masters:", "cluster destroy --base-dir " + base} {
		if !strings.Contains(out, want) {
			t.Errorf("create output lacks %q", want)
		}
	}

	if l := live(r.tservers(masters)); len(l) != 3 {
		t.Fatalf("live tservers %v, want 3", l)
	}
	var ms struct{ Masters []masterRow }
	if err := json.Unmarshal([]byte(r.must("admin", "--master-addrs", masters, "list-masters", "--json")), &ms); err != nil {
		t.Fatal(err)
	}
	leaders, learners := 0, 0
	for _, m := range ms.Masters {
		if m.IsLeader {
			leaders++
		}
		if m.IsLearner {
			learners++
		}
	}
	// Ready means the catalog has its three voters: with learners, the
	// first node's death right after create would lose the catalog.
	if len(ms.Masters) != 3 || leaders != 1 || learners != 0 {
		t.Fatalf("masters %+v: want 3 voters with one leader", ms.Masters)
	}
	if out := r.must("cluster", "status", "--base-dir", base); strings.Count(out, "running") != 3 {
		t.Errorf("status does not show 3 running nodes:\n%s", out)
	}

	// Errors people make: clear messages and a non-zero exit.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"start", "--data-dir", t.TempDir(), "--rf", "4"}, "--rf 4"},
		{[]string{"start", "--listen", "127.0.0.1"}, "--data-dir is required"},
		{[]string{"admin", "--master-addrs", masters, "list-tablets", "nope"}, `table "nope" not found`},
		{[]string{"admin", "--master-addrs", masters, "move-replica", "987654", "1", "2"}, "MoveReplica: master: not found: tablet 987654"},
		{[]string{"cluster", "create", "--nodes", "3", "--rf", "3", "--base-dir", base}, "a cluster exists"},
	} {
		_, errOut, err := r.run(tc.args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || !strings.Contains(errOut, tc.want) {
			t.Errorf("shale %v: %v, stderr %q; want a non-zero exit and %q", tc.args, err, errOut, tc.want)
		}
	}

	if !testing.Short() {
		r.must("cluster", "add-node", "--base-dir", base)
		notePIDs()
		if l := live(r.tservers(masters)); len(l) != 4 {
			t.Fatalf("after add-node: live tservers %v, want 4", l)
		}
		r.must("cluster", "remove-node", "4", "--base-dir", base)
		st, err := loadClusterState(base)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Nodes) != 3 {
			t.Fatalf("after remove-node: nodes %+v", st.Nodes)
		}
		if _, err := os.Stat(nodeDir(base, 4)); !os.IsNotExist(err) {
			t.Fatalf("node4's data dir is still there: %v", err)
		}

		n2, err := st.node(2)
		if err != nil {
			t.Fatal(err)
		}
		id2, _, err := nodeIdentity(nodeDir(base, 2))
		if err != nil {
			t.Fatal(err)
		}
		r.must("cluster", "stop-node", "2", "--base-dir", base)
		if processAlive(n2.PID, "") {
			t.Fatalf("node 2 (pid %d) runs after stop-node", n2.PID)
		}
		// A clean stop hands the node's leaderships to the others first,
		// every one of them in time (the peers are up).
		logb, err := os.ReadFile(filepath.Join(nodeDir(base, 2), "logs", "shale.log"))
		if err != nil {
			t.Fatal(err)
		}
		if m := regexp.MustCompile(`leaderships handed off" moved=(\d+) not_in_time=(\d+)`).FindAllStringSubmatch(string(logb), -1); len(m) == 0 || m[len(m)-1][2] != "0" {
			t.Fatalf("node 2's log has no complete leadership hand-off before it stopped: %v", m)
		}
		r.must("cluster", "start-node", "2", "--base-dir", base)
		notePIDs()
		if !live(r.tservers(masters))[id2] {
			t.Fatalf("node 2 (node id %d) is not live after start-node", id2)
		}

		// Blacklist by address, then take the node off by id.
		r.must("admin", "--master-addrs", masters, "blacklist", "add", "127.0.0.3")
		black := func() map[uint64]bool {
			out := map[uint64]bool{}
			for _, x := range r.tservers(masters) {
				out[x.NodeID] = x.Blacklisted
			}
			return out
		}
		id3, _, err := nodeIdentity(nodeDir(base, 3))
		if err != nil {
			t.Fatal(err)
		}
		if !black()[id3] {
			t.Fatalf("node id %d not blacklisted after blacklist add", id3)
		}
		r.must("admin", "--master-addrs", masters, "blacklist", "remove", strconv.FormatUint(id3, 10))
		if black()[id3] {
			t.Fatalf("node id %d still blacklisted after blacklist remove", id3)
		}

		// A data dir of another cluster: bootstrap a one-node cluster on
		// 127.0.0.9, stop it, then point its data dir at ours.
		other := filepath.Join(t.TempDir(), "other")
		startArgs := []string{"start", "--data-dir", other, "--listen", "127.0.0.9",
			"--rpc-port", strconv.Itoa(rpcPort), "--http-port", strconv.Itoa(httpPort), "--rf", "1", "--log-to-stderr=false", "--ysql-port", "0"}
		cmd := exec.CommandContext(ctx, bin, startArgs...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		seen[cmd.Process.Pid] = true
		for {
			if _, _, err := nodeIdentity(other); err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatal("the other cluster's node never wrote its identity")
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("node stopped by SIGTERM: %v, want exit 0", err)
		}
		_, errOut, err := r.run(append(startArgs, "--join", masters)...)
		if err == nil || !strings.Contains(errOut, "belongs to another cluster") {
			t.Fatalf("a data dir of another cluster: %v, stderr %q", err, errOut)
		}
		t.Logf("refused: %s", strings.TrimSpace(errOut))
	}

	// A stopped cluster started again node by node: the first node cannot
	// be ready before a second master runs, so start-node does not wait
	// for it (it waited out --wait and failed).
	for _, k := range []string{"1", "2", "3"} {
		r.must("cluster", "stop-node", k, "--base-dir", base)
	}
	if out := r.must("cluster", "start-node", "1", "--base-dir", base); !strings.Contains(out, "serves once 2 of its 3 master nodes run (1 do)") {
		t.Fatalf("start-node 1 of a stopped cluster: %q", out)
	}
	notePIDs()
	r.must("cluster", "start-node", "2", "--base-dir", base)
	r.must("cluster", "start-node", "3", "--base-dir", base)
	notePIDs()
	l := live(r.tservers(masters))
	for k := 1; k <= 3; k++ {
		if id, _, err := nodeIdentity(nodeDir(base, k)); err != nil || !l[id] {
			t.Fatalf("node %d (node id %d, %v) is not live after starting the stopped cluster: %v", k, id, err, l)
		}
	}

	notePIDs()
	r.must("cluster", "destroy", "--base-dir", base)
	for pid := range seen {
		if processAlive(pid, "") {
			t.Errorf("pid %d still runs after destroy", pid)
		}
	}
	if _, err := os.Stat(base); !os.IsNotExist(err) {
		t.Errorf("base dir still there after destroy: %v", err)
	}
	t.Logf("cluster part took %v", time.Since(testStart).Round(time.Millisecond))
}
