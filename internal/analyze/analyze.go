// Package analyze computes faultbench's availability, recovery, steady-state
// and reconfiguration metrics from a run's windows (measure.WindowRow, one
// row per window and operation plus an "ALL" row) and events
// (event.Event): baseline and final throughput, and per fault the downtime,
// longest gap, failover, recovery and node-down throughput of the NoSQL
// failover study, the steady state of the Under Pressure Benchmark and the
// reconfiguration time, peak latency, failed/aborted operations and latency
// change of the CumuloNimbo failure evaluation (papers: docs/papers.md).
//
// Everything here is a pure function of its inputs; results are plain
// structs whose JSON keys carry their unit (_ms, _us, _ops for operations
// per second, _count, _pct), ready for summary.json. Every time metric has
// the resolution of the windows it is computed from; docs/metrics.md gives
// the exact definitions and conventions (-1 means "never / not computable",
// with the reason in Notes).
package analyze

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/fault/kind"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/outcome"
)

// Params are the thresholds of the metric definitions.
type Params struct {
	// TriggerAt is the start of a trigger that is no fault event (a load
	// spike, runner.spike.*), from the same origin as the windows: the
	// baseline, the validity and the noise guards judge only the windows
	// before it (or before the first fault, whichever is first), so a run
	// is not called invalid for the backlog its own trigger made. 0: none.
	TriggerAt time.Duration
	// DownFrac: a window is down when its throughput is below DownFrac*B
	// (the NoSQL failover study: 10 % of the known capacity). Default 0.10.
	DownFrac float64
	// RecoverTol: recovered/stable means within ±RecoverTol of the level
	// reached later. Default 0.10.
	RecoverTol float64
	// Hold is how long a condition must hold to count as reached (recovery,
	// stabilisation, reconfiguration). Default 5s.
	Hold time.Duration
	// SustainWindows is how many consecutive windows at or above
	// DownFrac*B end a downtime stretch for the failover time: service
	// back in fewer (a backlog burst between two outages) does not end
	// it. Default 5 (500 ms at 100 ms windows).
	SustainWindows int
	// MinCompletions is the fewest LatencyOp operations (successes and
	// failures) the reconfiguration span must complete for its peak
	// latency and failed/aborted counts to be judged; fewer give "not
	// judged (n completions)" (FaultMetrics.NotJudged). Default 20; 0
	// judges any span.
	MinCompletions int
	// SteadyTol is the steady-state tolerance (UPB: about 2 %).
	// Default 0.02.
	SteadyTol float64
	// SteadySpan is the sliding span over which SteadyTol is checked.
	// Default 10s.
	SteadySpan time.Duration
	// SteadySample is the resolution of the steady-state test: the windows
	// are summed into samples of this length (at least one window) before
	// SteadyStretchesCounted judges them. Default 1s.
	SteadySample time.Duration
	// SteadyZ is how many sampling errors (√count / length) a sample may
	// lie beyond ±SteadyTol of its span's mean, and the trend beyond its
	// tolerance, before the span is not steady; 0 is the UPB's bare ±2 %
	// rule, which a 100 ms window of a few hundred operations cannot meet
	// from sampling noise alone. Default 3.
	SteadyZ float64
	// BandSmooth is the width of the centred moving average applied to the
	// throughput before recovery and stabilisation are judged against their
	// ±RecoverTol band (a 100 ms window holds too few operations for a
	// ±10 % band on its own); 0 judges raw windows. Downtime and gaps always
	// use raw windows.
	BandSmooth time.Duration
	// LatencyFactor: reconfiguration ends when the windowed p99 is back
	// under LatencyFactor times the pre-fault p99 (the CumuloNimbo failure
	// evaluation). Default 2.
	LatencyFactor float64
	// LatencyOp is the operation whose rows give the latency for
	// reconfiguration, peak latency and before/during/after latency ("ALL"
	// for every operation; the CumuloNimbo evaluation uses New-Order). Default "ALL".
	LatencyOp string
	// FinalFrac is the trailing fraction of the run that final throughput
	// averages over. Default 0.20.
	FinalFrac float64
	// Hists, when set, gives each window's latency histogram (the run's
	// hist/*.hlog: measure.ReadHistLogs). Every percentile of a span
	// (before/during/after, phases, pre-fault p99, the p50/p99 changes) is
	// then a percentile of the span's merged histogram. Without it they are
	// the windows' percentiles averaged by successful operations, an
	// approximation the report flags (PercentilesExact false, a note).
	Hists Histograms
	// OfferedOps is the rate the open-loop schedule asked for (operations
	// per second; 0 for a closed loop). It is reported next to the achieved
	// throughput of each phase.
	OfferedOps float64
	// Kinds are the fault kinds the events' faults are paired by
	// (FaultsFromEventsWith); nil: the built-in ones (kind.Builtin).
	Kinds *kind.Registry
	// MaxLateFrac: an open-loop run is invalid when more than this
	// fraction of the operations due before the first fault were dropped
	// or started behind schedule (the offered load was not met). Default
	// 0.05.
	MaxLateFrac float64
	// MaxShortfall: an open-loop run is invalid when its baseline is below
	// (1 - MaxShortfall) times the offered rate (UPB's keep-up: 5 %).
	// Default 0.05.
	MaxShortfall float64
	// NoisyCV: a run is noisy when the coefficient of variation of its
	// pre-fault throughput on SteadySample samples, beyond what the
	// samples' operation counts explain, exceeds it. Default 0.05.
	NoisyCV float64
	// NoisyOtherPerCPU: a run is noisy when the CPU of everything but the
	// run (the host's busy time minus faultbench's and the nodes' process
	// trees: host-load events' other_cpu_pct) before the first fault is
	// above this fraction of the machine's CPUs. Default 0.25; 0 turns the
	// rule off. Events without the figure are judged by NoisyLoadPerCPU.
	NoisyOtherPerCPU float64
	// NoisyLoadPerCPU: a run is noisy when the host's load average before
	// the first fault (its host-load events) is above this many per CPU;
	// only for events without the other CPU (older runs), since the load
	// average counts the run's own work. Default 2; 0 turns the rule off.
	NoisyLoadPerCPU float64
	// NoisySteal: a run is noisy when the CPU steal before the first fault
	// (host-load events) is above this fraction. Default 0.05; 0 turns the
	// rule off.
	NoisySteal float64
	// Chaos asks for the chaos analysis (Report.Chaos): the faults grouped
	// into cycles and each figure's distribution per fault kind.
	Chaos bool
}

