package report

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/stats"
)

// trialMetric is a metric summarised over a scenario's trials: the value
// behind one row of metricRows (Row names it; TestTrialMetricsAreRows
// keeps the two lists together), as a number. A trial whose value is not
// a figure (n/a, never, still down at the span's end) has none: it is
// listed as missing, never counted as a number it is not.
type trialMetric struct {
	Key  string // summary.json's trials.metrics key; per-fault ones get "faultK_" in front
	Row  string // the label of the row in metricRows
	Unit string
	// Run draws a run-wide value; Fault a per-fault one (Restored: only
	// for a fault restored during the run; else only an injected fault).
	Run      func(s *source) (float64, bool)
	Fault    func(m analyze.FaultMetrics) (float64, bool)
	Restored bool
}

// trialMetrics lists the metrics of trials, in the order they are shown.
func trialMetrics() []trialMetric {
	lat := func(get func(l rundir.Latency) int64) func(s *source) (float64, bool) {
		return func(s *source) (float64, bool) {
			if s.Summary == nil || s.Summary.Totals.All.Latency.Count == 0 {
				return 0, false
			}
			return float64(get(s.Summary.Totals.All.Latency)) / 1000, true
		}
	}
	// figure is a duration metric: negative means n/a or never
	figure := func(v float64) (float64, bool) { return v, v >= 0 }
	return []trialMetric{
		{Key: "throughput_ops", Row: "throughput, successful", Unit: "ops/s", Run: func(s *source) (float64, bool) {
			return s.Summary.Totals.All.ThroughputOp, s.Summary != nil
		}},
		{Key: "failed_ops", Row: "failed operations", Run: func(s *source) (float64, bool) {
			return float64(s.Summary.Totals.Operations - s.Summary.Totals.OK), s.Summary != nil
		}},
		{Key: "p50_latency_ms", Row: "p50 latency", Unit: "ms", Run: lat(func(l rundir.Latency) int64 { return l.P50 })},
		{Key: "p99_latency_ms", Row: "p99 latency", Unit: "ms", Run: lat(func(l rundir.Latency) int64 { return l.P99 })},
		{Key: "max_latency_ms", Row: "max latency", Unit: "ms", Run: lat(func(l rundir.Latency) int64 { return l.Max })},
		{Key: "baseline_ops", Row: "baseline throughput", Unit: "ops/s", Run: func(s *source) (float64, bool) {
			if s.Analysis == nil {
				return 0, false
			}
			return s.Analysis.BaselineOps, true
		}},
		{Key: "downtime_ms", Row: "downtime", Unit: "ms", Fault: func(m analyze.FaultMetrics) (float64, bool) {
			return m.DowntimeMs, m.DowntimeMs >= 0 && !m.DownAtSpanEnd
		}},
		{Key: "longest_gap_ms", Row: "longest gap", Unit: "ms", Fault: func(m analyze.FaultMetrics) (float64, bool) { return figure(m.LongestGapMs) }},
		{Key: "failover_ms", Row: "failover time", Unit: "ms", Fault: func(m analyze.FaultMetrics) (float64, bool) {
			return m.FailoverMs, m.FailoverMs >= 0 && !m.FailoverOpen
		}},
		{Key: "recovery_ms", Row: "recovery time", Unit: "ms", Fault: func(m analyze.FaultMetrics) (float64, bool) { return figure(m.RecoveryMs) }},
		{Key: "reconfiguration_ms", Row: "reconfiguration time", Unit: "ms", Fault: func(m analyze.FaultMetrics) (float64, bool) { return figure(m.ReconfigurationMs) }},
		{Key: "peak_latency_ms", Row: "peak latency", Unit: "ms", Fault: func(m analyze.FaultMetrics) (float64, bool) { return m.PeakLatencyMs, true }},
		{Key: "failed_ops_reconfiguration", Row: "failed ops in reconfiguration", Fault: func(m analyze.FaultMetrics) (float64, bool) { return float64(m.FailedOps), true }},
		{Key: "restore_downtime_ms", Row: "restore downtime", Unit: "ms", Restored: true, Fault: func(m analyze.FaultMetrics) (float64, bool) { return figure(m.RestoreDowntimeMs) }},
		{Key: "stabilise_ms", Row: "time to stabilise on node up", Unit: "ms", Restored: true, Fault: func(m analyze.FaultMetrics) (float64, bool) { return figure(m.StabiliseMs) }},
	}
}

