package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/rundir"
)

// metricRows is the one list of the metric rows faultbench shows: the
// results table printed at the end of a scenario, `faultbench compare`
// (text, Markdown, CSV, HTML) and report.html's availability table are
// all rendered from it (results). A row is defined here once: its
// section, label and unit, where it is shown, what it needs of a run and
// how its cell is drawn from the run (source: summary.json, completed
// from the run directory) and formatted. Rows are shown in section order,
// and in this order within a section; a per-fault row (Fault set) is
// repeated under the header of every fault, and the run-wide rows listed
// after a section's first per-fault row come after the faults. Adding a
// metric is adding one line here (docs/metrics.md, "Adding a metric row").
func metricRows() []metricRow {
	return []metricRow{
		{Section: sectionRun, Label: "kind", Cell: kindCell},
		{Section: sectionRun, Label: "target", Needs: needSummary, Cell: targetCell},
		{Section: sectionRun, Label: "rate", Unit: "ops/s", Needs: needSummary, Cell: rateCell},
		{Section: sectionRun, Label: "threads", Needs: needSummary, Cell: func(s *source) string { return strconv.Itoa(s.Summary.Threads) }},
		{Section: sectionRun, Label: "window", Unit: "ms", Cell: func(s *source) string { return fnum(float64(s.Window.Microseconds())/1000, 3) }},
		{Section: sectionRun, Label: "measured duration", Unit: "s", Needs: needSummary, Cell: func(s *source) string { return num(s.Summary.Totals.RunTimeMs/1000, 1) }},
		{Section: sectionRun, Label: "operations", Needs: needSummary, Cell: func(s *source) string { return strconv.FormatInt(s.Summary.Totals.Operations, 10) }},
		{Section: sectionRun, Label: "throughput, successful", Unit: "ops/s", Needs: needSummary, Cell: func(s *source) string { return num(s.Summary.Totals.All.ThroughputOp, 0) }},
		{Section: sectionRun, Label: "failed operations", Needs: needSummary, Cell: failedCell},
		{Section: sectionRun, Label: "p50 latency", Unit: "ms", Needs: needSummary, Cell: latencyCell(func(l rundir.Latency) int64 { return l.P50 })},
		{Section: sectionRun, Label: "p99 latency", Unit: "ms", Needs: needSummary, Cell: latencyCell(func(l rundir.Latency) int64 { return l.P99 })},
		{Section: sectionRun, Label: "p99.9 latency", Unit: "ms", Needs: needSummary, Cell: latencyCell(func(l rundir.Latency) int64 { return l.P999 })},
		{Section: sectionRun, Label: "max latency", Unit: "ms", Needs: needSummary, Cell: latencyCell(func(l rundir.Latency) int64 { return l.Max })},

		{Section: sectionAvailability, Label: "validity", On: onCompare | onHTML, Needs: needAnalysis, Cell: validityCell},
		{Section: sectionAvailability, Label: "baseline throughput", Unit: "ops/s", Needs: needAnalysis, Cell: baselineCell},
		{Section: sectionAvailability, Label: "downtime", Unit: "ms", Fault: injected(downtimeCell)},
		{Section: sectionAvailability, Label: "longest gap", Unit: "ms", Fault: injected(func(m analyze.FaultMetrics) string { return naCell(m.LongestGapMs) })},
		{Section: sectionAvailability, Label: "failover time", Unit: "ms", Fault: injected(failoverCell)},
		{Section: sectionAvailability, Label: "recovery time", Unit: "ms", Fault: injected(func(m analyze.FaultMetrics) string { return recoveryCell(m, m.RecoveryMs) })},
		{Section: sectionAvailability, Label: "recovery after downtime", Unit: "ms", Fault: injected(func(m analyze.FaultMetrics) string { return recoveryCell(m, m.RecoveryAfterDowntimeMs) })},
		{Section: sectionAvailability, Label: "node down throughput", Unit: "ops/s", Fault: injected(nodeDownCell)},
		{Section: sectionAvailability, Label: "node down vs baseline", Unit: "%", Fault: anyFault(func(m analyze.FaultMetrics) string { return pctCell(m.ChangePct, "node_down_vs_baseline_pct") })},
		{Section: sectionAvailability, Label: "restore downtime", Unit: "ms", Fault: restored(func(m analyze.FaultMetrics) string { return naCell(m.RestoreDowntimeMs) })},
		{Section: sectionAvailability, Label: "time to stabilise on node up", Unit: "ms", Fault: restored(func(m analyze.FaultMetrics) string { return timeCell(m.StabiliseMs) })},
		{Section: sectionAvailability, Label: "reconfiguration time", Unit: "ms", Fault: injected(func(m analyze.FaultMetrics) string { return timeCell(m.ReconfigurationMs) })},
		{Section: sectionAvailability, Label: "peak latency", Unit: "ms", Fault: injected(func(m analyze.FaultMetrics) string { return judged(m, "peak_latency_ms", peakCell(m)) })},
		{Section: sectionAvailability, Label: "failed ops in reconfiguration", Fault: injected(func(m analyze.FaultMetrics) string {
			return judged(m, "failed_count", strconv.FormatInt(m.FailedOps, 10))
		})},
		{Section: sectionAvailability, Label: "aborted ops in reconfiguration", Fault: injected(func(m analyze.FaultMetrics) string {
			return judged(m, "aborted_count", strconv.FormatInt(m.AbortedOps, 10))
		})},
		{Section: sectionAvailability, Label: "latency after vs before", Unit: "%", Fault: injected(latencyChangeCell)},
		{Section: sectionAvailability, Label: "dropped ops in fault span", On: onTerminal, Fault: injected(func(m analyze.FaultMetrics) string { return strconv.FormatInt(m.During.DroppedCount, 10) })},
		{Section: sectionAvailability, Label: "throughput before / during / after", Unit: "ops/s", On: onCompare | onHTML, Fault: anyFault(spans(func(s analyze.LatencyStats) string { return num(s.Ops, 0) }))},
		{Section: sectionAvailability, Label: "p99 before / during / after", Unit: "ms", On: onCompare | onHTML, Fault: anyFault(spans(func(s analyze.LatencyStats) string { return msCell(s.P99Us) }))},
		{Section: sectionAvailability, Label: "dropped ops before / during / after", On: onCompare | onHTML, Fault: anyFault(spans(func(s analyze.LatencyStats) string { return strconv.FormatInt(s.DroppedCount, 10) }))},
		{Section: sectionAvailability, Label: "final throughput", Unit: "ops/s", Needs: needAnalysis, Cell: func(s *source) string { return num(s.Analysis.FinalOps, 0) }},
		{Section: sectionAvailability, Label: "final vs baseline", Unit: "%", Needs: needAnalysis, Cell: finalChangeCell},
		{Section: sectionAvailability, Label: "offered load", Unit: "ops/s", Needs: needAnalysis, Cell: offeredCell},
		{Section: sectionAvailability, Label: "dropped ops (never started)", Needs: needAnalysis, Cell: func(s *source) string { return strconv.FormatInt(s.Analysis.DroppedOps, 10) }},
		{Section: sectionAvailability, Label: "span percentiles", On: onCompare | onHTML, Needs: needAnalysis, Cell: percentilesCell},

		{Section: sectionChecks, Label: "lost-writes check", Needs: needLostWrites, Cell: func(s *source) string { return passFail(s.Summary.LostWrites.OK()) }},
		{Section: sectionChecks, Label: "lost acknowledged writes", Needs: needLostWrites, Cell: func(s *source) string { return strconv.Itoa(s.Summary.LostWrites.LostWrites) }},
		{Section: sectionChecks, Label: "lost inserts", Needs: needLostWrites, Cell: func(s *source) string { return strconv.Itoa(s.Summary.LostWrites.LostInserts) }},
		{Section: sectionChecks, Label: "lost deletes", Needs: needLostWrites, Cell: func(s *source) string { return strconv.Itoa(s.Summary.LostWrites.LostDeletes) }},
		{Section: sectionChecks, Label: "load keys read back / missing", Needs: needLostWrites, Cell: loadKeysCell},
		{Section: sectionChecks, Label: "verification reads", Needs: needLostWrites, Cell: verifyReadsCell},
		{Section: sectionChecks, Label: "stale / corrupt reads (of judged)", Needs: needLostWrites, Cell: staleReadsCell},

		{Section: sectionClients, Label: "clients", Needs: needClients, Cell: func(s *source) string { return strconv.Itoa(len(s.Clients)) }},
		{Section: sectionClients, Label: "client throughput CV", Unit: "%", Cell: func(s *source) string { return cvCell(s.Clients, func(c Client) float64 { return c.ThroughputOps }) }},
		{Section: sectionClients, Label: "client p99 latency CV", Unit: "%", Cell: func(s *source) string { return cvCell(s.Clients, func(c Client) float64 { return c.P99Us }) }},
	}
}

