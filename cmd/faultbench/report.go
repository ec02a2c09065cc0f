package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/faultbench/faultbench/internal/report"
	"github.com/faultbench/faultbench/internal/upb"
)

const reportExamples = `  faultbench report runs/20261122T025454Z-etcd-kill-pause
  faultbench report runs/*-demo
  faultbench report --verdict-table runs/*-isolation-* -o docs/results/isolation-table.md`

// reportCmd implements `report RUN_DIR...`.
func (a *app) reportCmd(ctx context.Context, args []string) error {
	fs := a.newFlags("report", "report [--verdict-table [-o FILE]] RUN_DIR...\n\nRe-renders RUN_DIR/report.html (one self-contained file: charts as inline\nSVG, no network) and RUN_DIR/plots/*.png from the files of a run directory:\nwindows.csv, events.jsonl, summary.json, clients.csv, env.json and the\nresolved scenario. Works on runs that were killed halfway. On a UPB run\ndirectory (faultbench upb) it draws the UPB report: Tables IV-X and the\nprobe curves; on a sweep directory (faultbench sweep) the scaling curve.\n\nWith --verdict-table it draws no report: it writes the results table of the\nhistory checkers' verdicts over the runs as Markdown (a row per run and\nchecker: target, isolation level, faults, checker and model, verdict,\nanomalies found by name and count, transactions checked, checker time),\nfor a docs/results page. Every RUN_DIR must have a verdict (summary.json\nchecks or checks/<checker>.json from faultbench check).\nSee docs/reports.md, docs/upb.md and docs/sweeps.md.", reportExamples)
	verdictTable := fs.Bool("verdict-table", false, "write the checkers' verdicts of the runs as a Markdown results table instead of drawing reports")
	output := fs.String("o", "", "with --verdict-table: write the table to `file` instead of standard output")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("report needs at least one RUN_DIR")
	}
	if *output != "" && !*verdictTable {
		return usagef("report: -o is for --verdict-table (a report is written into its run directory)")
	}
	if *verdictTable {
		return a.verdictTable(ctx, uniqueRuns(pos, a.stderr), *output)
	}
	for _, dir := range pos {
		out, err := report.RenderDir(ctx, dir, upb.DirKind())
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "report: %s (%d plots in %s)\n", out.HTML, len(out.Plots), filepath.Join(dir, report.PlotsDir))
	}
	return nil
}

// verdictTable writes the verdict table of dirs to output ("" = standard
// output); a file is not left half-written.
func (a *app) verdictTable(ctx context.Context, dirs []string, output string) error {
	var b strings.Builder
	if err := report.WriteVerdictTable(ctx, &b, dirs); err != nil {
		return err
	}
	if output == "" {
		_, err := io.WriteString(a.stdout, b.String())
		return err
	}
	if err := os.WriteFile(output, []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "verdict table: %s\n", output)
	return nil
}

const compareExamples = `  faultbench compare runs/*-failover-etcd runs/*-failover-redis-cluster
  faultbench compare --format md runs/a runs/b > results.md
  faultbench compare --format csv runs/* -o results.csv
  faultbench compare --format html runs/a runs/b runs/c -o compare.html`

// compareCmd implements `compare RUN_DIR...`.
func (a *app) compareCmd(ctx context.Context, args []string) error {
	var names []string
	for _, f := range report.Formats() {
		names = append(names, string(f))
	}
	fs := a.newFlags("compare", "compare RUN_DIR... [--format "+strings.Join(names, "|")+"] [-o FILE]\n\nPuts runs side by side, one column per run: settings and totals, key\nlatencies, every fault's availability metrics (downtime, failover,\nrecovery, ...), the lost-write check and the clients' spread. With\n--format html, also the runs' throughput and p99 latency on one time axis,\naligned at each run's first fault.", compareExamples)
	format := fs.String("format", "text", "output `format`: "+strings.Join(names, ", "))
	output := fs.String("o", "", "write to `file` instead of standard output")
	includeInvalid := fs.Bool("include-invalid", false, "compare runs marked invalid (offered load not met before the first fault) too")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("compare needs at least one RUN_DIR")
	}
	f, err := report.ParseFormat(*format)
	if err != nil {
		return usageError{msg: err.Error()}
	}
	pos = uniqueRuns(pos, a.stderr)
	for _, w := range report.Comparability(pos, upb.DirKind()) {
		fmt.Fprintf(a.stderr, "warning: %s\n", w)
	}
	opt := report.CompareOptions{Format: f, IncludeInvalid: *includeInvalid}
	var w io.Writer = a.stdout
	if *output != "" {
		opt.LinkBase = filepath.Dir(*output)
		file, err := os.Create(*output)
		if err != nil {
			return err
		}
		bw := bufio.NewWriter(file)
		err = report.Compare(ctx, bw, pos, opt)
		if ferr := bw.Flush(); err == nil {
			err = ferr
		}
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(*output)
			return err
		}
		fmt.Fprintf(a.stderr, "compare: %s\n", *output)
		return nil
	}
	return report.Compare(ctx, w, pos, opt)
}

// uniqueRuns returns dirs with every run directory once, in order: two
// shell patterns that match the same run (`runs/*-kill-* runs/*-split-*`
// both match a run of split-vs-kill-etcd, which has both faults) would
// otherwise show it twice. It notes each repeat on w.
func uniqueRuns(dirs []string, w io.Writer) []string {
	seen := map[string]bool{}
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		key := filepath.Clean(d)
		if abs, err := filepath.Abs(d); err == nil {
			key = abs
		}
		if seen[key] {
			fmt.Fprintf(w, "note: %s is given more than once; it is shown once\n", d)
			continue
		}
		seen[key] = true
		out = append(out, d)
	}
	return out
}
