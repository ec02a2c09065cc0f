package experiment

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/clusterctl"
	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/report"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/stats"
)

// TrialsSpec is how a scenario's trials run (`scenario --trials N`, the
// scenario's trials section).
type TrialsSpec struct {
	N    int
	Seed uint64 // the base seed; 0 draws one from the clock (recorded)
	Mode string // scenario.TrialsFresh (default) or scenario.TrialsReuse
	// Only, 1..N, runs that trial alone (a replay: with the recorded
	// seed it draws exactly what it drew before); 0 runs all.
	Only int
}

// Validate checks the trials' settings.
func (t TrialsSpec) Validate() error {
	switch {
	case t.N < 1 || t.N > scenario.MaxTrials:
		return fmt.Errorf("trials %d: allowed 1..%d", t.N, scenario.MaxTrials)
	case t.Mode != "" && t.Mode != scenario.TrialsFresh && t.Mode != scenario.TrialsReuse:
		return fmt.Errorf("trials mode %q: allowed %s or %s", t.Mode, scenario.TrialsFresh, scenario.TrialsReuse)
	case t.Only < 0 || t.Only > t.N:
		return fmt.Errorf("trial %d: allowed 1..%d (the number of trials)", t.Only, t.N)
	}
	return nil
}

// TrialsOutcome is what RunTrials leaves besides its files.
type TrialsOutcome struct {
	Dir     string // the parent directory
	Summary *rundir.Summary
}

// sharedCluster is the cluster the trials of mode reuse share: started by
// the first trial, restored by each trial's restore stage, re-checked
// healthy before the next, stopped after the last.
type sharedCluster struct {
	manager *clusterctl.Manager
	cluster *launcher.Cluster
	loaded  bool
}

// reuse takes the shared cluster for this trial: it waits until the
// cluster is healthy again (the previous trial restored every node) and
// points the phases at it.
func (r *scenarioRun) reuse(ctx context.Context, sh *sharedCluster) error {
	r.manager = sh.manager
	r.cluster = sh.cluster
	r.reused = true
	r.tgt.ConnectTo(r.base, sh.cluster)
	var err error
	if r.faults, err = r.manager.FaultCluster(sh.cluster, r.run.Events, 0); err != nil {
		return err
	}
	fmt.Fprintf(r.s.Err, "reusing cluster %s: waiting until it is healthy ...\n", sh.cluster.Name)
	if err := r.faults.WaitHealthy(ctx, "for the cluster to re-stabilise before the trial"); err != nil {
		return err
	}
	r.run.Events.Emit(event.ClusterHealthy, strings.Join(sh.cluster.NodeNames(), ","), "cluster reused from the previous trial")
	return nil
}

// reuseRefuser is the optional ability of a launcher whose clusters cannot
// serve several trials (trials mode reuse): RefuseTrialReuse says why.
type reuseRefuser interface {
	RefuseTrialReuse() error
}

// checkReuse refuses mode reuse for a launcher that refuses it, before
// anything starts.
func checkReuse(l launcher.Launcher, mode string) error {
	if mode != scenario.TrialsReuse || l == nil {
		return nil
	}
	if rr, ok := l.(reuseRefuser); ok {
		if err := rr.RefuseTrialReuse(); err != nil {
			return fmt.Errorf("%s cannot run trials on one reused cluster: %w; run them with trials.mode %s (a fresh cluster per trial, the default)", l.Kind(), err, scenario.TrialsFresh)
		}
	}
	return nil
}

// trialDir is trial k's directory name under the parent.
func trialDir(k int) string { return fmt.Sprintf("trial-%02d", k) }