// faultKey is the key of metric key of the k-th (0-based) fault.
func faultKey(k int, key string) string { return "fault" + strconv.Itoa(k+1) + "_" + key }

// AggregateTrials summarises the trials' summaries (sums[i] is trial
// runs[i]'s; nil for a trial without one) into the trials section's
// metrics: per metric n, mean, p50, p90, max and the bootstrap 95 %
// interval (seeded with seed; not judged below stats.MinJudged values),
// each trial's value and the trials without one.
func AggregateTrials(runs []rundir.TrialRun, sums []*rundir.Summary, seed uint64) map[string]rundir.TrialMetric {
	out := map[string]rundir.TrialMetric{}
	nf := 0
	for _, s := range sums {
		if s != nil && s.Analysis != nil {
			nf = max(nf, len(s.Analysis.Faults))
		}
	}
	// value returns the trial's value, whether it has one, and whether the
	// metric applies to the trial at all (a per-fault metric of a fault
	// the trial did not have, or of a kind it does not apply to, does not)
	add := func(key, label, unit string, fault int, value func(s *source) (v float64, ok, applies bool)) {
		tm := rundir.TrialMetric{Label: label, Unit: unit, Fault: fault}
		var xs []float64
		anyApplies := false
		for i, r := range runs {
			var sum *rundir.Summary
			if i < len(sums) {
				sum = sums[i]
			}
			src := summarySource(sum)
			v, ok, applies := 0.0, false, false
			if sum != nil {
				v, ok, applies = value(&src)
			}
			anyApplies = anyApplies || applies
			if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
				tm.Missing = append(tm.Missing, r.K)
				continue
			}
			tm.Values = append(tm.Values, rundir.TrialValue{K: r.K, V: v})
			xs = append(xs, v)
		}
		if !anyApplies {
			return // e.g. a restore-only fault's inject metrics
		}
		if s, err := stats.Describe(xs, seed); err == nil {
			tm.Summary = s
		}
		out[key] = tm
	}
	for _, m := range trialMetrics() {
		if m.Run != nil {
			add(m.Key, m.Row, m.Unit, 0, func(s *source) (float64, bool, bool) {
				v, ok := m.Run(s)
				return v, ok, true
			})
			continue
		}
		for k := range nf {
			add(faultKey(k, m.Key), m.Row, m.Unit, k+1, func(s *source) (float64, bool, bool) {
				if s.Analysis == nil || k >= len(s.Analysis.Faults) {
					return 0, false, false
				}
				fm := s.Analysis.Faults[k]
				switch {
				case m.Restored && (!fm.Fault.Restored() || float64(fm.Fault.RestoreAt)/float64(time.Millisecond) >= s.Analysis.RunToMs):
					return 0, false, false
				case !m.Restored && fm.Fault.RestoreOnly():
					return 0, false, false
				}
				v, ok := m.Fault(fm)
				return v, ok, true
			})
		}
	}
	return out
}

// trialKeys returns the metric keys of t in the order trialMetrics lists
// them, faults in order.
func trialKeys(t *rundir.Trials) []string {
	order := map[string]int{}
	for i, m := range trialMetrics() {
		order[m.Key] = i
	}
	rank := func(key string) (int, int) {
		for k, i := range order {
			if key == k {
				return 0, i
			}
		}
		if rest, ok := strings.CutPrefix(key, "fault"); ok {
			num, name, _ := strings.Cut(rest, "_")
			f, _ := strconv.Atoi(num)
			return f, order[name]
		}
		return 1 << 20, 0
	}
	keys := make([]string, 0, len(t.Metrics))
	for k := range t.Metrics {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		fi, ri := rank(keys[i])
		fj, rj := rank(keys[j])
		if fi != fj {
			return fi < fj
		}
		if ri != rj {
			return ri < rj
		}
		return keys[i] < keys[j]
	})
	return keys
}

