package balancer

import (
	"cmp"
	"slices"
)

// Plan returns the moves that bring the cluster closer to its goals, in the
// order the master should issue them. It reads nothing but its arguments and
// returns the same moves for the same input. At most one move is returned
// per tablet, and none for a tablet with a move in State.InFlight.
func Plan(s State, o Options) []Move {
	p := newPlanner(s, o.withDefaults())
	p.repair()
	p.drain()
	p.place()
	p.balanceReplicas()
	p.balanceLeaders()
	p.balanceTableLeaders()
	return p.moves
}

// tsInfo is a tserver with the facts the planner derives from it.
type tsInfo struct {
	TServer
	// gone: dead for FollowerUnavailableTimeout or more, or unknown; its
	// replicas no longer count.
	gone bool
	// usable: live and not blacklisted; may receive replicas and leaders.
	usable bool
}

type tableTS struct{ table, ts uint64 }

type planner struct {
	opts    Options
	ts      map[uint64]*tsInfo
	usable  []uint64 // sorted ids of usable tservers
	tablets []*Tablet
	tables  []uint64 // sorted table ids

	// busy tablets have an in-flight move; touched ones got a move here.
	busy    map[uint64]bool
	touched map[uint64]bool

	// load and tableLoad count the replicas (voters and learners) per
	// tserver once the in-flight moves finish, minus the removals expected
	// to follow (over-replicated tablets, and the sources of moves planned
	// here), plus the adds planned here.
	load      map[uint64]int
	tableLoad map[tableTS]int
	// expected holds, per over-replicated tablet, the voters expected to be
	// removed (already subtracted from load).
	expected map[uint64][]uint64
	leaders  map[uint64]int

	adds   int
	addsTo map[uint64]int

	moves []Move
}

func newPlanner(s State, o Options) *planner {
	p := &planner{
		opts:      o,
		ts:        make(map[uint64]*tsInfo, len(s.TServers)),
		busy:      map[uint64]bool{},
		touched:   map[uint64]bool{},
		load:      map[uint64]int{},
		tableLoad: map[tableTS]int{},
		expected:  map[uint64][]uint64{},
		leaders:   map[uint64]int{},
		addsTo:    map[uint64]int{},
	}
	for _, t := range s.TServers {
		info := &tsInfo{TServer: t}
		info.gone = !t.Live && t.DeadFor >= o.FollowerUnavailableTimeout
		info.usable = t.Live && !t.Blacklisted
		p.ts[t.ID] = info
		if info.usable {
			p.usable = append(p.usable, t.ID)
		}
	}
	slices.Sort(p.usable)

	p.tablets = make([]*Tablet, len(s.Tablets))
	for i := range s.Tablets {
		t := s.Tablets[i]
		p.tablets[i] = &t
	}
	slices.SortFunc(p.tablets, func(a, b *Tablet) int { return cmp.Compare(a.ID, b.ID) })
	byID := make(map[uint64]*Tablet, len(p.tablets))
	for _, t := range p.tablets {
		byID[t.ID] = t
		if !slices.Contains(p.tables, t.TableID) {
			p.tables = append(p.tables, t.TableID)
		}
	}
	slices.Sort(p.tables)

	// The replica sets as they will be once in-flight moves finish.
	future := make(map[uint64][]Replica, len(p.tablets))
	for _, t := range p.tablets {
		future[t.ID] = t.Replicas
		if l := p.leaderOf(t); l != 0 {
			p.leaders[l]++
		}
	}
	for _, m := range s.InFlight {
		t := byID[m.Tablet]
		if t == nil {
			continue
		}
		p.busy[t.ID] = true
		rs := future[t.ID]
		switch m.Kind {
		case AddLearner:
			p.adds++
			p.addsTo[m.TServer]++
			if !hasReplica(rs, m.TServer) {
				future[t.ID] = append(slices.Clip(rs), Replica{TServer: m.TServer, Role: Learner})
			}
		case RemoveReplica:
			future[t.ID] = slices.DeleteFunc(slices.Clone(rs), func(r Replica) bool { return r.TServer == m.TServer })
		case TransferLeader:
			if p.leaderOf(t) == m.From {
				p.leaders[m.From]--
				p.leaders[m.TServer]++
			}
		}
	}
	for _, t := range p.tablets {
		for _, r := range future[t.ID] {
			p.shift(t, r.TServer, 1)
		}
	}
	// Expect the removals that over-replicated tablets will make, in tablet
	// order, each seeing the loads the earlier ones leave; repair makes
	// these same removals.
	for _, t := range p.tablets {
		var voters []uint64
		n := 0
		for _, r := range future[t.ID] {
			switch {
			case r.Role == Voter && !p.tsOf(r.TServer).gone:
				voters = append(voters, r.TServer)
				n++
			case r.Role == Learner && p.tsOf(r.TServer).usable:
				n++
			}
		}
		for excess := n - t.RF; excess > 0 && len(voters) > 0; excess-- {
			v := p.removalOrder(t, voters)[0]
			p.expected[t.ID] = append(p.expected[t.ID], v)
			p.shift(t, v, -1)
			voters = slices.DeleteFunc(voters, func(x uint64) bool { return x == v })
		}
	}
	return p
}

