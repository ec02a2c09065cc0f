// Package autoscale is rule-based autoscaling during a run, the elasticity
// benchmark type EB2 of Kuhlenkamp, Klems and Röss (VLDB 2014): the load
// changes (runner.profile) and scaling actions are taken automatically by
// rules over faultbench's own live windows ("add a node when the windowed
// p99 stays above 20 ms for 5 s; remove one when the throughput stays
// below 30 % of capacity for 10 s"), with a cooldown and bounds on the
// cluster's size.
//
// The package decides and measures; it acts on nothing. Config is the
// rules (a scenario's autoscale section, checked by Validate); an Engine
// reads each closed window and says when a rule fires (Observe) and is
// told when the scaling action it asked for ended (Done); Analyze turns the
// decisions, the windows and the run's events into the EB2 metrics of
// summary.json's autoscale section: per decision the time from the rule
// firing to the cluster serving at its new size, and the SLA violations
// (windows whose p99 is above the latency target) before, during and after
// it (docs/metrics.md, "Autoscaling (EB2)"). The orchestrator
// (internal/experiment) runs the action through the add-node and
// remove-node faults, so any target whose launcher can add and remove
// nodes (launcher.Scaler, launcher.Shrinker) autoscales.
package autoscale

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/measure"
)

// SummaryKey is the autoscale section's key in summary.json.
const SummaryKey = "autoscale"

// EventDecision is the events.jsonl kind of a decision: a rule fired;
// fault: the decision's label (autoscale-N, also the label of the scaling
// action's events); detail: the rule, what it saw and the size change.
const EventDecision = "autoscale"

// Action is what a rule does: the scaling fault it runs.
type Action string

// The actions.
const (
	AddNode    Action = "add-node"
	RemoveNode Action = "remove-node"
)

// Metric is what a rule's condition reads from a window.
type Metric string

// The metrics: a latency percentile or the mean of the rule's operation
// (intended-start latency of its successful operations), or the window's
// throughput of successful operations.
const (
	P50        Metric = "p50"
	P90        Metric = "p90"
	P95        Metric = "p95"
	P99        Metric = "p99"
	P999       Metric = "p999"
	Mean       Metric = "mean"
	Throughput Metric = "throughput"
)

var metrics = []Metric{P50, P90, P95, P99, P999, Mean, Throughput}

// IsLatency reports whether m is a latency.
func (m Metric) IsLatency() bool { return m != Throughput }

// Condition is a rule's test of one window: Metric above or below a
// threshold. A latency threshold is Latency; a throughput threshold is
// either Ops (ops/s) or Percent of the run's calibrated capacity.
type Condition struct {
	Metric  Metric
	Above   bool // true: ">", false: "<"
	Latency time.Duration
	Ops     float64
	Percent float64
}

// String renders the condition as ParseCondition reads it.
func (c Condition) String() string {
	op := "<"
	if c.Above {
		op = ">"
	}
	var v string
	switch {
	case c.Metric.IsLatency():
		v = c.Latency.String()
	case c.Percent > 0:
		v = strconv.FormatFloat(c.Percent, 'f', -1, 64) + "%"
	default:
		v = strconv.FormatFloat(c.Ops, 'f', -1, 64)
	}
	return string(c.Metric) + " " + op + " " + v
}

// ParseCondition reads "METRIC > VALUE" or "METRIC < VALUE": a latency
// metric (p50, p90, p95, p99, p999, mean) against a duration ("p99 > 20ms"),
// or throughput against ops/s or a percentage of capacity ("throughput <
// 30%", "throughput < 500").
func ParseCondition(s string) (Condition, error) {
	f := strings.Fields(s)
	if len(f) != 3 || (f[1] != ">" && f[1] != "<") {
		return Condition{}, fmt.Errorf("condition %q: want METRIC > VALUE or METRIC < VALUE, e.g. \"p99 > 20ms\" or \"throughput < 30%%\"", s)
	}
	c := Condition{Metric: Metric(f[0]), Above: f[1] == ">"}
	known := false
	for _, m := range metrics {
		known = known || m == c.Metric
	}
	if !known {
		return Condition{}, fmt.Errorf("condition %q: unknown metric %q (want one of %s)", s, f[0], metricNames())
	}
	if c.Metric.IsLatency() {
		d, err := time.ParseDuration(f[2])
		if err != nil || d <= 0 {
			return Condition{}, fmt.Errorf("condition %q: a latency threshold is a positive duration, e.g. 20ms", s)
		}
		c.Latency = d
		return c, nil
	}
	if p, ok := strings.CutSuffix(f[2], "%"); ok {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || v <= 0 || v > 1000 {
			return Condition{}, fmt.Errorf("condition %q: a throughput percentage must be in (0, 1000]%%", s)
		}
		c.Percent = v
		return c, nil
	}
	v, err := strconv.ParseFloat(f[2], 64)
	if err != nil || v <= 0 {
		return Condition{}, fmt.Errorf("condition %q: a throughput threshold is ops/s (e.g. 500) or a percentage of capacity (e.g. 30%%)", s)
	}
	c.Ops = v
	return c, nil
}