// Histograms are per-window latency histograms (measure.HistLogs).
type Histograms interface {
	// MergeWindow adds op's histogram of the window starting at start into
	// into, and reports false when it has none.
	MergeWindow(op string, start time.Duration, into *hdrhistogram.Histogram) bool
}

// DefaultParams returns the parameters of the metric definitions in
// DESIGN.md.
func DefaultParams() Params {
	return Params{DownFrac: 0.10, RecoverTol: 0.10, Hold: 5 * time.Second, MaxLateFrac: 0.05, MaxShortfall: 0.05, NoisyCV: 0.05, NoisyOtherPerCPU: 0.25, NoisyLoadPerCPU: 2, NoisySteal: 0.05, SustainWindows: 5, MinCompletions: 20, SteadyTol: 0.02,
		SteadySpan: 10 * time.Second, SteadySample: time.Second, SteadyZ: 3, BandSmooth: time.Second, LatencyFactor: 2, LatencyOp: measure.AllOps,
		FinalFrac: 0.20}
}

// Validate reports the first parameter out of range.
func (p Params) Validate() error {
	frac := func(name string, v float64) error {
		if !(v > 0 && v < 1) {
			return fmt.Errorf("analyze: %s must be in (0,1), got %v", name, v)
		}
		return nil
	}
	for _, e := range []error{frac("DownFrac", p.DownFrac), frac("RecoverTol", p.RecoverTol),
		frac("SteadyTol", p.SteadyTol), frac("MaxLateFrac", p.MaxLateFrac), frac("MaxShortfall", p.MaxShortfall),
		frac("NoisyCV", p.NoisyCV)} {
		if e != nil {
			return e
		}
	}
	switch {
	case p.Hold <= 0:
		return fmt.Errorf("analyze: Hold must be positive, got %v", p.Hold)
	case p.SustainWindows < 1:
		return fmt.Errorf("analyze: SustainWindows must be at least 1, got %d", p.SustainWindows)
	case !(p.NoisyLoadPerCPU >= 0) || math.IsInf(p.NoisyLoadPerCPU, 0):
		return fmt.Errorf("analyze: NoisyLoadPerCPU must be a finite number >= 0, got %v", p.NoisyLoadPerCPU)
	case !(p.NoisyOtherPerCPU >= 0 && p.NoisyOtherPerCPU <= 1):
		return fmt.Errorf("analyze: NoisyOtherPerCPU must be in [0,1], got %v", p.NoisyOtherPerCPU)
	case !(p.NoisySteal >= 0 && p.NoisySteal < 1):
		return fmt.Errorf("analyze: NoisySteal must be in [0,1), got %v", p.NoisySteal)
	case p.MinCompletions < 0:
		return fmt.Errorf("analyze: MinCompletions must not be negative, got %d", p.MinCompletions)
	case p.SteadySpan <= 0:
		return fmt.Errorf("analyze: SteadySpan must be positive, got %v", p.SteadySpan)
	case p.BandSmooth < 0:
		return fmt.Errorf("analyze: BandSmooth must not be negative, got %v", p.BandSmooth)
	case p.SteadySample <= 0:
		return fmt.Errorf("analyze: SteadySample must be positive, got %v", p.SteadySample)
	case !(p.SteadyZ >= 0) || math.IsInf(p.SteadyZ, 0):
		return fmt.Errorf("analyze: SteadyZ must be a finite number >= 0, got %v", p.SteadyZ)
	case !(p.LatencyFactor >= 1) || math.IsInf(p.LatencyFactor, 0):
		return fmt.Errorf("analyze: LatencyFactor must be at least 1, got %v", p.LatencyFactor)
	case p.LatencyOp == "":
		return errors.New(`analyze: LatencyOp must name an operation or "ALL"`)
	case !(p.FinalFrac > 0 && p.FinalFrac <= 1):
		return fmt.Errorf("analyze: FinalFrac must be in (0,1], got %v", p.FinalFrac)
	}
	return nil
}

// Report is the analysis of one run.
type Report struct {
	// BaselineOps is B: the mean throughput over the steady windows of the
	// run phase before the first fault; when no steady stretch exists, the
	// mean over every pre-fault run window (BaselineSteady false).
	BaselineOps    float64 `json:"baseline_ops"`
	BaselineSteady bool    `json:"baseline_steady"`
	BaselineFromMs float64 `json:"baseline_from_ms"` // start of the first baseline window
	BaselineToMs   float64 `json:"baseline_to_ms"`   // end of the last baseline window
	// FinalOps is the mean throughput over the last FinalFrac of the run.
	FinalOps  float64 `json:"final_ops"`
	RunFromMs float64 `json:"run_from_ms"` // start of the first run-phase window
	RunToMs   float64 `json:"run_to_ms"`   // end of the last window
	// WindowMs is the median window length: the resolution of every time
	// metric.
	WindowMs float64 `json:"window_ms"`
	// PercentilesExact is true when every span percentile of the report is
	// a percentile of the span's merged histograms (Params.Hists); false
	// when some are averages of window percentiles (see Notes).
	PercentilesExact bool `json:"percentiles_exact"`
	// OfferedOps is the open-loop rate asked for (0: closed loop).
	OfferedOps float64 `json:"offered_ops,omitempty"`
	// DroppedOps counts the open-loop operations due in the run windows
	// that never started (the run ended while the workers were behind).
	DroppedOps int64 `json:"dropped_count"`
	// Invalid is true when the offered load was not met before the first
	// fault (open loop: dropped or behind-schedule operations above
	// MaxLateFrac, or the baseline below the offered rate by more than
	// MaxShortfall): the run measured an overloaded client or machine, not
	// the database's failover. InvalidReasons says why.
	Invalid        bool     `json:"invalid,omitempty"`
	InvalidReasons []string `json:"invalid_reasons,omitempty"`
	// Noisy is true when the pre-fault span is unstable: windows under the
	// downtime threshold before any fault, or a coefficient of variation
	// of throughput beyond sampling noise above NoisyCV. NoisyReasons says
	// why.
	Noisy        bool           `json:"noisy,omitempty"`
	NoisyReasons []string       `json:"noisy_reasons,omitempty"`
	Faults       []FaultMetrics `json:"faults"`
	// Chaos is the analysis of a chaos run (Params.Chaos): cycles and per
	// fault kind the distribution of downtime, longest gap, time to first
	// success and time back under the latency target.
	Chaos *ChaosReport `json:"chaos,omitempty"`
	// Elasticity holds the metrics of every scaling action (add-node,
	// remove-node) of the run, in time order.
	Elasticity []ScalingMetrics `json:"elasticity,omitempty"`
	Phases     []PhaseStats     `json:"phases"`
	Notes      []string         `json:"notes,omitempty"`
}

