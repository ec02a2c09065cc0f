package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/clusterctl"
	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/report"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/scenarios"
	"github.com/faultbench/faultbench/workloads"
)

const scenarioExamples = `  faultbench scenario scenarios/failover-etcd.yaml
  faultbench scenario --dry-run scenarios/failover-etcd.yaml            # check the file, print the plan
  faultbench scenario scenarios/failover-etcd.yaml --set load.rate=100% --set schedule.down=60s
  faultbench scenario failover-redis-cluster --durations 10m,10m,20m     # the paper's timing
  faultbench scenario scenarios/failover-redis-cluster-sync.yaml -s
  faultbench scenario failover-etcd --trials 5 --set schedule.steady=20s..40s   # 5 seeded trials, intervals per metric
  faultbench scenario failover-etcd --trials 5 --trial 3 --seed 42              # replay trial 3 of a run with seed 42`

// scenarioCmd implements `scenario FILE`.
func (a *app) scenarioCmd(ctx context.Context, args []string) error {
	fs := a.newFlags("scenario", "scenario FILE.yaml|NAME [--set path=value]... [flags]\n\nRuns a scenario end to end: starts the cluster, loads it, calibrates\ncapacity when the rate is a percentage, runs the load with the fault\nschedule, restores every node, runs the checks and writes the run\ndirectory. NAME is a built-in scenario: "+strings.Join(scenarios.Names(), ", ")+
		"\nSchema: docs/scenarios.md.", scenarioExamples)
	var sets listFlag
	fs.Var(&sets, "set", "override a scenario field `path=value` (repeatable), e.g. load.rate=100%")
	durations := fs.String("durations", "", "failover timing `steady,down,after` (e.g. 10m,10m,20m for the NoSQL failover study's)")
	status := fs.Bool("s", false, "plain status lines every 10 s instead of the progress bar")
	quiet := fs.Bool("q", false, "quiet: no progress display")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus metrics at `host:port`/metrics during the run, e.g. 127.0.0.1:9464")
	runs := fs.String("runs", "runs", "parent `dir`ectory of run directories")
	stateDir := fs.String("state-dir", launcher.DefaultStateDir(), "where running clusters are recorded")
	nodesFrom := fs.String("nodes-from", "", "run the scenario's cluster on the `node` hosts of this inventory file, one node per host, over SSH (etcd; docs/distributed.md)")
	dryRun := fs.Bool("dry-run", false, "resolve and validate the scenario, print the plan with times (phases, rates, each fault step, the checks) and exit, starting nothing")
	trials := fs.Int("trials", 0, "repeat the scenario `N` times, each trial with its own seeded draw of fault-time windows and random-of victims, into one parent directory with each metric's interval (default: the scenario's trials.n; docs/scenarios.md)")
	trial := fs.Int("trial", 0, "run only trial `K` of the trials (a replay, with --seed)")
	seed := fs.Uint64("seed", 0, "the trials' base `seed` (default: the scenario's trials.seed, else drawn and recorded)")
	fs.BoolVar(&a.failOnAnomaly, "fail-on-anomaly", false, fmt.Sprintf("exit %d when a history checker of the scenario's checks (isolation, linearizable, bank, set) found anomalies (valid=false; for CI), 0 otherwise", exitAnomaly))
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["trials"] && (*trials < 1 || *trials > scenario.MaxTrials) {
		return usagef("--trials %d: allowed 1..%d", *trials, scenario.MaxTrials)
	}
	if set["trial"] && *trial < 1 {
		return usagef("--trial %d: allowed 1..N, the number of trials", *trial)
	}
	if set["seed"] && *seed == 0 {
		return usagef("--seed 0: allowed a positive number (0 means: draw one)")
	}
	if len(pos) != 1 {
		return usagef("scenario needs exactly one FILE or built-in NAME (%s)", strings.Join(scenarios.Names(), ", "))
	}
	if *durations != "" {
		parts := strings.Split(*durations, ",")
		if len(parts) != 3 {
			return usagef("--durations %q: expected steady,down,after (e.g. 10m,10m,20m)", *durations)
		}
		for i, k := range []string{"steady", "down", "after"} {
			if _, err := scenario.ParseDuration(parts[i]); err != nil {
				return usagef("--durations: %s: %v", k, err)
			}
			sets = append(sets, "schedule."+k+"="+strings.TrimSpace(parts[i]))
		}
	}
	if set["trials"] {
		// --trials N is the scenario's trials.n, so that a --set trials.mode=reuse
		// (which makes a trials section) validates with the flag's N
		sets = append(sets, fmt.Sprintf("trials.n=%d", *trials))
	}
	sc, file, err := loadScenario(pos[0], sets)
	if err != nil {
		return err
	}
	if sc.UPB != nil {
		return usagef("%s is a UPB scenario (it has an upb: section): run it with `faultbench upb %s`", file, pos[0])
	}
	if sc.Sweep != nil {
		return usagef("%s is a sweep (it has a sweep: section): run it with `faultbench sweep %s`", file, pos[0])
	}
	if set["trials"] || set["trial"] || set["seed"] || sc.Trials != nil {
		ts := experiment.TrialsSpec{N: *trials, Seed: *seed, Only: *trial}
		if sc.Trials != nil {
			ts.Mode = sc.Trials.Mode
			if !set["trials"] {
				ts.N = sc.Trials.N
			}
			if !set["seed"] {
				ts.Seed = sc.Trials.Seed
			}
		}
		if ts.N == 0 {
			return usagef("--trial and --seed need trials: --trials N or the scenario's trials.n")
		}
		if err := ts.Validate(); err != nil {
			return usagef("%v", err)
		}
		if *nodesFrom != "" {
			return usagef("--nodes-from and trials: not supported together yet; run the trials on this machine")
		}
		if !*dryRun {
			return a.runTrials(ctx, experiment.ScenarioSpec{
				Scenario: sc, File: file, OpenWorkload: workloads.Open, RunsDir: *runs, StateDir: *stateDir,
				Out: a.stdout, Err: a.stderr, Status: *status, Quiet: *quiet, MetricsAddr: *metricsAddr, Version: version, Commit: commit,
				Targets: a.targets, Processes: processRunner(),
			}, ts)
		}
	}
	if *dryRun {
		return experiment.PlanScenario(experiment.ScenarioSpec{
			Scenario: sc, File: file, OpenWorkload: workloads.Open, RunsDir: *runs, StateDir: *stateDir,
			Out: a.stdout, Err: a.stderr, Targets: a.targets, Processes: processRunner(),
		})
	}
	if *nodesFrom != "" {
		return a.scenarioOnHosts(ctx, sc, file, *nodesFrom, *runs, *stateDir, *status, *quiet, *metricsAddr)
	}
	return a.runScenario(ctx, sc, file, *runs, *stateDir, *status, *quiet, *metricsAddr)
}