func hasReplica(rs []Replica, ts uint64) bool {
	return slices.ContainsFunc(rs, func(r Replica) bool { return r.TServer == ts })
}

func (p *planner) tsOf(id uint64) *tsInfo {
	if t, ok := p.ts[id]; ok {
		return t
	}
	return &tsInfo{TServer: TServer{ID: id}, gone: true}
}

// leaderOf returns the tablet's leader if it is known, a voter, and live.
func (p *planner) leaderOf(t *Tablet) uint64 {
	if t.Leader == 0 || !p.tsOf(t.Leader).Live {
		return 0
	}
	for _, r := range t.Replicas {
		if r.TServer == t.Leader && r.Role == Voter {
			return t.Leader
		}
	}
	return 0
}

func (p *planner) shift(t *Tablet, ts uint64, d int) {
	p.load[ts] += d
	p.tableLoad[tableTS{t.TableID, ts}] += d
}

func (p *planner) zoneOf(ts uint64) Placement { return p.tsOf(ts).Placement }

func (p *planner) distinctZones(tss []uint64) int {
	var zs []Placement
	for _, id := range tss {
		if z := p.zoneOf(id); !slices.Contains(zs, z) {
			zs = append(zs, z)
		}
	}
	return len(zs)
}

// split returns the tablet's voters and learners, sorted by tserver.
func split(t *Tablet) (voters, learners []uint64) {
	for _, r := range t.Replicas {
		if r.Role == Voter {
			voters = append(voters, r.TServer)
		} else {
			learners = append(learners, r.TServer)
		}
	}
	slices.Sort(voters)
	slices.Sort(learners)
	return voters, learners
}

// removalOrder sorts voters, the one to remove first at the front: gone,
// then dead, then blacklisted, then the one whose removal keeps the most
// zones, then the most loaded (all tables, then this table), then the
// highest id.
func (p *planner) removalOrder(t *Tablet, voters []uint64) []uint64 {
	zonesWithout := func(v uint64) int {
		var rest []uint64
		for _, x := range voters {
			if x != v && !p.tsOf(x).gone {
				rest = append(rest, x)
			}
		}
		return p.distinctZones(rest)
	}
	flag := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	out := slices.Clone(voters)
	slices.SortFunc(out, func(a, b uint64) int {
		ta, tb := p.tsOf(a), p.tsOf(b)
		if c := cmp.Compare(flag(tb.gone), flag(ta.gone)); c != 0 {
			return c
		}
		if c := cmp.Compare(flag(!tb.Live), flag(!ta.Live)); c != 0 {
			return c
		}
		if c := cmp.Compare(flag(tb.Blacklisted), flag(ta.Blacklisted)); c != 0 {
			return c
		}
		if c := cmp.Compare(zonesWithout(b), zonesWithout(a)); c != 0 {
			return c
		}
		if c := cmp.Compare(p.load[b], p.load[a]); c != 0 {
			return c
		}
		if c := cmp.Compare(p.tableLoad[tableTS{t.TableID, b}], p.tableLoad[tableTS{t.TableID, a}]); c != 0 {
			return c
		}
		return cmp.Compare(b, a)
	})
	return out
}

