package analyze

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/measure"
)

// Scaling is one scaling action of a run (add-node, remove-node) as read
// from its events: the scale-start event and the milestones the database
// reported under the same label (docs/metrics.md, "Elasticity").
type Scaling struct {
	Label  string        // the step's label
	Action string        // add-node or remove-node
	Detail string        // the action with its options, e.g. "add-node 1 (streaming 5mbit)"
	Nodes  string        // nodes added or removed, comma separated
	At     time.Duration // scale-start
	// JoinedAt is the last node-joined, StreamStartAt the first
	// streaming-start, StreamedAt the last streaming-done and EndAt the
	// scale-end of the action; -1 when the run has none.
	JoinedAt, StreamStartAt, StreamedAt, EndAt time.Duration
	Failed                                     bool // the action ended in an error
}

// ScalingsFromEvents extracts the scaling actions of a run, in time order:
// every scale-start opens one; node-joined, streaming-done and scale-end
// events with the same label (the fault label of the step) fill it in.
func ScalingsFromEvents(evs []event.Event) []Scaling {
	sorted := append([]event.Event(nil), evs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].T < sorted[j].T })
	var out []Scaling
	find := func(label string) *Scaling {
		for i := len(out) - 1; i >= 0; i-- {
			if out[i].Label == label {
				return &out[i]
			}
		}
		return nil
	}
	for _, e := range sorted {
		t := e.Since()
		switch e.Kind {
		case event.ScaleStart:
			out = append(out, Scaling{Label: e.Fault, Action: actionOf(e.Detail), Detail: e.Detail, Nodes: e.Node,
				At: t, JoinedAt: -1, StreamStartAt: -1, StreamedAt: -1, EndAt: -1})
		case event.NodeJoined, event.StreamingStart, event.StreamingDone, event.ScaleEnd:
			s := find(e.Fault)
			if s == nil || t < s.At {
				continue
			}
			switch e.Kind {
			case event.NodeJoined:
				s.JoinedAt = t
				if !strings.Contains(","+s.Nodes+",", ","+e.Node+",") {
					s.Nodes = strings.TrimPrefix(s.Nodes+","+e.Node, ",")
				}
			case event.StreamingStart:
				if s.StreamStartAt < 0 {
					s.StreamStartAt = t
				}
			case event.StreamingDone:
				s.StreamedAt = t
			case event.ScaleEnd:
				if s.EndAt < 0 {
					s.EndAt = t
					s.Failed = strings.Contains(e.Detail, " failed: ")
				}
			}
		}
	}
	return out
}

// ScalingMetrics are the elasticity metrics of one scaling action (the
// elasticity study's Table 5 and its latency before, during and after
// scaling). Times are in ms from the action's start; -1 means not reached
// or not computable (the reason in Notes).
type ScalingMetrics struct {
	Label  string  `json:"label,omitempty"`
	Action string  `json:"action"`
	Detail string  `json:"detail"`
	Nodes  string  `json:"nodes,omitempty"`
	AtMs   float64 `json:"at_ms"`
	// StreamingMs is the streaming time: from the action's start to the
	// end of its data movement as the database reported it (the last
	// streaming-done); -1 when nothing was streamed (Cassandra with
	// auto_bootstrap false: the study's "N/A").
	StreamingMs float64 `json:"streaming_ms"`
	// TransferMs is the data transfer alone: from the first
	// streaming-start to the last streaming-done (-1 when the database
	// reports no start); StreamingMs minus it is starting and joining.
	TransferMs float64 `json:"transfer_ms"`
	// JoinedMs is from the start to the last node-joined (-1: none).
	JoinedMs float64 `json:"joined_ms"`
	// ActionMs is from the start to the launcher's scale-end (-1: none).
	ActionMs float64 `json:"action_ms"`
	// SettledFromMs is where stabilisation is measured from: the end of
	// streaming, else the last join, else the action's end.
	SettledFromMs float64 `json:"settled_from_ms"`
	// StabiliseMs is the stabilisation time: from SettledFromMs until the
	// windowed p99 of the latency operation is back within the band of
	// the before level (at most BandUs) and stays there for Hold.
	StabiliseMs float64 `json:"stabilise_ms"`
	// ScalingMs is the scaling time: SettledFromMs + StabiliseMs (-1 when
	// latency never stabilised).
	ScalingMs float64 `json:"scaling_ms"`
	// BandUs is the upper edge of the before band: the 90th percentile of
	// the before span's window p99s, plus RecoverTol of it.
	BandUs float64 `json:"band_us"`
	// ThroughputDuringOps is the mean throughput while scaling (the during
	// span: from the start to the end of stabilisation, or to the next
	// action or the run's end when latency never stabilised).
	ThroughputDuringOps float64 `json:"throughput_during_ops"`
	// Before, During, After are the latency operation's statistics of the
	// spans (exact percentiles of the merged histograms when the run has
	// them); PerOp the same per operation.
	Before LatencyStats         `json:"before"`
	During LatencyStats         `json:"during"`
	After  LatencyStats         `json:"after"`
	PerOp  map[string]OpLatency `json:"per_op,omitempty"`
	// P99ChangePct is the relative change of the p99 during scaling
	// against before, in percent, per operation and for ALL (the study's
	// Table 4 measure); AfterP99ChangePct the same for after.
	P99ChangePct      map[string]float64 `json:"p99_change_pct"`
	AfterP99ChangePct map[string]float64 `json:"after_p99_change_pct"`
	Notes             []string           `json:"notes,omitempty"`
}

