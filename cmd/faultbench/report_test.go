package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/targets"
)

// testRuns are real run directories committed with the report package.
var testRuns = []string{
	"../../internal/report/testdata/runs/20261122T025454Z-etcd-kill-pause",
	"../../internal/report/testdata/runs/20261122T025537Z-etcd-pause-leader",
}

// runApp runs the CLI in-process and returns stdout, stderr and the exit code.
func runApp(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, targets: targets.Builtin()}
	a.commands = commands()
	code := a.main(args)
	return out.String(), errb.String(), code
}

// copyDir copies a run directory (report writes into it).
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func TestReportAndCompareCommands(t *testing.T) {
	run := copyDir(t, testRuns[0])
	outFile := filepath.Join(t.TempDir(), "cmp.html")
	// a run checked after the fact: checks/isolation.json, a false verdict
	checked := copyDir(t, testRuns[1])
	if err := os.MkdirAll(filepath.Join(checked, "checks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(checked, "checks", "isolation.json"), []byte(`{"checker":"isolation","model":"serializable","valid":false,"operations":40,"anomaly_counts":{"G2-item":2},"elapsed_ms":5}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tableFile := filepath.Join(t.TempDir(), "table.md")
	tests := []struct {
		name string
		args []string
		code int
		want string   // in stdout+stderr
		file []string // files that must exist afterwards
	}{
		{"report help", []string{"report", "--help"}, 0, "Examples:", nil},
		{"compare help", []string{"compare", "--help"}, 0, "--format html", nil},
		{"report", []string{"report", run}, 0, "report: " + filepath.Join(run, "report.html"),
			[]string{filepath.Join(run, "report.html"), filepath.Join(run, "plots", "overview.png"), filepath.Join(run, "plots", "fault-1.png")}},
		{"report of nothing", []string{"report", t.TempDir()}, 1, "not a readable run directory", nil},
		{"report without a directory", []string{"report"}, 2, "at least one RUN_DIR", nil},
		{"report help names the verdict table", []string{"report", "--help"}, 0, "--verdict-table", nil},
		{"verdict table", []string{"report", "--verdict-table", checked}, 0, "| isolation (serializable) | FAIL | G2-item 2 | 40 |", nil},
		{"verdict table to a file", []string{"report", "--verdict-table", "-o", tableFile, checked}, 0, "verdict table: " + tableFile, []string{tableFile}},
		{"verdict table of a run without verdicts", []string{"report", "--verdict-table", checked, run}, 1, run + ": no checker's verdict", nil},
		{"verdict table of nothing", []string{"report", "--verdict-table"}, 2, "at least one RUN_DIR", nil},
		{"-o without the verdict table", []string{"report", "-o", tableFile, run}, 2, "-o is for --verdict-table", nil},
		{"compare text", append([]string{"compare"}, testRuns...), 0, "  downtime (ms)", nil},
		{"compare md", append([]string{"compare", "--format", "md"}, testRuns...), 0, "|:---|", nil},
		{"compare csv", append([]string{"compare", "--format", "csv"}, testRuns...), 0, "section,group,metric,", nil},
		{"compare html to a file", append([]string{"compare", "--format", "html", "-o", outFile}, testRuns...), 0, "compare: " + outFile, []string{outFile}},
		{"compare bad format", append([]string{"compare", "--format", "pdf"}, testRuns...), 2, `unknown format "pdf"`, nil},
		{"compare nothing", []string{"compare"}, 2, "at least one RUN_DIR", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := runApp(tc.args...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out, errs)
			}
			if !strings.Contains(out+errs, tc.want) {
				t.Errorf("output lacks %q:\nstdout: %.2000s\nstderr: %s", tc.want, out, errs)
			}
			for _, f := range tc.file {
				if _, err := os.Stat(f); err != nil {
					t.Errorf("missing %s: %v", f, err)
				}
			}
		})
	}
}

// TestReportUPB: `faultbench report` on a UPB run directory draws the UPB
// report (Tables IV-X and the probe curves).
func TestReportUPB(t *testing.T) {
	src := "../../internal/upb/testdata/runs/20261123T105412Z-upb-etcd"
	dir := filepath.Join(t.TempDir(), filepath.Base(src))
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	out, errs, code := runApp("report", dir)
	if code != 0 || !strings.Contains(out, "report: "+filepath.Join(dir, "report.html")+" (4 plots") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !bytes.Contains(b, []byte("Table X. Overall metrics")) || !bytes.Contains(b, []byte(`id="chart-curve-k1-f1"`)) {
		t.Errorf("report.html (%v) is not the UPB report", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "plots", "upb-lc.png")); err != nil {
		t.Error(err)
	}
}
