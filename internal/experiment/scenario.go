package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/check"
	"github.com/faultbench/faultbench/internal/clusterctl"
	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/report"
	"github.com/faultbench/faultbench/internal/report/live"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/target"
)

// ScenarioSpec is one `faultbench scenario` (or `demo`) invocation.
type ScenarioSpec struct {
	Scenario *scenario.Scenario // parsed and validated, not yet resolved
	File     string             // where it came from (for workload lookup and messages)
	// OpenWorkload finds a workload file by name when it is not on disk
	// (the binary's embedded copies); may be nil.
	OpenWorkload func(name string) (io.Reader, error)
	RunsDir      string
	StateDir     string
	Out, Err     io.Writer
	Status       bool // plain status lines every 10 s even on a terminal
	Quiet        bool // no progress display
	// MetricsAddr is where to serve Prometheus metrics during the measured
	// run (host:port); "" serves none.
	MetricsAddr string
	// Beside, if set, runs alongside the measured run with the run's t=0 and
	// the driver properties pointing at the cluster (e.g. an independent
	// probe); it must return when ctx ends.
	Beside  func(ctx context.Context, start time.Time, p *properties.Properties)
	Version string
	Commit  string
}

// ScenarioSummary is summary.json of a scenario run.
type ScenarioSummary struct {
	Scenario    string           `json:"scenario"`
	Target      string           `json:"target"`
	Nodes       int              `json:"nodes"`
	Replicas    int              `json:"replicas"`
	RateSpec    string           `json:"rate"`
	CapacityOps float64          `json:"calibrated_capacity_ops,omitempty"`
	TargetOps   float64          `json:"target_ops"`
	Threads     int              `json:"threads"`
	WindowMs    float64          `json:"window_ms"`
	WarmupMs    float64          `json:"warmup_ms"`
	DurationMs  float64          `json:"duration_ms"`
	EndReason   string           `json:"end_reason"`
	Totals      report.Totals    `json:"totals"`
	Analysis    *analyze.Report  `json:"availability,omitempty"`
	LostWrites  *check.Result    `json:"lost_writes,omitempty"`
	Errors      []string         `json:"errors,omitempty"`
	Faults      []fault.Step     `json:"-"`
	Checks      map[string]bool  `json:"checks_passed,omitempty"`
	Calibration *CalibrationInfo `json:"calibration,omitempty"`
	// PeakRSSBytes is faultbench's own peak resident memory.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
}

// CalibrationInfo records the closed-loop capacity run.
type CalibrationInfo struct {
	Dir         string  `json:"dir"`
	DurationMs  float64 `json:"duration_ms"`
	Threads     int     `json:"threads"`
	CapacityOps float64 `json:"capacity_ops"`
	Percent     float64 `json:"percent"`
}

// ScenarioOutcome is what RunScenario leaves besides its files.
type ScenarioOutcome struct {
	Dir     string
	Summary *ScenarioSummary
}

