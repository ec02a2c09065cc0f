// Package setvis is the set checker: for every acknowledged insert into a
// set, whether it stayed visible and how long it took until every later
// read saw it (Jepsen's set-full "stable latency"). The history's inserts
// are append micro-operations (append k v: add v to the set k) and its
// reads list reads (r k [elements], order ignored).
package setvis

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
)

// Name is the checker's name in scenarios and `faultbench check`.
const Name = "set"

// The anomaly names.
const (
	// Lost: an acknowledged insert that a read invoked after it completed
	// missed, and no later read saw again.
	Lost = "lost"
	// Stale: reads invoked after an acknowledged insert completed missed
	// it, although a later read saw it (allowed: counted once per insert,
	// not forbidden).
	Stale = "stale-read"
	// Unexpected: a read returned an element nobody inserted.
	Unexpected = "unexpected"
)

// Options configure a check.
type Options struct {
	// Examples is how many anomalies of each name are explained (default 5).
	Examples int
}

type insert struct {
	pos              int
	invoke, complete int64
	outcome          history.Outcome
	// stable: the invoke of the first read after which every read saw it
	// (-1: none yet); lastMiss: the latest invoke of a read (invoked after
	// the insert completed) that missed it (-1: none).
	stable, lastMiss int64
	missPos          int
	// pending: misses since it was last seen; stale: misses followed by a
	// read that saw it.
	pending, stale int
}

type read struct {
	pos              int
	invoke, complete int64
	elems            []int64
}

type set struct {
	inserts map[int64]*insert
	reads   []read
}

type checker struct {
	n    int
	sets map[string]*set
}

func (c *checker) get(k string) *set {
	s := c.sets[k]
	if s == nil {
		s = &set{inserts: map[int64]*insert{}}
		c.sets[k] = s
	}
	return s
}

func (c *checker) add(op *history.Op) error {
	pos := c.n
	c.n++
	for _, m := range op.Mops {
		switch {
		case m.F == history.Append:
			if op.Outcome == history.Fail {
				continue
			}
			s := c.get(m.Key)
			if _, dup := s.inserts[m.Value]; dup {
				return fmt.Errorf("operation %d inserts %d into %q again: the set checker needs unique elements", pos, m.Value, m.Key)
			}
			s.inserts[m.Value] = &insert{pos: pos, invoke: op.Invoke, complete: op.Complete, outcome: op.Outcome, stable: -1, lastMiss: -1}
		case m.F == history.Read && m.IsList:
			if op.Outcome == history.OK {
				s := c.get(m.Key)
				s.reads = append(s.reads, read{pos: pos, invoke: op.Invoke, complete: op.Complete, elems: slices.Clone(m.List)})
			}
		default:
			return fmt.Errorf("operation %d does %q on %q: the set checker takes inserts (append) and list reads", pos, m.F, m.Key)
		}
	}
	return nil
}

// Check reads the history file at path and checks it.
func Check(ctx context.Context, path string, opts Options) (verdict.Verdict, error) {
	start := time.Now()
	c := &checker{sets: map[string]*set{}}
	torn, err := history.Each(ctx, path, c.add)
	if err != nil {
		return verdict.Verdict{}, fmt.Errorf("set check: %w", err)
	}
	v := c.judge(opts)
	if torn {
		v.Notes = append(v.Notes, "the history's torn last line was skipped")
	}
	v.ElapsedMs = float64(time.Since(start).Microseconds()) / 1000
	return v, nil
}

// CheckOps checks a history held in memory.
func CheckOps(_ context.Context, ops []history.Op, opts Options) (verdict.Verdict, error) {
	c := &checker{sets: map[string]*set{}}
	for i := range ops {
		if err := ops[i].Validate(); err != nil {
			return verdict.Verdict{}, fmt.Errorf("operation %d: %w", i, err)
		}
		if err := c.add(&ops[i]); err != nil {
			return verdict.Verdict{}, err
		}
	}
	return c.judge(opts), nil
}

func (c *checker) judge(opts Options) verdict.Verdict {
	keep := opts.Examples
	if keep <= 0 {
		keep = 5
	}
	v := verdict.Verdict{Checker: Name, Operations: c.n, AnomalyCounts: map[string]int{Lost: 0, Unexpected: 0, Stale: 0},
		Forbidden: []string{Lost, Unexpected}}
	var latencies []float64
	acked, neverRead := 0, 0
	keys := make([]string, 0, len(c.sets))
	for k := range c.sets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := c.sets[k]
		slices.SortStableFunc(s.reads, func(a, b read) int { return cmpInt64(a.invoke, b.invoke) })
		present := map[int64]bool{}
		for _, r := range s.reads {
			clear(present)
			for _, e := range r.elems {
				present[e] = true
				if _, ok := s.inserts[e]; !ok {
					v.Add(verdict.Anomaly{Name: Unexpected, Ops: []int{r.pos}, TimeNs: r.complete,
						Explanation: fmt.Sprintf("%s: operation %d read %s and saw %d, which no operation inserted.", Unexpected, r.pos, k, e)}, keep)
				}
			}
			for e, in := range s.inserts {
				if present[e] {
					if in.stable < 0 {
						in.stable = r.invoke
					}
					in.stale += in.pending
					in.pending = 0
					continue
				}
				if r.invoke > in.complete { // a read that began after the insert ended missed it
					in.lastMiss, in.missPos = r.invoke, r.pos
					in.pending++
					in.stable = -1
				}
			}
		}
		elems := make([]int64, 0, len(s.inserts))
		for e := range s.inserts {
			elems = append(elems, e)
		}
		slices.Sort(elems)
		for _, e := range elems {
			in := s.inserts[e]
			if in.outcome != history.OK {
				continue
			}
			acked++
			if in.stale > 0 {
				v.Add(verdict.Anomaly{Name: Stale, Ops: []int{in.pos}, TimeNs: in.complete,
					Explanation: fmt.Sprintf("%s: %s's element %d, inserted by operation %d (acknowledged at %.6f s), was missed by %d reads that began after that, and seen by a later one.",
						Stale, k, e, in.pos, float64(in.complete)/1e9, in.stale)}, keep)
			}
			switch {
			case in.stable >= 0:
				latencies = append(latencies, float64(max(in.stable-in.invoke, 0))/1e6)
			case in.lastMiss >= 0:
				v.Add(verdict.Anomaly{Name: Lost, Ops: []int{in.pos, in.missPos}, TimeNs: in.lastMiss,
					Explanation: fmt.Sprintf("%s: %s's element %d, inserted by operation %d (invoked %.6f s, acknowledged %.6f s), is missing from operation %d's read (invoked %.6f s) and from every read after it.",
						Lost, k, e, in.pos, float64(in.invoke)/1e9, float64(in.complete)/1e9, in.missPos, float64(in.lastMiss)/1e9)}, keep)
			default:
				neverRead++
			}
		}
	}
	v.Measures = map[string]float64{"acknowledged_inserts_count": float64(acked), "never_read_count": float64(neverRead)}
	if len(latencies) > 0 {
		slices.Sort(latencies)
		q := func(p float64) float64 { return latencies[min(len(latencies)-1, int(p*float64(len(latencies))))] }
		v.Measures["stable_latency_p50_ms"] = q(0.5)
		v.Measures["stable_latency_p99_ms"] = q(0.99)
		v.Measures["stable_latency_max_ms"] = latencies[len(latencies)-1]
	}
	v.Judge()
	return v
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
