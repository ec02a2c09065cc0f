package analyze

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/outcome"
)

const sec = time.Second

// point is what a synthetic run does at one instant.
type point struct {
	ops                   float64 // successful operations per second
	mean, p50, p99, maxUs float64 // latency, µs
	timeouts, conflicts   float64 // failed operations per second
}

// tick is the resolution at which gen integrates a profile.
const tick = 10 * time.Millisecond

// gen builds the ALL rows of a run of length end with windows of length
// window, warm-up until warmup. Counts integrate f over 10 ms ticks and are
// rounded; latencies are f at the window's midpoint.
func gen(window, end, warmup time.Duration, f func(t time.Duration) point) []measure.WindowRow {
	var rows []measure.WindowRow
	for i, s := 0, time.Duration(0); s < end; i, s = i+1, s+window {
		e := min(s+window, end)
		var ok, to, cf float64
		for t := s; t < e; t += tick {
			p := f(t)
			ok += p.ops * tick.Seconds()
			to += p.timeouts * tick.Seconds()
			cf += p.conflicts * tick.Seconds()
		}
		m := f(s + (e-s)/2)
		r := measure.WindowRow{Index: i, Start: s, End: e, Phase: measure.PhaseRun, Op: measure.AllOps,
			OK: int64(math.Round(ok)), MeanUs: m.mean, P50Us: m.p50, P90Us: m.p99, P95Us: m.p99,
			P99Us: m.p99, P999Us: m.maxUs, MaxUs: m.maxUs}
		r.Errors[outcome.Timeout] = int64(math.Round(to))
		r.Errors[outcome.Conflict] = int64(math.Round(cf))
		if r.FailureCount() > 0 {
			r.FailMaxUs = math.Max(m.maxUs, 1) // failures no slower than the successes
		}
		if s < warmup {
			r.Phase = measure.PhaseWarmup
		}
		rows = append(rows, r)
	}
	return rows
}

// in reports whether a <= t < b.
func in(t, a, b time.Duration) bool { return t >= a && t < b }

// failover is the reference scenario: warm-up 0-10 s at 800 ops/s, B = 1000
// ops/s until a kill at 30 s, zero throughput (with timeouts) for 1.5 s, a
// ramp 150..600 ops/s over 1 s, 700 ops/s while the node is down, restart at
// 60 s with a dip (40 ops/s for 0.5 s, 500 for 0.5 s), then 1000 until 90 s.
// p99 is 5 ms before the kill, 50 ms in the ramp, 12 ms until 34 s and 6 ms
// after; mean latency 2 ms before, 2.2 ms after 34 s. Conflicts: 30/s in
// 32-33 s (inside the reconfiguration) and 70/s in 35.0-35.1 s (outside).
func failover(t time.Duration) point {
	p := point{ops: 1000, mean: 2000, p50: 1500, p99: 5000, maxUs: 8000}
	switch {
	case t < 10*sec:
		p = point{ops: 800, mean: 9000, p50: 9000, p99: 9000, maxUs: 9000}
	case in(t, 30*sec, 31500*time.Millisecond):
		p = point{ops: 0, timeouts: 50}
	case in(t, 31500*time.Millisecond, 32500*time.Millisecond):
		step := int((t - 31500*time.Millisecond) / (100 * time.Millisecond))
		p = point{ops: 150 + 50*float64(step), mean: 20000, p50: 15000, p99: 50000, maxUs: 900000}
		if step == 0 {
			p.maxUs = 1500000
		}
	case in(t, 32500*time.Millisecond, 34*sec):
		p = point{ops: 700, mean: 3000, p50: 2000, p99: 12000, maxUs: 20000}
	case in(t, 34*sec, 60*sec):
		p = point{ops: 700, mean: 2200, p50: 1600, p99: 6000, maxUs: 9000}
	case in(t, 60*sec, 60500*time.Millisecond):
		p.ops = 40
	case in(t, 60500*time.Millisecond, 61*sec):
		p.ops = 500
	}
	if in(t, 32*sec, 33*sec) {
		p.conflicts = 30
	}
	if in(t, 35*sec, 35100*time.Millisecond) {
		p.conflicts = 70
	}
	return p
}

func killStart(kill, start time.Duration) []event.Event {
	evs := []event.Event{
		{T: 0, Kind: event.PhaseStart, Detail: "warmup"},
		{T: int64(kill), Kind: event.FaultInject, Node: "n1", Detail: "kill", Fault: "victim"},
		{T: int64(kill + 20*time.Millisecond), Kind: event.FaultInjected, Node: "n1", Detail: "kill", Fault: "victim"},
		{T: int64(kill + 30*time.Millisecond), Kind: event.NodeDown, Node: "n1"},
	}
	if start >= 0 {
		evs = append(evs, event.Event{T: int64(start), Kind: event.FaultRestore, Node: "n1", Detail: "start", Fault: "victim"})
	}
	return evs
}

func mustAnalyze(t *testing.T, rows []measure.WindowRow, evs []event.Event, p Params) *Report {
	t.Helper()
	r, err := Analyze(rows, evs, p)
	if err != nil {
		t.Fatalf("Analyze: %v", err)
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatalf("report does not marshal: %v", err)
	}
	return r
}

