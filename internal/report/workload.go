package report

import (
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/faultbench/faultbench/internal/rundir"
)

// WriteFigures prints a program workload's headline figures (summary.json's
// workload_figures) in the YCSB summary's form: "[Group], Name, value"
// with one decimal.
func WriteFigures(w io.Writer, figs []rundir.Figure) {
	for _, f := range figs {
		fmt.Fprintf(w, "[%s], %s, %.1f\n", f.Group, f.Name, f.Value)
	}
}

// WriteChecks prints one verdict line per check of checks (summary.json's
// checks_passed), sorted by name, except the checks named in shown, which
// the caller printed with their details.
func WriteChecks(w io.Writer, checks map[string]bool, shown ...string) {
	names := make([]string, 0, len(checks))
	for name := range checks {
		if !slices.Contains(shown, name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "\n%s check: %s\n", name, passFail(checks[name]))
	}
}

// workloadRows are the metric rows of what a program workload adds to its
// runs: a row per headline figure (summary.json's workload_figures, in
// the run section) and a verdict row per check of its own
// (checks_passed, in the checks section; a checker any run has a verdict
// of is a row of the verdicts section instead, verdictRows), in the order
// the runs first have them. They are drawn from the runs, so no workload is named here;
// a run without the figure or check shows "-".
func workloadRows(runs []source) []metricRow {
	var rows []metricRow
	seen := map[string]bool{}
	verdicts := verdictNames(runs)
	for _, r := range runs {
		if r.Summary == nil {
			continue
		}
		for _, f := range r.Summary.Figures {
			group, name := f.Group, f.Name
			if key := "figure\x00" + group + "\x00" + name; !seen[key] {
				seen[key] = true
				rows = append(rows, metricRow{Section: sectionRun, Label: group + " " + name, On: onCompare | onHTML, Needs: needSummary,
					Cell: func(s *source) string {
						for _, g := range s.Summary.Figures {
							if g.Group == group && g.Name == name {
								return num(g.Value, 1)
							}
						}
						return "-"
					}})
			}
		}
		names := make([]string, 0, len(r.Summary.Checks))
		for name := range r.Summary.Checks {
			if name != "lost-writes" && name != "stale-reads" && !verdicts[name] { // rows of their own (verdictRows)
				names = append(names, name)
			}
		}
		sort.Strings(names)
		for _, name := range names {
			if key := "check\x00" + name; !seen[key] {
				seen[key] = true
				rows = append(rows, metricRow{Section: sectionChecks, Label: name + " check", On: onCompare | onHTML, Needs: needSummary,
					Cell: func(s *source) string {
						if ok, ran := s.Summary.Checks[name]; ran {
							return passFail(ok)
						}
						return "-"
					}})
			}
		}
	}
	return rows
}
