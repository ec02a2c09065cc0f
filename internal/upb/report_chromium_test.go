package upb

import (
	"context"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/report/browsertest"
)

// TestReportInChromium opens the fixture's UPB report from disk in headless
// Chromium: it loads without console messages, the script runs, every probe
// curve and probe chart is in the DOM, and a screenshot is not blank. With
// FAULTBENCH_SCREENSHOT=FILE the screenshot is kept there for a look.
func TestReportInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	browsertest.Require(t)
	dir := copyTree(t, fixtureRun)
	out, err := WriteReport(context.Background(), dir, false)
	if err != nil {
		t.Fatal(err)
	}
	url := "file://" + filepath.ToSlash(out.HTML)
	sum := readSummary(t, dir)

	t.Run("dom", func(t *testing.T) {
		dom, logs := browsertest.Run(t, url, "--dump-dom")
		if m := browsertest.ConsoleMessage.FindString(logs); m != "" {
			t.Errorf("console message: %s", m)
		}
		if !strings.Contains(dom, `data-js="ready"`) {
			t.Errorf("the report's script did not run to its end")
		}
		probes := len(sum.Lc.Rows)
		for _, s := range sum.Searches {
			probes += len(s.Baseline.Rows)
		}
		if n := strings.Count(dom, `id="chart-probe-`); n != probes {
			t.Errorf("%d probe charts in the DOM, want %d", n, probes)
		}
		if n := strings.Count(dom, `id="chart-curve-`); n != 1+len(sum.Searches) {
			t.Errorf("%d probe curves in the DOM, want %d", n, 1+len(sum.Searches))
		}
	})

	t.Run("screenshot", func(t *testing.T) {
		shot := os.Getenv("FAULTBENCH_SCREENSHOT")
		if shot == "" {
			shot = filepath.Join(t.TempDir(), "upb.png")
		}
		_, logs := browsertest.Run(t, url, "--screenshot="+shot, "--window-size=1200,2600", "--hide-scrollbars")
		if m := browsertest.ConsoleMessage.FindString(logs); m != "" {
			t.Errorf("console message: %s", m)
		}
		f, err := os.Open(shot)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		img, err := png.Decode(f)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[uint32]bool{}
		b := img.Bounds()
		for y := b.Min.Y; y < b.Max.Y; y += 3 {
			for x := b.Min.X; x < b.Max.X; x += 3 {
				r, g, bl, _ := img.At(x, y).RGBA()
				seen[r>>8<<16|g>>8<<8|bl>>8] = true
			}
		}
		if len(seen) < 100 {
			t.Errorf("screenshot has %d distinct colours: blank?", len(seen))
		}
	})
}