func (p *planner) canAdd(ts uint64) bool {
	return p.adds < p.opts.MaxConcurrentAdds && p.addsTo[ts] < p.opts.MaxConcurrentAddsPerTServer
}

// pickDest returns the best usable tserver for a new replica of t: one
// without a replica of t, within the add limits, in the zone least used by
// the replicas that stay (kept), least loaded, then lowest id.
func (p *planner) pickDest(t *Tablet, kept []uint64, zoneOK func(Placement) bool) (uint64, bool) {
	zoneUse := map[Placement]int{}
	for _, k := range kept {
		zoneUse[p.zoneOf(k)]++
	}
	var best uint64
	found := false
	for _, id := range p.usable {
		if hasReplica(t.Replicas, id) || !p.canAdd(id) {
			continue
		}
		z := p.zoneOf(id)
		if zoneOK != nil && !zoneOK(z) {
			continue
		}
		if !found || p.destLess(t, id, best, zoneUse) {
			best, found = id, true
		}
	}
	return best, found
}

func (p *planner) destLess(t *Tablet, a, b uint64, zoneUse map[Placement]int) bool {
	if c := cmp.Compare(zoneUse[p.zoneOf(a)], zoneUse[p.zoneOf(b)]); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(p.load[a], p.load[b]); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(p.tableLoad[tableTS{t.TableID, a}], p.tableLoad[tableTS{t.TableID, b}]); c != 0 {
		return c < 0
	}
	return a < b
}

// pickLeader returns the usable voter of t, other than not, that leads the
// fewest tablets.
func (p *planner) pickLeader(t *Tablet, not uint64) (uint64, bool) {
	voters, _ := split(t)
	var best uint64
	found := false
	for _, v := range voters {
		if v == not || !p.tsOf(v).usable {
			continue
		}
		if !found || p.leaders[v] < p.leaders[best] {
			best, found = v, true
		}
	}
	return best, found
}

func (p *planner) emit(m Move) {
	p.moves = append(p.moves, m)
	p.touched[m.Tablet] = true
}

// addLearner plans a learner of t on dst; victim, when not 0, is the
// replica expected to be removed once the learner is promoted.
func (p *planner) addLearner(t *Tablet, dst, victim uint64, reason string) {
	p.emit(Move{Kind: AddLearner, Tablet: t.ID, TServer: dst, Reason: reason})
	p.adds++
	p.addsTo[dst]++
	p.shift(t, dst, 1)
	if victim != 0 {
		p.shift(t, victim, -1)
	}
}

func (p *planner) transferLeader(t *Tablet, to uint64, reason string) {
	from := p.leaderOf(t)
	p.emit(Move{Kind: TransferLeader, Tablet: t.ID, From: from, TServer: to, Reason: reason})
	p.leaders[from]--
	p.leaders[to]++
}

// free reports whether the planner may give t a move: none in flight or
// planned, and a live majority of voters (without one, no configuration
// change can commit; bringing such a tablet back is an operator's job).
func (p *planner) free(t *Tablet) bool {
	if p.busy[t.ID] || p.touched[t.ID] {
		return false
	}
	voters, live := 0, 0
	for _, r := range t.Replicas {
		if r.Role == Voter {
			voters++
			if p.tsOf(r.TServer).Live {
				live++
			}
		}
	}
	return voters > 0 && live >= majority(voters)
}

// repair is goal 1: every tablet at its replication factor.
func (p *planner) repair() {
	for _, t := range p.tablets {
		if !p.free(t) {
			continue
		}
		voters, learners := split(t)
		if i := slices.IndexFunc(learners, func(id uint64) bool { return !p.tsOf(id).usable }); i >= 0 {
			p.emit(Move{Kind: RemoveReplica, Tablet: t.ID, TServer: learners[i], Reason: ReasonBadLearner})
			p.shift(t, learners[i], -1)
			continue
		}
		if len(learners) > 0 {
			p.emit(Move{Kind: PromoteLearner, Tablet: t.ID, TServer: learners[0], Reason: ReasonCaughtUp})
			continue
		}
		var counting, kept []uint64
		for _, v := range voters {
			if info := p.tsOf(v); !info.gone {
				counting = append(counting, v)
				if !info.Blacklisted {
					kept = append(kept, v)
				}
			}
		}
		if len(counting) < t.RF {
			if dst, ok := p.pickDest(t, kept, nil); ok {
				p.addLearner(t, dst, 0, ReasonUnderReplicated)
				continue
			}
		}
		if len(voters) > t.RF {
			p.removeExtra(t, voters)
		}
	}
}

