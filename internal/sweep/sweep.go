// Package sweep runs scalability benchmarks: the same workload over a
// sequence of steps, each a complete scenario run on a freshly started and
// loaded cluster, with load steps at fixed capacity (SB1), capacity steps
// at fixed load (SB2), or both proportionally (SB3), the benchmark types of
// the scalability study (Kuhlenkamp, Klems, Röss, "Benchmarking
// Scalability and Elasticity of Distributed Database Systems", PVLDB
// 2014). A sweep directory holds one run directory per step, summary.json
// (rundir.SweepSummary, rewritten after every step), steps.csv and
// report.html with the scaling curve.
package sweep

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/metastable"
	"github.com/faultbench/faultbench/internal/report"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/targets"
)

// Spec is one `faultbench sweep` invocation.
type Spec struct {
	// Scenario is the parsed sweep scenario (it has a sweep: section).
	Scenario *scenario.Scenario
	File     string // where it came from, for messages and workload lookup
	// Step parses the scenario again with extra --set assignments
	// (path=value) after the user's own: a fresh, unresolved copy per step.
	Step func(sets []string) (*scenario.Scenario, error)
	// OpenWorkload finds a workload file by name when it is not on disk.
	OpenWorkload func(name string) (io.Reader, error)
	RunsDir      string
	StateDir     string
	Out, Err     io.Writer
	Status       bool // plain status lines instead of the progress bar
	Quiet        bool // no progress display
	Version      string
	Commit       string
	Targets      *targets.Registry // nil: targets.Builtin()
}

// Step is one planned step of a sweep.
type Step struct {
	Index    int    // 1-based
	Nodes    int    // cluster size (0: the target's default)
	RateSpec string // load.rate as written ("" = the scenario's)
	Threads  int    // 0: the scenario's
	Clients  int    // client groups; 0: the scenario's
	Records  int64  // 0: the workload's recordcount
	// Retry and Trigger are a metastable sweep's cell: the retry policy
	// ("" in other sweeps) and the trigger's name.
	Retry, Trigger string
	Sets           []string
	Scenario       *scenario.Scenario // parsed with Sets, not yet resolved
}

// Steps turns the sweep section into steps, each with the --set
// assignments that make its scenario. It does not validate the steps'
// scenarios; Plan does.
func Steps(sc *scenario.Scenario) ([]Step, error) {
	w := sc.Sweep
	if w == nil {
		return nil, errors.New("the scenario has no sweep: section")
	}
	var steps []Step
	switch w.Type {
	case scenario.SweepSB1:
		for _, r := range w.Rates {
			steps = append(steps, Step{Nodes: sc.Target.Nodes, RateSpec: r.String()})
		}
	case scenario.SweepSB2, scenario.SweepSB3:
		for _, n := range w.Nodes {
			st := Step{Nodes: n}
			if w.Type == scenario.SweepSB3 {
				st.RateSpec = strconv.FormatFloat(w.RatePerNode*float64(n), 'f', -1, 64)
				if w.ThreadsPerNode > 0 {
					st.Threads = w.ThreadsPerNode * n
				}
				if w.ClientsPerNode > 0 {
					st.Clients = w.ClientsPerNode * n
				}
			}
			if w.RecordsPerNode > 0 {
				st.Records = w.RecordsPerNode * int64(n)
			}
			steps = append(steps, st)
		}
	case scenario.SweepMetastable:
		steps = metastableSteps(sc)
	default:
		return nil, fmt.Errorf("sweep.type %q: allowed sb1, sb2, sb3, metastable", w.Type)
	}
	for i := range steps {
		st := &steps[i]
		st.Index = i + 1
		st.Sets = append([]string{"name=" + fmt.Sprintf("%s-s%02d", sc.Name, st.Index)}, st.Sets...)
		if st.Nodes > 0 {
			st.Sets = append(st.Sets, "target.nodes="+strconv.Itoa(st.Nodes))
		}
		if st.RateSpec != "" {
			st.Sets = append(st.Sets, "load.rate="+st.RateSpec)
		}
		if st.Threads > 0 {
			st.Sets = append(st.Sets, "load.threads="+strconv.Itoa(st.Threads))
		}
		if st.Clients > 0 {
			st.Sets = append(st.Sets, "load.clients="+strconv.Itoa(st.Clients))
		}
		if st.Records > 0 {
			st.Sets = append(st.Sets, "workload.properties.recordcount="+strconv.FormatInt(st.Records, 10))
		}
	}
	return steps, nil
}

