//go:build linux

package tserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/consensus/consensustest"
)

// crashChild is one tablet server process of TestCrashDurability.
type crashChild struct {
	id       uint64
	dir      string
	raftAddr string
	httpAddr string
	logPath  string
	peers    string

	cmd    *exec.Cmd
	done   chan struct{} // closed when cmd has exited
	killed bool          // by the test, not yet restarted
}

// freeAddr returns ip:port with a port that was free a moment ago; the
// child binds it, and binds it again after every restart.
func freeAddr(t *testing.T, ip string) string {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (c *crashChild) start(t *testing.T) {
	t.Helper()
	logf, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== start %s\n", time.Now().Format(time.StampMicro))
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChildProcess$", "-test.timeout=5m")
	cmd.Env = append(os.Environ(),
		envChild+"=1",
		envNode+"="+strconv.FormatUint(c.id, 10),
		envDir+"="+c.dir,
		envPeers+"="+c.peers,
		envHTTP+"="+c.httpAddr,
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	// A child must not outlive the test if the parent dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.cmd, c.done, c.killed = cmd, make(chan struct{}), false
	done := c.done
	go func() { _ = cmd.Wait(); close(done) }()
}

func (c *crashChild) running() bool {
	if c.cmd == nil {
		return false
	}
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// kill SIGKILLs the process and waits until it is gone.
func (c *crashChild) kill(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(c.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill node %d: %v", c.id, err)
	}
	c.killed = true
	<-c.done
}

// crashHarness drives the children over their HTTP API.
type crashHarness struct {
	t        *testing.T
	children []*crashChild // node i+1 at index i
	client   *http.Client
	leader   atomic.Uint64 // writers' guess of the leaseholder
}

func (h *crashHarness) child(id uint64) *crashChild { return h.children[id-1] }

func (h *crashHarness) status(id uint64) (childStatus, error) {
	var st childStatus
	resp, err := h.client.Get("http://" + h.child(id).httpAddr + "/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// leaseholder returns the status of a node holding the lease.
func (h *crashHarness) leaseholder() (childStatus, bool) {
	for _, c := range h.children {
		if st, err := h.status(c.id); err == nil && st.Lease {
			return st, true
		}
	}
	return childStatus{}, false
}

// put writes k=v through the guessed leader and reports whether the write
// was acknowledged.
func (h *crashHarness) put(k, v string) bool {
	id := h.leader.Load()
	resp, err := h.client.PostForm("http://"+h.child(id).httpAddr+"/put", url.Values{"k": {k}, "v": {v}})
	if err != nil {
		h.leader.CompareAndSwap(id, id%3+1)
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode == http.StatusOK {
		return true
	}
	hint, _ := strconv.ParseUint(resp.Header.Get("X-Leader"), 10, 64)
	if hint < 1 || hint > 3 {
		hint = id%3 + 1
	}
	h.leader.CompareAndSwap(id, hint)
	return false
}

// scan returns every row, read at the leaseholder or (local) from node id's
// engine.
func (h *crashHarness) scan(id uint64, local bool) (map[string]string, error) {
	u := "http://" + h.child(id).httpAddr + "/scan"
	if local {
		u += "?local=1"
	}
	resp, err := h.client.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scan node %d: %s: %s", id, resp.Status, bytes.TrimSpace(body))
	}
	var out map[string]string
	return out, json.Unmarshal(body, &out)
}

// waitCaughtUp waits until the given nodes answer, some node holds the
// lease, and each of them has applied the leaseholder's commit index as
// seen once they all answered.
func (h *crashHarness) waitCaughtUp(ids ...uint64) {
	h.t.Helper()
	var target uint64
	consensustest.WaitFor(h.t, 30*time.Second, fmt.Sprintf("nodes %v catch up", ids), func() bool {
		h.checkAlive()
		if target == 0 {
			for _, id := range ids {
				if _, err := h.status(id); err != nil {
					return false
				}
			}
			l, ok := h.leaseholder()
			if !ok {
				return false
			}
			target = l.Commit
		}
		for _, id := range ids {
			st, err := h.status(id)
			if err != nil || st.Applied < target {
				return false
			}
		}
		return true
	})
}

// checkAlive fails the test if a child exited by itself (a panic, say).
func (h *crashHarness) checkAlive() {
	h.t.Helper()
	for _, c := range h.children {
		if c.cmd != nil && !c.running() && !c.killed {
			h.t.Fatalf("node %d exited by itself: %v (see its log below)", c.id, c.cmd.ProcessState)
		}
	}
}

// dumpLogs prints the tail of every child's log.
func (h *crashHarness) dumpLogs() {
	for _, c := range h.children {
		b, _ := os.ReadFile(c.logPath)
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		h.t.Logf("--- node %d log (tail):\n%s", c.id, b)
	}
}

// TestCrashDurability runs three tablet servers as child processes, writes
// unique keys from concurrent writers, SIGKILLs a random node (and once all
// three) in the middle of the writes, restarts it on the same data
// directory, and finally checks that every acknowledged write is readable
// with its value.
func TestCrashDurability(t *testing.T) {
	rounds, allRound, writers, perRound := 10, 5, 4, 400
	if testing.Short() {
		rounds, allRound, writers, perRound = 4, 2, 3, 150
	}
	base := t.TempDir()
	h := &crashHarness{t: t, client: &http.Client{Timeout: 5 * time.Second}}
	var peers []string
	for i := uint64(1); i <= 3; i++ {
		ip := fmt.Sprintf("127.0.0.%d", i)
		c := &crashChild{
			id: i, dir: filepath.Join(base, fmt.Sprintf("node%d", i)),
			raftAddr: freeAddr(t, ip), httpAddr: freeAddr(t, ip),
			logPath: filepath.Join(base, fmt.Sprintf("node%d.log", i)),
		}
		h.children = append(h.children, c)
		peers = append(peers, fmt.Sprintf("%d=%s", i, c.raftAddr))
	}
	for _, c := range h.children {
		c.peers = strings.Join(peers, ",")
		c.start(t)
	}
	t.Cleanup(func() {
		for _, c := range h.children {
			if c.running() {
				_ = c.cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-c.done:
					// A clean stop exits 0; a race report or a failed
					// Stop does not.
					if code := c.cmd.ProcessState.ExitCode(); code != 0 {
						t.Errorf("node %d: exit status %d after SIGTERM", c.id, code)
					}
				case <-time.After(10 * time.Second):
					t.Errorf("node %d: no exit 10s after SIGTERM", c.id)
					c.kill(t)
				}
			}
		}
		if t.Failed() {
			h.dumpLogs()
		}
	})
	h.leader.Store(1)
	h.waitCaughtUp(1, 2, 3)

	// Writers: unique keys, one value each; a failed write is retried
	// (same key, same value) until acknowledged or the writers stop.
	var (
		ackMu    sync.Mutex
		acked    = map[string]string{}
		tried    = map[string]string{}
		ackCount atomic.Int64
		failed   atomic.Int64
	)
	ctx, stopWriters := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; ctx.Err() == nil; seq++ {
				k := fmt.Sprintf("w%d-%06d", w, seq)
				v := fmt.Sprintf("%s-%x", k, rand.Uint32())
				ackMu.Lock()
				tried[k] = v
				ackMu.Unlock()
				for ctx.Err() == nil {
					if h.put(k, v) {
						ackMu.Lock()
						acked[k] = v
						ackMu.Unlock()
						ackCount.Add(1)
						break
					}
					failed.Add(1)
					time.Sleep(5 * time.Millisecond) // retry backoff
				}
			}
		}()
	}
	defer stopWriters()

	waitAcks := func(what string, n int64) {
		t.Helper()
		target := ackCount.Load() + n
		consensustest.WaitFor(t, 30*time.Second, what, func() bool {
			h.checkAlive()
			return ackCount.Load() >= target
		})
	}
	start := time.Now()
	var catchUps []time.Duration
	for r := 0; r < rounds; r++ {
		waitAcks(fmt.Sprintf("round %d: %d writes before the kill", r, perRound), int64(perRound))
		var victims []uint64
		switch {
		case r == allRound:
			victims = []uint64{1, 2, 3}
		case r == 0: // the first round always kills the leaseholder
			if l, ok := h.leaseholder(); ok {
				victims = []uint64{l.Node}
			}
		}
		if victims == nil {
			victims = []uint64{uint64(rand.IntN(3) + 1)}
		}
		lst, _ := h.leaseholder()
		before := ackCount.Load()
		for _, id := range victims {
			h.child(id).kill(t)
		}
		restarted := time.Now()
		for _, id := range victims {
			h.child(id).start(t)
		}
		h.waitCaughtUp(victims...)
		took := time.Since(restarted)
		catchUps = append(catchUps, took)
		t.Logf("round %d: SIGKILL node(s) %v (leaseholder was %d) after %d acked writes; restarted and caught up in %v",
			r, victims, lst.Node, before, took.Round(time.Millisecond))
		// Writes go on after the restart.
		waitAcks(fmt.Sprintf("round %d: writes resume", r), 20)
	}
	stopWriters()
	wg.Wait()
	elapsed := time.Since(start)
	h.waitCaughtUp(1, 2, 3)

	// Every acknowledged write is there with its value, at the leaseholder
	// and in every replica's engine; nothing is there that was never written.
	var rows map[string]string
	consensustest.Retry(t, 20*time.Second, "scan at the leaseholder", func(context.Context) error {
		l, ok := h.leaseholder()
		if !ok {
			return fmt.Errorf("no leaseholder")
		}
		var err error
		rows, err = h.scan(l.Node, false)
		return err
	})
	check := func(where string, rows map[string]string) {
		lost := 0
		for k, v := range acked {
			if got, ok := rows[k]; !ok || got != v {
				if lost++; lost <= 10 {
					t.Errorf("%s: acknowledged %s=%s, read %q (present %v)", where, k, v, got, ok)
				}
			}
		}
		for k, v := range rows {
			if tried[k] != v {
				t.Errorf("%s: %s=%s was never written", where, k, v)
			}
		}
		if lost > 0 {
			t.Errorf("%s: %d of %d acknowledged writes lost", where, lost, len(acked))
		}
	}
	check("leaseholder", rows)
	for _, c := range h.children {
		local, err := h.scan(c.id, true)
		if err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("node %d engine", c.id), local)
	}
	var maxCatchUp time.Duration
	for _, d := range catchUps {
		maxCatchUp = max(maxCatchUp, d)
	}
	t.Logf("%d rounds (one killing all 3 nodes) in %v: %d writes acknowledged (%.0f/s), %d rows present (%d unacknowledged attempts survived), %d failed attempts retried; restart catch-up max %v",
		rounds, elapsed.Round(time.Millisecond), len(acked), float64(len(acked))/elapsed.Seconds(), len(rows), len(rows)-len(acked), failed.Load(), maxCatchUp.Round(time.Millisecond))
}
