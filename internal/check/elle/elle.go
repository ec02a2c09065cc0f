// Package elle is the isolation checker: an Elle-style checker of
// transactional histories, after Kingsbury and Alvaro, "Elle: Inferring
// Isolation Anomalies from Experimental Observations", VLDB 2020
// (docs/papers.md), written here in Go.
//
// It reads a history of list-append transactions (appends of unique
// values to lists and reads of whole lists) or of rw-register
// transactions (writes of unique values and reads of registers), recovers
// each key's version order (list-append: from the longest read, of which
// every other read must be a prefix; rw-register: from the values each
// transaction read before writing), builds the dependency graph of the
// transactions (write-write, write-read and read-write edges; process and
// real-time order for strict serializability), finds its strongly
// connected components (Tarjan) and searches cycles inside them, and
// reports Adya's anomalies G0, G1a, G1b, G1c, G-single and G2-item, lost
// updates, internal inconsistencies, duplicated elements, garbage reads
// and incompatible orders — each explained in plain text — judged against
// a named consistency model (Models). docs/checks.md defines each.
package elle

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
)

// Name is the checker's name in scenarios and `faultbench check`.
const Name = "isolation"

// Options configure a check.
type Options struct {
	// Model is the consistency model to judge against (Models);
	// default serializable.
	Model string
	// Examples is how many anomalies of each name are explained (default
	// 5); all are counted.
	Examples int
	// Tries bounds, per strongly connected component, how many of its
	// read-write edges the G-single search tries (default 64): in a huge
	// component the search stops there and may report a G2-item cycle
	// where a G-single one also exists.
	Tries int
}

