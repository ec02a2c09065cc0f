package elle

import (
	"context"
	"fmt"
	"strings"
)

// cycles searches the dependency graph for cycles, one search per kind of
// anomaly, each over the strongly connected components of the subgraph the
// anomaly may use:
//
//   - G0: components of the ww edges; any cycle there is made of writes
//     only.
//   - G1c: components of the ww and wr edges; a cycle through a wr edge
//     inside one.
//   - G-single: components of all data edges; a cycle of one rw edge u->v
//     and a path v->u of ww and wr edges (up to Tries rw edges per
//     component are tried).
//   - G2-item: in the same components, a cycle through an rw edge over any
//     data edges that has two or more rw edges.
//   - for a model with real-time order, components of all edges; a cycle
//     through a process or real-time edge that joins two different data
//     components, named after its data edges with -process or -realtime.
//
// Each component yields at most one cycle of each kind: the counts are of
// components showing the anomaly, each with an example cycle.
func (a *analyzer) cycles(ctx context.Context) error {
	g := a.g
	s := newSearcher(g)

	comp, comps := g.scc(eWW)
	for _, members := range comps {
		if u, v, ok := a.edgeIn(members, comp, eWW, 0); ok {
			a.cycle(s, u, v, eWW, eWW, comp)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	comp, comps = g.scc(eWW | eWR)
	for _, members := range comps {
		// a wr edge that is not also a ww edge: through one that is, the
		// cycle is a G0 one, reported above
		if u, v, ok := a.edgeIn(members, comp, eWR, eWW); ok {
			a.cycle(s, u, v, eWR, eWW|eWR, comp)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	dataComp, comps := g.scc(eData)
	for _, members := range comps {
		c := dataComp[members[0]]
		single, g2 := false, false
		tries := 0
		for _, u := range members {
			if single && g2 || tries >= a.opts.Tries {
				break
			}
			for q := g.off[u]; q < g.off[u+1] && tries < a.opts.Tries; q++ {
				v := g.to[q]
				if g.typ[q]&eRW == 0 || g.typ[q]&(eWW|eWR) != 0 || dataComp[v] != c {
					continue
				}
				tries++
				if !single {
					if p := s.path(v, u, eWW|eWR, dataComp, c); p != nil {
						a.reportCycle(closeCycle(u, p), eRW, eWW|eWR)
						single = true
						continue
					}
				}
				if !g2 {
					p := s.path(v, u, eData, dataComp, c)
					if p == nil {
						continue
					}
					cyc := closeCycle(u, p)
					if name, _ := a.classify(cyc, eRW, eData); name == G2Item {
						a.reportCycle(cyc, eRW, eData)
						g2 = true
					} else if !single {
						a.reportCycle(cyc, eRW, eData)
						single = true
					}
				}
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if !a.model.Realtime {
		return nil
	}
	comp, comps = g.scc(eAll)
	for _, members := range comps {
		c := comp[members[0]]
	search:
		for _, u := range members {
			for q := g.off[u]; q < g.off[u+1]; q++ {
				v := g.to[q]
				if g.typ[q]&(eProc|eRT) == 0 || comp[v] != c || dataComp[u] == dataComp[v] {
					continue
				}
				if p := s.path(v, u, eAll, comp, c); p != nil {
					a.reportCycle(closeCycle(u, p), g.typ[q]&(eProc|eRT|eData), eAll)
					break search
				}
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// edgeIn finds an edge with a type in t and none in not between two
// members of one component.
func (a *analyzer) edgeIn(members []int32, comp []int32, t, not uint8) (u, v int32, ok bool) {
	g := a.g
	c := comp[members[0]]
	for _, u := range members {
		for q := g.off[u]; q < g.off[u+1]; q++ {
			if g.typ[q]&t != 0 && g.typ[q]&not == 0 && comp[g.to[q]] == c {
				return u, g.to[q], true
			}
		}
	}
	return 0, 0, false
}

// cycle reports the cycle made of the edge u->v (of a type in first) and a
// shortest path v->u over edges of a type in rest.
func (a *analyzer) cycle(s *searcher, u, v int32, first, rest uint8, comp []int32) {
	if p := s.path(v, u, rest, comp, comp[u]); p != nil {
		a.reportCycle(closeCycle(u, p), first, rest)
	}
}

// steps names the type of each edge of cyc (cyc[0] -> cyc[1] -> ... ->
// cyc[0], the closing edge given by the last element being cyc[0]): the
// first of a type in first, the others in rest, each by preference.
func (a *analyzer) steps(cyc []int32, first, rest uint8) []uint8 {
	ts := make([]uint8, len(cyc)-1)
	for i := range ts {
		avail := a.g.types(cyc[i], cyc[i+1])
		if i == 0 {
			avail &= first
		} else {
			avail &= rest
		}
		for _, p := range preference {
			if avail&p != 0 {
				ts[i] = p
				break
			}
		}
	}
	return ts
}

// classify names a cycle: by its rw edges (none: G0 without wr edges, G1c
// with; one: G-single; more: G2-item), with -realtime or -process when it
// needs such an edge.
func (a *analyzer) classify(cyc []int32, first, rest uint8) (string, []uint8) {
	ts := a.steps(cyc, first, rest)
	rw, wr, rt, proc := 0, 0, 0, 0
	for _, t := range ts {
		switch t {
		case eRW:
			rw++
		case eWR:
			wr++
		case eRT:
			rt++
		case eProc:
			proc++
		}
	}
	name := G2Item
	switch {
	case rw == 0 && wr == 0:
		name = G0
	case rw == 0:
		name = G1c
	case rw == 1:
		name = GSingle
	}
	switch {
	case rt > 0:
		name += realtimeSuffix
	case proc > 0:
		name += processSuffix
	}
	return name, ts
}

// reportCycle explains and reports the cycle cyc[0] -> ... -> cyc[last]
// -> cyc[0].
func (a *analyzer) reportCycle(cyc []int32, first, rest uint8) {
	closed := append(cyc[:len(cyc):len(cyc)], cyc[0])
	name, ts := a.classify(closed, first, rest)
	a.report(name, cyc, func() string { return a.explainCycle(cyc, closed, ts) })
}

// explainCycle lists a cycle's transactions and says why each edge exists.
func (a *analyzer) explainCycle(cyc, closed []int32, ts []uint8) string {
	var b strings.Builder
	names := make([]string, len(cyc))
	for i, t := range cyc {
		names[i] = a.tn(t)
	}
	fmt.Fprintf(&b, "a cycle of %d transactions, %s -> %s.", len(cyc), strings.Join(names, " -> "), names[0])
	for _, t := range cyc {
		fmt.Fprintf(&b, "\n  %s", a.describe(t))
	}
	for i, t := range ts {
		fmt.Fprintf(&b, "\n  %s -%s-> %s: %s", a.tn(closed[i]), typeName(t), a.tn(closed[i+1]), a.why(closed[i], closed[i+1], t))
	}
	return b.String()
}

// why explains the edge x -> y of type t.
func (a *analyzer) why(x, y int32, t uint8) string {
	tx, ty := &a.txns[x], &a.txns[y]
	switch t {
	case eRT:
		return fmt.Sprintf("%s completed at %.6f s, before %s was invoked at %.6f s", a.tn(x), float64(tx.complete)/1e9, a.tn(y), float64(ty.invoke)/1e9)
	case eProc:
		return fmt.Sprintf("both ran on process %d, %s first", tx.process, a.tn(x))
	}
	if a.kind == ListAppend {
		return a.whyList(x, y, t)
	}
	return a.whyRegister(x, y, t)
}

func (a *analyzer) writerOf(k int32, v int64) int32 {
	if w, ok := a.writers[kv{k, v}]; ok {
		return w.txn
	}
	return -1
}

func (a *analyzer) whyList(x, y int32, t uint8) string {
	tx, ty := &a.txns[x], &a.txns[y]
	switch t {
	case eWW:
		for i := tx.mopStart; i < tx.mopEnd; i++ {
			m := &a.mops[i]
			if m.f != fAppend {
				continue
			}
			long := a.longest[m.key]
			for p := 0; p+1 < len(long); p++ {
				if long[p] == m.v && a.writerOf(m.key, long[p+1]) == y {
					return fmt.Sprintf("%s appended %d to %s and %s appended %d right after it: %s's version order, from the longest read (%s's), is %s",
						a.tn(x), m.v, a.keys[m.key], a.tn(y), long[p+1], a.keys[m.key], a.tn(a.longestBy[m.key]), fmtList(long))
				}
			}
		}
	case eWR:
		for i := ty.mopStart; i < ty.mopEnd; i++ {
			m := &a.mops[i]
			if m.f == fRead && !m.bad && m.n > 0 && a.writerOf(m.key, m.v) == x {
				return fmt.Sprintf("%s read %s = %s, whose last element %d %s appended", a.tn(y), a.keys[m.key], fmtList(a.longest[m.key][:m.n]), m.v, a.tn(x))
			}
		}
	case eRW:
		for i := tx.mopStart; i < tx.mopEnd; i++ {
			m := &a.mops[i]
			long := a.longest[m.key]
			if m.f == fRead && !m.bad && int(m.n) < len(long) && a.writerOf(m.key, long[m.n]) == y {
				return fmt.Sprintf("%s read %s = %s and %s appended %d, the next element of %s after that: %s did not see %s's append",
					a.tn(x), a.keys[m.key], fmtList(long[:m.n]), a.tn(y), long[m.n], a.keys[m.key], a.tn(x), a.tn(y))
			}
		}
	}
	return "(no reason found)"
}

func (a *analyzer) whyRegister(x, y int32, t uint8) string {
	tx, ty := &a.txns[x], &a.txns[y]
	switch t {
	case eWW:
		for i := ty.mopStart; i < ty.mopEnd; i++ {
			m := &a.mops[i]
			if m.f != fWrite {
				continue
			}
			if w := a.writers[kv{m.key, m.v}]; w.hasPred && !w.predNil && a.writerOf(m.key, w.pred) == x {
				return fmt.Sprintf("%s read %s = %d, which %s wrote, then wrote %d: its version follows %s's", a.tn(y), a.keys[m.key], w.pred, a.tn(x), m.v, a.tn(x))
			}
		}
	case eWR:
		for i := ty.mopStart; i < ty.mopEnd; i++ {
			m := &a.mops[i]
			if m.f == fRead && m.n > 0 && a.writerOf(m.key, m.v) == x {
				return fmt.Sprintf("%s read %s = %d, which %s wrote", a.tn(y), a.keys[m.key], m.v, a.tn(x))
			}
		}
	case eRW:
		for i := tx.mopStart; i < tx.mopEnd; i++ {
			m := &a.mops[i]
			if m.f != fRead {
				continue
			}
			for j := ty.mopStart; j < ty.mopEnd; j++ {
				n := &a.mops[j]
				if n.f != fWrite || n.key != m.key {
					continue
				}
				w := a.writers[kv{n.key, n.v}]
				switch {
				case m.n == 0 && (!w.hasPred || w.predNil):
					return fmt.Sprintf("%s read %s = nil (the initial state) and %s wrote %d, a later version: %s did not see it", a.tn(x), a.keys[m.key], a.tn(y), n.v, a.tn(x))
				case m.n > 0 && w.hasPred && !w.predNil && w.pred == m.v:
					return fmt.Sprintf("%s read %s = %d and %s, which read %d too, wrote %d after it: %s did not see %s's write", a.tn(x), a.keys[m.key], m.v, a.tn(y), m.v, n.v, a.tn(x), a.tn(y))
				}
			}
		}
	}
	return "(no reason found)"
}

// closeCycle is the cycle u -> p[0] -> ... -> p[last] = u, as its nodes
// u, p[0], ..., p[last-1].
func closeCycle(u int32, p []int32) []int32 {
	return append([]int32{u}, p[:len(p)-1]...)
}
