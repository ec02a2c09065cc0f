package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/faultbench/faultbench/internal/autoscale"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/texttable"
)

// Autoscaling (EB2; docs/metrics.md, "Autoscaling (EB2)"): summary.json's
// autoscale section as a table on the terminal and a section of
// report.html; the decisions are marked on every time chart (their
// events, colAutoscale).

// colAutoscale marks an autoscaling decision on the time charts.
const colAutoscale rgb = 0x008b8b

// SummaryAutoscale returns summary.json's autoscale section; nil when the
// run had no autoscale rules.
func SummaryAutoscale(sum *rundir.Summary) (*autoscale.Report, error) {
	if sum == nil {
		return nil, nil
	}
	raw, ok := sum.Sections[autoscale.SummaryKey]
	if !ok {
		return nil, nil
	}
	var rep autoscale.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		return nil, fmt.Errorf("summary.json autoscale: %w", err)
	}
	return &rep, nil
}

// autoscaleRows lays out the decisions: one row each.
func autoscaleRows(rep *autoscale.Report) (head []string, rows [][]string) {
	head = []string{"decision", "at (s)", "rule", "saw", "nodes", "reaction (s)", "to new size (s)",
		"SLA viol. before", "during", "after"}
	secs := func(ms float64) string {
		if ms < 0 {
			return "never"
		}
		return strconv.FormatFloat(ms/1000, 'f', 1, 64)
	}
	span := func(s autoscale.SLASpan) string {
		if s.FromMs < 0 {
			return "-"
		}
		return fmt.Sprintf("%d/%d", s.Violations, s.Windows)
	}
	for _, d := range rep.Decisions {
		saw := fmt.Sprintf("%.0f ops/s", d.Value)
		if d.Unit == "us" {
			saw = fmtUs(d.Value)
		}
		nodes := fmt.Sprintf("%d -> %d", d.NodesBefore, d.NodesAfter)
		if d.Nodes != "" {
			nodes += " (" + d.Nodes + ")"
		}
		ready := secs(d.ReadyMs)
		if d.Failed {
			ready = "failed"
		}
		rows = append(rows, []string{d.Label, secs(d.AtMs), d.Rule + ": " + d.What, saw, nodes, secs(d.ReactionMs), ready,
			span(d.Before), span(d.During), span(d.After)})
	}
	return head, rows
}

// autoscaleHeadline is the one-line account of the run's autoscaling.
func autoscaleHeadline(rep *autoscale.Report) string {
	n := fmt.Sprintf("%d decisions", len(rep.Decisions))
	if len(rep.Decisions) == 1 {
		n = "1 decision"
	}
	return fmt.Sprintf("%s, %d -> %d nodes (bounds %d..%d, cooldown %.0f s); SLA p99 <= %s of %s: %d of %d windows above",
		n, rep.StartNodes, rep.EndNodes, rep.MinNodes, rep.MaxNodes, rep.CooldownMs/1000,
		fmtUs(rep.LatencyTargetUs), rep.Op, rep.Violations, rep.Windows)
}

// writeAutoscale prints the autoscaling section for the terminal.
func writeAutoscale(w io.Writer, sum *rundir.Summary) {
	rep, err := SummaryAutoscale(sum)
	if err != nil {
		fmt.Fprintf(w, "\nautoscaling: %v\n", err)
		return
	}
	if rep == nil {
		return
	}
	fmt.Fprintf(w, "\nautoscaling, EB2 (docs/metrics.md): %s\n", autoscaleHeadline(rep))
	for _, r := range rep.Rules {
		fmt.Fprintf(w, "  rule %s\n", r)
	}
	if head, rows := autoscaleRows(rep); len(rows) > 0 {
		fmt.Fprint(w, texttable.Format(append([][]string{head}, rows...), texttable.Options{Indent: "  "}))
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

// autoscaleView is report.html's autoscaling section.
type autoscaleView struct {
	Headline  string
	Rules     []string
	Decisions table
	Errors    []string
	Notes     []string
}

func autoscaleSection(r *Run) (*autoscaleView, []string) {
	rep, err := SummaryAutoscale(r.Summary)
	if err != nil {
		return nil, []string{err.Error()}
	}
	if rep == nil {
		return nil, nil
	}
	v := &autoscaleView{Headline: autoscaleHeadline(rep), Rules: rep.Rules, Notes: rep.Notes}
	head, rows := autoscaleRows(rep)
	v.Decisions.Head = head
	for i, row := range rows {
		class := ""
		if rep.Decisions[i].Failed {
			class = "fail"
		}
		v.Decisions.add(class, row...)
	}
	for _, d := range rep.Decisions {
		if d.Error != "" {
			v.Errors = append(v.Errors, d.Label+": "+d.Error)
		}
	}
	if r.Summary != nil {
		for _, e := range r.Summary.Errors {
			if strings.HasPrefix(e, "autoscale: ") {
				v.Errors = append(v.Errors, e)
			}
		}
	}
	return v, nil
}