func eq(t *testing.T, name string, got, want float64) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", name, got, want)
	}
}

func near(t *testing.T, name string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %v, want %v", name, got, want)
	}
}

func hasNote(notes []string, sub string) bool {
	for _, n := range notes {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}

func TestFailoverScenario(t *testing.T) {
	type want struct {
		downtime, gap, failover, recovery, afterDown float64
		restoreDown, restoreGap, stabilise, reconf   float64
	}
	for _, tc := range []struct {
		name   string
		window time.Duration
		want   want
	}{
		// 100 ms: outage 30.0-31.5 → 15 windows down; first 700 window at 32.5;
		// p99 under 10 ms from 34.0; restart dip 60.0-60.5 below 100 ops/s.
		{"100ms windows", 100 * time.Millisecond, want{1500, 1500, 1500, 2500, 1000, 500, 0, 1000, 4000}},
		// 10 ms: same boundaries, ramp windows round to >= 200 ops/s; the
		// 40 ops/s dip rounds to 0.4 → 0 operations per window, a gap.
		{"10ms windows", 10 * time.Millisecond, want{1500, 1500, 1500, 2500, 1000, 500, 500, 1000, 4000}},
		// 1 s: [30,31) empty; [31,32) 125 ops/s (up); [32,33) 600 (outside
		// ±10 % of 700); [33,34) 700; restart window [60,61) 270 ops/s (up).
		{"1s windows", sec, want{1000, 1000, 1000, 3000, 2000, 0, 0, 1000, 4000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := gen(tc.window, 90*sec, 10*sec, failover)
			r := mustAnalyze(t, rows, killStart(30*sec, 60*sec), exactParams())
			eq(t, "BaselineOps", r.BaselineOps, 1000)
			if !r.BaselineSteady {
				t.Errorf("baseline not steady; notes %v", r.Notes)
			}
			eq(t, "BaselineFromMs", r.BaselineFromMs, 10000)
			eq(t, "BaselineToMs", r.BaselineToMs, 30000)
			eq(t, "FinalOps", r.FinalOps, 1000)
			eq(t, "WindowMs", r.WindowMs, ms(tc.window))
			if len(r.Faults) != 1 {
				t.Fatalf("got %d faults, want 1", len(r.Faults))
			}
			m := r.Faults[0]
			eq(t, "DowntimeMs", m.DowntimeMs, tc.want.downtime)
			eq(t, "LongestGapMs", m.LongestGapMs, tc.want.gap)
			eq(t, "FailoverMs", m.FailoverMs, tc.want.failover)
			eq(t, "RecoveryMs", m.RecoveryMs, tc.want.recovery)
			eq(t, "RecoveryAfterDowntimeMs", m.RecoveryAfterDowntimeMs, tc.want.afterDown)
			eq(t, "LevelOps", m.LevelOps, 700)
			eq(t, "NodeDownOps", m.NodeDownOps, 700)
			near(t, "node_down_vs_baseline_pct", m.ChangePct["node_down_vs_baseline_pct"], -30)
			eq(t, "RestoreDowntimeMs", m.RestoreDowntimeMs, tc.want.restoreDown)
			eq(t, "RestoreLongestGapMs", m.RestoreLongestGapMs, tc.want.restoreGap)
			eq(t, "StabiliseMs", m.StabiliseMs, tc.want.stabilise)
			eq(t, "RestoreLevelOps", m.RestoreLevelOps, 1000)
			eq(t, "ReconfigurationMs", m.ReconfigurationMs, tc.want.reconf)
			eq(t, "PreFaultP99Us", m.PreFaultP99Us, 5000)
			if m.DownAtSpanEnd {
				t.Error("DownAtSpanEnd set")
			}
			if len(m.Notes) != 0 {
				t.Errorf("unexpected notes %v", m.Notes)
			}
		})
	}
}

func TestReconfigurationSpan(t *testing.T) {
	r := mustAnalyze(t, gen(100*time.Millisecond, 90*sec, 10*sec, failover), killStart(30*sec, 60*sec), exactParams())
	m := r.Faults[0]
	t.Run("span ends when p99 stays under 2x pre-fault", func(t *testing.T) {
		eq(t, "ReconfigurationMs", m.ReconfigurationMs, 4000)
	})
	t.Run("peak latency is the max in the span", func(t *testing.T) {
		eq(t, "PeakLatencyMs", m.PeakLatencyMs, 1500)
	})
	t.Run("failed and aborted ops counted in the span only", func(t *testing.T) {
		// 15 outage windows x 5 timeouts + 10 windows x 3 conflicts; the 7
		// conflicts at 35 s are after the span.
		if m.FailedOps != 105 || m.AbortedOps != 30 {
			t.Errorf("failed, aborted = %d, %d, want 105, 30", m.FailedOps, m.AbortedOps)
		}
	})
	t.Run("latency after vs before", func(t *testing.T) {
		if m.LatencyAfterVsBeforePct == nil {
			t.Fatal("LatencyAfterVsBeforePct missing")
		}
		near(t, "LatencyAfterVsBeforePct", *m.LatencyAfterVsBeforePct, 10)
	})
	t.Run("before during after", func(t *testing.T) {
		eq(t, "Before.Ops", m.Before.Ops, 1000)
		eq(t, "Before.P99Us", m.Before.P99Us, 5000)
		eq(t, "Before.MeanUs", m.Before.MeanUs, 2000)
		near(t, "After.Ops", m.After.Ops, (0.5*40+0.5*500+29*1000)/30)
		eq(t, "After.MaxUs", m.After.MaxUs, 8000)
		eq(t, "During.MaxUs", m.During.MaxUs, 1500000)
		if m.During.ErrorCount != 75+30+7 {
			t.Errorf("During.ErrorCount = %d, want %d", m.During.ErrorCount, 75+30+7)
		}
		near(t, "during_p99_pct", m.ChangePct["during_p99_pct"], (m.During.P99Us/5000-1)*100)
		near(t, "after_ops_pct", m.ChangePct["after_ops_pct"], (m.After.Ops/1000-1)*100)
	})
	t.Run("factor changes the span", func(t *testing.T) {
		p := exactParams()
		p.LatencyFactor = 3 // 15 ms: the 12 ms stretch from 32.5 s is already under
		r := mustAnalyze(t, gen(100*time.Millisecond, 90*sec, 10*sec, failover), killStart(30*sec, 60*sec), p)
		eq(t, "ReconfigurationMs", r.Faults[0].ReconfigurationMs, 2500)
		if got := r.Faults[0].AbortedOps; got != 15 {
			t.Errorf("AbortedOps = %d, want 15 (32.0-32.5 s)", got)
		}
	})
	t.Run("never back under", func(t *testing.T) {
		p := exactParams()
		p.LatencyFactor = 1.1 // 5.5 ms: 6 ms is never under
		r := mustAnalyze(t, gen(100*time.Millisecond, 90*sec, 10*sec, failover), killStart(30*sec, 60*sec), p)
		m := r.Faults[0]
		eq(t, "ReconfigurationMs", m.ReconfigurationMs, -1)
		if m.LatencyAfterVsBeforePct != nil || !hasNote(m.Notes, "reconfiguration") {
			t.Errorf("want no latency change and a note, got %v %v", m.LatencyAfterVsBeforePct, m.Notes)
		}
		if m.AbortedOps != 37 {
			t.Errorf("AbortedOps = %d, want 37 (whole fault span)", m.AbortedOps)
		}
	})
}

func TestDownThreshold(t *testing.T) {
	// 1 s windows, B = 1000; three windows at level x after a kill at 30 s.
	for _, tc := range []struct {
		name     string
		level    float64
		downtime float64
	}{
		{"exactly 10% is up", 100, 0},
		{"just below 10% is down", 99, 3000},
		{"zero is down", 0, 3000},
		{"half is up", 500, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := gen(sec, 60*sec, 0, func(t time.Duration) point {
				p := point{ops: 1000, mean: 1000, p50: 1000, p99: 2000, maxUs: 3000}
				if in(t, 30*sec, 33*sec) {
					p.ops = tc.level
				}
				return p
			})
			r := mustAnalyze(t, rows, killStart(30*sec, -1), exactParams())
			m := r.Faults[0]
			eq(t, "DowntimeMs", m.DowntimeMs, tc.downtime)
			eq(t, "FailoverMs", m.FailoverMs, tc.downtime)
			eq(t, "RecoveryMs", m.RecoveryMs, 3000)
			eq(t, "NodeDownOps", m.NodeDownOps, 1000)
		})
	}
}