// Validate checks the options.
func (o Options) Validate() error {
	if o.Model != "" {
		if _, err := ModelNamed(o.Model); err != nil {
			return err
		}
	}
	if o.Examples < 0 || o.Tries < 0 {
		return fmt.Errorf("examples and tries must not be negative")
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.Model == "" {
		o.Model = "serializable"
	}
	if o.Examples == 0 {
		o.Examples = 5
	}
	if o.Tries == 0 {
		o.Tries = 64
	}
	return o
}

type analyzer struct {
	opts  Options
	model Model
	kind  string

	keyIDs    map[string]int32
	keys      []string
	txns      []txn
	mops      []cmop
	writers   map[kv]wrec
	longest   [][]int64
	longestBy []int32

	locals  []localKey
	dupSeen map[int64]struct{}

	v     *verdict.Verdict
	edges [][]edge // chunks of edgeChunk: no copy of all edges as they grow
	g     *graph
}

func newAnalyzer(opts Options) (*analyzer, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	m, err := ModelNamed(opts.Model)
	if err != nil {
		return nil, err
	}
	return &analyzer{opts: opts, model: m, keyIDs: map[string]int32{}, writers: map[kv]wrec{},
		dupSeen: map[int64]struct{}{},
		v:       &verdict.Verdict{Checker: Name, Model: m.Name, AnomalyCounts: map[string]int{}, Forbidden: m.Forbids}}, nil
}

// Check reads the history file at path (streaming) and judges it.
func Check(ctx context.Context, path string, opts Options) (verdict.Verdict, error) {
	start := time.Now()
	a, err := newAnalyzer(opts)
	if err != nil {
		return verdict.Verdict{}, err
	}
	torn, err := history.Each(ctx, path, a.add)
	if err != nil {
		return verdict.Verdict{}, fmt.Errorf("isolation check: %w", err)
	}
	if torn {
		a.v.Notes = append(a.v.Notes, "the history's torn last line was skipped")
	}
	if err := a.finish(ctx); err != nil {
		return verdict.Verdict{}, err
	}
	a.v.ElapsedMs = float64(time.Since(start).Microseconds()) / 1000
	return *a.v, nil
}

// CheckOps judges a history held in memory.
func CheckOps(ctx context.Context, ops []history.Op, opts Options) (verdict.Verdict, error) {
	start := time.Now()
	a, err := newAnalyzer(opts)
	if err != nil {
		return verdict.Verdict{}, err
	}
	for i := range ops {
		if err := ops[i].Validate(); err != nil {
			return verdict.Verdict{}, fmt.Errorf("operation %d: %w", i, err)
		}
		if err := a.add(&ops[i]); err != nil {
			return verdict.Verdict{}, err
		}
	}
	if err := a.finish(ctx); err != nil {
		return verdict.Verdict{}, err
	}
	a.v.ElapsedMs = float64(time.Since(start).Microseconds()) / 1000
	return *a.v, nil
}

// report counts an anomaly and keeps it, explained by text (called only
// then), among the examples.
func (a *analyzer) report(name string, txns []int32, text func() string) {
	if a.v.AnomalyCounts[name] >= a.opts.Examples {
		a.v.AnomalyCounts[name]++
		return
	}
	an := verdict.Anomaly{Name: name, Explanation: name + ": " + text()}
	for _, t := range txns {
		if t < 0 || int(t) >= len(a.txns) && int(t) != len(a.txns) {
			continue
		}
		an.Ops = append(an.Ops, int(t))
		if int(t) < len(a.txns) {
			an.TimeNs = max(an.TimeNs, a.txns[t].complete)
		}
	}
	a.v.Add(an, a.opts.Examples)
}

// tn names a transaction in explanations.
func (a *analyzer) tn(id int32) string { return fmt.Sprintf("T%d", id) }

// describe is a transaction in full: its position, process, times,
// outcome and micro-operations.
func (a *analyzer) describe(id int32) string {
	t := &a.txns[id]
	var b strings.Builder
	fmt.Fprintf(&b, "%s = operation %d of the history, process %d, %s, invoked %.6f s, completed %.6f s: ",
		a.tn(id), id, t.process, t.outcome, float64(t.invoke)/1e9, float64(t.complete)/1e9)
	for i := t.mopStart; i < t.mopEnd; i++ {
		if i > t.mopStart {
			b.WriteString("; ")
		}
		m := &a.mops[i]
		k := a.keys[m.key]
		switch m.f {
		case fAppend:
			fmt.Fprintf(&b, "append %s %d", k, m.v)
		case fWrite:
			fmt.Fprintf(&b, "w %s %d", k, m.v)
		case fRead:
			switch {
			case t.outcome != history.OK:
				fmt.Fprintf(&b, "r %s ?", k)
			case a.kind == ListAppend && !m.bad && int(m.n) <= len(a.longest[m.key]):
				fmt.Fprintf(&b, "r %s %s", k, fmtList(a.longest[m.key][:m.n]))
			case a.kind == ListAppend:
				fmt.Fprintf(&b, "r %s (%d elements ending in %d)", k, m.n, m.v)
			default:
				fmt.Fprintf(&b, "r %s %s", k, fmtReg(m))
			}
		default:
			fmt.Fprintf(&b, "(other on %s)", k)
		}
	}
	return b.String()
}

// finish checks what needs the whole history and searches the cycles.
func (a *analyzer) finish(ctx context.Context) error {
	a.v.Operations = len(a.txns)
	switch a.kind {
	case ListAppend:
		a.listEdges()
	case RWRegister:
		a.registerEdges()
	}
	if a.model.Realtime {
		a.orderEdges()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	a.g = newGraph(len(a.txns), a.edges)
	a.edges = nil
	if err := a.cycles(ctx); err != nil {
		return err
	}
	for _, n := range a.model.Forbids {
		if _, ok := a.v.AnomalyCounts[n]; !ok && !strings.HasSuffix(n, realtimeSuffix) && !strings.HasSuffix(n, processSuffix) {
			a.v.AnomalyCounts[n] = 0
		}
	}
	a.v.Judge()
	slices.SortStableFunc(a.v.Anomalies, func(x, y verdict.Anomaly) int { return strings.Compare(x.Name, y.Name) })
	return nil
}

const edgeChunk = 1 << 20

func (a *analyzer) addEdge(from, to int32, t uint8) {
	if from == to {
		return
	}
	if n := len(a.edges); n == 0 || len(a.edges[n-1]) == edgeChunk {
		a.edges = append(a.edges, make([]edge, 0, edgeChunk))
	}
	last := &a.edges[len(a.edges)-1]
	*last = append(*last, edge{from, to, t})
}

// live reports whether a transaction may have taken effect (ok or
// unknown): only those are nodes with edges.
func (a *analyzer) live(id int32) bool { return a.txns[id].outcome != history.Fail }

// listEdges checks each key's version order (the longest read) for values
// nobody or an aborted transaction appended, and adds the ww, wr and rw
// edges of list-append.
func (a *analyzer) listEdges() {
	for k, long := range a.longest {
		var prev int32 = -1
		for i, v := range long {
			w, ok := a.writers[kv{int32(k), v}]
			switch {
			case !ok:
				a.report(GarbageRead, []int32{a.longestBy[k]}, func() string {
					return fmt.Sprintf("%s read %s = %s, whose element %d (position %d) no transaction appended.",
						a.tn(a.longestBy[k]), a.keys[k], fmtList(long), v, i)
				})
				prev = -1
				continue
			case !a.live(w.txn):
				a.report(G1a, []int32{w.txn, a.longestBy[k]}, func() string {
					return fmt.Sprintf("%s read %s = %s, which holds %d, appended by %s, which failed (aborted read).\n  %s\n  %s",
						a.tn(a.longestBy[k]), a.keys[k], fmtList(long), v, a.tn(w.txn), a.describe(w.txn), a.describe(a.longestBy[k]))
				})
				prev = -1
				continue
			}
			if prev >= 0 {
				a.addEdge(prev, w.txn, eWW)
			}
			prev = w.txn
		}
	}
	lost := map[kv][]int32{}
	for id := range int32(len(a.txns)) {
		t := &a.txns[id]
		if t.outcome != history.OK {
			continue
		}
		for i := t.mopStart; i < t.mopEnd; i++ {
			m := &a.mops[i]
			if m.f != fRead || m.bad {
				continue
			}
			long := a.longest[m.key]
			if m.n > 0 {
				w, ok := a.writers[kv{m.key, m.v}]
				if ok && a.live(w.txn) && w.txn != id {
					if w.intermediate {
						a.report(G1b, []int32{w.txn, id}, func() string {
							return fmt.Sprintf("%s read %s = %s, ending in %d, which %s appended but then appended to %s again: it read an intermediate state of %s.\n  %s\n  %s",
								a.tn(id), a.keys[m.key], fmtList(long[:m.n]), m.v, a.tn(w.txn), a.keys[m.key], a.tn(w.txn), a.describe(w.txn), a.describe(id))
						})
					}
					a.addEdge(w.txn, id, eWR)
				}
			}
			if int(m.n) < len(long) {
				if w, ok := a.writers[kv{m.key, long[m.n]}]; ok && a.live(w.txn) {
					a.addEdge(id, w.txn, eRW)
				}
			}
			a.noteLostUpdate(lost, id, i, kv{m.key, int64(m.n)})
		}
	}
	a.reportLostUpdates(lost, func(key kv) string {
		return fmt.Sprintf("%s = %s", a.keys[key.k], fmtList(a.longest[key.k][:key.v]))
	})
}

// noteLostUpdate remembers that transaction id read version ver of a key
// at micro-operation i and then wrote the key (the read-modify-write a
// lost update is made of).
func (a *analyzer) noteLostUpdate(lost map[kv][]int32, id, i int32, ver kv) {
	t := &a.txns[id]
	for j := t.mopStart; j < i; j++ {
		if a.mops[j].key == ver.k {
			return // not its first access to the key
		}
	}
	for j := i + 1; j < t.mopEnd; j++ {
		if p := &a.mops[j]; p.key == ver.k && (p.f == fAppend || p.f == fWrite) {
			lost[ver] = append(lost[ver], id)
			return
		}
	}
}

func (a *analyzer) reportLostUpdates(lost map[kv][]int32, version func(kv) string) {
	keys := make([]kv, 0, len(lost))
	for key, ts := range lost {
		if len(ts) > 1 {
			keys = append(keys, key)
		}
	}
	slices.SortFunc(keys, func(x, y kv) int { return int(lost[x][0]) - int(lost[y][0]) })
	for _, key := range keys {
		ts := lost[key]
		a.report(LostUpdate, ts, func() string {
			var b strings.Builder
			fmt.Fprintf(&b, "%d committed transactions read the same version %s and each then wrote %s: all but one of their writes was made without seeing the others.", len(ts), version(key), a.keys[key.k])
			for _, t := range ts {
				fmt.Fprintf(&b, "\n  %s", a.describe(t))
			}
			return b.String()
		})
	}
}

// registerEdges checks rw-register reads and adds their ww, wr and rw
// edges: wr from the writer of the value read; ww from the writer of the
// value a transaction read to the transaction, when it then wrote the key;
// rw from a reader of a version to every transaction that read that version
// and then wrote the key (and, for a read of no value, to every writer that
// did not read the key first: every version follows the initial state).
func (a *analyzer) registerEdges() {
	type succ struct{ blind []int32 }
	after := map[kv][]int32{} // version -> writers that read it first
	initial := map[int32]*succ{}
	for key, w := range a.writers {
		if !a.live(w.txn) {
			continue
		}
		switch {
		case !w.hasPred || w.predNil:
			s := initial[key.k]
			if s == nil {
				s = &succ{}
				initial[key.k] = s
			}
			s.blind = append(s.blind, w.txn)
		default:
			after[kv{key.k, w.pred}] = append(after[kv{key.k, w.pred}], w.txn)
			if pw, ok := a.writers[kv{key.k, w.pred}]; ok && a.live(pw.txn) {
				a.addEdge(pw.txn, w.txn, eWW)
			}
		}
	}
	lost := map[kv][]int32{}
	nilVersion := map[kv]bool{}
	for id := range int32(len(a.txns)) {
		t := &a.txns[id]
		if t.outcome != history.OK {
			continue
		}
		for i := t.mopStart; i < t.mopEnd; i++ {
			m := &a.mops[i]
			if m.f != fRead {
				continue
			}
			own := false
			for j := t.mopStart; j < i; j++ {
				if p := &a.mops[j]; p.key == m.key && p.f == fWrite {
					own = true
				}
			}
			if m.n == 0 {
				if !own {
					if s := initial[m.key]; s != nil {
						for _, w := range s.blind {
							a.addEdge(id, w, eRW)
						}
					}
					// a version no write can have: the initial state
					ver := kv{m.key, -1 << 63}
					nilVersion[ver] = true
					a.noteLostUpdate(lost, id, i, ver)
				}
				continue
			}
			w, ok := a.writers[kv{m.key, m.v}]
			switch {
			case !ok:
				a.report(GarbageRead, []int32{id}, func() string {
					return fmt.Sprintf("%s read %s = %d, which no transaction wrote.", a.tn(id), a.keys[m.key], m.v)
				})
				continue
			case !a.live(w.txn):
				a.report(G1a, []int32{w.txn, id}, func() string {
					return fmt.Sprintf("%s read %s = %d, written by %s, which failed (aborted read).\n  %s\n  %s",
						a.tn(id), a.keys[m.key], m.v, a.tn(w.txn), a.describe(w.txn), a.describe(id))
				})
				continue
			case w.txn == id:
				continue
			case w.intermediate:
				a.report(G1b, []int32{w.txn, id}, func() string {
					return fmt.Sprintf("%s read %s = %d, which %s wrote but then overwrote in the same transaction: it read an intermediate state.\n  %s\n  %s",
						a.tn(id), a.keys[m.key], m.v, a.tn(w.txn), a.describe(w.txn), a.describe(id))
				})
			}
			a.addEdge(w.txn, id, eWR)
			for _, next := range after[kv{m.key, m.v}] {
				a.addEdge(id, next, eRW)
			}
			a.noteLostUpdate(lost, id, i, kv{m.key, m.v})
		}
	}
	a.reportLostUpdates(lost, func(key kv) string {
		if nilVersion[key] {
			return a.keys[key.k] + " = nil"
		}
		return fmt.Sprintf("%s = %d", a.keys[key.k], key.v)
	})
}

// orderEdges adds process order (each ok operation to the next one of its
// process) and real-time order (a before b when a completed before b was
// invoked) as a sparse graph with the same transitive closure: b gets an
// edge from each operation completed before its invoke that no other such
// operation already follows.
func (a *analyzer) orderEdges() {
	last := map[int32]int32{}
	byInvoke := make([]int32, 0, len(a.txns))
	for id := range int32(len(a.txns)) {
		if a.live(id) {
			byInvoke = append(byInvoke, id)
		}
	}
	slices.SortStableFunc(byInvoke, func(x, y int32) int {
		return cmpInt64(a.txns[x].invoke, a.txns[y].invoke)
	})
	for _, id := range byInvoke {
		p := a.txns[id].process
		if prev, ok := last[p]; ok && a.txns[prev].outcome == history.OK {
			a.addEdge(prev, id, eProc)
		}
		last[p] = id
	}
	byComplete := make([]int32, 0, len(byInvoke))
	for _, id := range byInvoke {
		if a.txns[id].outcome == history.OK {
			byComplete = append(byComplete, id)
		}
	}
	slices.SortStableFunc(byComplete, func(x, y int32) int {
		return cmpInt64(a.txns[x].complete, a.txns[y].complete)
	})
	// Sweep in time order; at equal times invokes come first (real-time
	// order needs complete < invoke strictly). frontier holds completed
	// operations not yet followed by a completed successor, each with the
	// sequence number it was added with; an operation b is linked from the
	// whole frontier at its invoke (seenSeq[b]: the frontier's sequence
	// then), and when b completes every member added before that is
	// followed by b, so it leaves the frontier.
	type member struct {
		id  int32
		seq int64
	}
	var frontier []member
	seq := int64(0)
	seenSeq := make([]int64, len(a.txns))
	ci := 0
	for _, b := range byInvoke {
		inv := a.txns[b].invoke
		for ci < len(byComplete) && a.txns[byComplete[ci]].complete < inv {
			c := byComplete[ci]
			ci++
			frontier = slices.DeleteFunc(frontier, func(m member) bool { return m.seq < seenSeq[c] })
			frontier = append(frontier, member{c, seq})
			seq++
		}
		seenSeq[b] = seq
		for _, p := range frontier {
			a.addEdge(p.id, b, eRT)
		}
	}
}

func cmpInt64(x, y int64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}