// metricTitle is a trial metric's label with its fault and unit.
func metricTitle(m rundir.TrialMetric) string {
	t := m.Label
	if m.Unit != "" {
		t += " (" + m.Unit + ")"
	}
	if m.Fault > 0 {
		t = fmt.Sprintf("fault %d: %s", m.Fault, t)
	}
	return t
}

// intervalText is a metric's mean with its 95 % interval, or the mean
// with "not judged (n trials)" when there are too few values.
func intervalText(m rundir.TrialMetric) string {
	if m.N == 0 {
		return notJudged("no trial has a value")
	}
	mean := trialNum(m.Mean)
	if !m.Judged() {
		return mean + ", interval " + notJudged(plural(m.N, "trial"))
	}
	return fmt.Sprintf("%s [%s, %s]", mean, trialNum(*m.CI95Low), trialNum(*m.CI95High))
}

// trialNum formats a metric's value with a precision that fits its size.
func trialNum(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return num(v, 0)
	case a >= 10:
		return num(v, 1)
	}
	return num(v, 2)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// WriteTrialsSummary prints the trials' results: one line per metric with
// its mean, 95 % interval, p50, p90, max and n, then where each trial is.
func WriteTrialsSummary(w io.Writer, t *rundir.Trials) {
	done := 0
	for _, r := range t.Runs {
		if !r.Failed {
			done++
		}
	}
	fmt.Fprintf(w, "\ntrials: %d of %d completed (seed %d, %s clusters); mean [95 %% interval], p50, p90, max, n:\n", done, len(t.Runs), t.Seed, t.Mode)
	keys := trialKeys(t)
	width := 0
	for _, k := range keys {
		width = max(width, len(metricTitle(t.Metrics[k])))
	}
	for _, k := range keys {
		m := t.Metrics[k]
		line := fmt.Sprintf("  %-*s  %s", width, metricTitle(m), intervalText(m))
		if m.N > 0 {
			line += fmt.Sprintf("; p50 %s, p90 %s, max %s; n=%d", trialNum(m.P50), trialNum(m.P90), trialNum(m.Max), m.N)
		}
		if len(m.Missing) > 0 {
			line += fmt.Sprintf("; no value in %s", trialList(m.Missing))
		}
		fmt.Fprintln(w, line)
	}
	for _, r := range t.Runs {
		status := ""
		if r.Failed {
			status = " FAILED: " + r.Error
		}
		fmt.Fprintf(w, "  trial %d: seed %d, %s%s\n", r.K, r.Seed, r.Dir, status)
	}
}

func trialList(ks []int) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = strconv.Itoa(k)
	}
	if len(ks) == 1 {
		return "trial " + parts[0]
	}
	return "trials " + strings.Join(parts, ", ")
}

// trialFaults is the number of faults the trials' per-fault metrics name.
func trialFaults(t *rundir.Trials) int {
	n := 0
	if t != nil {
		for _, m := range t.Metrics {
			n = max(n, m.Fault)
		}
	}
	return n
}

// trialCell is a metric over the trials as a results-table cell: the
// mean, its 95 % interval and n.
func trialCell(m rundir.TrialMetric) string {
	switch {
	case m.N == 0:
		return notJudged("no trial has a value")
	case !m.Judged():
		return fmt.Sprintf("%s (n=%d, interval %s)", trialNum(m.Mean), m.N, notJudged(plural(m.N, "trial")))
	}
	return fmt.Sprintf("%s [%s, %s] (n=%d)", trialNum(m.Mean), trialNum(*m.CI95Low), trialNum(*m.CI95High), m.N)
}

