package autoscale_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/autoscale"
	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/outcome"
)

// win is one 1 s window i (0-based from the end of a 2 s warm-up when
// warm is false) with the ALL row's p99 in ms and throughput in ops/s.
type win struct {
	p99ms float64
	ops   int64
	warm  bool
	fail  bool // every operation failed, the longest after p99ms
}

func rows(i int, w win) []measure.WindowRow {
	r := measure.WindowRow{Index: i, Start: time.Duration(i) * time.Second, End: time.Duration(i+1) * time.Second,
		Phase: measure.PhaseRun, Op: measure.AllOps, OK: w.ops, P99Us: w.p99ms * 1000}
	if w.warm {
		r.Phase = measure.PhaseWarmup
	}
	if w.fail {
		r.OK, r.P99Us, r.FailMaxUs = 0, 0, w.p99ms*1000
		r.Errors[outcome.Timeout] = 10
	}
	return []measure.WindowRow{r}
}

func cfg(t *testing.T, yamlish ...string) autoscale.Config {
	t.Helper()
	c := autoscale.Config{Cooldown: 3 * time.Second, MinNodes: 2, MaxNodes: 4, LatencyTarget: 20 * time.Millisecond}
	for i := 0; i+2 < len(yamlish); i += 3 {
		cond, err := autoscale.ParseCondition(yamlish[i])
		if err != nil {
			t.Fatal(err)
		}
		d, _ := time.ParseDuration(yamlish[i+1])
		c.Rules = append(c.Rules, autoscale.Rule{When: cond, For: d, Action: autoscale.Action(yamlish[i+2])})
	}
	c.Defaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEngine(t *testing.T) {
	hot, cold, idle := win{p99ms: 50, ops: 1000}, win{p99ms: 5, ops: 1000}, win{p99ms: 5, ops: 100}
	type done struct {
		after int // after the window with this index
		at    time.Duration
		nodes int
	}
	for _, tc := range []struct {
		name  string
		rules []string
		nodes int
		wins  []win
		dones []done
		want  []int // indexes of the windows whose end a rule fired at
	}{
		{"hot for less than the hold: must not fire", []string{"p99 > 20ms", "3s", "add-node"}, 3,
			[]win{cold, hot, hot, cold, hot, hot, cold}, nil, nil},
		{"hot for the hold: fires at its third window", []string{"p99 > 20ms", "3s", "add-node"}, 3,
			[]win{cold, hot, hot, hot, hot}, nil, []int{3}},
		{"warm-up windows count for nothing", []string{"p99 > 20ms", "3s", "add-node"}, 3,
			[]win{{p99ms: 50, ops: 1, warm: true}, {p99ms: 50, ops: 1, warm: true}, hot, hot, cold}, nil, nil},
		{"at max_nodes add-node does not fire", []string{"p99 > 20ms", "1s", "add-node"}, 4,
			[]win{hot, hot, hot}, nil, nil},
		{"at min_nodes remove-node does not fire", []string{"throughput < 30%", "1s", "remove-node"}, 2,
			[]win{idle, idle}, nil, nil},
		{"throughput below 30 % of 1000 ops/s fires remove-node", []string{"throughput < 30%", "2s", "remove-node"}, 3,
			[]win{cold, idle, idle, idle}, nil, []int{2}},
		{"a window of failures counts with its longest latency", []string{"p99 > 20ms", "2s", "add-node"}, 3,
			[]win{hot, {p99ms: 900, fail: true}}, nil, []int{1}},
		{"no second decision while the action runs", []string{"p99 > 20ms", "1s", "add-node"}, 2,
			[]win{hot, hot, hot, hot}, nil, []int{0}},
		{"cooldown honoured: nothing counts until 3 s after the action's end", []string{"p99 > 20ms", "2s", "add-node"}, 2,
			// fires at window 1 (end 2 s); the action ends at 3.5 s, cooldown to 6.5 s:
			// windows ending at 3..6 s count for nothing, 7 and 8 s hold -> fires at index 7
			[]win{hot, hot, hot, hot, hot, hot, hot, hot, hot}, []done{{after: 2, at: 3500 * time.Millisecond, nodes: 3}}, []int{1, 7}},
		{"the first rule that holds fires", []string{"p99 > 20ms", "1s", "add-node", "throughput < 2000", "1s", "remove-node"}, 3,
			[]win{hot}, nil, []int{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg(t, tc.rules...)
			e := autoscale.NewEngine(c, tc.nodes, 1000)
			var got []int
			for i, w := range tc.wins {
				d, ok := e.Observe(rows(i, w))
				if ok {
					got = append(got, i)
					if d.Label != "autoscale-"+itoa(len(got)) || d.NodesBefore != e.Nodes() {
						t.Errorf("decision %+v", d)
					}
				}
				for _, dn := range tc.dones {
					if dn.after == i {
						e.Done(dn.at, dn.nodes)
					}
				}
			}
			if itoas(got) != itoas(tc.want) {
				t.Errorf("fired at windows %v, want %v", got, tc.want)
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func itoas(v []int) string {
	var b strings.Builder
	for _, i := range v {
		b.WriteString(itoa(i) + ",")
	}
	return b.String()
}

func TestEnginePercentWithoutCapacity(t *testing.T) {
	c := cfg(t, "throughput < 30%", "1s", "remove-node")
	e := autoscale.NewEngine(c, 3, 0)
	for i := range 5 {
		if _, ok := e.Observe(rows(i, win{p99ms: 1, ops: 1})); ok {
			t.Fatal("a percentage of no capacity fired")
		}
	}
}

func TestParseCondition(t *testing.T) {
	for _, tc := range []struct{ in, want, wantErr string }{
		{"p99 > 20ms", "p99 > 20ms", ""},
		{"throughput < 30%", "throughput < 30%", ""},
		{"throughput  <  500", "throughput < 500", ""},
		{"mean > 1.5ms", "mean > 1.5ms", ""},
		{"p99 >= 20ms", "", "want METRIC"},
		{"p98 > 20ms", "", "unknown metric"},
		{"p99 > 20", "", "positive duration"},
		{"throughput < 0%", "", "percentage"},
		{"throughput < lots", "", "ops/s"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			c, err := autoscale.ParseCondition(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || c.String() != tc.want {
				t.Fatalf("got %q, %v; want %q", c.String(), err, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	p99, _ := autoscale.ParseCondition("p99 > 20ms")
	low, _ := autoscale.ParseCondition("throughput < 30%")
	good := autoscale.Rule{When: p99, For: time.Second, Action: autoscale.AddNode}
	for _, tc := range []struct {
		name    string
		c       autoscale.Config
		wantErr string
	}{
		{"valid", autoscale.Config{Rules: []autoscale.Rule{good}, MinNodes: 1, MaxNodes: 3}, ""},
		{"no rules", autoscale.Config{MinNodes: 1, MaxNodes: 3, LatencyTarget: time.Second}, "no rules"},
		{"bad action", autoscale.Config{Rules: []autoscale.Rule{{When: p99, Action: "reboot"}}, MinNodes: 1, MaxNodes: 3}, "reboot"},
		{"max below min", autoscale.Config{Rules: []autoscale.Rule{good}, MinNodes: 3, MaxNodes: 2}, "below min_nodes"},
		{"too many nodes", autoscale.Config{Rules: []autoscale.Rule{good}, MinNodes: 1, MaxNodes: 99}, "at most"},
		{"no latency target", autoscale.Config{Rules: []autoscale.Rule{{When: low, Action: autoscale.RemoveNode}}, MinNodes: 1, MaxNodes: 3}, "latency_target"},
		{"negative cooldown", autoscale.Config{Rules: []autoscale.Rule{good}, MinNodes: 1, MaxNodes: 3, Cooldown: -time.Second}, "cooldown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.Defaults()
			err := tc.c.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if tc.c.LatencyTarget != 20*time.Millisecond || tc.c.Op != measure.AllOps || tc.c.Rules[0].Name != "add-node-1" {
					t.Errorf("defaults: %+v", tc.c)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestAnalyze: one decision at 4 s whose action ends at 6.5 s; the SLA
// violations are counted before (windows 0-3: three above 20 ms), during
// (windows 4, 5: both) and after (windows 6-9: none above); the time to the new
// size is from the event times. The negative control: a failed action has
// no ready time and no after span.
func TestAnalyze(t *testing.T) {
	c := cfg(t, "p99 > 20ms", "2s", "add-node")
	p99s := []float64{5, 50, 50, 50, 50, 40, 10, 10, 10, 10}
	var ws []measure.WindowRow
	for i, p := range p99s {
		ws = append(ws, rows(i, win{p99ms: p, ops: 100})...)
	}
	d := autoscale.Decision{N: 1, Label: "autoscale-1", Rule: "add-node-1", Action: autoscale.AddNode, AtMs: 4000, NodesBefore: 3, NodesAfter: 4}
	ev := func(ms int, kind, node, detail string) event.Event {
		return event.Event{T: int64(ms) * int64(time.Millisecond), Kind: kind, Node: node, Detail: detail, Fault: "autoscale-1"}
	}
	for _, tc := range []struct {
		name   string
		evs    []event.Event
		ready  float64
		after  autoscale.SLASpan
		nodes  int
		failed bool
	}{
		{"served at the new size", []event.Event{ev(4100, event.ScaleStart, "", "add-node 1"), ev(5000, event.NodeJoined, "n4", ""),
			ev(6500, event.ScaleEnd, "n4", "add-node 1: n4 joined")}, 2500, autoscale.SLASpan{FromMs: 6500, ToMs: 10000, Windows: 4}, 4, false},
		{"failed: no ready time, no after span", []event.Event{ev(4100, event.ScaleStart, "", "add-node 1"),
			ev(6500, event.ScaleEnd, "", "add-node 1 failed: boom")}, -1, autoscale.SLASpan{FromMs: -1, ToMs: -1}, 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := autoscale.Analyze(c, 3, 0, []autoscale.Decision{d}, ws, tc.evs)
			if rep.Windows != 10 || rep.Violations != 5 {
				t.Errorf("windows %d violations %d, want 10 and 5", rep.Windows, rep.Violations)
			}
			m := rep.Decisions[0]
			if m.ReadyMs != tc.ready || m.Failed != tc.failed || rep.EndNodes != tc.nodes {
				t.Errorf("ready %v failed %v end nodes %d", m.ReadyMs, m.Failed, rep.EndNodes)
			}
			if m.Before.Windows != 4 || m.Before.Violations != 3 {
				t.Errorf("before %+v, want 4 windows, 3 violations", m.Before)
			}
			if m.After != tc.after {
				t.Errorf("after %+v, want %+v", m.After, tc.after)
			}
			if !tc.failed && (m.ReactionMs != 100 || m.JoinedMs != 1000 || m.Nodes != "n4" || m.During.Windows != 2 || m.During.Violations != 2) {
				t.Errorf("decision metrics %+v", m)
			}
		})
	}
}
