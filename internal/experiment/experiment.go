// Package experiment runs one measured phase end to end — the work behind
// `faultbench load` and `faultbench run`: resolve the target and properties,
// find the cluster, create the run directory, drive the workload, print the
// live status and the YCSB-style summary, and write every file of the run
// directory as it goes.
package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/histcheck"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/live"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/metastable"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/report"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/targets"
	"github.com/faultbench/faultbench/internal/workload"
	"github.com/faultbench/faultbench/internal/workload/program"
)

// Spec is one load or run invocation.
type Spec struct {
	Target   string
	Phase    runner.Phase
	Props    *properties.Properties // -P files and -p overrides applied
	RunsDir  string                 // parent of run directories; default "runs"
	Name     string                 // run name; default "<phase>-<target>"
	Status   bool                   // plain status lines every status.interval even on a terminal (YCSB -s)
	Quiet    bool                   // no progress, no summary
	Out      io.Writer              // summary
	Err      io.Writer              // status lines and warnings
	StateDir string                 // where `cluster up` state files live
	Version  string                 // faultbench version for env.json
	Commit   string
	// MetricsAddr is where to serve Prometheus metrics while the phase
	// runs (host:port); "" serves none.
	MetricsAddr string
	// Targets is the registry Target is looked up in; nil means
	// targets.Builtin().
	Targets *targets.Registry
	// Checks are history checkers (histcheck.Names) to run on the run's
	// history.jsonl once it has ended (`faultbench run --check`); the
	// verdicts go to summary.json's checks and the terminal.
	Checks []string
	// FailOnAnomaly: a run whose checkers found anomalies (a verdict
	// false) returns an error wrapping ErrAnomalies.
	FailOnAnomaly bool
}

// Validate checks the spec.
func (s *Spec) Validate() error {
	if s.Target == "" {
		return errors.New("no target given (e.g. faultbench run etcd ...)")
	}
	if s.Phase != runner.Load && s.Phase != runner.Run {
		return fmt.Errorf("phase must be load or run")
	}
	if s.Props == nil {
		s.Props = properties.New()
	}
	if s.RunsDir == "" {
		s.RunsDir = "runs"
	}
	if s.Name == "" {
		s.Name = string(s.Phase) + "-" + s.Target
	}
	if s.Out == nil {
		s.Out = io.Discard
	}
	if s.Err == nil {
		s.Err = io.Discard
	}
	if s.StateDir == "" {
		s.StateDir = launcher.DefaultStateDir()
	}
	if s.Targets == nil {
		s.Targets = targets.Builtin()
	}
	for _, c := range s.Checks {
		if !histcheck.IsChecker(c) {
			return &InvalidError{Err: fmt.Errorf("unknown checker %q (want one of %s)", c, strings.Join(histcheck.Names(), ", "))}
		}
		if s.Phase != runner.Run {
			return &InvalidError{Err: fmt.Errorf("checker %s: the checkers judge a run phase's history, not a load's", c)}
		}
	}
	return nil
}

// Settings are the run-level properties faultbench reads (beyond the
// workload's and the driver's), resolved and validated.
type Settings struct {
	Runner runner.Config
	// Metastable are the metastability verdict's parameters when the run
	// phase is judged (metastable=true or a load spike); nil: not judged.
	Metastable     *metastable.Params
	Window         time.Duration
	Basis          report.LatencyBasis
	StatusInterval time.Duration
	// Percentiles are YCSB's hdrhistogram.percentiles: the summary prints
	// these percentiles of every operation besides its own.
	Percentiles []float64
	// ExportFile is YCSB's exportfile: the summary is written there too.
	ExportFile string
	// ClientProcesses (clients.process=true, run phase): the Runner.Clients
	// client groups run as that many local `faultbench worker` processes
	// (internal/distrib), not as goroutines of this one.
	ClientProcesses bool
	// History (history=true): a CoreWorkload run records its operation
	// history (a Historian workload records one anyway; RecordsHistory).
	History bool
	// HistoryWriterBase is a distributed worker's first thread number
	// (history.writer-base): its history values are tagged as those
	// writers.
	HistoryWriterBase int
	// CheckOptions are the history checkers' options (check.isolation.model,
	// check.linearizable.key-timeout, check.bank.total,
	// check.bank.allow-negative).
	CheckOptions histcheck.Options
}