// elasticity computes the metrics of every scaling action.
func (a *analyzer) elasticity(evs []event.Event) []ScalingMetrics {
	var out []ScalingMetrics
	for _, s := range ScalingsFromEvents(evs) {
		if s.At >= a.runEnd {
			continue
		}
		out = append(out, a.scaling(s))
	}
	return out
}

// scaling computes the metrics of one scaling action.
func (a *analyzer) scaling(s Scaling) ScalingMetrics {
	op := a.p.LatencyOp
	m := ScalingMetrics{Label: s.Label, Action: s.Action, Detail: s.Detail, Nodes: s.Nodes, AtMs: ms(s.At),
		StreamingMs: -1, TransferMs: -1, JoinedMs: -1, ActionMs: -1, SettledFromMs: -1, StabiliseMs: -1, ScalingMs: -1,
		P99ChangePct: map[string]float64{}, AfterP99ChangePct: map[string]float64{}}
	note := func(format string, args ...any) { m.Notes = append(m.Notes, fmt.Sprintf(format, args...)) }
	rel := func(t time.Duration) float64 {
		if t < 0 {
			return -1
		}
		return ms(t - s.At)
	}
	m.StreamingMs, m.JoinedMs, m.ActionMs = rel(s.StreamedAt), rel(s.JoinedAt), rel(s.EndAt)
	if s.StreamStartAt >= 0 && s.StreamedAt >= s.StreamStartAt {
		m.TransferMs = ms(s.StreamedAt - s.StreamStartAt)
	}
	if s.Failed {
		note("the scaling action failed (see the scale-end event)")
	}
	settled := s.StreamedAt
	switch {
	case settled >= 0:
	case s.JoinedAt >= 0:
		settled = s.JoinedAt
		note("no data movement reported: stabilisation is measured from the last node-joined")
	case s.EndAt >= 0:
		settled = s.EndAt
		note("no streaming-done or node-joined: stabilisation is measured from the action's end")
	}
	// this action's own bound among the fault actions (its fault-inject,
	// written just before scale-start), so that the before span ends there
	own := s.At
	for _, b := range a.bounds {
		if b <= s.At && s.At-b < time.Second && b < own {
			own = b
		}
	}
	next, last := a.next(s.At)
	before := a.span(a.prev(own), own, true)
	m.Before = a.stats(before, op)
	var p99s []float64
	for _, i := range before {
		if r, ok := a.s[i].row(op); ok && r.OK > 0 {
			p99s = append(p99s, r.P99Us)
		}
	}
	stableAt := time.Duration(-1)
	switch {
	case settled < 0:
		note("the action did not finish within the run: no stabilisation")
	case settled >= a.runEnd:
		note("the data movement ended after the last window: no stabilisation")
	case len(p99s) == 0:
		note("no %s latency before the action: no band to return to", op)
	default:
		sort.Float64s(p99s)
		m.BandUs = p99s[int(math.Ceil(0.9*float64(len(p99s))))-1] * (1 + a.p.RecoverTol)
		m.SettledFromMs = ms(settled - s.At)
		idx := a.span(settled, next, false)
		// the window holding the settle moment counts from its start
		if k := a.windowAt(settled); k >= 0 && (len(idx) == 0 || idx[0] != k) && a.s[k].start < next {
			idx = append([]int{k}, idx...)
		}
		k, found := a.holdFrom(idx, func(i int) bool {
			r, ok := a.s[i].row(op)
			return ok && r.OK > 0 && r.P99Us <= m.BandUs
		}, a.p.Hold)
		if !found {
			end := "the next action"
			if last {
				end = "the run ended"
			}
			note("the %s p99 did not stay within the before band (≤ %.0f µs) for %v before %s", op, m.BandUs, a.p.Hold, end)
		} else {
			stableAt = max(settled, a.s[idx[k]].start)
			m.StabiliseMs = ms(stableAt - settled)
			m.ScalingMs = ms(stableAt - s.At)
		}
	}
	duringEnd := next
	if stableAt >= 0 {
		duringEnd = stableAt
	}
	during := a.span(s.At, duringEnd, false)
	var after []int
	if stableAt >= 0 {
		after = a.span(stableAt, next, false)
	}
	m.During, m.After = a.stats(during, op), a.stats(after, op)
	m.ThroughputDuringOps = meanOps(a.s, during)
	change := func(into map[string]float64, name string, now, then LatencyStats) {
		if now.OKCount > 0 && then.OKCount > 0 && then.P99Us > 0 {
			into[name] = (now.P99Us/then.P99Us - 1) * 100
		}
	}
	change(m.P99ChangePct, measure.AllOps, a.stats(during, measure.AllOps), a.stats(before, measure.AllOps))
	change(m.AfterP99ChangePct, measure.AllOps, a.stats(after, measure.AllOps), a.stats(before, measure.AllOps))
	for _, name := range a.opNames() {
		if m.PerOp == nil {
			m.PerOp = map[string]OpLatency{}
		}
		ol := OpLatency{Before: a.stats(before, name), During: a.stats(during, name), After: a.stats(after, name)}
		m.PerOp[name] = ol
		change(m.P99ChangePct, name, ol.During, ol.Before)
		change(m.AfterP99ChangePct, name, ol.After, ol.Before)
	}
	return m
}

