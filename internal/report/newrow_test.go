package report

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/analyze"
)

// TestNewMetricRow adds one metric row to the list (here, in the test,
// and nowhere else) and finds it in the three places metric rows are
// rendered: the terminal table at the end of a scenario, `compare
// --format md` and report.html, each with the row's cells of the runs.
// The runs are the test data's etcd runs: kill n1 (1,400 ms down) then
// pause n1 (3,900 ms) — the longest 3,900 ms —, and a YCSB run without
// faults, not judged.
func TestNewMetricRow(t *testing.T) {
	// longestDowntime is the demonstration's new metric row, added in this
	// one place: the longest downtime of any fault of the run, "not judged (no
	// fault)" for a run without one.
	longestDowntime := metricRow{Section: sectionAvailability, Label: "longest downtime of any fault", Unit: "ms", Needs: needAnalysis,
		Cell: func(s *source) string {
			if len(s.Analysis.Faults) == 0 {
				return notJudged("no fault")
			}
			v := -1.0
			for _, m := range s.Analysis.Faults {
				v = max(v, m.DowntimeMs)
			}
			return naCell(v)
		}}
	defs := append(metricRows(), longestDowntime)
	const title = "longest downtime of any fault (ms)"
	var runs []*Run
	for _, d := range []string{runKillPause, runYCSB} {
		r, err := Load(context.Background(), d)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	t.Run("terminal", func(t *testing.T) {
		var b bytes.Buffer
		writeScenarioSummary(&b, runs[0].Summary, nil, defs)
		if !strings.Contains(b.String(), "\n"+title+"  ") || !strings.Contains(b.String(), "  3900\n") {
			t.Errorf("terminal summary without the row:\n%s", b.String())
		}
		var without bytes.Buffer
		writeScenarioSummary(&without, runs[0].Summary, nil, metricRows())
		if strings.Contains(without.String(), title) {
			t.Errorf("the row is shown without being in the list")
		}
	})
	t.Run("compare md", func(t *testing.T) {
		var b bytes.Buffer
		if err := writeCompare(&b, runs, CompareOptions{Format: FormatMarkdown}, defs); err != nil {
			t.Fatal(err)
		}
		want := "| " + title + " | 3900 | not judged (no fault) |\n"
		if !strings.Contains(b.String(), want) {
			t.Errorf("compare --format md without %q:\n%s", want, b.String())
		}
		// it is the last row of the availability section
		if i, j := strings.Index(b.String(), want), strings.Index(b.String(), "| **checks** |"); i > j {
			t.Errorf("the row is not in the availability section")
		}
	})
	t.Run("report.html", func(t *testing.T) {
		r, err := Load(context.Background(), copyRun(t, runKillPause))
		if err != nil {
			t.Fatal(err)
		}
		out, err := renderRows(context.Background(), r, false, defs)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out.HTML)
		if err != nil {
			t.Fatal(err)
		}
		if want := "<td>" + title + "</td><td>3900</td>"; !strings.Contains(string(b), want) {
			t.Errorf("report.html has no %q", want)
		}
	})
	t.Run("per fault", func(t *testing.T) {
		// a per-fault row added the same way is shown under every fault
		perFault := metricRow{Section: sectionAvailability, Label: "fault duration", Unit: "s",
			Fault: restored(func(m analyze.FaultMetrics) string { return num((m.Fault.RestoreAt - m.Fault.At).Seconds(), 1) })}
		var b bytes.Buffer
		if err := writeCompare(&b, runs, CompareOptions{Format: FormatMarkdown}, append(metricRows(), perFault)); err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(b.String(), "| &nbsp;&nbsp;fault duration (s) |"); got != 2 {
			t.Errorf("%d fault duration rows, want one per fault (2):\n%s", got, b.String())
		}
	})
}
