package report

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/rundir"
)

func TestRecoveryMaps(t *testing.T) {
	ttr := 2100.0
	sum := &rundir.SweepSummary{Sweep: "m", Type: "metastable", Target: "redis", Planned: 4, Steps: []rundir.SweepStep{
		{Step: 1, Dir: "s01", RateSpec: "50%", Retry: "none", Trigger: "x2 5s", Verdict: "recovered", TimeToRecoverMs: &ttr, AchievedOps: 100},
		{Step: 2, Dir: "s02", RateSpec: "90%", Retry: "none", Trigger: "x2 5s", Verdict: "metastable", VerdictReason: "degraded until the end", AchievedOps: 90},
		{Step: 3, Dir: "s03", RateSpec: "50%", Retry: "immediate", Trigger: "x2 5s", Verdict: "metastable", AchievedOps: 80},
		{Step: 4, RateSpec: "90%", Retry: "immediate", Trigger: "x2 5s", Error: "cluster did not start"},
	}}
	maps := recoveryMaps(sum)
	if len(maps) != 2 || maps[0].Retry != "none" || len(maps[0].Loads) != 2 || len(maps[0].Rows) != 1 {
		t.Fatalf("maps %+v", maps)
	}
	got := []string{maps[0].Rows[0].Cells[0].Text, maps[0].Rows[0].Cells[1].Text, maps[1].Rows[0].Cells[0].Text, maps[1].Rows[0].Cells[1].Text}
	want := []string{"recovered in 2.1 s", "metastable", "metastable", "failed"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("cell %d: %q, want %q", i, got[i], want[i])
		}
	}
	if h := maps[0].Rows[0].Cells[1].Href; h != "s02/report.html" {
		t.Errorf("link %q", h)
	}
	var w bytes.Buffer
	WriteRecoveryMaps(&w, sum)
	if !strings.Contains(w.String(), "recovery map, retry immediate") || !strings.Contains(w.String(), "recovered in 2.1 s") {
		t.Errorf("text:\n%s", w.String())
	}
	if recoveryMaps(&rundir.SweepSummary{Type: "sb1", Steps: sum.Steps}) != nil {
		t.Error("an sb1 sweep has no recovery map")
	}
	dir := t.TempDir()
	if _, err := RenderSweep(context.Background(), dir, sum); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`id="recovery"`, `<a href="s02/report.html">metastable</a>`, "retry: immediate"} {
		if !strings.Contains(string(b), s) {
			t.Errorf("report.html lacks %s", s)
		}
	}
}
