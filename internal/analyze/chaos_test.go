package analyze

import (
	"reflect"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/measure"
)

// chaosRun is a 200 s run at 1000 ops/s (p99 5 ms) with four cycles:
// a kill at 30 s (no success for 1.5 s, p99 50 ms for 1 s after), a pause
// and a kill together at 80 s (no success for 3 s, p99 50 ms for 2 s
// after), a kill at 130 s that costs nothing (900 ops/s), and a pause at
// 170 s (no success for 0.5 s).
func chaosRun() ([]measure.WindowRow, []event.Event) {
	rows := gen(100*time.Millisecond, 200*sec, 0, func(t time.Duration) point {
		p := point{ops: 1000, mean: 2000, p50: 1500, p99: 5000, maxUs: 8000}
		switch {
		case in(t, 30*sec, 31500*time.Millisecond), in(t, 80*sec, 83*sec), in(t, 170*sec, 170500*time.Millisecond):
			p = point{timeouts: 50}
		case in(t, 31500*time.Millisecond, 32500*time.Millisecond), in(t, 83*sec, 85*sec):
			p.p99 = 50000
		case in(t, 130*sec, 150*sec):
			p.ops = 900
		}
		return p
	})
	at := func(t time.Duration, kind, node, action, label string) event.Event {
		return event.Event{T: int64(t), Kind: kind, Node: node, Action: action, Detail: action + " " + node, Fault: label}
	}
	evs := []event.Event{
		at(30*sec, event.FaultInject, "n1", "kill", "chaos1.1"),
		at(50*sec, event.FaultRestore, "n1", "start", "chaos1.1"),
		at(80*sec, event.FaultInject, "n2", "pause", "chaos2.1"),
		at(80*sec+5*time.Millisecond, event.FaultInject, "n3", "kill", "chaos2.2"),
		at(95*sec, event.FaultRestore, "n2", "resume", "chaos2.1"),
		at(100*sec, event.FaultRestore, "n3", "start", "chaos2.2"),
		at(130*sec, event.FaultInject, "n1", "kill", "chaos3.1"),
		at(150*sec, event.FaultRestore, "n1", "start", "chaos3.1"),
		at(170*sec, event.FaultInject, "n2", "pause", "chaos4.1"),
		at(185*sec, event.FaultRestore, "n2", "resume", "chaos4.1"),
	}
	return rows, evs
}

func TestChaosAnalysis(t *testing.T) {
	rows, evs := chaosRun()
	p := DefaultParams()
	t.Run("off unless asked", func(t *testing.T) {
		if r := mustAnalyze(t, rows, evs, p); r.Chaos != nil {
			t.Fatalf("chaos analysis without Params.Chaos: %+v", r.Chaos)
		}
	})
	p.Chaos = true
	r := mustAnalyze(t, rows, evs, p).Chaos
	if r == nil {
		t.Fatal("no chaos analysis")
	}
	t.Run("faults that hold together are one cycle", func(t *testing.T) {
		var kinds [][]string
		for _, c := range r.Cycles {
			kinds = append(kinds, c.Kinds)
		}
		want := [][]string{{"kill"}, {"pause", "kill"}, {"kill"}, {"pause"}}
		if !reflect.DeepEqual(kinds, want) {
			t.Fatalf("cycles %v, want %v", kinds, want)
		}
		if c := r.Cycles[1]; c.AtMs != 80000 || c.HealedAtMs != 100000 || c.SpanToMs != 130000 {
			t.Errorf("cycle 2 %+v", c)
		}
	})
	t.Run("each cycle's figures", func(t *testing.T) {
		for i, want := range [][4]float64{{1500, 1500, 1500, 2500}, {3000, 3000, 3000, 5000}, {0, 0, 0, 0}, {500, 500, 500, 500}} {
			c := r.Cycles[i]
			got := [4]float64{c.DowntimeMs, c.LongestGapMs, c.FirstSuccessMs, c.LatencyBackMs}
			if got != want {
				t.Errorf("cycle %d: downtime, gap, first success, latency back = %v, want %v", i+1, got, want)
			}
		}
	})
	t.Run("per kind: every cycle the kind was in", func(t *testing.T) {
		k, ps := r.ByKind["kill"], r.ByKind["pause"]
		if k.Cycles != 3 || ps.Cycles != 2 || len(r.ByKind) != 2 {
			t.Fatalf("by kind %+v", r.ByKind)
		}
		eq(t, "kill downtime n", float64(k.DowntimeMs.N), 3)
		eq(t, "kill downtime mean", k.DowntimeMs.Mean, 1500)
		eq(t, "kill downtime max", k.DowntimeMs.Max, 3000)
		eq(t, "kill latency back p50", k.LatencyBackMs.P50, 2500)
		eq(t, "pause first success mean", ps.FirstSuccessMs.Mean, 1750)
		eq(t, "pause gap max", ps.LongestGapMs.Max, 3000)
		if k.DowntimeMs.CI95Low == nil || ps.DowntimeMs.CI95Low != nil {
			t.Errorf("intervals: kill (3 cycles) %v, pause (2) %v: want one from 3 cycles only", k.DowntimeMs.CI95Low, ps.DowntimeMs.CI95Low)
		}
	})
	t.Run("never reached counts apart", func(t *testing.T) {
		// the last cycle never recovers: no success after 170 s
		rows, evs := chaosRun()
		for i := range rows {
			if rows[i].Start >= 170*sec {
				rows[i].OK, rows[i].P99Us = 0, 0
			}
		}
		r := mustAnalyze(t, rows, evs, p).Chaos
		ps := r.ByKind["pause"]
		if ps.FirstSuccessMs.Never != 1 || ps.FirstSuccessMs.N != 1 || ps.LatencyBackMs.Never != 1 {
			t.Errorf("pause: first success %+v, latency back %+v: want the last cycle counted as never", ps.FirstSuccessMs, ps.LatencyBackMs)
		}
		if s := ps.FirstSuccessMs.String(); s != "mean 3000 p50 3000 p90 3000 max 3000 ms (n=1, 1 never)" {
			t.Errorf("String() = %q", s)
		}
	})
}