// removeExtra removes the worst voter of an over-replicated tablet, or
// moves leadership off it first. It removes nothing it cannot remove safely.
func (p *planner) removeExtra(t *Tablet, voters []uint64) {
	healthy := 0
	for _, v := range voters {
		if p.tsOf(v).Live {
			healthy++
		}
	}
	leader := p.leaderOf(t)
	// The expected removals first: loads already count them as gone.
	exp := p.expected[t.ID]
	order := slices.Concat(exp, slices.DeleteFunc(p.removalOrder(t, voters), func(v uint64) bool { return slices.Contains(exp, v) }))
	for _, v := range order {
		live := p.tsOf(v).Live
		if live {
			// Removing a live voter must leave RF healthy voters, and we
			// must know it is not the leader.
			if leader == 0 || healthy-1 < t.RF || healthy-1 < majority(len(voters)-1) {
				continue
			}
			if v == leader {
				if to, ok := p.pickLeader(t, v); ok {
					p.transferLeader(t, to, ReasonBeforeRemove)
					return
				}
				continue
			}
		} else if healthy < majority(len(voters)-1) {
			continue
		}
		p.emit(Move{Kind: RemoveReplica, Tablet: t.ID, TServer: v, Reason: ReasonOverReplicated})
		if len(exp) > 0 && !slices.Contains(exp, v) {
			// Not the removal we expected: put that one back.
			p.shift(t, exp[0], 1)
			p.shift(t, v, -1)
		}
		return
	}
}

func majority(n int) int { return n/2 + 1 }

// drain is goal 2: move leaders, then replicas, off blacklisted tservers.
func (p *planner) drain() {
	for _, t := range p.tablets {
		if !p.free(t) {
			continue
		}
		if l := p.leaderOf(t); l != 0 && p.tsOf(l).Blacklisted {
			if to, ok := p.pickLeader(t, l); ok {
				p.transferLeader(t, to, ReasonBlacklist)
				continue
			}
		}
		voters, learners := split(t)
		if len(learners) > 0 || len(voters) > t.RF {
			continue
		}
		var victim uint64
		var kept []uint64
		for _, v := range voters {
			switch info := p.tsOf(v); {
			case info.gone:
			case info.Blacklisted:
				if victim == 0 {
					victim = v
				}
			default:
				kept = append(kept, v)
			}
		}
		if victim == 0 {
			continue
		}
		if dst, ok := p.pickDest(t, kept, nil); ok {
			p.addLearner(t, dst, victim, ReasonBlacklist)
		}
	}
}

// healthyAtRF reports whether t has exactly RF voters, all on usable
// tservers, and no learners: the tablets placement and balance may move.
func (p *planner) healthyAtRF(t *Tablet) bool {
	if len(t.Replicas) != t.RF {
		return false
	}
	for _, r := range t.Replicas {
		if r.Role != Voter || !p.tsOf(r.TServer).usable {
			return false
		}
	}
	return true
}

// stable reports whether t has exactly RF voters, none gone, and no
// learners: the tablets whose leadership may move for balance.
func (p *planner) stable(t *Tablet) bool {
	if len(t.Replicas) != t.RF {
		return false
	}
	for _, r := range t.Replicas {
		if r.Role != Voter || p.tsOf(r.TServer).gone {
			return false
		}
	}
	return true
}

// place is goal 3: spread each tablet's replicas over as many zones as
// there are (up to RF).
func (p *planner) place() {
	var zones []Placement
	for _, id := range p.usable {
		if z := p.zoneOf(id); !slices.Contains(zones, z) {
			zones = append(zones, z)
		}
	}
	for _, t := range p.tablets {
		if !p.free(t) || !p.healthyAtRF(t) {
			continue
		}
		voters, _ := split(t)
		have := p.distinctZones(voters)
		if have >= min(t.RF, len(zones)) {
			continue
		}
		used := map[Placement]bool{}
		for _, v := range voters {
			used[p.zoneOf(v)] = true
		}
		dst, ok := p.pickDest(t, voters, func(z Placement) bool { return !used[z] })
		if !ok {
			continue
		}
		// The replica expected to go: what removeExtra will pick once the
		// learner is a voter.
		victim := p.removalOrder(t, append(slices.Clone(voters), dst))[0]
		p.addLearner(t, dst, victim, ReasonPlacement)
	}
}

