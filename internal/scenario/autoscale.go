package scenario

import (
	"errors"
	"fmt"

	"github.com/faultbench/faultbench/internal/autoscale"
)

// Autoscale is a scenario's autoscale section: rule-based scaling during
// the measured run, the elasticity benchmark EB2 (internal/autoscale,
// docs/scenarios.md). Each rule fires its action (add-node, remove-node)
// when its condition has held for its duration, evaluated by faultbench on
// its own windows.
type Autoscale struct {
	Rules []AutoscaleRule `yaml:"rules"`
	// Cooldown: after a scaling action ended, no rule fires for this long.
	Cooldown Duration `yaml:"cooldown,omitempty"`
	// MinNodes and MaxNodes bound the cluster's size (default: the
	// target's nodes and one more).
	MinNodes int `yaml:"min_nodes,omitempty"`
	MaxNodes int `yaml:"max_nodes,omitempty"`
	// LatencyTarget is the SLA whose violations (windows with a p99 above
	// it) are counted around each decision; default: the first "p99 >"
	// rule's threshold.
	LatencyTarget Duration `yaml:"latency_target,omitempty"`
	// Op is the operation whose latency the rules and the SLA read
	// (default ALL).
	Op string `yaml:"op,omitempty"`
}

// AutoscaleRule is one rule: "when: p99 > 20ms, for: 5s, then: add-node".
type AutoscaleRule struct {
	Name string   `yaml:"name,omitempty"`
	When string   `yaml:"when"`
	For  Duration `yaml:"for,omitempty"`
	Then string   `yaml:"then"`
}

// Config returns the section as internal/autoscale's configuration for a
// cluster starting with nodes nodes (0: not known yet, the size bounds
// default later), defaulted and validated.
func (a *Autoscale) Config(nodes int) (autoscale.Config, error) {
	c := autoscale.Config{Cooldown: a.Cooldown.D(), MinNodes: a.MinNodes, MaxNodes: a.MaxNodes,
		LatencyTarget: a.LatencyTarget.D(), Op: a.Op}
	var errs []error
	for i, r := range a.Rules {
		cond, err := autoscale.ParseCondition(r.When)
		if err != nil {
			errs = append(errs, &FieldError{Field: fmt.Sprintf("autoscale.rules[%d].when", i), Msg: err.Error()})
			continue
		}
		c.Rules = append(c.Rules, autoscale.Rule{Name: r.Name, When: cond, For: r.For.D(), Action: autoscale.Action(r.Then)})
	}
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	if c.MinNodes == 0 {
		c.MinNodes = max(nodes, 1)
	}
	if c.MaxNodes == 0 {
		c.MaxNodes = max(nodes, c.MinNodes) + 1
	}
	c.Defaults()
	if err := c.Validate(); err != nil {
		return c, &FieldError{Field: "autoscale", Msg: err.Error()}
	}
	if nodes > 0 {
		if err := c.CheckNodes(nodes); err != nil {
			return c, &FieldError{Field: "autoscale", Msg: err.Error()}
		}
	}
	return c, nil
}

// validate checks the section against the scenario: its rules, a
// capacity for percentage thresholds, a cluster faultbench starts.
func (a *Autoscale) validate(s *Scenario) []error {
	c, err := a.Config(s.Target.Nodes)
	if err != nil {
		return unjoin(err)
	}
	var errs []error
	if c.NeedsCapacity() && s.Load.Rate.Percent <= 0 {
		errs = append(errs, &FieldError{Field: "autoscale.rules", Msg: "a throughput threshold in % of capacity needs load.rate as a percentage (the capacity is calibrated); give ops/s instead"})
	}
	if len(s.Target.Endpoints) > 0 {
		errs = append(errs, &FieldError{Field: "autoscale", Msg: "scaling needs a cluster faultbench started; remove target.endpoints"})
	}
	return errs
}
