package experiment

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/autoscale"
	"github.com/faultbench/faultbench/internal/check"
	"github.com/faultbench/faultbench/internal/clusterctl"
	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/driver/sqldb"
	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/histcheck"
	"github.com/faultbench/faultbench/internal/hostload"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/live"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/netns"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/report"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/targets"
	"github.com/faultbench/faultbench/internal/workload"
)

// scenarioRun is the state one RunScenario carries from stage to stage.
type scenarioRun struct {
	s       *ScenarioSpec
	sc      *scenario.Scenario
	tgt     *targets.Target
	freg    *fault.Registry
	steps   fault.Schedule
	base    *properties.Properties // what every phase shares
	metrics *live.Metrics          // Prometheus export; nil for none

	run      *rundir.Run
	sum      *rundir.Summary
	manager  *clusterctl.Manager // nil with external endpoints
	cluster  *launcher.Cluster   // the launched cluster; nil with external endpoints
	faults   *fault.Cluster      // what faults act on; nil with external endpoints
	rate     float64             // the measured run's target rate (0: closed loop)
	threads  int                 // the measured run's threads (load.threads, or load.open_threads in open loop)
	tracker  *check.Tracker      // lost-write tracking; nil when not asked
	procs    bool                // the measured phase's client groups are processes
	schedErr error               // the schedule's error, reported in the summary
	prep     *Prepared           // the measured run's driver and workload
	outcome  *Outcome            // the measured run's measurements
	seed     uint64              // draws the windows' times and random-of victims
	drawn    []time.Duration     // the fault times drawn from windows
	draws    bool                // the scenario draws anything (a window or random-of)
	env      rundir.Env          // env.json as written (rewritten with the client settings)
	chaos    *scenario.Chaos     // the chaos section the steps were drawn from; nil without
	scaler   *autoscaler         // the autoscale section at work (EB2); nil without

	// reused: the cluster ran an earlier trial (trials mode reuse), so its
	// keys hold that trial's tagged writes, which this run's lost-write
	// tracker cannot tell from its own
	reused bool
}

