package report

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/rundir"
)

const sec = time.Second

// killFault is the fault of the analyzer's reference profile: kill n1 at
// 30 s, restored (start n1) at restoreAt (-1: never).
func killFault(restoreAt time.Duration) analyze.Fault {
	f := analyze.Fault{Action: "kill", Node: "n1", At: 30 * sec, RestoreAt: restoreAt}
	if restoreAt >= 0 {
		f.RestoreAction = "start"
	}
	return f
}

// failoverReports are the analyzer's figures for its reference failover
// profile (internal/analyze TestFailoverScenario: 1,000 ops/s, 1.5 s down,
// 700 ops/s while n1 is down) over 90 s, with the restore at 60 s and
// without one.
func failoverReports() (restoredRun, stayedDown *analyze.Report) {
	after := 10.0
	m := analyze.FaultMetrics{Fault: killFault(60 * sec), DowntimeMs: 1500, LongestGapMs: 1500, FailoverMs: 1500,
		RecoveryMs: 2500, RecoveryAfterDowntimeMs: 1000, NodeDownOps: 700,
		ChangePct:         map[string]float64{"node_down_vs_baseline_pct": -30},
		RestoreDowntimeMs: 500, StabiliseMs: 1000, ReconfigurationMs: 4000, PeakLatencyMs: 1500, AbortedOps: 30,
		LatencyAfterVsBeforePct: &after}
	restoredRun = &analyze.Report{BaselineOps: 1000, BaselineSteady: true, FinalOps: 1000, RunToMs: 90000, Faults: []analyze.FaultMetrics{m}}
	m.Fault = killFault(-1)
	m.RestoreDowntimeMs, m.StabiliseMs = -1, -1
	stayedDown = &analyze.Report{BaselineOps: 1000, BaselineSteady: true, FinalOps: 700, RunToMs: 90000, Faults: []analyze.FaultMetrics{m}}
	return restoredRun, stayedDown
}

// terminal is the terminal's results table of the reports (nil: a run
// without a summary).
func terminal(names []string, reps ...*analyze.Report) string {
	srcs := make([]source, len(reps))
	for i, r := range reps {
		if r != nil {
			srcs[i] = summarySource(&rundir.Summary{Analysis: r})
		}
	}
	return resultsText(metricRows(), names, srcs)
}

// TestResultsText is the results table printed at the end of a scenario.
func TestResultsText(t *testing.T) {
	rep, noRestore := failoverReports()
	out := terminal([]string{"etcd-75%", ""}, rep, noRestore, nil)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	cells := func(label string) []string {
		for _, l := range lines {
			if strings.HasPrefix(l, label+"  ") {
				return strings.Fields(l[len(label):])
			}
		}
		t.Fatalf("no row %q in\n%s", label, out)
		return nil
	}
	for _, tc := range []struct {
		row  string
		want []string
	}{
		{"metric", []string{"etcd-75%", "run", "2", "run", "3"}},
		{"baseline throughput (ops/s)", []string{"1000", "1000", "-"}},
		{"fault 1", []string{"kill", "n1", "@30.0s", "kill", "n1", "@30.0s", "-"}},
		{"  downtime (ms)", []string{"1500", "1500", "-"}},
		{"  failover time (ms)", []string{"1500", "1500", "-"}},
		{"  recovery time (ms)", []string{"2500", "2500", "-"}},
		{"  recovery after downtime (ms)", []string{"1000", "1000", "-"}},
		{"  node down throughput (ops/s)", []string{"700", "700", "-"}},
		{"  node down vs baseline (%)", []string{"-30.0", "-30.0", "-"}},
		{"  restore downtime (ms)", []string{"500", "n/a", "-"}},
		{"  time to stabilise on node up (ms)", []string{"1000", "n/a", "-"}},
		{"  reconfiguration time (ms)", []string{"4000", "4000", "-"}},
		{"  peak latency (ms)", []string{"1500.0", "1500.0", "-"}},
		{"  aborted ops in reconfiguration", []string{"30", "30", "-"}},
		{"  latency after vs before (%)", []string{"+10.0", "+10.0", "-"}},
		{"  dropped ops in fault span", []string{"0", "0", "-"}},
		{"final throughput (ops/s)", []string{"1000", "700", "-"}},
		{"final vs baseline (%)", []string{"+0.0", "-30.0", "-"}},
		{"offered load (ops/s)", []string{"closed", "loop", "closed", "loop", "-"}},
	} {
		t.Run(strings.TrimSpace(tc.row), func(t *testing.T) {
			got := cells(tc.row)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("row %q = %q, want %q", tc.row, got, tc.want)
			}
		})
	}
	t.Run("aligned", func(t *testing.T) {
		// Every column ends at the same offset on every line: the first
		// column's width is shared, right-aligned cells end together.
		var end int
		for i, l := range lines {
			if i == 0 {
				end = len(l)
				continue
			}
			if !strings.HasSuffix(l, "-") {
				t.Errorf("line %q does not end with the nil run's cell", l)
			}
			if len(l) != end {
				t.Errorf("line %d is %d bytes wide, header %d:\n%s", i, len(l), end, out)
			}
		}
	})
	t.Run("compare and report rows left out", func(t *testing.T) {
		for _, row := range []string{"throughput before / during / after", "span percentiles", "[availability]", "kind"} {
			if strings.Contains(out, row) {
				t.Errorf("the terminal shows %q:\n%s", row, out)
			}
		}
	})
	t.Run("no faults, no reports", func(t *testing.T) {
		if got := terminal(nil); got != "metric\nbaseline throughput (ops/s)\nfinal throughput (ops/s)\nfinal vs baseline (%)\noffered load (ops/s)\ndropped ops (never started)\n" {
			t.Errorf("empty table %q", got)
		}
	})
}