// Plan builds every step's scenario and validates it as `faultbench
// scenario --dry-run` would (target, options, workload file, every
// property), starting nothing. An error names the step and what is wrong.
func Plan(s *Spec) ([]Step, error) {
	if s.Scenario == nil || s.Scenario.Sweep == nil {
		return nil, fmt.Errorf("%s has no sweep: section (docs/sweeps.md)", s.File)
	}
	steps, err := Steps(s.Scenario)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.File, err)
	}
	for i := range steps {
		st := &steps[i]
		sc, err := s.Step(st.Sets)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", st.Index, err)
		}
		sc.Sweep = nil
		check, err := s.Step(st.Sets) // a second copy: planning resolves its scenario
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", st.Index, err)
		}
		check.Sweep = nil
		if err := experiment.PlanScenario(experiment.ScenarioSpec{
			Scenario: check, File: s.File, OpenWorkload: s.OpenWorkload, RunsDir: s.RunsDir, StateDir: s.StateDir,
			Out: io.Discard, Err: io.Discard, Targets: s.Targets,
		}); err != nil {
			return nil, fmt.Errorf("step %d (%s): %w", st.Index, strings.Join(st.Sets[1:], " "), err)
		}
		if st.Nodes == 0 {
			st.Nodes = check.Target.Nodes
		}
		if st.Threads == 0 {
			st.Threads = check.Load.Threads
		}
		if st.RateSpec == "" {
			st.RateSpec = check.Load.Rate.String()
		}
		st.Scenario = sc
	}
	return steps, nil
}

// WritePlan prints the steps of a validated sweep.
func WritePlan(w io.Writer, s *Spec, steps []Step) {
	sc := s.Scenario
	fmt.Fprintf(w, "sweep %s (%s): %s, %d steps; valid; dry run, nothing started\n\n", sc.Name, s.File, Describe(sc.Sweep.Type), len(steps))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "step\tnodes\tthreads\tclients\trate\trecords\twarm-up + run\tsets")
	for _, st := range steps {
		rec := "workload's"
		if st.Records > 0 {
			rec = strconv.FormatInt(st.Records, 10)
		}
		clients := "per thread"
		if n := st.Scenario.Load.Clients; n > 0 {
			clients = strconv.Itoa(n)
		}
		warm, dur := st.Scenario.Load.Warmup.D(), st.Scenario.Load.Duration.D()
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%s\t%v + %v\t%s\n", st.Index, st.Nodes, st.Threads, clients, st.RateSpec, rec, warm, dur, strings.Join(st.Sets[1:], " "))
	}
	tw.Flush()
	fmt.Fprintf(w, "\nEvery step starts a fresh cluster, loads it, runs the workload and stops the cluster (a warm-up default and, for a\npercentage rate, a calibration run are added by the scenario defaults). Each step's run directory goes under the sweep directory.\n")
}

// Describe says what a sweep type does.
func Describe(typ string) string {
	switch typ {
	case scenario.SweepSB1:
		return "SB1 (load steps, fixed capacity)"
	case scenario.SweepSB2:
		return "SB2 (capacity steps, fixed load)"
	case scenario.SweepSB3:
		return "SB3 (capacity and load proportionally)"
	case scenario.SweepMetastable:
		return "recovery map (retry policies × triggers × loads)"
	}
	return typ
}

// Outcome is what Run leaves besides its files.
type Outcome struct {
	Dir     string
	Summary *rundir.SweepSummary
}

