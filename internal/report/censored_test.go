package report

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/measure"
)

// TestCensoredLatency: a run whose windows record failed operations'
// durations (fail_max_us) draws them in the latency panels as censored
// marks of their own; a run without that column draws none.
func TestCensoredLatency(t *testing.T) {
	dir := copyRun(t, runKillPause)
	overview := func() string {
		t.Helper()
		o, err := Render(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(o.HTML)
		if err != nil {
			t.Fatal(err)
		}
		page := string(b)
		i := strings.Index(page, `id="chart-overview"`)
		if i < 0 {
			t.Fatal("no overview chart")
		}
		return page[i : i+strings.Index(page[i:], "</svg>")]
	}
	if strings.Contains(overview(), censoredName) {
		t.Fatal("censored marks without fail_max_us")
	}
	// rewrite windows.csv in today's format with fail_max_us: 2.5 s for
	// every row with timeouts
	path := filepath.Join(dir, "windows.csv")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	failed := 0
	out := []string{measure.WindowsHeader}
	for _, l := range lines[1:] {
		// start,end,phase,op,ok,timeout,unavailable,conflict,rejected,other | behind..svc_p99
		f := strings.Split(l, ",")
		first, last := "", ""
		if f[4] != "0" {
			first, last = f[0], f[1]
		}
		fail := "0"
		if f[5] != "0" {
			fail, failed = "2500000", failed+1
		}
		row := append(append(append([]string{}, f[:10]...), "0"), f[10:]...)
		out = append(out, strings.Join(append(row, first, last, "0", "0", "0", "0", fail), ","))
	}
	if failed == 0 {
		t.Fatal("the test run has no timed-out operation")
	}
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	svg := overview()
	if !strings.Contains(svg, `data-name="`+censoredName+`"`) {
		t.Fatalf("the overview's latency panel lacks the censored series")
	}
	if !strings.Contains(svg, ">"+censoredName+"<") {
		t.Error("the legend lacks the censored series")
	}
}

func TestMarkSegs(t *testing.T) {
	id := func(v float64) float64 { return v }
	nan := math.NaN()
	for _, tc := range []struct {
		name   string
		xs, ys []float64
		marks  int
		topY   float64 // the y of the first mark's floor
	}{
		{"none", []float64{1, 2}, []float64{nan, nan}, 0, 0},
		{"one per value", []float64{1, 5}, []float64{10, 20}, 2, 10},
		{"one per pixel column, the highest", []float64{1.1, 1.6}, []float64{10, 30}, 1, 30},
		{"outside the range left out", []float64{-1, 1}, []float64{10, 20}, 1, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			segs := markSegs(tc.xs, tc.ys, 0, 100, id, id)
			if got := len(segs) / len(markShape(0, 0)); got != tc.marks {
				t.Fatalf("%d marks, want %d", got, tc.marks)
			}
			if tc.marks > 0 && segs[0][1] != tc.topY {
				t.Errorf("first mark's floor at y %v, want %v", segs[0][1], tc.topY)
			}
		})
	}
}
