package report

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/report/browsertest"
)

// TestReportInChromium is the bar: report.html of a real run
// (testdata/runs/*-etcd-kill-pause, made by `faultbench scenario`), opened
// from disk in headless Chromium, loads without console errors, every
// full-run chart's SVG holds one shaded span per fault, and a screenshot
// is not blank.
func TestReportInChromium(t *testing.T) {
	browsertest.Require(t)
	dir := copyRun(t, runKillPause)
	r, err := Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := render(context.Background(), r, false) // the page only: TestRender checks the PNGs
	if err != nil {
		t.Fatal(err)
	}
	faults := len(r.RunFaults())
	if faults != 2 {
		t.Fatalf("test run has %d faults, want 2", faults)
	}
	url := "file://" + filepath.ToSlash(out.HTML)

	t.Run("dom", func(t *testing.T) {
		dom, logs := browsertest.Run(t, url, "--dump-dom")
		if m := browsertest.ConsoleMessage.FindString(logs); m != "" {
			t.Errorf("console error: %s\n%s", m, browsertest.Tail(logs, 3000))
		}
		if !strings.Contains(dom, `data-js="ready"`) {
			t.Errorf("the report's script did not run to its end (no data-js=\"ready\" on body)")
		}
		charts := chartsOf(strings.ReplaceAll(dom, `<svg class="chart"`, `<svg xmlns="http://www.w3.org/2000/svg" class="chart"`))
		if len(charts) == 0 {
			t.Fatalf("no chart in the DOM:\n%s", browsertest.Tail(dom, 2000))
		}
		full := 0
		for id, svg := range charts {
			spans := strings.Count(svg, `class="fault-span"`)
			if strings.HasPrefix(id, "fault-") {
				if spans < 1 {
					t.Errorf("chart %s: no fault span", id)
				}
				continue
			}
			full++
			if spans != faults {
				t.Errorf("chart %s: %d fault spans, want one per fault (%d)", id, spans, faults)
			}
			if strings.Count(svg, "<title>") < 1+faults {
				t.Errorf("chart %s: spans and events lack their <title> hover text", id)
			}
		}
		if full < 5 {
			t.Errorf("%d full-run charts in the DOM, want at least 5 (overview, throughput, latency per op, errors, behind)", full)
		}
	})

	t.Run("screenshot", func(t *testing.T) {
		shot := filepath.Join(t.TempDir(), "report.png")
		_, logs := browsertest.Run(t, url, "--screenshot="+shot, "--window-size=1400,2000", "--hide-scrollbars")
		if m := browsertest.ConsoleMessage.FindString(logs); m != "" {
			t.Errorf("console error: %s", m)
		}
		if n := distinctColours(t, shot); n < 100 {
			t.Errorf("screenshot has %d distinct colours: blank?", n)
		}
	})
}
