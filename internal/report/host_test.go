package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/hostload"
)

// TestHostPanels: a run with host.csv gets the host's load and the CPU of
// steal, faultbench and each node drawn under the overview's throughput;
// a run without it has no such panels.
func TestHostPanels(t *testing.T) {
	dir := copyRun(t, runKillPause)
	render := func() string {
		t.Helper()
		o, err := Render(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(o.HTML)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if page := render(); strings.Contains(page, "host load (1 min)") {
		t.Fatal("host panels without host.csv")
	}
	csv := "t_ms,load1,steal_pct,faultbench_cpu_pct,n1_cpu_pct,n2_cpu_pct\n1000,1.50,0.00,35.00,20.00,\n2000,1.75,2.50,40.00,25.00,10.00\n3000,2.00,0.00,38.00,,12.00\n"
	if err := os.WriteFile(filepath.Join(dir, hostload.File), []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	page := render()
	i := strings.Index(page, `id="chart-overview"`)
	if i < 0 {
		t.Fatal("no overview chart")
	}
	overview := page[i:]
	overview = overview[:strings.Index(overview, "</svg>")]
	for _, want := range []string{"host load (1 min)", "CPU (% of one)", "faultbench", "steal (all CPUs)", ">n1<", ">n2<"} {
		if !strings.Contains(overview, want) {
			t.Errorf("the overview lacks %q", want)
		}
	}
	if tp, host := strings.Index(overview, "throughput (ops/s)"), strings.Index(overview, "host load (1 min)"); tp < 0 || host < tp {
		t.Errorf("the host panel is not under the throughput (at %d, throughput at %d)", host, tp)
	}
}
