package analyze

import (
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/outcome"
)

// TestPartialOutageFailover: the Redis Cluster master kill of the
// failover-compare trials (trial 1 of 2026-11-27 08:13, in 100 ms windows,
// per window: baseline 3,500 successes; the fault's window 306 successes
// and 166 refused; then 1.3 s at ~530 successes and ~230 refused — over
// the down threshold of 350, the killed master's third of the slots
// refused —, 0.8 s with no success, the promotion, service back). The
// old edge ended the failover after the first window (100 ms) although a
// third of the data was unserved until the promotion 2.2 s after the
// fault. Negative controls: the same throughput without refusals (a slow
// stretch, no partial outage) keeps the first stretch's end, and refusals
// at the baseline's own share do not make a window impaired, nor do
// fewer than SustainWindows refusing windows (operations in flight on a
// killed node failing at once).
func TestPartialOutageFailover(t *testing.T) {
	t.Run("in-flight operations failing at the kill are no partial outage", func(t *testing.T) {
		// a Cassandra coordinator killed: 3 windows with 30 % refused
		// (fewer than SustainWindows), never down
		rows := gen(100*time.Millisecond, 60*sec, 0, func(t time.Duration) point {
			return point{ops: 10000, mean: 1000, p50: 1000, p99: 2000, maxUs: 3000}
		})
		for i := range rows {
			if rows[i].Start >= 25*sec && rows[i].Start < 25300*time.Millisecond {
				rows[i].Errors[outcome.Unavailable] = 450
				rows[i].FailMaxUs = 3000
			}
		}
		m := mustAnalyze(t, rows, killStart(25*sec, -1), exactParams()).Faults[0]
		eq(t, "FailoverMs", m.FailoverMs, 0)
		if m.PartialOutage {
			t.Error("PartialOutage")
		}
	})
	const w = 100 * time.Millisecond
	type win struct{ ok, refused int64 }
	series := func(baseRefused, partialRefused int64) []win {
		var out []win
		for range 250 { // 25 s before the fault
			out = append(out, win{3500, baseRefused})
		}
		out = append(out, win{306, 166})
		for range 13 {
			out = append(out, win{530, partialRefused})
		}
		for range 8 {
			out = append(out, win{0, 230})
		}
		out = append(out, win{1298, 36})
		for len(out) < 600 {
			out = append(out, win{3500, baseRefused})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		wins     []win
		failover float64
		partial  bool
	}{
		{"a third of the slots refused: partial outage until the promotion", series(0, 230), 2200, true},
		{"the same throughput without refusals: the first stretch ends it", series(0, 0), 100, false},
		{"refusals at the baseline's own share: not impaired", series(700, 140), 100, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := gen(w, 60*sec, 0, func(time.Duration) point {
				return point{ops: 35000, mean: 1000, p50: 1000, p99: 2000, maxUs: 3000}
			})
			for i := range rows {
				rows[i].OK = tc.wins[i].ok
				rows[i].Errors[outcome.Unavailable] = tc.wins[i].refused
				if tc.wins[i].refused > 0 {
					rows[i].FailMaxUs = 3000
				}
			}
			m := mustAnalyze(t, rows, killStart(25*sec, -1), exactParams()).Faults[0]
			eq(t, "FailoverMs", m.FailoverMs, tc.failover)
			eq(t, "DowntimeMs", m.DowntimeMs, 900) // the down windows only, either way
			if m.PartialOutage != tc.partial || hasNote(m.Notes, "partial outage") != tc.partial {
				t.Errorf("PartialOutage = %v (notes %q), want %v", m.PartialOutage, m.Notes, tc.partial)
			}
			if m.FailoverOpen {
				t.Error("FailoverOpen")
			}
		})
	}
}
