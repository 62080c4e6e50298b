package balancer

import (
	"cmp"
	"slices"
)

// hop is one leadership transfer on a path of transfers.
type hop struct {
	t        *Tablet
	from, to uint64
}

// balanceLeaders is goal 5: per-tserver leader counts within one of each
// other. A tserver S with too many leaders may have no tablet it leads with
// a replica on the tserver T with too few; then leadership moves along a
// chain S→U→…→T, each hop a different tablet, so that only S loses a leader
// and only T gains one. Chains are found breadth first.
//
// Nothing moves while a tablet whose voters are all up has no known
// leader: its election or its leader's report is still to come, and the
// counts without it are wrong. A new table's tablets elect the leaders the
// master spread, but their reports arrive over a heartbeat interval; the
// first reports made the others look short of leaders, and the moves that
// followed stalled the table's first writes.
func (p *planner) balanceLeaders() {
	if p.leadersUnknown() {
		return
	}
	led := map[uint64][]*Tablet{}
	for _, t := range p.tablets {
		if l := p.leaderOf(t); l != 0 && p.free(t) && p.stable(t) {
			led[l] = append(led[l], t)
		}
	}
	budget := p.opts.MaxLeaderMovesPerRun
	for budget > 0 {
		// The first chain of a run may be longer than the budget, or a
		// small budget would never allow any chain.
		maxLen := budget
		if budget == p.opts.MaxLeaderMovesPerRun {
			maxLen = len(p.usable)
		}
		path := p.leaderPath(led, maxLen)
		if path == nil {
			return
		}
		for _, h := range path {
			p.transferLeader(h.t, h.to, ReasonLeaderBalance)
		}
		budget -= len(path)
	}
}

// leadersUnknown reports whether a tablet that may move, whose voters are
// all up, has no known leader: the leader counts are not known yet.
func (p *planner) leadersUnknown() bool {
	for _, t := range p.tablets {
		if p.leaderOf(t) == 0 && p.free(t) && p.stable(t) && p.votersLive(t) {
			return true
		}
	}
	return false
}

// leaderPath returns a chain of at most maxLen transfers that moves one
// leader from a tserver with the most leaders to one with at least two
// fewer, or nil.
func (p *planner) leaderPath(led map[uint64][]*Tablet, maxLen int) []hop {
	if len(p.usable) < 2 {
		return nil
	}
	order := slices.Clone(p.usable)
	slices.SortStableFunc(order, func(a, b uint64) int { return cmp.Compare(p.leaders[b], p.leaders[a]) })
	minLeaders := p.leaders[order[len(order)-1]]
	for _, src := range order {
		if p.leaders[src]-minLeaders < 2 {
			return nil
		}
		if path := p.bfs(led, src, maxLen); path != nil {
			return path
		}
	}
	return nil
}

func (p *planner) bfs(led map[uint64][]*Tablet, src uint64, maxLen int) []hop {
	parent := map[uint64]hop{}
	dist := map[uint64]int{src: 0}
	queue := []uint64{src}
	var best uint64
	found := false
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		if dist[u] >= maxLen {
			continue
		}
		for _, t := range led[u] {
			if p.touched[t.ID] {
				continue
			}
			voters, _ := split(t)
			for _, v := range voters {
				if _, seen := dist[v]; seen || !p.tsOf(v).usable {
					continue
				}
				dist[v] = dist[u] + 1
				parent[v] = hop{t: t, from: u, to: v}
				queue = append(queue, v)
				if p.leaders[v] <= p.leaders[src]-2 && (!found || p.leaders[v] < p.leaders[best]) {
					best, found = v, true
				}
			}
		}
	}
	if !found {
		return nil
	}
	var path []hop
	for v := best; v != src; v = parent[v].from {
		path = append(path, parent[v])
	}
	slices.Reverse(path)
	return path
}