func TestDowntimeSumsStretches(t *testing.T) {
	// Two outages after one fault: 1 s and 0.5 s; failover ends with the first.
	rows := gen(100*time.Millisecond, 80*sec, 0, func(t time.Duration) point {
		p := point{ops: 1000, mean: 1000, p50: 1000, p99: 2000, maxUs: 3000}
		if in(t, 30*sec, 31*sec) || in(t, 40*sec, 40500*time.Millisecond) {
			p.ops = 0
		}
		return p
	})
	m := mustAnalyze(t, rows, killStart(30*sec, -1), exactParams()).Faults[0]
	eq(t, "DowntimeMs", m.DowntimeMs, 1500)
	eq(t, "FailoverMs", m.FailoverMs, 1000)
	eq(t, "LongestGapMs", m.LongestGapMs, 1000)
	// In band from 31 s, held 31-36 s before the second outage.
	eq(t, "RecoveryMs", m.RecoveryMs, 1000)
}

func TestRecoveryEdges(t *testing.T) {
	flat := func(t time.Duration) point { return point{ops: 1000, mean: 1000, p50: 1000, p99: 2000, maxUs: 3000} }
	t.Run("run ends before recovery", func(t *testing.T) {
		rows := gen(100*time.Millisecond, 35*sec, 0, func(t time.Duration) point {
			p := flat(t)
			if t >= 30*sec {
				p = point{}
			}
			return p
		})
		m := mustAnalyze(t, rows, killStart(30*sec, -1), exactParams()).Faults[0]
		eq(t, "RecoveryMs", m.RecoveryMs, -1)
		eq(t, "DowntimeMs", m.DowntimeMs, 5000)
		eq(t, "ReconfigurationMs", m.ReconfigurationMs, -1)
		if !m.DownAtSpanEnd || !hasNote(m.Notes, "run ended") {
			t.Errorf("DownAtSpanEnd %v, notes %v", m.DownAtSpanEnd, m.Notes)
		}
	})
	t.Run("stays down at zero", func(t *testing.T) {
		rows := gen(100*time.Millisecond, 60*sec, 0, func(t time.Duration) point {
			p := flat(t)
			if t >= 30*sec {
				p = point{}
			}
			return p
		})
		m := mustAnalyze(t, rows, killStart(30*sec, -1), exactParams()).Faults[0]
		eq(t, "RecoveryMs", m.RecoveryMs, -1)
		eq(t, "DowntimeMs", m.DowntimeMs, 30000)
		if !hasNote(m.Notes, "still down") {
			t.Errorf("notes %v", m.Notes)
		}
		if _, ok := m.ChangePct["node_down_vs_baseline_pct"]; ok {
			t.Error("node_down_vs_baseline_pct set without recovery")
		}
	})
	t.Run("short span measured against baseline", func(t *testing.T) {
		// pause at 30, 1 s outage, resume at 36: 6 s span, too short for a
		// 10 s steady span, so the level is B.
		rows := gen(100*time.Millisecond, 60*sec, 0, func(t time.Duration) point {
			p := flat(t)
			if in(t, 30*sec, 31*sec) {
				p = point{}
			}
			return p
		})
		evs := []event.Event{
			{T: int64(30 * sec), Kind: event.FaultInject, Node: "n2", Detail: "pause"},
			{T: int64(36 * sec), Kind: event.FaultRestore, Node: "n2", Detail: "resume"},
		}
		m := mustAnalyze(t, rows, evs, exactParams()).Faults[0]
		eq(t, "RecoveryMs", m.RecoveryMs, 1000)
		eq(t, "LevelOps", m.LevelOps, 1000)
		eq(t, "NodeDownOps", m.NodeDownOps, 1000)
		eq(t, "StabiliseMs", m.StabiliseMs, 0)
		if !hasNote(m.Notes, "baseline") {
			t.Errorf("want a note about the baseline level, got %v", m.Notes)
		}
	})
	t.Run("hold cut by the next action", func(t *testing.T) {
		// Back at 31 s but restored at 34 s: only 3 s to hold.
		rows := gen(100*time.Millisecond, 60*sec, 0, func(t time.Duration) point {
			p := flat(t)
			if in(t, 30*sec, 31*sec) {
				p = point{}
			}
			return p
		})
		m := mustAnalyze(t, rows, killStart(30*sec, 34*sec), exactParams()).Faults[0]
		eq(t, "RecoveryMs", m.RecoveryMs, -1)
		if !hasNote(m.Notes, "next action") {
			t.Errorf("notes %v", m.Notes)
		}
		eq(t, "StabiliseMs", m.StabiliseMs, 0)
	})
}