// MaxClientProcesses bounds clients with clients.process=true: every
// client group is a faultbench process of its own.
const MaxClientProcesses = 64

// WantsClientProcesses reports whether p asks for the client groups of a
// phase to run as separate processes (clients.process=true in a run
// phase): the caller then runs the phase through internal/distrib. A
// value that is not a boolean is an error (a *properties.ValueError).
func WantsClientProcesses(p *properties.Properties, phase runner.Phase) (bool, error) {
	v, err := p.Bool("clients.process", false)
	if err != nil {
		return false, err
	}
	return v && phase == runner.Run, nil
}

// MaxThreads bounds threadcount: every thread is a client connection (or
// a share of a pool) to a database on this machine.
const MaxThreads = 10000

// ReadSettings reads and declares the run-level properties; every value is
// checked here, before a driver connects, and errors name the property,
// its value and where it was set.
func ReadSettings(p *properties.Properties, phase runner.Phase, wl *workload.Workload) (Settings, error) {
	var s Settings
	var errs []error
	get := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	threads, err := p.Int("threadcount", 1)
	get(err)
	clients, err := p.Int("clients", 0)
	get(err)
	procs, err := p.Bool("clients.process", false)
	get(err)
	tgt, err := p.Float("target", 0)
	get(err)
	maxExec, err := p.Duration("maxexecutiontime", 0, time.Second)
	get(err)
	warm, err := p.Duration("warmup", 0, time.Second)
	get(err)
	wake := runner.WakeMode(p.String("runner.wake", string(runner.WakeSpin)))
	opTimeout, err := p.Duration("optimeout", 10*time.Second, time.Millisecond)
	get(err)
	s.Window, err = p.Duration("measurement.window", time.Second, time.Millisecond)
	get(err)
	s.StatusInterval, err = p.Duration("status.interval", 10*time.Second, time.Second)
	get(err)
	basis := p.String("measurement.interval", string(report.Intended))
	if s.Basis, err = report.ParseLatencyBasis(basis); err != nil {
		errs = append(errs, p.Error("measurement.interval", "%v", err))
	}
	if v := p.String("hdrhistogram.percentiles", ""); v != "" {
		for _, f := range strings.Split(v, ",") {
			q, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || q <= 0 || q > 100 {
				errs = append(errs, p.Error("hdrhistogram.percentiles", "%q: allowed a comma-separated list of percentiles in (0, 100], e.g. 95,99", strings.TrimSpace(f)))
				break
			}
			s.Percentiles = append(s.Percentiles, q)
		}
	}
	s.ExportFile = p.String("exportfile", "")
	readHistorySettings(p, &s, &errs)
	retry, spike, err := runner.ReadClient(p)
	get(err)
	profile, err := runner.ReadProfile(p)
	get(err)
	busy, err := runner.ReadBusy(p)
	get(err)
	msp, judge, err := metastable.ReadParams(p, spike.Enabled())
	get(err)
	if s.Window < 10*time.Millisecond || s.Window > time.Hour {
		errs = append(errs, p.Error("measurement.window", "must be between 10ms and 1h"))
	}
	if s.StatusInterval <= 0 {
		errs = append(errs, p.Error("status.interval", "must be positive"))
	}
	if opTimeout <= 0 {
		errs = append(errs, p.Error("optimeout", "must be positive"))
	}
	if wake != runner.WakeSpin && wake != runner.WakeSleep {
		errs = append(errs, p.Error("runner.wake", "allowed %s (start within tens of µs of the intended time, yielding the CPU until then) or %s (timer only, no CPU spent waiting)", runner.WakeSpin, runner.WakeSleep))
	}
	if threads < 1 || threads > MaxThreads {
		errs = append(errs, p.Error("threadcount", "allowed 1..%d", MaxThreads))
	} else if phase == runner.Run && (clients < 0 || clients > threads) {
		errs = append(errs, p.Error("clients", "allowed 1..threadcount (%d) client groups, or 0 for one client per thread", threads))
	} else if phase == runner.Run && procs && (clients < 1 || clients > MaxClientProcesses) {
		errs = append(errs, p.Error("clients", "with clients.process=true: allowed 1..%d client processes (and at most threadcount, %d); 0 (one client per thread) is for in-process groups only", MaxClientProcesses, threads))
	}
	if tgt < 0 || math.IsNaN(tgt) || math.IsInf(tgt, 0) {
		errs = append(errs, p.Error("target", "allowed 0 (closed loop) or a positive number of ops/s"))
	}
	if maxExec < 0 {
		errs = append(errs, p.Error("maxexecutiontime", "must not be negative"))
	}
	if warm < 0 {
		errs = append(errs, p.Error("warmup", "must not be negative"))
	}
	if len(errs) > 0 {
		return s, errors.Join(errs...)
	}
	opcount := wl.OperationCount()
	if phase == runner.Load {
		opcount = 0 // the load key sequence ends the load phase
		warm = 0
		clients = 0 // per-client spread is a run-phase figure
		procs = false
	}
	s.ClientProcesses = procs
	s.Runner = runner.Config{
		Phase: phase, Threads: int(threads), Clients: int(clients), Rate: tgt, OperationCount: opcount,
		Duration: maxExec, Warmup: warm, OpTimeout: opTimeout, Seed: wl.Seed(), Wake: wake,
	}
	if phase == runner.Run {
		if retry.Enabled() && wl.Program() != nil {
			return s, p.Error("runner.retry", "a program workload retries on its own terms; the runner's retry policies apply to CoreWorkload operations")
		}
		if busy.Enabled && wl.Program() != nil {
			return s, p.Error("runner.timeout.busy", "applies to CoreWorkload operations, not to a program workload's")
		}
		s.Runner.Retry, s.Runner.Spike, s.Runner.Profile, s.Runner.Busy = retry, spike, profile, busy
		if judge {
			s.Metastable = &msp
		}
	}
	if err := s.Runner.Validate(); err != nil {
		return s, err
	}
	return s, nil
}

