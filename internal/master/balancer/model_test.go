package balancer

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// cluster is the test model: a State that moves are applied to as if the
// master had carried them out and they had finished.
type cluster struct {
	s    State
	opts Options
}

func (c *cluster) tserver(id uint64) *TServer {
	for i := range c.s.TServers {
		if c.s.TServers[i].ID == id {
			return &c.s.TServers[i]
		}
	}
	return nil
}

func (c *cluster) tablet(id uint64) *Tablet {
	for i := range c.s.Tablets {
		if c.s.Tablets[i].ID == id {
			return &c.s.Tablets[i]
		}
	}
	return nil
}

func (c *cluster) live(id uint64) bool {
	ts := c.tserver(id)
	return ts != nil && ts.Live
}

func (c *cluster) usable(id uint64) bool {
	ts := c.tserver(id)
	return ts != nil && ts.Live && !ts.Blacklisted
}

// apply carries out a finished move.
func (c *cluster) apply(m Move) {
	t := c.tablet(m.Tablet)
	if t == nil {
		return
	}
	switch m.Kind {
	case AddLearner:
		if !hasReplica(t.Replicas, m.TServer) {
			t.Replicas = append(t.Replicas, Replica{TServer: m.TServer, Role: Learner})
		}
	case PromoteLearner:
		for i := range t.Replicas {
			if t.Replicas[i].TServer == m.TServer {
				t.Replicas[i].Role = Voter
			}
		}
	case RemoveReplica:
		t.Replicas = slices.DeleteFunc(t.Replicas, func(r Replica) bool { return r.TServer == m.TServer })
		if t.Leader == m.TServer {
			t.Leader = 0
		}
	case TransferLeader:
		if t.Leader == m.From {
			t.Leader = m.TServer
		}
	}
}

// elect gives a leader to every tablet whose leader is unknown or not live
// and that has a live majority of voters, as Raft would: the live voter
// with the lowest id.
func (c *cluster) elect() {
	for i := range c.s.Tablets {
		t := &c.s.Tablets[i]
		if t.Leader != 0 && c.live(t.Leader) && isVoter(t, t.Leader) {
			continue
		}
		var live []uint64
		n := 0
		for _, r := range t.Replicas {
			if r.Role == Voter {
				n++
				if c.live(r.TServer) {
					live = append(live, r.TServer)
				}
			}
		}
		t.Leader = 0
		if len(live) >= majority(n) && len(live) > 0 {
			t.Leader = slices.Min(live)
		}
	}
}

// checkPlan returns the safety rules a plan breaks.
func (c *cluster) checkPlan(moves []Move) []string {
	o := c.opts.withDefaults()
	var errs []string
	bad := func(m Move, format string, args ...any) {
		errs = append(errs, fmt.Sprintf("%s: %s", m, fmt.Sprintf(format, args...)))
	}
	seen := map[uint64]bool{}
	adds, addsTo := 0, map[uint64]int{}
	for _, m := range c.s.InFlight {
		seen[m.Tablet] = true
		if m.Kind == AddLearner {
			adds++
			addsTo[m.TServer]++
		}
	}
	leaderMoves := 0
	for _, m := range moves {
		t := c.tablet(m.Tablet)
		if t == nil {
			bad(m, "unknown tablet")
			continue
		}
		if seen[m.Tablet] {
			bad(m, "second move for the tablet")
		}
		seen[m.Tablet] = true
		voters, learners := split(t)
		healthy := 0
		for _, v := range voters {
			if c.live(v) {
				healthy++
			}
		}
		switch m.Kind {
		case AddLearner:
			adds++
			addsTo[m.TServer]++
			if !c.usable(m.TServer) {
				bad(m, "destination not usable")
			}
			if hasReplica(t.Replicas, m.TServer) {
				bad(m, "destination already has a replica")
			}
		case PromoteLearner:
			if !slices.Contains(learners, m.TServer) || !c.usable(m.TServer) {
				bad(m, "no learner on a usable tserver")
			}
		case RemoveReplica:
			if !hasReplica(t.Replicas, m.TServer) {
				bad(m, "no such replica")
				continue
			}
			if m.TServer == t.Leader && c.live(t.Leader) {
				bad(m, "removes the leader")
			}
			if !slices.Contains(voters, m.TServer) {
				continue
			}
			if len(voters) == 1 {
				bad(m, "removes the last voter")
			}
			after := healthy
			if c.live(m.TServer) {
				after--
				if after < t.RF {
					bad(m, "leaves %d healthy voters, RF %d", after, t.RF)
				}
			}
			if healthy >= majority(len(voters)) && after < majority(len(voters)-1) {
				bad(m, "leaves %d healthy of %d voters", after, len(voters)-1)
			}
		case TransferLeader:
			if m.From != t.Leader || !slices.Contains(voters, m.TServer) || !c.live(m.TServer) {
				bad(m, "bad transfer (leader %d)", t.Leader)
			}
			if m.Reason == ReasonLeaderBalance {
				leaderMoves++
			}
		}
	}
	if adds > o.MaxConcurrentAdds {
		errs = append(errs, fmt.Sprintf("%d adds in flight, limit %d", adds, o.MaxConcurrentAdds))
	}
	for ts, n := range addsTo {
		if n > o.MaxConcurrentAddsPerTServer {
			errs = append(errs, fmt.Sprintf("%d adds to ts %d, limit %d", n, ts, o.MaxConcurrentAddsPerTServer))
		}
	}
	if leaderMoves > max(o.MaxLeaderMovesPerRun, len(c.s.TServers)) {
		errs = append(errs, fmt.Sprintf("%d leader moves, limit %d", leaderMoves, o.MaxLeaderMovesPerRun))
	}
	return errs
}

