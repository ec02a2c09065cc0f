package analyze

import (
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/measure"
)

// TestValidity: an open-loop run whose offered load was not met before the
// first fault is invalid, with the reason; one that met it, a closed loop,
// or a shortfall after the fault only, is not.
func TestValidity(t *testing.T) {
	w := 100 * time.Millisecond
	for _, tc := range []struct {
		name    string
		offered float64
		edit    func(r *measure.WindowRow)
		reason  string // "" = valid
	}{
		{"load met", 1000, nil, ""},
		{"closed loop", 0, func(r *measure.WindowRow) { r.Behind = r.OK }, ""},
		{"10 % behind schedule", 1000, func(r *measure.WindowRow) { r.Behind = r.OK / 10 }, "behind schedule or dropped"},
		{"dropped operations", 1000, func(r *measure.WindowRow) { r.Dropped = 10 }, "behind schedule or dropped"},
		{"4 % behind is within the bound", 1000, func(r *measure.WindowRow) { r.Behind = 4 }, ""},
		{"baseline 10 % below the offered rate", 1100, nil, "below the offered"},
		{"only after the fault", 1000, func(r *measure.WindowRow) {
			if r.Start >= 30*sec {
				r.Behind = r.OK
			}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := poissonRows(7, w, 60*sec, func(time.Duration) float64 { return 1000 })
			if tc.edit != nil {
				for i := range rows {
					tc.edit(&rows[i])
				}
			}
			p := DefaultParams()
			p.OfferedOps = tc.offered
			r := mustAnalyze(t, rows, killStart(30*sec, -1), p)
			got := strings.Join(r.InvalidReasons, "; ")
			if r.Invalid != (tc.reason != "") || !strings.Contains(got, tc.reason) {
				t.Errorf("Invalid = %v (%q), want reason %q", r.Invalid, got, tc.reason)
			}
		})
	}
}

// TestNoisy: a pre-fault span with windows under the downtime threshold,
// or whose 1 s throughput varies beyond its sampling noise, is noisy; a
// flat one with Poisson counts (the demo) is not.
func TestNoisy(t *testing.T) {
	w := 100 * time.Millisecond
	for _, tc := range []struct {
		name   string
		rate   func(time.Duration) float64
		reason string
	}{
		{"flat, Poisson counts", func(time.Duration) float64 { return 975 }, ""},
		{"dips before the fault", func(t time.Duration) float64 {
			if in(t, 12*sec, 12300*time.Millisecond) {
				return 0
			}
			return 975
		}, "under 10 % of the baseline"},
		{"1 s levels alternating ±20 %", func(t time.Duration) float64 {
			if int(t/sec)%2 == 0 {
				return 800
			}
			return 1200
		}, "coefficient of variation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := poissonRows(3, w, 60*sec, tc.rate)
			r := mustAnalyze(t, rows, killStart(30*sec, -1), DefaultParams())
			got := strings.Join(r.NoisyReasons, "; ")
			if r.Noisy != (tc.reason != "") || !strings.Contains(got, tc.reason) {
				t.Errorf("Noisy = %v (%q), want reason %q", r.Noisy, got, tc.reason)
			}
		})
	}
}

// TestValidityBeforeSpike: a load spike (Params.TriggerAt) ends the span
// the validity guard judges, as a fault does: the backlog the spike itself
// makes (every operation behind schedule from 20 s on, before the kill at
// 30 s) leaves the run valid with the trigger known, and invalid without
// it (the negative control: the guard would judge the spike's backlog).
func TestValidityBeforeSpike(t *testing.T) {
	w := 100 * time.Millisecond
	for _, tc := range []struct {
		name    string
		trigger time.Duration
		invalid bool
	}{
		{"spike known: judged before it", 20 * sec, false},
		{"spike unknown: its backlog judged", 0, true},
		{"trigger after the fault: the fault ends the span", 40 * sec, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := poissonRows(7, w, 60*sec, func(time.Duration) float64 { return 1000 })
			for i := range rows {
				if rows[i].Start >= 20*sec {
					rows[i].Behind = rows[i].OK
				}
			}
			p := DefaultParams()
			p.OfferedOps = 1000
			p.TriggerAt = tc.trigger
			r := mustAnalyze(t, rows, killStart(30*sec, -1), p)
			if r.Invalid != tc.invalid {
				t.Errorf("Invalid = %v (%q), want %v", r.Invalid, strings.Join(r.InvalidReasons, "; "), tc.invalid)
			}
		})
	}
}