func TestRecoveryLevel(t *testing.T) {
	// 1 s windows, B = 1000, kill at 30 s, outage [30,31), then the profile.
	for _, tc := range []struct {
		name       string
		after      func(t time.Duration) float64
		kill       time.Duration
		level      float64
		recovery   float64
		downtime   float64
		failover   float64
		nodeDownOp float64
	}{
		{"band edge is inclusive (630 = 700-10%)", func(t time.Duration) float64 {
			if t < 32*sec {
				return 630
			}
			return 700
		}, 30 * sec, 700, 1000, 1000, 1000, (630 + 700*48) / 49.0},
		{"just outside the band", func(t time.Duration) float64 {
			if t < 32*sec {
				return 629
			}
			return 700
		}, 30 * sec, 700, 2000, 1000, 1000, 700},
		{"later level wins over an earlier one", func(t time.Duration) float64 {
			if t < 46*sec {
				return 600
			}
			return 800
		}, 30 * sec, 800, 16000, 1000, 1000, 800},
		// A fault in the middle of a window: [30,31) has its midpoint at
		// 30.5 s, so it belongs to the fault span; failover ends at 31 s.
		{"fault at a window midpoint", func(time.Duration) float64 { return 1000 }, 30500 * time.Millisecond, 1000, 500, 1000, 500, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := gen(sec, 80*sec, 0, func(t time.Duration) point {
				p := point{ops: 1000, mean: 1000, p50: 1000, p99: 2000, maxUs: 3000}
				switch {
				case in(t, 30*sec, 31*sec):
					p.ops = 0
				case t >= 31*sec:
					p.ops = tc.after(t)
				}
				return p
			})
			m := mustAnalyze(t, rows, killStart(tc.kill, -1), exactParams()).Faults[0]
			eq(t, "LevelOps", m.LevelOps, tc.level)
			eq(t, "RecoveryMs", m.RecoveryMs, tc.recovery)
			eq(t, "DowntimeMs", m.DowntimeMs, tc.downtime)
			eq(t, "FailoverMs", m.FailoverMs, tc.failover)
			near(t, "NodeDownOps", m.NodeDownOps, tc.nodeDownOp)
		})
	}
}

func TestNoFaults(t *testing.T) {
	rows := gen(100*time.Millisecond, 30*sec, 10*sec, failover)
	r := mustAnalyze(t, rows, nil, exactParams())
	if len(r.Faults) != 0 {
		t.Errorf("faults %v", r.Faults)
	}
	eq(t, "BaselineOps", r.BaselineOps, 1000)
	eq(t, "FinalOps", r.FinalOps, 1000)
	eq(t, "BaselineToMs", r.BaselineToMs, 30000)
	if len(r.Phases) != 2 || r.Phases[0].Kind != "before" || r.Phases[1].Kind != "final" {
		t.Errorf("phases %+v", r.Phases)
	}
	eq(t, "final phase from", r.Phases[1].FromMs, 26000)
}