// Outcome is what a finished phase leaves besides its files.
type Outcome struct {
	Dir     string
	Result  runner.Result
	Totals  *measure.Totals
	Windows []measure.WindowRow
	// Figures and Sections are a program workload's own figures of a run
	// phase (rundir.Summary's); none for CoreWorkload or a load phase.
	Figures  []rundir.Figure
	Sections map[string]json.RawMessage
	// PerClient is the per-client spread (clients.csv's groups).
	PerClient *analyze.ClientSpread
	// Clients is the configured number of client groups (0: one per thread).
	Clients int
	// Missing says, one line each, which client groups' shares are missing
	// (client processes that died or failed; clients.process=true).
	Missing []string
	// HistoryOps is the number of operations written to history.jsonl
	// (0: the phase recorded no history).
	HistoryOps int64
	// Verdicts are the history checkers' of Hooks.HistoryChecks.
	Verdicts HistoryVerdicts
}

// ProcessJob is a measured run phase whose client groups run as separate
// processes (clients.process=true).
type ProcessJob struct {
	Target  string            // the target kind
	Targets *targets.Registry // where it is looked up
	// Props are the phase's properties, checked (CheckProperties) and
	// pointing at the cluster.
	Props    *properties.Properties
	Dir      string     // the run directory, which exists
	Events   *event.Log // the run's events
	Tasks    []Task     // run alongside the phase, as Hooks.Tasks
	StateDir string
	Quiet    bool
	Err      io.Writer
}

// ProcessRunner runs a ProcessJob: it writes the measurement files of
// j.Dir (windows.csv, hist/, clients.csv, ...) but not summary.json, and
// returns the outcome. internal/distrib has it (Execute); this package
// cannot import that one.
type ProcessRunner func(ctx context.Context, j ProcessJob) (*Outcome, error)

