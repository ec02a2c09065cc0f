package analyze

import (
	"encoding/json"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/event"
)

// Fault is one fault of a run as read from its events: the inject action
// and, when one was found, the restore action that undid it.
type Fault struct {
	Label  string        // the fault's label (scenario step name or "as" name)
	Action string        // the inject action: kill, stop, pause, partition, ...
	Node   string        // node(s) the action resolved to, comma separated
	At     time.Duration // when the inject action began (since run start)
	// RestoreAt is when the matching restore action began, -1 if the fault
	// was never restored during the run. A restore that matched no earlier
	// fault is reported as a Fault of its own with At == RestoreAt.
	RestoreAt     time.Duration
	RestoreAction string // start, resume, heal, ...; "" if never restored
	Error         string // detail of fault-error events attributed to this fault, "; "-joined
}

// Restored reports whether the fault has a restore action.
func (f Fault) Restored() bool { return f.RestoreAt >= 0 }

// RestoreOnly reports whether f is a restore action that matched no earlier
// fault (its inject-side metrics do not apply).
func (f Fault) RestoreOnly() bool {
	return f.Restored() && f.RestoreAt == f.At && f.Action == f.RestoreAction
}

// faultJSON is Fault's JSON form, with times in milliseconds.
type faultJSON struct {
	Label         string  `json:"label,omitempty"`
	Action        string  `json:"action"`
	Node          string  `json:"node,omitempty"`
	AtMs          float64 `json:"at_ms"`
	RestoreAtMs   float64 `json:"restore_at_ms"`
	RestoreAction string  `json:"restore_action,omitempty"`
	Error         string  `json:"error,omitempty"`
}

// MarshalJSON writes the fault with times as at_ms and restore_at_ms
// (restore_at_ms is -1 when the fault was never restored).
func (f Fault) MarshalJSON() ([]byte, error) {
	r := -1.0
	if f.Restored() {
		r = ms(f.RestoreAt)
	}
	return json.Marshal(faultJSON{Label: f.Label, Action: f.Action, Node: f.Node, AtMs: ms(f.At),
		RestoreAtMs: r, RestoreAction: f.RestoreAction, Error: f.Error})
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (f *Fault) UnmarshalJSON(b []byte) error {
	var j faultJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*f = Fault{Label: j.Label, Action: j.Action, Node: j.Node, At: fromMs(j.AtMs),
		RestoreAt: -1, RestoreAction: j.RestoreAction, Error: j.Error}
	if j.RestoreAtMs >= 0 {
		f.RestoreAt = fromMs(j.RestoreAtMs)
	}
	return nil
}

// ms converts a duration to float milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// fromMs converts float milliseconds to a duration (rounded to the nanosecond).
func fromMs(v float64) time.Duration { return time.Duration(math.Round(v * float64(time.Millisecond))) }

// actionFamily groups inject and restore actions that undo each other;
// "" means unknown (compatible with anything).
func actionFamily(action string) string {
	switch strings.ToLower(strings.TrimSpace(action)) {
	case "kill", "stop", "crash", "shutdown", "start":
		return "process"
	case "pause", "resume":
		return "pause"
	case "partition", "isolate", "delay", "loss", "heal":
		return "network"
	}
	return ""
}

// actionOf is the action of a fault event's detail: its first word (the
// fault package writes "ACTION SELECTOR", e.g. "kill leader").
func actionOf(detail string) string {
	if f := strings.Fields(detail); len(f) > 0 {
		return f[0]
	}
	return ""
}

// compatible reports whether restore action r can undo inject action i.
func compatible(i, r string) bool {
	fi, fr := actionFamily(i), actionFamily(r)
	return fi == "" || fr == "" || fi == fr
}

// nodeSet splits a comma-separated node list.
func nodeSet(s string) []string {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// overlap reports whether two comma-separated node lists share a node.
func overlap(a, b string) bool {
	for _, x := range nodeSet(a) {
		for _, y := range nodeSet(b) {
			if x == y {
				return true
			}
		}
	}
	return false
}

// FaultsFromEvents extracts the faults of a run from its events, in order of
// injection. Only fault-inject, fault-restore and fault-error events are
// used; times are those of the actions' beginning (the kill, not the
// observed node-down), as in the NoSQL failover study.
//
// Pairing rule: events are taken in time order. Every fault-inject opens a
// fault; its Action is the first word of the event's detail (the fault
// package writes "ACTION SELECTOR", e.g. "kill leader"). A fault-restore
// closes every open fault that was injected at or before it, whose action
// it can undo (start undoes kill/stop/crash/shutdown, resume undoes pause,
// heal undoes partition/isolate/delay/loss; an action outside these lists
// is compatible with anything) and that it names: same non-empty label, or
// at least one node in common, or — when the restore names no node and has
// no label (a global heal) — any compatible open fault. A restore that
// closes nothing is reported as a restore-only Fault (At = RestoreAt = its
// time, Action = RestoreAction = its action). A fault-error is attached to
// the most recent fault (open or not) with the same label, else the most
// recent with a common node, else ignored.
func FaultsFromEvents(evs []event.Event) []Fault {
	sorted := append([]event.Event(nil), evs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].T < sorted[j].T })
	var out []Fault
	for _, e := range sorted {
		t := e.Since()
		switch e.Kind {
		case event.FaultInject:
			out = append(out, Fault{Label: e.Fault, Action: actionOf(e.Detail), Node: e.Node, At: t, RestoreAt: -1})
		case event.FaultRestore:
			action := actionOf(e.Detail)
			closed := false
			for i := range out {
				f := &out[i]
				if f.Restored() || f.At > t || !compatible(f.Action, action) {
					continue
				}
				global := e.Node == "" && e.Fault == ""
				if global || (e.Fault != "" && e.Fault == f.Label) || overlap(e.Node, f.Node) {
					f.RestoreAt, f.RestoreAction = t, action
					closed = true
				}
			}
			if !closed {
				out = append(out, Fault{Label: e.Fault, Action: action, Node: e.Node, At: t,
					RestoreAt: t, RestoreAction: action})
			}
		case event.FaultError:
			idx := -1
			for i := len(out) - 1; i >= 0 && idx < 0; i-- {
				if e.Fault != "" && out[i].Label == e.Fault {
					idx = i
				}
			}
			for i := len(out) - 1; i >= 0 && idx < 0; i-- {
				if overlap(e.Node, out[i].Node) {
					idx = i
				}
			}
			if idx >= 0 {
				if out[idx].Error != "" {
					out[idx].Error += "; "
				}
				out[idx].Error += e.Detail
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}
