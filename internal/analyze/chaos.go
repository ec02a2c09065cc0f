package analyze

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	fbstats "github.com/faultbench/faultbench/internal/stats"
)

// ChaosReport is the analysis of a chaos run (Params.Chaos; docs/metrics.md,
// "Chaos"): its faults grouped into cycles, each cycle's figures, and per
// fault kind the distribution of each figure over the cycles it was in.
type ChaosReport struct {
	// Spec is the chaos section the run drew its faults from, in one
	// line (set by the caller; "" when unknown).
	Spec string `json:"spec,omitempty"`
	// LatencyFactor is the latency target's factor: a cycle is back under
	// the target from the first window from which its p99 stays under
	// LatencyFactor times the p99 before the cycle for Hold.
	LatencyFactor float64      `json:"latency_factor"`
	Cycles        []ChaosCycle `json:"cycles"`
	// ByKind has, per fault kind, the figures of every cycle that kind was
	// in (a cycle of a kill and a pause counts for both).
	ByKind map[string]ChaosKind `json:"by_kind"`
	Notes  []string             `json:"notes,omitempty"`
}

// ChaosCycle is one cycle: faults that held together, from the first
// injection until all were healed. Its span runs from its first injection
// to the next cycle's (or the end of the run); the figures are over that
// span, times from its first injection, -1 for never within the span.
type ChaosCycle struct {
	AtMs       float64  `json:"at_ms"`
	HealedAtMs float64  `json:"healed_at_ms"` // the last heal; -1: not healed within the run
	SpanToMs   float64  `json:"span_to_ms"`
	Kinds      []string `json:"kinds"` // one per fault, in injection order
	Nodes      []string `json:"nodes"` // the nodes each fault acted on
	// DowntimeMs, LongestGapMs: as a fault's (FaultMetrics), over the
	// cycle's span.
	DowntimeMs   float64 `json:"downtime_ms"`
	LongestGapMs float64 `json:"longest_gap_ms"`
	// FirstSuccessMs is the time from the first injection to the first
	// successful operation after the span's first window without any; 0
	// when every window of the span had a success.
	FirstSuccessMs float64 `json:"first_success_ms"`
	// LatencyBackMs is the time from the first injection to the start of
	// the first window from which the latency op's p99 stays under
	// LatencyFactor times the p99 of the windows since the previous
	// cycle's heal for Hold: back under the latency target.
	LatencyBackMs float64 `json:"latency_back_ms"`
}

// ChaosKind is one fault kind's distributions over its cycles.
type ChaosKind struct {
	Cycles         int       `json:"cycles"`
	DowntimeMs     ChaosDist `json:"downtime_ms"`
	LongestGapMs   ChaosDist `json:"longest_gap_ms"`
	FirstSuccessMs ChaosDist `json:"first_success_ms"`
	LatencyBackMs  ChaosDist `json:"latency_back_ms"`
}

// ChaosDist is a figure's distribution over cycles: n, mean, p50, p90,
// max (and the bootstrap 95 % interval of the mean from 3 cycles) of the
// cycles where it was reached; Never counts those where it was not (-1).
type ChaosDist struct {
	fbstats.Summary
	Never int `json:"never_count"`
}

// chaosSeed seeds the bootstrap intervals of the chaos distributions, so
// the same run gives the same figures.
const chaosSeed = 0xc4a05

