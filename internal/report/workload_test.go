package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/rundir"
)

// TestWorkloadRows checks that a program workload's figures and checks
// become rows of the results table for the runs that have them, "-" for
// the others, and that the terminal prints them.
func TestWorkloadRows(t *testing.T) {
	a := &rundir.Summary{Figures: []rundir.Figure{{Group: "TPC-C", Name: "tpmC", Value: 4654.5}},
		Checks: map[string]bool{"tpcc-consistency": true, "lost-writes": true}}
	b := &rundir.Summary{Checks: map[string]bool{"tpcc-consistency": false, "x-check": true}}
	want := map[string][]string{
		"TPC-C tpmC":             {"4654.5", "-"},
		"tpcc-consistency check": {"PASS", "FAIL"},
		"x-check check":          {"-", "PASS"},
	}
	got := map[string][]string{}
	for _, r := range results(metricRows(), onCompare, []source{{Summary: a}, {Summary: b}}) {
		if _, ok := want[r.Label]; ok {
			got[r.Label] = r.Cells
		}
		if r.Label == "lost-writes check" && r.Cells[0] != "-" {
			t.Errorf("lost-writes check drawn from checks_passed: %v", r.Cells)
		}
	}
	for label, cells := range want {
		if strings.Join(got[label], " ") != strings.Join(cells, " ") {
			t.Errorf("%s: %v, want %v", label, got[label], cells)
		}
	}
	if rows := results(metricRows(), onCompare, []source{{Summary: &rundir.Summary{}}}); len(rows) != len(results(metricRows(), onCompare, nil)) {
		t.Error("a run without figures or checks adds rows")
	}
	var w bytes.Buffer
	WriteFigures(&w, a.Figures)
	WriteChecks(&w, a.Checks, "lost-writes")
	if w.String() != "[TPC-C], tpmC, 4654.5\n\ntpcc-consistency check: PASS\n" {
		t.Errorf("terminal %q", w.String())
	}
}
