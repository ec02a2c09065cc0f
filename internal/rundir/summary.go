package rundir

import (
	"encoding/json"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/check"
	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/fault/kind"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/outcome"
)

// Summary is summary.json of a load, run or scenario run directory: one
// type for every writer (experiment) and reader (report). Fields a form
// does not have are left out of the file (the scenario's name, cluster and
// checks for a load or run phase; the phase for a scenario). The Under
// Pressure Benchmark's summary.json is another document, upb.Summary,
// written and read by the upb package alone.
type Summary struct {
	Scenario    string  `json:"scenario,omitempty"`
	Target      string  `json:"target"`
	Phase       string  `json:"phase,omitempty"`
	Nodes       int     `json:"nodes,omitempty"`
	Replicas    int     `json:"replicas,omitempty"`
	RateSpec    string  `json:"rate,omitempty"`
	CapacityOps float64 `json:"calibrated_capacity_ops,omitempty"`
	TargetOps   float64 `json:"target_ops"`
	Threads     int     `json:"threads"`
	WindowMs    float64 `json:"window_ms"`
	WarmupMs    float64 `json:"warmup_ms"`
	DurationMs  float64 `json:"duration_ms,omitempty"`
	EndReason   string  `json:"end_reason"`
	Dropped     int64   `json:"dropped_ops_count"` // open loop: due before the end, never started
	Totals      Totals  `json:"totals"`
	// PerClient is every client group's throughput and latency percentiles
	// and their coefficients of variation (the scalability study's
	// per-client spread); nil for a load phase.
	PerClient  *analyze.ClientSpread `json:"per_client,omitempty"`
	Analysis   *analyze.Report       `json:"availability,omitempty"`
	LostWrites *check.Result         `json:"lost_writes,omitempty"`
	Errors     []string              `json:"errors,omitempty"`
	// ErrorSamples holds, per operation and error class, the text of the
	// first error of that kind: what the database said.
	ErrorSamples map[string]map[string]string `json:"error_samples,omitempty"`
	Checks       map[string]bool              `json:"checks_passed,omitempty"`
	// Verdicts are the history checkers' verdicts (isolation,
	// linearizable, bank, set; docs/checks.md), by checker name: each a
	// verdict.Verdict with valid true, false or "unknown".
	Verdicts    map[string]verdict.Verdict `json:"checks,omitempty"`
	Calibration *CalibrationInfo           `json:"calibration,omitempty"`
	// Failed says the run did not do what it was asked (a fault step that
	// failed, an interrupted run); Failures say what, one line each.
	Failed   bool     `json:"failed,omitempty"`
	Failures []string `json:"failures,omitempty"`
	// ChecksSkipped names the checks the scenario asked for that did not
	// run, with the reason (e.g. "lost-writes: interrupted").
	ChecksSkipped []string `json:"checks_skipped,omitempty"`
	// FaultKinds describes the fault kinds of the run's schedule that
	// kind.Builtin does not know (a kind registered by the caller), so that
	// a report re-rendered from the directory labels, colours and pairs
	// them; absent when every kind is built in.
	FaultKinds []kind.Description `json:"fault_kinds,omitempty"`
	// PeakRSSBytes is faultbench's own peak resident memory.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// Figures are a program workload's headline numbers (TPC-C: tpmC,
	// tpm), in its order; none for CoreWorkload.
	Figures []Figure `json:"workload_figures,omitempty"`
	// Sections are a program workload's own parts of summary.json, each
	// written under its top-level key (TPC-C: tpcc, docs/tpcc.md); a
	// reader that does not know the workload keeps them as they are.
	Sections map[string]json.RawMessage `json:"-"`
	// Trial is set in a trial's own run directory; Trials in the parent of
	// a run with trials (docs/output.md).
	Trial  *TrialInfo `json:"trial,omitempty"`
	Trials *Trials    `json:"trials,omitempty"`
}

// CalibrationInfo records a scenario's closed-loop capacity run.
type CalibrationInfo struct {
	Dir         string  `json:"dir"`
	DurationMs  float64 `json:"duration_ms"`
	Threads     int     `json:"threads"`
	CapacityOps float64 `json:"capacity_ops"`
	Percent     float64 `json:"percent"`
}