// FaultMetrics are the metrics of one fault. The fault span runs from the
// fault's action to the next fault or restore action of the run (or the
// end); the restore span from the restore action to the next action (or
// the end). Times are from the action's beginning; -1 means never reached
// or not computable, with the reason in Notes. Faults injected after the
// last window are left out of the report (with a report note); a restore
// after the last window counts as none for the metrics.
type FaultMetrics struct {
	Fault Fault `json:"fault"`
	// DowntimeMs is the total length of the fault span's windows whose
	// throughput is below DownFrac*B (the NoSQL failover study).
	DowntimeMs float64 `json:"downtime_ms"`
	// DownAtSpanEnd is true when the last window of the fault span is still
	// down (the NoSQL failover study reports such downtime as ∞).
	DownAtSpanEnd bool `json:"down_at_span_end"`
	// LongestGapMs is the longest interval without a successful operation
	// that overlaps the fault span, from the windows' first and last
	// success times (exact for gaps of a window or longer; a gap that began
	// before the fault counts from its beginning). For windows.csv files
	// without those times it is the longest run of consecutive windows
	// without a success.
	LongestGapMs float64 `json:"longest_gap_ms"`
	// FailoverMs is from the fault to the end of the span's first outage
	// stretch, which ends only at sustained service: the last down or
	// impaired window before the first SustainWindows consecutive windows
	// that are neither; 0 if no window was down or impaired. A window is
	// impaired when it refuses (errors unavailable, rejected, other) at
	// least DownFrac of its operations more than the baseline did, in a
	// run of at least SustainWindows such windows: a part of the data is
	// not served (a Redis Cluster master's slots until its replica is
	// promoted).
	FailoverMs float64 `json:"failover_ms"`
	// PartialOutage is true when the failover's stretch holds impaired
	// windows: the outage was partial, and the failover ends when
	// operations are no longer refused, not at the end of the first down
	// stretch.
	PartialOutage bool `json:"partial_outage,omitempty"`
	// FailoverOpen is true when service was not sustained again before
	// the end of the span: the failover did not end, FailoverMs runs to
	// the span's last down window.
	FailoverOpen bool `json:"failover_open"`
	// RecoveryMs is from the fault to the start of the first window from
	// which throughput stays within ±RecoverTol of LevelOps for Hold.
	RecoveryMs float64 `json:"recovery_ms"`
	// RecoveryAfterDowntimeMs is RecoveryMs - FailoverMs (at least 0): the
	// recovery time as the NoSQL failover study's results table counts it, from the moment
	// the cluster answers again.
	RecoveryAfterDowntimeMs float64 `json:"recovery_after_downtime_ms"`
	// LevelOps is the level recovery is measured against: the mean
	// throughput of the fault span's last steady stretch, or B if the span
	// has none.
	LevelOps float64 `json:"level_ops"`
	// NodeDownOps is the mean throughput from the end of recovery to the
	// end of the fault span.
	NodeDownOps float64 `json:"node_down_ops"`
	// RestoreDowntimeMs and RestoreLongestGapMs are DowntimeMs and
	// LongestGapMs for the restore span (the NoSQL failover study's
	// "downtime during node join"); -1 without a restore.
	RestoreDowntimeMs   float64 `json:"restore_downtime_ms"`
	RestoreLongestGapMs float64 `json:"restore_longest_gap_ms"`
	// StabiliseMs is from the restore action to the start of the first
	// window from which throughput stays within ±RecoverTol of
	// RestoreLevelOps for Hold ("time to stabilise on node up"); -1 without
	// a restore or if never.
	StabiliseMs     float64 `json:"stabilise_ms"`
	RestoreLevelOps float64 `json:"restore_level_ops"`
	// ReconfigurationMs is from the fault to the start of the first window
	// from which the LatencyOp p99 stays under LatencyFactor times
	// PreFaultP99Us for Hold (the CumuloNimbo failure evaluation).
	ReconfigurationMs float64 `json:"reconfiguration_ms"`
	PreFaultP99Us     float64 `json:"pre_fault_p99_us"`
	// PeakLatencyMs is the highest LatencyOp latency in the
	// reconfiguration span (the whole fault span if it never ended),
	// failed and timed-out operations included at their duration
	// (censored: windows.csv fail_max_us), so a peak cannot leave out the
	// worst operations.
	PeakLatencyMs float64 `json:"peak_latency_ms"`
	// PeakCensored is true when the peak is a failed operation's duration:
	// the operation gave up then, its latency was at least that.
	PeakCensored bool `json:"peak_censored,omitempty"`
	// NotJudged names the figures of the fault that rest on too little to
	// judge (JSON key -> why, e.g. "peak_latency_ms": "3 completions"):
	// their values are still written, and a table shows "not judged (why)".
	NotJudged map[string]string `json:"not_judged,omitempty"`
	// FailedOps counts operations of every failure class (a not-found
	// answer is none: outcome.FailureClasses), AbortedOps those of the
	// conflict class, in the reconfiguration span (ALL rows).
	FailedOps  int64 `json:"failed_count"`
	AbortedOps int64 `json:"aborted_count"`
	// LatencyAfterVsBeforePct is the LatencyOp mean latency from the end of
	// reconfiguration to the end of the fault span relative to Before, as a
	// % change; absent when either side is missing.
	LatencyAfterVsBeforePct *float64 `json:"latency_after_vs_before_pct,omitempty"`
	// Before covers the run windows from the previous action (or the run's
	// start) to the fault, During the fault span, After the restore span
	// (empty without a restore); all for LatencyOp.
	Before LatencyStats `json:"before"`
	During LatencyStats `json:"during"`
	After  LatencyStats `json:"after"`
	// PerOp has Before/During/After for every operation other than ALL.
	PerOp map[string]OpLatency `json:"per_op,omitempty"`
	// ChangePct holds relative changes in %: during_ops_pct, during_p50_pct,
	// during_p99_pct, after_ops_pct, after_p50_pct, after_p99_pct (During or
	// After against Before) and node_down_vs_baseline_pct (NodeDownOps
	// against B); a key is absent when either side is missing.
	ChangePct map[string]float64 `json:"change_pct"`
	Notes     []string           `json:"notes,omitempty"`
}