// The sections of the results table, in the order they are shown.
const (
	sectionRun          = "run"          // the run's settings, totals and key latencies
	sectionAvailability = "availability" // the analyzer's metrics, per fault (the NoSQL failover study's table)
	sectionChecks       = "checks"       // the lost-write and stale-read checks
	sectionVerdicts     = "verdicts"     // the checkers' verdicts over the history, a row per checker (verdictRows)
	sectionClients      = "clients"      // the clients' spread
)

// sectionList is the sections in order with the surfaces that show them;
// a row shows where its section does unless its On says otherwise.
func sectionList() []sectionDef {
	return []sectionDef{
		{sectionRun, onCompare},
		{sectionAvailability, onTerminal | onCompare | onHTML},
		{sectionChecks, onCompare},
		{sectionVerdicts, onCompare},
		{sectionClients, onCompare},
	}
}

// sectionDef is a section of the results table and where it is shown.
type sectionDef struct {
	name string
	on   surface
}

// surface is a set of the places metric rows are rendered to.
type surface uint8

const (
	onTerminal surface = 1 << iota // the results table printed at the end of a scenario (WriteScenarioSummary)
	onCompare                      // faultbench compare, every format
	onHTML                         // report.html's availability table
)

// need is what a run must have for a row's cell to be drawn; a run
// without it shows "-" (the run does not have the value).
type need uint8