// summarize returns the figures of a program workload's run phase
// (program.Summarizer) for summary.json: the headline figures and the
// workload's own section; nothing for CoreWorkload, a load phase or a
// program without figures.
func summarize(wl *workload.Workload, phase runner.Phase, t rundir.Totals) ([]rundir.Figure, map[string]json.RawMessage, error) {
	s, ok := wl.Program().(program.Summarizer)
	if !ok || phase != runner.Run {
		return nil, nil, nil
	}
	in := program.Totals{RunTimeMs: t.RunTimeMs, PerOp: make(map[string]program.OpTotals, len(t.PerOp))}
	for name, o := range t.PerOp {
		in.PerOp[name] = program.OpTotals{Count: o.Count, OK: o.OK, Errors: o.Errors, P90Us: float64(o.Latency.P90)}
	}
	out := s.Summarize(in)
	var figs []rundir.Figure
	for _, f := range out.Figures {
		figs = append(figs, rundir.Figure{Group: f.Group, Name: f.Name, Value: f.Value})
	}
	if out.Key == "" || out.Data == nil {
		return figs, nil, nil
	}
	b, err := json.Marshal(out.Data)
	if err != nil {
		return figs, nil, fmt.Errorf("the %s workload's figures: %w", wl.Name(), err)
	}
	return figs, map[string]json.RawMessage{out.Key: b}, nil
}

// Prepared is a target, driver and workload ready to run, with properties
// checked. Close releases the driver.
type Prepared struct {
	Target   *targets.Target
	Driver   driver.Driver
	Workload *workload.Workload
	Settings Settings
	Warnings []string
}

// Close releases the driver.
func (p *Prepared) Close() error {
	if p.Driver == nil {
		return nil
	}
	return p.Driver.Close()
}

// CheckProperties builds the workload from p, reads the run settings and
// rejects unknown properties, without connecting to anything: what can be
// wrong with the properties is found before a cluster starts. The
// returned Prepared has no driver.
func CheckProperties(t *targets.Target, phase runner.Phase, p *properties.Properties) (*Prepared, error) {
	return checkProperties(workload.Builtin(), t, phase, p)
}

// checkProperties is CheckProperties with the workloads of reg.
func checkProperties(reg *workload.Registry, t *targets.Target, phase runner.Phase, p *properties.Properties) (*Prepared, error) {
	t.ApplyDefaults(p)
	out := &Prepared{Target: t}
	// launcher options are known (a driver checking its prefix lets them
	// pass) but do nothing on a running cluster: say so
	p.Declare(t.LauncherOptions...)
	for _, k := range t.LauncherOptions {
		if p.Has(k) {
			src, _ := p.SourceOf(k)
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s (%s) is a launcher option: it has no effect on a running cluster; give it to `cluster up -o` or a scenario's target.options", k, src))
		}
	}
	p.Declare(workload.IgnoredYCSBKeys()...)
	for _, k := range workload.IgnoredYCSBKeys() {
		if k == "workload" && p.Has(k) {
			if _, ok := reg.Lookup(p.String(k, "")); !ok {
				src, _ := p.SourceOf(k)
				out.Warnings = append(out.Warnings, fmt.Sprintf("workload %s (%s) is no registered workload (%s): faultbench runs YCSB's CoreWorkload", p.String(k, ""), src, strings.Join(reg.Names(), ", ")))
			}
			continue // CoreWorkload's class name in every YCSB workload file, or a registered workload's name
		}
		if p.Has(k) {
			src, _ := p.SourceOf(k)
			out.Warnings = append(out.Warnings, fmt.Sprintf("ignored YCSB property %s (%s): faultbench does not use it", k, src))
		}
	}
	p.Declare(ycsbHonoured()...)
	wl, err := reg.New(p)
	if err != nil {
		return nil, &InvalidError{Err: err}
	}
	out.Workload = wl
	// record the seed, so that an unseeded run can be repeated from run.properties
	p.SetDefault("seed", strconv.FormatInt(wl.Seed(), 10))
	if out.Settings, err = ReadSettings(p, phase, wl); err != nil {
		return nil, &InvalidError{Err: err}
	}
	if t.DriverProperties != nil {
		if err := t.DriverProperties(p); err != nil {
			return nil, &InvalidError{Err: err}
		}
	}
	// the driver validates its own prefixed properties; the rest must be known by now
	p.DeclarePrefix(t.PropertyPrefix)
	p.Declare("faultbench.cluster")
	if unknown := p.Unknown(); len(unknown) > 0 {
		return nil, &InvalidError{Err: fmt.Errorf("unknown properties: %s\n(see docs/workloads.md for the workload's and %s for the driver's)", strings.Join(unknown, ", "), t.Docs)}
	}
	return out, nil
}

