package report

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/autoscale"
	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/fault/kind"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/outcome"
)

// Colours of the figures.
const (
	colAll    rgb = 0x1f4e99
	colP50    rgb = 0x2ca02c
	colP99    rgb = 0xff7f0e
	colMax    rgb = 0xd62728
	colBehind rgb = 0x8c564b
	// colAnomaly marks a checker's anomaly on the time charts.
	colAnomaly rgb = 0xe6007e
)

// opColor is the colour of the i-th operation type.
func opColor(i int) rgba {
	palette := [...]rgb{0x2ca02c, 0xff7f0e, 0x9467bd, 0x8c564b, 0xe377c2, 0x17becf, 0x7f7f7f}
	return palette[i%len(palette)].solid()
}

// classColor is the colour of an error class.
func classColor(c outcome.Class) rgba {
	switch c {
	case outcome.Timeout:
		return rgb(0xd62728).solid()
	case outcome.Unavailable:
		return rgb(0x9467bd).solid()
	case outcome.Conflict:
		return rgb(0xff7f0e).solid()
	case outcome.Rejected:
		return rgb(0x8c564b).solid()
	case outcome.NotFound:
		return rgb(0x17becf).solid()
	}
	return rgb(0x7f7f7f).solid()
}

// faultColor is the band colour of a fault's action: its kind's colour in
// kinds (internal/fault/kind), grey for an action no kind has.
func faultColor(kinds *kind.Registry, action string) rgba {
	return rgb(kinds.Color(action)).solid()
}

// faultKinds are the fault kinds r's faults are labelled and coloured by.
func (r *Run) faultKinds() *kind.Registry {
	if r.Kinds != nil {
		return r.Kinds
	}
	return kind.Builtin()
}

// eventColor is the marker colour of an event kind.
func eventColor(kind string) rgba {
	switch kind {
	case event.FaultInject, event.FaultInjected, event.FaultError:
		return rgb(0xb22222).solid()
	case event.FaultRestore, event.FaultRestored, event.NodeUp:
		return rgb(0x1a7f37).solid()
	case event.NodeDown:
		return rgb(0x222222).solid()
	case event.LeaderChange, event.RoleChange:
		return rgb(0x1f4e99).solid()
	case autoscale.EventDecision:
		return colAutoscale.solid()
	}
	return rgb(0x777777).solid()
}

// series holds one run's window series for drawing, every slice indexed
// by window.
type series struct {
	mid  []float64 // window midpoint, seconds
	rows map[string][]*measure.WindowRow
	ops  []string
}

func newSeries(r *Run) *series {
	s := &series{rows: map[string][]*measure.WindowRow{}, ops: r.Ops}
	n := 0
	for _, w := range r.Windows {
		n = max(n, w.Index+1)
	}
	s.mid = make([]float64, n)
	for _, op := range append([]string{measure.AllOps}, r.Ops...) {
		s.rows[op] = make([]*measure.WindowRow, n)
	}
	for i := range r.Windows {
		w := &r.Windows[i]
		s.mid[w.Index] = (w.Start + (w.End-w.Start)/2).Seconds()
		if col, ok := s.rows[w.Op]; ok {
			col[w.Index] = w
		}
	}
	// a window without an ALL row gets one summed from its op rows
	all := s.rows[measure.AllOps]
	for i := range all {
		if all[i] != nil {
			continue
		}
		var sum *measure.WindowRow
		for _, op := range r.Ops {
			if w := s.rows[op][i]; w != nil {
				if sum == nil {
					c := *w
					c.Op = measure.AllOps
					c.MeanUs, c.P50Us, c.P90Us, c.P95Us, c.P99Us, c.P999Us, c.SvcMeanUs, c.SvcP99Us = 0, 0, 0, 0, 0, 0, 0, 0
					sum = &c
					continue
				}
				sum.OK += w.OK
				sum.Behind += w.Behind
				for k := range sum.Errors {
					sum.Errors[k] += w.Errors[k]
				}
				sum.MaxUs = max(sum.MaxUs, w.MaxUs)
			}
		}
		all[i] = sum
	}
	return s
}

// values maps every window of op through f (NaN where op has no row).
func (s *series) values(op string, f func(w *measure.WindowRow) float64) []float64 {
	col := s.rows[op]
	out := make([]float64, len(col))
	for i, w := range col {
		if w == nil {
			out[i] = math.NaN()
			continue
		}
		out[i] = f(w)
	}
	return out
}

func throughput(w *measure.WindowRow) float64 { return w.Throughput() }

// latency returns a latency column for log-scale drawing: NaN (a gap) when
// the window had no successful operation.
func latency(get func(w *measure.WindowRow) float64) func(w *measure.WindowRow) float64 {
	return func(w *measure.WindowRow) float64 {
		if w.OK == 0 {
			return math.NaN()
		}
		return get(w)
	}
}