func metricNames() string {
	s := make([]string, len(metrics))
	for i, m := range metrics {
		s[i] = string(m)
	}
	return strings.Join(s, ", ")
}

// Rule is one autoscaling rule: when its condition holds in consecutive
// windows for For (at least one window), it fires Action.
type Rule struct {
	Name   string // for events and reports; default "ACTION-N"
	When   Condition
	For    time.Duration
	Action Action
}

// String is the rule as reports show it: "add-node when p99 > 20ms for 5s".
func (r Rule) String() string {
	return fmt.Sprintf("%s when %s for %v", r.Action, r.When, r.For)
}

// The bounds of a configuration.
const (
	MaxRules = 16
	MaxNodes = 32
)

// Config is the autoscaling of a run.
type Config struct {
	// Rules are evaluated in order at the end of every window after the
	// warm-up; the first that holds long enough and whose action the size
	// bounds allow fires.
	Rules []Rule
	// Cooldown: after a scaling action ended, no rule fires for this long;
	// the windows before its end count towards no rule.
	Cooldown time.Duration
	// MinNodes and MaxNodes bound the cluster's size: remove-node does not
	// fire at MinNodes, add-node not at MaxNodes.
	MinNodes, MaxNodes int
	// LatencyTarget is the SLA: a window whose p99 of Op is above it is an
	// SLA violation (successful operations; a window whose operations all
	// failed counts as a violation). Default: the threshold of the first
	// "p99 >" rule.
	LatencyTarget time.Duration
	// Op is the operation whose latency the rules and the SLA read (ALL,
	// READ, UPDATE ...; default ALL).
	Op string
}

// Defaults fills the defaulted fields: rule names, Op, LatencyTarget.
func (c *Config) Defaults() {
	if c.Op == "" {
		c.Op = measure.AllOps
	}
	n := map[Action]int{}
	for i := range c.Rules {
		r := &c.Rules[i]
		n[r.Action]++
		if r.Name == "" {
			r.Name = fmt.Sprintf("%s-%d", r.Action, n[r.Action])
		}
	}
	if c.LatencyTarget == 0 {
		for _, r := range c.Rules {
			if r.When.Metric == P99 && r.When.Above {
				c.LatencyTarget = r.When.Latency
				break
			}
		}
	}
}

// Validate checks the configuration (after Defaults).
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(c.Rules) == 0 {
		bad("no rules: give at least one (e.g. {when: \"p99 > 20ms\", for: 5s, then: add-node})")
	}
	if len(c.Rules) > MaxRules {
		bad("%d rules, at most %d", len(c.Rules), MaxRules)
	}
	names := map[string]bool{}
	for i, r := range c.Rules {
		if r.Action != AddNode && r.Action != RemoveNode {
			bad("rule %d: then %q: want %s or %s", i+1, r.Action, AddNode, RemoveNode)
		}
		if r.For < 0 {
			bad("rule %d: for %v is negative", i+1, r.For)
		}
		if names[r.Name] {
			bad("rule %d: name %q used twice", i+1, r.Name)
		}
		names[r.Name] = true
		w := r.When
		switch {
		case w.Metric.IsLatency() && w.Latency <= 0:
			bad("rule %d: %s needs a latency threshold", i+1, w.Metric)
		case !w.Metric.IsLatency() && w.Ops <= 0 && w.Percent <= 0:
			bad("rule %d: throughput needs ops/s or a percentage of capacity", i+1)
		}
	}
	switch {
	case c.Cooldown < 0:
		bad("cooldown %v is negative", c.Cooldown)
	case c.MinNodes < 1:
		bad("min_nodes %d: at least 1", c.MinNodes)
	case c.MaxNodes < c.MinNodes:
		bad("max_nodes %d is below min_nodes %d", c.MaxNodes, c.MinNodes)
	case c.MaxNodes > MaxNodes:
		bad("max_nodes %d: at most %d", c.MaxNodes, MaxNodes)
	}
	if c.LatencyTarget <= 0 {
		bad("latency_target: none given and no \"p99 >\" rule to take it from; the SLA violations need one")
	}
	return errors.Join(errs...)
}

// CheckNodes checks that a cluster of n nodes is within the bounds.
func (c *Config) CheckNodes(n int) error {
	if n < c.MinNodes || n > c.MaxNodes {
		return fmt.Errorf("the cluster starts with %d nodes, outside min_nodes %d .. max_nodes %d", n, c.MinNodes, c.MaxNodes)
	}
	return nil
}

// NeedsCapacity reports whether a rule's threshold is a percentage of the
// calibrated capacity (the run's rate must then be a percentage, so that
// the capacity is measured).
func (c *Config) NeedsCapacity() bool {
	for _, r := range c.Rules {
		if r.When.Percent > 0 {
			return true
		}
	}
	return false
}

// Actions lists the actions the rules may take, for the launcher check.
func (c *Config) Actions() []Action {
	var out []Action
	seen := map[Action]bool{}
	for _, r := range c.Rules {
		if !seen[r.Action] {
			seen[r.Action] = true
			out = append(out, r.Action)
		}
	}
	return out
}