// InvalidError is a run's properties that cannot work (a value out of
// range, a word not allowed, an unknown key): bad input found before
// anything starts, which a command line reports as a usage error.
type InvalidError struct{ Err error }

func (e *InvalidError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *InvalidError) Unwrap() error { return e.Err }

// ycsbHonoured returns the YCSB client properties faultbench acts on
// outside ReadSettings and the workload: the phase (dotransactions, read by
// the command line), where the summary goes (exportfile) and which
// percentiles it prints (hdrhistogram.percentiles).
func ycsbHonoured() []string {
	return []string{"dotransactions", "exportfile", "hdrhistogram.percentiles"}
}

// Prepare checks the properties (CheckProperties), then connects to a
// cluster of target t (properties first, else the cluster `cluster up`
// started) and builds the driver.
func Prepare(ctx context.Context, t *targets.Target, phase runner.Phase, p *properties.Properties, stateDir string) (*Prepared, error) {
	return prepare(ctx, workload.Builtin(), t, phase, p, stateDir)
}

// prepare is Prepare with the workloads of reg.
func prepare(ctx context.Context, reg *workload.Registry, t *targets.Target, phase runner.Phase, p *properties.Properties, stateDir string) (*Prepared, error) {
	kind := t.Kind
	out, err := checkProperties(reg, t, phase, p)
	if err != nil {
		return nil, err
	}
	if !p.Has(t.EndpointKey) {
		store := launcher.StateStore{Dir: stateDir}
		c, lerr := store.Load(kind)
		if lerr != nil {
			if errors.Is(lerr, launcher.ErrNoCluster) {
				return nil, fmt.Errorf("no %s cluster to talk to: start one with `faultbench cluster up %s`, or point at yours with -p %s=HOST:PORT", kind, kind, t.EndpointKey)
			}
			return nil, lerr
		}
		t.ConnectTo(p, c)
	}
	d, err := t.NewDriver(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("%s driver: %w", kind, err)
	}
	if r, ok := out.Workload.Program().(program.Requirer); ok {
		if err := r.CheckDB(runner.ProgramDB(d)); err != nil {
			d.Close()
			return nil, &InvalidError{Err: fmt.Errorf("the %s workload cannot run on %s: %w", out.Workload.Name(), kind, err)}
		}
	}
	out.Driver = d
	return out, nil
}

