package analyze

import (
	"encoding/json"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/fault/kind"
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

// actionOf is the action of an old fault event's detail: its first word
// (the fault package writes "ACTION SELECTOR", e.g. "kill leader"). Events
// written since fault events carry their action (event.Event.Action) are
// not read this way.
func actionOf(detail string) string {
	if f := strings.Fields(detail); len(f) > 0 {
		return f[0]
	}
	return ""
}

// faultIdentity is the action and family of a fault event: its own fields,
// or, in an events.jsonl written before they existed, the detail's first
// word (the family is then the registry's).
func faultIdentity(e event.Event) (action string, family kind.Family) {
	if e.Action != "" {
		return e.Action, kind.Family(e.Family)
	}
	return actionOf(e.Detail), ""
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
// injection, with the built-in fault kinds (kind.Builtin); see
// FaultsFromEventsWith.
func FaultsFromEvents(evs []event.Event) []Fault { return FaultsFromEventsWith(evs, nil) }

// FaultsFromEventsWith extracts the faults of a run from its events, in
// order of injection, pairing injections with restores by the fault kinds
// of kinds (nil: kind.Builtin()). Only fault-inject, fault-restore and
// fault-error events are used; times are those of the actions' beginning
// (the kill, not the observed node-down), as in the NoSQL failover study.
//
// Pairing rule: events are taken in time order. Every fault-inject opens a
// fault; its Action is the event's action field (in events written before
// that field existed: the first word of the detail, which the fault
// package writes as "ACTION SELECTOR", e.g. "kill leader"). A fault-restore
// closes every open fault that was injected at or before it, that it can
// undo, and that it names: same non-empty label, or at least one node in
// common, or — when the restore names no node and has no label (a global
// heal) — any such open fault. It can undo a fault when the fault's kind
// lists the restore's action among its Restores (start undoes kill and
// stop, resume undoes pause, heal undoes the network faults); for a kind
// that lists none or is unknown, when the two families (the events' own,
// else the kinds') are equal; with a family unknown, always. A restore that
// closes nothing is reported as a restore-only Fault (At = RestoreAt = its
// time, Action = RestoreAction = its action). A fault-error is attached to
// the most recent fault (open or not) with the same label, else the most
// recent with a common node, else ignored.
func FaultsFromEventsWith(evs []event.Event, kinds *kind.Registry) []Fault {
	if kinds == nil {
		kinds = kind.Builtin()
	}
	sorted := append([]event.Event(nil), evs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].T < sorted[j].T })
	var out []Fault
	var families []kind.Family // the family each fault's inject event gave, by index in out
	for _, e := range sorted {
		t := e.Since()
		switch e.Kind {
		case event.FaultInject:
			action, family := faultIdentity(e)
			out = append(out, Fault{Label: e.Fault, Action: action, Node: e.Node, At: t, RestoreAt: -1})
			families = append(families, family)
		case event.FaultRestore:
			action, family := faultIdentity(e)
			closed := false
			for i := range out {
				f := &out[i]
				if f.Restored() || f.At > t || !kinds.Undoes(f.Action, families[i], action, family) {
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
				families = append(families, family)
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