// Run plans the sweep (validating every step before anything starts),
// opens the sweep directory and runs the steps one after another, each
// with its own cluster; summary.json and steps.csv are rewritten after
// every step. A failed step is recorded and the sweep goes on with the
// next; an interrupt stops it. The report is written at the end (and by
// `faultbench report DIR`).
func Run(ctx context.Context, s Spec) (*Outcome, error) {
	steps, err := Plan(&s)
	if err != nil {
		return nil, err
	}
	sc := s.Scenario
	env := rundir.HostEnv(s.Version, s.Commit)
	env.Target = sc.Target.Kind
	run, err := rundir.Open(s.RunsDir, "sweep-"+sc.Name, time.Now(), env)
	if err != nil {
		return nil, err
	}
	defer run.Close()
	if b, err := os.ReadFile(s.File); err == nil {
		if err := rundir.WriteFile(run.Path("sweep.yaml"), b); err != nil {
			return nil, err
		}
	}
	if b, err := sc.Marshal(); err == nil {
		if err := rundir.WriteFile(run.Path("scenario.yaml"), b); err != nil {
			return nil, err
		}
	}
	sum := &rundir.SweepSummary{Sweep: sc.Name, Type: sc.Sweep.Type, Target: sc.Target.Kind, File: s.File,
		Workload: sc.Workload.YCSB, Planned: len(steps), Steps: []rundir.SweepStep{}}
	out := &Outcome{Dir: run.Dir, Summary: sum}
	if err := write(run.Dir, sum); err != nil {
		return out, err
	}
	fmt.Fprintf(s.Err, "sweep %s: %s, %d steps into %s\n", sc.Name, Describe(sc.Sweep.Type), len(steps), run.Dir)
	var runErr error
	for i, st := range steps {
		if i > 0 && sc.Sweep.Pause > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(sc.Sweep.Pause.D()):
			}
		}
		if err := ctx.Err(); err != nil {
			runErr = err
			break
		}
		what := fmt.Sprintf("step %d/%d: %d nodes, rate %s, %d threads", st.Index, len(steps), st.Nodes, st.RateSpec, st.Threads)
		fmt.Fprintf(s.Err, "\n=== sweep %s\n", what)
		run.Events.Emit(event.PhaseStart, "", what)
		so, err := experiment.RunScenario(ctx, experiment.ScenarioSpec{
			Scenario: st.Scenario, File: s.File, OpenWorkload: s.OpenWorkload, RunsDir: run.Dir, StateDir: s.StateDir,
			Out: s.Out, Err: s.Err, Status: s.Status, Quiet: s.Quiet, Version: s.Version, Commit: s.Commit, Targets: s.Targets,
		})
		row := StepRow(st, so, run.Dir, err)
		sum.Steps = append(sum.Steps, row)
		detail := fmt.Sprintf("step %d: achieved %.1f ops/s", st.Index, row.AchievedOps)
		if err != nil {
			sum.Failed = true
			sum.Failures = append(sum.Failures, fmt.Sprintf("step %d: %v", st.Index, err))
			detail = fmt.Sprintf("step %d failed: %v", st.Index, err)
		}
		run.Events.Emit(event.PhaseEnd, "", detail)
		if werr := write(run.Dir, sum); werr != nil {
			return out, werr
		}
		if errors.Is(err, context.Canceled) || ctx.Err() != nil {
			runErr = ctx.Err()
			break
		}
	}
	fmt.Fprintf(s.Out, "\nsweep %s: %s\n", sc.Name, Describe(sc.Sweep.Type))
	WriteTable(s.Out, sum)
	report.WriteRecoveryMaps(s.Out, sum)
	if _, err := report.RenderSweep(context.WithoutCancel(ctx), run.Dir, sum); err != nil {
		fmt.Fprintf(s.Err, "report: %v\n", err)
	} else {
		fmt.Fprintf(s.Out, "report: %s\n", filepath.Join(run.Dir, "report.html"))
	}
	fmt.Fprintf(s.Out, "sweep directory: %s\n", run.Dir)
	if runErr != nil {
		return out, runErr
	}
	if sum.Failed {
		return out, fmt.Errorf("%d of %d steps failed: %s", len(sum.Failures), len(steps), strings.Join(sum.Failures, "; "))
	}
	return out, nil
}