// OpLatency is one operation's latency around a fault.
type OpLatency struct {
	Before LatencyStats `json:"before"`
	During LatencyStats `json:"during"`
	After  LatencyStats `json:"after"`
}

// PhaseStats summarises one stretch of the run: "before" (run windows
// before the first action), one phase per action time up to the next action
// or the end (Kind fault, restore or mixed, named after the actions), and
// "final" (the last FinalFrac of the run, overlapping the others). The
// embedded LatencyStats are for ALL.
type PhaseStats struct {
	Name   string  `json:"name"`
	Kind   string  `json:"kind"`
	FromMs float64 `json:"from_ms"`
	ToMs   float64 `json:"to_ms"`
	// OfferedOps is the rate the schedule asked for (Params.OfferedOps),
	// next to the achieved throughput_ops; absent for a closed loop.
	OfferedOps float64 `json:"offered_ops,omitempty"`
	LatencyStats
	ErrorsByClass map[string]int64 `json:"errors_by_class_count"`
}

// analyzer holds one analysis' inputs and derived series.
type analyzer struct {
	p        Params
	s        []slot
	window   time.Duration
	bounds   []time.Duration // sorted distinct action times
	runStart time.Duration
	runEnd   time.Duration
	base     float64
	// baseRefused is the share of the baseline windows' completions
	// that were refused (refusedOf): what a window must exceed by
	// DownFrac to be impaired
	baseRefused float64
	inexact     string // why some span percentile is approximate; "" if none
}

// Analyze computes the report of one run from its windows and events. It
// fails only on invalid parameters or when no window is usable; every other
// gap in the data is reported in Notes.
func Analyze(windows []measure.WindowRow, evs []event.Event, p Params) (*Report, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	s, notes := buildSlots(windows)
	if len(s) == 0 {
		return nil, errors.New("analyze: no usable windows")
	}
	if n, w := len(s), medianWindow(s); n > 1 && s[n-1].dur() < w/2 {
		// A last window cut short by the end of the run: its throughput is
		// too noisy to judge, so it is left out.
		notes = append(notes, fmt.Sprintf("last window (%v long) shorter than half the window length ignored", s[n-1].dur()))
		s = s[:n-1]
	}
	a := &analyzer{p: p, s: s, window: medianWindow(s), runEnd: s[len(s)-1].end}
	rep := &Report{Notes: notes, WindowMs: ms(a.window), Faults: []FaultMetrics{}}

	var run []int
	for i := range s {
		if s[i].run {
			run = append(run, i)
		}
	}
	if len(run) == 0 {
		rep.Notes = append(rep.Notes, "no run-phase windows; every window treated as run")
		for i := range s {
			s[i].run = true
			run = append(run, i)
		}
	}
	a.runStart = s[run[0]].start
	rep.RunFromMs, rep.RunToMs = ms(a.runStart), ms(a.runEnd)
	if p.LatencyOp != measure.AllOps && !a.hasOp(p.LatencyOp) {
		rep.Notes = append(rep.Notes, fmt.Sprintf("no rows for latency op %q", p.LatencyOp))
	}

	var faults []Fault
	for _, f := range FaultsFromEventsWith(evs, p.Kinds) {
		if f.At >= a.runEnd {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s at %v is after the last window (%v): ignored",
				strings.TrimSpace(f.Action+" "+f.Node), f.At, a.runEnd))
			continue
		}
		faults = append(faults, f)
		a.bounds = append(a.bounds, f.At)
		if f.Restored() && f.RestoreAt < a.runEnd {
			a.bounds = append(a.bounds, f.RestoreAt)
		}
	}
	sort.Slice(a.bounds, func(i, j int) bool { return a.bounds[i] < a.bounds[j] })
	a.bounds = dedup(a.bounds)

	a.baseline(rep)
	a.validity(rep)
	a.hostNoise(rep, evs, a.preEnd())
	rep.Noisy = len(rep.NoisyReasons) > 0
	cut := a.runEnd - time.Duration(p.FinalFrac*float64(a.runEnd-a.runStart))
	final := a.span(cut, a.runEnd+1, true)
	rep.FinalOps = meanOps(s, final)

	for _, f := range faults {
		rep.Faults = append(rep.Faults, a.fault(f))
	}
	if p.Chaos {
		rep.Chaos = a.chaos(faults)
	}
	rep.Elasticity = a.elasticity(evs)
	rep.Phases = a.phases(faults, cut)
	rep.OfferedOps = p.OfferedOps
	for _, i := range run {
		rep.DroppedOps += s[i].all.Dropped
	}
	rep.PercentilesExact = a.inexact == ""
	if !rep.PercentilesExact {
		rep.Notes = append(rep.Notes, "span percentiles are averages of window percentiles weighted by successful operations (approximate): "+a.inexact)
	}
	return rep, nil
}

// dedup removes adjacent duplicates of a sorted slice.
func dedup(d []time.Duration) []time.Duration {
	var out []time.Duration
	for _, v := range d {
		if len(out) == 0 || v != out[len(out)-1] {
			out = append(out, v)
		}
	}
	return out
}

// hasOp reports whether any window has a row for op.
func (a *analyzer) hasOp(op string) bool {
	for _, s := range a.s {
		if _, ok := s.ops[op]; ok {
			return true
		}
	}
	return false
}

