package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/histcheck"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/live"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/targets"
	"github.com/faultbench/faultbench/internal/workload"
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
	// Targets is the registry the scenario's target kind is looked up in;
	// nil means targets.Builtin().
	Targets *targets.Registry
	// Faults is the registry the schedule's fault kinds are looked up in;
	// nil means fault.NewRegistry().
	Faults *fault.Registry
	// Workloads is the registry the scenario's workload (its workload
	// property) and its checks are looked up in; nil means
	// workload.Builtin(). Client processes (load.client_processes) build
	// their workload from the built-in registry.
	Workloads *workload.Registry
	// Processes runs the measured phase when its client groups are to be
	// separate processes (load.client_processes, or clients.process=true):
	// distrib.Execute. Nil refuses such a scenario.
	Processes ProcessRunner
	// NodeHosts, with NodeHostNames, puts the scenario's cluster on these
	// inventory hosts, one node per host (`scenario --nodes-from`,
	// docs/distributed.md); nil: on this machine.
	NodeHosts     launcher.Hosts
	NodeHostNames []string
	// Dir, if set, is the run directory to create (a trial's trial-01
	// under its parent); "" creates RunsDir/<UTC time>-<name>.
	Dir string
	// Seed draws the fault times written as windows and the victims
	// written random-of(...) (scenario.Draw, fault.NewDrawResolver); Trial
	// (1-based, of Trials, from BaseSeed) records which trial this run is.
	// Trial 0 is a run without trials: its seed is the scenario's
	// trials.seed (or 1), recorded when it draws anything.
	Seed     uint64
	Trial    int
	Trials   int
	BaseSeed uint64
	// shared is the cluster the trials of mode reuse share; nil: the run
	// starts and stops its own.
	shared *sharedCluster
}

// ScenarioOutcome is what RunScenario leaves besides its files.
type ScenarioOutcome struct {
	Dir     string
	Summary *rundir.Summary
}

// RunScenario runs a scenario end to end, in stages, each a method of
// scenarioRun: resolve and validate (before anything starts), open the run
// directory, bring the cluster up (unless the scenario names endpoints),
// load, calibrate if the rate is a percentage, measure with the fault
// schedule and the watcher as concurrent tasks, restore every node, check,
// analyze and write summary.json and the report. Whatever happens, the
// cluster it started is stopped before it returns.
func RunScenario(ctx context.Context, s ScenarioSpec) (out *ScenarioOutcome, err error) {
	r, err := newScenarioRun(&s)
	if err != nil {
		return nil, err
	}
	if s.MetricsAddr != "" {
		srv, err := live.Serve(ctx, s.MetricsAddr)
		if err != nil {
			return nil, err
		}
		defer srv.Close()
		fmt.Fprintf(s.Err, "metrics: %s\n", srv.URL())
		r.metrics = srv.Metrics
	}
	if err := r.open(); err != nil {
		return nil, err
	}
	defer r.run.Close()
	out = &ScenarioOutcome{Dir: r.run.Dir, Summary: r.sum}
	defer r.down(ctx, &err)
	for _, st := range []struct {
		name string
		fn   func(context.Context) error
	}{
		{"cluster", r.up},
		{"load phase", r.load},
		{"calibration", r.calibrate},
		{"", r.measure},
		{"", r.restoreAndCheck},
		{"", r.analyzeAndWrite},
	} {
		if err = st.fn(ctx); err != nil {
			if st.name != "" {
				err = fmt.Errorf("%s: %w", st.name, err)
			}
			return out, err
		}
	}
	if err := ctx.Err(); err != nil {
		return out, err
	}
	if r.sum.Failed {
		return out, fmt.Errorf("the run did not do what the scenario asks (%s); summary.json and report.html mark it failed", strings.Join(r.sum.Failures, "; "))
	}
	return out, nil
}