func perSecond(count func(w *measure.WindowRow) int64) func(w *measure.WindowRow) float64 {
	return func(w *measure.WindowRow) float64 {
		d := (w.End - w.Start).Seconds()
		if d <= 0 {
			return 0
		}
		return float64(count(w)) / d
	}
}

// faultLabel names a fault for a span label: "kill n1", "pause n3".
func faultLabel(f analyze.Fault) string {
	return strings.TrimSpace(f.Action + " " + f.Node)
}

// faultSpanLabel names a fault in its span and figure: its kind's label
// (the action for every built-in kind) and its nodes.
func faultSpanLabel(kinds *kind.Registry, f analyze.Fault) string {
	return strings.TrimSpace(kinds.Label(f.Action) + " " + f.Node)
}

// faultTitle is a fault's hover text.
func faultTitle(i int, f analyze.Fault, end time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "fault %d: %s", i+1, faultLabel(f))
	if f.Label != "" {
		fmt.Fprintf(&b, " (%s)", f.Label)
	}
	fmt.Fprintf(&b, " at %s s", fnum(f.At.Seconds(), 3))
	if f.Restored() && f.RestoreAt <= end {
		fmt.Fprintf(&b, ", %s at %s s (%s s)", f.RestoreAction, fnum(f.RestoreAt.Seconds(), 3), fnum((f.RestoreAt-f.At).Seconds(), 3))
	} else {
		b.WriteString(", not restored before the end of the run")
	}
	if f.Error != "" {
		b.WriteString("; error: " + f.Error)
	}
	return b.String()
}

// decorations are the spans, shades and marks every full-run chart of a
// run carries.
type decorations struct {
	spans     []spanSpec
	shades    []spanSpec
	marks     []markSpec
	anomalies []markSpec // the checkers' explained anomalies
}

func runDecorations(r *Run) decorations {
	var d decorations
	kinds := r.faultKinds()
	for i, f := range r.RunFaults() {
		to := r.End
		if f.Restored() && f.RestoreAt < r.End {
			to = f.RestoreAt
		}
		d.spans = append(d.spans, spanSpec{From: f.At.Seconds(), To: to.Seconds(), Label: faultSpanLabel(kinds, f),
			Title: faultTitle(i, f, r.End), Color: faultColor(kinds, f.Action)})
	}
	if r.Warmup > 0 {
		d.shades = append(d.shades, spanSpec{From: 0, To: r.Warmup.Seconds(), Label: "warm-up",
			Title: fmt.Sprintf("warm-up: 0 – %s s, excluded from totals and baseline", fnum(r.Warmup.Seconds(), 3)),
			Color: colWarmup.a(0.10)})
	}
	for _, e := range r.RunEvents() {
		d.marks = append(d.marks, markSpec{At: e.Since().Seconds(), Title: eventText(e), Color: eventColor(e.Kind)})
	}
	d.anomalies = anomalyMarks(r)
	return d
}