// balanceTableLeaders is goal 5's second half: each table's leaders
// within one of each other per usable tserver, by moves that keep the
// global counts within one (YugabyteDB balances leaders table by table as
// well). Balanced in total, a table's six leaders could all sit on one
// node, which then served every read and write of that table alone. A
// move from S to T needs S to lead more in total than T; where both lead
// as many, a second table gives one back, from T to S, if that does not
// leave it further out of balance. Each move brings the sum over tables of
// the squared per-tserver counts down, so runs end.
func (p *planner) balanceTableLeaders() {
	if len(p.usable) < 2 || p.leadersUnknown() {
		return
	}
	// led[table][ts]: the tablets of table that ts leads and may move;
	// count[table][ts]: the leaders it will have once the moves planned
	// so far are done.
	led := map[uint64]map[uint64][]*Tablet{}
	count := map[uint64]map[uint64]int{}
	byID := map[uint64]*Tablet{}
	for _, t := range p.tablets {
		byID[t.ID] = t
		l := p.leaderOf(t)
		if l == 0 {
			continue
		}
		if count[t.TableID] == nil {
			count[t.TableID] = map[uint64]int{}
			led[t.TableID] = map[uint64][]*Tablet{}
		}
		count[t.TableID][l]++
		if p.free(t) && p.stable(t) && p.tsOf(l).usable {
			led[t.TableID][l] = append(led[t.TableID][l], t)
		}
	}
	for _, m := range p.moves {
		if t := byID[m.Tablet]; m.Kind == TransferLeader && t != nil && count[t.TableID] != nil {
			count[t.TableID][m.From]--
			count[t.TableID][m.TServer]++
		}
	}
	budget := p.opts.MaxLeaderMovesPerRun
	for _, m := range p.moves {
		if m.Kind == TransferLeader {
			budget--
		}
	}
	move := func(t *Tablet, from, to uint64) {
		p.transferLeader(t, to, ReasonTableLeaderBalance)
		byTS := led[t.TableID]
		byTS[from] = slices.DeleteFunc(byTS[from], func(x *Tablet) bool { return x == t })
		count[t.TableID][from]--
		count[t.TableID][to]++
		budget--
	}
	for budget > 0 {
		x, y, src, dst := p.tableLeaderMove(led, count)
		if x == nil {
			return
		}
		move(x, src, dst)
		if y != nil {
			move(y, dst, src)
		}
	}
}

// tableLeaderMove finds the next move of balanceTableLeaders: tablet x to
// go from src to dst and, when src and dst lead as many in total, tablet y
// of another table to go back; nil x when there is none.
func (p *planner) tableLeaderMove(led map[uint64]map[uint64][]*Tablet, counts map[uint64]map[uint64]int) (x, y *Tablet, src, dst uint64) {
	count := func(table, ts uint64) int { return counts[table][ts] }
	for _, table := range p.tables {
		if led[table] == nil {
			continue
		}
		byCount := slices.Clone(p.usable)
		slices.SortStableFunc(byCount, func(a, b uint64) int { return cmp.Compare(count(table, b), count(table, a)) })
		for _, s := range byCount {
			for _, d := range slices.Backward(byCount) {
				if count(table, s)-count(table, d) < 2 || p.leaders[s] < p.leaders[d] {
					continue
				}
				x := p.ledWithVoter(led[table][s], d)
				if x == nil {
					continue
				}
				if p.leaders[s] > p.leaders[d] {
					return x, nil, s, d
				}
				// As many in total: another table gives one back.
				for _, other := range p.tables {
					if other == table || count(other, d)-count(other, s) < 1 {
						continue
					}
					if y := p.ledWithVoter(led[other][d], s); y != nil {
						return x, y, s, d
					}
				}
			}
		}
	}
	return nil, nil, 0, 0
}

// ledWithVoter returns the first of tablets, not yet given a move, with a
// voter on ts.
func (p *planner) ledWithVoter(tablets []*Tablet, ts uint64) *Tablet {
	for _, t := range tablets {
		if !p.touched[t.ID] && isVoter(t, ts) {
			return t
		}
	}
	return nil
}

// votersLive reports whether every voter of t is on a live tserver.
func (p *planner) votersLive(t *Tablet) bool {
	for _, r := range t.Replicas {
		if r.Role == Voter && !p.tsOf(r.TServer).Live {
			return false
		}
	}
	return true
}

// isVoter reports whether t has a voter on ts.
func isVoter(t *Tablet, ts uint64) bool {
	return slices.ContainsFunc(t.Replicas, func(r Replica) bool { return r.TServer == ts && r.Role == Voter })
}