// StepRow is the summary row of one step from its scenario outcome (nil
// when it never opened a run directory); err is the step's error.
func StepRow(st Step, so *experiment.ScenarioOutcome, sweepDir string, err error) rundir.SweepStep {
	row := rundir.SweepStep{Step: st.Index, Nodes: st.Nodes, Threads: st.Threads, Records: st.Records, RateSpec: st.RateSpec, Retry: st.Retry, Trigger: st.Trigger,
		ClientThroughputCV: -1, ClientP99CV: -1, PerOp: map[string]rundir.Latency{}}
	if st.Scenario != nil {
		row.Clients = st.Scenario.Load.Clients
	}
	if err != nil {
		row.Error = err.Error()
	}
	if so == nil {
		return row
	}
	if rel, rerr := filepath.Rel(sweepDir, so.Dir); rerr == nil {
		row.Dir = rel
	} else {
		row.Dir = so.Dir
	}
	sum := so.Summary
	if sum == nil {
		return row
	}
	row.Nodes, row.Threads = sum.Nodes, sum.Threads
	row.OfferedOps = sum.TargetOps
	row.AchievedOps = sum.Totals.All.ThroughputOp
	row.Errors = sum.Totals.All.Count - sum.Totals.All.OK
	row.All = sum.Totals.All.Latency
	for op, s := range sum.Totals.PerOp {
		row.PerOp[op] = s.Latency
	}
	if pc := sum.PerClient; pc != nil {
		row.ClientThroughputCV, row.ClientP99CV = pc.ThroughputCV, pc.P99CV
	}
	if v, err := report.SummaryMetastable(sum); err == nil && v != nil {
		row.Verdict, row.VerdictReason, row.TimeToRecoverMs = v.Verdict, v.Reason, v.TimeToRecoverMs
	}
	return row
}

// metastableSteps are a metastable sweep's cells: every retry policy ×
// trigger × load, in that order; each run is judged (metastable=true).
func metastableSteps(sc *scenario.Scenario) []Step {
	w := sc.Sweep
	retries := w.Retries
	if len(retries) == 0 {
		retries = []string{""} // the scenario's own
	}
	var steps []Step
	for _, r := range retries {
		for _, tr := range w.Triggers {
			for _, rate := range w.Rates {
				st := Step{RateSpec: rate.String(), Retry: r, Trigger: tr.Name}
				st.Sets = append(st.Sets, tr.Set...)
				if r != "" {
					st.Sets = append(st.Sets, "workload.properties.runner.retry="+r)
				}
				st.Sets = append(st.Sets, "workload.properties.metastable=true")
				steps = append(steps, st)
			}
		}
	}
	return steps
}