// span returns the windows whose midpoint lies in [from, to), in order;
// runOnly restricts them to run-phase windows. Assigning windows by
// midpoint puts every window in exactly one of two adjacent spans, the one
// holding most of its time.
func (a *analyzer) span(from, to time.Duration, runOnly bool) []int {
	var out []int
	for i, s := range a.s {
		if m := s.mid(); m >= from && m < to && (!runOnly || s.run) {
			out = append(out, i)
		}
	}
	return out
}

// next returns the first action time after t, or the run's end (and last
// = true) when there is none.
func (a *analyzer) next(t time.Duration) (end time.Duration, last bool) {
	for _, b := range a.bounds {
		if b > t {
			return b, false
		}
	}
	return a.runEnd + 1, true
}

// prev returns the last action time before t, or a time before every
// window when there is none.
func (a *analyzer) prev(t time.Duration) time.Duration {
	p := time.Duration(math.MinInt64)
	for _, b := range a.bounds {
		if b < t {
			p = b
		}
	}
	return p
}

// preEnd is the end of the span the baseline, validity and noise guards
// judge: the first fault, or the start of a trigger that is no fault
// (Params.TriggerAt) when it comes first; after every window when there
// is neither.
func (a *analyzer) preEnd() time.Duration {
	first := a.runEnd + 1
	if len(a.bounds) > 0 {
		first = a.bounds[0]
	}
	if t := a.p.TriggerAt; t > 0 && t < first {
		first = t
	}
	return first
}

// baseline fills B from the run windows before the first action.
func (a *analyzer) baseline(rep *Report) {
	first := a.preEnd()
	pre := a.span(math.MinInt64, first, true)
	if len(pre) == 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("no run window before the first fault (at %v, run starts at %v): no baseline", first, a.runStart))
		return
	}
	steady := a.steadyWindows(pre, false)
	if len(steady) == 0 {
		steady = pre
		rep.Notes = append(rep.Notes, fmt.Sprintf("no steady stretch (±%g%% beyond sampling noise, %v samples over %v) before the first fault: baseline is the mean of all %d pre-fault run windows", a.p.SteadyTol*100, a.p.SteadySample, a.p.SteadySpan, len(pre)))
	} else {
		rep.BaselineSteady = true
	}
	a.base = meanOps(a.s, steady)
	var ok, refused int64
	for _, i := range steady {
		ok += a.s[i].all.OK
		refused += refusedOf(a.s[i].all)
	}
	if ok+refused > 0 {
		a.baseRefused = float64(refused) / float64(ok+refused)
	}
	rep.BaselineOps = a.base
	rep.BaselineFromMs, rep.BaselineToMs = ms(a.s[steady[0]].start), ms(a.s[steady[len(steady)-1]].end)
	if a.base <= 0 {
		rep.Notes = append(rep.Notes, "baseline throughput is zero: downtime and failover not computable")
	}
}

// steadyWindows returns the windows of idx in steady stretches (the
// windows summed to samples of SteadySample, judged by
// SteadyStretchesCounted with SteadyTol and SteadyZ over SteadySpan): all
// of them, or with lastOnly the windows of the last stretch.
func (a *analyzer) steadyWindows(idx []int, lastOnly bool) []int {
	k := a.sampleWindows()
	ok, dur, from := aggregate(a.s, idx, k)
	st := SteadyStretchesCounted(ok, dur, a.p.SteadyTol, a.p.SteadyZ, spanWindows(a.p.SteadySpan, time.Duration(k)*a.window))
	if lastOnly && len(st) > 0 {
		st = st[len(st)-1:]
	}
	var out []int
	for _, r := range st {
		end := len(idx)
		if r[1] < len(from) {
			end = from[r[1]]
		}
		out = append(out, idx[from[r[0]]:end]...)
	}
	return out
}

// sampleWindows is the number of windows summed into one sample of the
// steady-state test: SteadySample over the window length, at least 1.
func (a *analyzer) sampleWindows() int {
	if a.window <= 0 {
		return 1
	}
	return max(1, int((a.p.SteadySample+a.window/2)/a.window))
}

// refusedOf counts the operations of a window row that the database
// refused at once (unavailable, rejected, other errors): a part of it
// does not serve. Timeouts are left out (an operation started in an
// outage may time out after service is back) and so are conflicts (a
// transactional workload's aborts are no outage).
func refusedOf(r measure.WindowRow) int64 {
	return r.Errors[outcome.Unavailable] + r.Errors[outcome.Rejected] + r.Errors[outcome.Other]
}

// refusing reports whether window i refused at least DownFrac of its
// completions more than the baseline windows did.
func (a *analyzer) refusing(i int) bool {
	r := a.s[i].all
	refused := refusedOf(r)
	if refused == 0 {
		return false
	}
	return float64(refused)/float64(r.OK+refused) >= a.baseRefused+a.p.DownFrac
}

// impairedRun marks the windows of idx that served only a part: refusing
// windows in a run of at least SustainWindows consecutive refusing
// windows. A Redis Cluster master kill leaves a third of the slots
// without a master until the promotion: two thirds of the operations
// succeed (over the down threshold) and a third are refused, for
// seconds. A shorter run is the operations in flight on a killed node
// failing at once (a Cassandra coordinator), not a part of the data
// unserved.
func (a *analyzer) impairedRun(idx []int) map[int]bool {
	out := map[int]bool{}
	for k := 0; k < len(idx); {
		if !a.refusing(idx[k]) {
			k++
			continue
		}
		e := k
		for e < len(idx) && a.refusing(idx[e]) {
			e++
		}
		if e-k >= a.p.SustainWindows {
			for _, i := range idx[k:e] {
				out[i] = true
			}
		}
		k = e
	}
	return out
}

