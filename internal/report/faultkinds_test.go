package report

import (
	"testing"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/fault/kind"
)

// TestFaultSpansFromKinds: a fault's span takes its colour and label from
// the run's fault kinds; an action no kind has is grey and named as it is.
func TestFaultSpansFromKinds(t *testing.T) {
	kinds := kind.Builtin()
	if err := kinds.Add(kind.Kind{Name: "fill-disk", Family: kind.Disk, Label: "disk full", Color: 0x123456}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		action, label, color string
	}{
		{"kill", "kill n1", "#d62728"},
		{"start", "start n1", "#d62728"},
		{"pause", "pause n1", "#ff7f0e"},
		{"partition", "partition n1", "#9467bd"},
		{"bandwidth", "bandwidth n1", "#9467bd"},
		{"add-node", "add-node n1", "#17becf"},
		{"fill-disk", "disk full n1", "#123456"},
		{"explode", "explode n1", "#7f7f7f"},
	} {
		t.Run(tc.action, func(t *testing.T) {
			f := analyze.Fault{Action: tc.action, Node: "n1", RestoreAt: -1}
			if got := faultColor(kinds, tc.action).css(); got != tc.color {
				t.Errorf("colour %s, want %s", got, tc.color)
			}
			if got := faultSpanLabel(kinds, f); got != tc.label {
				t.Errorf("label %q, want %q", got, tc.label)
			}
		})
	}
	r := &Run{Kinds: kinds, Faults: []analyze.Fault{{Action: "fill-disk", Node: "n2", RestoreAt: -1}}}
	d := runDecorations(r)
	if len(d.spans) != 1 || d.spans[0].Label != "disk full n2" || d.spans[0].Color.css() != "#123456" {
		t.Errorf("spans %+v", d.spans)
	}
	r.Kinds = nil // the built-in kinds: fill-disk is unknown
	if d := runDecorations(r); d.spans[0].Color.css() != "#7f7f7f" {
		t.Errorf("unknown kind drawn %s", d.spans[0].Color.css())
	}
}
