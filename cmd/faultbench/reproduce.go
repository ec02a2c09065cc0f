package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/reproduce"
	"github.com/faultbench/faultbench/workloads"
)

const reproduceExamples = `  faultbench reproduce nosql-failover --dry-run              # validate every step, print the plan
  faultbench reproduce upb --scale small                     # this machine, under an hour
  faultbench reproduce cumulonimbo --page docs/reproductions/cumulonimbo.md   # and rewrite the page's tables
  faultbench reproduce scalability --scale full              # the paper's sizes (its machines)
  faultbench reproduce txkv-recovery --only heartbeat-1s --set load.duration=5s   # one step, shortened: a try
  faultbench reproduce tables runs/20261127T120000Z-reproduce-upb              # the tables again, from the runs
  faultbench reproduce tables runs/20261127T120000Z-reproduce-upb --check docs/reproductions/upb.md`

// reproduceCmd implements `reproduce PAPER` and `reproduce tables DIR`.
func (a *app) reproduceCmd(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "tables" {
		return a.reproduceTables(args[1:])
	}
	var papers strings.Builder
	for _, p := range reproduce.Papers() {
		fmt.Fprintf(&papers, "  %-15s %s\n", p.Name, p.Title)
	}
	fs := a.newFlags("reproduce", "reproduce PAPER [--scale small|full] [--dry-run] [--page FILE] [flags]\n"+
		"       faultbench reproduce tables DIR [--page FILE | --check FILE]\n\n"+
		"Runs the experiments of one of the five papers faultbench implements, in the\n"+
		"paper's order: each step a shipped scenario (scenarios/PAPER/) with the scale's\n"+
		"settings, as a scenario, trials, a sweep or the UPB. small fits one 2-core\n"+
		"machine in under an hour per paper; full takes the paper's sizes. Writes\n"+
		"runs/<time>-reproduce-PAPER/ with every step's run directory, manifest.json and\n"+
		"tables.md (the reproduction page's tables, from the runs); --page also rewrites\n"+
		"the generated section of that page, so a re-run can be diffed.\n"+
		"`reproduce tables DIR` writes the tables of a reproduction directory again.\n\n"+
		"PAPER is one of:\n"+strings.TrimRight(papers.String(), "\n")+"\n\nPages: docs/reproductions/PAPER.md.", reproduceExamples)
	scale := fs.String("scale", string(reproduce.Small), "`small` (this machine, under an hour per paper) or full (the paper's sizes)")
	dryRun := fs.Bool("dry-run", false, "validate every step at the scale and print the plan, starting nothing")
	page := fs.String("page", "", "rewrite the generated section of this reproduction page `file` from the runs (e.g. docs/reproductions/upb.md)")
	runs := fs.String("runs", "runs", "parent `dir`ectory of the reproduction directory")
	stateDir := fs.String("state-dir", launcher.DefaultStateDir(), "where running clusters are recorded")
	status := fs.Bool("s", false, "plain status lines every 10 s instead of the progress bar")
	quiet := fs.Bool("q", false, "quiet: no progress display")
	var only, sets listFlag
	fs.Var(&only, "only", "run only the step `ID` (repeatable; the plan of --dry-run lists the IDs)")
	fs.Var(&sets, "set", "append `path=value` to every step's settings (repeatable), e.g. load.duration=5s for a short try")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("reproduce needs exactly one PAPER: %s", strings.Join(reproduce.Names(), ", "))
	}
	sc, err := reproduce.ParseScale(*scale)
	if err != nil {
		return usagef("--scale: %v", err)
	}
	spec := reproduce.Spec{Paper: pos[0], Scale: sc, DryRun: *dryRun, Page: *page, RunsDir: *runs, StateDir: *stateDir, Only: only, Sets: sets,
		Out: a.stdout, Err: a.stderr,
		Env: reproduce.Env{OpenWorkload: workloads.Open, Targets: a.targets, Processes: processRunner(), Version: version, Commit: commit,
			Status: *status, Quiet: *quiet}}
	if err := spec.Validate(); err != nil {
		return usageError{msg: err.Error()}
	}
	if !*dryRun {
		a.warnLeftovers(*stateDir)
	}
	_, err = reproduce.Run(ctx, spec)
	if errors.Is(err, context.Canceled) {
		return errors.New("interrupted; the cluster was stopped")
	}
	return err
}

// reproduceTables implements `reproduce tables DIR`.
func (a *app) reproduceTables(args []string) error {
	fs := a.newFlags("reproduce tables", "reproduce tables DIR [--page FILE | --check FILE]\n\n"+
		"Writes the tables of a reproduction directory (runs/<time>-reproduce-PAPER/,\n"+
		"from its manifest.json and the runs it names) to stdout; --page rewrites the\n"+
		"generated section of a reproduction page with them; --check compares the\n"+
		"page's section with them and fails, naming the first line that differs.",
		"  faultbench reproduce tables runs/20261127T120000Z-reproduce-upb\n"+
			"  faultbench reproduce tables runs/20261127T120000Z-reproduce-upb --check docs/reproductions/upb.md")
	page := fs.String("page", "", "rewrite the generated section of this page `file`")
	checkPage := fs.String("check", "", "compare the generated section of this page `file` with the runs")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("reproduce tables needs exactly one reproduction directory")
	}
	if *page != "" && *checkPage != "" {
		return usagef("--page and --check: one or the other")
	}
	m, err := reproduce.ReadManifest(pos[0])
	if err != nil {
		return usageError{msg: err.Error()}
	}
	p, _ := reproduce.Lookup(m.Paper)
	switch {
	case *checkPage != "":
		b, err := os.ReadFile(*checkPage)
		if err != nil {
			return usageError{msg: err.Error()}
		}
		if err := reproduce.CheckPage(b, p, m, pos[0]); err != nil {
			return fmt.Errorf("%s: %w", *checkPage, err)
		}
		fmt.Fprintf(a.stdout, "%s: the generated section matches the runs of %s\n", *checkPage, pos[0])
		return nil
	}
	tables, err := reproduce.Tables(p, m, pos[0])
	if err != nil {
		return err
	}
	if *page != "" {
		if err := reproduce.UpdatePage(*page, p.Name, tables); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "%s: generated section rewritten from %s\n", *page, pos[0])
		return nil
	}
	_, err = fmt.Fprint(a.stdout, tables)
	return err
}