// Run executes the phase and writes its run directory.
func Run(ctx context.Context, s Spec) (*Outcome, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	s.Err = live.NewConsole(s.Err) // the progress bar shares it with warnings
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
	t, err := s.Targets.Get(s.Target)
	if err != nil {
		return nil, err
	}
	if procs, err := WantsClientProcesses(s.Props, s.Phase); err != nil {
		return nil, &InvalidError{Err: err}
	} else if procs {
		return nil, &InvalidError{Err: s.Props.Error("clients.process", "client processes are started by `faultbench run` (through internal/distrib), not by this caller")}
	}
	prep, err := Prepare(ctx, t, s.Phase, s.Props, s.StateDir)
	if err != nil {
		return nil, err
	}
	defer prep.Close()
	for _, w := range prep.Warnings {
		fmt.Fprintln(s.Err, "warning:", w)
	}
	env := rundir.HostEnv(s.Version, s.Commit)
	env.Target = s.Target
	env.TargetVersion = targetVersion(ctx, prep.Driver)
	if d, ok := prep.Driver.(interface{ Isolation() string }); ok {
		env.Isolation = d.Isolation()
	}
	env.ClientSettings = clientSettings(prep)
	if w := poolShortfall(env.ClientSettings, prep.Settings.Runner.Threads); w != "" {
		fmt.Fprintln(s.Err, "warning:", w)
	}
	run, err := rundir.Open(s.RunsDir, s.Name, time.Now(), env)
	if err != nil {
		return nil, err
	}
	defer run.Close()
	dir := run.Dir
	if err := rundir.WriteProperties(run.Path("run.properties"), s.Props); err != nil {
		return nil, err
	}
	var export *os.File
	if f := prep.Settings.ExportFile; f != "" {
		// created before the run, so that a bad path fails before any load
		if export, err = os.Create(f); err != nil {
			return nil, s.Props.Error("exportfile", "%v", err)
		}
		defer export.Close()
	}
	if len(s.Checks) > 0 && !RecordsHistory(prep.Workload, prep.Settings) {
		return nil, &InvalidError{Err: fmt.Errorf("checkers %s read the run's operation history, and the %s workload records none (the workloads made for checking, and the core workload with --history, do)", strings.Join(s.Checks, ", "), prep.Workload.Name())}
	}
	out, err := Execute(ctx, prep, dir, Hooks{Status: !s.Quiet, StatusLines: s.Status, StatusOut: s.Err, Metrics: metrics, Events: run.Events, HistoryChecks: s.Checks, CheckOut: s.Err})
	if err != nil {
		return out, err
	}
	var summary bytes.Buffer
	report.WriteYCSB(&summary, out.Totals, prep.Settings.Basis)
	writePercentiles(&summary, out.Totals, prep.Settings)
	report.WriteErrorSamples(&summary, out.Result.Samples)
	if out.Clients >= 2 {
		report.WriteClients(&summary, out.PerClient)
	}
	if out.Result.Dropped > 0 {
		fmt.Fprintf(&summary, "[OVERALL], DroppedOperations, %d\n", out.Result.Dropped)
	}
	if prep.Settings.Runner.Busy.Enabled {
		fmt.Fprintf(&summary, "[OVERALL], TimedOutCallsKeptBusy, %d\n[OVERALL], TimedOutCallsBusyPeak, %d\n", out.Result.Abandoned, out.Result.BusyPeak)
	}
	report.WriteFigures(&summary, out.Figures)
	if export != nil {
		if _, err := export.Write(summary.Bytes()); err != nil {
			return out, fmt.Errorf("exportfile %s: %w", export.Name(), err)
		}
		if err := export.Close(); err != nil {
			return out, fmt.Errorf("exportfile %s: %w", export.Name(), err)
		}
	}
	if !s.Quiet {
		s.Out.Write(summary.Bytes())
		report.WriteVerdicts(s.Out, out.Verdicts.byName())
		if n := notFound(out.Totals); n > 0 && s.Phase == runner.Run {
			fmt.Fprintf(s.Err, "note: %d operations returned NOT_FOUND (a key that does not exist); if the database was not loaded first (`faultbench load %s ...` with the same recordcount), every read is of a missing key\n", n, s.Target)
		}
		fmt.Fprintf(s.Out, "run directory: %s\n", dir)
	} else {
		// no summary; the verdicts still reach the terminal, once
		report.WriteVerdicts(s.Err, out.Verdicts.byName())
	}
	rout := s.Out
	if s.Quiet {
		rout = io.Discard
	}
	report.Finish(context.WithoutCancel(ctx), dir, rout, s.Err)
	if s.FailOnAnomaly {
		return out, out.Verdicts.AnomalyError()
	}
	return out, nil
}

// notFound counts the operations answered not found (a missing key).
func notFound(t *measure.Totals) int64 {
	if t == nil {
		return 0
	}
	return t.All.Errors[outcome.NotFound]
}

// writePercentiles prints YCSB's hdrhistogram.percentiles of every
// operation that the YCSB summary does not print already, in YCSB's
// format ([READ], 99.99thPercentileLatency(us), 1234), on the latency
// basis of the summary (both: the service time, then Intended-).
func writePercentiles(w io.Writer, t *measure.Totals, set Settings) {
	if t == nil || len(set.Percentiles) == 0 {
		return
	}
	printed := map[float64]bool{50: true, 95: true, 99: true, 99.9: true}
	type series struct {
		name string
		h    *hdrhistogram.Histogram
	}
	for _, o := range t.Ops {
		var ss []series
		switch set.Basis {
		case report.Service:
			ss = []series{{o.Name, o.Service}}
		case report.Both:
			ss = []series{{o.Name, o.Service}, {"Intended-" + o.Name, o.Intended}}
		default:
			ss = []series{{o.Name, o.Intended}}
		}
		for _, s := range ss {
			if s.h == nil || s.h.TotalCount() == 0 {
				continue
			}
			for _, q := range set.Percentiles {
				if !printed[q] {
					fmt.Fprintf(w, "[%s], %sthPercentileLatency(us), %d\n", s.name, strconv.FormatFloat(q, 'f', -1, 64), s.h.ValueAtQuantile(q))
				}
			}
		}
	}
}

