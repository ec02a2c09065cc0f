package report

import (
	"fmt"
	"html/template"
	"io"
	"path"
	"strings"

	"github.com/faultbench/faultbench/internal/metastable"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/texttable"
)

// The recovery map of a metastable sweep (docs/sweeps.md): per retry
// policy, trigger strength (rows, as the sweep lists them) against load
// (columns), each cell the step's metastability verdict linking to its run.

// recoveryMap is one retry policy's map.
type recoveryMap struct {
	Retry string
	Loads []string
	Rows  []recoveryRow
}

type recoveryRow struct {
	Trigger string
	Cells   []mapCell
}

type mapCell struct {
	Text, Title string
	Style       template.CSS
	Href        string // the step's report, relative to the sweep directory
}

// recoveryMaps arranges a metastable sweep's steps; nil for other sweeps.
func recoveryMaps(sum *rundir.SweepSummary) []recoveryMap {
	if sum.Type != "metastable" {
		return nil
	}
	var maps []recoveryMap
	index := map[string]int{}
	for _, s := range sum.Steps {
		retry := s.Retry
		if retry == "" {
			retry = "the scenario's"
		}
		i, ok := index[retry]
		if !ok {
			i = len(maps)
			index[retry] = i
			maps = append(maps, recoveryMap{Retry: retry})
		}
		m := &maps[i]
		col := indexOf(m.Loads, s.RateSpec)
		if col < 0 {
			m.Loads = append(m.Loads, s.RateSpec)
			col = len(m.Loads) - 1
		}
		row := -1
		for j, r := range m.Rows {
			if r.Trigger == s.Trigger {
				row = j
			}
		}
		if row < 0 {
			m.Rows = append(m.Rows, recoveryRow{Trigger: s.Trigger})
			row = len(m.Rows) - 1
		}
		r := &m.Rows[row]
		for len(r.Cells) <= col {
			r.Cells = append(r.Cells, mapCell{Text: "—"})
		}
		r.Cells[col] = cellOf(s)
	}
	for i := range maps {
		for j := range maps[i].Rows {
			for len(maps[i].Rows[j].Cells) < len(maps[i].Loads) {
				maps[i].Rows[j].Cells = append(maps[i].Rows[j].Cells, mapCell{Text: "—"})
			}
		}
	}
	return maps
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// cellText is a step's verdict in a few words.
func cellText(s rundir.SweepStep) string {
	switch {
	case s.Error != "" && s.Verdict == "":
		return "failed"
	case s.Verdict == metastable.Recovered && s.TimeToRecoverMs != nil:
		return fmt.Sprintf("recovered in %.1f s", *s.TimeToRecoverMs/1000)
	case s.Verdict == "":
		return "not judged"
	}
	return s.Verdict
}

func cellOf(s rundir.SweepStep) mapCell {
	c := mapCell{Text: cellText(s), Title: s.VerdictReason}
	if s.Error != "" {
		c.Title = strings.TrimSpace(c.Title + " " + s.Error)
	}
	switch s.Verdict {
	case metastable.Recovered:
		c.Style = "background:#d8efd8"
	case metastable.Metastable:
		c.Style = "background:#f4c7c3;font-weight:600"
	default:
		c.Style = "background:#eee"
	}
	if s.Dir != "" {
		c.Href = path.Join(strings.ReplaceAll(s.Dir, "\\", "/"), "report.html")
	}
	return c
}

// WriteRecoveryMaps prints a metastable sweep's maps as text: one table per
// retry policy, triggers down, loads across.
func WriteRecoveryMaps(w io.Writer, sum *rundir.SweepSummary) {
	for _, m := range recoveryMaps(sum) {
		fmt.Fprintf(w, "\nrecovery map, retry %s (docs/metrics.md, Metastability):\n", m.Retry)
		rows := [][]string{append([]string{"trigger \\ load"}, m.Loads...)}
		for _, r := range m.Rows {
			cells := []string{r.Trigger}
			for _, c := range r.Cells {
				cells = append(cells, c.Text)
			}
			rows = append(rows, cells)
		}
		fmt.Fprint(w, texttable.Format(rows, texttable.Options{Indent: "  "}))
	}
}
