package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/rundir"
)

// TestTrialMetricsAreRows: every trial metric is the number behind a row
// of the one list of metric rows, of the same kind (run-wide or per
// fault) and unit; a renamed or removed row fails here.
func TestTrialMetricsAreRows(t *testing.T) {
	rows := map[string]metricRow{}
	for _, r := range metricRows() {
		rows[r.Label] = r
	}
	seen := map[string]bool{}
	for _, m := range trialMetrics() {
		r, ok := rows[m.Row]
		switch {
		case !ok:
			t.Errorf("trial metric %s: no row %q in metricRows", m.Key, m.Row)
		case (m.Fault != nil) != (r.Fault != nil) || (m.Run != nil) == (m.Fault != nil):
			t.Errorf("trial metric %s: per-fault %v, its row %v", m.Key, m.Fault != nil, r.Fault != nil)
		case m.Unit != r.Unit:
			t.Errorf("trial metric %s: unit %q, its row %q", m.Key, m.Unit, r.Unit)
		}
		if seen[m.Key] {
			t.Errorf("key %s twice", m.Key)
		}
		seen[m.Key] = true
	}
}

// trialSums is three trials of the failover profile with throughputs 100,
// 110, 120 and downtimes 1000, 2000 and (still down at the span's end)
// 9000, and a failed fourth trial.
func trialSums() ([]rundir.TrialRun, []*rundir.Summary) {
	restored, _ := failoverReports()
	var runs []rundir.TrialRun
	var sums []*rundir.Summary
	for i, c := range []struct {
		ops, down float64
		stillDown bool
	}{{100, 1000, false}, {110, 2000, false}, {120, 9000, true}} {
		rep := *restored
		rep.Faults = append([]analyze.FaultMetrics(nil), restored.Faults...)
		rep.Faults[0].DowntimeMs, rep.Faults[0].DownAtSpanEnd = c.down, c.stillDown
		s := &rundir.Summary{Analysis: &rep}
		s.Totals.All.ThroughputOp = c.ops
		runs = append(runs, rundir.TrialRun{K: i + 1, Seed: uint64(i + 10), Dir: trialDir(i + 1)})
		sums = append(sums, s)
	}
	runs = append(runs, rundir.TrialRun{K: 4, Seed: 13, Dir: trialDir(4), Failed: true, Error: "boom"})
	sums = append(sums, nil)
	return runs, sums
}

func trialDir(k int) string { return "trial-0" + string(rune('0'+k)) }

func TestAggregateTrials(t *testing.T) {
	runs, sums := trialSums()
	ms := AggregateTrials(runs, sums, 1)
	tp := ms["throughput_ops"]
	if tp.N != 3 || tp.Mean != 110 || tp.P50 != 110 || tp.Max != 120 || !tp.Judged() || len(tp.Missing) != 1 || tp.Missing[0] != 4 {
		t.Fatalf("throughput: %+v", tp)
	}
	if *tp.CI95Low < 100 || *tp.CI95High > 120 || *tp.CI95Low >= *tp.CI95High {
		t.Errorf("throughput interval [%v, %v]", *tp.CI95Low, *tp.CI95High)
	}
	// the still-down trial has no downtime figure: it is missing, not 9000
	dt := ms["fault1_downtime_ms"]
	if dt.N != 2 || dt.Mean != 1500 || dt.Judged() || len(dt.Missing) != 2 || dt.Fault != 1 {
		t.Fatalf("downtime: %+v", dt)
	}
	if got := intervalText(dt); got != "1500, interval not judged (2 trials)" {
		t.Errorf("downtime interval text %q", got)
	}
	if _, ok := ms["fault2_downtime_ms"]; ok {
		t.Error("a metric of a fault no trial had")
	}
	// a metric that applies but no trial has: shown as not judged
	for i := range sums[:3] {
		sums[i].Analysis.Faults[0].RecoveryMs = -1
	}
	rec := AggregateTrials(runs, sums, 1)["fault1_recovery_ms"]
	if rec.N != 0 || len(rec.Missing) != 4 || intervalText(rec) != "not judged (no trial has a value)" {
		t.Errorf("recovery never: %+v %q", rec, intervalText(rec))
	}
	// seeded: the same seed, the same interval
	again := AggregateTrials(runs, sums, 1)["throughput_ops"]
	if *again.CI95Low != *tp.CI95Low || *again.CI95High != *tp.CI95High {
		t.Error("the same seed gave another interval")
	}
}