// RunScenario runs a scenario end to end: launch the cluster (unless the
// scenario names endpoints), load, calibrate if the rate is a percentage,
// run with the fault schedule and the watcher, restore every node, run the
// checks, analyze, and write summary.json. Whatever happens, the cluster it
// started is stopped before it returns.
func RunScenario(ctx context.Context, s ScenarioSpec) (out *ScenarioOutcome, err error) {
	sc := s.Scenario
	if s.RunsDir == "" {
		s.RunsDir = "runs"
	}
	if s.StateDir == "" {
		s.StateDir = launcher.DefaultStateDir()
	}
	if s.Out == nil {
		s.Out = io.Discard
	}
	if s.Err == nil {
		s.Err = io.Discard
	}
	s.Err = live.NewConsole(s.Err) // the progress bar shares it with the event lines
	tgt, err := target.Builtin().Get(sc.Target.Kind)
	if err != nil {
		return nil, fmt.Errorf("%s: field target.kind: %w", s.File, err)
	}
	sc.Resolve(defaultVictim(tgt.Kind))
	if sc.Target.Nodes == 0 {
		sc.Target.Nodes = tgt.DefaultNodes
	}
	if sc.Target.Replicas == nil {
		r := tgt.DefaultReplicas
		sc.Target.Replicas = &r
	}
	external := len(sc.Target.Endpoints) > 0
	if external && len(sc.Schedule.Steps) > 0 {
		return nil, fmt.Errorf("%s: faults need a cluster faultbench started; remove target.endpoints or the schedule", s.File)
	}
	freg := fault.NewRegistry()
	steps := make(fault.Schedule, len(sc.Schedule.Steps))
	for i, st := range sc.Schedule.Steps {
		steps[i] = fault.Step{At: st.At.D(), Action: fault.Action(st.Fault), Node: st.Node, As: st.As, Label: st.Label, Hold: st.Hold.D()}
	}
	if err := steps.ValidateFor(freg, nil); err != nil {
		return nil, fmt.Errorf("%s: schedule: %w", s.File, err)
	}
	base, err := s.baseProperties(tgt)
	if err != nil {
		return nil, err
	}

	var metrics *live.Metrics
	if s.MetricsAddr != "" {
		srv, err := live.Serve(ctx, s.MetricsAddr)
		if err != nil {
			return nil, err
		}
		defer srv.Close()
		fmt.Fprintf(s.Err, "metrics: %s\n", srv.URL())
		metrics = srv.Metrics
	}

	dir, err := rundir.Create(s.RunsDir, sc.Name, time.Now())
	if err != nil {
		return nil, err
	}
	out = &ScenarioOutcome{Dir: dir}
	resolved, err := sc.Marshal()
	if err != nil {
		return out, err
	}
	if err := rundir.WriteFile(filepath.Join(dir, "scenario.yaml"), resolved); err != nil {
		return out, err
	}
	env := rundir.HostEnv(s.Version, s.Commit)
	env.Target = tgt.Kind
	if err := rundir.WriteJSON(filepath.Join(dir, "env.json"), env); err != nil {
		return out, err
	}
	evs, err := event.Create(filepath.Join(dir, "events.jsonl"), time.Now())
	if err != nil {
		return out, err
	}
	defer evs.Close()
	evs.OnEvent(func(e event.Event) {
		switch e.Kind {
		case event.FaultInject, event.FaultRestore, event.FaultRestored, event.FaultInjected, event.FaultError, event.LeaderChange, event.RoleChange,
			fault.EventClientCrashed, fault.EventClientFailed, fault.EventClientRecovered:
			fmt.Fprintf(s.Err, "%s  %-15s %s %s\n", e.Wall.Format("15:04:05.000"), e.Kind, e.Node, e.Detail)
		}
	})

	// The cluster.
	var ft *fault.Target
	if external {
		base.Set(tgt.EndpointKey, strings.Join(sc.Target.Endpoints, ","))
	} else {
		lenv, err := launcher.NewEnv()
		if err != nil {
			return out, err
		}
		m := clusterctl.New(s.StateDir, lenv)
		fmt.Fprintf(s.Err, "starting %s cluster: %d nodes, %d replicas ...\n", tgt.Kind, sc.Target.Nodes, *sc.Target.Replicas)
		uctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		c, err := m.Up(uctx, tgt.Kind, launcher.Spec{
			Name: "run-" + filepath.Base(dir), Nodes: sc.Target.Nodes, Replicas: *sc.Target.Replicas,
			Dir: filepath.Join(dir, "cluster"), KeepData: sc.Target.KeepData, Options: sc.Target.Options,
		})
		cancel()
		if err != nil {
			return out, err
		}
		defer func() {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if derr := m.Down(dctx, c.Name); derr != nil {
				err = errors.Join(err, derr)
			}
		}()
		tgt.Connect(base, c)
		if len(steps.ClientSteps(freg)) > 0 {
			// the driver exists only once the cluster runs: check it now,
			// before the load phase
			if err := s.checkClientFaults(ctx, tgt.Kind, steps, freg, base.Clone()); err != nil {
				return out, err
			}
		}
		ft = &fault.Target{Launcher: tgt.Launcher, Env: lenv, Cluster: c, Events: evs, Save: m.Save}
		evs.Emit(event.ClusterHealthy, strings.Join(c.NodeNames(), ","), "cluster up")
	}
	sum := &ScenarioSummary{Scenario: sc.Name, Target: tgt.Kind, Nodes: sc.Target.Nodes, Replicas: *sc.Target.Replicas,
		RateSpec: sc.Load.Rate.String(), Threads: sc.Load.Threads, WindowMs: ms(sc.Load.Window.D()),
		WarmupMs: ms(sc.Load.Warmup.D()), DurationMs: ms(sc.Load.Duration.D()), Checks: map[string]bool{}}
	out.Summary = sum

	// Load.
	if !sc.Load.SkipLoad {
		p := base.Clone()
		p.Set("threadcount", strconv.Itoa(sc.Load.LoadThreads))
		fmt.Fprintf(s.Err, "loading records with %d threads ...\n", sc.Load.LoadThreads)
		if _, err := s.phase(ctx, tgt.Kind, runner.Load, p, filepath.Join(dir, "load"), Hooks{}); err != nil {
			return out, fmt.Errorf("load phase: %w", err)
		}
	}
	// Calibration.
	rate := sc.Load.Rate.OpsPerSec
	if sc.Load.Rate.Percent > 0 {
		p := base.Clone()
		cd := sc.Load.Calibration.D()
		p.Set("maxexecutiontime", (cd * 4 / 5).String())
		p.Set("warmup", (cd / 5).String())
		fmt.Fprintf(s.Err, "calibrating capacity: closed loop, %d threads, %s ...\n", sc.Load.Threads, cd)
		co, err := s.phase(ctx, tgt.Kind, runner.Run, p, filepath.Join(dir, "calibration"), Hooks{})
		if err != nil {
			return out, fmt.Errorf("calibration: %w", err)
		}
		capacity := report.TotalsOf(co.Totals).All.ThroughputOp
		if capacity <= 0 {
			return out, errors.New("calibration: the cluster completed no operation; nothing to take a percentage of")
		}
		rate = capacity * sc.Load.Rate.Percent / 100
		sum.CapacityOps = capacity
		sum.Calibration = &CalibrationInfo{Dir: "calibration", DurationMs: ms(cd), Threads: sc.Load.Threads, CapacityOps: capacity, Percent: sc.Load.Rate.Percent}
		fmt.Fprintf(s.Err, "capacity %.0f ops/s; running at %s = %.0f ops/s\n", capacity, sc.Load.Rate, rate)
	}
	sum.TargetOps = rate

	// The measured run with faults.
	p := base.Clone()
	p.Set("maxexecutiontime", sc.Load.Duration.D().String())
	p.Set("warmup", sc.Load.Warmup.D().String())
	if rate > 0 {
		p.Set("target", strconv.FormatFloat(rate, 'f', 1, 64))
	}
	var tracker *check.Tracker
	wantLost := contains(sc.Checks, "lost-writes")
	if wantLost {
		tracker = check.NewTracker(sc.Load.Threads)
	}
	hooks := Hooks{Status: !s.Quiet, StatusLines: s.Status, StatusOut: s.Err, Events: evs, Metrics: metrics}
	if tracker != nil {
		hooks.Tracker = tracker
	}
	var schedErr error
	if s.Beside != nil {
		hooks.During = func(rctx context.Context, start time.Time) error {
			s.Beside(rctx, start, p.Clone())
			return nil
		}
	}
	if ft != nil {
		beside := hooks.During
		warm := sc.Load.Warmup.D()
		hooks.During = func(rctx context.Context, start time.Time) error {
			wctx, stopWatch := context.WithCancel(rctx)
			watchDone := make(chan struct{})
			go func() { fault.Watch(wctx, ft, 200*time.Millisecond); close(watchDone) }()
			defer func() { stopWatch(); <-watchDone }()
			if beside != nil {
				besideDone := make(chan struct{})
				go func() { _ = beside(rctx, start); close(besideDone) }()
				defer func() { <-besideDone }()
			}
			if len(steps) == 0 {
				<-rctx.Done()
				return nil
			}
			// roles resolve to the first match by name: repeatable runs
			r := fault.NewResolver(nil)
			schedErr = fault.Run(rctx, start.Add(warm), steps, ft, freg, r)
			<-rctx.Done()
			return nil
		}
	}
	fmt.Fprintf(s.Err, "running %s for %s (warm-up %s) at %s with %d threads; run directory %s\n",
		sc.Name, sc.Load.Duration.D(), sc.Load.Warmup.D(), rateText(rate), sc.Load.Threads, dir)
	prep, err := Prepare(ctx, tgt.Kind, runner.Run, p, s.StateDir)
	if err != nil {
		return out, err
	}
	if err := writeProperties(filepath.Join(dir, "run.properties"), p); err != nil {
		prep.Close()
		return out, err
	}
	if ft != nil {
		ft.Load = prep.Driver // for client faults; set before the schedule runs
	}
	ro, err := Execute(ctx, prep, dir, hooks)
	if err != nil {
		prep.Close()
		return out, err
	}
	sum.EndReason = ro.Result.Reason
	sum.Totals = report.TotalsOf(ro.Totals)
	if schedErr != nil {
		sum.Errors = append(sum.Errors, "schedule: "+schedErr.Error())
	}

	// Restore, check, analyze.
	if ft != nil && ctx.Err() == nil {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		if err := fault.RestoreAll(rctx, ft); err != nil {
			sum.Errors = append(sum.Errors, "restore: "+err.Error())
		}
		cancel()
	}
	if wantLost && ctx.Err() == nil {
		fmt.Fprintln(s.Err, "checking lost writes: reading every written key back ...")
		evs.Emit(event.PhaseStart, "", "check")
		cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		res := tracker.Verify(cctx, prep.Driver, prep.Workload.Table(), 16)
		cancel()
		evs.Emit(event.PhaseEnd, "", "check: "+res.String())
		sum.LostWrites = &res
		sum.Checks["lost-writes"] = res.OK()
	}
	prep.Close()
	params := analyze.DefaultParams()
	params.DownFrac = sc.Analysis.DownFraction
	params.RecoverTol = sc.Analysis.RecoverTol
	params.Hold = sc.Analysis.Hold.D()
	params.SteadyTol = sc.Analysis.SteadyTolerance
	params.SteadySpan = sc.Analysis.SteadySpan.D()
	rep, aerr := analyze.Analyze(ro.Windows, evs.Events(), params)
	if aerr != nil {
		sum.Errors = append(sum.Errors, "analysis: "+aerr.Error())
	}
	sum.Analysis = rep
	sum.PeakRSSBytes = PeakRSS()
	if err := rundir.WriteJSON(filepath.Join(dir, "summary.json"), sum); err != nil {
		return out, err
	}
	WriteScenarioSummary(s.Out, sum, ro, prep.Settings.Basis)
	fmt.Fprintf(s.Out, "run directory: %s\n", dir)
	report.Finish(context.WithoutCancel(ctx), dir, s.Out, s.Err)
	return out, ctx.Err()
}