// newScenarioRun resolves the scenario against its target and validates
// everything that can be checked before anything starts; its errors are
// *InvalidError (bad input).
func newScenarioRun(s *ScenarioSpec) (*scenarioRun, error) {
	s.FillDefaults()
	s.Err = live.NewConsole(s.Err) // the progress bar shares it with the event lines
	sc := s.Scenario
	tgt, err := s.Targets.Get(sc.Target.Kind)
	if err != nil {
		return nil, &InvalidError{Err: fmt.Errorf("%s: field target.kind: %w", s.File, err)}
	}
	if err := sc.CheckChecks(s.Workloads); err != nil {
		return nil, &InvalidError{Err: fmt.Errorf("%s: %w", s.File, err)}
	}
	seed := s.Seed
	if seed == 0 && s.Trial == 0 {
		seed = 1
		if sc.Trials != nil && sc.Trials.Seed != 0 {
			seed = sc.Trials.Seed
		}
		if sc.Chaos != nil && sc.Chaos.Seed != 0 {
			seed = sc.Chaos.Seed
		}
	}
	draws := sc.Randomised()
	drawn := sc.Draw(seed)
	chaos := sc.ChaosSpec() // Draw turned it into steps
	sc.Resolve(tgt.DefaultVictim)
	if sc.Target.Nodes == 0 {
		sc.Target.Nodes = tgt.Size.Nodes
	}
	if sc.Target.Replicas == nil {
		r := tgt.Size.Replicas
		sc.Target.Replicas = &r
	}
	if len(sc.Target.Endpoints) > 0 && len(sc.Schedule.Steps) > 0 {
		return nil, &InvalidError{Err: fmt.Errorf("%s: faults need a cluster faultbench started; remove target.endpoints or the schedule", s.File)}
	}
	r := &scenarioRun{s: s, sc: sc, tgt: tgt, freg: s.Faults, seed: seed, drawn: drawn, draws: draws, chaos: chaos, threads: sc.Load.Threads}
	r.steps = make(fault.Schedule, len(sc.Schedule.Steps))
	for i, st := range sc.Schedule.Steps {
		r.steps[i] = st.FaultStep()
		if strings.HasPrefix(st.Node, fault.SelectRandomOf+"(") {
			r.draws = true
		}
	}
	for k := range sc.Target.Options {
		if err := tgt.CheckOptionKey(k); err != nil {
			where := sc.Source("target.options." + k)
			if where == "" {
				where = s.File
			}
			return nil, &InvalidError{Err: fmt.Errorf("%s: field target.options.%s: %w", where, k, err)}
		}
	}
	// option values, each blamed on where it was set; then together
	okeys := make([]string, 0, len(sc.Target.Options))
	for k := range sc.Target.Options {
		okeys = append(okeys, k)
	}
	sort.Strings(okeys)
	for _, k := range okeys {
		if err := tgt.CheckOptionValues(map[string]string{k: sc.Target.Options[k]}); err != nil {
			where := sc.Source("target.options." + k)
			if where == "" {
				where = s.File
			}
			return nil, &InvalidError{Err: fmt.Errorf("%s: field target.options.%s: %w", where, k, err)}
		}
	}
	if err := tgt.CheckOptionValues(sc.Target.Options); err != nil {
		return nil, &InvalidError{Err: fmt.Errorf("%s: field target.options: %w", s.File, err)}
	}
	// the schedule against the nodes the launcher will start: a step
	// naming n9 of 3 nodes, or a name never bound with as, fails here
	var plan *launcher.Cluster
	if len(sc.Target.Endpoints) == 0 {
		plan = &launcher.Cluster{Kind: tgt.Kind, Name: tgt.Kind}
		for _, n := range tgt.NodeNamesWith(sc.Target.Nodes, *sc.Target.Replicas, sc.Target.Options) {
			plan.Nodes = append(plan.Nodes, launcher.Node{Name: n})
		}
	}
	if err := r.steps.ValidateFor(r.freg, plan); err != nil {
		return nil, &InvalidError{Err: fmt.Errorf("%s: schedule: %w", s.File, err)}
	}
	if err := fault.CheckScaling(r.steps, tgt.Launcher); err != nil {
		return nil, fmt.Errorf("%s: schedule: %w (see %s)", s.File, err, tgt.Docs)
	}
	if err := fault.CheckDisk(r.steps, sc.Target.Options); err != nil {
		return nil, &InvalidError{Err: fmt.Errorf("%s: schedule: %w", s.File, err)}
	}
	if err := fault.CheckGray(r.steps, sc.Target.Options, tgt.DefaultVictim); err != nil {
		return nil, &InvalidError{Err: fmt.Errorf("%s: schedule: %w", s.File, err)}
	}
	if err := fault.CheckClock(r.steps, sc.Target.Options, tgt.LibcClock, launcher.ErrGoClock); err != nil {
		return nil, &InvalidError{Err: fmt.Errorf("%s: schedule: %w (see %s)", s.File, err, tgt.Docs)}
	}
	if err := fault.CheckSlow(r.steps); err != nil {
		return nil, &InvalidError{Err: fmt.Errorf("%s: schedule: %w", s.File, err)}
	}
	if r.base, err = s.BaseProperties(tgt); err != nil {
		return nil, &InvalidError{Err: err}
	}
	// every property of the measured run (and so of the load phase and
	// the calibration, which share them) is checked before the cluster
	// starts; the driver's own keys are checked when it connects
	p := r.runProperties(0)
	prep, err := checkProperties(s.Workloads, tgt, runner.Run, p)
	if err != nil {
		return nil, err // the properties' sources name the file and line or the --set
	}
	if err := checkWorkloadChecks(s.Workloads, s.File, sc.Checks, prep.Workload); err != nil {
		return nil, &InvalidError{Err: err}
	}
	if err := r.newAutoscaler(prep.Workload); err != nil {
		return nil, err
	}
	if r.procs, err = WantsClientProcesses(p, runner.Run); err != nil {
		return nil, &InvalidError{Err: err}
	}
	if r.procs {
		if err := r.checkProcesses(prep.Workload); err != nil {
			return nil, &InvalidError{Err: err}
		}
	}
	return r, nil
}