// loadScenario reads a scenario from a file, or a built-in one by name.
// Every error is bad input (a missing or invalid file, a wrong --set): a
// usage error.
func loadScenario(arg string, sets []string) (*scenario.Scenario, string, error) {
	if _, err := os.Stat(arg); err == nil {
		sc, err := scenario.LoadFile(arg, sets)
		if err != nil {
			return nil, "", usageError{msg: err.Error()}
		}
		return sc, arg, nil
	}
	b, err := scenarios.Read(strings.TrimPrefix(arg, "scenarios/"))
	if err != nil {
		return nil, "", usagef("scenario %s: no such file, and %v", arg, err)
	}
	name := "scenarios/" + strings.TrimSuffix(strings.TrimPrefix(arg, "scenarios/"), ".yaml") + ".yaml"
	sc, err := scenario.Parse(b, name, sets)
	if err != nil {
		return nil, "", usageError{msg: err.Error()}
	}
	return sc, name, nil
}

func (a *app) runScenario(ctx context.Context, sc *scenario.Scenario, file, runs, stateDir string, status, quiet bool, metricsAddr string) error {
	return a.runScenarioSpec(ctx, experiment.ScenarioSpec{
		Scenario: sc, File: file, OpenWorkload: workloads.Open, RunsDir: runs, StateDir: stateDir,
		Out: a.stdout, Err: a.stderr, Status: status, Quiet: quiet, MetricsAddr: metricsAddr, Version: version, Commit: commit,
		Targets: a.targets, Processes: processRunner(),
	})
}