// availability is downtime, longest gap, failover and whether the span
// ends down, over windows idx of a span that starts at at. The failover's
// stretch starts at a down or impaired window and ends only at sustained
// service (SustainWindows consecutive windows neither down nor impaired);
// failOpen when that never came; partial when an impaired window (a part
// of the data unserved while the rest is served) lies in the stretch.
// Downtime counts down windows only.
func (a *analyzer) availability(idx []int, at time.Duration) (downMs, gapMs, failMs float64, downAtEnd, failOpen, partial bool) {
	thr := a.p.DownFrac * a.base
	var down, gap, cur time.Duration
	firstEnd := time.Duration(-1)
	sustained, up := false, 0
	impaired := a.impairedRun(idx)
	for k, i := range idx {
		s := a.s[i]
		if s.all.OK == 0 {
			cur += s.dur()
			gap = max(gap, cur)
		} else {
			cur = 0
		}
		isDown := tp(a.s, i) < thr
		if isDown {
			down += s.dur()
		}
		switch {
		case isDown || impaired[i]:
			if !sustained {
				firstEnd, up = s.end, 0
				partial = partial || !isDown
			}
		case firstEnd >= 0 && !sustained:
			if up++; up >= a.p.SustainWindows {
				sustained = true
			}
		}
		if k == len(idx)-1 {
			downAtEnd = isDown
		}
	}
	failOpen = firstEnd >= 0 && !sustained
	if exact, ok := a.exactGap(idx); ok {
		gap = exact
	}
	downMs, gapMs, failMs = ms(down), ms(gap), 0
	if firstEnd >= 0 {
		failMs = ms(max(0, firstEnd-at))
	}
	if a.base <= 0 {
		downMs, failMs, downAtEnd, failOpen, partial = -1, -1, false, false, false
	}
	return downMs, gapMs, failMs, downAtEnd, failOpen, partial
}

// exactGap is the longest interval without a successful completion that
// overlaps the windows idx: from the last success before them (or the
// first window's start, if there was none) through each success in them to
// the end of the last window, taken from the windows' first and last
// success times. Gaps inside one window are invisible, so it is exact for
// every gap at least one window long. ok is false when a window involved
// lacks those times (a windows.csv from before they were recorded); the
// caller then counts windows without a success instead.
func (a *analyzer) exactGap(idx []int) (gap time.Duration, ok bool) {
	if len(idx) == 0 {
		return 0, true
	}
	last := a.s[idx[0]].start
	for i := idx[0] - 1; i >= 0; i-- {
		if r := a.s[i].all; r.OK > 0 {
			if !r.OKTimes {
				return 0, false
			}
			last = r.LastOK
			break
		}
	}
	for _, i := range idx {
		r := a.s[i].all
		if r.OK == 0 {
			continue
		}
		if !r.OKTimes {
			return 0, false
		}
		gap = max(gap, r.FirstOK-last)
		last = max(last, r.LastOK)
	}
	return max(gap, a.s[idx[len(idx)-1]].end-last), true
}

// holdFrom returns the position k in idx of the first window from which
// ok holds for every window up to one ending at least hold after the
// window's start, all within idx. found is false when no such k exists.
func (a *analyzer) holdFrom(idx []int, ok func(i int) bool, hold time.Duration) (k int, found bool) {
	for k = 0; k < len(idx); {
		start := a.s[idx[k]].start
		j := k
		for ; j < len(idx) && ok(idx[j]); j++ {
			if a.s[idx[j]].end-start >= hold {
				return k, true
			}
		}
		k = j + 1
	}
	return 0, false
}

// settle finds when throughput over windows idx (a span starting at from)
// first stays within ±RecoverTol of the span's later steady level for Hold.
// It returns the time in ms (-1 if never), the level, the mean throughput
// from that moment to the span's end, and a reason when -1.
func (a *analyzer) settle(idx []int, from time.Duration, what string, last bool) (t, level, after float64, why string) {
	if len(idx) == 0 {
		return -1, 0, 0, what + ": no window in the span"
	}
	var note string
	if st := a.steadyWindows(idx, true); len(st) > 0 {
		level = meanOps(a.s, st)
	} else {
		level = a.base
		note = fmt.Sprintf("%s: no steady stretch in the span, measured against the baseline", what)
	}
	switch {
	case a.base > 0 && level < a.p.DownFrac*a.base:
		return -1, level, 0, joinNote(note, fmt.Sprintf("%s: throughput settled at %.0f ops/s, below %g%% of the baseline (still down)", what, level, a.p.DownFrac*100))
	case level <= 0:
		return -1, level, 0, joinNote(note, what+": no positive throughput level to reach")
	}
	tol := a.p.RecoverTol*level + relEps*level
	// Judge the band on throughput smoothed over Params.Smooth (centred,
	// within the span): a 100 ms window holds too few operations for a
	// ±10 % band to mean anything; downtime keeps the raw windows.
	raw := make([]float64, len(idx))
	pos := make(map[int]int, len(idx))
	for j, i := range idx {
		raw[j] = tp(a.s, i)
		pos[i] = j
	}
	sm := Smooth(raw, a.window, a.p.BandSmooth)
	k, found := a.holdFrom(idx, func(i int) bool { return math.Abs(sm[pos[i]]-level) <= tol }, a.p.Hold)
	if !found {
		end := "the next action"
		if last {
			end = "the run ended"
		}
		return -1, level, 0, joinNote(note, fmt.Sprintf("%s: throughput did not stay within ±%g%% of %.0f ops/s for %v before %s", what, a.p.RecoverTol*100, level, a.p.Hold, end))
	}
	k = rawCrossing(raw, k, level, tol, a.window, a.p.BandSmooth)
	return ms(max(0, a.s[idx[k]].start-from)), level, meanOps(a.s, idx[k:]), note
}

// rawCrossing moves k, the first window from which the smoothed throughput
// holds within level±tol, to the unsmoothed crossing: the smoothing only
// decides that the level holds. A centred moving average of width w
// enters the band up to w/2 late or early; so within w/2 of k, the
// crossing is the first of the raw windows in the band that run without a
// break up to k (or, when window k itself is outside the band, the first
// raw window after it that is inside). Without such a window (throughput
// too noisy for any single window to be in the band) k stays.
func rawCrossing(raw []float64, k int, level, tol float64, window, width time.Duration) int {
	half := 0
	if window > 0 && width > window {
		half = int(width/window) / 2
	}
	in := func(j int) bool { return math.Abs(raw[j]-level) <= tol }
	if half == 0 {
		return k
	}
	if in(k) {
		j := k
		for j > 0 && k-j < half && in(j-1) {
			j--
		}
		return j
	}
	for j := k + 1; j < len(raw) && j-k <= half; j++ {
		if in(j) {
			return j
		}
	}
	return k
}

// joinNote joins two notes with "; ", skipping empty ones.
func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "; " + b
}

