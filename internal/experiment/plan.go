package experiment

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/workload"
)

// PlanScenario resolves and validates a scenario exactly as RunScenario
// does before anything starts, and writes the plan to s.Out: the cluster
// and its node names, the workload, each phase with its threads and rate,
// every fault step at its time, the checks. It starts nothing (`faultbench
// scenario --dry-run`).
func PlanScenario(s ScenarioSpec) error {
	r, err := newScenarioRun(&s)
	if err != nil {
		return err
	}
	prep, err := checkProperties(r.s.Workloads, r.tgt, runner.Run, r.runProperties(r.sc.Load.Rate.OpsPerSec))
	if err != nil {
		return err
	}
	writePlan(s.Out, r, prep.Workload)
	return nil
}

func writePlan(w io.Writer, r *scenarioRun, wl *workload.Workload) {
	sc := r.sc
	ld := sc.Load
	fmt.Fprintf(w, "scenario %s (%s): valid; dry run, nothing started\n\n", sc.Name, r.s.File)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
	if len(sc.Target.Endpoints) > 0 {
		row("target", "%s at %s (not started by faultbench)", r.tgt.Kind, strings.Join(sc.Target.Endpoints, ","))
	} else {
		names := r.tgt.NodeNames(sc.Target.Nodes, *sc.Target.Replicas)
		row("target", "%s, %s: %s", r.tgt.Kind, r.tgt.Describe(sc.Target.Nodes, *sc.Target.Replicas), strings.Join(names, ", "))
		if len(sc.Target.Options) > 0 {
			row("", "options %s", kv(sc.Target.Options))
		}
	}
	if len(sc.Target.Driver) > 0 {
		row("driver", "%s", kv(sc.Target.Driver))
	}
	what := "insert %d records"
	if wl.Program() != nil {
		what = "run %d load operations"
		row("workload", "%s: %s, operations %s", sc.Workload.YCSB, wl.Entry().Doc, strings.Join(wl.OpNames(), ", "))
	} else {
		row("workload", "%s: %d records, distribution %s; read %g update %g insert %g scan %g read-modify-write %g delete %g",
			sc.Workload.YCSB, wl.RecordCount(), wl.RequestDistribution(),
			wl.Proportion(workload.Read), wl.Proportion(workload.Update), wl.Proportion(workload.Insert),
			wl.Proportion(workload.Scan), wl.Proportion(workload.ReadModifyWrite), wl.Proportion(workload.Delete))
	}
	if ld.SkipLoad {
		row("1. load", "skipped (load.skip_load)")
	} else {
		rate := "as fast as it goes"
		if ld.LoadRate.OpsPerSec > 0 {
			rate = fmt.Sprintf("at %s inserts/s (about %s)", ld.LoadRate, roundDur(time.Duration(float64(wl.InsertCount())/ld.LoadRate.OpsPerSec*float64(time.Second))))
		}
		row("1. load", what+" with %d threads, %s", wl.InsertCount(), ld.LoadThreads, rate)
	}
	if ld.Rate.Percent > 0 {
		cd := ld.Calibration.D()
		row("2. calibration", "closed loop for %s (warm-up %s) with %d threads: measures the capacity", cd, cd/5, ld.Threads)
	} else {
		row("2. calibration", "none (load.rate is not a percentage)")
	}
	rate := "closed loop (as fast as it goes)"
	switch {
	case ld.Rate.Percent > 0:
		rate = fmt.Sprintf("%s of the calibrated capacity (open loop)", ld.Rate)
	case ld.Rate.OpsPerSec > 0:
		rate = fmt.Sprintf("%s ops/s (open loop)", ld.Rate)
	}
	threads := fmt.Sprintf("%d threads", ld.Threads)
	switch {
	case ld.OpenThreads == scenario.OpenThreadsAuto && !ld.Rate.Max:
		threads = fmt.Sprintf("threads sized from the calibration's p99 latency (load.open_threads auto: rate × p99 × %d, %d..%d)", OpenThreadsMargin, ld.Threads, MaxAutoOpenThreads)
		if ld.Rate.Percent <= 0 {
			threads = fmt.Sprintf("%d threads (load.open_threads auto needs a calibration: none here)", ld.Threads)
		}
	case ld.OpenThreads != "" && !ld.Rate.Max:
		threads = ld.OpenThreads + " threads (load.open_threads)"
	}
	row("3. measured run", "warm-up %s, then %s at %s with %s; windows of %s, operation timeout %s",
		ld.Warmup.D(), ld.Duration.D(), rate, threads, ld.Window.D(), ld.OpTimeout.D())
	t := ld.Warmup.D()
	if r.chaos != nil {
		row("", "  chaos (seed %d): %s; the cycles drawn:", r.seed, r.chaos)
	}
	for _, st := range r.steps {
		row("", "  t=%-8s %s", (t + st.At).String(), st.String())
	}
	if pr, err := runner.ReadProfile(r.runProperties(0)); err == nil && pr.Enabled() {
		row("", "  rate profile %s (runner.profile): the rate times these factors from the end of the warm-up", pr)
	}
	if a := r.scaler; a != nil {
		row("", "  autoscale (EB2): %d..%d nodes, cooldown %s, SLA p99 of %s <= %s; rules on every window after the warm-up:",
			a.cfg.MinNodes, a.cfg.MaxNodes, a.cfg.Cooldown, a.cfg.Op, a.cfg.LatencyTarget)
		for _, rl := range a.cfg.Rules {
			row("", "    %s: %s", rl.Name, rl)
		}
	}
	row("", "  t=%-8s end of the measured run", (t + ld.Duration.D()).String())
	if len(r.steps) > 0 || r.scaler != nil {
		row("4. restore", "every node still down or paused is brought back")
	}
	if len(sc.Checks) > 0 {
		row("5. checks", "%s", strings.Join(sc.Checks, ", "))
	} else {
		row("5. checks", "none")
	}
	a := sc.Analysis
	row("analysis", "down below %g of the baseline; recovered within %g, held %s; steady within %g over %s",
		a.DownFraction, a.RecoverTol, a.Hold.D(), a.SteadyTolerance, a.SteadySpan.D())
	tw.Flush()
	fmt.Fprintln(w, "\n(t is the time since the measured run's start; a step's `at` counts from the end of the warm-up)")
}

func kv(m map[string]string) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, k+"="+v)
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

func roundDur(d time.Duration) time.Duration {
	if d > time.Second {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}