func TestEdgeCases(t *testing.T) {
	flat := func(t time.Duration) point { return point{ops: 1000, mean: 1000, p50: 1000, p99: 2000, maxUs: 3000} }
	t.Run("fault in warm-up", func(t *testing.T) {
		rows := gen(100*time.Millisecond, 40*sec, 10*sec, flat)
		r := mustAnalyze(t, rows, killStart(5*sec, 8*sec), exactParams())
		eq(t, "BaselineOps", r.BaselineOps, 0)
		if r.BaselineSteady || !hasNote(r.Notes, "no baseline") {
			t.Errorf("steady %v notes %v", r.BaselineSteady, r.Notes)
		}
		m := r.Faults[0]
		eq(t, "DowntimeMs", m.DowntimeMs, -1)
		eq(t, "FailoverMs", m.FailoverMs, -1)
		eq(t, "ReconfigurationMs", m.ReconfigurationMs, -1)
		if !hasNote(m.Notes, "before the measured run") {
			t.Errorf("notes %v", m.Notes)
		}
		eq(t, "FinalOps", r.FinalOps, 1000)
	})
	t.Run("zero baseline", func(t *testing.T) {
		rows := gen(100*time.Millisecond, 40*sec, 0, func(time.Duration) point { return point{} })
		r := mustAnalyze(t, rows, killStart(20*sec, 30*sec), exactParams())
		eq(t, "BaselineOps", r.BaselineOps, 0)
		m := r.Faults[0]
		eq(t, "DowntimeMs", m.DowntimeMs, -1)
		eq(t, "RecoveryMs", m.RecoveryMs, -1)
		eq(t, "StabiliseMs", m.StabiliseMs, -1)
		eq(t, "LongestGapMs", m.LongestGapMs, 10000)
		if len(m.ChangePct) != 0 {
			t.Errorf("ChangePct %v", m.ChangePct)
		}
		if ms(m.Fault.RestoreAt) >= r.RunToMs {
			// the tables print "never" (report's results table) only for a restore inside the run
			t.Errorf("restore at %v not before the run's end %v ms", m.Fault.RestoreAt, r.RunToMs)
		}
	})
	t.Run("missing ALL rows", func(t *testing.T) {
		all := gen(100*time.Millisecond, 90*sec, 10*sec, failover)
		var ops []measure.WindowRow
		for _, a := range all {
			rd, up := a, a
			rd.Op, up.Op = "read", "update"
			rd.OK, up.OK = a.OK/2, a.OK-a.OK/2
			rd.Errors, up.Errors = [outcome.NumClasses]int64{}, a.Errors
			ops = append(ops, rd, up)
		}
		r := mustAnalyze(t, ops, killStart(30*sec, 60*sec), exactParams())
		if !hasNote(r.Notes, "no ALL row") {
			t.Errorf("notes %v", r.Notes)
		}
		eq(t, "BaselineOps", r.BaselineOps, 1000)
		m := r.Faults[0]
		eq(t, "DowntimeMs", m.DowntimeMs, 1500)
		eq(t, "RecoveryMs", m.RecoveryMs, 2500)
		eq(t, "ReconfigurationMs", m.ReconfigurationMs, 4000)
		if m.AbortedOps != 30 {
			t.Errorf("AbortedOps = %d", m.AbortedOps)
		}
		if len(m.PerOp) != 2 || m.PerOp["read"].Before.OKCount != 100*50*2 {
			t.Errorf("PerOp %+v", m.PerOp)
		}
	})
	t.Run("no windows", func(t *testing.T) {
		if _, err := Analyze(nil, nil, exactParams()); err == nil {
			t.Error("no error")
		}
	})
	t.Run("bad params", func(t *testing.T) {
		p := exactParams()
		p.DownFrac = 0
		if _, err := Analyze(gen(sec, 10*sec, 0, flat), nil, p); err == nil {
			t.Error("no error")
		}
	})
	t.Run("no run-phase windows", func(t *testing.T) {
		r := mustAnalyze(t, gen(sec, 20*sec, time.Hour, flat), nil, exactParams())
		eq(t, "BaselineOps", r.BaselineOps, 1000)
		if !hasNote(r.Notes, "no run-phase") {
			t.Errorf("notes %v", r.Notes)
		}
	})
	t.Run("short partial last window ignored", func(t *testing.T) {
		rows := gen(sec, 20*sec+200*time.Millisecond, 0, flat)
		rows[len(rows)-1].OK = 0
		r := mustAnalyze(t, rows, nil, exactParams())
		eq(t, "RunToMs", r.RunToMs, 20000)
		eq(t, "FinalOps", r.FinalOps, 1000)
	})
	t.Run("fault after the last window is left out", func(t *testing.T) {
		r := mustAnalyze(t, gen(sec, 20*sec, 0, flat), killStart(50*sec, -1), exactParams())
		if len(r.Faults) != 0 || !hasNote(r.Notes, "after the last window") {
			t.Errorf("faults %+v, notes %v", r.Faults, r.Notes)
		}
		eq(t, "BaselineOps", r.BaselineOps, 1000)
	})
	t.Run("restore after the last window counts as none", func(t *testing.T) {
		// kill at 10 s, 1 s outage; restore-all starts the node at 25 s,
		// after the run's end at 20 s.
		rows := gen(100*time.Millisecond, 20*sec, 0, func(t time.Duration) point {
			p := flat(t)
			if in(t, 10*sec, 11*sec) {
				p.ops = 0
			}
			return p
		})
		evs := killStart(10*sec, 25*sec)
		evs[len(evs)-1].Fault = "restore-all"
		r := mustAnalyze(t, rows, evs, exactParams())
		m := r.Faults[0]
		if m.Fault.RestoreAt != 25*sec {
			t.Errorf("RestoreAt %v", m.Fault.RestoreAt)
		}
		eq(t, "RecoveryMs", m.RecoveryMs, 1000)
		eq(t, "StabiliseMs", m.StabiliseMs, -1)
		eq(t, "RestoreDowntimeMs", m.RestoreDowntimeMs, -1)
		if !hasNote(m.Notes, "after the last window") || hasNote(m.Notes, "next action") {
			t.Errorf("notes %v", m.Notes)
		}
		if len(r.Phases) != 3 {
			t.Errorf("phases %+v", r.Phases)
		}
		if ms(m.Fault.RestoreAt) < r.RunToMs {
			// the tables print the restore metrics as "n/a" (report's results table)
			t.Errorf("restore at %v before the run's end %v ms", m.Fault.RestoreAt, r.RunToMs)
		}
	})
}

