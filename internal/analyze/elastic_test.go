package analyze

import (
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/event"
)

// scaleEvents is an add-node at 30 s labelled scale-out whose node joins
// at joined and whose streaming ends at streamed (-1: not reported).
func scaleEvents(joined, streamed time.Duration) []event.Event {
	at := 30 * sec
	evs := []event.Event{
		{T: int64(at - time.Millisecond), Kind: event.FaultInject, Detail: "add-node 1 (streaming 5mbit)", Fault: "scale-out"},
		{T: int64(at), Kind: event.ScaleStart, Detail: "add-node 1 (streaming 5mbit)", Fault: "scale-out"},
		{T: int64(at + 2*sec), Kind: event.NodeStarted, Node: "n3", Fault: "scale-out"},
	}
	if streamed >= 0 {
		evs = append(evs, event.Event{T: int64(streamed - 5*sec), Kind: event.StreamingStart, Node: "n3", Fault: "scale-out"},
			event.Event{T: int64(streamed), Kind: event.StreamingDone, Node: "n3", Fault: "scale-out"})
	}
	evs = append(evs,
		event.Event{T: int64(joined), Kind: event.NodeJoined, Node: "n3", Fault: "scale-out"},
		event.Event{T: int64(joined + 100*time.Millisecond), Kind: event.ScaleEnd, Node: "n3", Detail: "add-node 1: n3 joined", Fault: "scale-out"},
		event.Event{T: int64(joined + 100*time.Millisecond), Kind: event.FaultInjected, Detail: "add-node 1", Fault: "scale-out"},
	)
	return evs
}

// scaling is a run at 500 ops/s whose p99 is 10 ms, rises to 40 ms from
// 30 s (the scaling action) until settle, and is 11 ms afterwards.
func scaling(settle time.Duration) func(time.Duration) point {
	return func(t time.Duration) point {
		p := point{ops: 500, mean: 2000, p50: 1500, p99: 10_000, maxUs: 20_000}
		switch {
		case in(t, 30*sec, settle):
			p.ops, p.mean, p.p99, p.maxUs = 450, 6000, 40_000, 90_000
		case t >= settle:
			p.p99 = 11_000
		}
		return p
	}
}

func TestElasticity(t *testing.T) {
	tests := []struct {
		name                      string
		joined, streamed, settle  time.Duration
		streaming, stabilise, all float64 // ms; -1 not reached
		note                      string
	}{
		{name: "streams then stabilises", joined: 61 * sec, streamed: 60 * sec, settle: 70 * sec,
			streaming: 30_000, stabilise: 10_000, all: 40_000},
		{name: "already stable when streaming ends", joined: 75 * sec, streamed: 75 * sec, settle: 70 * sec,
			streaming: 45_000, stabilise: 0, all: 45_000},
		{name: "no streaming: measured from the join", joined: 40 * sec, streamed: -1, settle: 50 * sec,
			streaming: -1, stabilise: 10_000, all: 20_000, note: "no data movement reported"},
		{name: "never stabilises", joined: 61 * sec, streamed: 60 * sec, settle: 200 * sec,
			streaming: 30_000, stabilise: -1, all: -1, note: "did not stay within the before band"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rows := gen(sec, 120*sec, 5*sec, scaling(tc.settle))
			rep := mustAnalyze(t, rows, scaleEvents(tc.joined, tc.streamed), DefaultParams())
			if len(rep.Elasticity) != 1 {
				t.Fatalf("elasticity entries %d, want 1", len(rep.Elasticity))
			}
			m := rep.Elasticity[0]
			if m.Action != "add-node" || m.Label != "scale-out" || m.Nodes != "n3" {
				t.Errorf("action %q label %q nodes %q", m.Action, m.Label, m.Nodes)
			}
			eq(t, "streaming_ms", m.StreamingMs, tc.streaming)
			eq(t, "stabilise_ms", m.StabiliseMs, tc.stabilise)
			eq(t, "scaling_ms", m.ScalingMs, tc.all)
			eq(t, "band_us", m.BandUs, 11_000)
			eq(t, "before p99", m.Before.P99Us, 10_000)
			if tc.stabilise > 0 {
				near(t, "throughput during", m.ThroughputDuringOps, 450)
				near(t, "p99 change", m.P99ChangePct["ALL"], 300)
			}
			if tc.note != "" && !hasNote(m.Notes, tc.note) {
				t.Errorf("notes %q lack %q", m.Notes, tc.note)
			}
		})
	}
}

func TestScalingsFromEvents(t *testing.T) {
	evs := append(scaleEvents(50*sec, 45*sec), event.Event{T: int64(80 * sec), Kind: event.ScaleStart, Node: "n1", Detail: "remove-node n1", Fault: "scale-in"},
		event.Event{T: int64(90 * sec), Kind: event.ScaleEnd, Node: "n1", Detail: "remove-node n1 failed: boom", Fault: "scale-in"})
	got := ScalingsFromEvents(evs)
	if len(got) != 2 {
		t.Fatalf("%d scalings, want 2", len(got))
	}
	if got[0].StreamedAt != 45*sec || got[0].JoinedAt != 50*sec || got[0].Failed {
		t.Errorf("first: %+v", got[0])
	}
	if got[1].Action != "remove-node" || got[1].Nodes != "n1" || !got[1].Failed || got[1].EndAt != 90*sec || got[1].StreamedAt != -1 {
		t.Errorf("second: %+v", got[1])
	}
}

func TestElasticityTable(t *testing.T) {
	rep := mustAnalyze(t, gen(sec, 120*sec, 5*sec, scaling(70*sec)), scaleEvents(61*sec, 60*sec), DefaultParams())
	head, rows := ElasticityRows([]string{"cs-1"}, []*Report{rep})
	if len(rows) != 1 || len(rows[0]) != len(head) {
		t.Fatalf("rows %v for head %v", rows, head)
	}
	want := []string{"cs-1", "add-node n3", "5mbit", "30.0", "5.0", "10.0", "40.0", "450", "6.0", "40.0", "+300"}
	for i, w := range want {
		if rows[0][i] != w {
			t.Errorf("column %s = %q, want %q", head[i], rows[0][i], w)
		}
	}
	if _, rows := ElasticityRows(nil, []*Report{{}}); len(rows) != 0 {
		t.Errorf("rows of a run without scaling = %q, want none", rows)
	}
	for detail, want := range map[string]string{"add-node 1 (streaming 40mbit)": "40mbit", "add-node 3 (bootstrap false)": "disabled", "remove-node n1": "default", "add-node 1 (streaming 5mbit, x)": "5mbit"} {
		if got := streamingConfig(detail); got != want {
			t.Errorf("streamingConfig(%q) = %q, want %q", detail, got, want)
		}
	}
}