const (
	needNothing    need = iota // the cell is drawn from whatever the run has
	needSummary                // summary.json
	needAnalysis               // the availability report
	needLostWrites             // summary.json's lost-write check
	needClients                // clients.csv or summary.json's per-client spread
)

// metricRow is the definition of one row of the results table. Exactly
// one of Cell and Fault is set.
type metricRow struct {
	Section string // one of the sections
	Label   string // what the row shows, without its unit
	Unit    string // "ms", "ops/s", "%" ...; "" for counts and words
	// On lists the surfaces showing the row; 0: those of its section.
	On surface
	// Needs is what Cell needs of a run; a run without it shows "-".
	Needs need
	// Cell draws a run-wide row's cell from a run (Needs present).
	Cell func(s *source) string
	// Fault draws a per-fault row's cell from a run's fault; a run without
	// an availability report or with fewer faults shows "-".
	Fault func(s *source, m analyze.FaultMetrics) string
}

// Title is the row's label with its unit, as tables show it.
func (m metricRow) Title() string {
	if m.Unit == "" {
		return m.Label
	}
	return m.Label + " (" + m.Unit + ")"
}

// shownOn reports whether the row is rendered on surface on.
func (m metricRow) shownOn(on surface) bool {
	if m.On != 0 {
		return m.On&on != 0
	}
	for _, s := range sectionList() {
		if s.name == m.Section {
			return s.on&on != 0
		}
	}
	return false
}

