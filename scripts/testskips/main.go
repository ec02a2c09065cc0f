// Command testskips reads `go test -json` on standard input and prints what
// a plain `go test` would (package results, the output of failed tests,
// build errors), then every skipped test with its reason, so that a skipped
// integration test (a database or browser not installed) does not look like
// a pass. It exits 1 when a test or a build failed, so it can end a pipe
// without pipefail.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

func main() {
	os.Exit(run(os.Stdin, os.Stdout))
}

func run(in io.Reader, out io.Writer) int {
	type key struct{ pkg, test string }
	buf := map[key][]string{}
	var skips []string
	failed := false
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(out, sc.Text()) // not JSON: pass it on
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "build-output":
			fmt.Fprint(out, e.Output)
		case "build-fail":
			failed = true
		case "output":
			if e.Test != "" {
				buf[k] = append(buf[k], e.Output)
			} else if strings.TrimSpace(e.Output) != "PASS" && !strings.HasPrefix(e.Output, "=== ") {
				fmt.Fprint(out, e.Output)
			}
		case "fail":
			failed = true
			for _, l := range buf[k] {
				fmt.Fprint(out, l)
			}
			delete(buf, k)
		case "skip":
			if e.Test != "" {
				skips = append(skips, fmt.Sprintf("%s %s: %s", e.Package, e.Test, reason(buf[k])))
			}
			delete(buf, k)
		case "pass":
			delete(buf, k)
		}
	}
	if len(skips) > 0 {
		fmt.Fprintf(out, "\n%d tests SKIPPED (not run, not passed):\n", len(skips))
		for _, s := range skips {
			fmt.Fprintln(out, "  "+s)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(out, "testskips:", err)
		return 1
	}
	if failed {
		return 1
	}
	return 0
}

// reason is what a skipped test logged (its t.Skip message), without the
// "=== RUN" and "--- SKIP" lines.
func reason(lines []string) string {
	var r []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- ") {
			continue
		}
		r = append(r, t)
	}
	if len(r) == 0 {
		return "(no reason given)"
	}
	return strings.Join(r, " ")
}