// checkProcesses rejects what a measured phase whose client groups are
// separate processes cannot do: the checks and client faults act on the
// load's driver, which lives in those processes, and the live metrics
// export reads the in-process collector.
func (r *scenarioRun) checkProcesses(wl *workload.Workload) error {
	where := r.sc.Source("load.client_processes")
	if where == "" {
		where = r.s.File
	}
	switch {
	case r.s.Processes == nil:
		return fmt.Errorf("%s: client processes (load.client_processes, clients.process): this command cannot start them; run the scenario with `faultbench scenario`", where)
	case len(r.sc.Checks) > len(HistoryCheckNames(r.sc.Checks, wl))+len(historyWorkloadChecks(r.sc.Checks, wl)):
		return fmt.Errorf("%s: client processes (load.client_processes, clients.process) with checks %v: the checks other than the history checkers (%s) read what the load's driver wrote, which runs in the client processes; drop them or run the client groups in-process",
			where, r.sc.Checks, strings.Join(histcheck.Names(), ", "))
	case len(r.steps.ClientSteps(r.freg)) > 0:
		return fmt.Errorf("%s: client processes (load.client_processes, clients.process) with client faults: those crash the load's client library, which runs in the client processes", where)
	case r.s.MetricsAddr != "":
		return fmt.Errorf("%s: client processes (load.client_processes, clients.process) with --metrics-addr: not supported yet", where)
	case r.sc.Autoscale != nil:
		return fmt.Errorf("%s: client processes (load.client_processes, clients.process) with autoscale: the rules read the in-process windows; run the client groups in-process", where)
	}
	return nil
}

// historyWorkloadChecks returns the checks of names that are wl's own
// checks of the merged history (program.Check.History): they run with
// client processes too.
func historyWorkloadChecks(names []string, wl *workload.Workload) []string {
	var out []string
	for _, c := range wl.Entry().Checks() {
		if c.History != nil && slices.Contains(names, c.Name) {
			out = append(out, c.Name)
		}
	}
	return out
}

// runProperties returns the measured run's properties at rate (ops/s; 0
// for closed loop).
func (r *scenarioRun) runProperties(rate float64) *properties.Properties {
	sc := r.sc
	p := r.base.Clone()
	p.SetFrom("maxexecutiontime", sc.Load.Duration.D().String(), scenarioSource(sc, "load.duration"))
	p.SetFrom("warmup", sc.Load.Warmup.D().String(), scenarioSource(sc, "load.warmup"))
	if rate > 0 {
		p.SetFrom("target", strconv.FormatFloat(rate, 'f', 1, 64), scenarioSource(sc, "load.rate"))
	}
	if r.threads > 0 && r.threads != sc.Load.Threads {
		p.SetFrom("threadcount", strconv.Itoa(r.threads), scenarioSource(sc, "load.open_threads"))
	}
	return p
}

// open creates the run directory with the resolved scenario, env.json and
// the events log, and starts the summary.
func (r *scenarioRun) open() error {
	sc := r.sc
	resolved, err := sc.Marshal()
	if err != nil {
		return err
	}
	env := rundir.HostEnv(r.s.Version, r.s.Commit)
	env.Target = r.tgt.Kind
	if r.procs {
		env.ClientGroups = rundir.ClientGroupsProcesses
	}
	if netns.Wanted(sc.Target.Options) {
		env.Network = netns.Describe()
	}
	if v, ok := sc.Target.Driver[sqldb.PropIsolation]; ok {
		env.Isolation = strings.TrimSpace(v) // checked when the driver opens
	}
	now := time.Now()
	if r.s.Dir != "" {
		r.run, err = rundir.OpenAt(r.s.Dir, now, env)
	} else {
		r.run, err = rundir.Open(r.s.RunsDir, sc.Name, now, env)
	}
	env.Started = now
	r.env = env
	if err != nil {
		return err
	}
	if err := rundir.WriteFile(r.run.Path("scenario.yaml"), resolved); err != nil {
		return err
	}
	r.run.Events.OnEvent(func(e event.Event) {
		switch e.Kind {
		case event.FaultInject, event.FaultRestore, event.FaultRestored, event.FaultInjected, event.FaultError, event.LeaderChange, event.RoleChange,
			fault.EventClientCrashed, fault.EventClientFailed, fault.EventClientRecovered, autoscale.EventDecision:
			fmt.Fprintf(r.s.Err, "%s  %-15s %s %s\n", e.Wall.Format("15:04:05.000"), e.Kind, e.Node, e.Detail)
		}
	})
	r.sum = &rundir.Summary{Scenario: sc.Name, Target: r.tgt.Kind, Nodes: sc.Target.Nodes, Replicas: *sc.Target.Replicas,
		RateSpec: sc.Load.Rate.String(), Threads: sc.Load.Threads, WindowMs: ms(sc.Load.Window.D()),
		WarmupMs: ms(sc.Load.Warmup.D()), DurationMs: ms(sc.Load.Duration.D()), Checks: map[string]bool{},
		FaultKinds: r.freg.Unlisted(r.steps.Actions())}
	if r.s.Trial > 0 || r.draws {
		r.sum.Trial = &rundir.TrialInfo{K: r.s.Trial, Of: r.s.Trials, Seed: r.seed, BaseSeed: r.s.BaseSeed}
		for _, d := range r.drawn {
			r.sum.Trial.FaultAtMs = append(r.sum.Trial.FaultAtMs, ms(d))
		}
	}
	return nil
}