// targetVersion asks the driver for the database's version, if it can say.
func targetVersion(ctx context.Context, d driver.Driver) string {
	v, ok := d.(interface {
		Version(context.Context) (string, error)
	})
	if !ok {
		return ""
	}
	vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, _ := v.Version(vctx)
	return s
}

// Task runs alongside a phase's workload (the fault schedule, the cluster
// watcher, an independent probe) with the run's t=0; ctx ends when the
// workload does, and the task must return then.
type Task func(ctx context.Context, start time.Time) error

// Hooks lets a caller (the scenario runner) add to a phase.
type Hooks struct {
	// Status shows progress on StatusOut: a bar when StatusOut is a
	// live.Console on a terminal, else (or with StatusLines) a status line
	// every status.interval.
	Status      bool
	StatusLines bool
	StatusOut   io.Writer
	Metrics     *live.Metrics  // export the phase to Prometheus; may be nil
	Events      *event.Log     // events log to use (created in dir if nil)
	Tracker     runner.Tracker // lost-write tracking
	// Tasks run concurrently alongside the workload; their errors are
	// returned, joined, after the phase.
	Tasks []Task
	// Start is t=0 of the phase (zero: now). A distributed worker gets the
	// coordinator's common start time here (docs/distributed.md).
	Start time.Time
	// OnPart, if set, receives every closed window's data (a distributed
	// worker streams it to the coordinator).
	OnPart func(measure.WindowPart)
	// HistoryTo, if set, receives the phase's operation history (when it
	// records one, RecordsHistory) instead of dir/history.jsonl: a
	// distributed worker streams it to the coordinator.
	HistoryTo io.Writer
	// HistoryChecks are history checkers (histcheck.Names) to run on
	// dir/history.jsonl once the phase has ended, before summary.json is
	// written (`faultbench run --check`); a scenario runs its own after
	// restoring the cluster.
	HistoryChecks []string
	// CheckOut is where the history checkers print their verdict lines
	// (nil: StatusOut, else nowhere).
	CheckOut io.Writer
	// OnWindow, if set, receives the rows of every closed window while the
	// phase runs (the autoscaling rules read them); it must return quickly.
	OnWindow func([]measure.WindowRow)
}