// RunTrials runs the scenario t.N times (or trial t.Only alone) into one
// parent directory: each trial is a scenario run of its own in trial-01/
// ... with its own draw (seed scenario.TrialSeed(base, k)); the parent's
// summary.json has the scenario's settings and the trials section (each
// metric's distribution and bootstrap interval, the trials' seeds and
// directories), rewritten after every trial, and its report.html a strip
// plot per metric. A trial that fails is recorded and the next one runs;
// bad input stops at once. The returned error says how many failed.
func RunTrials(ctx context.Context, s ScenarioSpec, t TrialsSpec) (out *TrialsOutcome, err error) {
	if err := t.Validate(); err != nil {
		return nil, &InvalidError{Err: err}
	}
	if t.Mode == "" {
		t.Mode = scenario.TrialsFresh
	}
	if t.Seed == 0 {
		t.Seed = uint64(time.Now().UnixNano())
	}
	s.FillDefaults()
	orig, err := s.Scenario.Clone()
	if err != nil {
		return nil, err
	}
	// check everything that can be checked before anything starts, on a
	// copy (newScenarioRun resolves it)
	probe := s
	if probe.Scenario, err = orig.Clone(); err != nil {
		return nil, err
	}
	probe.Err = nil
	probe.FillDefaults()
	pr, err := newScenarioRun(&probe)
	if err != nil {
		return nil, err
	}
	if err := checkReuse(pr.tgt.Launcher, t.Mode); err != nil {
		return nil, &InvalidError{Err: fmt.Errorf("%s: field trials.mode: %w", s.File, err)}
	}
	env := rundir.HostEnv(s.Version, s.Commit)
	env.Target = s.Scenario.Target.Kind
	parent, err := rundir.Open(s.RunsDir, s.Scenario.Name, time.Now(), env)
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	if b, err := orig.Marshal(); err == nil {
		if err := rundir.WriteFile(parent.Path("scenario.yaml"), b); err != nil {
			return nil, err
		}
	}
	sum := &rundir.Summary{Scenario: orig.Name, Target: orig.Target.Kind, Nodes: probe.Scenario.Target.Nodes,
		RateSpec: probe.Scenario.Load.Rate.String(), Threads: probe.Scenario.Load.Threads,
		WindowMs: ms(probe.Scenario.Load.Window.D()), WarmupMs: ms(probe.Scenario.Load.Warmup.D()), DurationMs: ms(probe.Scenario.Load.Duration.D()),
		EndReason: "trials", Trials: &rundir.Trials{N: t.N, Seed: t.Seed, Mode: t.Mode, Only: t.Only, Resamples: stats.Resamples}}
	if probe.Scenario.Target.Replicas != nil {
		sum.Replicas = *probe.Scenario.Target.Replicas
	}
	out = &TrialsOutcome{Dir: parent.Dir, Summary: sum}
	var shared *sharedCluster
	if t.Mode == scenario.TrialsReuse {
		shared = &sharedCluster{}
		defer func() {
			if shared.cluster == nil {
				return
			}
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if derr := shared.manager.Down(dctx, shared.cluster.Name); derr != nil {
				err = errors.Join(err, derr)
			}
		}()
	}
	var sums []*rundir.Summary
	failed := 0
	for k := 1; k <= t.N; k++ {
		if t.Only != 0 && k != t.Only {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		ts := s
		if ts.Scenario, err = orig.Clone(); err != nil {
			return out, err
		}
		ts.Dir = filepath.Join(parent.Dir, trialDir(k))
		ts.Seed, ts.Trial, ts.Trials, ts.BaseSeed = scenario.TrialSeed(t.Seed, k), k, t.N, t.Seed
		ts.shared = shared
		fmt.Fprintf(s.Err, "trial %d of %d (seed %d) ...\n", k, t.N, ts.Seed)
		parent.Events.Emit(event.PhaseStart, "", fmt.Sprintf("trial %d (seed %d)", k, ts.Seed))
		to, terr := RunScenario(ctx, ts)
		run := rundir.TrialRun{K: k, Seed: ts.Seed, Dir: trialDir(k)}
		var tsum *rundir.Summary
		if to != nil && to.Summary != nil {
			tsum = to.Summary
			if tsum.Trial != nil {
				run.FaultAtMs = tsum.Trial.FaultAtMs
			}
			if tsum.Analysis != nil {
				for _, f := range tsum.Analysis.Faults { // aligned with the faults' numbers
					run.Victims = append(run.Victims, f.Fault.Action+" "+f.Fault.Node)
				}
			}
		}
		if terr != nil {
			failed++
			run.Failed, run.Error = true, terr.Error()
			tsum = nil // a failed trial's figures are not the scenario's
			var inv *InvalidError
			if errors.As(terr, &inv) || to == nil {
				sum.Trials.Runs = append(sum.Trials.Runs, run)
				sums = append(sums, tsum)
				writeTrials(parent, sum, sums)
				return out, terr
			}
		}
		parent.Events.Emit(event.PhaseEnd, "", fmt.Sprintf("trial %d", k))
		sum.Trials.Runs = append(sum.Trials.Runs, run)
		sums = append(sums, tsum)
		if werr := writeTrials(parent, sum, sums); werr != nil {
			return out, werr
		}
	}
	report.WriteTrialsSummary(s.Out, sum.Trials)
	fmt.Fprintf(s.Out, "run directory: %s\n", parent.Dir)
	report.Finish(context.WithoutCancel(ctx), parent.Dir, s.Out, s.Err)
	if err := ctx.Err(); err != nil {
		return out, err
	}
	if failed > 0 {
		sum.Failed = true
		return out, fmt.Errorf("%d of %d trials failed (see each trial's directory under %s)", failed, len(sum.Trials.Runs), parent.Dir)
	}
	return out, nil
}

// writeTrials aggregates the trials so far into the parent's summary.json.
func writeTrials(parent *rundir.Run, sum *rundir.Summary, sums []*rundir.Summary) error {
	sum.Trials.Metrics = report.AggregateTrials(sum.Trials.Runs, sums, sum.Trials.Seed)
	sum.Failures = nil
	for _, r := range sum.Trials.Runs {
		if r.Failed {
			sum.Failures = append(sum.Failures, fmt.Sprintf("trial %d: %s", r.K, r.Error))
		}
	}
	sum.Failed = len(sum.Failures) > 0
	sum.PeakRSSBytes = PeakRSS()
	return rundir.WriteJSON(parent.Path("summary.json"), sum)
}
