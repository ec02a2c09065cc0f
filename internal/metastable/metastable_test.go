package metastable

import (
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/outcome"
)

// series makes 1 s run windows from per-window (ok, p99 ms, retries).
func series(ws ...[3]float64) []measure.WindowRow {
	var rows []measure.WindowRow
	for i, w := range ws {
		s := time.Duration(i) * time.Second
		base := measure.WindowRow{Index: i, Start: s, End: s + time.Second, Phase: measure.PhaseRun}
		all := base
		all.Op, all.OK, all.P99Us = measure.AllOps, int64(w[0]), w[1]*1000
		rows = append(rows, all)
		if w[2] > 0 {
			r := base
			r.Op = measure.RetryOp
			r.Errors[outcome.Timeout] = int64(w[2])
			rows = append(rows, r)
		}
	}
	return rows
}

// w: a window; n: n copies.
func rep(n int, w [3]float64) [][3]float64 {
	out := make([][3]float64, n)
	for i := range out {
		out[i] = w
	}
	return out
}

func cat(parts ...[][3]float64) []measure.WindowRow {
	var all [][3]float64
	for _, p := range parts {
		all = append(all, p...)
	}
	return series(all...)
}

func TestJudge(t *testing.T) {
	healthy := [3]float64{1000, 2, 0}
	trig := Trigger{Kind: "pause", Start: 5 * time.Second, End: 7 * time.Second}
	tests := []struct {
		name    string
		rows    []measure.WindowRow
		trig    Trigger
		want    string
		wantTTR float64 // ms, when recovered
	}{
		{"recovers at once", cat(rep(5, healthy), rep(2, [3]float64{0, 0, 0}), rep(10, healthy)), trig, Recovered, 0},
		{"recovers after a backlog of 3 s", cat(rep(5, healthy), rep(2, [3]float64{0, 0, 0}),
			rep(3, [3]float64{1500, 900, 0}), rep(7, healthy)), trig, Recovered, 3000},
		{"goodput back but latency 10x until the end: metastable", cat(rep(5, healthy), rep(2, [3]float64{0, 0, 0}),
			rep(10, [3]float64{1000, 20, 0})), trig, Metastable, 0},
		{"a retry storm: goodput at 40 % until the end: metastable", cat(rep(5, healthy), rep(2, [3]float64{0, 0, 0}),
			rep(10, [3]float64{400, 3, 2000})), trig, Metastable, 0},
		{"recovered for 2 windows then degraded again: the hold is 3", cat(rep(5, healthy), rep(2, [3]float64{0, 0, 0}),
			rep(2, healthy), rep(8, [3]float64{100, 50, 0})), trig, Metastable, 0},
		{"within 10 %: 910 ops/s is recovered", cat(rep(5, healthy), rep(2, [3]float64{0, 0, 0}), rep(5, [3]float64{910, 2, 0})), trig, Recovered, 0},
		{"no window before the trigger", cat(rep(2, [3]float64{0, 0, 0}), rep(10, healthy)), Trigger{Start: 0, End: 2 * time.Second}, Unknown, 0},
		{"the run ends before a hold after the trigger", cat(rep(5, healthy), rep(2, [3]float64{0, 0, 0}), rep(2, healthy)), trig, Unknown, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(tc.rows, tc.trig, Params{})
			if v.Verdict != tc.want {
				t.Fatalf("verdict %s (%s), want %s", v.Verdict, v.Reason, tc.want)
			}
			if tc.want == Recovered && (v.TimeToRecoverMs == nil || *v.TimeToRecoverMs != tc.wantTTR) {
				t.Errorf("time to recover %v, want %g ms", v.TimeToRecoverMs, tc.wantTTR)
			}
			if tc.want != Recovered && v.TimeToRecoverMs != nil {
				t.Errorf("time to recover set on %s", v.Verdict)
			}
			if v.Reason == "" {
				t.Error("no reason")
			}
		})
	}
}

func TestJudgeFigures(t *testing.T) {
	rows := cat(rep(5, [3]float64{1000, 2, 10}), rep(2, [3]float64{0, 0, 0}), rep(10, [3]float64{400, 3, 2000}))
	v := Judge(rows, Trigger{Start: 5 * time.Second, End: 7 * time.Second}, Params{})
	if v.BaselineGoodputOps != 1000 || v.BaselineP99Us != 2000 || v.LatencyTargetUs != 6000 || v.GoodputFloorOps != 900 {
		t.Errorf("baseline %g ops/s, p99 %g µs, target %g µs, floor %g: want 1000, 2000, 6000, 900", v.BaselineGoodputOps, v.BaselineP99Us, v.LatencyTargetUs, v.GoodputFloorOps)
	}
	if v.RetriesBeforeOps != 10 || v.RetriesAfterOps != 2000 {
		t.Errorf("retries %g/s before, %g/s after; want 10, 2000", v.RetriesBeforeOps, v.RetriesAfterOps)
	}
	if v.FinalGoodputOps != 400 || v.DegradedWindows != 10 || v.AfterWindows != 10 {
		t.Errorf("final %g ops/s, degraded %d of %d", v.FinalGoodputOps, v.DegradedWindows, v.AfterWindows)
	}
	// an absolute target
	v = Judge(rows, Trigger{Start: 5 * time.Second, End: 7 * time.Second}, Params{LatencyTarget: 50 * time.Millisecond, GoodputTol: 0.7})
	if v.Verdict != Recovered {
		t.Errorf("with 70 %% tolerance and a 50 ms target: %s (%s)", v.Verdict, v.Reason)
	}
}

func TestTriggerFrom(t *testing.T) {
	s := time.Second
	evs := []event.Event{
		{T: int64(10 * s), Kind: event.FaultInject, Action: "pause", Detail: "pause leader"},
		{T: int64(10*s + 1), Kind: event.FaultInjected},
		{T: int64(12 * s), Kind: event.FaultRestore, Action: "resume"},
		{T: int64(13 * s), Kind: event.FaultRestored},
		{T: int64(14 * s), Kind: event.NodeUp},
	}
	for _, tc := range []struct {
		name       string
		at, dur    time.Duration
		factor     float64
		evs        []event.Event
		ok         bool
		kind       string
		start, end time.Duration
	}{
		{"none", 0, 0, 1, nil, false, "", 0, 0},
		{"spike", 15 * s, 5 * s, 3, nil, true, "spike", 15 * s, 20 * s},
		{"factor 1 is no spike", 15 * s, 5 * s, 1, nil, false, "", 0, 0},
		{"pause until the node serves again", 0, 0, 1, evs, true, "pause", 10 * s, 13 * s},
		{"both", 5 * s, 2 * s, 2, evs, true, "spike+pause", 5 * s, 13 * s},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, ok := TriggerFrom(tc.at, tc.dur, tc.factor, tc.evs)
			if ok != tc.ok || (ok && (tr.Kind != tc.kind || tr.Start != tc.start || tr.End != tc.end)) {
				t.Errorf("TriggerFrom = %+v, %v; want %s [%v, %v], %v", tr, ok, tc.kind, tc.start, tc.end, tc.ok)
			}
		})
	}
}
