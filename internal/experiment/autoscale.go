package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/autoscale"
	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/workload"
)

// autoscaler is a scenario's autoscale section at work (EB2): the rules
// read every closed window of the measured run, and a decision runs the
// add-node or remove-node fault on the cluster, labelled with the
// decision, so that its milestones and the elasticity metrics follow it.
type autoscaler struct {
	cfg        autoscale.Config
	startNodes int
	feed       chan []measure.WindowRow // the collector's windows, handed over without blocking it

	mu        sync.Mutex
	decisions []autoscale.Decision
	errs      []string
	capacity  float64
}

// newAutoscaler checks the scenario's autoscale section against the target
// (its launcher must add and remove nodes) and the workload's operations.
func (r *scenarioRun) newAutoscaler(wl *workload.Workload) error {
	sec := r.sc.Autoscale
	if sec == nil {
		return nil
	}
	cfg, err := sec.Config(r.sc.Target.Nodes)
	if err != nil {
		return &InvalidError{Err: fmt.Errorf("%s: %w", r.s.File, err)}
	}
	if cfg.Op != measure.AllOps && !slices.Contains(wl.OpNames(), cfg.Op) {
		return &InvalidError{Err: fmt.Errorf("%s: field autoscale.op: %q is not an operation of the workload (%s or %s)", r.s.File, cfg.Op, measure.AllOps, strings.Join(wl.OpNames(), ", "))}
	}
	for _, a := range cfg.Actions() {
		// the abilities the add-node and remove-node faults use: a target
		// autoscales once its launcher has them
		var ok bool
		what := "add nodes to"
		switch a {
		case autoscale.AddNode:
			_, ok = r.tgt.Launcher.(launcher.Scaler)
		case autoscale.RemoveNode:
			_, ok = r.tgt.Launcher.(launcher.Shrinker)
			what = "remove nodes from"
		}
		if !ok {
			return &InvalidError{Err: fmt.Errorf("%s: field autoscale.rules: the %s launcher cannot %s a running cluster (see %s)", r.s.File, r.tgt.Kind, what, r.tgt.Docs)}
		}
	}
	r.scaler = &autoscaler{cfg: cfg, startNodes: r.sc.Target.Nodes, feed: make(chan []measure.WindowRow, 256)}
	return nil
}

// observe is the collector's window callback: it never blocks (a full
// feed drops the window; the task drains it while no action runs, and the
// engine ignores the windows of a running action anyway).
func (a *autoscaler) observe(rows []measure.WindowRow) {
	select {
	case a.feed <- slices.Clone(rows):
	default:
	}
}

// autoscale is the task that runs the rules while the measured run lasts.
func (r *scenarioRun) autoscale(ctx context.Context, start time.Time) error {
	a := r.scaler
	a.mu.Lock()
	a.capacity = r.sum.CapacityOps
	a.mu.Unlock()
	e := autoscale.NewEngine(a.cfg, a.startNodes, a.capacity)
	for {
		var rows []measure.WindowRow
		select {
		case <-ctx.Done():
			return nil
		case rows = <-a.feed:
		}
		d, ok := e.Observe(rows)
		if !ok {
			continue
		}
		ev := r.run.Events.Add(event.Event{Kind: autoscale.EventDecision, Fault: d.Label, Detail: d.String()})
		d.AtMs = ms(ev.Since())
		a.mu.Lock()
		a.decisions = append(a.decisions, d)
		a.mu.Unlock()
		st := fault.Step{Action: fault.Action(d.Action), Label: d.Label}
		if d.Action == autoscale.RemoveNode {
			// scale-in undoes the latest scale-out: the newest node
			nodes := r.faults.Snapshot().Nodes
			st.Node = nodes[len(nodes)-1].Name
		}
		// the size the rules count is the target's (masters for Redis
		// Cluster, not its replicas): the decision's, once its action
		// succeeded
		size := e.Nodes()
		if err := fault.Run(ctx, time.Now(), fault.Schedule{st}, r.faults, r.freg, nil); err != nil {
			if ctx.Err() == nil {
				a.mu.Lock()
				a.errs = append(a.errs, fmt.Sprintf("%s (%s): %v", d.Label, d.Action, err))
				a.mu.Unlock()
			}
		} else {
			size = d.NodesAfter
		}
		e.Done(time.Since(start), size)
	}
}

// judgeAutoscale puts the EB2 metrics into summary.json's autoscale section.
func (r *scenarioRun) judgeAutoscale() {
	a := r.scaler
	if a == nil || r.outcome == nil {
		return
	}
	a.mu.Lock()
	decisions, errs, capacity := slices.Clone(a.decisions), slices.Clone(a.errs), a.capacity
	a.mu.Unlock()
	rep := autoscale.Analyze(a.cfg, a.startNodes, capacity, decisions, r.outcome.Windows, r.run.Events.Events())
	for _, e := range errs {
		r.sum.Errors = append(r.sum.Errors, "autoscale: "+e)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		r.sum.Errors = append(r.sum.Errors, "autoscale: "+err.Error())
		return
	}
	if r.sum.Sections == nil {
		r.sum.Sections = map[string]json.RawMessage{}
	}
	r.sum.Sections[autoscale.SummaryKey] = b
}

// offeredBeforeFirstFault is the open-loop rate the analysis judges the
// run's validity against (the offered load before the first fault): the
// run's rate, times the rate profile's mean factor over that span when the
// load follows one (runner.profile).
func (r *scenarioRun) offeredBeforeFirstFault() float64 {
	if r.prep == nil || !r.prep.Settings.Runner.Profile.Enabled() || r.rate <= 0 || r.outcome == nil {
		return r.rate
	}
	rc := r.prep.Settings.Runner
	end := rc.Duration
	for _, e := range r.run.Events.Events() {
		if e.Kind == event.FaultInject && e.Since() >= rc.Warmup {
			end = min(end, e.Since()-rc.Warmup)
		}
	}
	return r.rate * rc.Profile.Mean(0, end)
}
