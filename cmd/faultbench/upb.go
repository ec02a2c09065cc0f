package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/upb"
	"github.com/faultbench/faultbench/workloads"
)

const upbExamples = `  faultbench upb scenarios/upb-etcd.yaml                   # K = 0..2, every step, Tables IV-X
  faultbench upb upb-etcd --set upb.kmax=1 --set upb.measure=10s
  faultbench upb scenarios/upb-redis-cluster.yaml --set upb.kmax=2
  faultbench upb scenarios/upb-etcd.yaml --set upb.measure=2m   # the paper's 2-minute windows
  faultbench upb summarize results.csv                      # Tables VI-X from k,f,t rows`

// upbCmd implements `upb SCENARIO` and `upb summarize FILE.csv`.
func (a *app) upbCmd(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "summarize" {
		return a.upbSummarize(args[1:])
	}
	fs := a.newFlags("upb", "upb SCENARIO.yaml|NAME [--set path=value]... [flags]\n       faultbench upb summarize FILE.csv\n\n"+
		"Runs the Under Pressure Benchmark (UPB; Fior et al., JIDM 2013;\nsee docs/papers.md) end to end on clusters it starts:\n"+
		"for K = 0..kmax a fresh cluster tolerating K failures (etcd: 2K+1 members,\n"+
		"redis-cluster: K replicas per master) is loaded; the per-client limit L_c is\n"+
		"calibrated on K=0; Algorithm 1 finds T(K,0) and, after killing F = 1..K nodes,\n"+
		"T(K,F). Prints Tables IV-X and writes runs/<time>-upb-<name>/ with every\n"+
		"probe's run, summary.json, results.csv (k,f,t) and report.html (the tables\n"+
		"and every probe's curve; `faultbench report DIR` redraws it).\n\n"+
		"`upb summarize FILE.csv` prints Tables VI-X from k,f,t rows (T in ops/s).\n"+
		"The scenario's upb: section holds the parameters (docs/upb.md).", upbExamples)
	var sets listFlag
	fs.Var(&sets, "set", "override a scenario field `path=value` (repeatable), e.g. upb.kmax=1")
	runs := fs.String("runs", "runs", "parent `dir`ectory of run directories")
	stateDir := fs.String("state-dir", launcher.DefaultStateDir(), "where running clusters are recorded")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("upb needs exactly one scenario FILE or built-in NAME (e.g. scenarios/upb-etcd.yaml), or `summarize FILE.csv`")
	}
	sc, file, err := loadScenario(pos[0], sets)
	if err != nil {
		return err
	}
	if sc.UPB == nil {
		return fmt.Errorf("%s has no upb: section; UPB scenarios are scenarios/upb-*.yaml (docs/upb.md)", file)
	}
	a.warnLeftovers(*stateDir)
	out, err := upb.Run(ctx, upb.Spec{
		Scenario: sc, File: file, OpenWorkload: workloads.Open, RunsDir: *runs, StateDir: *stateDir,
		Out: a.stdout, Err: a.stderr, Version: version, Commit: commit, Targets: a.targets,
	})
	if out != nil && out.Dir != "" && err != nil {
		fmt.Fprintf(a.stderr, "partial results are in %s\n", out.Dir)
	}
	if errors.Is(err, context.Canceled) {
		return errors.New("interrupted; the clusters were stopped")
	}
	return err
}

// upbSummarize implements `upb summarize FILE.csv`.
func (a *app) upbSummarize(args []string) error {
	fs := a.newFlags("upb summarize", "upb summarize FILE.csv\n\nReads rows k,f,t — T(K,F) in ops/s, an optional header, # comments — and\n"+
		"prints Tables VI-X of the Under Pressure Benchmark: T(0,0), D(K,0), D(K,F), DF_K, D_T and D_F.",
		"  faultbench upb summarize runs/20261122T030000Z-upb-etcd/results.csv\n"+
			"  printf 'k,f,t\\n0,0,238740\\n1,0,156659\\n1,1,152072\\n' > voltdb.csv && faultbench upb summarize voltdb.csv")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("upb summarize needs exactly one CSV file of k,f,t rows")
	}
	ts, err := upb.ReadCSVFile(pos[0])
	if err != nil {
		return err
	}
	m, err := upb.Compute(ts)
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	upb.WriteMetricTables(a.stdout, m, 0)
	if len(m.Missing) > 0 {
		fmt.Fprintf(a.stderr, "note: %s lacks %s\n", pos[0], strings.Join(m.Missing, ", "))
	}
	return nil
}