// runScenarioSpec runs a scenario and says where its results are.
func (a *app) runScenarioSpec(ctx context.Context, spec experiment.ScenarioSpec) error {
	a.warnLeftovers(spec.StateDir)
	out, err := experiment.RunScenario(ctx, spec)
	if a.failOnAnomaly && out != nil {
		err = failOnAnomaly(out.Dir, err)
	}
	if out != nil && out.Dir != "" && err != nil {
		switch hint := report.PartialRunHint(out.Dir); {
		case out.Summary != nil && out.Summary.Failed:
			fmt.Fprintf(a.stderr, "results are in %s\n", out.Dir)
		case hint != "":
			fmt.Fprintf(a.stderr, "partial results are in %s: %s\n", out.Dir, hint)
		default:
			fmt.Fprintf(a.stderr, "partial results are in %s\n", out.Dir)
		}
	}
	if errors.Is(err, context.Canceled) {
		return errors.New("interrupted; the cluster was stopped")
	}
	return err
}

// runTrials runs a scenario's trials and says where their results are.
func (a *app) runTrials(ctx context.Context, spec experiment.ScenarioSpec, ts experiment.TrialsSpec) error {
	a.warnLeftovers(spec.StateDir)
	out, err := experiment.RunTrials(ctx, spec, ts)
	if a.failOnAnomaly && out != nil {
		err = failOnAnomaly(out.Dir, err)
	}
	if out != nil && out.Dir != "" && err != nil {
		fmt.Fprintf(a.stderr, "results are in %s\n", out.Dir)
	}
	if errors.Is(err, context.Canceled) {
		return errors.New("interrupted; the cluster was stopped")
	}
	return err
}

// demo implements `demo`.
func (a *app) demo(ctx context.Context, args []string) error {
	fs := a.newFlags("demo", "demo [flags]\n\nThe failover test in about a minute and a half: a real 3-member etcd cluster\nstarted by this binary, workload A at 75 % of the capacity measured first,\nkill -9 of the leader, restart, recovery, lost-write check.", "  faultbench demo\n  faultbench demo --set load.rate=100%")
	var sets listFlag
	fs.Var(&sets, "set", "override a scenario field `path=value` (repeatable)")
	runs := fs.String("runs", "runs", "parent `dir`ectory of run directories")
	stateDir := fs.String("state-dir", launcher.DefaultStateDir(), "where running clusters are recorded")
	status := fs.Bool("s", false, "plain status lines every 10 s instead of the progress bar")
	quiet := fs.Bool("q", false, "quiet: no progress display")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus metrics at `host:port`/metrics during the run, e.g. 127.0.0.1:9464")
	if pos, err := parse(fs, args); err != nil {
		return err
	} else if len(pos) != 0 {
		return usagef("demo takes no arguments")
	}
	sc, file, err := loadScenario("demo", sets)
	if err != nil {
		return err
	}
	return a.runScenario(ctx, sc, file, *runs, *stateDir, *status, *quiet, *metricsAddr)
}

