package autoscale

import (
	"fmt"
	"time"

	"github.com/faultbench/faultbench/internal/measure"
)

// Decision is one firing of a rule.
type Decision struct {
	N     int    `json:"n"`     // 1, 2, ... in the run
	Label string `json:"label"` // autoscale-N: the label of its events
	Rule  string `json:"rule"`  // the rule's name
	// What is the rule as written: "add-node when p99 > 20ms for 5s".
	What   string `json:"what"`
	Action Action `json:"action"`
	// Value is the rule's metric in the window that completed the hold
	// (µs for latency, ops/s for throughput); Threshold the condition's in
	// the same unit (a percentage turned into ops/s).
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`
	Unit      string  `json:"unit"` // "us" or "ops/s"
	// WindowEndMs is the end of that window, ms since the start of the
	// run; AtMs is when the rule fired: the engine sets the window's end,
	// the orchestrator the time of the decision's event (the window closes
	// a moment after its end); HeldMs is how long the condition had held.
	WindowEndMs float64 `json:"window_end_ms"`
	AtMs        float64 `json:"at_ms"`
	HeldMs      float64 `json:"held_ms"`
	// NodesBefore is the size the rule saw; NodesAfter the size asked for.
	NodesBefore int `json:"nodes_before"`
	NodesAfter  int `json:"nodes_after"`
}

// String is the decision as its event's detail says it.
func (d Decision) String() string {
	v := fmt.Sprintf("%.0f ops/s", d.Value)
	if d.Unit == "us" {
		v = fmt.Sprintf("%.1f ms", d.Value/1000)
	}
	return fmt.Sprintf("rule %s (%s) fired: %s after %.1f s; %d -> %d nodes", d.Rule, d.What, v, d.HeldMs/1000, d.NodesBefore, d.NodesAfter)
}

// Engine evaluates the rules window by window. It is not safe for
// concurrent use: one goroutine feeds it.
type Engine struct {
	cfg      Config
	capacity float64         // ops/s, for percentage thresholds
	nodes    int             // the cluster's size now
	held     []time.Duration // per rule: how long its condition has held
	busy     bool            // a decision's action is running
	quiet    time.Duration   // windows ending at or before this count for nothing (cooldown)
	n        int
}

// NewEngine returns an engine for cfg (defaulted and valid) over a
// cluster of nodes nodes; capacity is the calibrated capacity in ops/s
// that percentage thresholds refer to (0 when none was measured).
func NewEngine(cfg Config, nodes int, capacity float64) *Engine {
	return &Engine{cfg: cfg, capacity: capacity, nodes: nodes, held: make([]time.Duration, len(cfg.Rules)), quiet: -1}
}

// Nodes is the cluster's size as the engine knows it.
func (e *Engine) Nodes() int { return e.nodes }

// Observe reads one closed window (its op rows and its ALL row, as
// measure.Collector.OnWindow hands them) and returns the decision taken at
// its end, if a rule fired. Warm-up windows, windows while a decision's
// action runs (until Done) and windows that end within the cooldown count
// towards no rule and break every hold.
func (e *Engine) Observe(rows []measure.WindowRow) (Decision, bool) {
	all, ok := rowOf(rows, measure.AllOps)
	if !ok || all.Phase == measure.PhaseWarmup || e.busy || all.End <= e.quiet {
		e.reset()
		return Decision{}, false
	}
	length := all.End - all.Start
	for i, r := range e.cfg.Rules {
		v, known := e.value(rows, r.When)
		if known && e.holds(r.When, v) {
			e.held[i] += length
		} else {
			e.held[i] = 0
		}
	}
	for i, r := range e.cfg.Rules {
		if e.held[i] <= 0 || e.held[i] < r.For {
			continue
		}
		after := e.nodes + 1
		if r.Action == RemoveNode {
			after = e.nodes - 1
		}
		if after < e.cfg.MinNodes || after > e.cfg.MaxNodes {
			continue // at the bound: the rule keeps holding and fires nothing
		}
		v, _ := e.value(rows, r.When)
		e.n++
		d := Decision{N: e.n, Label: fmt.Sprintf("autoscale-%d", e.n), Rule: r.Name, What: r.String(), Action: r.Action,
			Value: v, Threshold: e.threshold(r.When), Unit: "us", WindowEndMs: msOf(all.End), AtMs: msOf(all.End), HeldMs: msOf(e.held[i]),
			NodesBefore: e.nodes, NodesAfter: after}
		if !r.When.Metric.IsLatency() {
			d.Unit = "ops/s"
		}
		e.busy = true
		e.reset()
		return d, true
	}
	return Decision{}, false
}

// Done tells the engine that the action of its last decision ended at at
// (since the start of the run) with the cluster at nodes nodes (unchanged
// when the action failed): the cooldown runs from at.
func (e *Engine) Done(at time.Duration, nodes int) {
	e.busy = false
	e.nodes = nodes
	e.quiet = at + e.cfg.Cooldown
	e.reset()
}

func (e *Engine) reset() {
	for i := range e.held {
		e.held[i] = 0
	}
}

// value is the condition's metric in the window; false when the window
// says nothing about it (no operation of the rule's op completed).
func (e *Engine) value(rows []measure.WindowRow, c Condition) (float64, bool) {
	if !c.Metric.IsLatency() {
		all, ok := rowOf(rows, measure.AllOps)
		return all.Throughput(), ok
	}
	r, ok := rowOf(rows, e.cfg.Op)
	if !ok {
		return 0, false
	}
	return latency(r, c.Metric)
}

// latency is metric m of window row r in µs; a window whose operations all
// failed has the longest failed operation's latency (a lower bound: the
// operations were still waiting), one without operations none.
func latency(r measure.WindowRow, m Metric) (float64, bool) {
	if r.OK == 0 {
		if r.FailureCount() > 0 {
			return r.FailMaxUs, true
		}
		return 0, false
	}
	switch m {
	case P50:
		return r.P50Us, true
	case P90:
		return r.P90Us, true
	case P95:
		return r.P95Us, true
	case P999:
		return r.P999Us, true
	case Mean:
		return r.MeanUs, true
	}
	return r.P99Us, true
}

// threshold is c's threshold in the unit of its metric (µs, ops/s).
func (e *Engine) threshold(c Condition) float64 {
	switch {
	case c.Metric.IsLatency():
		return float64(c.Latency) / float64(time.Microsecond)
	case c.Percent > 0:
		return e.capacity * c.Percent / 100
	}
	return c.Ops
}

func (e *Engine) holds(c Condition, v float64) bool {
	t := e.threshold(c)
	if !c.Metric.IsLatency() && c.Percent > 0 && e.capacity <= 0 {
		return false // no capacity measured: a percentage of nothing never holds
	}
	if c.Above {
		return v > t
	}
	return v < t
}

// rowOf returns the row of op among one window's rows.
func rowOf(rows []measure.WindowRow, op string) (measure.WindowRow, bool) {
	for _, r := range rows {
		if r.Op == op {
			return r, true
		}
	}
	return measure.WindowRow{}, false
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