// balanceReplicas is goal 4: per-tserver replica counts within one of each
// other, across all tables, then per table where that costs nothing
// globally.
func (p *planner) balanceReplicas() {
	for p.adds < p.opts.MaxConcurrentAdds {
		t, src, dst, ok := p.findReplicaMove()
		if !ok {
			return
		}
		p.addLearner(t, dst, src, ReasonBalance)
	}
}

// findReplicaMove finds a tablet to move to a less loaded tserver dst. The
// source is the replica the tablet will shed once over-replicated (see
// removalOrder), so that what is planned here is what repair does later. A
// move must take the source and destination at least two replicas apart
// closer together: across all tables; else within one table, if the
// source has more replicas than dst overall.
func (p *planner) findReplicaMove() (*Tablet, uint64, uint64, bool) {
	byLoad := func(load func(uint64) int) []uint64 {
		ids := slices.Clone(p.usable)
		slices.SortStableFunc(ids, func(a, b uint64) int { return cmp.Compare(load(a), load(b)) })
		return ids
	}
	global := func(id uint64) int { return p.load[id] }
	for _, dst := range byLoad(global) {
		if p.maxOver(global)-global(dst) < 2 {
			break
		}
		ok := func(t *Tablet, src uint64) bool { return p.load[src]-p.load[dst] >= 2 }
		if t, src, found := p.tabletToMove(dst, 0, false, ok); found {
			return t, src, dst, true
		}
	}
	for _, table := range p.tables {
		tl := func(id uint64) int { return p.tableLoad[tableTS{table, id}] }
		for _, dst := range byLoad(tl) {
			if p.maxOver(tl)-tl(dst) < 2 {
				break
			}
			ok := func(t *Tablet, src uint64) bool { return tl(src)-tl(dst) >= 2 && p.load[src] > p.load[dst] }
			if t, src, found := p.tabletToMove(dst, table, true, ok); found {
				return t, src, dst, true
			}
		}
	}
	return nil, 0, 0, false
}

// maxOver returns the highest load over the usable tservers.
func (p *planner) maxOver(load func(uint64) int) int {
	m := 0
	for _, id := range p.usable {
		m = max(m, load(id))
	}
	return m
}

// tabletToMove picks a tablet without a replica on dst (of the given table
// when byTable) whose move from its would-be source keeps its zone spread
// and passes ok, preferring the most loaded source, then the table most
// unbalanced between source and dst, then the smallest tablet.
func (p *planner) tabletToMove(dst, table uint64, byTable bool, ok func(*Tablet, uint64) bool) (*Tablet, uint64, bool) {
	if !p.canAdd(dst) {
		return nil, 0, false
	}
	var best *Tablet
	var bestSrc uint64
	bestLoad, bestGap := 0, 0
	for _, t := range p.tablets {
		if byTable && t.TableID != table {
			continue
		}
		if !p.free(t) || hasReplica(t.Replicas, dst) || !p.healthyAtRF(t) {
			continue
		}
		voters, _ := split(t)
		if !slices.ContainsFunc(voters, func(v uint64) bool { return ok(t, v) }) {
			continue // cheap test first: no voter could be the source
		}
		src := p.removalOrder(t, append(slices.Clone(voters), dst))[0]
		if src == dst || !ok(t, src) {
			continue
		}
		after := append(slices.DeleteFunc(slices.Clone(voters), func(v uint64) bool { return v == src }), dst)
		if p.distinctZones(after) < p.distinctZones(voters) {
			continue
		}
		load := p.load[src]
		gap := p.tableLoad[tableTS{t.TableID, src}] - p.tableLoad[tableTS{t.TableID, dst}]
		if best == nil || load > bestLoad || (load == bestLoad && (gap > bestGap || (gap == bestGap && t.SizeBytes < best.SizeBytes))) {
			best, bestSrc, bestLoad, bestGap = t, src, load, gap
		}
	}
	return best, bestSrc, best != nil
}