// chaos groups faults into cycles and computes the ChaosReport.
func (a *analyzer) chaos(faults []Fault) *ChaosReport {
	rep := &ChaosReport{LatencyFactor: a.p.LatencyFactor, Cycles: []ChaosCycle{}, ByKind: map[string]ChaosKind{}}
	type cyc struct {
		at, healed time.Duration
		open       bool // some fault not healed within the run
		kinds      []string
		nodes      []string
	}
	var cs []cyc
	for _, f := range faults {
		if f.RestoreOnly() {
			continue
		}
		heal, open := f.RestoreAt, !f.Restored() || f.RestoreAt >= a.runEnd
		if open {
			heal = a.runEnd
		}
		if n := len(cs); n > 0 && (cs[n-1].open || f.At < cs[n-1].healed) {
			c := &cs[n-1]
			c.healed, c.open = max(c.healed, heal), c.open || open
			c.kinds, c.nodes = append(c.kinds, f.Action), append(c.nodes, f.Node)
			continue
		}
		cs = append(cs, cyc{at: f.At, healed: heal, open: open, kinds: []string{f.Action}, nodes: []string{f.Node}})
	}
	prevHeal := a.runStart
	op := a.p.LatencyOp
	values := map[string]*[4][]float64{}
	nevers := map[string]*[4]int{}
	cycles := map[string]int{}
	for k, c := range cs {
		end := a.runEnd + 1
		if k+1 < len(cs) {
			end = cs[k+1].at
		}
		idx := a.span(c.at, end, false)
		out := ChaosCycle{AtMs: ms(c.at), HealedAtMs: ms(c.healed), SpanToMs: ms(min(end, a.runEnd)), Kinds: c.kinds, Nodes: c.nodes,
			DowntimeMs: -1, LongestGapMs: -1, FirstSuccessMs: -1, LatencyBackMs: -1}
		if c.open {
			out.HealedAtMs = -1
		}
		if len(idx) == 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("cycle at %v: no window in its span", c.at))
		} else {
			out.DowntimeMs, out.LongestGapMs, _, _, _, _ = a.availability(idx, c.at)
			out.FirstSuccessMs = a.firstSuccess(idx, c.at)
			before := a.span(prevHeal, c.at, true)
			if ref := a.stats(before, op); ref.OKCount > 0 && ref.P99Us > 0 {
				limit := a.p.LatencyFactor * ref.P99Us
				if j, found := a.holdFrom(idx, func(i int) bool {
					r, ok := a.s[i].row(op)
					return ok && r.OK > 0 && r.P99Us < limit
				}, a.p.Hold); found {
					out.LatencyBackMs = ms(max(0, a.s[idx[j]].start-c.at))
				}
			} else {
				rep.Notes = append(rep.Notes, fmt.Sprintf("cycle at %v: no latency before it to set the target by", c.at))
			}
		}
		rep.Cycles = append(rep.Cycles, out)
		prevHeal = c.healed
		seen := map[string]bool{}
		for _, kd := range c.kinds {
			if seen[kd] {
				continue
			}
			seen[kd] = true
			cycles[kd]++
			if values[kd] == nil {
				values[kd], nevers[kd] = &[4][]float64{}, &[4]int{}
			}
			for m, v := range []float64{out.DowntimeMs, out.LongestGapMs, out.FirstSuccessMs, out.LatencyBackMs} {
				if v < 0 {
					nevers[kd][m]++
				} else {
					values[kd][m] = append(values[kd][m], v)
				}
			}
		}
	}
	for kd, vs := range values {
		var d [4]ChaosDist
		for m := range d {
			d[m].Never = nevers[kd][m]
			if s, err := fbstats.Describe(vs[m], chaosSeed); err == nil {
				d[m].Summary = s
			}
		}
		rep.ByKind[kd] = ChaosKind{Cycles: cycles[kd], DowntimeMs: d[0], LongestGapMs: d[1], FirstSuccessMs: d[2], LatencyBackMs: d[3]}
	}
	return rep
}

// firstSuccess is the time from at to the first successful operation
// after the first window of idx without one (its first success time when
// the windows record it, else its start); 0 when every window had a
// success, -1 when none followed.
func (a *analyzer) firstSuccess(idx []int, at time.Duration) float64 {
	k := -1
	for j, i := range idx {
		if a.s[i].all.OK == 0 {
			k = j
			break
		}
	}
	if k < 0 {
		return 0
	}
	for _, i := range idx[k+1:] {
		r := a.s[i].all
		if r.OK == 0 {
			continue
		}
		t := a.s[i].start
		if r.OKTimes {
			t = r.FirstOK
		}
		return ms(max(0, t-at))
	}
	return -1
}

// ChaosKinds returns the kinds of r.ByKind, sorted.
func (r *ChaosReport) ChaosKinds() []string {
	out := make([]string, 0, len(r.ByKind))
	for k := range r.ByKind {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// String renders a distribution for a terminal: "mean 1234 p50 1100 p90
// 2000 max 2500 ms (n=5, 1 never)".
func (d ChaosDist) String() string {
	var b strings.Builder
	if d.N == 0 {
		b.WriteString("-")
	} else {
		fmt.Fprintf(&b, "mean %s p50 %s p90 %s max %s ms (n=%d", msText(d.Mean), msText(d.P50), msText(d.P90), msText(d.Max), d.N)
	}
	if d.Never > 0 {
		if d.N == 0 {
			fmt.Fprintf(&b, " (")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d never", d.Never)
	}
	if d.N > 0 || d.Never > 0 {
		b.WriteString(")")
	}
	return b.String()
}

// msText writes milliseconds without a fraction.
func msText(v float64) string { return fmt.Sprintf("%.0f", math.Round(v)) }