// source is what one run's cells are drawn from: its summary.json and
// what only its run directory has (summarySource, Run.source).
type source struct {
	Summary *rundir.Summary // nil: the run has none
	// Analysis is the summary's availability report or one computed from
	// the run's windows and events; nil: none.
	Analysis *analyze.Report
	Window   time.Duration // the window length
	Clients  []Client      // the client groups' totals
	// Trials is set for the parent of a run with trials: its cells are
	// the metrics' intervals over the trials (trialRunCell, trialFaultCell).
	Trials *rundir.Trials
	// Verdicts are the checkers' verdicts over the run's history, by
	// checker (verdictRows).
	Verdicts map[string]*verdict.Verdict
}

// summarySource is the source of a run that has just written sum.
func summarySource(sum *rundir.Summary) source {
	s := source{Summary: sum}
	if sum == nil {
		return s
	}
	s.Analysis = sum.Analysis
	s.Trials = sum.Trials
	s.Verdicts, _ = SummaryVerdicts(sum) // a summary just written decodes
	s.Window = time.Duration(sum.WindowMs * float64(time.Millisecond))
	if sum.PerClient != nil {
		for _, c := range sum.PerClient.Clients {
			s.Clients = append(s.Clients, Client{ID: c.Client, OK: c.OK, Errors: c.Errors, MeanUs: c.Latency.Mean,
				P50Us: float64(c.Latency.P50), P95Us: float64(c.Latency.P95), P99Us: float64(c.Latency.P99),
				MaxUs: float64(c.Latency.Max), ThroughputOps: c.ThroughputOps})
		}
	}
	return s
}

// source is the source of a loaded run directory.
func (r *Run) source() source {
	s := source{Summary: r.Summary, Analysis: r.Analysis, Window: r.Window, Clients: r.Clients, Verdicts: r.Verdicts}
	if r.Summary != nil {
		s.Trials = r.Summary.Trials
	}
	return s
}

// has reports whether s has what n names.
func (s *source) has(n need) bool {
	switch n {
	case needSummary:
		return s.Summary != nil
	case needAnalysis:
		return s.Analysis != nil
	case needLostWrites:
		return s.Summary != nil && s.Summary.LostWrites != nil
	case needClients:
		return len(s.Clients) > 0
	}
	return true
}

// resultRow is a metric row rendered for a set of runs: one cell per run.
// Section rows structure it; a fault's header row (Header, Group set)
// names each run's fault in its cells.
type resultRow struct {
	Section string   // one of the sections
	Group   string   // "fault 1" for the rows of a fault, else ""
	Label   string   // the metric, with its unit
	Cells   []string // one per run
	Header  bool     // a group's header row (Cells describe the fault)
}