func TestLatencyOp(t *testing.T) {
	// read p99 is flat at 5 ms; update p99 stays at 12 ms until 36 s.
	all := gen(100*time.Millisecond, 90*sec, 10*sec, failover)
	rows := append([]measure.WindowRow(nil), all...)
	for _, a := range all {
		rd, up := a, a
		rd.Op, up.Op = "read", "update"
		rd.OK, up.OK = a.OK/2, a.OK-a.OK/2
		rd.P99Us = 5000
		if in(a.Start, 34*sec, 36*sec) {
			up.P99Us = 12000
		}
		rows = append(rows, rd, up)
	}
	for _, tc := range []struct {
		op     string
		reconf float64
	}{{measure.AllOps, 4000}, {"update", 6000}, {"read", 1500}} {
		t.Run(tc.op, func(t *testing.T) {
			p := exactParams()
			p.LatencyOp = tc.op
			m := mustAnalyze(t, rows, killStart(30*sec, 60*sec), p).Faults[0]
			eq(t, "ReconfigurationMs", m.ReconfigurationMs, tc.reconf)
		})
	}
	t.Run("unknown op", func(t *testing.T) {
		p := exactParams()
		p.LatencyOp = "scan"
		r := mustAnalyze(t, rows, killStart(30*sec, 60*sec), p)
		eq(t, "ReconfigurationMs", r.Faults[0].ReconfigurationMs, -1)
		if !hasNote(r.Notes, `"scan"`) {
			t.Errorf("notes %v", r.Notes)
		}
	})
}

func TestPhases(t *testing.T) {
	r := mustAnalyze(t, gen(100*time.Millisecond, 90*sec, 10*sec, failover), killStart(30*sec, 60*sec), exactParams())
	want := []struct {
		name, kind string
		from, to   float64
	}{{"before", "before", 10000, 30000}, {"kill n1", "fault", 30000, 60000}, {"start n1", "restore", 60000, 90000}, {"final", "final", 74000, 90000}}
	if len(r.Phases) != len(want) {
		t.Fatalf("phases %+v", r.Phases)
	}
	for i, w := range want {
		ph := r.Phases[i]
		if ph.Name != w.name || ph.Kind != w.kind || ph.FromMs != w.from || ph.ToMs != w.to {
			t.Errorf("phase %d = %s/%s %v-%v, want %+v", i, ph.Name, ph.Kind, ph.FromMs, ph.ToMs, w)
		}
	}
	eq(t, "before ops", r.Phases[0].Ops, 1000)
	if r.Phases[1].ErrorsByClass["timeout"] != 75 || r.Phases[1].ErrorsByClass["conflict"] != 37 {
		t.Errorf("fault phase errors %v", r.Phases[1].ErrorsByClass)
	}
	if r.Phases[0].OKCount != 20000 {
		t.Errorf("before ok %d", r.Phases[0].OKCount)
	}
}