// write rewrites summary.json and steps.csv.
func write(dir string, sum *rundir.SweepSummary) error {
	if err := rundir.WriteJSON(filepath.Join(dir, "summary.json"), sum); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "steps.csv"))
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	w := csv.NewWriter(f)
	ops := opsOf(sum)
	head := []string{"step", "nodes", "threads", "clients", "records", "rate", "offered_ops", "achieved_ops", "errors", "p50_us", "p95_us", "p99_us"}
	for _, op := range ops {
		head = append(head, strings.ToLower(op)+"_p50_us", strings.ToLower(op)+"_p95_us", strings.ToLower(op)+"_p99_us")
	}
	head = append(head, "client_throughput_cv", "client_p99_cv")
	cells := sum.Type == scenario.SweepMetastable
	if cells {
		// a recovery map's cell per row: policy, trigger, load (rate) and verdict
		head = append(head, "retry", "trigger", "verdict", "time_to_recover_ms")
	}
	head = append(head, "dir", "error")
	w.Write(head)
	for _, r := range sum.Steps {
		rec := []string{strconv.Itoa(r.Step), strconv.Itoa(r.Nodes), strconv.Itoa(r.Threads), strconv.Itoa(r.Clients), strconv.FormatInt(r.Records, 10),
			r.RateSpec, fnum(r.OfferedOps), fnum(r.AchievedOps), strconv.FormatInt(r.Errors, 10),
			strconv.FormatInt(r.All.P50, 10), strconv.FormatInt(r.All.P95, 10), strconv.FormatInt(r.All.P99, 10)}
		for _, op := range ops {
			l := r.PerOp[op]
			rec = append(rec, strconv.FormatInt(l.P50, 10), strconv.FormatInt(l.P95, 10), strconv.FormatInt(l.P99, 10))
		}
		rec = append(rec, cvText(r.ClientThroughputCV), cvText(r.ClientP99CV))
		if cells {
			ttr := ""
			if r.TimeToRecoverMs != nil {
				ttr = strconv.FormatFloat(*r.TimeToRecoverMs, 'f', -1, 64)
			}
			rec = append(rec, r.Retry, r.Trigger, r.Verdict, ttr)
		}
		rec = append(rec, r.Dir, firstLine(r.Error)) // the whole error is in summary.json
		w.Write(rec)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("sweep: steps.csv: %w", err)
	}
	return f.Close()
}

// opsOf returns the operation names of every step, sorted.
func opsOf(sum *rundir.SweepSummary) []string {
	seen := map[string]bool{}
	for _, r := range sum.Steps {
		for op := range r.PerOp {
			seen[op] = true
		}
	}
	var ops []string
	for op := range seen {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	return ops
}

// WriteTable prints the sweep's table: step, nodes, offered and achieved
// throughput, p50/p95/p99 per operation (ms) and the per-client CV.
func WriteTable(w io.Writer, sum *rundir.SweepSummary) {
	ops := opsOf(sum)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	head := "step\tnodes\toffered (ops/s)\tachieved (ops/s)\terrors\t"
	for _, op := range ops {
		head += op + " p50/p95/p99 (ms)\t"
	}
	cells := sum.Type == scenario.SweepMetastable
	head += "client CV\t"
	if cells {
		head += "retry\ttrigger\tverdict\t"
	}
	fmt.Fprintln(tw, head)
	for _, r := range sum.Steps {
		offered := "closed loop"
		if r.OfferedOps > 0 {
			offered = fmt.Sprintf("%.0f", r.OfferedOps)
		}
		line := fmt.Sprintf("%d\t%d\t%s\t%.1f\t%d\t", r.Step, r.Nodes, offered, r.AchievedOps, r.Errors)
		for _, op := range ops {
			l, ok := r.PerOp[op]
			if !ok {
				line += "-\t"
				continue
			}
			line += fmt.Sprintf("%s/%s/%s\t", ms(l.P50), ms(l.P95), ms(l.P99))
		}
		line += cvText(r.ClientThroughputCV) + "\t"
		if cells {
			retry := r.Retry
			if retry == "" {
				retry = "the scenario's"
			}
			line += retry + "\t" + r.Trigger + "\t" + verdictText(r) + "\t"
		}
		if r.Error != "" {
			line += " failed: " + firstLine(r.Error)
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}

// verdictText is a recovery map cell's verdict: recovered in X s,
// metastable, unknown, not judged.
func verdictText(r rundir.SweepStep) string {
	switch {
	case r.Verdict == metastable.Recovered && r.TimeToRecoverMs != nil:
		return fmt.Sprintf("recovered in %.1f s", *r.TimeToRecoverMs/1000)
	case r.Verdict == "":
		return "not judged"
	}
	return r.Verdict
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func ms(us int64) string {
	v := float64(us) / 1000
	switch {
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 1000:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

func fnum(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

func cvText(v float64) string {
	if v < 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}