// results renders the rows shown on surface on for the runs, laid out as
// the NoSQL failover study's results table: one column per run, one row per
// metric, every section's rows in list order, the per-fault rows under the
// header of each fault (as many faults as the run with the most), then
// the rows of the runs' workload figures and checks (workloadRows) and of
// their checkers' verdicts (verdictRows). A
// value a run does not have is "-".
func results(rows []metricRow, on surface, runs []source) []resultRow {
	rows = append(rows[:len(rows):len(rows)], workloadRows(runs)...)
	rows = append(rows, verdictRows(runs)...)
	var out []resultRow
	nf := 0
	for _, r := range runs {
		if r.Analysis != nil {
			nf = max(nf, len(r.Analysis.Faults))
		}
		nf = max(nf, trialFaults(r.Trials))
	}
	for _, sec := range sectionList() {
		// The run-wide rows listed before the section's first per-fault
		// row come before the faults, the others after them.
		var head, fault, tail []metricRow
		for _, m := range rows {
			switch {
			case m.Section != sec.name || !m.shownOn(on):
			case m.Fault != nil:
				fault = append(fault, m)
			case len(fault) == 0:
				head = append(head, m)
			default:
				tail = append(tail, m)
			}
		}
		emit := func(group string, ms []metricRow, cell func(m metricRow, s *source) string) {
			for _, m := range ms {
				row := resultRow{Section: sec.name, Group: group, Label: m.Title()}
				for i := range runs {
					row.Cells = append(row.Cells, cell(m, &runs[i]))
				}
				out = append(out, row)
			}
		}
		emit("", head, runCell)
		for k := range nf {
			if len(fault) == 0 {
				break
			}
			group := fmt.Sprintf("fault %d", k+1)
			hdr := resultRow{Section: sec.name, Group: group, Label: group, Header: true}
			for i := range runs {
				if runs[i].Trials != nil {
					hdr.Cells = append(hdr.Cells, trialFaultHeader(&runs[i], k))
					continue
				}
				hdr.Cells = append(hdr.Cells, faultCell(&runs[i], k, func(_ *source, m analyze.FaultMetrics) string {
					return faultLabel(m.Fault) + " @" + num(m.Fault.At.Seconds(), 1) + "s"
				}))
			}
			out = append(out, hdr)
			emit(group, fault, func(m metricRow, s *source) string {
				if s.Trials != nil {
					return trialFaultCell(m, s, k)
				}
				return faultCell(s, k, m.Fault)
			})
		}
		emit("", tail, runCell)
	}
	return out
}

// runCell draws a run-wide row's cell: "-" when the run lacks its input.
func runCell(m metricRow, s *source) string {
	if s.Trials != nil {
		return trialRunCell(m, s)
	}
	if !s.has(m.Needs) {
		return "-"
	}
	return m.Cell(s)
}

// faultCell draws the cell of the run's k-th fault: "-" when the run has
// no availability report or fewer faults.
func faultCell(s *source, k int, cell func(s *source, m analyze.FaultMetrics) string) string {
	if s.Analysis == nil || k >= len(s.Analysis.Faults) {
		return "-"
	}
	return cell(s, s.Analysis.Faults[k])
}

// notJudged is the cell of a metric whose input is too thin to judge (too
// few windows, completions or trials): "not judged (why)", e.g.
// "not judged (3 completions)". A value the run does not have at all is
// "-" (metricRow.Needs).
func notJudged(why string) string { return "not judged (" + why + ")" }

// judged is cell, or "not judged (why)" when the analysis did not judge
// the fault's figure key (analyze.FaultMetrics.NotJudged).
func judged(m analyze.FaultMetrics, key, cell string) string {
	if why := m.NotJudged[key]; why != "" {
		return notJudged(why)
	}
	return cell
}

// peakCell is the peak latency, "≥ " before it when it is a failed
// operation's duration (censored: the operation gave up then).
func peakCell(m analyze.FaultMetrics) string {
	if m.PeakCensored {
		return "≥ " + num(m.PeakLatencyMs, 1)
	}
	return num(m.PeakLatencyMs, 1)
}

// anyFault is a per-fault cell of every fault.
func anyFault(cell func(m analyze.FaultMetrics) string) func(s *source, m analyze.FaultMetrics) string {
	return func(_ *source, m analyze.FaultMetrics) string { return cell(m) }
}

// injected is a per-fault cell of an injected fault: a restore that closed
// no fault (a restore-only fault) has only restore metrics, "n/a" here.
func injected(cell func(m analyze.FaultMetrics) string) func(s *source, m analyze.FaultMetrics) string {
	return func(_ *source, m analyze.FaultMetrics) string {
		if m.Fault.RestoreOnly() {
			return "n/a"
		}
		return cell(m)
	}
}

// restored is a per-fault cell of a restore: "n/a" for a fault not
// restored before the end of the run.
func restored(cell func(m analyze.FaultMetrics) string) func(s *source, m analyze.FaultMetrics) string {
	return func(s *source, m analyze.FaultMetrics) string {
		if !m.Fault.Restored() || float64(m.Fault.RestoreAt)/float64(time.Millisecond) >= s.Analysis.RunToMs {
			return "n/a"
		}
		return cell(m)
	}
}

