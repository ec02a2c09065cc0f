package analyze

import (
	"testing"
	"time"
)

// TestFailoverEndsAtSustainedService: the postgres-ha case of issue 25 —
// down 30-32 s, one 100 ms window of backlog completions at 32.0 s, down
// again until 35 s, then served. The failover ends at 35 s, not on the
// blip; with SustainWindows 1 (a single window ends it, the old rule) it
// ends at 32 s. Service back for fewer windows than asked before the span
// ends leaves the failover open.
func TestFailoverEndsAtSustainedService(t *testing.T) {
	profile := func(backAt time.Duration) func(time.Duration) point {
		return func(t time.Duration) point {
			p := point{ops: 1000, mean: 1000, p50: 1000, p99: 2000, maxUs: 3000}
			switch {
			case in(t, 30*sec, 32*sec), in(t, 32100*time.Millisecond, backAt):
				p.ops = 0
			case in(t, 32*sec, 32100*time.Millisecond):
				p.ops = 2500 // 250 backlog completions in one window
			}
			return p
		}
	}
	for _, tc := range []struct {
		name     string
		backAt   time.Duration
		sustain  int
		failover float64
		open     bool
	}{
		{"a blip does not end it", 35 * sec, 5, 5000, false},
		{"one window ends it when asked to", 35 * sec, 1, 2000, false},
		{"served again 300 ms before the span ends: open", 59700 * time.Millisecond, 5, 29700, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := gen(100*time.Millisecond, 60*sec, 0, profile(tc.backAt))
			p := exactParams()
			p.SustainWindows = tc.sustain
			m := mustAnalyze(t, rows, killStart(30*sec, -1), p).Faults[0]
			eq(t, "FailoverMs", m.FailoverMs, tc.failover)
			if m.FailoverOpen != tc.open {
				t.Errorf("FailoverOpen = %v, want %v", m.FailoverOpen, tc.open)
			}
			eq(t, "DowntimeMs", m.DowntimeMs, ms(tc.backAt-30*sec-100*time.Millisecond))
		})
	}
}

// TestCensoredPeak: operations that time out carry no success latency; the
// peak of the reconfiguration span counts them at their duration
// (fail_max_us), so 10 s timeouts during an outage whose few successes took
// 40 ms give a peak of 10 s, marked censored. Without failures the peak is
// the successes' max.
func TestCensoredPeak(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failMax  float64
		peak     float64
		censored bool
	}{
		{"timeouts count at their duration", 10e6, 10000, true},
		{"failures faster than the successes", 1000, 40, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := gen(100*time.Millisecond, 60*sec, 0, func(t time.Duration) point {
				p := point{ops: 1000, mean: 1000, p50: 1000, p99: 2000, maxUs: 3000}
				if in(t, 30*sec, 40*sec) {
					p = point{ops: 10, mean: 30000, p50: 30000, p99: 40000, maxUs: 40000, timeouts: 50}
				}
				return p
			})
			for i := range rows {
				if rows[i].FailureCount() > 0 {
					rows[i].FailMaxUs = tc.failMax
				}
			}
			m := mustAnalyze(t, rows, killStart(30*sec, -1), exactParams()).Faults[0]
			eq(t, "PeakLatencyMs", m.PeakLatencyMs, tc.peak)
			if m.PeakCensored != tc.censored {
				t.Errorf("PeakCensored = %v, want %v", m.PeakCensored, tc.censored)
			}
			if got := m.During.FailedMaxUs; got != tc.failMax {
				t.Errorf("During.FailedMaxUs = %v, want %v", got, tc.failMax)
			}
		})
	}
}

// TestReconfigurationNotJudged: a reconfiguration span with fewer LatencyOp
// completions than MinCompletions (the postgres-ha whole-node case: 3
// New-Orders in 29 s) says why its peak and failed/aborted counts are not
// judged; enough completions are judged.
func TestReconfigurationNotJudged(t *testing.T) {
	for _, tc := range []struct {
		name   string
		during float64 // successes per second during the fault span
		want   string
	}{
		{"3 completions in the whole span", 0.1, "3 completions"},
		{"enough completions", 100, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := gen(sec, 60*sec, 0, func(t time.Duration) point {
				p := point{ops: 1000, mean: 1000, p50: 1000, p99: 2000, maxUs: 3000}
				if in(t, 30*sec, 60*sec) {
					p = point{ops: tc.during, mean: 25000, p50: 25000, p99: 25000, maxUs: 25000}
				}
				return p
			})
			if tc.during < 1 { // three New-Orders in 30 s
				for i := range rows {
					if rows[i].Start >= 30*sec {
						rows[i].OK = 0
						if rows[i].Start == 35*sec || rows[i].Start == 45*sec || rows[i].Start == 55*sec {
							rows[i].OK = 1
						}
					}
				}
			}
			m := mustAnalyze(t, rows, killStart(30*sec, -1), exactParams()).Faults[0]
			if got := m.NotJudged["peak_latency_ms"]; got != tc.want {
				t.Errorf(`NotJudged["peak_latency_ms"] = %q, want %q (notes %v)`, got, tc.want, m.Notes)
			}
			if tc.want != "" && (m.NotJudged["failed_count"] != tc.want || m.NotJudged["aborted_count"] != tc.want) {
				t.Errorf("NotJudged = %v, want the failed and aborted counts too", m.NotJudged)
			}
		})
	}
}