// windowAt returns the index of the window holding t, or -1.
func (a *analyzer) windowAt(t time.Duration) int {
	for i, s := range a.s {
		if s.start <= t && t < s.end {
			return i
		}
	}
	return -1
}

// ElasticityRows lays out the scaling actions of reports in the columns of
// the elasticity study's Table 5: run, action, streaming configuration,
// scaling time (streaming, stabilise, total), throughput while scaling,
// and per operation the mean and p99 latency while scaling and the p99
// change against before. names[i] names reports[i]. It returns the header
// and one row per scaling action; no rows when no run scaled.
func ElasticityRows(names []string, reports []*Report) (head []string, rows [][]string) {
	opSet := map[string]bool{}
	for _, r := range reports {
		if r == nil {
			continue
		}
		for _, m := range r.Elasticity {
			for op := range m.PerOp {
				opSet[op] = true
			}
		}
	}
	ops := make([]string, 0, len(opSet))
	for op := range opSet {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	if len(ops) == 0 {
		ops = []string{measure.AllOps}
	}
	head = []string{"run", "action", "streaming config", "streaming (s)", "of it transfer (s)", "stabilise (s)", "scaling (s)", "thru during (ops/s)"}
	for _, op := range ops {
		head = append(head, "mean "+strings.ToLower(op)+" (ms)")
	}
	for _, op := range ops {
		head = append(head, "p99 "+strings.ToLower(op)+" (ms)")
	}
	for _, op := range ops {
		head = append(head, "p99 "+strings.ToLower(op)+" vs before (%)")
	}
	secs := func(v float64, never string) string {
		if v < 0 {
			return never
		}
		return strconv.FormatFloat(v/1000, 'f', 1, 64)
	}
	for i, r := range reports {
		if r == nil {
			continue
		}
		name := fmt.Sprintf("run %d", i+1)
		if i < len(names) && names[i] != "" {
			name = names[i]
		}
		for _, m := range r.Elasticity {
			thru := "-" // an instant action has no during span
			if m.During.DurationMs > 0 {
				thru = strconv.FormatFloat(m.ThroughputDuringOps, 'f', 0, 64)
			}
			row := []string{name, m.Action + " " + m.Nodes, streamingConfig(m.Detail),
				secs(m.StreamingMs, "n/a"), secs(m.TransferMs, "-"), secs(m.StabiliseMs, "never"), secs(m.ScalingMs, "never"), thru}
			stat := func(op string) LatencyStats {
				if op == measure.AllOps {
					return m.During
				}
				return m.PerOp[op].During
			}
			for _, op := range ops {
				row = append(row, msOrDash(stat(op).MeanUs, stat(op).OKCount))
			}
			for _, op := range ops {
				row = append(row, msOrDash(stat(op).P99Us, stat(op).OKCount))
			}
			for _, op := range ops {
				if v, ok := m.P99ChangePct[op]; ok {
					row = append(row, fmt.Sprintf("%+.0f", v))
				} else {
					row = append(row, "-")
				}
			}
			rows = append(rows, row)
		}
	}
	return head, rows
}

// streamingConfig reads the streaming configuration from a scaling
// action's detail: "5mbit", "unthrottled", "disabled" (bootstrap false)
// or "default".
func streamingConfig(detail string) string {
	switch {
	case strings.Contains(detail, "bootstrap false"):
		return "disabled"
	case strings.Contains(detail, "streaming "):
		s := detail[strings.Index(detail, "streaming ")+len("streaming "):]
		return strings.TrimRight(strings.Fields(s)[0], ",)")
	}
	return "default"
}

// msOrDash renders µs as ms with one decimal, "-" without operations.
func msOrDash(us float64, n int64) string {
	if n == 0 {
		return "-"
	}
	return strconv.FormatFloat(us/1000, 'f', 1, 64)
}