func TestTrialsOutputs(t *testing.T) {
	runs, sums := trialSums()
	sum := &rundir.Summary{Scenario: "s", Target: "etcd", Nodes: 3,
		Trials: &rundir.Trials{N: 4, Seed: 7, Mode: "fresh", Runs: runs, Metrics: AggregateTrials(runs, sums, 7), Resamples: 10000}}
	var b strings.Builder
	WriteTrialsSummary(&b, sum.Trials)
	out := b.String()
	for _, want := range []string{"trials: 3 of 4 completed (seed 7, fresh clusters)", "throughput, successful (ops/s)", "110 [", "fault 1: downtime (ms)", "1500, interval not judged (2 trials)", "no value in trials 3, 4", "trial 4: seed 13, trial-04 FAILED: boom"} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal lacks %q:\n%s", want, out)
		}
	}
	dir := t.TempDir()
	for _, r := range runs {
		if err := os.MkdirAll(filepath.Join(dir, r.Dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := rundir.WriteJSON(filepath.Join(dir, "summary.json"), sum); err != nil {
		t.Fatal(err)
	}
	o, err := Render(context.Background(), dir) // what `faultbench report DIR` does
	if err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(o.HTML)
	if err != nil {
		t.Fatal(err)
	}
	page := string(html)
	// a dot per trial with a value, linking to the trial's report
	if n := strings.Count(page, `<a href="trial-01/report.html">`); n < 2 {
		t.Errorf("trial 1 is linked %d times (its dots and its row)", n)
	}
	if strings.Contains(page, `<a href="trial-04/report.html">`+"\n<g") {
		t.Error("the failed trial has a dot")
	}
	for _, want := range []string{"<svg", "s: 4 trials", "not judged (2 trials)", "--trial K --seed 7", "failed: boom"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// writeTrialsDir writes the parent of a run with trials whose throughput
// trials are xs (and whose fault 1 downtimes are xs*10).
func writeTrialsDir(t *testing.T, dir string, seed uint64, xs ...float64) string {
	t.Helper()
	restored, _ := failoverReports()
	var runs []rundir.TrialRun
	var sums []*rundir.Summary
	for i, x := range xs {
		rep := *restored
		rep.Faults = append([]analyze.FaultMetrics(nil), restored.Faults...)
		rep.Faults[0].DowntimeMs = x * 10
		s := &rundir.Summary{Analysis: &rep}
		s.Totals.All.ThroughputOp = x
		runs = append(runs, rundir.TrialRun{K: i + 1, Seed: uint64(i), Dir: trialDir(i + 1), Victims: []string{"kill n" + string(rune('1'+i%3))}})
		sums = append(sums, s)
	}
	sum := &rundir.Summary{Scenario: "s", Target: "etcd", Nodes: 3, RateSpec: "75%", Threads: 4, WindowMs: 100,
		Trials: &rundir.Trials{N: len(xs), Seed: seed, Mode: "fresh", Runs: runs, Metrics: AggregateTrials(runs, sums, seed), Resamples: 10000}}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := rundir.WriteJSON(filepath.Join(dir, "summary.json"), sum); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCompareTrials: compare shows each metric of runs with trials as its
// interval and says, against the first, which differences are
// significant: clearly different trials are, trials of the same values
// are not, two trials are not judged (negative controls at fixed seeds).
func TestCompareTrials(t *testing.T) {
	d := t.TempDir()
	a := writeTrialsDir(t, filepath.Join(d, "a"), 1, 1000, 1010, 990, 1005, 995)
	b := writeTrialsDir(t, filepath.Join(d, "b"), 2, 2000, 2010, 1990, 2005, 1995)
	c := writeTrialsDir(t, filepath.Join(d, "c"), 3, 1003, 992, 1008, 998, 1001)
	two := writeTrialsDir(t, filepath.Join(d, "two"), 4, 3000, 3100)
	var out strings.Builder
	if err := Compare(context.Background(), &out, []string{a, b, c, two, runKillPause}, CompareOptions{Format: FormatText}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	t.Logf("\n%s", text)
	for _, want := range []string{
		"scenario s, 5 trials",
		"1000 [", "(n=5)", // the interval cell
		"3050 (n=2, interval not judged (2 trials))",
		"[" + sectionTrials + "]",
		"reference",
		"significant (p=0.0",  // b against a
		"not significant (p=", // c against a
		"not judged (n=5 and 2, need 3 each)",
		"kill n1 | kill n2 | kill n3", // what fault 1 was in the trials
	} {
		if !strings.Contains(text, want) {
			t.Errorf("compare lacks %q:\n%s", want, text)
		}
	}
	// the throughput difference row: reference, significant, not
	// significant, not judged, and "-" for the run without trials
	for _, l := range strings.Split(text, "\n") {
		if !strings.Contains(l, "throughput, successful (ops/s)") || !strings.Contains(l, "reference") {
			continue
		}
		i := strings.Index(l, "reference")
		rest := l[i:]
		sig := strings.Index(rest, " significant (p=")
		not := strings.Index(rest, "not significant")
		nj := strings.Index(rest, "not judged")
		if !(sig > 0 && not > sig && nj > not && strings.HasSuffix(strings.TrimSpace(rest), "-")) {
			t.Errorf("throughput difference row out of order: %q", l)
		}
	}
	// every format renders runs with trials beside a run with windows
	for _, f := range Formats() {
		var b strings.Builder
		if err := Compare(context.Background(), &b, []string{a, runKillPause}, CompareOptions{Format: f}); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
