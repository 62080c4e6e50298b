package tablet_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/shaledb/shaledb/internal/consensus/consensustest"
)

// TestLinearizability runs concurrent clients doing get, put and
// compare-and-set on a few keys of a tablet replicated on three nodes while
// a nemesis kills and restarts nodes and cuts links, then checks the
// recorded history with porcupine.
//
// Each seed fixes the nemesis schedule and the clients' choice of
// operations (not the interleaving). SHALE_LIN_SEED=<n> runs only seed n:
//
//	SHALE_LIN_SEED=42 go test -count=1 -run Linearizability -v ./internal/tablet/
func TestLinearizability(t *testing.T) {
	seeds := 3
	dur := 8 * time.Second
	if testing.Short() {
		seeds, dur = 1, 4*time.Second
	}
	var list []uint64
	if s := os.Getenv("SHALE_LIN_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SHALE_LIN_SEED=%q: %v", s, err)
		}
		list = []uint64{seed}
	} else {
		base := uint64(time.Now().UnixNano())
		for i := 0; i < seeds; i++ {
			list = append(list, (base+uint64(i)*0x9e3779b97f4a7c15)%1_000_000_007)
		}
	}
	for _, seed := range list {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Logf("seed %d (rerun with SHALE_LIN_SEED=%d)", seed, seed)
			runLinearizability(t, seed, dur)
		})
	}
}

const (
	linKeys    = 4
	linClients = 6
)