// up brings the cluster up, unless the scenario names endpoints, and
// points the phases' properties at it.
func (r *scenarioRun) up(ctx context.Context) error {
	sc := r.sc
	if len(sc.Target.Endpoints) > 0 {
		r.base.Set(r.tgt.EndpointKey, strings.Join(sc.Target.Endpoints, ","))
		return nil
	}
	if sh := r.s.shared; sh != nil && sh.cluster != nil {
		return r.reuse(ctx, sh)
	}
	lenv, err := launcher.NewEnv()
	if err != nil {
		return err
	}
	r.manager = clusterctl.New(r.s.StateDir, lenv, r.s.Targets)
	name := "run-" + filepath.Base(r.run.Dir)
	if r.s.Dir != "" { // a trial: trial-01 is unique only under its parent
		name = "run-" + filepath.Base(filepath.Dir(r.run.Dir)) + "-" + filepath.Base(r.run.Dir)
	}
	spec := launcher.Spec{
		Name: name, Nodes: sc.Target.Nodes, Replicas: *sc.Target.Replicas,
		Dir: r.run.Path("cluster"), KeepData: sc.Target.KeepData, Options: sc.Target.Options,
	}
	if hs := r.s.NodeHosts; hs != nil {
		total := sc.Target.Nodes * (1 + *sc.Target.Replicas)
		if len(r.s.NodeHostNames) < total {
			return fmt.Errorf("--nodes-from: %d nodes but %d node hosts in %s (one node per host)", total, len(r.s.NodeHostNames), hs.Inventory())
		}
		lenv.Remote, spec.Hosts, spec.Dir = hs, r.s.NodeHostNames[:total], ""
		r.manager.Store.OpenHosts = func(string) (launcher.Hosts, error) { return hs, nil }
		fmt.Fprintf(r.s.Err, "nodes on the hosts %s of %s\n", strings.Join(spec.Hosts, ", "), hs.Inventory())
	}
	fmt.Fprintf(r.s.Err, "starting %s cluster: %d nodes, %d replicas ...\n", r.tgt.Kind, sc.Target.Nodes, *sc.Target.Replicas)
	uctx, cancel := context.WithTimeout(ctx, r.tgt.StartTimeout())
	defer cancel()
	c, err := r.manager.Up(uctx, r.tgt.Kind, spec)
	if err != nil {
		return err
	}
	r.cluster = c
	r.tgt.ConnectTo(r.base, c)
	if len(r.steps.ClientSteps(r.freg)) > 0 {
		// the driver exists only once the cluster runs: check it now,
		// before the load phase
		if err := r.s.checkClientFaults(ctx, r.tgt, r.steps, r.freg, r.base.Clone()); err != nil {
			return err
		}
	}
	if r.faults, err = r.manager.FaultCluster(c, r.run.Events, 0); err != nil {
		return err
	}
	r.run.Events.Emit(event.ClusterHealthy, strings.Join(c.NodeNames(), ","), "cluster up")
	if sh := r.s.shared; sh != nil {
		sh.manager, sh.cluster = r.manager, c
	}
	return nil
}