// OpStats is one operation type's totals in summary.json.
type OpStats struct {
	Count        int64            `json:"count"`
	OK           int64            `json:"ok"`
	Errors       map[string]int64 `json:"errors"`
	Behind       int64            `json:"behind_schedule"`
	ThroughputOp float64          `json:"throughput_ops"`
	Latency      Latency          `json:"latency_us"`
	Service      Latency          `json:"service_time_us"`
}

// Latency is a histogram's summary in microseconds.
type Latency struct {
	Mean  float64 `json:"mean"`
	Min   int64   `json:"min"`
	P50   int64   `json:"p50"`
	P90   int64   `json:"p90"`
	P95   int64   `json:"p95"`
	P99   int64   `json:"p99"`
	P999  int64   `json:"p99_9"`
	Max   int64   `json:"max"`
	Count int64   `json:"count"`
}

// LatencyOf summarises h (nil gives zeros).
func LatencyOf(h *hdrhistogram.Histogram) Latency {
	if h == nil || h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		Mean: h.Mean(), Min: h.Min(), Max: h.Max(), Count: h.TotalCount(),
		P50: h.ValueAtQuantile(50), P90: h.ValueAtQuantile(90), P95: h.ValueAtQuantile(95),
		P99: h.ValueAtQuantile(99), P999: h.ValueAtQuantile(99.9),
	}
}

// Totals is the measurement part of summary.json.
type Totals struct {
	RunTimeMs     float64            `json:"runtime_ms"`
	ThroughputOps float64            `json:"throughput_ops"`
	Operations    int64              `json:"operations"`
	OK            int64              `json:"ok"`
	Errors        map[string]int64   `json:"errors"`
	Behind        int64              `json:"behind_schedule"`
	PerOp         map[string]OpStats `json:"per_op"`
	All           OpStats            `json:"all"`
	// Dropped counts open-loop operations due in the measured windows that
	// never started (the run ended while the workers were behind).
	Dropped int64 `json:"dropped_ops_count"`
	// Cut counts, by class, the operations in flight at the deadline:
	// cancelled by it or completed after it, in no window.
	Cut map[string]int64 `json:"cut_ops_by_class_count,omitempty"`
	// WakeLag is the harness's own wake-up lag: how late, after their
	// intended start, open-loop workers that waited issued operations
	// (nil in closed loop, where nobody waits).
	WakeLag *Latency `json:"wake_lag_us,omitempty"`
}

// TotalsOf converts measure totals into summary form.
func TotalsOf(t *measure.Totals) Totals {
	secs := t.Duration.Seconds()
	conv := func(o measure.OpTotals) OpStats {
		s := OpStats{OK: o.OK, Behind: o.Behind, Errors: map[string]int64{},
			Latency: LatencyOf(o.Intended), Service: LatencyOf(o.Service)}
		s.Count = o.OK
		for _, c := range outcome.ErrorClasses() {
			s.Errors[c.String()] = o.Errors[c]
			s.Count += o.Errors[c]
		}
		if secs > 0 {
			s.ThroughputOp = float64(o.OK) / secs
		}
		return s
	}
	out := Totals{RunTimeMs: float64(t.Duration) / float64(time.Millisecond), PerOp: map[string]OpStats{}}
	for _, o := range t.Ops {
		s := conv(o)
		if s.Count > 0 {
			out.PerOp[o.Name] = s
		}
	}
	out.All = conv(t.All)
	out.Operations, out.OK, out.Errors, out.Behind = out.All.Count, out.All.OK, out.All.Errors, out.All.Behind
	out.Dropped = t.Dropped
	if t.All.Wake != nil && t.All.Wake.TotalCount() > 0 {
		l := LatencyOf(t.All.Wake)
		out.WakeLag = &l
	}
	for c, n := range t.Cut {
		if n > 0 {
			if out.Cut == nil {
				out.Cut = map[string]int64{}
			}
			out.Cut[outcome.Class(c).String()] = n
		}
	}
	if secs > 0 {
		out.ThroughputOps = float64(out.All.Count) / secs
	}
	return out
}