// counts returns the replicas and leaders per tserver.
func (c *cluster) counts() (replicas, leaders map[uint64]int) {
	replicas, leaders = map[uint64]int{}, map[uint64]int{}
	for _, t := range c.s.Tablets {
		for _, r := range t.Replicas {
			replicas[r.TServer]++
		}
		if t.Leader != 0 {
			leaders[t.Leader]++
		}
	}
	return replicas, leaders
}

func spread(ids []uint64, n map[uint64]int) int {
	if len(ids) == 0 {
		return 0
	}
	lo, hi := n[ids[0]], n[ids[0]]
	for _, id := range ids {
		lo, hi = min(lo, n[id]), max(hi, n[id])
	}
	return hi - lo
}

// checkBalanced returns the goals a converged cluster misses. Replica
// spread is checked within each zone, and across the cluster when global;
// leader spread across the cluster when leaders.
func (c *cluster) checkBalanced(global, leaders bool) []string {
	var errs []string
	if len(c.s.InFlight) > 0 {
		errs = append(errs, fmt.Sprintf("%d moves still in flight", len(c.s.InFlight)))
	}
	var usable []uint64
	zones := map[Placement][]uint64{}
	for _, ts := range c.s.TServers {
		if c.usable(ts.ID) {
			usable = append(usable, ts.ID)
			zones[ts.Placement] = append(zones[ts.Placement], ts.ID)
		}
	}
	slices.Sort(usable)
	for _, t := range c.s.Tablets {
		voters, learners := split(&t)
		if len(voters) != t.RF || len(learners) > 0 {
			errs = append(errs, fmt.Sprintf("tablet %d: %d voters, %d learners, RF %d", t.ID, len(voters), len(learners), t.RF))
		}
		zs := map[Placement]bool{}
		for _, v := range voters {
			if !c.usable(v) {
				errs = append(errs, fmt.Sprintf("tablet %d: voter on unusable ts %d", t.ID, v))
			}
			zs[c.tserver(v).Placement] = true
		}
		if len(zs) < min(t.RF, len(zones)) {
			errs = append(errs, fmt.Sprintf("tablet %d: voters in %d zones, %d available", t.ID, len(zs), len(zones)))
		}
		if t.Leader == 0 || !isVoter(&t, t.Leader) {
			errs = append(errs, fmt.Sprintf("tablet %d: no leader", t.ID))
		}
	}
	reps, leads := c.counts()
	for z, ids := range zones {
		if d := spread(ids, reps); d > 1 {
			errs = append(errs, fmt.Sprintf("zone %s: replica spread %d", z, d))
		}
	}
	if d := spread(usable, reps); global && d > 1 {
		errs = append(errs, fmt.Sprintf("replica spread %d", d))
	}
	if d := spread(usable, leads); leaders && d > 1 {
		errs = append(errs, fmt.Sprintf("leader spread %d", d))
	}
	return errs
}

// checkTableLeaders reports the tables whose leaders are spread over the
// usable tservers by more than one.
func (c *cluster) checkTableLeaders() []string {
	counts := map[uint64]map[uint64]int{}
	for _, t := range c.s.Tablets {
		if counts[t.TableID] == nil {
			counts[t.TableID] = map[uint64]int{}
		}
		counts[t.TableID][t.Leader]++
	}
	var usable []uint64
	for _, ts := range c.s.TServers {
		if c.usable(ts.ID) {
			usable = append(usable, ts.ID)
		}
	}
	var errs []string
	for _, table := range slices.Sorted(maps.Keys(counts)) {
		if d := spread(usable, counts[table]); d > 1 {
			errs = append(errs, fmt.Sprintf("table %d: leader spread %d", table, d))
		}
	}
	return errs
}

// round plans once and applies the plan (finishing every move), electing
// leaders afterwards. It returns the plan and the safety rules it broke.
func (c *cluster) round() ([]Move, []string) {
	moves := Plan(c.s, c.opts)
	errs := c.checkPlan(moves)
	for _, m := range moves {
		c.apply(m)
	}
	c.elect()
	return moves, errs
}

func (c *cluster) summary() string {
	var b strings.Builder
	reps, leads := c.counts()
	ids := make([]uint64, 0, len(c.s.TServers))
	for _, ts := range c.s.TServers {
		ids = append(ids, ts.ID)
	}
	slices.Sort(ids)
	for _, id := range ids {
		ts := c.tserver(id)
		state := "live"
		if !ts.Live {
			state = "dead " + ts.DeadFor.String()
		}
		if ts.Blacklisted {
			state += " blacklisted"
		}
		fmt.Fprintf(&b, "ts=%d zone=%s %s: replicas=%d leaders=%d\n", id, ts.Placement.Zone, state, reps[id], leads[id])
	}
	return b.String()
}

func (c *cluster) show() string {
	var b strings.Builder
	ts := slices.Clone(c.s.Tablets)
	sort.Slice(ts, func(i, j int) bool { return ts[i].ID < ts[j].ID })
	for _, t := range ts {
		voters, learners := split(&t)
		fmt.Fprintf(&b, "tablet=%d table=%d rf=%d voters=%s", t.ID, t.TableID, t.RF, joinIDs(voters))
		if len(learners) > 0 {
			fmt.Fprintf(&b, " learners=%s", joinIDs(learners))
		}
		fmt.Fprintf(&b, " leader=%d\n", t.Leader)
	}
	for _, m := range c.s.InFlight {
		fmt.Fprintf(&b, "in flight: %s\n", m)
	}
	b.WriteString(c.summary())
	return b.String()
}

func joinIDs(ids []uint64) string {
	if len(ids) == 0 {
		return "-"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}