// TestJSONUnits checks that every numeric value in the report's JSON sits
// under a key naming its unit.
func TestJSONUnits(t *testing.T) {
	r := mustAnalyze(t, gen(100*time.Millisecond, 90*sec, 10*sec, failover), killStart(30*sec, 60*sec), exactParams())
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	units := []string{"_ms", "_us", "_ops", "_count", "_pct"}
	unitKey := func(k string) bool {
		for _, u := range units {
			if strings.HasSuffix(k, u) || strings.Contains(k, u+"_") {
				return true
			}
		}
		return false
	}
	var walk func(path, key string, v any, inherited bool)
	walk = func(path, key string, v any, inherited bool) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				walk(path+"."+k, k, c, inherited || unitKey(key))
			}
		case []any:
			for _, c := range x {
				walk(path+"[]", key, c, inherited)
			}
		case float64:
			if !inherited && !unitKey(key) {
				t.Errorf("%s: number without a unit in its key", path)
			}
		}
	}
	walk("", "", v, false)
	for _, k := range []string{`"downtime_ms":1500`, `"recovery_ms":2500`, `"node_down_ops":700`, `"baseline_ops":1000`,
		`"aborted_count":30`, `"at_ms":30000`, `"restore_at_ms":60000`, `"stabilise_ms":1000`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("JSON lacks %s", k)
		}
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Faults[0].Fault != r.Faults[0].Fault {
		t.Errorf("fault round trip: %+v != %+v", back.Faults[0].Fault, r.Faults[0].Fault)
	}
}

func TestParams(t *testing.T) {
	if err := exactParams().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Params)
	}{
		{"DownFrac", func(p *Params) { p.DownFrac = 1 }},
		{"RecoverTol", func(p *Params) { p.RecoverTol = -0.1 }},
		{"SteadyTol", func(p *Params) { p.SteadyTol = math.NaN() }},
		{"Hold", func(p *Params) { p.Hold = 0 }},
		{"SteadySpan", func(p *Params) { p.SteadySpan = -sec }},
		{"SteadySample", func(p *Params) { p.SteadySample = 0 }},
		{"SteadyZ", func(p *Params) { p.SteadyZ = -1 }},
		{"LatencyFactor", func(p *Params) { p.LatencyFactor = 0.5 }},
		{"LatencyOp", func(p *Params) { p.LatencyOp = "" }},
		{"FinalFrac", func(p *Params) { p.FinalFrac = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := exactParams()
			tc.mod(&p)
			err := p.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.name) {
				t.Errorf("Validate() = %v, want an error naming %s", err, tc.name)
			}
		})
	}
}

func TestOverlappingFaults(t *testing.T) {
	rows := gen(sec, 80*sec, 0, func(time.Duration) point {
		return point{ops: 1000, mean: 1000, p50: 1000, p99: 2000, maxUs: 3000}
	})
	evs := []event.Event{
		{T: int64(20 * sec), Kind: event.FaultInject, Node: "n1", Detail: "kill"},
		{T: int64(20 * sec), Kind: event.FaultInject, Node: "n3", Detail: "kill"},
		{T: int64(40 * sec), Kind: event.FaultInject, Node: "n2", Detail: "pause"},
		{T: int64(50 * sec), Kind: event.FaultRestore, Node: "n2", Detail: "resume"},
		{T: int64(60 * sec), Kind: event.FaultRestore, Node: "n1", Detail: "start"},
	}
	r := mustAnalyze(t, rows, evs, exactParams())
	var names []string
	for _, ph := range r.Phases {
		names = append(names, fmt.Sprintf("%s/%s/%v-%v", ph.Name, ph.Kind, ph.FromMs, ph.ToMs))
	}
	want := "before/before/0-20000 kill n1 + kill n3/fault/20000-40000 pause n2/fault/40000-50000 " +
		"resume n2/restore/50000-60000 start n1/restore/60000-80000 final/final/64000-80000"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("phases\n%s\nwant\n%s", got, want)
	}
	if len(r.Faults) != 3 {
		t.Fatalf("faults %+v", r.Faults)
	}
	for i, w := range []struct{ during, after float64 }{{20000, 20000}, {20000, 0}, {10000, 10000}} {
		m := r.Faults[i]
		eq(t, fmt.Sprintf("fault %d During.DurationMs", i), m.During.DurationMs, w.during)
		eq(t, fmt.Sprintf("fault %d After.DurationMs", i), m.After.DurationMs, w.after)
		eq(t, fmt.Sprintf("fault %d RecoveryMs", i), m.RecoveryMs, 0)
		eq(t, fmt.Sprintf("fault %d DowntimeMs", i), m.DowntimeMs, 0)
	}
	// The pause's "before" is the kill's span, not the whole run.
	eq(t, "pause Before.DurationMs", r.Faults[2].Before.DurationMs, 20000)
	eq(t, "n3 StabiliseMs", r.Faults[1].StabiliseMs, -1)
}

// exactParams judges recovery on raw windows, so that the synthetic series
// of these tests give exact figures.
func exactParams() Params {
	p := DefaultParams()
	p.BandSmooth = 0
	p.SteadyZ = 0 // generated counts have no sampling noise: the bare ±2 % rule
	return p
}

