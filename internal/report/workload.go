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
		fmt.Fprintf(w, "\n%s check: %s\n", name, verdict(checks[name]))
	}
}