// TestResultsTextCells: the -1 conventions as the terminal prints them
// (the analyzer's figures of internal/analyze's "zero baseline", "missing
// ALL rows" and still-down cases).
func TestResultsTextCells(t *testing.T) {
	t.Run("never stabilised", func(t *testing.T) {
		// zero baseline: kill at 20 s, start at 30 s of 40 s; nothing recovers
		m := analyze.FaultMetrics{Fault: analyze.Fault{Action: "kill", Node: "n1", At: 20 * sec, RestoreAt: 30 * sec, RestoreAction: "start"},
			DowntimeMs: -1, RecoveryMs: -1, StabiliseMs: -1, ReconfigurationMs: -1, RecoveryAfterDowntimeMs: -1}
		out := terminal(nil, &analyze.Report{RunToMs: 40000, Faults: []analyze.FaultMetrics{m}})
		for _, re := range []string{`time to stabilise on node up \(ms\) +never\n`, `downtime \(ms\) +n/a\n`, `recovery time \(ms\) +not before restore\n`} {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("no %s in\n%s", re, out)
			}
		}
	})
	t.Run("restore after the last window", func(t *testing.T) {
		m := analyze.FaultMetrics{Fault: analyze.Fault{Action: "kill", Node: "n1", At: 10 * sec, RestoreAt: 25 * sec, RestoreAction: "start"},
			RecoveryMs: 1000, StabiliseMs: -1, RestoreDowntimeMs: -1}
		out := terminal(nil, &analyze.Report{RunToMs: 25000, Faults: []analyze.FaultMetrics{m}})
		if !regexp.MustCompile(`time to stabilise on node up \(ms\) +n/a\n`).MatchString(out) {
			t.Errorf("table:\n%s", out)
		}
	})
	t.Run("still down", func(t *testing.T) {
		m := analyze.FaultMetrics{Fault: killFault(-1), DowntimeMs: 60000, FailoverMs: 60000, DownAtSpanEnd: true, FailoverOpen: true, RecoveryMs: -1}
		if got := failoverCell(m); got != "60000+ (still down)" {
			t.Errorf("failover cell %q, want %q", got, "60000+ (still down)")
		}
		out := terminal(nil, &analyze.Report{RunToMs: 90000, Faults: []analyze.FaultMetrics{m}})
		if !regexp.MustCompile(`failover time \(ms\) +60000\+ \(still down\)\n`).MatchString(out) {
			t.Errorf("table:\n%s", out)
		}
	})
	t.Run("first outage ended", func(t *testing.T) {
		// a first outage that ended, then another that lasts to the span's
		// end: the downtime is marked still down, the failover is not
		m := analyze.FaultMetrics{Fault: killFault(-1), DowntimeMs: 11000, FailoverMs: 1000, DownAtSpanEnd: true}
		if got := failoverCell(m); got != "1000" {
			t.Errorf("failover cell %q, want 1000", got)
		}
		if got := downtimeCell(m); got != "11000+ (still down)" {
			t.Errorf("downtime cell %q, want 11000+ (still down)", got)
		}
	})
	t.Run("no elasticity table without scaling", func(t *testing.T) {
		if s := elasticityText("", &analyze.Report{}); s != "" {
			t.Errorf("table of a run without scaling = %q, want empty", s)
		}
	})
}

// TestRecoveryCell: a recovery that did not happen reads "never", unless the
// fault was restored first.
func TestRecoveryCell(t *testing.T) {
	tests := []struct {
		name string
		m    analyze.FaultMetrics
		v    float64
		want string
	}{
		{"recovered", analyze.FaultMetrics{Fault: analyze.Fault{RestoreAt: -1}}, 1234, "1234"},
		{"never, not restored", analyze.FaultMetrics{Fault: analyze.Fault{RestoreAt: -1}}, -1, "never"},
		{"restored first", analyze.FaultMetrics{Fault: analyze.Fault{RestoreAt: 5 * sec, RestoreAction: "start"}}, -1, "not before restore"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := recoveryCell(tc.m, tc.v); got != tc.want {
				t.Errorf("recoveryCell = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestMetricRows checks the list itself: every row draws its cells one
// way, has a known section and is shown somewhere.
func TestMetricRows(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range metricRows() {
		t.Run(m.Title(), func(t *testing.T) {
			if (m.Cell == nil) == (m.Fault == nil) {
				t.Errorf("exactly one of Cell and Fault must be set")
			}
			if !m.shownOn(onTerminal) && !m.shownOn(onCompare) && !m.shownOn(onHTML) {
				t.Errorf("section %q: shown nowhere", m.Section)
			}
			if k := m.Section + "/" + m.Title(); seen[k] {
				t.Errorf("defined twice")
			} else {
				seen[k] = true
			}
		})
	}
}