func kindCell(s *source) string {
	switch {
	case s.Summary == nil:
		return "-"
	case s.Summary.Scenario != "":
		return "scenario " + s.Summary.Scenario
	}
	return s.Summary.Phase
}

func targetCell(s *source) string {
	if s.Summary.Nodes > 0 {
		return fmt.Sprintf("%s, %d nodes", s.Summary.Target, s.Summary.Nodes)
	}
	return s.Summary.Target
}

func rateCell(s *source) string {
	switch sum := s.Summary; {
	case sum.TargetOps <= 0:
		return "closed loop"
	case strings.HasSuffix(sum.RateSpec, "%"):
		return sum.RateSpec + " = " + num(sum.TargetOps, 0)
	}
	return num(s.Summary.TargetOps, 0)
}

func failedCell(s *source) string {
	t := s.Summary.Totals
	failed := t.Operations - t.OK
	if t.Operations == 0 {
		return strconv.FormatInt(failed, 10)
	}
	return fmt.Sprintf("%d (%s %%)", failed, fnum(float64(failed)/float64(t.Operations)*100, 3))
}

// latencyCell is a run-wide latency in ms, "-" without successful
// operations.
func latencyCell(get func(l rundir.Latency) int64) func(s *source) string {
	return func(s *source) string {
		l := s.Summary.Totals.All.Latency
		if l.Count == 0 {
			return "-"
		}
		return msCell(float64(get(l)))
	}
}

// validityCell says whether the run met its offered load before the first
// fault and was stable there: "valid", or "INVALID: why" / "noisy: why"
// (analyze.Report Invalid and Noisy, docs/metrics.md "Validity").
func validityCell(s *source) string {
	a := s.Analysis
	var parts []string
	if a.Invalid {
		parts = append(parts, "INVALID: "+strings.Join(a.InvalidReasons, "; "))
	}
	if a.Noisy {
		parts = append(parts, "noisy: "+strings.Join(a.NoisyReasons, "; "))
	}
	if len(parts) == 0 {
		return "valid"
	}
	return strings.Join(parts, "; ")
}

func baselineCell(s *source) string {
	v := num(s.Analysis.BaselineOps, 0)
	if !s.Analysis.BaselineSteady {
		v += " (not steady)"
	}
	return v
}

// downtimeCell formats m's downtime: naCell, with "+ (still down)" when
// the fault span ended down (the NoSQL failover study reports it as ∞).
func downtimeCell(m analyze.FaultMetrics) string {
	s := naCell(m.DowntimeMs)
	if m.DownAtSpanEnd && m.DowntimeMs >= 0 {
		s += "+ (still down)"
	}
	return s
}

// failoverCell formats m's failover time: naCell, with "+ (still down)"
// when the first outage stretch lasted to the span's end: the failover
// then did not end, and the value is only the span's length; with
// " (partial outage)" when a part of the data was refused while the rest
// was served (analyze.FaultMetrics.PartialOutage).
func failoverCell(m analyze.FaultMetrics) string {
	s := naCell(m.FailoverMs)
	if m.FailoverOpen && m.FailoverMs >= 0 {
		s += "+ (still down)"
	}
	if m.PartialOutage && m.FailoverMs >= 0 {
		s += " (partial outage)"
	}
	return s
}

// recoveryCell formats a recovery metric of m: like timeCell, but a fault
// whose restore came before the cluster recovered (a killed node started
// again while throughput was still down) reads "not before restore"; its
// recovery is then the restore's "time to stabilise on node up".
func recoveryCell(m analyze.FaultMetrics, v float64) string {
	if v < 0 && m.Fault.Restored() {
		return "not before restore"
	}
	return timeCell(v)
}

// nodeDownCell is the mean throughput while the node was down, "-" when
// the cluster never recovered.
func nodeDownCell(m analyze.FaultMetrics) string {
	if m.RecoveryMs < 0 {
		return "-"
	}
	return num(m.NodeDownOps, 0)
}