// fault computes the metrics of one fault.
func (a *analyzer) fault(f Fault) FaultMetrics {
	op := a.p.LatencyOp
	m := FaultMetrics{Fault: f, DowntimeMs: -1, LongestGapMs: -1, FailoverMs: -1, RecoveryMs: -1,
		RecoveryAfterDowntimeMs: -1, RestoreDowntimeMs: -1, RestoreLongestGapMs: -1, StabiliseMs: -1,
		ReconfigurationMs: -1, ChangePct: map[string]float64{}}
	note := func(s string) {
		if s != "" {
			m.Notes = append(m.Notes, s)
		}
	}
	var before, during, after []int
	if f.RestoreOnly() {
		note("restore action without a matching earlier fault: only restore metrics apply")
	} else {
		end, last := a.next(f.At)
		during = a.span(f.At, end, false)
		before = a.span(a.prev(f.At), f.At, true)
		if f.At < a.runStart {
			note(fmt.Sprintf("fault at %v is before the measured run (starts at %v)", f.At, a.runStart))
		}
		if len(during) == 0 {
			note("no window in the fault span")
		} else {
			m.DowntimeMs, m.LongestGapMs, m.FailoverMs, m.DownAtSpanEnd, m.FailoverOpen, m.PartialOutage = a.availability(during, f.At)
			if m.PartialOutage {
				note(fmt.Sprintf("partial outage: after the fault some windows were served over the down threshold while %g %% or more of their operations were refused (a part of the data unserved); the failover ends when operations are no longer refused, sustained", a.p.DownFrac*100))
			}
			if a.base <= 0 {
				note("downtime and failover need a positive baseline")
			}
		}
		var why string
		m.RecoveryMs, m.LevelOps, m.NodeDownOps, why = a.settle(during, f.At, "recovery", last)
		note(why)
		if m.RecoveryMs >= 0 && m.FailoverMs >= 0 {
			m.RecoveryAfterDowntimeMs = max(0, m.RecoveryMs-m.FailoverMs)
		}
		a.reconfiguration(&m, before, during)
	}
	if f.Restored() && f.RestoreAt >= a.runEnd {
		note(fmt.Sprintf("restored at %v, after the last window: restore metrics not computed", f.RestoreAt))
	} else if f.Restored() {
		end, last := a.next(f.RestoreAt)
		after = a.span(f.RestoreAt, end, false)
		if len(after) == 0 {
			note("no window in the restore span")
		} else {
			m.RestoreDowntimeMs, m.RestoreLongestGapMs, _, _, _, _ = a.availability(after, f.RestoreAt)
		}
		var why string
		m.StabiliseMs, m.RestoreLevelOps, _, why = a.settle(after, f.RestoreAt, "stabilise", last)
		note(why)
	}
	m.Before, m.During, m.After = a.stats(before, op), a.stats(during, op), a.stats(after, op)
	pct := func(key string, now, then float64, nowN, thenN int64) {
		if nowN > 0 && thenN > 0 && then > 0 {
			m.ChangePct[key] = (now/then - 1) * 100
		}
	}
	b := m.Before
	for _, side := range []struct {
		name string
		st   LatencyStats
	}{{"during", m.During}, {"after", m.After}} {
		if side.st.DurationMs > 0 && b.DurationMs > 0 && b.Ops > 0 {
			m.ChangePct[side.name+"_ops_pct"] = (side.st.Ops/b.Ops - 1) * 100
		}
		pct(side.name+"_p50_pct", side.st.P50Us, b.P50Us, side.st.OKCount, b.OKCount)
		pct(side.name+"_p99_pct", side.st.P99Us, b.P99Us, side.st.OKCount, b.OKCount)
	}
	if m.RecoveryMs >= 0 && a.base > 0 {
		m.ChangePct["node_down_vs_baseline_pct"] = (m.NodeDownOps/a.base - 1) * 100
	}
	for _, name := range a.opNames() {
		if m.PerOp == nil {
			m.PerOp = map[string]OpLatency{}
		}
		m.PerOp[name] = OpLatency{Before: a.stats(before, name), During: a.stats(during, name),
			After: a.stats(after, name)}
	}
	return m
}

// reconfiguration fills the CumuloNimbo failure evaluation's metrics of m from the windows before
// and during the fault.
func (a *analyzer) reconfiguration(m *FaultMetrics, before, during []int) {
	op := a.p.LatencyOp
	ref := a.stats(before, op)
	m.PreFaultP99Us = ref.P99Us
	spanIdx, afterIdx := during, []int(nil)
	switch {
	case len(during) == 0:
	case ref.OKCount == 0 || ref.P99Us <= 0:
		m.Notes = append(m.Notes, "reconfiguration: no pre-fault latency to compare with")
	default:
		limit := a.p.LatencyFactor * ref.P99Us
		k, found := a.holdFrom(during, func(i int) bool {
			r, ok := a.s[i].row(op)
			return ok && r.OK > 0 && r.P99Us < limit
		}, a.p.Hold)
		if found {
			m.ReconfigurationMs = ms(max(0, a.s[during[k]].start-m.Fault.At))
			spanIdx, afterIdx = during[:k], during[k:]
		} else {
			m.Notes = append(m.Notes, fmt.Sprintf("reconfiguration: p99 did not stay under %gx the pre-fault p99 (%.0f µs) for %v within the fault span; peak and failed/aborted counts cover the whole span", a.p.LatencyFactor, ref.P99Us, a.p.Hold))
		}
	}
	var completions, unknown int64
	var okMax, failMax float64
	for _, i := range spanIdx {
		if r, ok := a.s[i].row(op); ok {
			okMax, failMax = math.Max(okMax, r.MaxUs), math.Max(failMax, r.FailMaxUs)
			completions += r.OK
			// a failure's duration is known from fail_max_us; rows of a
			// windows.csv written before the column have none
			if n := r.FailureCount(); n > 0 && r.FailMaxUs > 0 {
				completions += n
			} else {
				unknown += n
			}
		}
		m.FailedOps += a.s[i].all.FailureCount()
		m.AbortedOps += a.s[i].all.Errors[outcome.Conflict]
	}
	m.PeakLatencyMs, m.PeakCensored = math.Max(okMax, failMax)/1000, failMax > okMax
	if unknown > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("reconfiguration span: %d failed %s operations without a recorded duration (windows.csv without fail_max_us): the peak covers the successes only", unknown, op))
	}
	if len(spanIdx) > 0 && completions < int64(a.p.MinCompletions) {
		why := fmt.Sprintf("%d completions", completions)
		m.NotJudged = map[string]string{"peak_latency_ms": why, "failed_count": why, "aborted_count": why}
		m.Notes = append(m.Notes, fmt.Sprintf("reconfiguration span: %d %s completions (fewer than %d): peak latency and failed/aborted counts not judged", completions, op, a.p.MinCompletions))
	}
	if aft := a.stats(afterIdx, op); aft.OKCount > 0 && ref.OKCount > 0 && ref.MeanUs > 0 {
		v := (aft.MeanUs/ref.MeanUs - 1) * 100
		m.LatencyAfterVsBeforePct = &v
	}
}