// trialRunCell draws a run-wide row's cell of the parent of a run with
// trials: the scenario's settings as they are, a metric of trials as its
// interval, anything else "-" (the parent has no totals of its own).
func trialRunCell(row metricRow, s *source) string {
	sum := s.Summary
	switch row.Label {
	case "kind":
		return fmt.Sprintf("scenario %s, %s", sum.Scenario, plural(len(s.Trials.Runs), "trial"))
	case "target", "threads", "window":
		return row.Cell(s)
	case "rate":
		if sum.RateSpec != "" {
			return sum.RateSpec
		}
		return "closed loop"
	}
	for _, m := range trialMetrics() {
		if m.Run != nil && m.Row == row.Label {
			if tm, ok := s.Trials.Metrics[m.Key]; ok {
				return trialCell(tm)
			}
		}
	}
	return "-"
}

// trialFaultCell draws a per-fault row's cell of the k-th (0-based) fault
// of the parent of a run with trials.
func trialFaultCell(row metricRow, s *source, k int) string {
	for _, m := range trialMetrics() {
		if m.Fault != nil && m.Row == row.Label {
			if tm, ok := s.Trials.Metrics[faultKey(k, m.Key)]; ok {
				return trialCell(tm)
			}
		}
	}
	return "-"
}

// trialFaultHeader names the k-th fault of the trials: what it did in
// each trial ("kill n2 | kill n3"), distinct values once.
func trialFaultHeader(s *source, k int) string {
	seen := map[string]bool{}
	var what []string
	for _, r := range s.Trials.Runs {
		if k < len(r.Victims) && !seen[r.Victims[k]] {
			seen[r.Victims[k]] = true
			what = append(what, r.Victims[k])
		}
	}
	if len(what) == 0 {
		return "-"
	}
	return strings.Join(what, " | ")
}

// sectionTrials is compare's section of the differences between runs
// with trials.
const sectionTrials = "trials: difference from the first run with trials"

// trialDifferences are compare's rows that say, per metric of trials,
// whether each run's values differ significantly from the first run with
// trials (stats.Compare: a permutation test at 5 % and the 95 %
// intervals, seeded with that run's seed); none with fewer than two such
// runs.
func trialDifferences(runs []source) []resultRow {
	ref := -1
	count := 0
	for i := range runs {
		if runs[i].Trials != nil {
			if ref < 0 {
				ref = i
			}
			count++
		}
	}
	if count < 2 {
		return nil
	}
	rt := runs[ref].Trials
	var out []resultRow
	for _, key := range trialKeys(rt) {
		base := rt.Metrics[key]
		row := resultRow{Section: sectionTrials, Label: metricTitle(base)}
		for i := range runs {
			t := runs[i].Trials
			var tm rundir.TrialMetric
			ok := t != nil
			if ok {
				tm, ok = t.Metrics[key]
			}
			switch {
			case i == ref:
				row.Cells = append(row.Cells, "reference")
			case !ok:
				row.Cells = append(row.Cells, "-")
			default:
				row.Cells = append(row.Cells, differenceText(trialValues(base), trialValues(tm), rt.Seed))
			}
		}
		out = append(out, row)
	}
	return out
}

func trialValues(m rundir.TrialMetric) []float64 {
	xs := make([]float64, len(m.Values))
	for i, v := range m.Values {
		xs[i] = v.V
	}
	return xs
}

// differenceText is the verdict on two samples of a metric.
func differenceText(a, b []float64, seed uint64) string {
	d := stats.Compare(a, b, seed)
	switch {
	case !d.Judged:
		return notJudged(fmt.Sprintf("n=%d and %d, need %d each", len(a), len(b), stats.MinJudged))
	case d.Significant:
		return fmt.Sprintf("significant (p=%.3f)", d.P)
	case d.Overlap && d.P >= stats.Alpha:
		return fmt.Sprintf("not significant (p=%.2f, intervals overlap)", d.P)
	case d.Overlap:
		return fmt.Sprintf("not significant (intervals overlap, p=%.3f)", d.P)
	}
	return fmt.Sprintf("not significant (p=%.2f)", d.P)
}
