package report

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/faultbench/faultbench/internal/check/verdict"
)

// ErrNoVerdicts says a run directory given to the verdict table has no
// checker's verdict.
var ErrNoVerdicts = errors.New("no checker's verdict (summary.json checks or checks/<checker>.json): run a scenario with checks: [isolation] or `faultbench check RUN_DIR --checker NAME` first (docs/checks.md)")

// verdictTableRow is one row of the verdict table: a checker's verdict
// over one run.
type verdictTableRow struct {
	target, isolation, fault, checker, valid, found, checked, seconds, run string
}

// WriteVerdictTable writes the results table of issue 24 (docs/results,
// `faultbench report --verdict-table`) as GitHub-flavoured Markdown: one
// row per run directory and checker — target, isolation level (env.json
// isolation, "default" when the run did not set one), the run's faults,
// the checker and its model, the verdict (PASS, FAIL, NOT JUDGED with
// why), the anomalies found by name and count, the operations checked
// (transactions for isolation), the checker's time and the run — sorted
// by target, isolation level and fault, then a legend. A directory that
// cannot be read, or that has no verdict, is an error naming it.
func WriteVerdictTable(ctx context.Context, w io.Writer, dirs []string) error {
	if len(dirs) == 0 {
		return errors.New("verdict table: no run directories")
	}
	var rows []verdictTableRow
	for _, d := range dirs {
		r, err := Load(ctx, d)
		if err != nil {
			return fmt.Errorf("verdict table: %w", err)
		}
		if len(r.Verdicts) == 0 {
			return fmt.Errorf("verdict table: %s: %w", d, ErrNoVerdicts)
		}
		rows = append(rows, verdictTableRows(r)...)
	}
	slices.SortStableFunc(rows, func(a, b verdictTableRow) int {
		return cmp.Or(cmp.Compare(a.target, b.target), cmp.Compare(a.isolation, b.isolation), cmp.Compare(a.fault, b.fault))
	})
	var b strings.Builder
	b.WriteString("| target | isolation level | fault | checker (model) | verdict | anomalies found | transactions checked | checker time (s) | run |\n")
	b.WriteString("|:---|:---|:---|:---|:---|:---|---:|---:|:---|\n")
	for _, row := range rows {
		cells := []string{row.target, row.isolation, row.fault, row.checker, row.valid, row.found, row.checked, row.seconds, "`" + row.run + "`"}
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	b.WriteString("\nverdict: PASS, no anomaly the model forbids was found; FAIL, one was; NOT JUDGED, nothing or not everything could be decided (never a pass). " +
		"Anomalies found: each name with its count, \"(allowed)\" when the model allows it. " +
		"Transactions checked: the operations of the history the checker read (transactions for isolation and bank, single operations for linearizable and set). " +
		"Isolation level: the run's sqldb.isolation (env.json), \"default\" when it set none (the database's own). " +
		"Made by `faultbench report --verdict-table` (docs/reports.md).\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// verdictTableRows are the verdict table's rows of a loaded run, one per
// checker in name order.
func verdictTableRows(r *Run) []verdictTableRow {
	target := "-"
	if s := r.Summary; s != nil {
		target = s.Target
		if s.Nodes > 0 {
			target = fmt.Sprintf("%s, %d nodes", s.Target, s.Nodes)
		}
	} else if r.Env != nil && r.Env.Target != "" {
		target = r.Env.Target
	}
	isolation := "default"
	if r.Env != nil && r.Env.Isolation != "" {
		isolation = r.Env.Isolation
	}
	var faults []string
	for _, f := range r.RunFaults() {
		faults = append(faults, faultLabel(f)+" @"+num(f.At.Seconds(), 1)+"s")
	}
	fault := "none"
	if len(faults) > 0 {
		fault = strings.Join(faults, "; ")
	}
	var out []verdictTableRow
	for _, name := range slices.Sorted(maps.Keys(r.Verdicts)) {
		v := r.Verdicts[name]
		checker := v.Checker
		if v.Model != "" {
			checker += " (" + v.Model + ")"
		}
		word, _ := validWord(v.Valid)
		if v.Valid == verdict.Unknown {
			word += " (" + notJudgedShort(v) + ")"
		}
		out = append(out, verdictTableRow{target: target, isolation: isolation, fault: fault, checker: checker,
			valid: word, found: countsText(v), checked: fmt.Sprint(v.Operations), seconds: num(v.ElapsedMs/1000, 2), run: r.Name})
	}
	return out
}