// opNames lists the operations other than ALL, sorted.
func (a *analyzer) opNames() []string {
	set := map[string]bool{}
	for _, s := range a.s {
		for op := range s.ops {
			set[op] = true
		}
	}
	names := make([]string, 0, len(set))
	for op := range set {
		names = append(names, op)
	}
	sort.Strings(names)
	return names
}

// phases splits the run at every action time.
func (a *analyzer) phases(faults []Fault, finalFrom time.Duration) []PhaseStats {
	mk := func(name, kind string, from, to time.Duration, idx []int) PhaseStats {
		return PhaseStats{Name: name, Kind: kind, FromMs: ms(from), ToMs: ms(min(to, a.runEnd)), OfferedOps: a.p.OfferedOps,
			LatencyStats: a.stats(idx, measure.AllOps), ErrorsByClass: errorsByClass(a.s, idx)}
	}
	first := a.runEnd + 1
	if len(a.bounds) > 0 {
		first = a.bounds[0]
	}
	out := []PhaseStats{mk("before", "before", a.runStart, max(a.runStart, first), a.span(math.MinInt64, first, true))}
	for _, b := range a.bounds {
		var names []string
		injects, restores := 0, 0
		for _, f := range faults {
			if f.At == b && !f.RestoreOnly() {
				names = append(names, strings.TrimSpace(f.Action+" "+f.Node))
				injects++
			}
			if f.Restored() && f.RestoreAt == b {
				names = append(names, strings.TrimSpace(f.RestoreAction+" "+f.Node))
				restores++
			}
		}
		kind := "mixed"
		if restores == 0 {
			kind = "fault"
		} else if injects == 0 {
			kind = "restore"
		}
		end, _ := a.next(b)
		out = append(out, mk(strings.Join(names, " + "), kind, b, end, a.span(b, end, false)))
	}
	out = append(out, mk("final", "final", finalFrom, a.runEnd, a.span(finalFrom, a.runEnd+1, true)))
	return out
}

// validity marks the report invalid when the offered load was not met
// before the first fault, and noisy when the pre-fault span is unstable
// (docs/metrics.md, "Validity").
func (a *analyzer) validity(rep *Report) {
	first := a.preEnd()
	pre := a.span(math.MinInt64, first, true)
	if len(pre) == 0 {
		return
	}
	if a.p.OfferedOps > 0 {
		var done, late, dropped int64
		for _, i := range pre {
			r := a.s[i].all
			done += r.OK + r.ErrorCount()
			late += r.Behind
			dropped += r.Dropped
		}
		if due := done + dropped; due > 0 {
			if f := float64(late+dropped) / float64(due); f > a.p.MaxLateFrac {
				rep.InvalidReasons = append(rep.InvalidReasons, fmt.Sprintf("before the first fault %d of %d operations (%.1f %%) were behind schedule or dropped, more than %g %%: the offered load was not met",
					late+dropped, due, f*100, a.p.MaxLateFrac*100))
			}
		}
		if lim := (1 - a.p.MaxShortfall) * a.p.OfferedOps; a.base < lim {
			rep.InvalidReasons = append(rep.InvalidReasons, fmt.Sprintf("baseline %.0f ops/s is %.1f %% below the offered %.0f ops/s (more than %g %%)",
				a.base, (1-a.base/a.p.OfferedOps)*100, a.p.OfferedOps, a.p.MaxShortfall*100))
		}
		rep.Invalid = len(rep.InvalidReasons) > 0
	}
	if a.base > 0 {
		var n int
		var d time.Duration
		for _, i := range pre {
			if tp(a.s, i) < a.p.DownFrac*a.base {
				n++
				d += a.s[i].dur()
			}
		}
		if n > 0 {
			rep.NoisyReasons = append(rep.NoisyReasons, fmt.Sprintf("%d pre-fault windows (%v) under %g %% of the baseline: downtime-like dips before any fault", n, d, a.p.DownFrac*100))
		}
	}
	if cv, ok := excessCV(a.s, pre, a.sampleWindows()); ok && cv > a.p.NoisyCV {
		rep.NoisyReasons = append(rep.NoisyReasons, fmt.Sprintf("pre-fault throughput varies by %.1f %% (coefficient of variation of %v samples beyond sampling noise), more than %g %%", cv*100, a.p.SteadySample, a.p.NoisyCV*100))
	}
	rep.Noisy = len(rep.NoisyReasons) > 0
}

// excessCV is the coefficient of variation of the throughput of the
// windows idx summed to samples of k windows, beyond what the samples'
// operation counts explain: √max(0, var − mean σ_i²) / mean, σ_i the
// Poisson error √ok_i / d_i. ok is false with fewer than 3 samples or no
// throughput.
func excessCV(s []slot, idx []int, k int) (cv float64, ok bool) {
	cnt, dur, _ := aggregate(s, idx, k)
	if len(cnt) < 3 {
		return 0, false
	}
	var sum, sum2, noise float64
	for i := range cnt {
		sec := dur[i].Seconds()
		v := float64(cnt[i]) / sec
		sum += v
		sum2 += v * v
		noise += float64(cnt[i]) / (sec * sec)
	}
	n := float64(len(cnt))
	mean := sum / n
	if mean <= 0 {
		return 0, false
	}
	v := sum2/n - mean*mean - noise/n
	return math.Sqrt(max(0, v)) / mean, true
}