// eventText is an event's one-line description.
func eventText(e event.Event) string {
	s := fmt.Sprintf("%s s  %s", fnum(e.Since().Seconds(), 3), e.Kind)
	if e.Node != "" {
		s += " " + e.Node
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Fault != "" {
		s += " [" + e.Fault + "]"
	}
	return s
}

// figure is one chart of a report, with the file name of its PNG.
type figure struct {
	spec chartSpec
	png  string // plots/<png>
}

const timeAxis = "time since the start of the run (s)"

// figures returns the charts of a run's report, in report order: the
// overview (throughput over latency, all operations), throughput per
// operation, latency per operation, errors by class, behind schedule, and
// one zoomed figure per fault.
func figures(r *Run) []figure {
	s := newSeries(r)
	d := runDecorations(r)
	x1 := r.End.Seconds()
	base := func(id, title string, panels ...panelSpec) figure {
		return figure{png: id + ".png", spec: chartSpec{ID: id, Title: title, X0: 0, X1: x1, XLabel: timeAxis,
			Panels: panels, Spans: d.spans, Shades: d.shades, Marks: d.marks, Anomalies: d.anomalies}}
	}
	tpAll := seriesSpec{Name: "all operations", Color: colAll.solid(), Width: 1.4, X: s.mid, Y: s.values(measure.AllOps, throughput)}
	latPanel := func(op string, h float64) panelSpec {
		return panelSpec{YLabel: "latency (log)", Height: h, Log: true, Unit: unitLatency, Empty: "no successful operations",
			Series: withCensored(s, op, []seriesSpec{
				{Name: "p50", Color: colP50.solid(), Width: 1.2, X: s.mid, Y: s.values(op, latency(func(w *measure.WindowRow) float64 { return w.P50Us }))},
				{Name: "p99", Color: colP99.solid(), Width: 1.2, X: s.mid, Y: s.values(op, latency(func(w *measure.WindowRow) float64 { return w.P99Us }))},
				{Name: "max", Color: colMax.solid(), Width: 1, X: s.mid, Y: s.values(op, latency(func(w *measure.WindowRow) float64 { return w.MaxUs }))},
			})}
	}
	var out []figure
	out = append(out, base("overview", "Throughput and latency, all operations",
		append([]panelSpec{{YLabel: "throughput (ops/s)", Height: 190, Unit: unitOps, Series: []seriesSpec{tpAll}}},
			append(hostPanels(r), latPanel(measure.AllOps, 210))...)...))

	tp := []seriesSpec{tpAll}
	for i, op := range r.Ops {
		tp = append(tp, seriesSpec{Name: op, Color: opColor(i), Width: 1, X: s.mid, Y: s.values(op, throughput)})
	}
	out = append(out, base("throughput", "Throughput per operation type",
		panelSpec{YLabel: "throughput (ops/s)", Height: 220, Unit: unitOps, Series: tp}))
	for _, op := range r.Ops {
		out = append(out, base("latency-"+fileSafe(op), "Latency of "+op+" (from the intended start)", latPanel(op, 200)))
	}

	var errSeries []seriesSpec
	for _, cls := range outcome.ErrorClasses() {
		cls := cls
		var total int64
		for _, w := range s.rows[measure.AllOps] {
			if w != nil {
				total += w.Errors[cls]
			}
		}
		if total == 0 {
			continue
		}
		errSeries = append(errSeries, seriesSpec{Name: fmt.Sprintf("%s (%d)", cls, total), Color: classColor(cls), Width: 1.2,
			X: s.mid, Y: s.values(measure.AllOps, perSecond(func(w *measure.WindowRow) int64 { return w.Errors[cls] }))})
	}
	out = append(out, base("errors", "Failed operations by error class",
		panelSpec{YLabel: "failed (ops/s)", Height: 160, Unit: unitOps, Series: errSeries, Empty: "no failed operations"}))
	out = append(out, base("behind", "Operations started behind schedule",
		panelSpec{YLabel: "behind (ops/s)", Height: 160, Unit: unitOps, Empty: "no operation started behind schedule",
			Series: []seriesSpec{{Name: "behind schedule", Color: colBehind.solid(), Width: 1.2, X: s.mid,
				Y: s.values(measure.AllOps, perSecond(func(w *measure.WindowRow) int64 { return w.Behind }))}}}))

	for i, f := range r.RunFaults() {
		out = append(out, faultFigure(r, s, d, i, f, tpAll, latPanel))
	}
	return out
}

// faultFigure is the papers' figure of one fault: throughput over latency
// from a little before the fault to a little after its restore.
func faultFigure(r *Run, s *series, d decorations, i int, f analyze.Fault, tpAll seriesSpec, latPanel func(string, float64) panelSpec) figure {
	end := r.End
	if f.Restored() && f.RestoreAt < r.End {
		end = f.RestoreAt
	}
	span := end - f.At
	margin := max(10*time.Second, span/2)
	from := max(0, f.At-margin)
	to := min(r.End, end+margin)
	id := fmt.Sprintf("fault-%d", i+1)
	title := fmt.Sprintf("Fault %d: %s at %s s", i+1, faultSpanLabel(r.faultKinds(), f), fnum(f.At.Seconds(), 1))
	if f.Restored() && f.RestoreAt < r.End {
		title += fmt.Sprintf(", %s at %s s", f.RestoreAction, fnum(f.RestoreAt.Seconds(), 1))
	}
	return figure{png: id + ".png", spec: chartSpec{ID: id, Title: title, X0: from.Seconds(), X1: to.Seconds(), XLabel: timeAxis,
		Spans: d.spans, Shades: d.shades, Marks: d.marks, Anomalies: d.anomalies,
		Panels: []panelSpec{
			{YLabel: "throughput (ops/s)", Height: 180, Unit: unitOps, Series: []seriesSpec{tpAll}},
			latPanel(measure.AllOps, 200),
		}}}
}

// fileSafe lower-cases an operation name for a file name.
func fileSafe(op string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, op)
}

// hostPanels are the panels drawn under the throughput of the overview
// when the run sampled its host (host.csv): the 1-minute load average, and
// the CPU of the host's steal, faultbench itself and each local node.
func hostPanels(r *Run) []panelSpec {
	h := r.Host
	if h == nil || len(h.AtSec) == 0 {
		return nil
	}
	cpu := []seriesSpec{
		{Name: "faultbench", Color: colAll.solid(), Width: 1.2, X: h.AtSec, Y: h.SelfPct},
		{Name: "steal (all CPUs)", Color: colMax.solid(), Width: 1, Dash: 3, X: h.AtSec, Y: h.StealPct},
	}
	for i, n := range h.Nodes {
		cpu = append(cpu, seriesSpec{Name: n, Color: opColor(i), Width: 1, X: h.AtSec, Y: h.NodePct[n]})
	}
	return []panelSpec{
		{YLabel: "host load (1 min)", Height: 70, Unit: unitCount, Series: []seriesSpec{{Name: "load average", Color: colBehind.solid(), Width: 1.2, X: h.AtSec, Y: h.Load1}}},
		{YLabel: "CPU (% of one)", Height: 110, Unit: unitCount, Series: cpu},
	}
}