// scenarioSource says where a setting of a scenario came from, for
// property errors: the file line or --set that wrote it, else the
// scenario's default.
func scenarioSource(sc *scenario.Scenario, field string) properties.Source {
	if s := sc.Source(field); strings.HasPrefix(s, "--set") {
		return properties.Source{Origin: s}
	} else if s != "" {
		return properties.Source{Origin: s + " (" + field + ")"}
	}
	return properties.Source{Origin: "scenario default (" + field + ")"}
}

// Phase runs one phase of target t into dir (created if missing): prepare
// the driver and workload from p, write run.properties, execute with h.
// The load phase, the calibration, the UPB's load and probes run through it.
func Phase(ctx context.Context, t *targets.Target, ph runner.Phase, p *properties.Properties, stateDir, dir string, h Hooks) (*Outcome, error) {
	return phase(ctx, workload.Builtin(), t, ph, p, stateDir, dir, h)
}

// phase is Phase with the workloads of reg.
func phase(ctx context.Context, reg *workload.Registry, t *targets.Target, ph runner.Phase, p *properties.Properties, stateDir, dir string, h Hooks) (*Outcome, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	prep, err := prepare(ctx, reg, t, ph, p, stateDir)
	if err != nil {
		return nil, err
	}
	defer prep.Close()
	if err := rundir.WriteProperties(filepath.Join(dir, "run.properties"), p); err != nil {
		return nil, err
	}
	o, err := Execute(ctx, prep, dir, h)
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return o, err
}

// FillDefaults fills what the caller left empty: runs/, the default state
// directory, discarded output, the built-in targets.
func (s *ScenarioSpec) FillDefaults() {
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
	if s.Targets == nil {
		s.Targets = targets.Builtin()
	}
	if s.Faults == nil {
		s.Faults = fault.NewRegistry()
	}
	if s.Workloads == nil {
		s.Workloads = workload.Builtin()
	}
}

// BaseProperties builds the properties every phase of a scenario (or of
// an Under Pressure Benchmark run) shares: the workload file, the
// scenario's workload properties, the driver properties and the load
// settings.
func (s *ScenarioSpec) BaseProperties(tgt *targets.Target) (*properties.Properties, error) {
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
		p.SetFrom(k, v, scenarioSource(sc, "workload.properties."+k))
	}
	for k, v := range sc.Target.Driver {
		p.SetFrom(k, v, scenarioSource(sc, "target.driver."+k))
	}
	tgt.ApplyDefaults(p)
	switch {
	case sc.History:
		p.SetFrom(KeyHistory, "true", scenarioSource(sc, "history"))
	case slices.ContainsFunc(sc.Checks, histcheck.IsChecker):
		p.SetFrom(KeyHistory, "true", scenarioSource(sc, "checks"))
	}
	p.SetFrom("operationcount", "0", properties.Source{Origin: "scenario (runs last load.duration)"})
	p.SetFrom("threadcount", strconv.Itoa(sc.Load.Threads), scenarioSource(sc, "load.threads"))
	if sc.Load.Clients > 0 {
		p.SetFrom("clients", strconv.Itoa(sc.Load.Clients), scenarioSource(sc, "load.clients"))
	}
	if sc.Load.ClientProcesses {
		p.SetFrom("clients.process", "true", scenarioSource(sc, "load.client_processes"))
	}
	p.SetFrom("measurement.window", sc.Load.Window.D().String(), scenarioSource(sc, "load.window"))
	p.SetFrom("optimeout", sc.Load.OpTimeout.D().String(), scenarioSource(sc, "load.op_timeout"))
	return p, nil
}

// checkClientFaults rejects client faults (crash-client) when the target's
// driver cannot crash its client (driver.ClientCrasher): it builds the
// run's driver once to look. Errors name the scenario file and field.
func (s *ScenarioSpec) checkClientFaults(ctx context.Context, t *targets.Target, steps fault.Schedule, reg *fault.Registry, p *properties.Properties) error {
	p.Set("maxexecutiontime", "1s") // a run needs an end; this one never runs
	prep, err := prepare(ctx, s.Workloads, t, runner.Run, p, s.StateDir)
	if err != nil {
		return err
	}
	defer prep.Close()
	return clientFaultsSupported(s.File, t.Kind, steps, reg, prep.Driver)
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
