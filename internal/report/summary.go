package report

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/texttable"
)

// Measured is what a scenario's measured phase leaves that summary.json
// does not hold, for the YCSB lines of the terminal summary: the totals
// with their histograms.
type Measured struct {
	Totals *measure.Totals
	Basis  LatencyBasis
	// Samples is, per operation and error class, the first error's text.
	Samples map[string]map[string]string
	// ClientGroups is the configured number of client groups (0: one per
	// thread); the [CLIENTS] lines are printed for two or more.
	ClientGroups int
}

// WriteScenarioSummary prints what the end of a scenario shows on the
// terminal: the YCSB summary of the measured phase (m; nil when it did not
// measure), the workload's figures, the results table and the elasticity table
// drawn from sum, and the checks' verdicts: one line per checker over the
// history (summary.json checks, VerdictLine).
func WriteScenarioSummary(w io.Writer, sum *rundir.Summary, m *Measured) {
	writeScenarioSummary(w, sum, m, metricRows())
}

// writeScenarioSummary is WriteScenarioSummary with the metric rows defs.
func writeScenarioSummary(w io.Writer, sum *rundir.Summary, m *Measured, defs []metricRow) {
	if m != nil && m.Totals != nil {
		WriteYCSB(w, m.Totals, m.Basis)
		WriteErrorSamples(w, m.Samples)
		if m.ClientGroups >= 2 {
			WriteClients(w, sum.PerClient)
		}
	}
	WriteFigures(w, sum.Figures)
	if sum.Analysis != nil {
		fmt.Fprintln(w)
		fmt.Fprint(w, resultsText(defs, []string{sum.Scenario}, []source{summarySource(sum)}))
		if t := elasticityText(sum.Scenario, sum.Analysis); t != "" {
			fmt.Fprintf(w, "\nelasticity (docs/metrics.md):\n%s", t)
		}
		writeChaos(w, sum.Analysis)
	}
	writeMetastable(w, sum)
	writeAutoscale(w, sum)
	for _, c := range sum.ChecksSkipped {
		fmt.Fprintf(w, "\ncheck %s\n", c)
	}
	if a := sum.Analysis; a != nil && (a.Invalid || a.Noisy) {
		if a.Invalid {
			fmt.Fprintf(w, "\nRUN INVALID: the offered load was not met before the first fault; its figures are not the database's (docs/metrics.md, Validity):\n")
			for _, r := range a.InvalidReasons {
				fmt.Fprintf(w, "  %s\n", r)
			}
		}
		if a.Noisy {
			fmt.Fprintf(w, "\nnoisy run: the span before the first fault was unstable:\n")
			for _, r := range a.NoisyReasons {
				fmt.Fprintf(w, "  %s\n", r)
			}
		}
	}
	if sum.Failed {
		fmt.Fprintf(w, "\nRUN FAILED: it did not do what it was asked:\n")
		for _, f := range sum.Failures {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	if lw := sum.LostWrites; lw != nil {
		fmt.Fprintf(w, "\nlost-writes check: %s — %s\n", passFail(lw.OK()), lw)
		for i, e := range lw.Examples {
			if i == 5 {
				break
			}
			fmt.Fprintf(w, "  %s %s: found %s, last acknowledged %s %s\n", e.Kind, e.Key, e.Found, e.Expected, e.Detail)
		}
		if rd := lw.Reads; rd != nil {
			fmt.Fprintf(w, "stale-reads check: %s — %s\n", passFail(lw.ReadsOK()), rd)
			for _, ph := range lw.Phases {
				if ph.StaleReads+ph.CorruptReads > 0 || ph.LostWrites > 0 {
					fmt.Fprintf(w, "  %s: %d lost, %d stale reads, %d corrupt reads\n", ph.Name, ph.LostWrites, ph.StaleReads, ph.CorruptReads)
				}
			}
		}
	}
	vs, err := SummaryVerdicts(sum)
	if err != nil {
		fmt.Fprintf(w, "\nwarning: %v\n", err)
	}
	// the workload's checks; lost-writes and stale-reads are above, a
	// checker with a verdict below
	WriteChecks(w, sum.Checks, append([]string{"lost-writes", "stale-reads"}, slices.Collect(maps.Keys(vs))...)...)
	WriteVerdicts(w, vs)
	for _, e := range sum.Errors {
		fmt.Fprintf(w, "error: %s\n", e)
	}
}

// resultsText is the results table of the terminal: the rows of defs
// shown there, one column per run (names[i] heads srcs[i]; a missing name
// is "run N"), columns aligned with spaces, the rows of a fault indented
// under its header, one line per row ending in a newline.
func resultsText(defs []metricRow, names []string, srcs []source) string {
	header := []string{"metric"}
	for i := range srcs {
		name := fmt.Sprintf("run %d", i+1)
		if i < len(names) && names[i] != "" {
			name = names[i]
		}
		header = append(header, name)
	}
	grid := [][]string{header}
	for _, r := range results(defs, onTerminal, srcs) {
		grid = append(grid, append([]string{rowLabel(r)}, r.Cells...))
	}
	return texttable.Format(grid, texttable.Options{})
}

// elasticityText is the run's scaling actions in the columns of the
// elasticity study's Table 5 (analyze.ElasticityRows) as aligned text, ""
// when the run did not scale.
func elasticityText(name string, a *analyze.Report) string {
	head, rows := analyze.ElasticityRows([]string{name}, []*analyze.Report{a})
	if len(rows) == 0 {
		return ""
	}
	return texttable.Format(append([][]string{head}, rows...), texttable.Options{})
}

// passFail is a check's verdict as the terminal and the tables print it.
func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}