func latencyChangeCell(m analyze.FaultMetrics) string {
	if m.LatencyAfterVsBeforePct == nil {
		return "-"
	}
	return signed(*m.LatencyAfterVsBeforePct)
}

// spans formats a fault's before/during/after statistics; "-" for a side
// without windows.
func spans(f func(s analyze.LatencyStats) string) func(m analyze.FaultMetrics) string {
	return func(m analyze.FaultMetrics) string {
		parts := make([]string, 3)
		for i, s := range []analyze.LatencyStats{m.Before, m.During, m.After} {
			if s.DurationMs <= 0 {
				parts[i] = "-"
			} else {
				parts[i] = f(s)
			}
		}
		return strings.Join(parts, " / ")
	}
}

func finalChangeCell(s *source) string {
	if s.Analysis.BaselineOps <= 0 {
		return "-"
	}
	return signed((s.Analysis.FinalOps/s.Analysis.BaselineOps - 1) * 100)
}

// offeredCell is the offered open-loop rate, "closed loop" when there was
// none; a summary written before the analysis recorded offered_ops gives
// its target rate.
func offeredCell(s *source) string {
	switch {
	case s.Analysis.OfferedOps > 0:
		return num(s.Analysis.OfferedOps, 0)
	case s.Summary != nil && s.Summary.TargetOps > 0:
		return num(s.Summary.TargetOps, 0)
	}
	return "closed loop"
}

func percentilesCell(s *source) string {
	if s.Analysis.PercentilesExact {
		return "exact"
	}
	return "approximate"
}

func loadKeysCell(s *source) string {
	l := s.Summary.LostWrites.LoadKeys
	if l == nil || l.Note != "" {
		return "-"
	}
	return fmt.Sprintf("%d of %d / %d", l.Checked, l.Total, l.Missing)
}

func verifyReadsCell(s *source) string {
	if s.Summary.LostWrites.VerifyReads == "" {
		return "-"
	}
	return s.Summary.LostWrites.VerifyReads
}

func staleReadsCell(s *source) string {
	rd := s.Summary.LostWrites.Reads
	if rd == nil {
		return "-"
	}
	return fmt.Sprintf("%d / %d (of %d)", rd.Stale, rd.Corrupt, rd.Judged)
}

// timeCell formats a "time until" metric in ms; negative (-1) is "never".
func timeCell(v float64) string {
	if v < 0 {
		return "never"
	}
	return num(v, 0)
}

// naCell formats a duration metric in ms; negative (-1: not computable)
// is "n/a".
func naCell(v float64) string {
	if v < 0 {
		return "n/a"
	}
	return num(v, 0)
}

// pctCell formats key of m as a signed percentage, "-" when absent.
func pctCell(m map[string]float64, key string) string {
	v, ok := m[key]
	if !ok {
		return "-"
	}
	return signed(v)
}

// cv returns the coefficient of variation (population standard deviation
// over mean) of the clients' values; ok is false for fewer than two clients
// or a zero mean.
func cv(cs []Client, f func(Client) float64) (v float64, ok bool) {
	xs := make([]float64, len(cs))
	for i, c := range cs {
		xs[i] = f(c)
	}
	return analyze.CoefficientOfVariation(xs)
}

func cvCell(cs []Client, f func(Client) float64) string {
	v, ok := cv(cs, f)
	if !ok {
		return "-"
	}
	return num(v*100, 1)
}

// msCell formats microseconds as milliseconds with a precision that fits
// the magnitude.
func msCell(us float64) string {
	ms := us / 1000
	switch {
	case ms < 10:
		return num(ms, 2)
	case ms < 1000:
		return num(ms, 1)
	}
	return num(ms, 0)
}

func signed(v float64) string { return fmt.Sprintf("%+.1f", v) }

func num(v float64, decimals int) string { return strconv.FormatFloat(v, 'f', decimals, 64) }
