// Package browsertest runs Debian's headless Chromium for the tests that
// open faultbench's HTML reports: a run that dumps the DOM or takes a
// screenshot, with the flags that keep it off the network, and a pattern
// for the console messages a clean page must not log. `make test` installs
// Chromium (scripts/setup.sh --only chromium); tests skip without it.
package browsertest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
	"time"
)

// Path is Debian's chromium binary.
const Path = "/usr/bin/chromium"

// ConsoleMessage matches what Chromium logs (with --enable-logging) for a
// page's console output or an uncaught script error, e.g.
// `INFO:CONSOLE:1] "Uncaught ReferenceError: f is not defined", source: ...`.
// faultbench's reports write nothing to the console.
var ConsoleMessage = regexp.MustCompile(`:CONSOLE[:(]\d+\)?\].*|Uncaught.*`)

// Require skips t when Chromium is not installed.
func Require(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(Path); err != nil {
		t.Skipf("%s is missing: install it with `bash scripts/setup.sh --only chromium` (make test does)", Path)
	}
}

// Run runs headless Chromium with args (plus the flags every run needs: no
// sandbox, no GPU, no background networking, a fresh profile, logging on
// stderr) on url and returns its stdout and stderr. It fails t when
// Chromium fails; the whole process group is killed after 90 s.
func Run(t testing.TB, url string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0"}
	cmd := exec.CommandContext(ctx, Path, append(append(base, args...), url)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, Tail(errb.String(), 2000))
	}
	return out.String(), errb.String()
}

// Tail returns the last n bytes of s, marked with "..." when cut.
func Tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
