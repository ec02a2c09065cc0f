package report

import (
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/rundir"
)

// resultsData is where the results pages (docs/results/*.md) keep the
// small inputs of the runs they quote: data/<page>/<run>/ with
// summary.json, windows.csv, events.jsonl (and dropped.csv, scenario.yaml
// and, where small enough, the intended-latency hist/*.hlog of the
// operations used).
const resultsData = "../../docs/results/data"

// TestResultsPagesInputs re-analyzes every complete committed input set
// of the results pages with today's analyzer and checks that the availability
// figures in its summary.json (the ones the pages quote) are what the
// analyzer computes now: a change of the analyzer that moves a published
// figure fails here, and the page must be re-measured or re-written.
func TestResultsPagesInputs(t *testing.T) {
	sums, err := filepath.Glob(filepath.Join(resultsData, "*", "*", "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) == 0 {
		t.Fatalf("no input sets under %s", resultsData)
	}
	for _, sumPath := range sums {
		dir := filepath.Dir(sumPath)
		name, _ := filepath.Rel(resultsData, dir)
		t.Run(name, func(t *testing.T) {
			var sum rundir.Summary
			b, err := os.ReadFile(sumPath)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &sum); err != nil {
				t.Fatalf("summary.json: %v", err)
			}
			if sum.Analysis == nil || !complete(dir) {
				// A sweep, UPB or distributed load summary has no
				// availability report, and a set without its dropped.csv
				// and scenario.yaml cannot be re-analyzed to the same
				// figures (dropped counts, analysis parameters): such a
				// set is only checked to decode.
				return
			}
			rows, err := measure.ReadWindows(filepath.Join(dir, measure.WindowsFile))
			if err != nil {
				t.Fatal(err)
			}
			evs, err := event.ReadFile(filepath.Join(dir, "events.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			params := scenarioParams(t, dir)
			params.OfferedOps = sum.TargetOps
			if hl, err := measure.ReadHistLogs(dir); err == nil {
				params.Hists = hl
			} else if !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
			got, err := analyze.Analyze(rows, evs, params)
			if err != nil {
				t.Fatal(err)
			}
			compareReports(t, sum.Analysis, got, params.Hists != nil)
		})
	}
}

// complete reports whether an input set has what a re-analysis needs
// beside summary.json, windows.csv and events.jsonl: dropped.csv (the
// dropped operations) and scenario.yaml (the analysis parameters).
func complete(dir string) bool {
	for _, f := range []string{"dropped.csv", "scenario.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return false
		}
	}
	return true
}

// scenarioParams returns the analysis parameters of the run's scenario.yaml
// (its analysis: section over the defaults), or the defaults without one.
func scenarioParams(t *testing.T, dir string) analyze.Params {
	t.Helper()
	p := analyze.DefaultParams()
	b, err := os.ReadFile(filepath.Join(dir, "scenario.yaml"))
	if errors.Is(err, fs.ErrNotExist) {
		return p
	}
	if err != nil {
		t.Fatal(err)
	}
	var sc struct {
		Analysis struct {
			DownFraction    float64 `yaml:"down_fraction"`
			RecoverTol      float64 `yaml:"recover_tolerance"`
			Hold            string  `yaml:"hold"`
			SteadyTolerance float64 `yaml:"steady_tolerance"`
			SteadySpan      string  `yaml:"steady_span"`
			LatencyOp       string  `yaml:"latency_op"`
		} `yaml:"analysis"`
	}
	if err := yaml.Unmarshal(b, &sc); err != nil {
		t.Fatalf("scenario.yaml: %v", err)
	}
	a := sc.Analysis
	set := func(dst *float64, v float64) {
		if v != 0 {
			*dst = v
		}
	}
	set(&p.DownFrac, a.DownFraction)
	set(&p.RecoverTol, a.RecoverTol)
	set(&p.SteadyTol, a.SteadyTolerance)
	for _, d := range []struct {
		dst *time.Duration
		s   string
	}{{&p.Hold, a.Hold}, {&p.SteadySpan, a.SteadySpan}} {
		if d.s == "" {
			continue
		}
		v, err := time.ParseDuration(d.s)
		if err != nil {
			t.Fatalf("scenario.yaml: %v", err)
		}
		*d.dst = v
	}
	if a.LatencyOp != "" {
		p.LatencyOp = a.LatencyOp
	}
	return p
}

// compareReports checks the figures the results pages quote; the span
// percentiles only when the input set has its histograms (exact: a page
// with windows of 100 ms keeps no hist/*.hlog where it is too big to
// commit). The reconfiguration time is always checked although it is
// measured against the exact pre-fault p99: a set whose reconfiguration
// time moves without its histograms must commit hist/all.hlog.
func compareReports(t *testing.T, want, got *analyze.Report, exact bool) {
	t.Helper()
	num := func(name string, w, g float64) {
		t.Helper()
		if math.Abs(w-g) > 1e-6*math.Max(1, math.Abs(w)) {
			hint := ""
			if !exact && strings.HasSuffix(name, "reconfiguration_ms") {
				hint = " (measured against the pre-fault p99, exact only from hist/*.hlog: commit the run's hist/all.hlog)"
			}
			t.Errorf("%s: summary.json %v, analyzer today %v%s", name, w, g, hint)
		}
	}
	num("baseline_ops", want.BaselineOps, got.BaselineOps)
	num("final_ops", want.FinalOps, got.FinalOps)
	num("dropped_count", float64(want.DroppedOps), float64(got.DroppedOps))
	if len(want.Faults) != len(got.Faults) {
		t.Fatalf("%d faults in summary.json, %d today", len(want.Faults), len(got.Faults))
	}
	for i := range want.Faults {
		w, g := want.Faults[i], got.Faults[i]
		f := w.Fault.Action + " " + w.Fault.Node + ": "
		num(f+"downtime_ms", w.DowntimeMs, g.DowntimeMs)
		num(f+"longest_gap_ms", w.LongestGapMs, g.LongestGapMs)
		num(f+"failover_ms", w.FailoverMs, g.FailoverMs)
		num(f+"recovery_ms", w.RecoveryMs, g.RecoveryMs)
		num(f+"node_down_ops", w.NodeDownOps, g.NodeDownOps)
		num(f+"restore_downtime_ms", w.RestoreDowntimeMs, g.RestoreDowntimeMs)
		num(f+"stabilise_ms", w.StabiliseMs, g.StabiliseMs)
		num(f+"reconfiguration_ms", w.ReconfigurationMs, g.ReconfigurationMs)
		num(f+"peak_latency_ms", w.PeakLatencyMs, g.PeakLatencyMs)
		num(f+"failed_count", float64(w.FailedOps), float64(g.FailedOps))
		num(f+"aborted_count", float64(w.AbortedOps), float64(g.AbortedOps))
		if exact {
			num(f+"during.p99_us", w.During.P99Us, g.During.P99Us)
		}
		if w.FailoverOpen != g.FailoverOpen || w.DownAtSpanEnd != g.DownAtSpanEnd {
			t.Errorf("%sstill-down flags: summary.json %v/%v, today %v/%v", f, w.FailoverOpen, w.DownAtSpanEnd, g.FailoverOpen, g.DownAtSpanEnd)
		}
	}
	if len(want.Elasticity) != len(got.Elasticity) {
		t.Fatalf("%d scaling actions in summary.json, %d today", len(want.Elasticity), len(got.Elasticity))
	}
	for i := range want.Elasticity {
		w, g := want.Elasticity[i], got.Elasticity[i]
		f := w.Detail + ": "
		num(f+"streaming_ms", w.StreamingMs, g.StreamingMs)
		if w.TransferMs != 0 { // absent from summaries written before the field existed
			num(f+"transfer_ms", w.TransferMs, g.TransferMs)
		}
		num(f+"stabilise_ms", w.StabiliseMs, g.StabiliseMs)
		num(f+"scaling_ms", w.ScalingMs, g.ScalingMs)
		num(f+"throughput_during_ops", w.ThroughputDuringOps, g.ThroughputDuringOps)
		if exact {
			num(f+"band_us", w.BandUs, g.BandUs)
			num(f+"during.p99_us", w.During.P99Us, g.During.P99Us)
		}
	}
}