// TestBandSmoothing: open-loop throughput in 100 ms windows is noisy
// (alternating ±15 % around its level); judged raw it never "stays within
// ±10 %", judged on the 1 s average it recovers right after the outage.
func TestBandSmoothing(t *testing.T) {
	const w = 100 * time.Millisecond
	var rows []measure.WindowRow
	for i := 0; i < 600; i++ {
		start := time.Duration(i) * w
		var ok int64 // 1000 ops/s on average
		if i%2 == 1 {
			ok = 70
		} else {
			ok = 130
		}
		if start >= 30*time.Second && start < 31*time.Second {
			ok = 0
		}
		rows = append(rows, measure.WindowRow{Index: i, Start: start, End: start + w, Phase: "run", Op: measure.AllOps, OK: ok, MeanUs: 1000, P50Us: 1000, P90Us: 1000, P95Us: 1000, P99Us: 1000, P999Us: 1000, MaxUs: 1000})
	}
	evs := killStart(30*time.Second, -1)
	raw := mustAnalyze(t, rows, evs, exactParams()).Faults[0]
	if raw.RecoveryMs != -1 {
		t.Errorf("raw windows: recovery %v, want never", raw.RecoveryMs)
	}
	sm := mustAnalyze(t, rows, evs, DefaultParams()).Faults[0]
	if sm.RecoveryMs < 1000 || sm.RecoveryMs > 2000 {
		t.Errorf("smoothed: recovery %v ms, want just after the 1 s outage", sm.RecoveryMs)
	}
	if sm.DowntimeMs != 1000 {
		t.Errorf("downtime %v, want 1000 (raw windows)", sm.DowntimeMs)
	}
}

// TestExactLongestGap: with the windows' first and last success times the
// longest gap is the real interval without a success, not a whole number of
// windows, and it counts from the last success before the fault; without
// them it falls back to counting empty windows.
func TestExactLongestGap(t *testing.T) {
	ms := time.Millisecond
	// 100 ms windows at 1000 ops/s; the last success before the outage
	// completes at 29.985 s, the kill is at 30 s, the first success after it
	// at 31.437 s: a gap of 1.452 s, of which 13 whole windows are empty.
	lastBefore, firstAfter := 29985*ms, 31437*ms
	withTimes := func(rows []measure.WindowRow) []measure.WindowRow {
		for i := range rows {
			r := &rows[i]
			r.OKTimes = true
			switch {
			case r.End <= 30*sec:
				r.FirstOK, r.LastOK = r.Start+ms, r.End-15*ms
			case r.Start >= 31400*ms:
				r.FirstOK, r.LastOK = r.Start+ms, r.End-ms
			}
			if r.Start == 31400*ms {
				r.FirstOK = firstAfter
			}
		}
		return rows
	}
	profile := func(t time.Duration) point {
		p := point{ops: 1000, mean: 1000, p50: 1000, p99: 2000, maxUs: 3000}
		if in(t, 30*sec, 31400*ms) {
			p.ops = 0
		}
		return p
	}
	tests := []struct {
		name  string
		times bool
		want  float64
	}{
		{"exact from success times", true, float64((firstAfter - lastBefore) / ms)},
		{"whole empty windows without them", false, 1400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rows := gen(100*ms, 60*sec, 0, profile)
			if tc.times {
				rows = withTimes(rows)
			}
			m := mustAnalyze(t, rows, killStart(30*sec, -1), exactParams()).Faults[0]
			eq(t, "LongestGapMs", m.LongestGapMs, tc.want)
			eq(t, "DowntimeMs", m.DowntimeMs, 1400)
		})
	}
}

// TestNotFound: a not-found answer (a read of a missing key) is neither a
// success nor a failure caused by the fault (docs/metrics.md, "Not found").
func TestNotFound(t *testing.T) {
	base := mustAnalyze(t, gen(100*time.Millisecond, 90*sec, 10*sec, failover), killStart(30*sec, 60*sec), exactParams())
	t.Run("no failure", func(t *testing.T) {
		rows := gen(100*time.Millisecond, 90*sec, 10*sec, failover)
		for i := range rows {
			rows[i].Errors[outcome.NotFound] = 4 // 40/s throughout, the outage included
		}
		r := mustAnalyze(t, rows, killStart(30*sec, 60*sec), exactParams())
		m, b := r.Faults[0], base.Faults[0]
		if m.FailedOps != b.FailedOps || m.During.ErrorCount != b.During.ErrorCount {
			t.Errorf("failed %d, during errors %d; want %d, %d as without not-found answers", m.FailedOps, m.During.ErrorCount, b.FailedOps, b.During.ErrorCount)
		}
		if m.During.NotFoundCount == 0 || m.Before.NotFoundCount == 0 {
			t.Errorf("not_found_count before %d, during %d: want them reported", m.Before.NotFoundCount, m.During.NotFoundCount)
		}
		eq(t, "DowntimeMs", m.DowntimeMs, b.DowntimeMs)
		eq(t, "Before.Ops", m.Before.Ops, b.Before.Ops)
		if got := r.Phases[0].ErrorsByClass["not_found"]; got == 0 {
			t.Errorf("phase %s errors_by_class_count[not_found] = 0", r.Phases[0].Name)
		}
	})
	t.Run("no success", func(t *testing.T) {
		// 40-45 s: every read misses; throughput is zero there
		rows := gen(100*time.Millisecond, 90*sec, 10*sec, failover)
		for i := range rows {
			if in(rows[i].Start, 40*sec, 45*sec) {
				rows[i].Errors[outcome.NotFound] = rows[i].OK
				rows[i].OK = 0
			}
		}
		r := mustAnalyze(t, rows, killStart(30*sec, 60*sec), exactParams())
		if got, was := r.Faults[0].DowntimeMs, base.Faults[0].DowntimeMs; got < was+5000 {
			t.Errorf("downtime %v ms, want at least %v (the 5 s of not-found answers are down)", got, was+5000)
		}
	})
}
