package elle

import (
	"slices"
)

// Edge types of the dependency graph, as bits (two transactions may be
// related in several ways).
const (
	eWW   uint8 = 1 << iota // write-write: b installed the version after a's
	eWR                     // write-read: b read the version a installed
	eRW                     // read-write (anti-dependency): b installed the version after the one a read
	eProc                   // process order: a then b on one process
	eRT                     // real-time order: a completed before b was invoked
	eData = eWW | eWR | eRW
	eAll  = eData | eProc | eRT
)

// typeName names an edge type in explanations.
func typeName(t uint8) string {
	switch t {
	case eWW:
		return "ww"
	case eWR:
		return "wr"
	case eRW:
		return "rw"
	case eProc:
		return "process"
	case eRT:
		return "realtime"
	}
	return "?"
}

// preference is the order in which one of several types of an edge is
// named in a cycle: data dependencies before orders, rw last (a cycle is
// classified by its fewest rw edges).
var preference = []uint8{eWW, eWR, eProc, eRT, eRW}

type edge struct {
	from, to int32
	t        uint8
}

// graph is the dependency graph in compressed sparse rows: the
// successors of node i are to[off[i]:off[i+1]], sorted, each with its
// type bits.
type graph struct {
	off []int32
	to  []int32
	typ []uint8
}

// newGraph builds the graph of n nodes from chunks of edges, merging
// parallel edges into one with the union of their types.
func newGraph(n int, chunks [][]edge) *graph {
	g := &graph{off: make([]int32, n+1)}
	total := 0
	for _, edges := range chunks {
		total += len(edges)
		for _, e := range edges {
			g.off[e.from+1]++
		}
	}
	for i := 1; i <= n; i++ {
		g.off[i] += g.off[i-1]
	}
	to := make([]int32, total)
	typ := make([]uint8, total)
	next := slices.Clone(g.off[:n])
	for i, edges := range chunks {
		for _, e := range edges {
			p := next[e.from]
			next[e.from]++
			to[p], typ[p] = e.to, e.t
		}
		chunks[i] = nil // free as we go
	}
	// sort each row by target and merge duplicates, compacting in place
	type pair struct {
		to int32
		t  uint8
	}
	var row []pair
	w := int32(0)
	for i := range n {
		start, end := g.off[i], g.off[i+1]
		g.off[i] = w
		row = row[:0]
		for p := start; p < end; p++ {
			row = append(row, pair{to[p], typ[p]})
		}
		slices.SortFunc(row, func(a, b pair) int { return int(a.to) - int(b.to) })
		for j, pr := range row {
			if j > 0 && row[j-1].to == pr.to {
				typ[w-1] |= pr.t
				continue
			}
			to[w], typ[w] = pr.to, pr.t
			w++
		}
	}
	g.off[n] = w
	g.to, g.typ = to[:w:w], typ[:w:w]
	return g
}

func (g *graph) n() int { return len(g.off) - 1 }

// types is the type bits of the edge a->b (0 when none).
func (g *graph) types(a, b int32) uint8 {
	row := g.to[g.off[a]:g.off[a+1]]
	if i, ok := slices.BinarySearch(row, b); ok {
		return g.typ[g.off[a]+int32(i)]
	}
	return 0
}

// scc computes the strongly connected components of the subgraph of edges
// with a type in mask (Tarjan's algorithm, iterative). comp[i] is node i's
// component; comps lists the components of more than one node.
func (g *graph) scc(mask uint8) (comp []int32, comps [][]int32) {
	n := g.n()
	const unvisited = -1
	index := make([]int32, n)
	low := make([]int32, n)
	comp = make([]int32, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = unvisited
	}
	var stack []int32
	type frame struct {
		v   int32
		pos int32
	}
	var calls []frame
	next := int32(0)
	nComp := int32(0)
	for root := range int32(n) {
		if index[root] != unvisited {
			continue
		}
		calls = append(calls, frame{root, g.off[root]})
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(calls) > 0 {
			f := &calls[len(calls)-1]
			v := f.v
			descended := false
			for f.pos < g.off[v+1] {
				p := f.pos
				f.pos++
				if g.typ[p]&mask == 0 {
					continue
				}
				w := g.to[p]
				if index[w] == unvisited {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					calls = append(calls, frame{w, g.off[w]})
					descended = true
					break
				}
				if onStack[w] && index[w] < low[v] {
					low[v] = index[w]
				}
			}
			if descended {
				continue
			}
			if low[v] == index[v] {
				start := len(stack) - 1
				for stack[start] != v {
					start--
				}
				members := stack[start:]
				for _, w := range members {
					onStack[w] = false
					comp[w] = nComp
				}
				if len(members) > 1 {
					comps = append(comps, slices.Clone(members))
				}
				stack = stack[:start]
				nComp++
			}
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				if u := calls[len(calls)-1].v; low[v] < low[u] {
					low[u] = low[v]
				}
			}
		}
	}
	return comp, comps
}

// searcher finds shortest paths inside one component (breadth first),
// reusing its arrays between searches.
type searcher struct {
	g      *graph
	seen   []int32 // generation a node was reached in
	parent []int32
	gen    int32
	queue  []int32
}

func newSearcher(g *graph) *searcher {
	return &searcher{g: g, seen: make([]int32, g.n()), parent: make([]int32, g.n())}
}

// path returns the nodes of a shortest path from -> ... -> to over edges
// with a type in mask whose nodes all lie in component c of comp, or nil.
func (s *searcher) path(from, to int32, mask uint8, comp []int32, c int32) []int32 {
	s.gen++
	s.queue = append(s.queue[:0], from)
	s.seen[from] = s.gen
	s.parent[from] = -1
	g := s.g
	for head := 0; head < len(s.queue); head++ {
		v := s.queue[head]
		if v == to {
			var p []int32
			for x := to; x != -1; x = s.parent[x] {
				p = append(p, x)
			}
			slices.Reverse(p)
			return p
		}
		for q := g.off[v]; q < g.off[v+1]; q++ {
			w := g.to[q]
			if g.typ[q]&mask == 0 || s.seen[w] == s.gen || comp[w] != c {
				continue
			}
			s.seen[w] = s.gen
			s.parent[w] = v
			s.queue = append(s.queue, w)
		}
	}
	return nil
}
