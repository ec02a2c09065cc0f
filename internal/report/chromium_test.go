package report

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// chromiumPath is Debian's chromium, which `make test` installs
// (scripts/setup.sh).
const chromiumPath = "/usr/bin/chromium"

// chromium runs headless Chromium with args (plus the flags every run
// needs) on url and returns its stdout and stderr. The whole process group
// is killed when the test's deadline passes.
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
		t.Fatalf("chromium %v: %v\n%s", args, err, tail(errb.String(), 2000))
	}
	return out.String(), errb.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// consoleError matches what Chromium logs (with --enable-logging) for a
// page's console messages, e.g.
// `INFO:CONSOLE:1] "Uncaught ReferenceError: f is not defined", source: ...`.
// The report writes nothing to the console, so any message fails the test.
var consoleError = regexp.MustCompile(`:CONSOLE[:(]\d+\)?\].*|Uncaught.*`)

// TestReportInChromium is the bar: report.html of a real run
// (testdata/runs/*-etcd-kill-pause, made by `faultbench scenario`), opened
// from disk in headless Chromium, loads without console errors, every
// full-run chart's SVG holds one shaded span per fault, and a screenshot
// is not blank.
func TestReportInChromium(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("%s is missing: install it with `bash scripts/setup.sh --only chromium` (make test does)", chromiumPath)
	}
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
		dom, logs := chromium(t, url, "--dump-dom")
		if m := consoleError.FindString(logs); m != "" {
			t.Errorf("console error: %s\n%s", m, tail(logs, 3000))
		}
		if !strings.Contains(dom, `data-js="ready"`) {
			t.Errorf("the report's script did not run to its end (no data-js=\"ready\" on body)")
		}
		charts := chartsOf(strings.ReplaceAll(dom, `<svg class="chart"`, `<svg xmlns="http://www.w3.org/2000/svg" class="chart"`))
		if len(charts) == 0 {
			t.Fatalf("no chart in the DOM:\n%s", tail(dom, 2000))
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
		_, logs := chromium(t, url, "--screenshot="+shot, "--window-size=1400,2000", "--hide-scrollbars")
		if m := consoleError.FindString(logs); m != "" {
			t.Errorf("console error: %s", m)
		}
		if n := distinctColours(t, shot); n < 100 {
			t.Errorf("screenshot has %d distinct colours: blank?", n)
		}
	})
}