func runLinearizability(t *testing.T, seed uint64, dur time.Duration) {
	h := newHarness(t, 3, []uint64{1, 2, 3})
	h.waitLeader(t)
	env := newLinEnv(h, linKeys, linClients)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d (rerun with SHALE_LIN_SEED=%d): %s", seed, seed, fmt.Sprintf(format, args...))
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < linClients; i++ {
		c := &linClient{
			env:      env,
			proc:     i,
			rng:      rand.New(rand.NewPCG(seed, uint64(i+1))),
			guess:    env.nodes[i%len(env.nodes)],
			lastSeen: make([]int64, linKeys),
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.run(stop)
		}()
	}
	clientsDone := false
	stopClients := func() {
		if !clientsDone {
			clientsDone = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopClients()

	nem := &nemesis{env: env, rng: rand.New(rand.NewPCG(seed, 0)), cut: map[[2]uint64]bool{}}
	nem.run(time.Now().Add(dur))
	nem.healAll()
	env.stats.healed.Store(true)
	consensustest.WaitFor(t, 15*time.Second, "a leaseholder after healing", func() bool { return env.leaseholder() != 0 })
	// Keep the clients going on the healed cluster: progress must resume.
	healed := time.Now()
	consensustest.WaitFor(t, 15*time.Second, "progress after healing", func() bool {
		return env.stats.okSinceHeal.Load() >= 50 && time.Since(healed) > 500*time.Millisecond
	})
	stopClients()

	history := env.history()
	t.Logf("seed %d: %d ops recorded (%d ok, %d ambiguous), %d dropped; %d nemesis events",
		seed, len(history), env.stats.ok.Load(), env.stats.ambiguous.Load(), env.stats.dropped.Load(), len(nem.events))
	checkStart := time.Now()
	res := porcupine.CheckOperationsTimeout(linModel, history, 20*time.Second)
	t.Logf("seed %d: porcupine: %s in %v", seed, res, time.Since(checkStart).Round(time.Millisecond))
	switch res {
	case porcupine.Ok:
	case porcupine.Unknown:
		t.Logf("seed %d: porcupine timed out; history neither proven nor refuted", seed)
	default:
		for _, ev := range nem.events {
			t.Logf("nemesis %8.3fs %s", float64(ev.at)/1e9, ev.what)
		}
		_, info := porcupine.CheckOperationsVerbose(linModel, history, 30*time.Second)
		info.AddAnnotations(nem.annotations())
		path := filepath.Join(os.TempDir(), fmt.Sprintf("shale-lin-%d.html", seed))
		if err := porcupine.VisualizePath(linModel, info, path); err != nil {
			t.Logf("visualization: %v", err)
		} else {
			t.Logf("visualization: %s", path)
		}
		fail("history is not linearizable (visualization: %s)", path)
	}
}

// nemesis injects failures: node kills and restarts, cut links, and
// isolation of the leaseholder.
type nemesis struct {
	env    *linEnv
	rng    *rand.Rand
	cut    map[[2]uint64]bool
	downAt map[uint64]time.Time
	events []nemesisEvent
}

type nemesisEvent struct {
	at   int64 // history time
	what string
}

func (n *nemesis) log(format string, args ...any) {
	n.events = append(n.events, nemesisEvent{at: n.env.now(), what: fmt.Sprintf(format, args...)})
}

func (n *nemesis) annotations() []porcupine.Annotation {
	out := make([]porcupine.Annotation, 0, len(n.events))
	for _, ev := range n.events {
		out = append(out, porcupine.Annotation{Tag: "nemesis", Start: ev.at, Description: ev.what, BackgroundColor: "#fce4e4"})
	}
	return out
}

func pair(a, b uint64) [2]uint64 {
	if a > b {
		a, b = b, a
	}
	return [2]uint64{a, b}
}

func (n *nemesis) down() []uint64 {
	var out []uint64
	for _, id := range n.env.nodes {
		if !n.env.isUp(id) {
			out = append(out, id)
		}
	}
	return out
}

func (n *nemesis) setLink(a, b uint64, down bool) {
	n.env.h.Partition(a, b, down)
	if down {
		n.cut[pair(a, b)] = true
	} else {
		delete(n.cut, pair(a, b))
	}
}

func (n *nemesis) randomNode() uint64 { return n.env.nodes[n.rng.IntN(len(n.env.nodes))] }

func (n *nemesis) run(until time.Time) {
	n.downAt = map[uint64]time.Time{}
	for time.Now().Before(until) {
		// Pacing of the failure schedule, not a wait for a condition.
		time.Sleep(time.Duration(100+n.rng.IntN(350)) * time.Millisecond)
		n.step()
	}
}

func (n *nemesis) step() {
	down := n.down()
	// Nodes come back after a while so that the cluster keeps making progress.
	for _, id := range down {
		if time.Since(n.downAt[id]) > 1500*time.Millisecond {
			n.restart(id)
			return
		}
	}
	switch r := n.rng.IntN(12); {
	case r < 3: // kill a node: the leaseholder half of the time
		if len(down) >= 2 {
			return
		}
		victim := n.randomNode()
		if n.rng.IntN(2) == 0 {
			if l := n.env.leaseholder(); l != 0 {
				victim = l
			}
		}
		if !n.env.isUp(victim) {
			return
		}
		n.log("kill n%d", victim)
		n.env.stopNode(victim)
		n.downAt[victim] = time.Now()
	case r < 5: // restart a node
		if len(down) > 0 {
			n.restart(down[n.rng.IntN(len(down))])
		}
	case r < 7: // cut a link
		a := n.randomNode()
		b := n.env.nodes[(int(a)+n.rng.IntN(len(n.env.nodes)-1))%len(n.env.nodes)]
		n.log("cut n%d-n%d", min(a, b), max(a, b))
		n.setLink(a, b, true)
	case r < 9: // isolate the leaseholder
		l := n.env.leaseholder()
		if l == 0 {
			return
		}
		n.log("isolate leaseholder n%d", l)
		for _, o := range n.env.nodes {
			if o != l {
				n.setLink(l, o, true)
			}
		}
	case r < 11: // heal a link
		if cuts := n.cuts(); len(cuts) > 0 {
			p := cuts[n.rng.IntN(len(cuts))]
			n.log("heal n%d-n%d", p[0], p[1])
			n.setLink(p[0], p[1], false)
		}
	default:
		n.log("heal all links")
		for _, p := range n.cuts() {
			n.setLink(p[0], p[1], false)
		}
	}
}

// restart starts a stopped node; its new transport gets the cuts that
// involve it.
func (n *nemesis) restart(id uint64) {
	n.log("restart n%d", id)
	n.env.startNode(id)
	for _, p := range n.cuts() {
		if p[0] == id || p[1] == id {
			n.env.h.Partition(p[0], p[1], true)
		}
	}
}

func (n *nemesis) healAll() {
	n.log("heal everything")
	for _, id := range n.down() {
		n.restart(id)
	}
	for _, p := range n.cuts() {
		n.setLink(p[0], p[1], false)
	}
}

// cuts lists the cut links in order (map order would defeat the seed).
func (n *nemesis) cuts() [][2]uint64 {
	out := make([][2]uint64, 0, len(n.cut))
	for p := range n.cut {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] || (out[i][0] == out[j][0] && out[i][1] < out[j][1]) })
	return out
}