// WriteScenarioSummary prints the YCSB summary, the availability table and
// the check verdicts.
func WriteScenarioSummary(w io.Writer, sum *ScenarioSummary, ro *Outcome, basis report.LatencyBasis) {
	if ro != nil && ro.Totals != nil {
		report.WriteYCSB(w, ro.Totals, basis)
	}
	if sum.Analysis != nil {
		fmt.Fprintln(w)
		fmt.Fprint(w, analyze.ResultsTable([]string{sum.Scenario}, []*analyze.Report{sum.Analysis}))
	}
	if sum.LostWrites != nil {
		verdict := "PASS"
		if !sum.LostWrites.OK() {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "\nlost-writes check: %s — %s\n", verdict, sum.LostWrites)
		for i, e := range sum.LostWrites.Examples {
			if i == 5 {
				break
			}
			fmt.Fprintf(w, "  %s %s: found %s, last acknowledged %s %s\n", e.Kind, e.Key, e.Found, e.Expected, e.Detail)
		}
	}
	for _, e := range sum.Errors {
		fmt.Fprintf(w, "error: %s\n", e)
	}
}

func (s *ScenarioSpec) phase(ctx context.Context, kind string, ph runner.Phase, p *properties.Properties, dir string, h Hooks) (*Outcome, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	prep, err := Prepare(ctx, kind, ph, p, s.StateDir)
	if err != nil {
		return nil, err
	}
	defer prep.Close()
	if err := writeProperties(filepath.Join(dir, "run.properties"), p); err != nil {
		return nil, err
	}
	o, err := Execute(ctx, prep, dir, h)
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return o, err
}

