package txncheck

import (
	"fmt"
	"strings"
)

// depGraph is a dependency graph: transactions and reads, and labelled
// edges between them (ww, wr, rw on an account).
type depGraph struct {
	names []string
	adj   [][]depEdge
	edges int
}

type depEdge struct {
	to      int
	kind    string
	account int
}

func (g *depGraph) add(name string) int {
	g.names = append(g.names, name)
	g.adj = append(g.adj, nil)
	return len(g.names) - 1
}

func (g *depGraph) edge(from, to int, kind string, account int) {
	g.adj[from] = append(g.adj[from], depEdge{to: to, kind: kind, account: account})
	g.edges++
}

// sccs returns the strongly connected components of more than one node
// (Tarjan's algorithm, iterative: the graphs are deep).
func (g *depGraph) sccs() [][]int {
	n := len(g.names)
	index := make([]int, n)
	low := make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	var out [][]int
	next := 0
	type frame struct{ v, e int }
	for root := 0; root < n; root++ {
		if index[root] >= 0 {
			continue
		}
		call := []frame{{root, 0}}
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			v := f.v
			if f.e < len(g.adj[v]) {
				w := g.adj[v][f.e].to
				f.e++
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{w, 0})
				} else if onStack[w] {
					low[v] = min(low[v], index[w])
				}
				continue
			}
			call = call[:len(call)-1]
			if len(call) > 0 {
				u := call[len(call)-1].v
				low[u] = min(low[u], low[v])
			}
			if low[v] == index[v] {
				var comp []int
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp = append(comp, w)
					if w == v {
						break
					}
				}
				if len(comp) > 1 {
					out = append(out, comp)
				}
			}
		}
	}
	return out
}

// cycle describes one cycle of the graph ("" if it has none): the
// shortest cycle through a node of the first non-trivial component, with
// its edges, classified as Adya's G0 (ww only), G1c (ww and wr),
// G-single (one rw) or G2 (more).
func (g *depGraph) cycle() string {
	comps := g.sccs()
	if len(comps) == 0 {
		return ""
	}
	comp := comps[0]
	in := map[int]bool{}
	for _, v := range comp {
		in[v] = true
	}
	start := comp[0]
	// BFS from start inside the component back to start.
	type via struct {
		from int
		e    depEdge
	}
	prev := map[int]via{}
	queue := []int{start}
	found := false
	for len(queue) > 0 && !found {
		v := queue[0]
		queue = queue[1:]
		for _, e := range g.adj[v] {
			if !in[e.to] {
				continue
			}
			if e.to == start {
				prev[start] = via{v, e}
				found = true
				break
			}
			if _, seen := prev[e.to]; !seen {
				prev[e.to] = via{v, e}
				queue = append(queue, e.to)
			}
		}
	}
	if !found {
		return fmt.Sprintf("a strongly connected component of %d nodes (no cycle found through %s)", len(comp), g.names[start])
	}
	var steps []string
	rw := 0
	kinds := map[string]bool{}
	for v := start; ; {
		p := prev[v]
		steps = append(steps, fmt.Sprintf("%s -%s(acct %d)-> %s", g.names[p.from], p.e.kind, p.e.account, g.names[v]))
		kinds[p.e.kind] = true
		if p.e.kind == "rw" {
			rw++
		}
		v = p.from
		if v == start {
			break
		}
	}
	for i, j := 0, len(steps)-1; i < j; i, j = i+1, j-1 {
		steps[i], steps[j] = steps[j], steps[i]
	}
	class := "G2"
	switch {
	case rw == 1:
		class = "G-single"
	case rw == 0 && kinds["wr"]:
		class = "G1c"
	case rw == 0:
		class = "G0"
	}
	return fmt.Sprintf("%s cycle of %d edges (%d strongly connected components): %s", class, len(steps), len(comps), strings.Join(steps, "; "))
}