// down stops the cluster up started, adding its error to *err.
func (r *scenarioRun) down(ctx context.Context, err *error) {
	if r.cluster == nil || r.s.shared != nil {
		return // a shared cluster is stopped by the trials after the last
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if derr := r.manager.Down(dctx, r.cluster.Name); derr != nil {
		*err = errors.Join(*err, derr)
	}
}

// load runs the load phase (unless the scenario skips it) into load/.
func (r *scenarioRun) load(ctx context.Context) error {
	if r.sc.Load.SkipLoad {
		return nil
	}
	if sh := r.s.shared; sh != nil {
		if sh.loaded {
			return nil // loaded by the first trial on this cluster
		}
		defer func() { sh.loaded = true }()
	}
	p := r.base.Clone()
	p.SetFrom("threadcount", strconv.Itoa(r.sc.Load.LoadThreads), scenarioSource(r.sc, "load.load_threads"))
	rate := "as fast as it goes"
	if lr := r.sc.Load.LoadRate; lr.OpsPerSec > 0 {
		p.SetFrom("target", strconv.FormatFloat(lr.OpsPerSec, 'f', -1, 64), scenarioSource(r.sc, "load.load_rate"))
		rate = fmt.Sprintf("at %s inserts/s", lr)
	}
	fmt.Fprintf(r.s.Err, "loading records with %d threads, %s ...\n", r.sc.Load.LoadThreads, rate)
	_, err := phase(ctx, r.s.Workloads, r.tgt, runner.Load, p, r.s.StateDir, r.run.Path("load"), Hooks{})
	return err
}

// calibrate measures the capacity closed loop into calibration/ when the
// rate is a percentage of it, and sets the measured run's rate.
func (r *scenarioRun) calibrate(ctx context.Context) error {
	ld := r.sc.Load
	r.rate = ld.Rate.OpsPerSec
	var p99 time.Duration // the calibration's latency, which sizes load.open_threads auto
	defer func() {
		r.sum.TargetOps = r.rate
		var how string
		r.threads, how = openThreads(ld, r.rate, p99)
		r.sum.Threads = r.threads
		if how != "" {
			fmt.Fprintf(r.s.Err, "open loop: %s\n", how)
		}
	}()
	if ld.Rate.Percent <= 0 {
		return nil
	}
	p := r.base.Clone()
	cd := ld.Calibration.D()
	p.Set("maxexecutiontime", (cd * 4 / 5).String())
	p.Set("warmup", (cd / 5).String())
	p.Set(KeyHistory, "false") // the measured run's history only: tags of its own
	fmt.Fprintf(r.s.Err, "calibrating capacity: closed loop, %d threads, %s ...\n", ld.Threads, cd)
	co, err := phase(ctx, r.s.Workloads, r.tgt, runner.Run, p, r.s.StateDir, r.run.Path("calibration"), Hooks{})
	if err != nil {
		return err
	}
	ct := rundir.TotalsOf(co.Totals)
	capacity := ct.All.ThroughputOp
	p99 = time.Duration(ct.All.Latency.P99) * time.Microsecond
	if capacity <= 0 {
		return errors.New("the cluster completed no operation; nothing to take a percentage of")
	}
	r.rate = capacity * ld.Rate.Percent / 100
	r.sum.CapacityOps = capacity
	r.sum.Calibration = &rundir.CalibrationInfo{Dir: "calibration", DurationMs: ms(cd), Threads: ld.Threads, CapacityOps: capacity, Percent: ld.Rate.Percent}
	fmt.Fprintf(r.s.Err, "capacity %.0f ops/s; running at %s = %.0f ops/s\n", capacity, ld.Rate, r.rate)
	return nil
}

// measure runs the measured phase in the run directory itself, with the
// watcher, the fault schedule and the caller's Beside as concurrent tasks.
func (r *scenarioRun) measure(ctx context.Context) error {
	sc := r.sc
	p := r.runProperties(r.rate)
	if contains(sc.Checks, "lost-writes") {
		r.tracker = check.NewTracker(r.threads)
	}
	hooks := Hooks{Status: !r.s.Quiet, StatusLines: r.s.Status, StatusOut: r.s.Err, Events: r.run.Events, Metrics: r.metrics}
	if r.tracker != nil {
		hooks.Tracker = r.tracker
	}
	if r.s.Beside != nil {
		beside := r.s.Beside
		hooks.Tasks = append(hooks.Tasks, func(ctx context.Context, start time.Time) error {
			beside(ctx, start, p.Clone())
			return nil
		})
	}
	if r.faults != nil {
		hooks.Tasks = append(hooks.Tasks, r.watch, r.schedule)
		if r.scaler != nil {
			hooks.OnWindow = r.scaler.observe
			hooks.Tasks = append(hooks.Tasks, r.autoscale)
		}
	}
	hooks.Tasks = append(hooks.Tasks, r.sampleHost)
	fmt.Fprintf(r.s.Err, "running %s for %s (warm-up %s) at %s with %d threads; run directory %s\n",
		sc.Name, sc.Load.Duration.D(), sc.Load.Warmup.D(), rateText(r.rate), r.threads, r.run.Dir)
	if r.procs {
		return r.measureProcesses(ctx, p, hooks.Tasks)
	}
	prep, err := prepare(ctx, r.s.Workloads, r.tgt, runner.Run, p, r.s.StateDir)
	if err != nil {
		return err
	}
	r.prep = prep
	if err := rundir.WriteProperties(r.run.Path("run.properties"), p); err != nil {
		prep.Close()
		return err
	}
	// the driver exists now: env.json gets the client settings it used
	r.env.ClientSettings = clientSettings(prep)
	if w := poolShortfall(r.env.ClientSettings, r.threads); w != "" {
		fmt.Fprintln(r.s.Err, "warning:", w)
		r.run.Events.Emit(event.Note, "", w)
	}
	if r.cluster != nil {
		r.env.TargetOptions = r.cluster.Options
	}
	if err := rundir.WriteJSON(r.run.Path("env.json"), r.env); err != nil {
		prep.Close()
		return err
	}
	if r.faults != nil {
		r.faults.Load = faultClient(prep.Driver) // for client faults; set before the schedule runs
	}
	ro, err := Execute(ctx, prep, r.run.Dir, hooks)
	if err != nil {
		prep.Close()
		return err
	}
	r.outcome = ro
	r.sum.EndReason = ro.Result.Reason
	r.sum.Dropped = ro.Result.Dropped
	r.sum.Totals = rundir.TotalsOf(ro.Totals)
	r.sum.PerClient = ro.PerClient
	r.sum.ErrorSamples = ro.Result.Samples
	r.sum.Figures, r.sum.Sections = ro.Figures, ro.Sections
	r.noteSchedErr()
	return nil
}

// measureProcesses runs the measured phase with its client groups as
// separate processes (ScenarioSpec.Processes), the tasks alongside.
func (r *scenarioRun) measureProcesses(ctx context.Context, p *properties.Properties, tasks []Task) error {
	prep, err := checkProperties(r.s.Workloads, r.tgt, runner.Run, p)
	if err != nil {
		return err
	}
	r.prep = prep // no driver: the processes have theirs
	if err := rundir.WriteProperties(r.run.Path("run.properties"), p); err != nil {
		return err
	}
	ro, err := r.s.Processes(ctx, ProcessJob{Target: r.tgt.Kind, Targets: r.s.Targets, Props: p, Dir: r.run.Dir, Events: r.run.Events,
		Tasks: tasks, StateDir: r.s.StateDir, Quiet: r.s.Quiet, Err: r.s.Err})
	if err != nil {
		return err
	}
	if len(historyWorkloadChecks(r.sc.Checks, prep.Workload)) > 0 {
		// the workload's checks of the merged history read the database
		// too: a driver of this process's own
		if r.prep, err = prepare(ctx, r.s.Workloads, r.tgt, runner.Run, p.Clone(), r.s.StateDir); err != nil {
			return fmt.Errorf("opening the driver for the checks: %w", err)
		}
	}
	r.outcome = ro
	r.sum.EndReason = ro.Result.Reason
	r.sum.Totals = rundir.TotalsOf(ro.Totals)
	r.sum.PerClient = ro.PerClient
	if len(ro.Missing) > 0 {
		r.sum.Failed = true
		r.sum.Failures = append(r.sum.Failures, ro.Missing...)
	}
	r.noteSchedErr()
	return nil
}

// noteSchedErr records the fault schedule's error in the summary.
func (r *scenarioRun) noteSchedErr() {
	if r.schedErr != nil {
		r.sum.Errors = append(r.sum.Errors, "schedule: "+r.schedErr.Error())
		r.sum.Failed = true
		for _, e := range unjoin(r.schedErr) {
			r.sum.Failures = append(r.sum.Failures, "fault schedule: "+e.Error())
		}
	}
}

// unjoin splits an errors.Join error into its parts.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// sampleHost is the task that samples the machine's load average, CPU
// steal, faultbench's own CPU and each local node's CPU into host.csv
// every window (at least 100 ms apart) while the measured run lasts. The
// samples are evidence, not the run: a machine without /proc gets a note
// and no file, never a failed run.
func (r *scenarioRun) sampleHost(ctx context.Context, start time.Time) error {
	f, err := os.Create(r.run.Path(hostload.File))
	if err != nil {
		fmt.Fprintf(r.s.Err, "warning: host load not sampled: %v\n", err)
		return nil
	}
	defer f.Close()
	s := &hostload.Sampler{Interval: max(r.sc.Load.Window.D(), 100*time.Millisecond)}
	if len(r.steps) > 0 {
		// the steps are in time order: the first fault's time
		s.OnSample = hostEvents(r.run.Events, start, r.sc.Load.Warmup.D()+r.steps[0].At)
	}
	if r.faults != nil && r.s.NodeHosts == nil { // nodes on this machine
		fc := r.faults
		s.Nodes = func() map[string]int {
			pids := map[string]int{}
			for _, n := range fc.Snapshot().Nodes {
				pids[n.Name] = n.PID
			}
			return pids
		}
	}
	if err := s.Run(ctx, start, f); err != nil {
		fmt.Fprintf(r.s.Err, "warning: host load not sampled: %v\n", err)
		f.Close()
		os.Remove(r.run.Path(hostload.File))
	}
	return nil
}

// watch is the task that records what the cluster does (nodes down and up,
// leader and role changes) while the run lasts.
func (r *scenarioRun) watch(ctx context.Context, _ time.Time) error {
	fault.Watch(ctx, r.faults, 200*time.Millisecond)
	return nil
}

// schedule is the task that injects the faults at their times after the
// warm-up; its error goes to the summary, not the phase.
func (r *scenarioRun) schedule(ctx context.Context, start time.Time) error {
	if len(r.steps) > 0 {
		// roles resolve to the first match by name: repeatable runs;
		// random, any:N and random-of draw from the run's seed
		res := fault.NewResolver(nil)
		if r.draws {
			res = fault.NewDrawResolver(rand.New(rand.NewPCG(r.seed, 0xfa17)))
		}
		r.schedErr = fault.Run(ctx, start.Add(r.sc.Load.Warmup.D()), r.steps, r.faults, r.freg, res)
	}
	<-ctx.Done()
	return nil
}

// restoreAndCheck brings every node back and runs the checks; the driver
// is released afterwards.
func (r *scenarioRun) restoreAndCheck(ctx context.Context) error {
	defer r.prep.Close()
	if r.faults != nil && ctx.Err() == nil {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		if err := fault.RestoreAll(rctx, r.faults); err != nil {
			r.sum.Errors = append(r.sum.Errors, "restore: "+err.Error())
		}
		cancel()
	}
	if r.tracker != nil && ctx.Err() != nil {
		r.sum.ChecksSkipped = append(r.sum.ChecksSkipped, "lost-writes: skipped, the run was interrupted before the check")
	}
	if r.tracker != nil && ctx.Err() == nil && r.reused {
		// Tags restart at every trial: an earlier trial's value on a key
		// would be judged as this trial's (or as foreign). No verdict
		// rather than a wrong one; mode fresh checks every trial.
		r.sum.ChecksSkipped = append(r.sum.ChecksSkipped, "lost-writes: not judged, the cluster was reused from an earlier trial (trials mode reuse) and its keys hold that trial's writes; run the trials with mode fresh to check every trial")
		fmt.Fprintln(r.s.Err, "lost-writes check: not judged (the cluster is reused from an earlier trial; trials mode fresh checks every trial)")
	}
	if r.tracker != nil && ctx.Err() == nil && !r.reused {
		fmt.Fprintln(r.s.Err, "checking lost writes: reading every written key back ...")
		evs := r.run.Events
		evs.Emit(event.PhaseStart, "", "check")
		if !r.sc.Load.SkipLoad {
			r.tracker.CheckLoaded(r.prep.Workload, 10000) // load keys the run never wrote, sampled
		}
		cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		res := r.tracker.Verify(cctx, r.prep.Driver, r.prep.Workload.Table(), 16)
		cancel()
		evs.Emit(event.PhaseEnd, "", "check: "+res.String())
		r.sum.LostWrites = &res
		r.sum.Checks["lost-writes"] = res.OK()
		if res.Reads != nil {
			r.sum.Checks["stale-reads"] = res.ReadsOK()
		}
		r.perOperationLostWrites(ctx)
	}
	r.runWorkloadChecks(ctx)
	r.runHistoryChecks(ctx)
	return nil
}

// analyzeAndWrite computes the availability metrics, writes summary.json,
// prints the summary and writes the report.
func (r *scenarioRun) analyzeAndWrite(ctx context.Context) error {
	a := r.sc.Analysis
	params := analyze.DefaultParams()
	params.DownFrac = a.DownFraction
	params.RecoverTol = a.RecoverTol
	params.Hold = a.Hold.D()
	params.SteadyTol = a.SteadyTolerance
	params.SteadySpan = a.SteadySpan.D()
	params.OfferedOps = r.offeredBeforeFirstFault()
	params.Kinds = r.freg.Kinds()
	if hl, err := measure.ReadHistLogs(r.run.Dir); err == nil {
		params.Hists = hl // exact span percentiles
	}
	if a.LatencyOp != "" {
		params.LatencyOp = a.LatencyOp
	}
	params.Chaos = r.chaos != nil
	if r.prep != nil {
		// a load spike is the run's first trigger: the pre-fault guards end at it
		if sp := r.prep.Settings.Runner.Spike; sp.Enabled() {
			params.TriggerAt = r.prep.Settings.Runner.Warmup + sp.At
		}
	}
	rep, err := analyze.Analyze(r.outcome.Windows, r.run.Events.Events(), params)
	if err != nil {
		r.sum.Errors = append(r.sum.Errors, "analysis: "+err.Error())
	}
	if rep != nil && rep.Chaos != nil {
		rep.Chaos.Spec = r.chaos.String()
	}
	if rep != nil && r.prep != nil && r.prep.Settings.Runner.Profile.Enabled() && r.rate > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the load follows the rate profile %s (runner.profile): the offered load is %.0f ops/s times the profile's mean factor before the first fault, %.0f ops/s",
			r.prep.Settings.Runner.Profile, r.rate, params.OfferedOps))
	}
	if r.sum.LostWrites != nil && rep != nil {
		r.sum.LostWrites.ByPhase(r.outcome.Result.Start, rep.Phases)
	}
	r.sum.Analysis = rep
	r.judgeMetastable()
	r.judgeAutoscale()
	r.sum.PeakRSSBytes = PeakRSS()
	if err := rundir.WriteJSON(r.run.Path("summary.json"), r.sum); err != nil {
		return err
	}
	var measured *report.Measured
	if ro := r.outcome; ro != nil {
		measured = &report.Measured{Totals: ro.Totals, Basis: r.prep.Settings.Basis, Samples: ro.Result.Samples, ClientGroups: ro.Clients}
	}
	report.WriteScenarioSummary(r.s.Out, r.sum, measured)
	fmt.Fprintf(r.s.Out, "run directory: %s\n", r.run.Dir)
	report.Finish(context.WithoutCancel(ctx), r.run.Dir, r.s.Out, r.s.Err)
	return nil
}

// faultClient is what client faults may act on of the load's driver: its
// ClientCrasher ability adapted to the fault package's, else the driver
// itself (whose lack of the ability the fault reports).
func faultClient(d driver.Driver) any {
	if cc, ok := d.(driver.ClientCrasher); ok {
		return clientCrasher{cc}
	}
	return d
}

// clientCrasher adapts driver.ClientCrasher to fault.ClientCrasher.
type clientCrasher struct{ d driver.ClientCrasher }

func (c clientCrasher) CrashClient(ctx context.Context, hold time.Duration) (fault.CrashedClient, error) {
	cc, err := c.d.CrashClient(ctx, driver.ClientCrash{Hold: hold})
	return fault.CrashedClient(cc), err
}

func (c clientCrasher) WaitClientRecovered(ctx context.Context, cc fault.CrashedClient) (fault.ClientRecovery, error) {
	rec, err := c.d.WaitClientRecovered(ctx, driver.CrashedClient(cc))
	return fault.ClientRecovery(rec), err
}