// baseProperties builds the properties every phase shares: the workload
// file, the scenario's workload properties, the driver properties and the
// load settings.
func (s *ScenarioSpec) baseProperties(tgt *target.Target) (*properties.Properties, error) {
	sc := s.Scenario
	p := properties.New()
	path, perr := sc.WorkloadPath(s.File)
	switch {
	case perr == nil:
		if err := p.LoadFile(path); err != nil {
			return nil, err
		}
	case s.OpenWorkload != nil:
		r, err := s.OpenWorkload(sc.Workload.YCSB)
		if err != nil {
			return nil, perr
		}
		if err := p.Load(r, "workloads/"+sc.Workload.YCSB); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%s: %w", s.File, perr)
	}
	for k, v := range sc.Workload.Properties {
		p.Set(k, v)
	}
	for k, v := range sc.Target.Driver {
		p.Set(k, v)
	}
	tgt.ApplyDefaults(p)
	p.Set("operationcount", "0")
	p.Set("threadcount", strconv.Itoa(sc.Load.Threads))
	p.Set("measurement.window", sc.Load.Window.D().String())
	p.Set("optimeout", sc.Load.OpTimeout.D().String())
	return p, nil
}

// checkClientFaults rejects client faults (crash-client) when the target's
// driver cannot crash its client (driver.ClientCrasher): it builds the
// run's driver once to look. Errors name the scenario file and field.
func (s *ScenarioSpec) checkClientFaults(ctx context.Context, kind string, steps fault.Schedule, reg *fault.Registry, p *properties.Properties) error {
	p.Set("maxexecutiontime", "1s") // a run needs an end; this one never runs
	prep, err := Prepare(ctx, kind, runner.Run, p, s.StateDir)
	if err != nil {
		return err
	}
	defer prep.Close()
	return clientFaultsSupported(s.File, kind, steps, reg, prep.Driver)
}

// clientFaultsSupported checks that d can do what the schedule's client
// faults need; errors name the scenario file and field.
func clientFaultsSupported(file, kind string, steps fault.Schedule, reg *fault.Registry, d driver.Driver) error {
	var errs []error
	for _, i := range steps.ClientSteps(reg) {
		if _, ok := d.(driver.ClientCrasher); !ok {
			errs = append(errs, fmt.Errorf("%s: field schedule[%d].fault: %s acts on the load's client library and needs a driver that can crash it (txkv's can); the %s driver cannot", file, i, steps[i].Action, kind))
		}
	}
	return errors.Join(errs...)
}

func defaultVictim(kind string) string {
	switch kind {
	case "etcd":
		return "leader"
	case "redis-cluster", "redis":
		return "primary"
	}
	return "random"
}

func rateText(r float64) string {
	if r <= 0 {
		return "full speed (closed loop)"
	}
	return fmt.Sprintf("%.0f ops/s", r)
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
