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
	led := map[uint64][]*Tablet{}
	for _, t := range p.tablets {
		if !p.free(t) || !p.stable(t) {
			continue
		}
		l := p.leaderOf(t)
		if l == 0 && p.votersLive(t) {
			return
		}
		if l != 0 {
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

// votersLive reports whether every voter of t is on a live tserver.
func (p *planner) votersLive(t *Tablet) bool {
	for _, r := range t.Replicas {
		if r.Role == Voter && !p.tsOf(r.TServer).Live {
			return false
		}
	}
	return true
}