// faultCmd implements `fault ACTION NODE`.
func (a *app) faultCmd(ctx context.Context, args []string) error {
	reg := fault.NewRegistry()
	var names []string
	for _, n := range reg.Names() {
		if f, err := reg.New(n); err == nil && fault.IsClientFault(f) {
			continue // acts on a scenario's load, not from here
		}
		names = append(names, string(n))
	}
	fs := a.newFlags("fault", "fault ACTION NODE [VALUE] [--cluster NAME]\n\nActs on a cluster that `faultbench cluster up` started. ACTION is one of\n"+strings.Join(names, ", ")+"; NODE is a node name (n1), leader, primary,\nreplica, follower, random, any:N or all (docs/faults.md). partition also takes\nhalves, majority-minority, bridge or groups 'n1,n2|n3,n4'; loss, bandwidth\nand delay take a VALUE (20%, 1mbit, 200ms±20ms); heal alone removes every network fault.\n"+
		string(fault.ActionCrashClient)+" acts on the client of a scenario's load and works only in a scenario's schedule.",
		"  faultbench cluster up etcd --nodes 3\n  faultbench fault kill leader\n  faultbench fault kill primary --whole-node   # postgres-ha: the primary's keeper and postgres together\n  faultbench fault start n2\n  faultbench fault pause n3 --cluster etcd && faultbench fault resume n3\n"+
			"  faultbench cluster up etcd --nodes 5 --net   # network faults need --net (root)\n  faultbench fault partition leader\n  faultbench fault partition 'n1,n2|n3,n4,n5'\n  faultbench fault heal\n  faultbench fault loss n2 20%\n  faultbench fault bandwidth n3 1mbit\n  faultbench fault delay n1 200ms±20ms")
	cname := fs.String("cluster", "", "cluster name (default: the only running cluster)")
	stateDir := fs.String("state-dir", launcher.DefaultStateDir(), "where clusters are recorded")
	timeout := fs.Duration("timeout", time.Minute, "deadline for the fault to take effect")
	var params listFlag
	fs.Var(&params, "param", "a parameter of the fault kind, `name=value` (repeatable), e.g. add-node --param count=2 (docs/faults.md#fault-kinds)")
	wholeNode := fs.Bool("whole-node", false, "act on the node's whole machine: on postgres-ha nK means nK-keeper (pg_autoctl and its postgres together); other targets' nodes are whole already")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) >= 1 && reg.Has(fault.Action(pos[0])) {
		if f, err := reg.New(fault.Action(pos[0])); err == nil && fault.IsClientFault(f) {
			return usageError{msg: fault.ErrClientFaultOutsideLoad(fault.Action(pos[0])).Error()}
		}
	}
	if len(pos) == 1 && pos[0] == string(fault.ActionHeal) {
		pos = append(pos, fault.SelectAll) // `fault heal`: every network fault
	}
	if len(pos) == 1 && pos[0] == string(fault.ActionAddNode) {
		pos = append(pos, "") // `fault add-node`: one new node, no selector
	}
	if len(pos) > 2 { // network faults' value: `fault loss n2 20%`
		pos = []string{pos[0], strings.Join(pos[1:], " ")}
	}
	if len(pos) != 2 {
		return usagef("fault needs ACTION and NODE, e.g. `faultbench fault kill leader`")
	}
	if *timeout <= 0 {
		return usagef("-timeout %v: must be positive (e.g. 30s)", *timeout)
	}
	if *cname != "" && !clusterctl.ValidName(*cname) {
		return usagef("--cluster %q: %s", *cname, clusterctl.NameRule)
	}
	if !reg.Has(fault.Action(pos[0])) {
		return usagef("unknown fault action %q (known: %s)", pos[0], strings.Join(names, ", "))
	}
	step, err := reg.CommandStep(fault.Action(pos[0]), pos[1], params)
	if err != nil {
		return usageError{msg: err.Error()}
	}
	env, err := launcher.NewEnv()
	if err != nil {
		return err
	}
	m := newManager(*stateDir, env, a)
	c, err := m.Choose(*cname)
	var amb *clusterctl.AmbiguousError
	if errors.As(err, &amb) {
		return usageError{msg: err.Error()}
	} else if err != nil {
		return err
	}
	t, err := m.FaultCluster(c, nil, *timeout)
	if err != nil {
		return err
	}
	fctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if *wholeNode {
		if pos[1], err = m.WholeNodeSelector(fctx, c, pos[1]); err != nil {
			return err
		}
	}
	step.Node = pos[1]
	nodes, err := fault.ApplyStep(fctx, t, reg, step)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "%s %s: done (%s)\n", pos[0], strings.Join(nodes, ","), pos[1])
	return nil
}
