package balancer

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

var seedFlag = flag.Uint64("seed", 0, "seed for TestRandomClusters (0: from the clock)")

// TestRandomClusters builds random clusters with random, often bad, tablet
// placements, then plans rounds until nothing is left to do. Some moves of
// each plan finish at once, the others stay in flight for a while. It
// checks that no plan breaks a safety rule (see checkPlan: never below RF
// healthy voters when removing a live one, never without a majority of
// healthy voters, never the leader's replica, never the last, limits
// respected, one move per tablet) and that the result meets the goals (see
// checkBalanced: RF voters on distinct usable tservers, spread over the
// zones, replica and leader spread at most one). Rerun a failure with
// -seed.
func TestRandomClusters(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d", seed)
	n := 300
	if testing.Short() {
		n = 60
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	for i := 0; i < n; i++ {
		c, desc := randomCluster(rng)
		if err := runRandom(c, rng); err != "" {
			t.Fatalf("seed %d, cluster %d (%s):\n%s", seed, i, desc, err)
		}
	}
}

// randomCluster returns a cluster and a short description of it. Zoned
// clusters have 3 zones of equal size and no dead or blacklisted tservers
// (otherwise an even spread can be impossible); the others may have both.
// One RF per cluster when leaders are checked.
func randomCluster(rng *rand.Rand) (*cluster, string) {
	c := &cluster{}
	c.opts = Options{
		MaxConcurrentAdds:           1 + rng.IntN(8),
		MaxConcurrentAddsPerTServer: 1 + rng.IntN(3),
		MaxLeaderMovesPerRun:        1 + rng.IntN(10),
	}
	zoned := rng.IntN(3) == 0
	var n int
	if zoned {
		n = 3 * (1 + rng.IntN(3))
	} else {
		n = 1 + rng.IntN(8)
	}
	usable := 0
	for id := uint64(1); id <= uint64(n); id++ {
		ts := TServer{ID: id, Live: true}
		if zoned {
			ts.Placement.Zone = string(rune('a' + int(id)%3))
		} else if id > 1 {
			switch rng.IntN(8) {
			case 0:
				ts.Live, ts.DeadFor = false, time.Hour
			case 1:
				ts.Blacklisted = true
			}
		}
		if ts.Live && !ts.Blacklisted {
			usable++
		}
		c.s.TServers = append(c.s.TServers, ts)
	}
	rfs := []int{1, 2, 3, 5}
	rfs = slices.DeleteFunc(rfs, func(rf int) bool { return rf > usable })
	mixed := rng.IntN(4) == 0
	rf := rfs[rng.IntN(len(rfs))]
	tables := 1 + rng.IntN(3)
	var desc strings.Builder
	fmt.Fprintf(&desc, "%d tservers (%d usable), zoned=%v, %+v", n, usable, zoned, c.opts)
	for table := uint64(1); table <= uint64(tables); table++ {
		if mixed {
			rf = rfs[rng.IntN(len(rfs))]
		}
		count := 1 + rng.IntN(12)
		fmt.Fprintf(&desc, ", table %d: %d tablets rf %d", table, count, rf)
		for i := 0; i < count; i++ {
			c.s.Tablets = append(c.s.Tablets, randomTablet(rng, c, table*100+uint64(i), table, rf))
		}
	}
	c.elect()
	return c, desc.String()
}

// randomTablet places between 1 and RF+1 voters (a live majority of them),
// sometimes a learner, on random tservers.
func randomTablet(rng *rand.Rand, c *cluster, id, table uint64, rf int) Tablet {
	t := Tablet{ID: id, TableID: table, RF: rf, SizeBytes: int64(rng.IntN(1000))}
	ids := make([]uint64, len(c.s.TServers))
	for i := range ids {
		ids[i] = uint64(i + 1)
	}
	for {
		rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		k := 1 + rng.IntN(min(rf+1, len(ids)))
		live := 0
		for _, v := range ids[:k] {
			if c.live(v) {
				live++
			}
		}
		if live < majority(k) {
			continue
		}
		t.Replicas = t.Replicas[:0]
		for _, v := range ids[:k] {
			t.Replicas = append(t.Replicas, Replica{TServer: v})
		}
		if k < len(ids) && rng.IntN(5) == 0 {
			t.Replicas = append(t.Replicas, Replica{TServer: ids[k], Role: Learner})
		}
		if rng.IntN(8) != 0 {
			for _, r := range t.Replicas {
				if r.Role == Voter && c.live(r.TServer) {
					t.Leader = r.TServer
				}
			}
		}
		return t
	}
}

// runRandom plans until the cluster is settled and returns what went wrong.
func runRandom(c *cluster, rng *rand.Rand) string {
	const maxRounds = 400
	uniformRF := true
	for _, t := range c.s.Tablets {
		uniformRF = uniformRF && t.RF == c.s.Tablets[0].RF
	}
	zoned := c.s.TServers[0].Placement.Zone != ""
	maxRF := 0
	for _, t := range c.s.Tablets {
		maxRF = max(maxRF, t.RF)
	}
	// Outside zoned clusters, once in a while a tserver dies for good or is
	// blacklisted in the middle of the run, in-flight moves and all.
	event := -1
	if !zoned && rng.IntN(2) == 0 {
		event = rng.IntN(10)
	}
	for round := 0; round < maxRounds; round++ {
		if round == event {
			strike(c, rng, maxRF)
		}
		moves := Plan(c.s, c.opts)
		if errs := c.checkPlan(moves); len(errs) > 0 {
			return fmt.Sprintf("round %d: unsafe plan:\n%s\n%s", round, strings.Join(errs, "\n"), c.show())
		}
		if len(moves) == 0 && len(c.s.InFlight) == 0 {
			if errs := c.checkBalanced(!zoned, uniformRF); len(errs) > 0 {
				return fmt.Sprintf("settled after %d rounds but:\n%s\n%s", round, strings.Join(errs, "\n"), c.show())
			}
			return ""
		}
		// Finish some in-flight moves, then some of the new ones; the rest
		// of the new ones go in flight.
		var still []Move
		for _, m := range c.s.InFlight {
			if rng.IntN(2) == 0 {
				c.apply(m)
			} else {
				still = append(still, m)
			}
		}
		for _, m := range moves {
			if rng.IntN(4) != 0 {
				c.apply(m)
			} else {
				still = append(still, m)
			}
		}
		c.s.InFlight = still
		c.elect()
	}
	return fmt.Sprintf("not settled after %d rounds\n%s", maxRounds, c.show())
}

// strike kills (past the timeout) or blacklists a random usable tserver,
// if enough usable ones stay for every tablet and a live majority of each
// tablet's voters survives.
func strike(c *cluster, rng *rand.Rand, maxRF int) {
	var usable []uint64
	for _, ts := range c.s.TServers {
		if c.usable(ts.ID) {
			usable = append(usable, ts.ID)
		}
	}
	if len(usable) <= maxRF {
		return
	}
	ts := c.tserver(usable[rng.IntN(len(usable))])
	if rng.IntN(2) == 0 {
		ts.Blacklisted = true
		return
	}
	ts.Live, ts.DeadFor = false, time.Hour
	for _, t := range c.s.Tablets {
		// Now and once in-flight removals and promotions finish (a
		// promotion commits with the old majority).
		voters, _ := split(&t)
		after := slices.DeleteFunc(slices.Clone(voters), func(v uint64) bool {
			return slices.ContainsFunc(c.s.InFlight, func(m Move) bool {
				return m.Tablet == t.ID && m.Kind == RemoveReplica && m.TServer == v
			})
		})
		for _, m := range c.s.InFlight {
			if m.Tablet == t.ID && m.Kind == PromoteLearner {
				after = append(after, m.TServer)
			}
		}
		for _, vs := range [][]uint64{voters, after} {
			live := 0
			for _, v := range vs {
				if c.live(v) {
					live++
				}
			}
			if live < majority(len(vs)) {
				ts.Live, ts.DeadFor = true, 0 // would lose a majority: spare it
				return
			}
		}
	}
}
