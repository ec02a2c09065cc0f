package analyze

import (
	"reflect"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/fault/kind"
)

func ev(at time.Duration, kind, node, detail, label string) event.Event {
	return event.Event{T: int64(at), Kind: kind, Node: node, Detail: detail, Fault: label}
}

func TestFaultsFromEvents(t *testing.T) {
	for _, tc := range []struct {
		name string
		evs  []event.Event
		want []Fault
	}{
		{"kill then start same node", []event.Event{
			ev(30*sec, event.FaultInject, "n1", "kill", "victim"),
			ev(30*sec+time.Millisecond, event.FaultInjected, "n1", "kill", "victim"),
			ev(31*sec, event.NodeDown, "n1", "", ""),
			ev(60*sec, event.FaultRestore, "n1", "start", ""),
		}, []Fault{{Label: "victim", Action: "kill", Node: "n1", At: 30 * sec, RestoreAt: 60 * sec, RestoreAction: "start"}}},
		{"fault package details: action and selector", []event.Event{
			ev(30*sec, event.FaultInject, "n2", "kill leader", "victim"),
			ev(60*sec, event.FaultRestore, "n2", "start victim", "victim"),
			ev(70*sec, event.FaultInject, "n3", "restart n3", "step 3"),
		}, []Fault{
			{Label: "victim", Action: "kill", Node: "n2", At: 30 * sec, RestoreAt: 60 * sec, RestoreAction: "start"},
			{Label: "step 3", Action: "restart", Node: "n3", At: 70 * sec, RestoreAt: -1},
		}},
		{"matched by label across node names", []event.Event{
			ev(30*sec, event.FaultInject, "n1", "stop", "victim"),
			ev(60*sec, event.FaultRestore, "n9", "start", "victim"),
		}, []Fault{{Label: "victim", Action: "stop", Node: "n1", At: 30 * sec, RestoreAt: 60 * sec, RestoreAction: "start"}}},
		{"never restored", []event.Event{
			ev(30*sec, event.FaultInject, "n1", "kill", ""),
		}, []Fault{{Action: "kill", Node: "n1", At: 30 * sec, RestoreAt: -1}}},
		{"restore of another node does not pair", []event.Event{
			ev(30*sec, event.FaultInject, "n1", "kill", ""),
			ev(40*sec, event.FaultRestore, "n2", "start", ""),
		}, []Fault{
			{Action: "kill", Node: "n1", At: 30 * sec, RestoreAt: -1},
			{Action: "start", Node: "n2", At: 40 * sec, RestoreAt: 40 * sec, RestoreAction: "start"},
		}},
		{"resume does not restore a kill", []event.Event{
			ev(30*sec, event.FaultInject, "n1", "kill", ""),
			ev(35*sec, event.FaultInject, "n1", "pause", ""),
			ev(40*sec, event.FaultRestore, "n1", "resume", ""),
			ev(50*sec, event.FaultRestore, "n1", "start", ""),
		}, []Fault{
			{Action: "kill", Node: "n1", At: 30 * sec, RestoreAt: 50 * sec, RestoreAction: "start"},
			{Action: "pause", Node: "n1", At: 35 * sec, RestoreAt: 40 * sec, RestoreAction: "resume"},
		}},
		{"global heal closes every network fault", []event.Event{
			ev(30*sec, event.FaultInject, "n1", "partition", ""),
			ev(31*sec, event.FaultInject, "n2,n3", "delay", ""),
			ev(32*sec, event.FaultInject, "n3", "kill", ""),
			ev(40*sec, event.FaultRestore, "", "heal", ""),
		}, []Fault{
			{Action: "partition", Node: "n1", At: 30 * sec, RestoreAt: 40 * sec, RestoreAction: "heal"},
			{Action: "delay", Node: "n2,n3", At: 31 * sec, RestoreAt: 40 * sec, RestoreAction: "heal"},
			{Action: "kill", Node: "n3", At: 32 * sec, RestoreAt: -1},
		}},
		{"labelled heal without node closes only its fault", []event.Event{
			ev(30*sec, event.FaultInject, "n1", "partition", "p1"),
			ev(31*sec, event.FaultInject, "n2", "partition", "p2"),
			ev(40*sec, event.FaultRestore, "", "heal", "p1"),
		}, []Fault{
			{Label: "p1", Action: "partition", Node: "n1", At: 30 * sec, RestoreAt: 40 * sec, RestoreAction: "heal"},
			{Label: "p2", Action: "partition", Node: "n2", At: 31 * sec, RestoreAt: -1},
		}},
		{"one restore of two nodes", []event.Event{
			ev(30*sec, event.FaultInject, "n1", "kill", ""),
			ev(30*sec, event.FaultInject, "n2", "kill", ""),
			ev(60*sec, event.FaultRestore, "n2, n1", "start", ""),
		}, []Fault{
			{Action: "kill", Node: "n1", At: 30 * sec, RestoreAt: 60 * sec, RestoreAction: "start"},
			{Action: "kill", Node: "n2", At: 30 * sec, RestoreAt: 60 * sec, RestoreAction: "start"},
		}},
		{"second kill after restart pairs with the second start", []event.Event{
			ev(10*sec, event.FaultInject, "n1", "kill", ""),
			ev(20*sec, event.FaultRestore, "n1", "start", ""),
			ev(30*sec, event.FaultInject, "n1", "kill", ""),
			ev(40*sec, event.FaultRestore, "n1", "start", ""),
		}, []Fault{
			{Action: "kill", Node: "n1", At: 10 * sec, RestoreAt: 20 * sec, RestoreAction: "start"},
			{Action: "kill", Node: "n1", At: 30 * sec, RestoreAt: 40 * sec, RestoreAction: "start"},
		}},
		{"unsorted input", []event.Event{
			ev(60*sec, event.FaultRestore, "n1", "start", ""),
			ev(30*sec, event.FaultInject, "n1", "kill", ""),
		}, []Fault{{Action: "kill", Node: "n1", At: 30 * sec, RestoreAt: 60 * sec, RestoreAction: "start"}}},
		{"unknown actions pair by node", []event.Event{
			ev(30*sec, event.FaultInject, "n1", "corrupt-disk", ""),
			ev(60*sec, event.FaultRestore, "n1", "repair-disk", ""),
		}, []Fault{{Action: "corrupt-disk", Node: "n1", At: 30 * sec, RestoreAt: 60 * sec, RestoreAction: "repair-disk"}}},
		{"errors attach by label then node", []event.Event{
			ev(30*sec, event.FaultInject, "n1", "kill", "a"),
			ev(31*sec, event.FaultInject, "n2", "pause", "b"),
			ev(32*sec, event.FaultError, "", "no such process", "a"),
			ev(33*sec, event.FaultError, "n2", "sigstop failed", ""),
			ev(34*sec, event.FaultError, "n7", "ignored", ""),
		}, []Fault{
			{Label: "a", Action: "kill", Node: "n1", At: 30 * sec, RestoreAt: -1, Error: "no such process"},
			{Label: "b", Action: "pause", Node: "n2", At: 31 * sec, RestoreAt: -1, Error: "sigstop failed"},
		}},
		{"no fault events", []event.Event{ev(0, event.PhaseStart, "", "run", "")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FaultsFromEvents(tc.evs)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("FaultsFromEvents =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestFaultKinds(t *testing.T) {
	restoreOnly := Fault{Action: "start", At: sec, RestoreAt: sec, RestoreAction: "start"}
	quick := Fault{Action: "kill", At: sec, RestoreAt: sec, RestoreAction: "start"}
	open := Fault{Action: "kill", At: sec, RestoreAt: -1}
	if !restoreOnly.RestoreOnly() || quick.RestoreOnly() || open.RestoreOnly() {
		t.Error("RestoreOnly wrong")
	}
	if !quick.Restored() || open.Restored() {
		t.Error("Restored wrong")
	}
}

func TestRestoreOnlyMetrics(t *testing.T) {
	rows := gen(100*time.Millisecond, 60*sec, 0, func(t time.Duration) point {
		p := point{ops: 1000, mean: 1000, p50: 1000, p99: 2000, maxUs: 3000}
		if in(t, 30*sec, 30500*time.Millisecond) {
			p.ops = 0
		}
		return p
	})
	r := mustAnalyze(t, rows, []event.Event{ev(30*sec, event.FaultRestore, "n4", "start", "")}, exactParams())
	m := r.Faults[0]
	eq(t, "DowntimeMs", m.DowntimeMs, -1)
	eq(t, "RecoveryMs", m.RecoveryMs, -1)
	eq(t, "RestoreDowntimeMs", m.RestoreDowntimeMs, 500)
	eq(t, "StabiliseMs", m.StabiliseMs, 500)
	if !hasNote(m.Notes, "without a matching") {
		t.Errorf("notes %v", m.Notes)
	}
	if len(r.Phases) != 3 || r.Phases[1].Kind != "restore" || r.Phases[1].Name != "start n4" {
		t.Errorf("phases %+v", r.Phases)
	}
}

// TestFaultsFromEventFields: events that carry their action and family are
// paired by those fields, not by the detail's first word, and by the kinds
// given.
func TestFaultsFromEventFields(t *testing.T) {
	typed := func(at time.Duration, k, node, detail, label, action, family string) event.Event {
		e := ev(at, k, node, detail, label)
		e.Action, e.Family = action, family
		return e
	}
	t.Run("fields win over the detail", func(t *testing.T) {
		got := FaultsFromEvents([]event.Event{
			typed(10*sec, event.FaultInject, "n1", "whatever the detail says", "", "pause", "pause"),
			typed(20*sec, event.FaultRestore, "n1", "start n1", "", "resume", "pause"),
		})
		want := []Fault{{Action: "pause", Node: "n1", At: 10 * sec, RestoreAt: 20 * sec, RestoreAction: "resume"}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v, want %+v", got, want)
		}
	})
	t.Run("a kind's restores decide", func(t *testing.T) {
		evs := []event.Event{
			typed(10*sec, event.FaultInject, "n1", "fill-disk n1", "", "fill-disk", "disk"),
			typed(15*sec, event.FaultRestore, "n1", "start n1", "", "start", "process"),
			typed(20*sec, event.FaultRestore, "n1", "resume n1", "", "resume", "pause"),
		}
		kinds := kind.Builtin()
		if err := kinds.Add(kind.Kind{Name: "fill-disk", Family: kind.Disk, Restores: []string{"resume"}}); err != nil {
			t.Fatal(err)
		}
		got := FaultsFromEventsWith(evs, kinds)
		if len(got) != 2 || got[0].Action != "fill-disk" || got[0].RestoreAction != "resume" || !got[1].RestoreOnly() {
			t.Errorf("with the kind: %+v", got)
		}
		// without it, the families (disk, process, pause) differ: unpaired
		got = FaultsFromEvents(evs)
		if len(got) != 3 || got[0].Restored() {
			t.Errorf("without the kind: %+v", got)
		}
	})
	t.Run("unknown kinds of one family pair", func(t *testing.T) {
		got := FaultsFromEvents([]event.Event{
			typed(10*sec, event.FaultInject, "n1", "skew n1", "", "skew-clock", "clock"),
			typed(20*sec, event.FaultRestore, "n1", "unskew n1", "", "fix-clock", "clock"),
		})
		if len(got) != 1 || got[0].RestoreAction != "fix-clock" {
			t.Errorf("got %+v", got)
		}
	})
}
