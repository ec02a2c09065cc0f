package upb

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// chromiumPath is Debian's chromium (scripts/setup.sh --only chromium), as
// in internal/report's Chromium test.
const chromiumPath = "/usr/bin/chromium"

// consoleMessage matches a page's console output as Chromium logs it with
// --enable-logging; the report writes nothing to the console.
var consoleMessage = regexp.MustCompile(`:CONSOLE[:(]\d+\)?\].*|Uncaught.*`)

func chromium(t *testing.T, url string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0"}
	cmd := exec.CommandContext(ctx, chromiumPath, append(append(base, args...), url)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
	}
	return out.String(), errb.String()
}

// TestReportInChromium opens the fixture's UPB report from disk in headless
// Chromium: it loads without console messages, the script runs, every probe
// curve and probe chart is in the DOM, and a screenshot is not blank. With
// FAULTBENCH_SCREENSHOT=FILE the screenshot is kept there for a look.
func TestReportInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("%s is missing: install it with `bash scripts/setup.sh --only chromium`", chromiumPath)
	}
	dir := copyTree(t, fixtureRun)
	out, err := WriteReport(context.Background(), dir, false)
	if err != nil {
		t.Fatal(err)
	}
	url := "file://" + filepath.ToSlash(out.HTML)
	sum := readSummary(t, dir)

	t.Run("dom", func(t *testing.T) {
		dom, logs := chromium(t, url, "--dump-dom")
		if m := consoleMessage.FindString(logs); m != "" {
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
		_, logs := chromium(t, url, "--screenshot="+shot, "--window-size=1200,2600", "--hide-scrollbars")
		if m := consoleMessage.FindString(logs); m != "" {
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
