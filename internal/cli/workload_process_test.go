package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/shaledb/shaledb/internal/workload"
)

// killNodesOnCleanup SIGKILLs, when the test ends, the node processes the
// cluster in base still records (after a failure: without a deadline). It
// then fails the test if a node logged a storage invariant broken: a single
// deletion that met two writes of its key (docdb.deleteOnce).
func killNodesOnCleanup(t *testing.T, base string) {
	t.Cleanup(func() {
		st, err := loadClusterState(base)
		if err != nil {
			return
		}
		for _, n := range st.Nodes {
			if n.PID > 0 && processAlive(n.PID, "") {
				_ = syscall.Kill(n.PID, syscall.SIGKILL)
			}
		}
		for _, n := range st.Nodes {
			// The storage engine logs through the process's default
			// logger: stderr, which the cluster command sends to stdout.log.
			for _, f := range []string{"shale.log", "stdout.log"} {
				logb, err := os.ReadFile(filepath.Join(nodeDir(base, n.Index), "logs", f))
				if err == nil && bytes.Contains(logb, []byte("single deletion of a key written more than once")) {
					t.Errorf("node %d logged a single deletion of a key written more than once (%s)", n.Index, f)
				}
			}
		}
	})
}

// createCluster runs `shale cluster create` of nodes nodes, RF 3, YSQL off,
// in a fresh folder named name, on free RPC and HTTP ports, with extra
// flags; the nodes are killed when the test ends. It returns the base
// folder and the first node's RPC address (a master).
func (r *shaleRunner) createCluster(name string, nodes int, extra ...string) (base, masters string) {
	r.t.Helper()
	rpcPort, httpPort := freePort(r.t), freePort(r.t)
	for httpPort == rpcPort {
		httpPort = freePort(r.t)
	}
	base = filepath.Join(r.t.TempDir(), name)
	killNodesOnCleanup(r.t, base)
	r.must(append([]string{"cluster", "create", "--nodes", strconv.Itoa(nodes), "--rf", "3", "--base-dir", base,
		"--rpc-port", strconv.Itoa(rpcPort), "--http-port", strconv.Itoa(httpPort), "--wait", "60s", "--ysql-port", "0"}, extra...)...)
	return base, "127.0.0.1:" + strconv.Itoa(rpcPort)
}

// progressLines counts the workload's progress lines ("... | Uptime: t ms").
func progressLines(lines []string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, "| Uptime: ") {
			n++
		}
	}
	return n
}

// workloadProc is a `shale workload` process whose output the test
// follows line by line.
type workloadProc struct {
	t     *testing.T
	name  string
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	// changed gets a token when a line arrives; done closes at the end of
	// the output.
	changed chan struct{}
	done    chan struct{}
}

// startWorkload starts the binary with args (and env added to the test's
// environment); the process dies with ctx.
func startWorkload(t *testing.T, ctx context.Context, name, bin string, env []string, args ...string) *workloadProc {
	t.Helper()
	w := &workloadProc{t: t, name: name, cmd: exec.CommandContext(ctx, bin, args...), changed: make(chan struct{}, 1), done: make(chan struct{})}
	if len(env) > 0 {
		w.cmd.Env = append(w.cmd.Environ(), env...)
	}
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	w.cmd.Stderr = w.cmd.Stdout
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			w.mu.Lock()
			w.lines = append(w.lines, sc.Text())
			w.mu.Unlock()
			select {
			case w.changed <- struct{}{}:
			default:
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	return w
}

// output returns the lines so far.
func (w *workloadProc) output() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.lines...)
}

// waitFor waits until ok holds of the output; it fails the test if the
// process ends first or ctx does.
func (w *workloadProc) waitFor(ctx context.Context, what string, ok func(lines []string) bool) {
	w.t.Helper()
	for {
		if ok(w.output()) {
			return
		}
		select {
		case <-w.changed:
		case <-w.done:
			if ok(w.output()) {
				return
			}
			w.t.Fatalf("%s ended before %s:\n%s", w.name, what, strings.Join(w.output(), "\n"))
		case <-ctx.Done():
			w.t.Fatalf("%s: no %s before the deadline:\n%s", w.name, what, strings.Join(w.output(), "\n"))
		}
	}
}

// wait waits for the end of the output and of the process.
func (w *workloadProc) wait() error {
	<-w.done
	return w.cmd.Wait()
}

// checkedSummary waits for a KeyValue workload run with --verify and
// --json-summary, logs its output and fails the test unless it exited
// cleanly, wrote, verified, and found no mismatch and no lost write.
func (w *workloadProc) checkedSummary() workload.Summary {
	w.t.Helper()
	werr := w.wait()
	out := w.output()
	w.t.Logf("%s output:\n%s", w.name, strings.Join(out, "\n"))
	if werr != nil {
		w.t.Fatalf("%s: %v", w.name, werr)
	}
	var sum workload.Summary
	if len(out) == 0 || json.Unmarshal([]byte(out[len(out)-1]), &sum) != nil {
		w.t.Fatalf("%s: no JSON summary as the last line", w.name)
	}
	if sum.Mismatches != 0 || sum.Lost != 0 || sum.Verified == 0 || sum.Write.Ops == 0 {
		w.t.Fatalf("%s summary: %+v", w.name, sum)
	}
	return sum
}