// Execute runs the prepared phase into dir (which must exist), writing
// windows.csv, hist/, clients.csv, events.jsonl and summary.json.
func Execute(ctx context.Context, prep *Prepared, dir string, h Hooks) (*Outcome, error) {
	set := prep.Settings
	start := time.Now()
	if !h.Start.IsZero() {
		start = h.Start
	}
	evs := h.Events
	if evs == nil {
		var err error
		if evs, err = event.Create(filepath.Join(dir, "events.jsonl"), start); err != nil {
			return nil, err
		}
		defer evs.Close()
	} else {
		evs.SetStart(start)
	}
	col, err := measure.NewCollector(measure.Config{
		Dir: dir, Ops: runner.MeasureOps(prep.Workload.OpNames(), set.Runner), Window: set.Window, Start: start,
		Warmup: set.Runner.Warmup, Workers: set.Runner.Threads, Clients: set.Runner.Clients,
	})
	if err != nil {
		return nil, err
	}
	if h.OnPart != nil {
		col.OnPart(h.OnPart)
	}
	if h.OnWindow != nil {
		col.OnWindow(h.OnWindow)
	}
	colCtx, stopCol := context.WithCancel(context.Background())
	colDone := make(chan struct{})
	go func() { col.Run(colCtx); close(colDone) }()

	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	statusDone := make(chan struct{})
	if h.Status && h.StatusOut != nil {
		pg := live.Progress{Out: h.StatusOut, Lines: h.StatusLines, Every: set.StatusInterval, Phase: string(set.Runner.Phase)}
		switch {
		case set.Runner.Duration > 0:
			pg.Total = set.Runner.Warmup + set.Runner.Duration
		case set.Runner.Phase == runner.Load:
			pg.Ops = prep.Workload.InsertCount()
		default:
			pg.Ops = set.Runner.OperationCount
		}
		go func() {
			defer close(statusDone)
			pg.Run(runCtx, col)
		}()
	} else {
		close(statusDone)
	}
	if h.Metrics != nil {
		detach := h.Metrics.Attach(live.Phase{Name: string(set.Runner.Phase), Dir: dir, Ops: prep.Workload.OpNames(), Collector: col, Events: evs})
		defer detach() // after col.Close: the last windows are exported too
	}
	taskErrs := make(chan error, len(h.Tasks))
	for _, task := range h.Tasks {
		go func() { taskErrs <- task(runCtx, start) }()
	}
	var hist *phaseHistory
	tracker := h.Tracker
	if RecordsHistory(prep.Workload, set) {
		if hist, err = openHistory(dir, h.HistoryTo, start); err != nil {
			stopRun()
			stopCol()
			<-colDone
			col.Close()
			return nil, err
		}
		if hp, ok := prep.Workload.Program().(program.Historian); ok {
			hp.SetRecorder(hist)
		} else {
			tracker = newHistoryTracker(hist, h.Tracker, set.Runner.Threads, set.HistoryWriterBase)
		}
	}
	evs.Emit(event.PhaseStart, "", string(set.Runner.Phase))
	r := &runner.Runner{Config: set.Runner, Workload: prep.Workload, Driver: prep.Driver, Collector: col, Tracker: tracker, Start: start}
	res, rerr := r.Run(ctx)
	evs.Emit(event.PhaseEnd, "", string(set.Runner.Phase)+": "+res.Reason)
	stopRun()
	<-statusDone
	stopCol()
	<-colDone
	totals, cerr := col.Close()
	var terrs []error
	for range h.Tasks {
		if err := <-taskErrs; err != nil && !errors.Is(err, context.Canceled) {
			terrs = append(terrs, err)
		}
	}
	out := &Outcome{Dir: dir, Result: res, Totals: totals}
	if hist != nil {
		var herr error
		if out.HistoryOps, herr = hist.close(); herr != nil {
			terrs = append(terrs, herr)
		}
	}
	if cerr == nil {
		if out.Windows, cerr = col.Windows(); cerr != nil {
			cerr = fmt.Errorf("reading the windows back: %w", cerr)
		}
	}
	if rerr != nil {
		return out, rerr
	}
	if cerr != nil {
		return out, cerr
	}
	sum := rundir.Summary{
		Target: prep.Target.Kind, Phase: string(set.Runner.Phase), EndReason: res.Reason, Dropped: res.Dropped,
		Threads: set.Runner.Threads, TargetOps: set.Runner.Rate, WindowMs: float64(set.Window) / float64(time.Millisecond),
		WarmupMs: float64(set.Runner.Warmup) / float64(time.Millisecond), Totals: rundir.TotalsOf(totals),
		PeakRSSBytes: PeakRSS(), ErrorSamples: res.Samples,
		PerClient: analyze.PerClient(totals.Clients, prep.Workload.OpNames(), totals.Duration),
	}
	sum.Figures, sum.Sections, err = summarize(prep.Workload, set.Runner.Phase, sum.Totals)
	if err != nil {
		terrs = append(terrs, err)
	}
	out.Figures, out.Sections = sum.Figures, sum.Sections
	out.PerClient, out.Clients = sum.PerClient, set.Runner.Clients
	if len(h.HistoryChecks) > 0 {
		cout := h.CheckOut
		if cout == nil {
			cout = h.StatusOut
		}
		if cout == nil {
			cout = io.Discard
		}
		out.Verdicts = RunHistoryChecks(context.WithoutCancel(ctx), dir, h.HistoryChecks, set.CheckOptions, cout)
		sum.Verdicts = out.Verdicts.Verdicts
		sum.Errors = append(sum.Errors, out.Verdicts.Errors...)
	}
	if err := rundir.WriteJSON(filepath.Join(dir, "summary.json"), sum); err != nil {
		return out, err
	}
	return out, errors.Join(terrs...)
}

// PeakRSS returns this process's peak resident set size in bytes.
func PeakRSS() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Maxrss * 1024
}
